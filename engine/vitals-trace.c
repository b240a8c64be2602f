/*
 * engine/vitals-trace.c - see engine/vitals-trace.h.
 *
 * Threads: the caller's (start, add, stop, store); the off-CPU poller
 * (vitals_trace_main), which owns `spans` and its own handle on the side
 * file until it is joined; the vital-sign collector's own thread
 * (engine/vitals-collect.c), with its own handle too.  `stopping` is the
 * only state they share.
 *
 * The side file is "<db>.vitals-<pid>": a session of vital signs and
 * off-CPU spans only, copied table by table into the stored session (its
 * tables are new there, so row ids are kept and samples still name their
 * stacks and epochs).  The poller writes its spans there every second (or
 * every VT_FLUSH spans), so a long recording holds no more than that in
 * memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "engine/offcpu-store.h"
#include "engine/session.h"
#include "engine/vitals-collect.h"
#include "engine/vitals-store.h"
#include "engine/vitals-trace.h"
#include "kmod/offcpu.h"
#include "share/clock.h"
#include "share/log.h"

#define PR_DOMAIN "vitals"

#define VT_FLUSH 4096 /* spans held before they go to the side file */

struct vitals_trace {
	struct vitals_trace_opts o;
	struct offcpu *oc;
	struct session *side;
	struct vitals_collect *vc;
	char *side_path;
	pthread_t thread;
	int started, stopped;
	int ran; /* the tracer or the collector ran: something to store */
	volatile int stopping;
	struct offcpu_span *spans;
	size_t nspans, cap;
	struct offcpu_signal *sigs; /* signals since the last flush */
	size_t nsigs, capsigs;
	uint64_t dropped; /* spans not kept: out of memory, or not stored */
	struct offcpu_row *rows; /* VT_FLUSH, for the writes */
	int64_t mono_to_real;
	char summary[1024];
};

static void vitals_trace_span(void *arg, const struct offcpu_span *s)
{
	struct vitals_trace *vt = arg;

	if (s->kind == OFFCPU_EV_SIGNAL) {
		struct offcpu_signal *g;

		if (vt->nsigs == vt->capsigs) {
			size_t cap = vt->capsigs ? 2 * vt->capsigs : 64;
			struct offcpu_signal *n =
			    realloc(vt->sigs, cap * sizeof(*n));

			if (!n) {
				vt->dropped++;
				return;
			}
			vt->sigs = n;
			vt->capsigs = cap;
		}
		g = &vt->sigs[vt->nsigs++];
		g->pid = s->tgid;
		g->tid = s->tid;
		g->ts_ns = (int64_t)s->ts_ns;
		g->signo = s->reason;
		g->code = s->fd;
		g->handled = s->state != 0;
		return;
	}
	if (vt->nspans == vt->cap) {
		size_t cap = vt->cap ? 2 * vt->cap : 1024;
		struct offcpu_span *n = realloc(vt->spans, cap * sizeof(*n));

		if (!n) {
			vt->dropped++;
			return;
		}
		vt->spans = n;
		vt->cap = cap;
	}
	vt->spans[vt->nspans++] = *s;
}

/* The span as the session stores it. */
static void vitals_trace_row(const struct offcpu_span *sp, struct offcpu_row *r)
{
	const char *op =
	    sp->nr == OFFCPU_NO_SYSCALL ? NULL : offcpu_syscall_name(sp->nr);

	memset(r, 0, sizeof(*r));
	r->pid = sp->tgid;
	r->tid = sp->tid;
	r->ts_ns = (int64_t)sp->ts_ns;
	r->dur_ns = (int64_t)sp->dur_ns;
	r->runq_ns = (int64_t)sp->runq_ns;
	r->fd = sp->fd;
	snprintf(r->reason, sizeof(r->reason), "%s",
		 offcpu_reason_name(sp->reason));
	if (op)
		snprintf(r->op, sizeof(r->op), "%s", op);
	else if (sp->nr != OFFCPU_NO_SYSCALL)
		snprintf(r->op, sizeof(r->op), "syscall %u", sp->nr);
}

/* The spans held so far into the side file (through the poller's own
 * handle), VT_FLUSH at a time. */
