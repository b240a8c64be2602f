/*
 * engine/vitals-host.c - see engine/vitals-host.h.
 *
 * The child's files live in "DIR.vitals/" (vitals_trace_start's side
 * file beside "DIR.vitals/vitals.db"), never in DIR while it runs: sqlite
 * maps its files, and propeld's detach takes a child of its own that maps
 * a file of DIR for a traced process (inject/tracer.h).  At the end the
 * trace's tables are stored into that file, which is renamed
 * DIR/VITALS_HOST_FILE at once (one tmpfs), so the coordinator gets all of
 * it or nothing.  Its meta "vitals.host_summary" is the collectors' one
 * line there.
 *
 * The merge: one transaction over the host's file ATTACHed as "h"; each
 * table's rows inserted with the ids shifted past the session's largest
 * (a run, an epoch, a stack, a sample of the host keeps what it names),
 * ts_ns moved by offset_ns (offcpu, ksignals: CLOCK_MONOTONIC) or by
 * offset_ns + ours - its mono_to_real (the vitals_* tables: CLOCK_REALTIME);
 * the spans' and signals' host is the host's name.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/offcpu-store.h"
#include "engine/session.h"
#include "engine/vitals-host.h"
#include "engine/vitals-store.h"
#include "engine/vitals-trace.h"
#include "share/clock.h"
#include "share/log.h"

#define PR_DOMAIN "vitals"

#define VH_SCAN_MS 100

static void vh_add(void *arg, pid_t pid)
{
	vitals_trace_add(arg, pid, 0);
}

int vitals_host_run(const char *dir, int all, char **cause)
{
	struct vitals_trace_opts vo = {0};
	struct vitals_trace *vt = NULL;
	struct session *s = NULL;
	const char *ms = getenv("PROPEL_OFFCPU_MIN_US");
	char work[1024], tmp[1100], path[1024], *summary = NULL;
	int err;

	snprintf(work, sizeof(work), "%s.vitals", dir);
	snprintf(tmp, sizeof(tmp), "%s/%s", work, VITALS_HOST_FILE);
	snprintf(path, sizeof(path), "%s/%s", dir, VITALS_HOST_FILE);
	if (mkdir(work, 0700) < 0 && errno != EEXIST)
		return propel_cause(cause, -errno, "%s: %s", work,
				    strerror(errno));
	vo.all = all;
	if (ms && atol(ms) > 0)
		vo.min_ns = (uint64_t)atol(ms) * 1000;
	err = vitals_trace_start(tmp, &vo, &vt, cause);
	if (err) {
		rmdir(work);
		return err;
	}
	for (;;) {
		struct pollfd p = { 0, POLLIN, 0 };
		char buf[256];

		capture_each_map(dir, vh_add, vt);
		if (poll(&p, 1, VH_SCAN_MS) < 0 && errno != EINTR)
			break;
		if (p.revents && read(0, buf, sizeof(buf)) <= 0)
			break; /* propeld is done (or gone) */
	}
	capture_each_map(dir, vh_add, vt);
	vitals_trace_stop(vt);
	summary = strdup(vitals_trace_summary(vt));
	err = session_open(tmp, SESSION_CREATE, &s, cause);
	if (!err) {
		session_close(s);
		s = NULL;
		err = vitals_trace_store(vt, tmp, cause);
	} else {
		vitals_trace_abort(vt);
	}
	vt = NULL;
	if (!err)
		err = session_open(tmp, SESSION_WRITE, &s, cause);
	if (!err && session_meta_set(s, "vitals.host_summary",
				     summary ? summary : ""))
		err = propel_cause(cause, -EIO, "%s: cannot write", tmp);
	if (s)
		session_close(s);
	if (!err && rename(tmp, path) < 0)
		err = propel_cause(cause, -errno, "%s: %s", path,
				   strerror(errno));
	if (err)
		unlink(tmp);
	rmdir(work);
	free(summary);
	return err;
}

