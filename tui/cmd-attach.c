/*
 * tui/cmd-attach.c - `propel attach [-o DB] [--duration S] PID...`: load the
 * agent into live processes, trace until --duration, Ctrl-C, or until no
 * process traces into the session any more, then switch the agent off
 * (every patched byte restored) and store the session.
 *
 * The traced processes are the targets and what they became: their fork
 * children (the agent goes with the fork) and their new images after an
 * exec, which inject/tracer.c follows to main and injects again.  At the
 * end the agent is switched off in every process still tracing into the
 * session (capture_traced_pids), not only in the targets named.
 *
 * --follow hands the work to engine/follow.c: propeld on this host (and,
 * through ssh, on every host a traced process talks to) injects the
 * targets and every peer their agents ask for (attach_follow).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/directives.h"
#include "share/drain.h"
#include "engine/follow.h"
#include "engine/session.h"
#include "engine/transport.h"
#include "engine/vitals-trace.h"
#include "inject/inject.h"
#include "inject/tracer.h"
#include "share/agent-abi.h"
#include "share/log.h"
#include "tui/cmd-vitals.h"
#include "tui/cmd.h"
#include "tui/opt.h"

static volatile sig_atomic_t attach_stop;

static void attach_on_signal(int sig)
{
	(void)sig;
	attach_stop = 1;
}

/* An exec that could not be followed: one line, tracing goes on. */
static void attach_warn(pid_t pid, int err, const char *cause, void *arg)
{
	char what[64];

	(void)arg;
	snprintf(what, sizeof(what), "warning: exec in %d", (int)pid);
	propel_report(what, err, cause);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * --follow (engine/follow.h): the targets are injected through this
 * host's propeld, which follows them into every peer; the session ends
 * at --duration, Ctrl-C, or when every target named has exited, and is
 * collected from every host reached.
 */
/* --directive SPEC: recorded by the agents, kept in the session */
static struct directives attach_dirs;

static int attach_follow(struct capture *cap, uint32_t flags, pid_t *pids,
			 int n, double duration, int argc, char **argv,
			 const char *vitals_arg, int vitals, const char *db)
{
	struct vitals_trace *vt = NULL;
	struct follow *fl = NULL;
	char *cause = NULL;
	int i, err, attached = 0, procs, hosts;
	struct sigaction sa;
	double start;

	/* the session's files come from the hosts' propelds at the end */
	capture_remove_dir(cap->dir);
	transport_set_values(attach_dirs.values); /* every host's agents */
	err = follow_begin(flags, &fl, &cause);
	if (err) {
		propel_report("attach --follow", err, cause);
		free(cause);
		capture_abort(cap);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = attach_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* --vitals: the targets, then the peers propeld injects on this
	 * host as they come (the loop below) */
	if (vitals && !cmd_vitals_trace_begin("attach", vitals_arg, db, 1, &vt))
		for (i = 0; i < n; i++)
			vitals_trace_add(vt, pids[i], 0);
	for (i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "attach %d", (int)pids[i]);
		cause = NULL;
		err = follow_attach(fl, pids[i], &cause);
		if (err) {
			propel_report(what, err, cause);
			pids[i] = 0;
		} else {
			attached++;
		}
		free(cause);
	}
	if (!attached) {
		vitals_trace_abort(vt);
		follow_abort(fl);
		capture_abort(cap);
		return 1;
	}
	if (isatty(2))
		fprintf(stderr, "propel: following %d process%s and their "
				"peers%s; Ctrl-C to stop\n",
			attached, attached > 1 ? "es" : "",
			duration > 0 ? " (until --duration)" : "");
	start = now_s();
	while (!attach_stop && !(duration > 0 && now_s() - start >= duration)) {
		int alive = 0;

		follow_poll(fl, 50);
		if (vt)
			cmd_vitals_trace_follow("attach", vt, fl);
		for (i = 0; i < n; i++)
			alive += pids[i] > 0 && kill(pids[i], 0) == 0;
		if (!alive)
			break;
	}
	follow_counts(fl, &procs, &hosts);
	cause = NULL;
	err = follow_end(fl, cap, argc, argv, &cause);
	vitals_trace_stop(vt); /* after the peers are detached */
	if (err) {
		propel_report("attach", err, cause);
		free(cause);
		vitals_trace_abort(vt);
		return 1;
	}
	cmd_vitals_trace_end("attach", vt, db);
	if (isatty(2))
		fprintf(stderr, "propel: %d process%s traced on %d host%s\n",
			procs, procs == 1 ? "" : "es", hosts,
			hosts == 1 ? "" : "s");
	return 0;
}

/* --start FUNC: kept in the session for the flows (engine/analysis-load.h) */
static const char *attach_start, *attach_db = PROPEL_SESSION_DEFAULT;

static int cmd_attach_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "directive", required_argument, NULL, 'V' },
		{ "directives", required_argument, NULL, 'D' },
		{ "start", required_argument, NULL, 'S' },
		{ "duration", required_argument, NULL, 'd' },
		{ "follow", no_argument, NULL, 'f' },
		{ "libc", no_argument, NULL, 'l' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		{ "vitals", optional_argument, NULL, 'K' },
		{ "timing", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct drain *dr = NULL;
	struct vitals_trace *vt = NULL;
	const char *vitals_arg = NULL;
	int vitals = 0;
	struct drain_stats dst;
	const char *db = PROPEL_SESSION_DEFAULT;
	double duration = 0, start;
	struct capture cap;
	char *cause = NULL, *end;
	struct tracer *tr = NULL;
	pid_t *pids, *traced = NULL;
	int c, i, n = 0, attached = 0, err, live, follow = 0;
	uint32_t flags = 0;
	struct sigaction sa;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:o:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (opt_output("attach", "-o", optarg, 0))
				return 2;
			db = optarg;
			attach_db = optarg;
			break;
		case 'S':
			attach_start = optarg;
			break;
		case 'V':
		case 'D':
			if (cmd_report_directive_opt("attach", c == 'D', optarg,
						     &attach_dirs))
				return 2;
			break;
		case 'd':
			if (opt_number("attach", "--duration", optarg, 0.001,
				       OPT_DURATION_MAX, "seconds", &duration))
				return 2;
			break;
		case 'f':
			follow = 1;
			break;
		case 'K':
			vitals = 1;
			vitals_arg = optarg;
			if (cmd_report_vitals_opt("attach", vitals_arg) < 0)
				return 2;
			break;
		case 'l':
			flags |= PROPEL_START_TRACE_LIBC;
			break;
		case 'T':
			switch (cmd_report_timing_opt("attach", optarg)) {
			case 1:
				flags |= PROPEL_START_EXACT_TIME;
				break;
			case 0:
				flags &= ~PROPEL_START_EXACT_TIME;
				break;
			default:
				return 2;
			}
			break;
		case 'm':
			switch (drain_mode_parse(optarg)) {
			case 1:
				flags |= PROPEL_START_KEEP_ALL;
				break;
			case 0:
				flags &= ~PROPEL_START_KEEP_ALL;
				break;
			default:
				propel_report("attach", 0,
					      "--mode: full or flight");
				return 2;
			}
			break;
		case 'b': {
			unsigned long kb;

			if (capture_buffer_opt("attach", optarg, &kb))
				return 2;
			flags |= capture_ring_flags(kb);
			break;
		}
		default:
			opt_bad("attach", c, argv);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: propel attach %s\n", cmd_attach_entry.usage);
		return 2;
	}
	if (cmd_report_directives_ready("attach", &attach_dirs))
		return 2;
	pids = calloc(argc - optind, sizeof(*pids));
	for (i = optind; i < argc; i++) {
		long v = strtol(argv[i], &end, 10);

		if (*end || v <= 0 || v > 0x3fffffff) {
			fprintf(stderr, "propel: attach %s: not a process id\n",
				argv[i]);
			free(pids);
			return 2;
		}
		pids[n++] = (pid_t)v;
	}
	err = capture_begin(&cap, db, &cause);
	if (!err && !follow)
		err = directives_write(&attach_dirs, cap.dir, &cause);
	if (err) {
		propel_report("attach", err, cause);
		free(cause);
		capture_abort(&cap);
		free(pids);
		return 1;
	}
	if (follow) {
		err = attach_follow(&cap, flags, pids, n, duration,
				    argc - optind, argv + optind, vitals_arg,
				    vitals, db);
		free(pids);
		return err;
	}
	if ((flags & PROPEL_START_KEEP_ALL) &&
	    (err = drain_start(cap.dir, &dr, &cause))) {
		propel_report("attach", err, cause);
		free(cause);
		capture_abort(&cap);
		free(pids);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = attach_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* --vitals: the targets are in the kernel collectors' set before the
	 * agent goes in, with what they fork from then on */
	if (vitals && !cmd_vitals_trace_begin("attach", vitals_arg, db, 0, &vt))
		for (i = 0; i < n; i++)
			vitals_trace_add(vt, pids[i], 0);
	for (i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "attach %d", (int)pids[i]);
		cause = NULL;
		err = inject_agent_start(pids[i], cap.agent, cap.dir, flags, &cause);
		if (err) {
			propel_report(what, err, cause);
			free(cause);
			pids[i] = 0;
			continue;
		}
		attached++;
	}
	if (!attached) {
		vitals_trace_abort(vt);
		drain_stop(dr, NULL);
		capture_abort(&cap);
		free(pids);
		return 1;
	}
	cause = NULL;
	err = tracer_new(cap.dir, cap.agent, flags, attach_warn, NULL, &tr,
			 &cause);
	if (err) {
		/* execs will not be followed; tracing goes on */
		propel_report("warning", err, cause);
		free(cause);
		tr = NULL;
	}
	if (isatty(2))
		fprintf(stderr, "propel: tracing %d process%s%s; Ctrl-C to stop\n",
			attached, attached > 1 ? "es" : "",
			duration > 0 ? " (until --duration)" : "");
	start = now_s();
	for (;;) {
		int following = tr ? tracer_poll(tr, 50) : 0;

		if (!tr)
			usleep(50 * 1000);
		if (attach_stop || (duration > 0 && now_s() - start >= duration))
			break;
		if (following <= 0 && capture_traced_left(&cap, NULL) == 0)
			break;
	}
	tracer_free(tr);
	live = capture_traced_pids(&cap, &traced);
	for (i = 0; i < live; i++) {
		char what[64];

		snprintf(what, sizeof(what), "detach %d", (int)traced[i]);
		cause = NULL;
		err = inject_agent_stop(traced[i], &cause);
		if (err < 0 && err != -ENOENT && err != -ESRCH) {
			propel_report(what, err, cause);
		}
		free(cause);
	}
	free(traced);
	free(pids);
	/* after the detach: the calls the trace saw end have their spans */
	vitals_trace_stop(vt);
	if (dr) {
		drain_stop(dr, &dst);
		drain_report("attach", &dst);
	}
	cause = NULL;
	err = capture_end(&cap, argc - optind, argv + optind, &cause);
	if (err) {
		propel_report("attach", err, cause);
		free(cause);
		vitals_trace_abort(vt);
		return 1;
	}
	cmd_vitals_trace_end("attach", vt, db);
	return 0;
}

