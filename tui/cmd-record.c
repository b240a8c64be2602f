/*
 * tui/cmd-record.c - `propel record [-o DB] [--follow] -- CMD [ARG...]`:
 * run CMD with the agent preloaded, wait for it and for every process it
 * started that is still traced, store the trace.  The exit status is
 * CMD's (128+N when killed by signal N, as in a shell); a crash is
 * reported on stderr and its trace kept.
 *
 * The run is engine/run.c's: it ends when CMD has ended and no traced
 * descendant is left (a daemon that double-forked and called setsid is
 * still traced, and the session is stored after it ends); with --follow,
 * when CMD has ended (the peers it reached are detached then, and go
 * on).  This file reads the options (tui/run-args.c), handles the
 * signals and prints: while CMD runs, SIGTERM/SIGHUP for propel are for
 * CMD too and the terminal's SIGINT/SIGQUIT are CMD's alone (like
 * time(1)); once CMD has ended they (and Ctrl-C) stop the wait for its
 * traced descendants and store what was traced so far.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/run.h"
#include "tui/cmd.h"
#include "tui/run-args.h"

static volatile pid_t record_child;
static volatile sig_atomic_t record_stop;

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

/* CMD has ended: say how, if by a signal; its exit status for ours. */
static int record_ended(const struct run_opts *o, int status)
{
	int sig = WTERMSIG(status);

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "propel: record: %s killed by signal %d (%s)%s\n",
		o->argv[0], sig, strsignal(sig),
		!o->follow && WCOREDUMP(status) ? ", core dumped" : "");
	return 128 + sig;
}

static int record_go(struct run_opts *o)
{
	struct run_progress p;
	struct run *r;
	int ret, told = 0;

	if (run_start(o, &r))
		return 1;
	run_progress(r, &p);
	record_stop = 0;
	record_child = p.child;
	record_signals(record_on_signal, 1);
	while (run_poll(r, 20, &p)) {
		if (!p.cmd_done)
			continue;
		if (record_child > 0) { /* CMD has ended */
			record_child = 0;
			record_signals(record_on_signal, 0);
		}
		if (record_stop)
			break;
		if (!told && p.left_pid > 0 && p.left_s >= 1.0 && isatty(2)) {
			fprintf(stderr,
				"propel: record: %s ended; still tracing its "
				"descendants (pid %d...): Ctrl-C to stop\n",
				o->argv[0], (int)p.left_pid);
			told = 1;
		}
	}
	record_child = 0;
	record_signals(SIG_DFL, 0);
	ret = record_ended(o, p.cmd_status);
	if (run_stop(r))
		return ret ? ret : 1;
	if (!WIFEXITED(p.cmd_status))
		fprintf(stderr, "propel: record: trace of the crash kept in %s\n",
			o->db);
	return ret;
}

static int cmd_record_exec(int argc, char **argv)
{
	struct run_opts o;
	int ret;

	run_opts_init(&o, RUN_RECORD);
	ret = run_args_parse(&o, argc, argv, cmd_record_entry.usage);
	if (!ret)
		ret = record_go(&o);
	run_opts_release(&o);
	return ret;
}

const struct propel_cmd cmd_record_entry = {
	.name = "record",
	.usage = "[-o DB] [--follow [--follow-stdio]] [--mode full|flight] [--buffer-size KB] "
		 "[--libc] [--args] [--timing=exact|sampled] [--start FUNC]\n"
		 "       [--directive SPEC]... [--directives FILE] [--vitals[=all]]\n"
		 "       [--budget PCT] [--leaf-insns N] -- CMD "
		 "[ARG...]",
	.summary = "run CMD traced from its start (exit status = CMD's)\n"
		   "  -o DB             session file (default ./propel.db)\n"
		   "  --follow          follow CMD's work into every process it "
		   "talks to,\n"
		   "                    here and on other hosts (see propel "
		   "attach --follow)\n"
		   "  --follow-stdio    also the readers and writers of propel's "
		   "own stdio\n"
		   "                    (`| cat`, a harness), not followed "
		   "otherwise\n"
		   "  --mode full       keep every call (default): the rings are\n"
		   "                    drained while CMD runs; if the drain falls\n"
		   "                    behind, records are dropped, never waited\n"
		   "                    for, and replay shows each gap as \"lost\"\n"
		   "  --mode flight     keep the newest --buffer-size per thread\n"
		   "  --buffer-size KB  ring size per thread (default 32768 in "
		   "full mode, the\n"
		   "                    drain's headroom; 8192 in flight mode)\n"
		   "  --libc            trace inside libc too\n"
		   "  --args            record each call's arguments and return\n"
		   "                    value (uftrace -a; every call slower)\n"
		   "  --budget PCT, --leaf-insns N  leave short calls untraced "
		   "(see propel\n"
		   "                    attach --help); record keeps every call "
		   "without them\n"
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
