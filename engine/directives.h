/*
 * engine/directives.h - mapping directives (self-propelled §3.2,
 * analysis/flows.h) from the command line to the agents and into the
 * session, and back out of it for the analysis.
 *
 *   record|attach --directive SPEC / --directives FILE
 *       directives_add, directives_add_file: each SPEC parsed at once
 *       (a bad one is the command's one-line error, before anything runs)
 *   -> directives_values: what the agents record ("enqueue@1,dequeue@ret",
 *       share/agent-abi.h), written into the session directory
 *       (directives_write) or said to every propeld (transport_set_values)
 *   -> directives_keep: the SPECs in the session's meta (key directives,
 *       one per line), so that report, the TUI and export use them
 *   <- directives_load: the session's directives for flows_opts.
 *
 * FILE, a regular text file of at most 1 MiB or /dev/null (none; a
 * device such as /dev/zero, a FIFO, a directory or a binary is refused),
 * holds one SPEC per line; blank lines and lines beginning with '#' are
 * skipped.  One function's entry may name one argument only.
 */
#ifndef PROPEL_ENGINE_DIRECTIVES_H
#define PROPEL_ENGINE_DIRECTIVES_H

#include <stddef.h>

#include "analysis/flows.h"

struct session;

struct directives {
	struct flows_directive *d;
	char **spec; /* as given, trimmed */
	size_t n;
	int args; /* record|attach --args: every function's arguments and
		   * return value ("*@args", share/agent-abi.h) */
	char values[1024]; /* directives_values */
};

/* 0, or -EINVAL / -ENOMEM with a one-line *cause naming SPEC. */
int directives_add(struct directives *ds, const char *spec, char **cause);
/* Every SPEC of FILE.  0, or -errno with *cause. */
int directives_add_file(struct directives *ds, const char *path, char **cause);
void directives_release(struct directives *ds);

/* ds->values from the directives (the agents' form).  0, -E2BIG. */
int directives_values(struct directives *ds, char **cause);
/* PROPEL_VALUES_FILE in a session directory (nothing when ds has no
 * directives and no args).  0, or -errno with *cause. */
int directives_write(const struct directives *ds, const char *dir,
		     char **cause);

/* Keep ds in the session DB's meta.  0, or -errno with *cause. */
int directives_keep(const char *db, const struct directives *ds, char **cause);
/* The session's directives (none: ds->n = 0).  0, -ENOMEM, or -EINVAL
 * with *cause when the meta does not parse. */
int directives_load(struct session *s, struct directives *ds, char **cause);
/* 1 when both values d compares (function, entry argument or return
 * value) are named by a side of one of ds, i.e. were recorded. */
int directives_recorded(const struct directives *ds,
			const struct flows_directive *d);

#endif
