/*
 * engine/offcpu-store.c - see engine/offcpu-store.h.  The only SQL on the
 * offcpu table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/offcpu-store.h"

int offcpu_store_create(struct session *s)
{
	return session_exec(
		   s,
		   "CREATE TABLE IF NOT EXISTS offcpu(pid INTEGER,"
		   " tid INTEGER, ts_ns INTEGER, dur_ns INTEGER,"
		   " runq_ns INTEGER, reason TEXT, op TEXT, fd INTEGER,"
		   " host TEXT);"
		   "CREATE INDEX IF NOT EXISTS offcpu_thread"
		   " ON offcpu(pid, tid, ts_ns);"
		   "CREATE TABLE IF NOT EXISTS ksignals(pid INTEGER,"
		   " tid INTEGER, ts_ns INTEGER, signo INTEGER, code INTEGER,"
		   " handled INTEGER, host TEXT);"
		   "CREATE INDEX IF NOT EXISTS ksignals_thread"
		   " ON ksignals(pid, tid, ts_ns);",
		   NULL)
		   ? -EIO
		   : 0;
}

int offcpu_store_put(struct session *s, const struct offcpu_row *rows, size_t n)
{
	sqlite3 *db = session_db(s);
	sqlite3_stmt *st = NULL;
	size_t i;
	int err = 0;

	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_prepare_v2(db, "INSERT INTO offcpu VALUES(?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK) {
		err = -EIO;
		goto out;
	}
	for (i = 0; i < n && !err; i++) {
		const struct offcpu_row *r = &rows[i];

		sqlite3_bind_int64(st, 1, r->pid);
		sqlite3_bind_int64(st, 2, r->tid);
		sqlite3_bind_int64(st, 3, r->ts_ns);
		sqlite3_bind_int64(st, 4, r->dur_ns);
		sqlite3_bind_int64(st, 5, r->runq_ns);
		sqlite3_bind_text(st, 6, r->reason, -1, SQLITE_STATIC);
		if (r->op[0])
			sqlite3_bind_text(st, 7, r->op, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 7);
		if (r->fd >= 0)
			sqlite3_bind_int(st, 8, r->fd);
		else
			sqlite3_bind_null(st, 8);
		if (r->host[0])
			sqlite3_bind_text(st, 9, r->host, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 9);
		if (sqlite3_step(st) != SQLITE_DONE)
			err = -EIO;
		sqlite3_reset(st);
	}
	/* the longest span bounds a range query's scan (offcpu_store_range) */
	if (!err && sqlite3_exec(db,
				 "INSERT OR REPLACE INTO meta(key, value)"
				 " SELECT 'offcpu.max_dur_ns', max(dur_ns)"
				 " FROM offcpu",
				 NULL, NULL, NULL) != SQLITE_OK)
		err = -EIO;
out:
	sqlite3_finalize(st);
	if (sqlite3_exec(db, err ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) !=
	    SQLITE_OK)
		err = -EIO;
	return err;
}

int offcpu_store_put_signals(struct session *s, const struct offcpu_signal *sig,
			     size_t n)
{
	sqlite3 *db = session_db(s);
	sqlite3_stmt *st = NULL;
	size_t i;
	int err = 0;

	if (!n)
		return 0;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO ksignals VALUES(?,?,?,?,?,?,NULL)",
			       -1, &st, NULL) != SQLITE_OK)
		err = -EIO;
	for (i = 0; i < n && !err; i++) {
		sqlite3_bind_int64(st, 1, sig[i].pid);
		sqlite3_bind_int64(st, 2, sig[i].tid);
		sqlite3_bind_int64(st, 3, sig[i].ts_ns);
		sqlite3_bind_int(st, 4, sig[i].signo);
		sqlite3_bind_int(st, 5, sig[i].code);
		sqlite3_bind_int(st, 6, sig[i].handled);
		if (sqlite3_step(st) != SQLITE_DONE)
			err = -EIO;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(db, err ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) !=
	    SQLITE_OK)
		err = -EIO;
	return err;
}

