/*
 * engine/analysis-load.c - see engine/analysis-load.h.  replay_walk gives
 * the events thread by thread in time order, which is the order
 * trace_add wants; a change of (pid, tid) begins the next thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/chan-role.h"
#include "analysis/flows.h"
#include "analysis/lifecycle.h"
#include "engine/analysis-load.h"
#include "engine/offcpu-store.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "engine/untraced.h"
#include "share/log.h"

struct analysis_load {
	struct trace *t;
	int64_t pid, tid;
	int begun;
	/* analysis_load_cuts: the flows' options, each kept event's ordinal
	 * in its thread, the walked thread's events so far */
	const struct flows_opts *cuts;
	uint32_t *ord;
	size_t ordcap;
	uint32_t seen;
	int all; /* analysis_load_ord: every event is kept */
	/* functions the cost budget untraced mid-session in any process
	 * (engine/untraced.h, pid 0): left out of the whole session, their
	 * frames' depths with them (the open ones of the walked thread,
	 * outermost first) */
	struct untraced_marks *gone;
	const struct untraced_marks *also; /* of the sessions compared (pid 0) */
	int gone_depth[64];
	int ngone;
	int next; /* keep the thread's next event (analysis/lifecycle.h) */
};

/* ev is a call of a function the budget untraced: drop it (1), keeping
 * the depths below it as if it had never been traced; else adjust
 * ev's depth (0). */
static int analysis_load_gone(struct analysis_load *l,
			      const struct replay_event *ev, int *depth)
{
	int n = 0;

	if ((ev->kind == SK_ENTRY || ev->kind == SK_EXIT) &&
	    (untraced_marks_find(l->gone, 0, ev->func) ||
	     untraced_marks_find(l->also, 0, ev->func))) {
		if (ev->kind == SK_ENTRY && !ev->leaf && l->ngone < 64)
			l->gone_depth[l->ngone++] = ev->depth;
		else if (ev->kind == SK_EXIT && l->ngone &&
			 l->gone_depth[l->ngone - 1] == ev->depth)
			l->ngone--;
		return 1;
	}
	while (n < l->ngone && l->gone_depth[n] < ev->depth)
		n++;
	*depth = ev->depth - n;
	return 0;
}

static int analysis_load_named(const struct flows_opts *fo, const char *f)
{
	size_t i;

	if (!f)
		return 0;
	if (fo->start_func && strcmp(fo->start_func, f) == 0)
		return 1;
	for (i = 0; i < fo->ndir; i++)
		if (strcmp(fo->dir[i].func[0], f) == 0 ||
		    strcmp(fo->dir[i].func[1], f) == 0)
			return 1;
	return 0;
}

/* analysis_load_cuts: whether ev may begin a flow's part of a thread or
 * join two parts (analysis/flows.c): everything but the calls, a thread's
 * first event, the calls a start or a directive names, and where a
 * process's set-up or tear-down begins or ends (analysis/lifecycle.h) */
static int analysis_load_cut(struct analysis_load *l,
			     const struct replay_event *ev, int first)
{
	int next = l->next;

	l->next = lifecycle_cut_after(ev->kind, ev->func);
	if (l->all || first || next ||
	    (ev->kind != SK_ENTRY && ev->kind != SK_EXIT))
		return 1;
	return analysis_load_named(l->cuts, ev->func) ||
	       lifecycle_cut_name(ev->func);
}