static void vitals_trace_flush(struct vitals_trace *vt, struct session *s)
{
	size_t i, k, n;

	for (i = 0; i < vt->nspans; i += n) {
		n = vt->nspans - i < VT_FLUSH ? vt->nspans - i : VT_FLUSH;
		for (k = 0; k < n; k++)
			vitals_trace_row(&vt->spans[i + k], &vt->rows[k]);
		if (!s || offcpu_store_put(s, vt->rows, n)) {
			pr_dbg("%zu off-CPU spans not stored", n);
			vt->dropped += n;
		}
	}
	vt->nspans = 0;
	if (vt->nsigs &&
	    (!s || offcpu_store_put_signals(s, vt->sigs, vt->nsigs)))
		vt->dropped += vt->nsigs;
	vt->nsigs = 0;
}

static void *vitals_trace_main(void *arg)
{
	struct vitals_trace *vt = arg;
	struct session *s = NULL;
	int64_t last = 0, now;

	if (session_open(vt->side_path, SESSION_WRITE, &s, NULL))
		s = NULL;
	while (!vt->stopping) {
		if (offcpu_poll(vt->oc, 100, vitals_trace_span, vt) < 0)
			break;
		now = (int64_t)propel_mono_ns();
		if (vt->nspans >= VT_FLUSH || vt->nsigs >= VT_FLUSH ||
		    now - last >= 1000000000LL) {
			vitals_trace_flush(vt, s);
			last = now;
		}
	}
	offcpu_poll(vt->oc, 0, vitals_trace_span, vt);
	vitals_trace_flush(vt, s);
	if (s)
		session_close(s);
	return NULL;
}

static void vitals_trace_say(struct vitals_trace *vt, const char *fmt,
			     const char *a, const char *b)
{
	size_t len = strlen(vt->summary);

	snprintf(vt->summary + len, sizeof(vt->summary) - len, fmt, a, b);
}

int vitals_trace_start(const char *db, const struct vitals_trace_opts *o,
		       struct vitals_trace **out, char **cause)
{
	struct vitals_trace *vt = calloc(1, sizeof(*vt));
	struct offcpu_opts oo = {0};
	struct vitals_collect_opts co = {0};
	char *why = NULL;
	int err;

