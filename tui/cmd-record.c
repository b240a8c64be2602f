/*
 * tui/cmd-record.c - `propel record [-o DB] [--buffer-size KB] [--libc]
 * -- CMD [ARG...]`: run CMD with the agent preloaded, wait for it and for
 * every process it started that is still traced, store the trace.  The exit
 * status is CMD's (128+N when killed by signal N, as in a shell); a crash
 * is reported on stderr and its trace kept.
 *
 * The recording ends when CMD has ended and no traced descendant is left
 * (capture_traced_left): a daemon that double-forked and called setsid is
 * still traced, and the session is stored after it ends, not when its
 * parent does.  propel is a child subreaper (PR_SET_CHILD_SUBREAPER), so
 * orphaned descendants become its children: it reaps them, and one that
 * was forked but has not run yet is still found.  A descendant that exec'd
 * a program without the agent (or a static one) has detached and is not
 * waited for.  Waiting after CMD has ended, Ctrl-C, SIGTERM or SIGHUP stop
 * the recording and store what was traced so far.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/directives.h"
#include "share/drain.h"
#include "engine/follow.h"
#include "engine/ingest.h"
#include "engine/session.h"
#include "engine/transport.h"
#include "engine/vitals-trace.h"
#include "share/agent-abi.h"
#include "share/log.h"
#include "tui/cmd-vitals.h"
#include "tui/cmd.h"
#include "tui/opt.h"

static volatile pid_t record_child;
static volatile sig_atomic_t record_stop;

/* While CMD runs, SIGTERM/SIGHUP for propel are for CMD too; propel waits
 * and keeps the trace of what CMD did until then.  Once CMD has ended they
 * (and Ctrl-C) stop the wait for its traced descendants. */
static void record_on_signal(int sig)
{
	if (record_child > 0)
		kill(record_child, sig);
	else
		record_stop = 1;
}

static void record_signals(void (*h)(int), int ignore_terminal)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (ignore_terminal)
		sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
}

/*
 * Wait for CMD (pid), reaping the orphans handed to us meanwhile, then for
 * the traced descendants left.  Returns CMD's wait status.
 */
static int record_wait(struct capture *cap, pid_t pid, const char *name)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int status = 0, st, told = 0, polls = 0;
	pid_t r, one = 0;

	/* like time(1): the terminal's signals are for CMD */
	record_child = pid;
	record_signals(record_on_signal, 1);
	for (;;) {
		r = waitpid(-1, &st, 0);
		if (r == pid) {
			status = st;
			break;
		}
		if (r < 0 && errno == ECHILD)
			break; /* cannot happen: pid is ours */
	}
	record_child = 0;
	record_signals(record_on_signal, 0);
	while (!record_stop) {
		int left = capture_traced_left(cap, &one), reaped = 0;

		/* a process reaped after the count may have handed us
		 * children the count did not see: count again */
		while (waitpid(-1, &st, WNOHANG) > 0)
			reaped++;
		if (left <= 0 && !reaped)
			break;
		if (++polls == 100 && !told && isatty(2)) {
			fprintf(stderr,
				"propel: record: %s ended; still tracing its "
				"descendants (pid %d...): Ctrl-C to stop\n",
				name, (int)one);
			told = 1;
		}
		/* a quick end for the usual short-lived descendants, then
		 * a lighter pace for a daemon that stays */
		if (polls > 100)
			nap.tv_nsec = 100 * 1000 * 1000;
		nanosleep(&nap, NULL);
	}
	record_signals(SIG_DFL, 0);
	return status;
}

/*
 * --follow (engine/follow.h): CMD writes into this host's propeld's
 * session directory with PROPEL_FOLLOW=1, so its agents ask for their
 * peers; propeld (and, through ssh, the propelds of other hosts) inject
 * them.  The recording ends when CMD has ended (the peers it reached are
 * detached then, and go on); Ctrl-C is CMD's, as without --follow.
 */
/* --directive SPEC: recorded by the agents, kept in the session */
static struct directives record_dirs;

