/*
 * tui/cmd-attach.c - `propel attach [-o DB] [--follow] [--duration S]
 * PID...`: load the agent into live processes, trace until --duration,
 * Ctrl-C, or until no process traces into the session any more, then
 * switch the agent off (every patched byte restored) and store the
 * session.  The run is engine/run.c's (the traced processes are the
 * targets and what they fork and exec; --follow: and every peer they
 * talk to, on this host and others); this file reads the options
 * (tui/run-args.c), stops the run on a signal, and prints.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/run.h"
#include "engine/session.h"
#include "engine/untraced.h"
#include "tui/cmd.h"
#include "tui/run-args.h"

static volatile sig_atomic_t attach_stop;

static void attach_on_signal(int sig)
{
	(void)sig;
	attach_stop = 1;
}

static int attach_count(const struct untraced_row *r, void *arg)
{
	(void)r;
	++*(int *)arg;
	return 0;
}

/* On a terminal: how many functions the cost budget left out. */
static void attach_say_untraced(const struct run_opts *o)
{
	struct session *s = NULL;
	char *cause = NULL;
	int n = 0;

	if (!o->budget || !isatty(2) ||
	    session_open(o->db, SESSION_READ, &s, &cause)) {
		free(cause);
		return;
	}
	untraced_each(session_db(s), 0, attach_count, &n);
	session_close(s);
	if (n)
		fprintf(stderr, "propel: the cost budget left %d function%s "
			"untraced (listed by propel replay; --all traces "
			"every call)\n", n, n == 1 ? "" : "s");
}

static int attach_go(struct run_opts *o)
{
	struct run_progress p;
	struct sigaction sa;
	struct run *r;

	attach_stop = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = attach_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (run_start(o, &r))
		return 1;
	run_progress(r, &p);
	if (isatty(2))
		fprintf(stderr, "propel: %s %d process%s%s%s; Ctrl-C to stop\n",
			o->follow ? "following" : "tracing", p.attached,
			p.attached > 1 ? "es" : "",
			o->follow ? " and their peers" : "",
			o->duration > 0 ? " (until --duration)" : "");
	while (!attach_stop && run_poll(r, 50, &p))
		;
	run_progress(r, &p); /* the processes reached, before the detach */
	if (run_stop(r))
		return 1;
	attach_say_untraced(o);
	if (o->follow && isatty(2))
		fprintf(stderr, "propel: %d process%s traced on %d host%s\n",
			p.processes, p.processes == 1 ? "" : "es", p.hosts,
			p.hosts == 1 ? "" : "s");
	return 0;
}

static int cmd_attach_exec(int argc, char **argv)
{
	struct run_opts o;
	int ret;

	run_opts_init(&o, RUN_ATTACH);
	ret = run_args_parse(&o, argc, argv, cmd_attach_entry.usage);
	if (!ret)
		ret = attach_go(&o);
	run_opts_release(&o);
	return ret;
}

const struct propel_cmd cmd_attach_entry = {
	.name = "attach",
	.usage = "[-o DB] [--follow [--follow-stdio]] [--duration S] [--mode flight|full] "
		 "[--buffer-size KB] [--libc] [--args] [--timing=exact|sampled]\n"
		 "       [--budget PCT] [--leaf-insns N] [--all] [--adaptive]\n"
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
		   "  --follow-stdio  also propel's own stdio's other ends "
		   "and its ancestors\n"
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
		   "  --args          record each call's arguments and return\n"
		   "                  value (uftrace -a; every call slower)\n"
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
		   "  --budget PCT    the agent's cost budget: short frequent "
		   "calls are left\n"
		   "                  untraced while its estimated share of a "
		   "thread's time\n"
		   "                  exceeds PCT %% (default 5; 100: only the "
		   "leaf rule);\n"
		   "                  each decision is kept in the session "
		   "(propel replay)\n"
		   "  --leaf-insns N  leaves without loops under N instructions "
		   "are not\n"
		   "                  traced (XRay's rule; default 200, 0: none)\n"
		   "  --all           trace every call (no budget)\n"
		   "  --adaptive      trace near each request's root, then deeper\n"
		   "                  where requests' latency varies (VAIF; see\n"
		   "                  propel report --variance)\n"
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
