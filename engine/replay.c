/*
 * engine/replay.c - see engine/replay.h.
 *
 * One query lists the threads (threads table, written by engine/ingest.c);
 * each thread's events come from engine/chunk.h (decoded a chunk at a
 * time); function names and call sites are loaded once into arrays by row
 * id, so an event costs no query.  The walker keeps
 * one event of lookahead (to tell a leaf call) and a stack of entry times by
 * depth (for durations); both are reused across threads.
 *
 * Function names are printed as stored: engine/ingest.c names every
 * function once (module+0xOFFSET when no symbol does), so replay, the TUI
 * and the exporters agree.  session_callsite() (session.c) reads one callsites row (the
 * TUI's fault line).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/callvals.h"
#include "engine/chunk.h"
#include "engine/offcpu-store.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/log.h"

/* Names of functions and call sites, by row id, loaded once. */
struct replay_names {
	char **func;
	uint32_t nfunc;
	struct replay_site {
		char *file;
		int line;
	} *site;
	uint32_t nsite;
};

struct replay_walker {
	int64_t *stack; /* entry ts by depth; INT64_MIN = unknown */
	size_t cap;
	struct replay_names nm;
	sqlite3_stmt *comm; /* a send/recv's row and match; NULL: none */
	char chan[256], peer[256];
	sqlite3_stmt *exec; /* the image an exec started; NULL: none */
	char program[512];
	sqlite3_stmt *kern; /* a thread's offcpu rows; NULL: not asked/none */
	int kern_row;	    /* kern is on a row not yet handed out */
	char reason[16], op[32];
	struct callvals *cv; /* --args' values (engine/callvals.h) */
};

/* Step to the thread's next offcpu row (w->kern_row says if there is). */
static void replay_kern_step(struct replay_walker *w)
{
	w->kern_row = w->kern && sqlite3_step(w->kern) == SQLITE_ROW;
}

/* Hand out the offcpu rows that start before `before` (INT64_MAX: all). */
static int replay_kern_flush(struct replay_walker *w, int64_t pid, int64_t tid,
			     int depth, int64_t before, replay_fn fn, void *arg)
{
	struct replay_event ev;
	const unsigned char *t;
	int ret, k;

	while (w->kern_row && sqlite3_column_int64(w->kern, 0) < before) {
		memset(&ev, 0, sizeof(ev));
		ev.id = -1;
		ev.pid = pid;
		ev.tid = tid;
		ev.kind = sqlite3_column_int(w->kern, 6) ? SK_KSIGNAL
							 : SK_OFFCPU;
		ev.depth = depth;
		ev.ts_ns = sqlite3_column_int64(w->kern, 0);
		ev.dur_ns = sqlite3_column_int64(w->kern, 1);
		ev.runq_ns = sqlite3_column_int64(w->kern, 2);
		t = sqlite3_column_text(w->kern, 3);
		snprintf(w->reason, sizeof(w->reason), "%s", t ? (const char *)t : "other");
		ev.reason = w->reason;
		if ((t = sqlite3_column_text(w->kern, 4))) {
			snprintf(w->op, sizeof(w->op), "%s", t);
			ev.op = w->op;
		}
		ev.fd = sqlite3_column_int(w->kern, 5);
		if (ev.kind == SK_KSIGNAL) {
			/* signo, si_code, a handler took it */
			ev.reason = NULL;
			for (k = 0; k < 3; k++) {
				ev.has_arg[k] = 1;
				ev.arg[k] = sqlite3_column_int64(w->kern, 7 + k);
			}
		}
		ret = fn(&ev, arg);
		if (ret)
			return ret;
		replay_kern_step(w);
	}
	return 0;
}