int offcpu_store_present(struct session *s)
{
	sqlite3_stmt *st;
	int yes = 0;

	if (sqlite3_prepare_v2(
		session_db(s),
		"SELECT 1 FROM sqlite_master WHERE type = 'table'"
		" AND name = 'offcpu'",
		-1, &st, NULL) != SQLITE_OK)
		return 0;
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

int offcpu_store_runq_each(struct session *s,
			   int (*fn)(int64_t pid, int64_t tid, int64_t a,
				     int64_t b, void *arg),
			   void *arg)
{
	sqlite3_stmt *st;
	int rc, k, r = 0;

	if (!offcpu_store_present(s))
		return 0;
	/* a session from before the host column: every span */
	for (k = 0; k < 2; k++)
		if (sqlite3_prepare_v2(
			    session_db(s),
			    k ? "SELECT pid, tid, ts_ns + dur_ns - runq_ns,"
				" ts_ns + dur_ns FROM offcpu WHERE runq_ns > 0"
			      : "SELECT pid, tid, ts_ns + dur_ns - runq_ns,"
				" ts_ns + dur_ns FROM offcpu o WHERE runq_ns > 0"
				" AND (host IS NULL OR host IN (SELECT host"
				" FROM processes p WHERE p.pid = o.pid))",
			    -1, &st, NULL) == SQLITE_OK)
			break;
	if (k == 2)
		return -EIO;
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = fn(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
		       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
		       arg);
	if (!r && rc != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(st);
	return r;
}

int offcpu_store_range(struct session *s, int64_t pid, int64_t tid, int64_t t0,
		       int64_t t1, struct offcpu_row **rows, size_t *n)
{
	sqlite3_stmt *st;
	struct offcpu_row *out = NULL, *r;
	size_t cap = 0, len = 0;
	const unsigned char *t;
	char *maxs, sql[400];
	int64_t lo;
	int rc, k;

	*rows = NULL;
	*n = 0;
	if (!offcpu_store_present(s))
		return 0;
	/* spans that start before t0 reach it only from t0 - the longest:
	 * the index on (pid, tid, ts_ns) scans [lo, t1], not the thread */
	maxs = session_meta_get(s, "offcpu.max_dur_ns");
	lo = maxs ? t0 - strtoll(maxs, NULL, 10) : INT64_MIN;
	free(maxs);
	/* a session from before the host column: every span of the pid */
	for (k = 0; k < 2; k++) {
		snprintf(sql, sizeof(sql),
			 "SELECT pid, tid, ts_ns, dur_ns, runq_ns, reason, op,"
			 " coalesce(fd, -1) FROM offcpu WHERE pid = ?1 AND %s"
			 " AND ts_ns BETWEEN ?5 AND ?4 AND ts_ns + dur_ns >= ?3"
			 "%s ORDER BY ts_ns",
			 tid ? "tid = ?2" : "?2 = 0",
			 k ? "" : " AND " OFFCPU_STORE_OF_PID);
		if (sqlite3_prepare_v2(session_db(s), sql, -1, &st, NULL) ==
		    SQLITE_OK)
			break;
	}
	if (k == 2)
		return -EIO;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, tid);
	sqlite3_bind_int64(st, 3, t0);
	sqlite3_bind_int64(st, 5, lo);
	sqlite3_bind_int64(st, 4, t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			struct offcpu_row *nr;

			cap = cap ? 2 * cap : 16;
			nr = realloc(out, cap * sizeof(*nr));
			if (!nr) {
				free(out);
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			out = nr;
		}
		r = &out[len++];
		memset(r, 0, sizeof(*r));
		r->pid = sqlite3_column_int64(st, 0);
		r->tid = sqlite3_column_int64(st, 1);
		r->ts_ns = sqlite3_column_int64(st, 2);
		r->dur_ns = sqlite3_column_int64(st, 3);
		r->runq_ns = sqlite3_column_int64(st, 4);
		if ((t = sqlite3_column_text(st, 5)))
			snprintf(r->reason, sizeof(r->reason), "%s", t);
		if ((t = sqlite3_column_text(st, 6)))
			snprintf(r->op, sizeof(r->op), "%s", t);
		r->fd = sqlite3_column_int(st, 7);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(out);
		return -EIO;
	}
	*rows = out;
	*n = len;
	return 0;
}

int64_t offcpu_store_split(const struct offcpu_row *rows, size_t n, int64_t t0,
			   int64_t t1, int *main)
{
	int64_t off = 0, best = 0;
	size_t i;

	*main = -1;
	for (i = 0; i < n; i++) {
		int64_t a = rows[i].ts_ns > t0 ? rows[i].ts_ns : t0;
		int64_t b = rows[i].ts_ns + rows[i].dur_ns;

		if (b > t1)
			b = t1;
		if (b <= a)
			continue;
		off += b - a;
		if (b - a > best) {
			best = b - a;
			*main = (int)i;
		}
	}
	return off;
}

const char *offcpu_store_dur(int64_t ns, char *buf, size_t size)
{
	if (ns >= 10000000000LL)
		snprintf(buf, size, "%" PRId64 " s", ns / 1000000000);
	else if (ns >= 1000000000)
		snprintf(buf, size, "%.1f s", ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, size, "%" PRId64 " ms", ns / 1000000);
	else if (ns >= 1000)
		snprintf(buf, size, "%" PRId64 " us", ns / 1000);
	else
		snprintf(buf, size, "%" PRId64 " ns", ns);
	return buf;
}

const char *offcpu_store_text(const struct offcpu_row *r, char *buf,
			      size_t size)
{
	char d[24], q[24];
	const char *op = r->op[0] ? r->op : NULL;

	offcpu_store_dur(r->dur_ns, d, sizeof(d));
	if (!strcmp(r->reason, "runqueue")) {
		snprintf(buf, size, "waited %s on the run queue", d);
		return buf;
	}
	if (!strcmp(r->reason, "sleep"))
		snprintf(buf, size, "off-CPU %s: sleeping%s%s", d,
			 op ? " in " : "", op ? op : "");
	else if (!strcmp(r->reason, "lock"))
		snprintf(buf, size, "off-CPU %s: waiting on a lock%s%s", d,
			 op ? " in " : "", op ? op : "");
	else if (!strcmp(r->reason, "socket") || !strcmp(r->reason, "pipe"))
		snprintf(buf, size, "off-CPU %s: blocked in %s %s", d,
			 !strcmp(r->reason, "socket") ? "sock" : "pipe",
			 op ? op : "wait");
	else if (!strcmp(r->reason, "io"))
		snprintf(buf, size, "off-CPU %s: blocked on I/O%s%s", d,
			 op ? " in " : "", op ? op : "");
	else if (!strcmp(r->reason, "fault"))
		snprintf(buf, size, "off-CPU %s: page fault I/O", d);
	else
		snprintf(buf, size, "off-CPU %s: %s%s%s", d, r->reason,
			 op ? " in " : "", op ? op : "");
	if (r->runq_ns >= 1000000) {
		size_t len = strlen(buf);

		offcpu_store_dur(r->runq_ns, q, sizeof(q));
		snprintf(buf + len, size - len, " (%s of it runnable)", q);
	}
	return buf;
}

const char *offcpu_store_why(const struct offcpu_row *r, char *buf, size_t size)
{
	static const struct {
		const char *reason, *words;
		int op_after; /* "pipe read": the op follows without "in" */
	} why[] = {
	    {"runqueue", "run queue", -1},
	    {"sleep", "sleep", 0},
	    {"lock", "lock wait", 0},
	    {"socket", "sock", 1},
	    {"pipe", "pipe", 1},
	    {"io", "I/O", 0},
	    {"fault", "page fault I/O", -1},
	    {"poll", "poll", 0},
	    {"child", "child wait", 0},
	};
	const char *op = r->op[0] ? r->op : NULL;
	size_t i;

	for (i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		if (strcmp(why[i].reason, r->reason))
			continue;
		if (!op || why[i].op_after < 0)
			snprintf(buf, size, "%s", why[i].words);
		else
			snprintf(buf, size, "%s %s%s", why[i].words,
				 why[i].op_after ? "" : "in ", op);
		return buf;
	}
	snprintf(buf, size, "%s%s%s", r->reason, op ? " in " : "",
		 op ? op : "");
	return buf;
}