static int analysis_load_event(const struct replay_event *ev, void *arg)
{
	struct analysis_load *l = arg;
	struct trace_event e;
	char site[4096];
	int err, first = 0, depth = ev->depth;

	if (!l->begun || ev->pid != l->pid || ev->tid != l->tid) {
		err = trace_thread_begin(l->t, ev->pid, ev->tid);
		if (err)
			return err;
		l->begun = 1;
		l->pid = ev->pid;
		l->tid = ev->tid;
		l->seen = 0;
		l->ngone = 0;
		first = 1;
	}
	if ((l->gone || l->also) && analysis_load_gone(l, ev, &depth)) {
		if (l->cuts)
			l->seen++; /* the ordinals are replay's */
		return 0;
	}
	if (l->cuts) {
		uint32_t at = l->seen++;

		if (!analysis_load_cut(l, ev, first))
			return 0;
		if (l->t->nev >= l->ordcap) {
			size_t nc = l->ordcap ? 2 * l->ordcap : 1024;
			uint32_t *n = realloc(l->ord, nc * sizeof(*n));

			if (!n)
				return -ENOMEM;
			l->ord = n;
			l->ordcap = nc;
		}
		l->ord[l->t->nev] = at;
	}
	memset(&e, 0, sizeof(e));
	e.id = ev->id;
	e.ts_ns = ev->ts_ns;
	e.kind = (uint8_t)ev->kind;
	e.depth = depth;
	e.rebuilt = (uint8_t)ev->rebuilt;
	if (ev->kind == SK_ENTRY || ev->kind == SK_EXIT) {
		e.func = trace_intern(l->t, ev->func);
		if (e.func == TRACE_NONE)
			return -ENOMEM;
	}
	if (ev->kind == SK_ENTRY && ev->file) {
		snprintf(site, sizeof(site), "%s:%d", ev->file, ev->line);
		e.site = trace_intern(l->t, site);
		if (e.site == TRACE_NONE)
			return -ENOMEM;
	}
	if (ev->kind == SK_SEND || ev->kind == SK_RECV) {
		uint32_t c = trace_intern(l->t, ev->chan);

		if (c == TRACE_NONE)
			return -ENOMEM;
		e.bytes = ev->arg[1];
		e.arg = c; /* the channel, for the automatic flow starts */
		e.peer_end = (uint8_t)chan_role_peer_end(ev->chan, ev->peer);
	} else
		e.arg = ev->arg[0];
	if ((ev->kind == SK_ENTRY || ev->kind == SK_EXIT) && ev->has_arg[2]) {
		e.val[0] = ev->arg[2]; /* a directive's value */
		e.has_val = 1;
	}
	return trace_add(l->t, &e);
}