static int record_follow(struct capture *cap, int argc, char **argv,
			 unsigned long ring_kb, int libc, int full,
			 const char *vitals_arg, int vitals, const char *db)
{
	struct vitals_trace *vt = NULL;
	struct follow *fl = NULL;
	char *cause = NULL, *preload = NULL;
	const char *old = getenv("LD_PRELOAD");
	const char *timing = getenv("PROPEL_TIMING");
	uint32_t flags = (libc ? PROPEL_START_TRACE_LIBC : 0) |
			 (full ? PROPEL_START_KEEP_ALL : 0) |
			 (timing && !strcmp(timing, "exact")
				  ? PROPEL_START_EXACT_TIME
				  : 0) |
			 capture_ring_flags(ring_kb);
	int err, status = 0, ret, polls;
	pid_t pid;

	capture_remove_dir(cap->dir);
	transport_set_values(record_dirs.values); /* every host's agents */
	err = follow_begin(flags, &fl, &cause);
	if (err) {
		propel_report("record --follow", err, cause);
		free(cause);
		capture_abort(cap);
		return 1;
	}
	if (asprintf(&preload, "%s%s%s", cap->agent, old && *old ? ":" : "",
		     old ? old : "") < 0) {
		follow_abort(fl);
		capture_abort(cap);
		return 1;
	}
	/* --vitals: after propeld is up (not one of ours to trace); CMD and
	 * what it forks from its start, the peers propeld injects here as
	 * they come (record_follow's loop) */
	if (vitals && !cmd_vitals_trace_begin("record", vitals_arg, db, 1, &vt))
		vitals_trace_add(vt, getpid(), 1);
	pid = fork();
	if (pid < 0) {
		propel_report("record", -errno, NULL);
		vitals_trace_abort(vt);
		follow_abort(fl);
		capture_abort(cap);
		return 1;
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		capture_agent_env(follow_local_dir(fl), ring_kb, libc, full);
		setenv("PROPEL_FOLLOW", "1", 1);
		execvp(argv[0], argv);
		fprintf(stderr, "propel: record: %s: %s\n", argv[0],
			strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	free(preload);
	record_child = pid;
	record_signals(record_on_signal, 1);
	for (polls = 0;; polls++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			break;
		follow_poll(fl, 20);
		if (vt && polls % 10 == 0)
			cmd_vitals_trace_follow("record", vt, fl);
	}
	record_child = 0;
	record_signals(SIG_DFL, 0);
	if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
	} else {
		ret = 128 + WTERMSIG(status);
		fprintf(stderr, "propel: record: %s killed by signal %d (%s)\n",
			argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)));
	}
	err = follow_end(fl, cap, argc, argv, &cause);
	vitals_trace_stop(vt); /* after the peers are detached */
	if (err) {
		propel_report("record", err, cause);
		free(cause);
		vitals_trace_abort(vt);
		return ret ? ret : 1;
	}
	cmd_vitals_trace_end("record", vt, db);
	return ret;
}

/* --start FUNC: kept in the session for the flows (engine/analysis-load.h) */
static const char *record_start, *record_db = PROPEL_SESSION_DEFAULT;

static int cmd_record_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "directive", required_argument, NULL, 'd' },
		{ "directives", required_argument, NULL, 'D' },
		{ "start", required_argument, NULL, 'S' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "libc", no_argument, NULL, 'l' },
		{ "follow", no_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "vitals", optional_argument, NULL, 'V' },
		{ "timing", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = PROPEL_SESSION_DEFAULT;
	unsigned long ring_kb = 0;
	const char *vitals_arg = NULL;
	struct vitals_trace *vt = NULL;
	struct capture cap;
	struct drain *dr = NULL;
	struct drain_stats dst;
	char *cause = NULL, *preload = NULL;
	int c, err, status, ret, libc = 0, full = 1, follow = 0, vitals = 0;
	const char *timing = "exact";
	pid_t pid;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:o:b:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (opt_output("record", "-o", optarg, 0))
				return 2;
			db = optarg;
			record_db = optarg;
			break;
		case 'S':
			record_start = optarg;
			break;
		case 'd':
		case 'D':
			if (cmd_report_directive_opt("record", c == 'D', optarg,
						     &record_dirs))
				return 2;
			break;
		case 'b':
			if (capture_buffer_opt("record", optarg, &ring_kb))
				return 2;
			break;
		case 'l':
			libc = 1;
			break;
		case 'T':
			if (cmd_report_timing_opt("record", optarg) < 0)
				return 2;
			timing = optarg;
			break;
		case 'm':
			full = drain_mode_parse(optarg);
			if (full < 0) {
				propel_report("record", 0,
					      "--mode: full or flight");
				return 2;
			}
			break;
		case 'f':
			follow = 1;
			break;
		case 'V':
			vitals = 1;
			vitals_arg = optarg;
			if (cmd_report_vitals_opt("record", vitals_arg) < 0)
				return 2;
			break;
		default:
			opt_bad("record", c, argv);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: propel record %s\n", cmd_record_entry.usage);
		return 2;
	}
	setenv("PROPEL_TIMING", timing, 1); /* CMD's agents read it */
	if (cmd_report_directives_ready("record", &record_dirs))
		return 2;
	err = capture_begin(&cap, db, &cause);
	if (!err && !follow)
		err = directives_write(&record_dirs, cap.dir, &cause);
	if (err) {
		propel_report("record", err, cause);
		free(cause);
		capture_abort(&cap);
		return 1;
	}
	if (follow)
		return record_follow(&cap, argc - optind, argv + optind, ring_kb,
				     libc, full, vitals_arg, vitals, db);
	{
		const char *old = getenv("LD_PRELOAD");

		if (asprintf(&preload, "%s%s%s", cap.agent, old && *old ? ":" : "",
			     old ? old : "") < 0)
			return 1;
	}
	if (full && (err = drain_start(cap.dir, &dr, &cause))) {
		propel_report("record", err, cause);
		free(cause);
		capture_abort(&cap);
		return 1;
	}
	/* orphaned descendants are re-parented to us, not to init */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* --vitals: propel's children (CMD, and what CMD forks) are traced
	 * by the kernel collectors from their first instruction */
	if (vitals && !cmd_vitals_trace_begin("record", vitals_arg, db, 0, &vt))
		vitals_trace_add(vt, getpid(), 1);
	pid = fork();
	if (pid < 0) {
		propel_report("record", -errno, NULL);
		vitals_trace_abort(vt);
		capture_abort(&cap);
		return 1;
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		capture_agent_env(cap.dir, ring_kb, libc, full);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "propel: record: %s: %s\n", argv[optind],
			strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	free(preload);
	status = record_wait(&cap, pid, argv[optind]);
	if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
		if (ret == 127 || ret == 126) {
			/* maybe exec failed: then there is no trace at all */
		}
	} else {
		ret = 128 + WTERMSIG(status);
		fprintf(stderr, "propel: record: %s killed by signal %d (%s)%s\n",
			argv[optind], WTERMSIG(status), strsignal(WTERMSIG(status)),
			WCOREDUMP(status) ? ", core dumped" : "");
	}
	vitals_trace_stop(vt);
	if (dr) {
		drain_stop(dr, &dst);
		drain_report("record", &dst);
	}
	err = capture_end(&cap, argc - optind, argv + optind, &cause);
	if (err) {
		propel_report("record", err, cause);
		free(cause);
		vitals_trace_abort(vt);
		return ret ? ret : 1;
	}
	cmd_vitals_trace_end("record", vt, db);
	if (!WIFEXITED(status))
		fprintf(stderr, "propel: record: trace of the crash kept in %s\n",
			db);
	return ret;
}

