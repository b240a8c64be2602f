/*
 * engine/vitals-trace.c - see engine/vitals-trace.h.
 *
 * Threads: the caller's (start, add, stop, store); the off-CPU poller
 * (vitals_trace_main), which owns `spans` until it is joined; the vital-sign
 * collector's own thread (engine/vitals-collect.c), which writes the side
 * file.  `stopping` is the only state they share.
 *
 * The side file is "<db>.vitals-<pid>": a session of vital signs only,
 * copied table by table into the stored session (its tables are new there,
 * so row ids are kept and samples still name their stacks and epochs).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/offcpu-store.h"
#include "engine/session.h"
#include "engine/vitals-collect.h"
#include "engine/vitals-store.h"
#include "engine/vitals-trace.h"
#include "kmod/offcpu.h"
#include "share/log.h"

#define PR_DOMAIN "vitals"

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
	uint64_t dropped; /* spans not kept: out of memory */
	int64_t mono_to_real;
	char summary[1024];
};

static void vitals_trace_span(void *arg, const struct offcpu_span *s)
{
	struct vitals_trace *vt = arg;

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

static void *vitals_trace_main(void *arg)
{
	struct vitals_trace *vt = arg;

	while (!vt->stopping)
		if (offcpu_poll(vt->oc, 100, vitals_trace_span, vt) < 0)
			break;
	offcpu_poll(vt->oc, 0, vitals_trace_span, vt);
	return NULL;
}

static int64_t vitals_trace_clock(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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
	vt->mono_to_real = vitals_trace_clock(CLOCK_REALTIME) -
			   vitals_trace_clock(CLOCK_MONOTONIC);
	oo.all = vt->o.all;
	oo.min_ns = vt->o.min_ns;
	err = offcpu_open(&oo, &vt->oc, &why);
	if (err) {
		vitals_trace_say(vt, "off-CPU spans off: %s%s",
				 why ? why : strerror(-err), "");
		free(why);
		why = NULL;
		vt->oc = NULL;
	} else {
		vitals_trace_say(
		    vt, "off-CPU spans of %s%s",
		    vt->o.all ? "every process" : "the traced processes", "");
		if (offcpu_notes(vt->oc)[0])
			vitals_trace_say(vt, " (%s%s)", offcpu_notes(vt->oc),
					 "");
		err = pthread_create(&vt->thread, NULL, vitals_trace_main, vt);
		if (err) {
			offcpu_close(vt->oc);
			vt->oc = NULL;
			free(vt);
			return propel_cause(cause, -err,
					    "starting the off-CPU thread");
		}
		vt->started = 1;
	}

	if (asprintf(&vt->side_path, "%s.vitals-%d", db, (int)getpid()) < 0) {
		vt->side_path = NULL;
		vitals_trace_abort(vt);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	err = session_open(vt->side_path, SESSION_CREATE, &vt->side, &why);
	if (!err) {
		/* without the off-CPU tracer's map there is no filter: the
		 * collector would count the whole host */
		if (vt->oc && !vt->o.all)
			co.filter_fd = offcpu_tgids_fd(vt->oc);
		if (!vt->oc && !vt->o.all) {
			vitals_trace_say(vt, "; vital signs off: %s%s",
					 "they need the off-CPU tracer to "
					 "keep to the traced processes "
					 "(--vitals=all for the host)",
					 "");
			err = -ENOENT;
		} else {
			err =
			    vitals_collect_start(vt->side, &co, &vt->vc, &why);
			if (!err)
				vitals_trace_say(vt, "; %s%s",
						 vitals_collect_summary(vt->vc),
						 "");
			else
				vitals_trace_say(vt, "; vital signs off: %s%s",
						 why ? why : strerror(-err),
						 "");
		}
	} else {
		vitals_trace_say(vt, "; vital signs off: %s%s",
				 why ? why : strerror(-err), "");
	}
	free(why);
	if (!vt->vc && vt->side) {
		session_close(vt->side);
		vt->side = NULL;
		unlink(vt->side_path);
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
	free(vt);
}

void vitals_trace_abort(struct vitals_trace *vt)
{
	if (!vt)
		return;
	vitals_trace_stop(vt);
	vitals_trace_free(vt);
}

/* The side file's vital-sign tables, appended to the session's. */
static int vitals_trace_copy(struct session *s, const char *side, char **cause)
{
	static const char *const tables[] = {
	    "vitals_runs",   "vitals_status", "vitals_epochs",	"vitals_totals",
	    "vitals_values", "vitals_stacks", "vitals_samples", "vitals_agg",
	};
	struct vitals_store *st = NULL;
	sqlite3_stmt *at;
	char sql[160];
	size_t i;
	int err;

	err = vitals_store_new(s, &st, cause); /* creates the tables */
	if (err)
		return err;
	vitals_store_free(st);
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
		snprintf(sql, sizeof(sql),
			 "INSERT INTO main.%s SELECT * FROM side.%s", tables[i],
			 tables[i]);
		err = session_exec(s, sql, cause);
	}
	session_exec(s, err ? "ROLLBACK" : "COMMIT", NULL);
	session_exec(s, "DETACH side", NULL);
	return err;
}

int vitals_trace_store(struct vitals_trace *vt, const char *db, char **cause)
{
	struct session *s = NULL;
	struct offcpu_row *rows = NULL;
	char buf[64];
	size_t i;
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
	if (vt->oc) {
		err = offcpu_store_create(s);
		rows = calloc(vt->nspans ? vt->nspans : 1, sizeof(*rows));
		if (!err && !rows)
			err = -ENOMEM;
		for (i = 0; !err && i < vt->nspans; i++) {
			const struct offcpu_span *sp = &vt->spans[i];
			const char *op = sp->nr == OFFCPU_NO_SYSCALL
					     ? NULL
					     : offcpu_syscall_name(sp->nr);

			rows[i].pid = sp->tgid;
			rows[i].tid = sp->tid;
			rows[i].ts_ns = (int64_t)sp->ts_ns;
			rows[i].dur_ns = (int64_t)sp->dur_ns;
			rows[i].runq_ns = (int64_t)sp->runq_ns;
			rows[i].fd = sp->fd;
			snprintf(rows[i].reason, sizeof(rows[i].reason), "%s",
				 offcpu_reason_name(sp->reason));
			if (op)
				snprintf(rows[i].op, sizeof(rows[i].op), "%s",
					 op);
			else if (sp->nr != OFFCPU_NO_SYSCALL)
				snprintf(rows[i].op, sizeof(rows[i].op),
					 "syscall %u", sp->nr);
		}
		if (!err)
			err = offcpu_store_put(s, rows, vt->nspans);
		if (err) {
			err = propel_cause(cause, err,
					   "%s: storing off-CPU "
					   "spans: %s",
					   db, sqlite3_errmsg(session_db(s)));
			goto out;
		}
		if (offcpu_lost(vt->oc) || vt->dropped) {
			snprintf(buf, sizeof(buf), "%" PRIu64,
				 offcpu_lost(vt->oc) + vt->dropped);
			session_meta_set(s, "offcpu.lost", buf);
			fprintf(stderr,
				"propel: vitals: %s off-CPU spans lost (the "
				"ring was full)\n",
				buf);
		}
	}
	session_meta_set(s, "vitals.scope", vt->o.all ? "all" : "traced");
	snprintf(buf, sizeof(buf), "%" PRId64, vt->mono_to_real);
	/* vitals_samples.ts_ns are CLOCK_REALTIME: minus this, the trace's;
	 * the exporters' Unix time of the trace (engine/export.h) is then
	 * exact, not guessed from created_ns */
	session_meta_set(s, "vitals.mono_to_real_ns", buf);
	session_meta_set(s, "realtime_offset_ns", buf);
	if (vt->side_path && access(vt->side_path, F_OK) == 0)
		err = vitals_trace_copy(s, vt->side_path, cause);
out:
	free(rows);
	if (s)
		session_close(s);
	vitals_trace_free(vt);
	return err;
}