	*out = NULL;
	if (!vt)
		return propel_cause(cause, -ENOMEM, "out of memory");
	if (o)
		vt->o = *o;
	vt->mono_to_real =
		(int64_t)propel_real_ns() - (int64_t)propel_mono_ns();
	if (asprintf(&vt->side_path, "%s.vitals-%d", db, (int)getpid()) < 0) {
		free(vt);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	/* where both collectors write until the session exists */
	err = session_open(vt->side_path, SESSION_CREATE, &vt->side, &why);
	if (err) {
		vitals_trace_say(vt, "off: %s%s", why ? why : strerror(-err),
				 "");
		free(why);
		*out = vt; /* the summary says why; store stores nothing */
		return 0;
	}

	oo.all = vt->o.all;
	oo.min_ns = vt->o.min_ns;
	err = offcpu_open(&oo, &vt->oc, &why);
	if (!err) {
		vt->rows = calloc(VT_FLUSH, sizeof(*vt->rows));
		if (!vt->rows || offcpu_store_create(vt->side))
			err = propel_cause(&why, -EIO, "%s: cannot write",
					   vt->side_path);
	}
	if (!err) {
		err = pthread_create(&vt->thread, NULL, vitals_trace_main, vt);
		if (err)
			err = propel_cause(&why, -err,
					   "starting the off-CPU thread");
		else
			vt->started = 1;
	}
	if (err) {
		vitals_trace_say(vt, "off-CPU spans off: %s%s",
				 why ? why : strerror(-err), "");
		offcpu_close(vt->oc);
		vt->oc = NULL;
	} else {
		vitals_trace_say(
		    vt, "off-CPU spans of %s%s",
		    vt->o.all ? "every process" : "the traced processes", "");
		if (offcpu_notes(vt->oc)[0])
			vitals_trace_say(vt, " (%s%s)", offcpu_notes(vt->oc),
					 "");
	}
	free(why);
	why = NULL;

	/* without the off-CPU tracer's map there is no filter: the
	 * collector would count the whole host */
	if (vt->oc && !vt->o.all)
		co.filter_fd = offcpu_tgids_fd(vt->oc);
	if (!vt->oc && !vt->o.all) {
		vitals_trace_say(vt, "; vital signs off: %s%s",
				 "they need the off-CPU tracer to keep to "
				 "the traced processes (--vitals=all for the "
				 "host)",
				 "");
	} else {
		err = vitals_collect_start(vt->side, &co, &vt->vc, &why);
		if (!err)
			vitals_trace_say(vt, "; %s%s",
					 vitals_collect_summary(vt->vc), "");
		else
			vitals_trace_say(vt, "; vital signs off: %s%s",
					 why ? why : strerror(-err), "");
		free(why);
	}
	/* even when nothing runs: the summary says why, and the trace goes
	 * on without (vitals_trace_store then stores nothing) */
	vt->ran = vt->oc || vt->vc;
	*out = vt;
	return 0;
}

int vitals_trace_add(struct vitals_trace *vt, pid_t pid, int parent_only)
{
	if (!vt || !vt->oc)
		return 0;
	return offcpu_add_tgid(vt->oc, (uint32_t)pid, parent_only);
}

int vitals_trace_forget(struct vitals_trace *vt, pid_t pid)
{
	if (!vt || !vt->oc)
		return 0;
	return offcpu_forget_tgid(vt->oc, (uint32_t)pid);
}

const char *vitals_trace_summary(struct vitals_trace *vt)
{
	return vt ? vt->summary : "";
}

void vitals_trace_stop(struct vitals_trace *vt)
{
	char *why = NULL;

	if (!vt || vt->stopped)
		return;
	vt->stopped = 1;
	vt->stopping = 1;
	if (vt->started)
		pthread_join(vt->thread, NULL);
	vt->started = 0;
	if (vt->vc && vitals_collect_stop(vt->vc, NULL, &why))
		propel_report("vitals", 0, why);
	free(why);
	vt->vc = NULL;
	if (vt->side)
		session_close(vt->side);
	vt->side = NULL;
}

static void vitals_trace_free(struct vitals_trace *vt)
{
	if (vt->side_path)
		unlink(vt->side_path);
	free(vt->side_path);
	offcpu_close(vt->oc);
	free(vt->spans);
	free(vt->sigs);
	free(vt->rows);
	free(vt);
}

void vitals_trace_abort(struct vitals_trace *vt)
{
	if (!vt)
		return;
	vitals_trace_stop(vt);
	vitals_trace_free(vt);
}

/* The side file's tables (those it has), appended to the session's. */
static int vitals_trace_copy(struct session *s, const char *side, char **cause)
{
	static const char *const tables[] = {
	    "vitals_runs",   "vitals_status", "vitals_epochs",	"vitals_totals",
	    "vitals_values", "vitals_stacks", "vitals_samples", "vitals_agg",
	    "offcpu",	     "ksignals",
	};
	struct vitals_store *st = NULL;
	sqlite3_stmt *at;
	char sql[200];
	size_t i;
	int err;

	/* the tables, empty (IF NOT EXISTS: none of them is there yet) */
	err = vitals_store_new(s, &st, cause);
	if (err)
		return err;
	vitals_store_free(st);
	if (offcpu_store_create(s))
		return propel_cause(cause, -EIO, "%s",
				    sqlite3_errmsg(session_db(s)));
	if (sqlite3_prepare_v2(session_db(s), "ATTACH ? AS side", -1, &at,
			       NULL) != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s",
				    sqlite3_errmsg(session_db(s)));
	sqlite3_bind_text(at, 1, side, -1, SQLITE_STATIC);
	err = sqlite3_step(at) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(at);
	if (err)
		return propel_cause(cause, err, "%s: %s", side,
				    sqlite3_errmsg(session_db(s)));
	session_exec(s, "BEGIN", NULL);
	for (i = 0; !err && i < sizeof(tables) / sizeof(tables[0]); i++) {
		sqlite3_stmt *q;
		int there = 0;

		if (sqlite3_prepare_v2(session_db(s),
				       "SELECT 1 FROM side.sqlite_master"
				       " WHERE type = 'table' AND name = ?",
				       -1, &q, NULL) == SQLITE_OK) {
			sqlite3_bind_text(q, 1, tables[i], -1, SQLITE_STATIC);
			there = sqlite3_step(q) == SQLITE_ROW;
			sqlite3_finalize(q);
		}
		if (!there)
			continue;
		snprintf(sql, sizeof(sql),
			 "INSERT INTO main.%s SELECT * FROM side.%s", tables[i],
			 tables[i]);
		err = session_exec(s, sql, cause);
	}
	if (!err)
		err = session_exec(s,
				   "INSERT OR REPLACE INTO main.meta"
				   " SELECT key, value FROM side.meta"
				   " WHERE key = 'offcpu.max_dur_ns'",
				   cause);
	session_exec(s, err ? "ROLLBACK" : "COMMIT", NULL);
	session_exec(s, "DETACH side", NULL);
	return err;
}

/*
 * The host of each span and signal just copied (offcpu-store.h): the
 * collectors ran on this kernel, so a pid is the process of that pid the
 * session holds, of the first host stored with one (this host is stored
 * first, engine/capture.c); a pid of none (--vitals=all) is this host's,
 * meta "vitals.host".  A host on another kernel whose traced pid is one
 * of these is told apart when its own are merged (engine/vitals-host.c).
 */
static int vitals_trace_hosts(struct session *s, char **cause)
{
	static const char *const sql[] = {
	    "INSERT OR REPLACE INTO meta(key, value) SELECT 'vitals.host',"
	    " coalesce((SELECT host FROM processes ORDER BY id LIMIT 1),"
	    " (SELECT value FROM meta WHERE key = 'host'), ?1)",
	    "UPDATE offcpu SET host = coalesce((SELECT p.host FROM processes p"
	    " WHERE p.pid = offcpu.pid ORDER BY p.id LIMIT 1),"
	    " (SELECT value FROM meta WHERE key = 'vitals.host'))"
	    " WHERE host IS NULL",
	    "UPDATE ksignals SET host = coalesce((SELECT p.host FROM"
	    " processes p WHERE p.pid = ksignals.pid ORDER BY p.id LIMIT 1),"
	    " (SELECT value FROM meta WHERE key = 'vitals.host'))"
	    " WHERE host IS NULL",
	};
	struct utsname un;
	sqlite3_stmt *q;
	size_t i;
	int err = 0;

	if (uname(&un) < 0)
		snprintf(un.nodename, sizeof(un.nodename), "localhost");
	session_exec(s, "BEGIN", NULL);
	for (i = 0; !err && i < sizeof(sql) / sizeof(sql[0]); i++) {
		if (sqlite3_prepare_v2(session_db(s), sql[i], -1, &q, NULL) !=
		    SQLITE_OK) {
			err = -EIO;
			break;
		}
		if (sqlite3_bind_parameter_count(q))
			sqlite3_bind_text(q, 1, un.nodename, -1,
					  SQLITE_STATIC);
		if (sqlite3_step(q) != SQLITE_DONE)
			err = -EIO;
		sqlite3_finalize(q);
	}
	if (err)
		propel_cause(cause, err, "%s: the spans' host: %s",
			     session_path(s), sqlite3_errmsg(session_db(s)));
	session_exec(s, err ? "ROLLBACK" : "COMMIT", NULL);
	return err;
}

int vitals_trace_store(struct vitals_trace *vt, const char *db, char **cause)
{
	struct session *s = NULL;
	char buf[64];
	int err;

	if (!vt)
		return 0;
	vitals_trace_stop(vt);
	if (!vt->ran) {
		vitals_trace_free(vt);
		return 0;
	}
	err = session_open(db, SESSION_WRITE, &s, cause);
	if (err)
		goto out;
	err = vitals_trace_copy(s, vt->side_path, cause);
	if (err)
		goto out;
	if (vt->oc && (offcpu_lost(vt->oc) || vt->dropped)) {
		snprintf(buf, sizeof(buf), "%" PRIu64,
			 offcpu_lost(vt->oc) + vt->dropped);
		session_meta_set(s, "offcpu.lost", buf);
		fprintf(stderr, "propel: vitals: %s off-CPU spans lost\n", buf);
	}
	err = vitals_trace_hosts(s, cause);
	if (err)
		goto out;
	session_meta_set(s, "vitals.scope", vt->o.all ? "all" : "traced");
	snprintf(buf, sizeof(buf), "%" PRId64, vt->mono_to_real);
	/* vitals_samples.ts_ns are CLOCK_REALTIME: minus this, the trace's;
	 * the exporters' Unix time of the trace (engine/export.h) is then
	 * exact, not guessed from created_ns */
	session_meta_set(s, "vitals.mono_to_real_ns", buf);
	session_meta_set(s, "realtime_offset_ns", buf);
out:
	if (s)
		session_close(s);
	vitals_trace_free(vt);
	return err;
}
