/*
 * tui/run-args.h - the command line of `propel record` and `propel
 * attach` into one struct run_opts (engine/run.h): one getopt loop for
 * both, each value checked where it is read (tui/opt.h), so that a bad
 * one is one line, "propel: VERB: ...", before anything runs.  Callers:
 * tui/cmd-record.c, tui/cmd-attach.c.
 */
#ifndef PROPEL_TUI_RUN_ARGS_H
#define PROPEL_TUI_RUN_ARGS_H

#include "engine/run.h"

/*
 * o (run_opts_init'ed with its kind) from argv (argv[0] = the verb):
 * record's operands are CMD ARG..., attach's the PIDs; usage is printed
 * when there is none.  0, or 2 (the command's exit status) once said in
 * one line.  The caller releases o (run_opts_release) either way.
 */
int run_args_parse(struct run_opts *o, int argc, char **argv,
		   const char *usage);

#endif
