/*
 * tui/opt.h - option values the commands share, each checked where the
 * option is read (getopt's loop in tui/cmd-<verb>.c), so that a bad one
 * is one line, "propel: VERB: OPT ARG: why", before anything runs; the
 * call returns -1 and the command exits 2.
 */
#ifndef PROPEL_TUI_OPT_H
#define PROPEL_TUI_OPT_H

/* The longest --duration of attach and vitals record: 365 days. */
#define OPT_DURATION_MAX (365.0 * 86400)

/* A finite decimal number from min to max (inclusive) in *out; unit names
 * it in the message ("seconds", "MiB").  nan, inf, 1e400, trailing text
 * and an empty ARG are refused. */
int opt_number(const char *verb, const char *opt, const char *arg, double min,
	       double max, const char *unit, double *out);

/* An output file name: not empty and not beginning with '-' (so that
 * `-o -- -- CMD` does not take "--" for a file); "-" passes when dash_ok
 * (export's stdout). */
int opt_output(const char *verb, const char *opt, const char *arg, int dash_ok);

/* getopt_long's '?' or ':' (optstring "+:..." or ":...": getopt itself
 * says nothing) in one line: "propel: VERB: ARG: needs a value" or
 * "...: unknown option", then "(see propel VERB --help)". */
void opt_bad(const char *verb, int c, char **argv);

/* record|attach|report --directive SPEC (file 0) or --directives FILE
 * (file 1) added to ds (engine/directives.h). */
struct directives;
int opt_directive(const char *verb, int file, const char *arg,
		  struct directives *ds);

#endif