/* A send/recv's channel and match (table comm, messages). */
static void replay_comm(struct replay_walker *w, struct replay_event *ev)
{
	sqlite3_stmt *st = w->comm;
	const unsigned char *t;

	if (!st)
		return;
	sqlite3_bind_int64(st, 1, ev->id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		if ((t = sqlite3_column_text(st, 0))) {
			snprintf(w->chan, sizeof(w->chan), "%s", t);
			ev->chan = w->chan;
		}
		if ((t = sqlite3_column_text(st, 1))) {
			snprintf(w->peer, sizeof(w->peer), "%s", t);
			ev->peer = w->peer;
		}
		if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
			ev->has_offset = 1;
			ev->offset = sqlite3_column_int64(st, 2);
		}
		if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
			ev->matched = 1;
			ev->match_pid = sqlite3_column_int64(st, 3);
			ev->match_tid = sqlite3_column_int64(st, 4);
			ev->match_ts_ns = sqlite3_column_int64(st, 5);
		}
	}
	sqlite3_reset(st);
}

/* An exec's new program: the same pid's next image (table processes). */
static void replay_exec(struct replay_walker *w, struct replay_event *ev)
{
	sqlite3_stmt *st = w->exec;
	const unsigned char *t;

	if (!st)
		return;
	sqlite3_bind_int64(st, 1, ev->pid);
	sqlite3_bind_int64(st, 2, ev->ts_ns);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (t = sqlite3_column_text(st, 0))) {
		snprintf(w->program, sizeof(w->program), "%s", t);
		ev->program = w->program;
	}
	sqlite3_reset(st);
}

static int64_t replay_max_id(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t m = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		m = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return m;
}

static char *replay_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