static int cmd_attach_exec(int argc, char **argv)
{
	int ret;

	attach_start = NULL;
	attach_db = PROPEL_SESSION_DEFAULT;
	directives_release(&attach_dirs);
	ret = cmd_attach_run(argc, argv); /* sets them */
	ret = cmd_report_keep_start("attach", attach_db, attach_start, ret);
	return cmd_report_keep_directives("attach", attach_db, &attach_dirs,
					  ret);
}

const struct propel_cmd cmd_attach_entry = {
	.name = "attach",
	.usage = "[-o DB] [--follow] [--duration S] [--mode flight|full] "
		 "[--buffer-size KB] [--libc] [--timing=exact|sampled]\n"
		 "       [--start FUNC] [--directive SPEC]... [--directives FILE] "
		 "[--vitals[=all]] PID...",
	.summary = "inject the agent into live processes and trace them\n"
		   "  -o DB           session file (default ./propel.db)\n"
		   "  --follow        follow the work into every process the "
		   "targets talk to\n"
		   "                  (TCP, UDP, UNIX sockets, pipes), on this "
		   "host and, through\n"
		   "                  `ssh HOST propeld --stdio` (PROPEL_SSH), "
		   "on others\n"
		   "  --duration S    stop after S seconds (default: Ctrl-C, or "
		   "when the targets exit)\n"
		   "  --mode flight   keep the newest --buffer-size per thread "
		   "(default)\n"
		   "  --mode full     keep every call: the rings are drained while "
		   "the\n"
		   "                  targets run; a gap the drain could not keep "
		   "up with\n"
		   "                  is dropped, counted, and shown as \"lost\"\n"
		   "  --buffer-size KB  ring size per thread (default 8192; "
		   "32768 in full\n"
		   "                  mode, the drain's headroom)\n"
		   "  --libc          trace inside libc too\n"
		   "  --timing=sampled  (default) one call record in up to 64 "
		   "stamped (every\n"
		   "                  one where calls are sparse), and every call "
		   "into untraced\n"
		   "                  code that may block; those between are "
		   "dated between\n"
		   "                  two stamps: a long call that calls nothing "
		   "gets its\n"
		   "                  share of the time around it\n"
		   "  --timing=exact  every call record stamped with its own time\n"
		   "  --start FUNC    each call of FUNC begins a flow (kept in "
		   "the session\n"
		   "                  for propel report and the TUI's flows)\n"
		   "  --directive SPEC  'F:entry,argN -> G:exit,ret': a call of "
		   "G that returns\n"
		   "                  what F was given as argument N (0 = the "
		   "first) joins\n"
		   "                  F's flow (see propel record --help); "
		   "repeatable\n"
		   "  --directives FILE  one SPEC per line ('#' comments)\n"
		   "  --vitals[=all]  record the kernel's view beside the trace: "
		   "each thread's\n"
		   "                  off-CPU spans (>= 1 ms) with their reason, "
		   "and vital-sign\n"
		   "                  samples, of the targets and their children "
		   "(all: of\n"
		   "                  every process); needs BPF (root)",
	.exec = cmd_attach_exec,
};
