/*
 * engine/untraced.c - the session's record of what the agent's cost budget
 * left untraced (inject/agent/budget.c; share/ring.h's B lines).  Ingest
 * (engine/ingest-map.c) calls untraced_line for each B line; `propel
 * replay` (tui/cmd-replay.c) and the end of a run (engine/run.c) read the
 * rows back with untraced_each.  The table is made on first use, so a
 * session without a budget has none (untraced_each: -ENOENT).
 */
#include <errno.h>
#include <stdlib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/untraced.h"

static const char untraced_schema[] =
	"CREATE TABLE IF NOT EXISTS untraced(proc INTEGER, func INTEGER,"
	" reason TEXT, ts_ns INTEGER, insns INTEGER, rate INTEGER,"
	" mean_ns INTEGER, sites INTEGER);"
	"CREATE TABLE IF NOT EXISTS untraced_calls(proc INTEGER,"
	" caller INTEGER, callee INTEGER, UNIQUE(proc, caller, callee));";

struct untraced_mark {
	int64_t pid;
	char *caller, *callees;
};

struct untraced_marks {
	struct untraced_mark *v;
	size_t n;
};

int untraced_line(sqlite3 *db, int64_t proc, int64_t func_row,
		  const char *line)
{
	unsigned id;
	char reason[8];
	unsigned long long ts, a = 0, b = 0, c = 0;
	sqlite3_stmt *st = NULL;
	int n, err = 0;

	n = sscanf(line, "B %u %7s %llu %llu %llu %llu", &id, reason, &ts, &a,
		   &b, &c);
	if (n < 4 || (strcmp(reason, "leaf") && strcmp(reason, "rate")) ||
	    (!strcmp(reason, "rate") && n < 6))
		return -EINVAL;
	if (sqlite3_exec(db, untraced_schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO untraced VALUES(?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, proc);
	if (func_row)
		sqlite3_bind_int64(st, 2, func_row);
	sqlite3_bind_text(st, 3, reason, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, (int64_t)ts);
	if (!strcmp(reason, "leaf")) {
		sqlite3_bind_int64(st, 5, (int64_t)a);
	} else {
		sqlite3_bind_int64(st, 6, (int64_t)a);
		sqlite3_bind_int64(st, 7, (int64_t)b);
		sqlite3_bind_int64(st, 8, (int64_t)c);
	}
	if (sqlite3_step(st) != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

int untraced_each(sqlite3 *db, int64_t pid,
		  int (*fn)(const struct untraced_row *r, void *arg),
		  void *arg)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(
		db,
		"SELECT p.pid, coalesce(f.name, '?'), u.reason,"
		" u.ts_ns,"
		" u.insns, u.rate, u.mean_ns, u.sites"
		" FROM untraced u JOIN processes p ON p.id = u.proc"
		" LEFT JOIN functions f ON f.id = u.func"
		" WHERE ?1 <= 0 OR p.pid = ?1 ORDER BY p.pid, u.ts_ns",
		-1, &st, NULL);
	if (rc != SQLITE_OK)
		return strstr(sqlite3_errmsg(db), "no such table") ? -ENOENT
								 : -EIO;
	sqlite3_bind_int64(st, 1, pid);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct untraced_row r = {
			.pid = sqlite3_column_int64(st, 0),
			.func = (const char *)sqlite3_column_text(st, 1),
			.reason = (const char *)sqlite3_column_text(st, 2),
			.after_ns = sqlite3_column_int64(st, 3),
			.insns = sqlite3_column_int64(st, 4),
			.rate = sqlite3_column_int64(st, 5),
			.mean_ns = sqlite3_column_int64(st, 6),
			.sites = sqlite3_column_int64(st, 7),
		};
		ret = fn(&r, arg);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	return ret;
}

void untraced_format(const struct untraced_row *r, char *buf, size_t size)
{
	char after[48];

	snprintf(after, sizeof(after), " after %.1f s", r->after_ns / 1e9);
	if (!strcmp(r->reason, "leaf"))
		snprintf(buf, size,
			 "pid %" PRId64 " %s: a leaf of %" PRId64
			 " instructions without loops: not traced",
			 r->pid, r->func, r->insns);
	else
		snprintf(buf, size,
			 "pid %" PRId64 " %s: %" PRId64 " calls/s, %" PRId64
			 " ns mean: untraced%s (%" PRId64 " call site%s)",
			 r->pid, r->func, r->rate, r->mean_ns, after, r->sites,
			 r->sites == 1 ? "" : "s");
}

int untraced_call(sqlite3 *db, int64_t proc, int64_t caller, int64_t callee)
{
	sqlite3_stmt *st = NULL;
	int err = 0;

	if (!caller || !callee)
		return 0;
	if (sqlite3_exec(db, untraced_schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT OR IGNORE INTO untraced_calls"
			       " VALUES(?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, proc);
	sqlite3_bind_int64(st, 2, caller);
	sqlite3_bind_int64(st, 3, callee);
	if (sqlite3_step(st) != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

static int untraced_mark_cmp(const void *a, const void *b)
{
	const struct untraced_mark *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->caller, y->caller);
}

/* Marks from sql, whose rows are (pid, caller, text) and whose ?1 is
 * pid. */
static struct untraced_marks *untraced_marks_sql(sqlite3 *db, const char *sql,
						 int64_t pid)
{
	struct untraced_marks *m;
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL; /* no table: nothing left out */
	sqlite3_bind_int64(st, 1, pid);
	m = calloc(1, sizeof(*m));
	while (m && sqlite3_step(st) == SQLITE_ROW) {
		struct untraced_mark *nv = realloc(m->v, (m->n + 1) * sizeof(*nv));
		const char *a = (const char *)sqlite3_column_text(st, 1);
		const char *b = (const char *)sqlite3_column_text(st, 2);

		if (!nv || !a || !b)
			break;
		m->v = nv;
		nv[m->n].pid = sqlite3_column_int64(st, 0);
		nv[m->n].caller = strdup(a);
		nv[m->n].callees = strdup(b);
		if (!nv[m->n].caller || !nv[m->n].callees) {
			free(nv[m->n].caller);
			free(nv[m->n].callees);
			break;
		}
		m->n++;
	}
	sqlite3_finalize(st);
	if (m && !m->n) {
		untraced_marks_free(m);
		return NULL;
	}
	if (m)
		qsort(m->v, m->n, sizeof(*m->v), untraced_mark_cmp);
	return m;
}

struct untraced_marks *untraced_marks_load(sqlite3 *db, int64_t pid)
{
	return untraced_marks_sql(
		db,
		"SELECT p.pid, a.name, group_concat(DISTINCT b.name)"
		" FROM untraced_calls u JOIN processes p ON p.id = u.proc"
		" JOIN functions a ON a.id = u.caller"
		" JOIN functions b ON b.id = u.callee"
		" WHERE ?1 <= 0 OR p.pid = ?1 GROUP BY p.pid, a.name",
		pid);
}

struct untraced_marks *untraced_marks_names(sqlite3 *const *dbs, size_t n)
{
	struct untraced_marks *all = NULL;

	for (size_t i = 0; i < n; i++) {
		struct untraced_marks *m = untraced_marks_sql(
			dbs[i],
			"SELECT DISTINCT 0, f.name, 'rate' FROM untraced u"
			" JOIN functions f ON f.id = u.func"
			" WHERE u.reason = 'rate'",
			0);
		struct untraced_mark *nv;

		if (!m)
			continue;
		if (!all) {
			all = m;
			continue;
		}
		nv = realloc(all->v, (all->n + m->n) * sizeof(*nv));
		if (!nv) {
			untraced_marks_free(m);
			continue;
		}
		all->v = nv;
		memcpy(all->v + all->n, m->v, m->n * sizeof(*nv));
		all->n += m->n;
		free(m->v);
		free(m);
	}
	if (all) /* (duplicates are harmless to bsearch) */
		qsort(all->v, all->n, sizeof(*all->v), untraced_mark_cmp);
	return all;
}

const char *untraced_marks_find(const struct untraced_marks *m, int64_t pid,
				const char *caller)
{
	struct untraced_mark key = { pid, (char *)caller, NULL }, *r;

	if (!m || !caller)
		return NULL;
	r = bsearch(&key, m->v, m->n, sizeof(*m->v), untraced_mark_cmp);
	return r ? r->callees : NULL;
}

void untraced_marks_free(struct untraced_marks *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].caller);
		free(m->v[i].callees);
	}
	free(m->v);
	free(m);
}