static int analysis_load_tables(struct session *s, struct trace *t)
{
	sqlite3 *db = session_db(s);
	sqlite3_stmt *st;
	int rc, err = 0;

	/* sessions from before the comm tables have no messages */
	if (sqlite3_prepare_v2(db, "SELECT send, recv FROM messages", -1, &st,
			       NULL) == SQLITE_OK) {
		while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
			err = trace_message(t, sqlite3_column_int64(st, 0),
					    sqlite3_column_int64(st, 1));
		if (!err && rc != SQLITE_DONE)
			err = -EIO;
		sqlite3_finalize(st);
	}
	if (err)
		return err;
	if (sqlite3_prepare_v2(db,
			       "SELECT pid, start_ns, exit_status, signal, exe, "
			       SESSION_PROC_COMM_SQL ", (SELECT value FROM meta"
			       " WHERE key = 'stopped.' || pid) FROM processes"
			       " ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct trace_process p = { 0 };
		const char *exe, *name;

		p.pid = sqlite3_column_int64(st, 0);
		p.start_ns = sqlite3_column_int64(st, 1);
		p.stop_ns = sqlite3_column_int64(st, 6); /* NULL: 0 */
		p.exited = sqlite3_column_type(st, 2) != SQLITE_NULL;
		p.status = sqlite3_column_int(st, 2);
		p.signal = sqlite3_column_int(st, 3);
		exe = (const char *)sqlite3_column_text(st, 4);
		name = session_proc_name(exe,
					 (const char *)sqlite3_column_text(st, 5));
		p.exe = trace_intern(t, exe);
		p.name = trace_intern(t, name);
		if (p.exe == TRACE_NONE || p.name == TRACE_NONE)
			err = -ENOMEM;
		else
			err = trace_process_add(t, &p);
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

/* Room for the events the threads table counts (a hint: none, no harm). */
static void analysis_load_reserve(struct session *s, struct trace *t)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(session_db(s),
			       "SELECT coalesce(sum(nevents), 0) FROM threads",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(st, 0);

		if (n > 0 && n < ((int64_t)1 << 32))
			(void)trace_reserve(t, (size_t)n + 1);
	}
	sqlite3_finalize(st);
}

/* Under attach the first traced process is the first target that has
 * events (meta attach_pids), not the one whose oldest kept event is
 * oldest: a flight ring that wrapped keeps only its newest. */
static void analysis_load_targets(struct session *s, struct trace *t)
{
	char *v = session_meta_get(s, "attach_pids"), *p, *end;
	size_t k;

	for (p = v; p && *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		for (k = 0; k < t->nth; k++)
			if (t->th[k].pid == pid && t->th[k].n) {
				t->first_pid = pid;
				free(v);
				return;
			}
	}
	free(v);
}

static int analysis_load_runq(int64_t pid, int64_t tid, int64_t a,
			      int64_t b, void *arg)
{
	return trace_away_add(arg, pid, tid, a, b);
}

/* The times each thread was away from its program (analysis/trace.h):
 * its waits for a CPU (--vitals), the sends propel's agent held (table
 * holds; none in a session written before it). */
static int analysis_load_away(struct session *s, struct trace *t)
{
	sqlite3_stmt *st;
	int err = offcpu_store_runq_each(s, analysis_load_runq, t), rc;

	if (err || sqlite3_prepare_v2(session_db(s),
				      "SELECT pid, tid, ts_ns, dur_ns FROM holds"
				      " WHERE dur_ns > 0",
				      -1, &st, NULL) != SQLITE_OK)
		return err;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t a = sqlite3_column_int64(st, 2);

		err = trace_away_add(t, sqlite3_column_int64(st, 0),
				     sqlite3_column_int64(st, 1), a,
				     a + sqlite3_column_int64(st, 3));
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

static int analysis_load_walk(struct session *s, struct analysis_load *l,
			      struct trace **out, char **cause)
{
	int err;

	l->t = trace_new();
	if (!l->t)
		return propel_cause(cause, -ENOMEM, "%s: out of memory",
				    session_path(s));
	if (!l->cuts)
		analysis_load_reserve(s, l->t);
	{
		sqlite3 *db = session_db(s);

		l->gone = untraced_marks_names(&db, 1);
	}
	err = replay_walk(s, NULL, analysis_load_event, l, cause);
	untraced_marks_free(l->gone);
	l->gone = NULL;
	if (!err)
		err = analysis_load_tables(s, l->t);
	if (!err)
		err = analysis_load_away(s, l->t);
	if (!err)
		err = trace_finish(l->t);
	if (!err)
		analysis_load_targets(s, l->t);
	if (err) {
		trace_free(l->t);
		l->t = NULL;
		if (err == -ENOMEM)
			return propel_cause(cause, err, "%s: out of memory",
					    session_path(s));
		return propel_cause(cause, err,
				    "%s: session file is corrupt or truncated",
				    session_path(s));
	}
	*out = l->t;
	return 0;
}

int analysis_load(struct session *s, struct trace **out, char **cause)
{
	struct analysis_load l = { 0 };

	return analysis_load_walk(s, &l, out, cause);
}

int analysis_load_also(struct session *s, const struct untraced_marks *also,
		       struct trace **out, char **cause)
{
	struct analysis_load l = { 0 };

	l.also = also;
	return analysis_load_walk(s, &l, out, cause);
}

int analysis_load_cuts(struct session *s, const struct flows_opts *fo,
		       struct trace **out, uint32_t **ord, char **cause)
{
	static const struct flows_opts none;
	struct analysis_load l = { 0 };
	int err;

	l.cuts = fo ? fo : &none;
	err = analysis_load_walk(s, &l, out, cause);
	if (err) {
		free(l.ord);
		return err;
	}
	*ord = l.ord;
	return 0;
}

int analysis_load_ord(struct session *s, struct trace **out, uint32_t **ord,
		      char **cause)
{
	static const struct flows_opts none;
	struct analysis_load l = { 0 };
	int err;

	l.cuts = &none;
	l.all = 1;
	err = analysis_load_walk(s, &l, out, cause);
	if (err) {
		free(l.ord);
		return err;
	}
	*ord = l.ord;
	return 0;
}

char *analysis_flow_start(struct session *s)
{
	char *v = session_meta_get(s, "flow_start");

	if (v && !*v) {
		free(v);
		v = NULL;
	}
	return v;
}

int analysis_flows_opts(struct session *s, struct analysis_fo *a,
			char **cause)
{
	int err;

	memset(a, 0, sizeof(*a));
	a->start = analysis_flow_start(s);
	err = directives_load(s, &a->ds, cause);
	a->fo.start_func = a->start;
	a->fo.dir = a->ds.d;
	a->fo.ndir = a->ds.n;
	analysis_stdio_chans(s, &a->skip);
	a->fo.skip_chan = (const char *const *)a->skip.chan;
	a->fo.nskip = a->skip.n;
	return err;
}

void analysis_flows_opts_release(struct analysis_fo *a)
{
	free(a->start);
	directives_release(&a->ds);
	analysis_skip_release(&a->skip);
	memset(a, 0, sizeof(*a));
}

int analysis_flows(struct session *s, const struct trace *t,
		   struct flows **out)
{
	struct analysis_fo a;
	char *cause = NULL;
	int err;

	err = analysis_flows_opts(s, &a, &cause);
	free(cause);
	if (!err)
		err = flows_build(t, &a.fo, out);
	if (!err && a.fo.start_func && !(*out)->n) {
		flows_free(*out);
		*out = NULL;
		a.fo.start_func = NULL;
		err = flows_build(t, &a.fo, out);
	}
	analysis_flows_opts_release(&a);
	return err;
}

int analysis_keep_origin(const char *db, const pid_t *pids, int npids,
			 int stdio, char **cause)
{
	struct session *s = NULL;
	struct stat sb;
	char chans[128] = "", targets[256] = "";
	size_t n = 0, w = 0;
	int fd, i, err;

	for (fd = 0; stdio && fd < 3; fd++)
		if (fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode) &&
		    n < sizeof(chans))
			n += (size_t)snprintf(chans + n, sizeof(chans) - n,
					      "%spipe:%llu", n ? " " : "",
					      (unsigned long long)sb.st_ino);
	for (i = 0; i < npids && w < sizeof(targets); i++)
		w += (size_t)snprintf(targets + w, sizeof(targets) - w, "%s%d",
				      w ? " " : "", pids[i]);
	if (!chans[0] && !targets[0])
		return 0;
	err = session_open(db, SESSION_WRITE, &s, cause);
	if (err)
		return err;
	if (chans[0])
		err = session_meta_set(s, "stdio_chans", chans);
	if (!err && targets[0])
		err = session_meta_set(s, "attach_pids", targets);
	session_close(s);
	if (err)
		return propel_cause(cause, err, "%s: cannot keep %s %s", db,
				    chans, targets);
	return 0;
}

int analysis_stdio_chans(struct session *s, struct analysis_skip *k)
{
	char *v = session_meta_get(s, "stdio_chans"), *p, *save = NULL;

	memset(k, 0, sizeof(*k));
	if (!v)
		return 0;
	k->buf = v;
	for (p = strtok_r(v, " ", &save); p && k->n < ANALYSIS_MAXSKIP;
	     p = strtok_r(NULL, " ", &save))
		k->chan[k->n++] = p;
	return 0;
}

void analysis_skip_release(struct analysis_skip *k)
{
	free(k->buf);
	memset(k, 0, sizeof(*k));
}

int analysis_keep_flow_start(const char *db, const char *func, char **cause)
{
	struct session *s = NULL;
	int err = session_open(db, SESSION_WRITE, &s, cause);

	if (err)
		return err;
	err = session_meta_set(s, "flow_start", func);
	session_close(s);
	if (err)
		return propel_cause(cause, err, "%s: cannot keep --start %s",
				    db, func);
	return 0;
}
