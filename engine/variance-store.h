/*
 * engine/variance-store.h - what `attach --adaptive` traced, and when
 * (the map's A lines, inject/agent/adaptive.c), in the session's table
 * `adaptive` (variance-store.c).  Written by engine/ingest-map.c, read by
 * engine/variance.c.
 */
#ifndef PROPEL_ENGINE_VARIANCE_STORE_H
#define PROPEL_ENGINE_VARIANCE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/* An A line of process row proc (func_row[id]: the functions table's row
 * of function id, nfunc of them): 0, -EINVAL, -EIO. */
int variance_store_line(sqlite3 *db, int64_t proc, const int64_t *func_row,
			size_t nfunc, const char *line);

struct variance_patched {
	char *func;    /* its name */
	int64_t at_ns; /* first traced, since the agent started */
};
/* Every function the controller ever traced (by name, its first time)
 * into *out (malloc'd, *n of them), and the traced modules' functions in
 * all into *total: 0, -ENOENT (no --adaptive in the session), -ENOMEM,
 * -EIO. */
int variance_store_load(sqlite3 *db, struct variance_patched **out,
			size_t *n, int64_t *total);
void variance_patched_free(struct variance_patched *v, size_t n);

#endif