static int replay_load_names(sqlite3 *db, struct replay_names *nm)
{
	sqlite3_stmt *st;
	int64_t mf, ms;
	int rc, err;

	mf = replay_max_id(db, "SELECT coalesce(max(id), 0) FROM functions");
	ms = replay_max_id(db, "SELECT coalesce(max(id), 0) FROM callsites");
	if (mf < 0 || ms < 0 || mf > 100000000 || ms > 100000000)
		return -EIO;
	err = 0;
	nm->nfunc = (uint32_t)mf + 1;
	nm->nsite = (uint32_t)ms + 1;
	nm->func = calloc(nm->nfunc, sizeof(*nm->func));
	nm->site = calloc(nm->nsite, sizeof(*nm->site));
	if (!nm->func || !nm->site)
		return -ENOMEM;
	if (sqlite3_prepare_v2(db, "SELECT id, name FROM functions", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		/* (an id twice: a damaged file's table; the last one) */
		if (id > 0 && id < nm->nfunc) {
			free(nm->func[id]);
			nm->func[id] = replay_strdup(st, 1);
		}
	}
	if (rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT id, file, line FROM callsites", -1,
			       &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id > 0 && id < nm->nsite) {
			free(nm->site[id].file);
			nm->site[id].file = replay_strdup(st, 1);
			nm->site[id].line = sqlite3_column_int(st, 2);
		}
	}
	if (rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

static void replay_free_names(struct replay_names *nm)
{
	uint32_t i;

	for (i = 0; nm->func && i < nm->nfunc; i++)
		free(nm->func[i]);
	for (i = 0; nm->site && i < nm->nsite; i++)
		free(nm->site[i].file);
	free(nm->func);
	free(nm->site);
}

static void replay_fill(const struct replay_names *nm, int64_t pid,
			int64_t tid, const struct session_event *se,
			struct replay_event *ev)
{
	int i;

	memset(ev, 0, sizeof(*ev));
	ev->id = se->id;
	ev->pid = pid;
	ev->tid = tid;
	ev->ts_ns = se->ts_ns;
	ev->kind = se->kind;
	ev->depth = se->depth;
	/* the name as ingest stored it: every reader shows the same one */
	if (se->func > 0 && (uint64_t)se->func < nm->nfunc)
		ev->func = nm->func[se->func];
	ev->func_id = se->func;
	if (se->site > 0 && (uint64_t)se->site < nm->nsite &&
	    nm->site[se->site].file) {
		ev->file = nm->site[se->site].file;
		ev->line = nm->site[se->site].line;
	}
	for (i = 0; i < 3; i++) {
		ev->has_arg[i] = !!(se->has & (SE_ARG0 << i));
		ev->arg[i] = se->arg[i];
	}
	/* made by ingest: an entry rebuilt for a lost or open frame (arg0
	 * 1), the exit closing an open one that returned unseen (2) */
	ev->rebuilt = ev->has_arg[0] &&
		      ((ev->kind == SK_ENTRY && ev->arg[0] == 1) ||
		       (ev->kind == SK_EXIT && ev->arg[0] == 2));
	ev->dur_ns = -1;
}

/* Entries deeper than this keep no time (their exits get dur_ns -1): a
 * damaged session's depth must not size the stack (8 bytes a level). */
#define REPLAY_DEPTH_MAX (1 << 22)

static int replay_push(struct replay_walker *w, int depth, int64_t ts)
{
	if (depth < 0 || depth >= REPLAY_DEPTH_MAX)
		return 0;
	if ((size_t)depth >= w->cap) {
		size_t nc = w->cap ? w->cap : 64;
		int64_t *n;

		while (nc <= (size_t)depth)
			nc *= 2;
		n = realloc(w->stack, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->stack = n;
		w->cap = nc;
	}
	w->stack[depth] = ts;
	return 0;
}

/* to - from, or -1 (unknown) when a damaged session's times overflow it */
static int64_t replay_span(int64_t from, int64_t to)
{
	int64_t d;

	return __builtin_sub_overflow(to, from, &d) ? -1 : d;
}

static int replay_thread(struct replay_walker *w, struct chunk_iter *it,
			 replay_fn fn, void *arg)
{
	struct replay_event slots[2], *cur = &slots[0], *next = &slots[1], *tmp;
	const struct session_event *se;
	int rc, ret = 0, have_cur = 0, prev_leaf = 0, depth = 0;

	if (w->kern) {
		sqlite3_reset(w->kern);
		sqlite3_bind_int64(w->kern, 1, it->pid);
		sqlite3_bind_int64(w->kern, 2, it->tid);
		replay_kern_step(w);
	}
	for (;;) {
		rc = chunk_iter_next(it, &se);
		if (rc < 0)
			return -EIO;
		if (rc == 1) {
			replay_fill(&w->nm, it->pid, it->tid, se, next);
			next->cv = w->cv;
		}
		if (have_cur) {
			struct replay_event *ev = cur;

			if (ev->kind == SK_ENTRY) {
				if (replay_push(w, ev->depth,
						ev->rebuilt ? INT64_MIN : ev->ts_ns))
					return -ENOMEM;
				if (rc == 1 && next->kind == SK_EXIT &&
				    next->depth == ev->depth) {
					ev->leaf = 1;
					ev->has_ret = next->has_arg[2];
					ev->ret = next->arg[2];
					if (!ev->rebuilt)
						ev->dur_ns = replay_span(
							ev->ts_ns, next->ts_ns);
				}
			} else if (ev->kind == SK_EXIT) {
				ev->leaf = prev_leaf;
				if (ev->depth >= 0 && (size_t)ev->depth < w->cap &&
				    w->stack[ev->depth] != INT64_MIN)
					ev->dur_ns = replay_span(
						w->stack[ev->depth], ev->ts_ns);
				if (ev->depth >= 0 && (size_t)ev->depth < w->cap)
					w->stack[ev->depth] = INT64_MIN;
			}
			prev_leaf = ev->kind == SK_ENTRY && ev->leaf;
			if (ev->kind == SK_SEND || ev->kind == SK_RECV)
				replay_comm(w, ev);
			else if (ev->kind == SK_EXEC)
				replay_exec(w, ev);
			ret = replay_kern_flush(w, it->pid, it->tid, depth,
						ev->ts_ns, fn, arg);
			if (ret)
				return ret;
			ret = fn(ev, arg);
			if (ret)
				return ret;
			if (ev->kind == SK_ENTRY)
				depth = ev->depth + 1;
			else if (ev->kind == SK_EXIT)
				depth = ev->depth;
		}
		if (rc != 1)
			return replay_kern_flush(w, it->pid, it->tid, depth,
						 INT64_MAX, fn, arg);
		tmp = cur;
		cur = next;
		next = tmp;
		have_cur = 1;
	}
}

int replay_walk(struct session *s, const struct replay_filter *f,
		replay_fn fn, void *arg, char **cause)
{
	sqlite3 *db = session_db(s);
	sqlite3_stmt *threads = NULL;
	struct replay_walker w = { 0 };
	struct chunk_store *cs = NULL;
	struct chunk_iter it;
	int64_t fpid = f ? f->pid : 0, ftid = f ? f->tid : 0;
	size_t i;
	int rc = SQLITE_DONE, ret = 0, txn;

	/* one read transaction for the whole walk: sqlite otherwise takes
	 * and drops its file lock (fcntl, fstat) around every statement,
	 * once per send and recv (the comm lookup) -- most of the time of a
	 * session of messages */
	txn = sqlite3_get_autocommit(db) &&
	      sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	ret = chunk_store_open(s, &cs, cause);
	if (!ret)
		ret = chunk_store_check(cs, cause);
	if (ret)
		goto out;
	/* sessions from before the comm table have none: no channels */
	if (sqlite3_prepare_v2(db,
			       "SELECT c.chan, c.peer, c.offset, s.pid, s.tid,"
			       " s.ts_ns FROM comm c"
			       " LEFT JOIN messages m ON m.recv = c.event"
			       " LEFT JOIN comm s ON s.event = m.send"
			       " WHERE c.event = ?",
			       -1, &w.comm, NULL) != SQLITE_OK)
		w.comm = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT exe FROM processes WHERE pid = ?"
			       " AND start_ns > ? ORDER BY start_ns LIMIT 1",
			       -1, &w.exec, NULL) != SQLITE_OK)
		w.exec = NULL;
	/* sessions recorded without --vitals have no offcpu table; those
	 * from before its host column, every span of the pid */
	if (f && f->kernel &&
	    sqlite3_prepare_v2(db,
			       "SELECT ts_ns, dur_ns, runq_ns, reason, op,"
			       " coalesce(fd, -1), 0, 0, 0, 0 FROM offcpu"
			       " WHERE pid = ?1 AND tid = ?2"
			       " AND " OFFCPU_STORE_OF_PID
			       " UNION ALL SELECT ts_ns, 0, 0, NULL, NULL, -1,"
			       " 1, signo, code, handled FROM ksignals"
			       " WHERE pid = ?1 AND tid = ?2"
			       " AND " OFFCPU_STORE_OF_PID " ORDER BY 1",
			       -1, &w.kern, NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT ts_ns, dur_ns, runq_ns, reason, op,"
			       " coalesce(fd, -1), 0, 0, 0, 0 FROM offcpu"
			       " WHERE pid = ?1 AND tid = ?2"
			       " UNION ALL SELECT ts_ns, 0, 0, NULL, NULL, -1,"
			       " 1, signo, code, handled FROM ksignals"
			       " WHERE pid = ?1 AND tid = ?2 ORDER BY 1",
			       -1, &w.kern, NULL) != SQLITE_OK)
		w.kern = NULL;
	ret = replay_load_names(db, &w.nm);
	if (!ret || ret == -EIO)
		ret = callvals_open(s, &w.cv) ? -ENOMEM : ret;
	if (ret == -ENOMEM) {
		ret = propel_cause(cause, ret, "%s: out of memory",
				   session_path(s));
		goto out;
	}
	if (ret == -EIO && !chunk_store_rows_form(cs)) {
		/* a truncated file: the names it still has, the events of
		 * every chunk left */
		if (session_warn_once(s, SESSION_WARN_NAMES))
			fprintf(stderr,
				"propel: %s: function and call site "
				"names cut short (corrupt or truncated "
				"file)\n",
				session_path(s));
		ret = 0;
	}
	if (!chunk_store_rows_form(cs) && !ret) {
		const struct chunk_thread *th;
		size_t nth, t;

		th = chunk_store_threads(cs, &nth);
		for (t = 0; !ret && t < nth; t++) {
			if ((fpid && th[t].pid != fpid) ||
			    (ftid && th[t].tid != ftid))
				continue;
			ret = chunk_iter_init(&it, cs, th[t].pid, th[t].tid);
			if (ret)
				break;
			for (i = 0; i < w.cap; i++)
				w.stack[i] = INT64_MIN;
			ret = replay_thread(&w, &it, fn, arg);
			chunk_iter_release(&it);
		}
		goto out;
	}
	if (ret || sqlite3_prepare_v2(
		    db,
		    "SELECT pid, tid FROM threads"
		    " WHERE (?1 = 0 OR pid = ?1) AND (?2 = 0 OR tid = ?2)"
		    " AND nevents > 0 GROUP BY pid, tid"
		    " ORDER BY min(first_ns), pid, tid",
		    -1, &threads, NULL) != SQLITE_OK) {
		ret = -EIO;
		goto sqlerr;
	}
	sqlite3_bind_int64(threads, 1, fpid);
	sqlite3_bind_int64(threads, 2, ftid);
	while ((rc = sqlite3_step(threads)) == SQLITE_ROW) {
		ret = chunk_iter_init(&it, cs, sqlite3_column_int64(threads, 0),
				      sqlite3_column_int64(threads, 1));
		if (ret)
			break;
		for (i = 0; i < w.cap; i++)
			w.stack[i] = INT64_MIN;
		ret = replay_thread(&w, &it, fn, arg);
		chunk_iter_release(&it);
		if (ret)
			break;
	}
sqlerr:
	if (ret == -EIO || (!ret && rc != SQLITE_DONE)) {
		int code = sqlite3_errcode(db);

		if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB ||
		    code == SQLITE_ROW || code == SQLITE_DONE ||
		    code == SQLITE_OK)
			ret = propel_cause(cause, -EINVAL,
					   "%s: session file is corrupt or "
					   "truncated",
					   session_path(s));
		else
			ret = propel_cause(cause, -EIO, "%s: %s",
					   session_path(s), sqlite3_errmsg(db));
	}
out:
	sqlite3_finalize(threads);
	sqlite3_finalize(w.comm);
	sqlite3_finalize(w.exec);
	sqlite3_finalize(w.kern);
	callvals_free(w.cv);
	chunk_store_free(cs);
	replay_free_names(&w.nm);
	free(w.stack);
	if (txn)
		sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return ret;
}

const char *replay_short_name(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name), end = n;
	int level = 0;

	if (!size)
		return buf;
	/* the parameter list is the last balanced "(...)", unless the name is
	 * just an operator() with nothing after it */
	while (end > 0 && name[end - 1] != ')')
		end--;
	if (end > 0 && name[0] != '?') {
		size_t i = end;

		while (i-- > 0) {
			if (name[i] == ')')
				level++;
			else if (name[i] == '(' && --level == 0)
				break;
		}
		if (level == 0 && i > 0 && i < n)
			n = i;
	}
	/* and without a return type ("int ns::twice<int>"): the text after
	 * the last space outside <> and (), unless that is "operator X" */
	{
		size_t i, start = 0;

		level = 0;
		for (i = 0; i < n; i++) {
			if (name[i] == '<' || name[i] == '(')
				level++;
			else if ((name[i] == '>' || name[i] == ')') && level > 0)
				level--;
			else if (name[i] == ' ' && level == 0 &&
				 !(i >= 8 && strncmp(name + i - 8, "operator", 8) == 0))
				start = i + 1;
		}
		name += start;
		n -= start;
	}
	if (n >= size)
		n = size - 1;
	memcpy(buf, name, n);
	buf[n] = 0;
	return buf;
}
