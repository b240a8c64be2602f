/*
 * tui/run-args.c - `record` and `attach` options into struct run_opts
 * (tui/run-args.h).  The two commands take the same options but for
 * attach's --duration (-d) and record's short -b; record's defaults are
 * --mode full --timing exact, attach's flight and sampled
 * (run_opts_init).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/capture.h"
#include "share/drain.h"
#include "share/log.h"
#include "tui/opt.h"
#include "tui/run-args.h"

static const struct option run_args_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "directive", required_argument, NULL, 'V' },
	{ "directives", required_argument, NULL, 'D' },
	{ "start", required_argument, NULL, 'S' },
	{ "follow", no_argument, NULL, 'f' },
	{ "follow-stdio", no_argument, NULL, 'F' },
	{ "libc", no_argument, NULL, 'l' },
	{ "buffer-size", required_argument, NULL, 'b' },
	{ "mode", required_argument, NULL, 'm' },
	{ "vitals", optional_argument, NULL, 'K' },
	{ "timing", required_argument, NULL, 'T' },
	{ "args", no_argument, NULL, 'a' },
	{ "budget", required_argument, NULL, 'B' },
	{ "leaf-insns", required_argument, NULL, 'L' },
	{ "all", no_argument, NULL, 'A' },
	{ "adaptive", no_argument, NULL, 'Y' },
	{ "duration", required_argument, NULL, 'd' }, /* attach only: last */
	{ NULL, 0, NULL, 0 },
};
#define RUN_ARGS_N (sizeof(run_args_opts) / sizeof(run_args_opts[0]))

/* One option c with its optarg into o: 0, or 2 once said. */
static int run_args_one(struct run_opts *o, int c, char **argv)
{
	const char *verb = o->verb;
	char what[64];
	double v;

	switch (c) {
	case 'o':
		if (opt_output(verb, "-o", optarg, 0))
			return 2;
		o->db = optarg;
		return 0;
	case 'S':
		o->start = optarg;
		return 0;
	case 'V':
	case 'D':
		return opt_directive(verb, c == 'D', optarg, &o->dirs) ? 2 : 0;
	case 'd':
		return opt_number(verb, "--duration", optarg, 0.001,
				  OPT_DURATION_MAX, "seconds", &o->duration)
			       ? 2
			       : 0;
	case 'f':
		o->follow = 1;
		return 0;
	case 'F':
		o->follow_stdio = 1;
		return 0;
	case 'l':
		o->libc = 1;
		return 0;
	case 'a':
		o->dirs.args = 1;
		return 0;
	case 'b':
		return capture_buffer_opt(verb, optarg, &o->ring_kb) ? 2 : 0;
	case 'm':
		if ((o->full = drain_mode_parse(optarg)) >= 0)
			return 0;
		propel_report(verb, 0, "--mode: full or flight");
		return 2;
	case 'T':
		if ((o->exact = run_timing_parse(optarg)) >= 0)
			return 0;
		propel_report(verb, 0, "--timing: exact or sampled");
		return 2;
	case 'B':
	case 'L':
		if (opt_number(verb, c == 'B' ? "--budget" : "--leaf-insns",
			       optarg, c == 'B' ? 1 : 0, c == 'B' ? 100 : 100000,
			       c == 'B' ? "percent" : "instructions", &v))
			return 2;
		if (v != (double)(unsigned)v) {
			snprintf(what, sizeof(what), "%s: %s", verb,
				 c == 'B' ? "--budget" : "--leaf-insns");
			propel_report(what, 0, "a whole number");
			return 2;
		}
		if (c == 'B')
			o->budget_pct = (unsigned)v;
		else
			o->leaf_insns = (unsigned)v;
		o->budget_given = 1;
		return 0;
	case 'A':
		o->all = 1;
		return 0;
	case 'Y':
		o->adaptive = 1;
		return 0;
	case 'K':
		o->vitals = 1;
		o->vitals_scope = optarg;
		if (run_vitals_parse(optarg) == 0)
			return 0;
		snprintf(what, sizeof(what), "%s: --vitals", verb);
		propel_report(what, 0, "unknown scope (--vitals or --vitals=all)");
		return 2;
	default:
		opt_bad(verb, c, argv);
		return 2;
	}
}

/* attach's operands: the PIDs. */
static int run_args_pids(struct run_opts *o, int argc, char **argv)
{
	o->pids = calloc(argc, sizeof(*o->pids));
	if (!o->pids) {
		propel_report(o->verb, -ENOMEM, NULL);
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);

		if (*end || v <= 0 || v > 0x3fffffff) {
			fprintf(stderr, "propel: attach %s: not a process id\n",
				argv[i]);
			return 2;
		}
		o->pids[o->npids++] = (pid_t)v;
	}
	return 0;
}

int run_args_parse(struct run_opts *o, int argc, char **argv,
		   const char *usage)
{
	struct option lo[RUN_ARGS_N];
	char *cause = NULL;
	int c, err;

	memcpy(lo, run_args_opts, sizeof(lo));
	if (o->kind == RUN_RECORD) /* no --duration */
		memset(&lo[RUN_ARGS_N - 2], 0, sizeof(lo[0]));
	optind = 1;
	while ((c = getopt_long(argc, argv,
				o->kind == RUN_RECORD ? "+:o:b:" : "+:o:d:", lo,
				NULL)) != -1)
		if ((err = run_args_one(o, c, argv)))
			return err;
	if (optind >= argc) {
		fprintf(stderr, "usage: propel %s %s\n", o->verb, usage);
		return 2;
	}
	if (o->all && o->budget_given) {
		propel_report(o->verb, 0, "--all traces every call: no --budget "
			      "or --leaf-insns with it");
		return 2;
	}
	if (o->all && o->kind == RUN_RECORD) {
		propel_report(o->verb, 0, "--all: record traces every call "
			      "already (the budget is --budget)");
		return 2;
	}
	if (o->follow && o->budget_given) {
		propel_report(o->verb, 0, "--budget and --leaf-insns do not "
			      "reach --follow's peers yet: the default budget "
			      "applies there (or --all)");
		return 2;
	}
	if (o->adaptive && (o->kind == RUN_RECORD || o->all || o->follow)) {
		propel_report(o->verb, 0, o->kind == RUN_RECORD
			      ? "--adaptive is attach's (record traces every call)"
			      : o->all ? "--adaptive and --all: one or the other"
			      : "--adaptive does not reach --follow's peers yet");
		return 2;
	}
	/* the controller times every call (inject/agent/adaptive.c) */
	if (o->adaptive)
		o->exact = 1;
	o->budget = o->all ? 0 : o->kind == RUN_ATTACH || o->budget_given;
	if (o->follow_stdio && !o->follow) {
		propel_report(o->verb, 0, "--follow-stdio goes with --follow");
		return 2;
	}
	/* the values the agents record, once every option is read */
	if ((o->dirs.n || o->dirs.args) &&
	    directives_values(&o->dirs, &cause)) {
		propel_report(o->verb, 0, cause);
		free(cause);
		return 2;
	}
	o->argc = argc - optind;
	o->argv = argv + optind;
	return o->kind == RUN_ATTACH ? run_args_pids(o, o->argc, o->argv) : 0;
}
