/*
 * engine/variance-store.c - the session's record of what `attach
 * --adaptive` traced and when (inject/agent/adaptive.c; the map's A
 * lines), in the table `adaptive`: ingest (engine/ingest-map.c) calls
 * variance_store_line for each A line; `propel report --variance`
 * (engine/variance.c) reads it back with variance_store_load.  The table
 * is made on first use: a session without --adaptive has none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/variance-store.h"

static const char variance_schema[] =
	"CREATE TABLE IF NOT EXISTS adaptive(proc INTEGER, func INTEGER,"
	" what TEXT, ts_ns INTEGER, level INTEGER);";

int variance_store_line(sqlite3 *db, int64_t proc, const int64_t *func_row,
			size_t nfunc, const char *line)
{
	char what[2];
	unsigned long long a = 0, ts = 0, level = 0;
	sqlite3_stmt *st = NULL;
	int n, err = 0;

	n = sscanf(line, "A %1s %llu %llu %llu", what, &a, &ts, &level);
	if (n < 2 || !strchr("tp+-", what[0]) || (what[0] != 't' && n < 4))
		return -EINVAL;
	if (sqlite3_exec(db, variance_schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO adaptive VALUES(?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, proc);
	if (what[0] == 't')
		sqlite3_bind_int64(st, 5, (int64_t)a); /* the count */
	else if (a < nfunc && func_row[a])
		sqlite3_bind_int64(st, 2, func_row[a]);
	sqlite3_bind_text(st, 3, what, 1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, (int64_t)ts);
	if (what[0] != 't')
		sqlite3_bind_int64(st, 5, (int64_t)level);
	if (sqlite3_step(st) != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	return err;
}

int variance_store_load(sqlite3 *db, struct variance_patched **out,
			size_t *n, int64_t *total)
{
	sqlite3_stmt *st = NULL;
	struct variance_patched *v = NULL;
	size_t cap = 0;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	*total = 0;
	rc = sqlite3_prepare_v2(
		db,
		"SELECT coalesce(f.name, '?'), a.what, min(a.ts_ns),"
		" sum(a.level)"
		" FROM adaptive a LEFT JOIN functions f ON f.id = a.func"
		" WHERE a.what != '-' GROUP BY coalesce(f.name, '?'),"
		" a.what = 't'",
		-1, &st, NULL);
	if (rc != SQLITE_OK)
		return strstr(sqlite3_errmsg(db), "no such table") ? -ENOENT
								 : -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *what = (const char *)sqlite3_column_text(st, 1);

		if (what && *what == 't') {
			*total += sqlite3_column_int64(st, 3);
			continue;
		}
		if (*n == cap) {
			struct variance_patched *nv;

			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[*n].func = strdup((const char *)sqlite3_column_text(st, 0));
		v[*n].at_ns = sqlite3_column_int64(st, 2);
		if (!v[*n].func) {
			err = -ENOMEM;
			break;
		}
		(*n)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	if (err) {
		variance_patched_free(v, *n);
		*n = 0;
		return err;
	}
	*out = v;
	return 0;
}

void variance_patched_free(struct variance_patched *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].func);
	free(v);
}
