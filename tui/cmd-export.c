/*
 * tui/cmd-export.c - `propel export --format=FORMAT [-o FILE] [DB]`: write
 * a session in a format other tools read (engine/export.h holds the
 * formats; this file knows none of them).  Parses the options, opens the
 * session and the output, calls export_session(), reports.
 *
 * The output (stdout by default) is written to FILE.tmp-PID beside FILE
 * and renamed over FILE only when the export succeeded: a failed export
 * leaves no partial file and an existing FILE untouched.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/export.h"
#include "engine/http.h"
#include "engine/session.h"
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/opt.h"

static int cmd_export_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "counts", no_argument, NULL, 'c' },
		{ "merged", no_argument, NULL, 'm' },
		{ "otlp-endpoint", required_argument, NULL, 'e' },
		{ "calls", no_argument, NULL, 'C' },
		{ "flow", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = PROPEL_SESSION_DEFAULT, *format = NULL, *path = NULL;
	char *cause = NULL, *tmp = NULL, what[300];
	static const struct {
		unsigned bit;
		const char *name;
	} takes[] = { { EXPORT_PID, "--pid" },
		      { EXPORT_COUNTS, "--counts" },
		      { EXPORT_MERGED, "--merged" },
		      { EXPORT_ENDPOINT, "--otlp-endpoint" },
		      { EXPORT_CALLS, "--calls" },
		      { EXPORT_FLOW, "--flow" } };
	const struct export_format *fmt;
	struct export_opts eo = { 0 };
	struct session *s = NULL;
	FILE *out = stdout;
	unsigned given = 0;
	char *end;
	int c, err;
	size_t i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+f:o:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			if (opt_output("export", "-o", optarg, 1))
				return 2;
			path = optarg;
			break;
		case 'p':
			errno = 0;
			eo.pid = strtoll(optarg, &end, 10);
			if (errno || !*optarg || *end || eo.pid <= 0) {
				snprintf(what, sizeof(what),
					 "export: --pid %.100s", optarg);
				propel_report(what, 0, "not a positive number");
				return 2;
			}
			given |= EXPORT_PID;
			break;
		case 'c':
			eo.counts = 1;
			given |= EXPORT_COUNTS;
			break;
		case 'm':
			eo.merged = 1;
			given |= EXPORT_MERGED;
			break;
		case 'F':
			errno = 0;
			eo.flow = (int)strtol(optarg, &end, 10);
			if (errno || !*optarg || *end || eo.flow <= 0) {
				snprintf(what, sizeof(what),
					 "export: --flow %.100s", optarg);
				propel_report(what, 0, "not a positive number");
				return 2;
			}
			given |= EXPORT_FLOW;
			break;
		case 'C':
			eo.calls = 1;
			given |= EXPORT_CALLS;
			break;
		case 'e':
			if (http_url_check(optarg, &cause)) {
				propel_report("export: --otlp-endpoint", 0,
					      cause);
				free(cause);
				return 2;
			}
			eo.endpoint = optarg;
			given |= EXPORT_ENDPOINT;
			break;
		default:
			propel_report("export", 0,
				      "bad option (see propel export --help)");
			return 2;
		}
	}
	if (optind < argc)
		db = argv[optind++];
	if (optind < argc) {
		propel_report("export", 0,
			      "too many arguments (see propel export --help)");
		return 2;
	}
	if (!format) {
		snprintf(what, sizeof(what), "no --format given (known: %s)",
			 export_names());
		propel_report("export", 0, what);
		return 2;
	}
	if ((fmt = export_find(format)))
		for (i = 0; i < sizeof(takes) / sizeof(takes[0]); i++)
			if ((given & takes[i].bit) && !(fmt->takes & takes[i].bit)) {
				char why[64];

				snprintf(what, sizeof(what), "export: %s",
					 takes[i].name);
				snprintf(why, sizeof(why),
					 "not taken by --format=%s", fmt->name);
				propel_report(what, 0, why);
				return 2;
			}
	if (!fmt) {
		char why[300];

		snprintf(what, sizeof(what), "export: --format=%.200s", format);
		snprintf(why, sizeof(why), "unknown format (known: %s)",
			 export_names());
		propel_report(what, 0, why);
		return 2;
	}
	err = session_open(db, SESSION_READ, &s, &cause);
	if (err)
		goto out;
	if (path && strcmp(path, "-") != 0) {
		if (asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0) {
			tmp = NULL;
			err = propel_cause(&cause, -ENOMEM, "out of memory");
			goto out;
		}
		out = fopen(tmp, "we");
		if (!out) {
			err = propel_cause(&cause, -errno, "%s: %s", path,
					   strerror(errno));
			free(tmp);
			tmp = NULL;
			out = stdout;
			goto out;
		}
	}
	err = export_session(s, format, &eo, out, &cause);
	if (!err && fflush(out) != 0)
		err = propel_cause(&cause, -errno, "%s: %s",
				   path ? path : "stdout", strerror(errno));
	if (out != stdout && fclose(out) != 0 && !err)
		err = propel_cause(&cause, -errno, "%s: %s", path,
				   strerror(errno));
	out = stdout;
	if (tmp && !err && rename(tmp, path) != 0)
		err = propel_cause(&cause, -errno, "%s: %s", path,
				   strerror(errno));
out:
	if (tmp && err)
		unlink(tmp);
	free(tmp);
	session_close(s);
	if (err) {
		propel_report("export", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

const struct propel_cmd cmd_export_entry = {
	.name = "export",
	.usage = "--format=FORMAT [-o FILE] [--pid P] [--counts] [--merged] "
		 "[--calls] [--flow N] [--otlp-endpoint URL] [DB]",
	.summary = "write a session in a format other tools read (default DB "
		   "./propel.db, output stdout)\n"
		   "  --format=FORMAT    dot: the communication diagram for "
		   "graphviz\n"
		   "                     chrome: Trace Event Format JSON for "
		   "Perfetto, chrome://tracing, speedscope\n"
		   "                     folded: folded stacks for "
		   "flamegraph.pl, inferno, speedscope\n"
		   "                     otlp: OTLP/JSON spans for an "
		   "OpenTelemetry Collector, Jaeger, Tempo\n"
		   "  -o, --output FILE  write FILE (replaced only when the "
		   "export succeeds)\n"
		   "  --pid P            only process P (chrome, folded, otlp)\n"
		   "  --counts           folded: weights are calls, not ns\n"
		   "  --merged           folded: all processes' stacks as one\n"
		   "  --calls            dot: add each process's call graph\n"
		   "  --flow N           only flow N's events (propel report "
		   "--flows; chrome, folded, otlp)\n"
		   "  --otlp-endpoint URL  otlp: post to an OpenTelemetry "
		   "Collector (http://HOST:4318/v1/traces, protobuf) instead "
		   "of writing",
	.exec = cmd_export_exec,
};