static int cmd_record_exec(int argc, char **argv)
{
	int ret;

	record_start = NULL;
	record_db = PROPEL_SESSION_DEFAULT;
	directives_release(&record_dirs);
	ret = cmd_record_run(argc, argv); /* sets them */
	ret = cmd_report_keep_start("record", record_db, record_start, ret);
	return cmd_report_keep_directives("record", record_db, &record_dirs,
					  ret);
}

const struct propel_cmd cmd_record_entry = {
	.name = "record",
	.usage = "[-o DB] [--follow] [--mode full|flight] [--buffer-size KB] "
		 "[--libc] [--timing=exact|sampled] [--start FUNC]\n"
		 "       [--directive SPEC]... [--directives FILE] [--vitals[=all]]\n"
		 "       -- CMD "
		 "[ARG...]",
	.summary = "run CMD traced from its start (exit status = CMD's)\n"
		   "  -o DB             session file (default ./propel.db)\n"
		   "  --follow          follow CMD's work into every process it "
		   "talks to,\n"
		   "                    here and on other hosts (see propel "
		   "attach --follow)\n"
		   "  --mode full       keep every call (default): the rings are\n"
		   "                    drained while CMD runs; if the drain falls\n"
		   "                    behind, records are dropped, never waited\n"
		   "                    for, and replay shows each gap as \"lost\"\n"
		   "  --mode flight     keep the newest --buffer-size per thread\n"
		   "  --buffer-size KB  ring size per thread (default 32768 in "
		   "full mode, the\n"
		   "                    drain's headroom; 8192 in flight mode)\n"
		   "  --libc            trace inside libc too\n"
		   "  --timing=exact    every call record stamped with its own "
		   "time (default)\n"
		   "  --timing=sampled  one call record in up to 64 stamped (every "
		   "one where\n"
		   "                    calls are sparse), and every call into "
		   "untraced code\n"
		   "                    that may block; those between are dated "
		   "between two\n"
		   "                    stamps (less overhead; a long call that "
		   "calls nothing\n"
		   "                    gets its share of the time around it)\n"
		   "  --start FUNC      each call of FUNC begins a flow (kept "
		   "in the session\n"
		   "                    for propel report and the TUI's flows)\n"
		   "  --directive 'F:entry,argN -> G:exit,ret'\n"
		   "                    a mapping directive: a call of G that "
		   "returns what\n"
		   "                    F was given as argument N (0 = the "
		   "first) joins F's\n"
		   "                    flow (the agent records those values; "
		   "kept in the\n"
		   "                    session); repeatable\n"
		   "  --directives FILE one SPEC per line ('#' comments)\n"
		   "  --vitals[=all]    record the kernel's view beside the "
		   "trace: each\n"
		   "                    thread's off-CPU spans (>= 1 ms) with "
		   "their reason,\n"
		   "                    and vital-sign samples, of CMD's "
		   "processes (all:\n"
		   "                    of every process); needs BPF (root)",
	.exec = cmd_record_exec,
};
