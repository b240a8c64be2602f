/*
 * engine/export.h - `propel export`: a session written in a format other
 * tools read.  One const descriptor per format (tmux's cmd_entry), listed
 * in one table in engine/export.c; each format is its own file,
 * engine/export-<name>.c, and reads the session only through the engine's
 * queries (engine/session.h, engine/match.h, engine/replay.h).
 *
 *   dot      the communication diagram (engine/export-dot.c): processes
 *            grouped by host, edges for messages, forks and waits (the
 *            self-propelled paper's Figure 5), for graphviz
 *
 * Later formats (issue 12: chrome, otlp, folded) add a file and a line in
 * the table.  tui/cmd-export.c parses the options, opens the output and
 * calls export_session(); it knows no format.
 */
#ifndef PROPEL_ENGINE_EXPORT_H
#define PROPEL_ENGINE_EXPORT_H

#include <stdio.h>

struct session;

struct export_format {
	const char *name;    /* --format=NAME */
	const char *summary; /* one line for --help */
	/* Write the whole session to out: 0, or -errno with *cause (one
	 * line, without "propel: "). */
	int (*write)(struct session *s, FILE *out, char **cause);
};

extern const struct export_format export_dot_format;

/* The format called name, or NULL. */
const struct export_format *export_find(const char *name);
/* The known formats' names, "a, b, c" (a static string). */
const char *export_names(void);
/* The formats, for --help: the i-th or NULL past the last. */
const struct export_format *export_format_at(int i);

/* Export s in format name to out: 0, -EINVAL for an unknown format, or
 * the format's error; *cause says why. */
int export_session(struct session *s, const char *name, FILE *out,
		   char **cause);

#endif