/* The session's largest id of table t (0 when none). */
static int64_t vh_max(struct session *s, const char *t)
{
	char sql[128];
	sqlite3_stmt *q;
	int64_t n = 0;

	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM main.%s",
		 t);
	if (sqlite3_prepare_v2(session_db(s), sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

/* A meta value of schema db ("main" or "h") as a number; def if none. */
static int64_t vh_meta(struct session *s, const char *db, const char *key,
		       int64_t def, int *found)
{
	char sql[128];
	sqlite3_stmt *q;
	int64_t v = def;

	*found = 0;
	snprintf(sql, sizeof(sql), "SELECT value FROM %s.meta WHERE key = ?",
		 db);
	if (sqlite3_prepare_v2(session_db(s), sql, -1, &q, NULL) != SQLITE_OK)
		return def;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW &&
	    sqlite3_column_type(q, 0) != SQLITE_NULL) {
		v = strtoll((const char *)sqlite3_column_text(q, 0), NULL, 10);
		*found = 1;
	}
	sqlite3_finalize(q);
	return v;
}

/* Does the host's file have table t? */
static int vh_has(struct session *s, const char *t)
{
	sqlite3_stmt *q;
	int there = 0;

	if (sqlite3_prepare_v2(session_db(s),
			       "SELECT 1 FROM h.sqlite_master"
			       " WHERE type = 'table' AND name = ?",
			       -1, &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(q, 1, t, -1, SQLITE_STATIC);
	there = sqlite3_step(q) == SQLITE_ROW;
	sqlite3_finalize(q);
	return there;
}

static int vh_copy(struct session *s, const char *host, int64_t off,
		   int64_t dr, char **cause)
{
	int64_t r = vh_max(s, "vitals_runs"), e = vh_max(s, "vitals_epochs"),
		k = vh_max(s, "vitals_stacks"), sm = vh_max(s, "vitals_samples"),
		su = vh_max(s, "vitals_summary");
	/* ?1 runs, ?2 epochs, ?3 stacks, ?4 samples, ?5 summaries,
	 * ?6 the realtime shift, ?7 the monotonic one, ?8 the host */
	static const struct {
		const char *table, *sql;
	} copy[] = {
	    { "vitals_runs",
	      "INSERT INTO main.vitals_runs SELECT id + ?1,"
	      " start_ns + ?6, end_ns + ?6, source,"
	      " epoch_ms, notes FROM h.vitals_runs" },
	    { "vitals_status",
	      "INSERT INTO main.vitals_status SELECT run + ?1,"
	      " vital, state, why FROM h.vitals_status" },
	    { "vitals_epochs",
	      "INSERT INTO main.vitals_epochs SELECT id + ?2,"
	      " run + ?1, seq, start_ns + ?6,"
	      " end_ns + ?6, ncpus, bpf_run_ns, user_run_ns,"
	      " memfree_kb FROM h.vitals_epochs" },
	    { "vitals_totals",
	      "INSERT INTO main.vitals_totals SELECT epoch + ?2,"
	      " vital, events, weight, sampled, dropped, tshift"
	      " FROM h.vitals_totals" },
	    { "vitals_values",
	      "INSERT INTO main.vitals_values SELECT epoch + ?2,"
	      " vital, pid, uid, comm, value, count, aux, short"
	      " FROM h.vitals_values" },
	    { "vitals_stacks",
	      "INSERT INTO main.vitals_stacks SELECT id + ?3,"
	      " hash, frames FROM h.vitals_stacks" },
	    { "vitals_samples",
	      "INSERT INTO main.vitals_samples SELECT id + ?4,"
	      " epoch + ?2, ts_ns + ?6, vital, pid,"
	      " tid, uid, comm, weight, counter, label, d0, d1, d2, d3,"
	      " kstack + ?3, ustack + ?3, n"
	      " FROM h.vitals_samples" },
	    { "vitals_summary",
	      "INSERT INTO main.vitals_summary SELECT id + ?5,"
	      " start_ns + ?6, end_ns + ?6, nepochs,"
	      " blob FROM h.vitals_summary" },
	    /* spans of this session's collectors that took a pid of this
	     * host for one of theirs: the pid there is another process,
	     * theirs is of this session's host (vitals-trace.c) */
	    { "offcpu",
	      "UPDATE main.offcpu SET host = (SELECT value FROM main.meta"
	      " WHERE key = 'vitals.host') WHERE host = ?8" },
	    { "ksignals",
	      "UPDATE main.ksignals SET host = (SELECT value FROM main.meta"
	      " WHERE key = 'vitals.host') WHERE host = ?8" },
	    { "offcpu",
	      "INSERT INTO main.offcpu SELECT pid, tid, ts_ns + ?7,"
	      " dur_ns, runq_ns, reason, op, fd, ?8 FROM h.offcpu" },
	    { "ksignals",
	      "INSERT INTO main.ksignals SELECT pid, tid,"
	      " ts_ns + ?7, signo, code, handled, ?8 FROM h.ksignals" },
	};
	int64_t v[7] = { r, e, k, sm, su, dr, off };
	size_t i;
	int err = 0, j;

	for (i = 0; !err && i < sizeof(copy) / sizeof(copy[0]); i++) {
		sqlite3_stmt *q;

		if (!vh_has(s, copy[i].table))
			continue;
		if (sqlite3_prepare_v2(session_db(s), copy[i].sql, -1, &q,
				       NULL) != SQLITE_OK)
			return propel_cause(cause, -EIO, "%s: %s",
					    copy[i].table,
					    sqlite3_errmsg(session_db(s)));
		for (j = 1; j <= sqlite3_bind_parameter_count(q); j++) {
			const char *name = sqlite3_bind_parameter_name(q, j);
			int n = name ? atoi(name + 1) : 0;

			if (n >= 1 && n <= 7)
				sqlite3_bind_int64(q, j, v[n - 1]);
			else if (n == 8)
				sqlite3_bind_text(q, j, host, -1,
						  SQLITE_STATIC);
		}
		if (sqlite3_step(q) != SQLITE_DONE)
			err = propel_cause(cause, -EIO, "%s: %s",
					   copy[i].table,
					   sqlite3_errmsg(session_db(s)));
		sqlite3_finalize(q);
	}
	return err;
}

int vitals_host_merge(const char *db, const char *file, const char *host,
		      int64_t offset_ns, char **summary, char **cause)
{
	struct vitals_store *st = NULL;
	struct session *s = NULL;
	sqlite3_stmt *at = NULL;
	int64_t ours, theirs;
	int err, found, attached = 0;
	char buf[32];

	*summary = NULL;
	err = session_open(db, SESSION_WRITE, &s, cause);
	if (err)
		return err;
	/* the tables, empty if the session has none yet */
	err = vitals_store_new(s, &st, cause);
	if (err)
		goto out;
	vitals_store_free(st);
	if (offcpu_store_create(s)) {
		err = propel_cause(cause, -EIO, "%s",
				   sqlite3_errmsg(session_db(s)));
		goto out;
	}
	if (sqlite3_prepare_v2(session_db(s), "ATTACH ? AS h", -1, &at,
			       NULL) != SQLITE_OK) {
		err = propel_cause(cause, -EIO, "%s",
				   sqlite3_errmsg(session_db(s)));
		goto out;
	}
	sqlite3_bind_text(at, 1, file, -1, SQLITE_STATIC);
	if (sqlite3_step(at) != SQLITE_DONE) {
		err = propel_cause(cause, -EIO, "%s: %s", file,
				   sqlite3_errmsg(session_db(s)));
		goto out;
	}
	attached = 1;
	/* the session's mono_to_real: its own collectors', or now's */
	ours = vh_meta(s, "main", "vitals.mono_to_real_ns",
		       (int64_t)propel_real_ns() - (int64_t)propel_mono_ns(),
		       &found);
	if (!found) {
		snprintf(buf, sizeof(buf), "%" PRId64, ours);
		session_meta_set(s, "vitals.mono_to_real_ns", buf);
	}
	theirs = vh_meta(s, "h", "vitals.mono_to_real_ns", ours, &found);
	if (!vh_has(s, "meta")) {
		err = propel_cause(cause, -EPROTO, "%s: not a session file",
				   file);
		goto out;
	}
	session_exec(s, "BEGIN", NULL);
	err = vh_copy(s, host, offset_ns, offset_ns + ours - theirs, cause);
	session_exec(s, err ? "ROLLBACK" : "COMMIT", NULL);
	if (!err) {
		char *scope = NULL;
		sqlite3_stmt *q;

		if (sqlite3_prepare_v2(session_db(s),
				       "SELECT value FROM h.meta WHERE key ="
				       " 'vitals.host_summary'",
				       -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW &&
			    sqlite3_column_text(q, 0))
				*summary = strdup(
				    (const char *)sqlite3_column_text(q, 0));
			sqlite3_finalize(q);
		}
		scope = session_meta_get(s, "vitals.scope");
		if (!scope)
			session_meta_set(s, "vitals.scope", "traced");
		free(scope);
	}
out:
	sqlite3_finalize(at);
	if (attached)
		session_exec(s, "DETACH h", NULL);
	session_close(s);
	return err;
}
