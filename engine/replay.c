/*
 * engine/replay.c - see engine/replay.h.
 *
 * One query lists the threads (threads table, written by engine/ingest.c);
 * one prepared query per thread streams its events (the events_thread index
 * makes it a range scan).  The walker keeps
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

#include "engine/replay.h"
#include "engine/session.h"
#include "share/log.h"

#define REPLAY_NAME_MAX 512

struct replay_slot {
	struct replay_event ev;
	char func[REPLAY_NAME_MAX];
	char file[REPLAY_NAME_MAX];
};

struct replay_walker {
	int64_t *stack; /* entry ts by depth; INT64_MIN = unknown */
	size_t cap;
};

static void replay_copy(char *dst, const unsigned char *src)
{
	size_t n;

	if (!src) {
		dst[0] = 0;
		return;
	}
	n = strlen((const char *)src);
	if (n >= REPLAY_NAME_MAX)
		n = REPLAY_NAME_MAX - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Columns: id pid tid ts_ns kind depth f.name f.addr c.file c.line arg0-2 */
static void replay_fill(sqlite3_stmt *st, struct replay_slot *sl)
{
	struct replay_event *ev = &sl->ev;
	int i;

	memset(ev, 0, sizeof(*ev));
	ev->id = sqlite3_column_int64(st, 0);
	ev->pid = sqlite3_column_int64(st, 1);
	ev->tid = sqlite3_column_int64(st, 2);
	ev->ts_ns = sqlite3_column_int64(st, 3);
	ev->kind = sqlite3_column_int(st, 4);
	ev->depth = sqlite3_column_int(st, 5);
	/* the name as ingest stored it: every reader shows the same one */
	if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
		replay_copy(sl->func, sqlite3_column_text(st, 6));
		ev->func = sl->func;
	}
	if (sqlite3_column_type(st, 8) != SQLITE_NULL) {
		replay_copy(sl->file, sqlite3_column_text(st, 8));
		ev->file = sl->file;
		ev->line = sqlite3_column_int(st, 9);
	}
	for (i = 0; i < 3; i++) {
		ev->has_arg[i] = sqlite3_column_type(st, 10 + i) != SQLITE_NULL;
		ev->arg[i] = sqlite3_column_int64(st, 10 + i);
	}
	ev->rebuilt = ev->kind == SK_ENTRY && ev->has_arg[0] && ev->arg[0] == 1;
	ev->dur_ns = -1;
}

static int replay_push(struct replay_walker *w, int depth, int64_t ts)
{
	if (depth < 0)
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

static int replay_thread(struct replay_walker *w, sqlite3_stmt *st,
			 replay_fn fn, void *arg)
{
	struct replay_slot *cur, *next, *tmp;
	struct replay_slot slots[2];
	int rc, ret = 0, have_cur = 0, prev_leaf = 0;

	cur = &slots[0];
	next = &slots[1];
	for (;;) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			replay_fill(st, next);
		} else if (rc != SQLITE_DONE) {
			return -EIO;
		}
		if (have_cur) {
			struct replay_event *ev = &cur->ev;

			if (ev->kind == SK_ENTRY) {
				if (replay_push(w, ev->depth,
						ev->rebuilt ? INT64_MIN : ev->ts_ns))
					return -ENOMEM;
				if (rc == SQLITE_ROW && next->ev.kind == SK_EXIT &&
				    next->ev.depth == ev->depth) {
					ev->leaf = 1;
					if (!ev->rebuilt)
						ev->dur_ns = next->ev.ts_ns - ev->ts_ns;
				}
			} else if (ev->kind == SK_EXIT) {
				ev->leaf = prev_leaf;
				if (ev->depth >= 0 && (size_t)ev->depth < w->cap &&
				    w->stack[ev->depth] != INT64_MIN)
					ev->dur_ns = ev->ts_ns - w->stack[ev->depth];
				if ((size_t)ev->depth < w->cap)
					w->stack[ev->depth] = INT64_MIN;
			}
			prev_leaf = ev->kind == SK_ENTRY && ev->leaf;
			ret = fn(ev, arg);
			if (ret)
				return ret;
		}
		if (rc != SQLITE_ROW)
			return 0;
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
	sqlite3_stmt *threads = NULL, *events = NULL;
	struct replay_walker w = { 0 };
	int64_t fpid = f ? f->pid : 0, ftid = f ? f->tid : 0;
	size_t i;
	int rc, ret = 0;

	if (sqlite3_prepare_v2(
		    db,
		    "SELECT pid, tid FROM threads"
		    " WHERE (?1 = 0 OR pid = ?1) AND (?2 = 0 OR tid = ?2)"
		    " AND nevents > 0 GROUP BY pid, tid"
		    " ORDER BY min(first_ns), pid, tid",
		    -1, &threads, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		    db,
		    "SELECT e.id, e.pid, e.tid, e.ts_ns, e.kind, e.depth, f.name,"
		    " f.addr, c.file, c.line, e.arg0, e.arg1, e.arg2"
		    " FROM events e LEFT JOIN functions f ON f.id = e.func"
		    " LEFT JOIN callsites c ON c.id = e.site"
		    " WHERE e.pid = ? AND e.tid = ? ORDER BY e.id",
		    -1, &events, NULL) != SQLITE_OK) {
		ret = propel_cause(cause, -EIO, "%s: %s", session_path(s),
				   sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(threads, 1, fpid);
	sqlite3_bind_int64(threads, 2, ftid);
	while ((rc = sqlite3_step(threads)) == SQLITE_ROW) {
		sqlite3_bind_int64(events, 1, sqlite3_column_int64(threads, 0));
		sqlite3_bind_int64(events, 2, sqlite3_column_int64(threads, 1));
		for (i = 0; i < w.cap; i++)
			w.stack[i] = INT64_MIN;
		ret = replay_thread(&w, events, fn, arg);
		sqlite3_reset(events);
		if (ret)
			break;
	}
	if (ret == -EIO || (!ret && rc != SQLITE_DONE)) {
		int code = sqlite3_errcode(db);

		if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
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
	sqlite3_finalize(events);
	free(w.stack);
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
