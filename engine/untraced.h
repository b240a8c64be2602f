/*
 * engine/untraced.h - what the agent's cost budget left untraced
 * (inject/agent/budget.c): the map's B lines, kept in the session's table
 * `untraced`, and read back for `propel replay` and the end of `attach`.
 */
#ifndef PROPEL_ENGINE_UNTRACED_H
#define PROPEL_ENGINE_UNTRACED_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

struct untraced_row {
	int64_t pid;
	const char *func;   /* its name */
	const char *reason; /* "leaf" or "rate" */
	int64_t after_ns;   /* since the agent started in the process */
	int64_t insns;      /* leaf: its instructions */
	int64_t rate;       /* rate: calls/s on the thread that decided */
	int64_t mean_ns;    /* rate: their mean duration (estimated) */
	int64_t sites;      /* rate: call sites restored */
};

/* A B line of process row proc (func_row: the functions table's row of
 * its function): 0, -EINVAL for a line it cannot read, -EIO. */
int untraced_line(sqlite3 *db, int64_t proc, int64_t func_row,
		  const char *line);
/* A U line: a caller (its functions row) whose calls of callee are left
 * out; 0 or -EIO (the pair kept once). */
int untraced_call(sqlite3 *db, int64_t proc, int64_t caller, int64_t callee);

/* For replay's marker: per (pid, caller name), the callees left out, in
 * one string ("memcpy,ngx_palloc").  NULL when there are none (or no
 * table). */
struct untraced_marks;
struct untraced_marks *untraced_marks_load(sqlite3 *db, int64_t pid);
const char *untraced_marks_find(const struct untraced_marks *m, int64_t pid,
				const char *caller);
void untraced_marks_free(struct untraced_marks *m);
/* The names the dynamic rule untraced in any of n sessions, as marks of
 * pid 0 (find with pid 0): traced before the decision, not after, so the
 * analyses drop them from every process of the session and of the
 * sessions compared with it (engine/analysis-load.c), and flows before
 * and after the decision, or through a process whose budget decided and
 * one whose budget did not, compare alike (three-tier hang/rootcause: a
 * backend worker that untraced strlen below redis_send, compared with
 * another worker's flow that kept it, ranked that path first; a reference
 * whose budget kept ngx_http_create_request, compared with a session
 * whose budget untraced it after 3.5 s, differed in every request's path
 * below it).  NULL when none. */
struct untraced_marks *untraced_marks_names(sqlite3 *const *dbs, size_t n);

/* Each row, the process pid's only if pid > 0, by process then time:
 * fn's non-zero return ends the walk and is returned; -ENOENT: the
 * session has no such table (older than the budget). */
int untraced_each(sqlite3 *db, int64_t pid,
		  int (*fn)(const struct untraced_row *r, void *arg),
		  void *arg);
/* One line of r ("pid 42 ngx_palloc: 41200 calls/s, 38 ns mean: untraced
 * after 0.8 s"), into buf. */
void untraced_format(const struct untraced_row *r, char *buf, size_t size);

#endif
