/*
 * tests/unit/test-run.c - engine/run.h as the live console drives it:
 * run_start on a live process (a child of this program that calls one
 * function as fast as it can), run_poll(r, 0) from a loop that must not
 * block (each call within a few ms), the progress figures growing, the
 * run ending by itself when the target exits, run_stop storing the
 * session; and a record run of a shell command, whose exit status the
 * progress carries.  Real ptrace, the real agent (next to propel: the
 * build directory two levels up, or PROPEL_AGENT).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/run.h"
#include "tests/unit/check.h"
#include "share/clock.h"

static volatile unsigned long tr_sink;

__attribute__((noinline)) static void tr_work(unsigned long i)
{
	tr_sink += i;
	__asm__ volatile("" ::: "memory");
}

static void tr_agent(void)
{
	char exe[PATH_MAX], agent[PATH_MAX + 64], *slash;
	ssize_t n;

	if (getenv("PROPEL_AGENT"))
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	if ((slash = strrchr(exe, '/')))
		*slash = 0;
	snprintf(agent, sizeof(agent), "%s/../../libpropel-agent.so", exe);
	setenv("PROPEL_AGENT", agent, 1);
}

int main(void)
{
	char dir[] = "/tmp/propel-test-run.XXXXXX", db[PATH_MAX];
	char *sh[] = { "/bin/sh", "-c", "exit 3", NULL };
	struct run_progress p = {0};
	struct run_opts o;
	struct run *r = NULL;
	double t, worst = 0;
	int err, on = 1, st;
	pid_t pid;

	CHECKS_EXPECT(8);
	setvbuf(stdout, NULL, _IOLBF, 0);
	tr_agent();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(db, sizeof(db), "%s/attach.db", dir);
	pid = fork();
	if (pid == 0) {
		for (unsigned long k = 0;; k++)
			tr_work(k);
	}
	usleep(100 * 1000);

	/* ---- attach, local, as the console: run_poll(r, 0) in a loop ---- */
	run_opts_init(&o, RUN_ATTACH);
	o.budget = 0; /* every call (--all): the cost budget leaves tr_work,
		       * a leaf of a few instructions, untraced */
	o.db = db;
	o.pids = calloc(1, sizeof(*o.pids));
	o.pids[0] = pid;
	o.npids = 1;
	o.argc = 0;
	o.argv = NULL;
	err = run_start(&o, &r);
	CHECK("attach/start", err == 0 && r, "run_start: %d (%s)", err,
	      strerror(-err));
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK("attach/attached", 0, "no run");
		CHECK("attach/poll-nonblocking", 0, "no run");
		CHECK("attach/progress", 0, "no run");
		CHECK("attach/ends-by-itself", 0, "no run");
		CHECK("attach/stop-stores", 0, "no run");
		goto record;
	}
	run_progress(r, &p);
	CHECK("attach/attached", p.attached == 1, "attached %d", p.attached);
	/* for 1.5 s: each call returns at once (the console's frame) */
	for (t = propel_mono_s(); propel_mono_s() - t < 1.5 && on;) {
		double c = propel_mono_s();

		on = run_poll(r, 0, &p);
		c = propel_mono_s() - c;
		if (c > worst)
			worst = c;
		usleep(2000);
	}
	CHECK("attach/poll-nonblocking", on && worst < 0.1,
	      "running %d, slowest run_poll(r, 0) %.1f ms", on, worst * 1e3);
	printf("# slowest run_poll(r, 0): %.2f ms; %d processes, %d "
	       "threads, %llu events, %llu drops\n", worst * 1e3, p.processes,
	       p.threads,
	       (unsigned long long)p.events, (unsigned long long)p.drops);
	CHECK("attach/progress",
	      p.processes >= 1 && p.threads >= 1 && p.events > 0 &&
		      p.flows == -1 && p.hosts == 1,
	      "processes %d threads %d events %llu flows %d hosts %d",
	      p.processes, p.threads, (unsigned long long)p.events, p.flows,
	      p.hosts);
	/* the target's end ends the run (it is no longer traced) */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (t = propel_mono_s(); propel_mono_s() - t < 5 && (on = run_poll(r, 10, &p));)
		;
	CHECK("attach/ends-by-itself", !on, "still running 5 s after the "
					    "target's end");
	err = run_stop(r);
	CHECK("attach/stop-stores", err == 0 && access(db, F_OK) == 0,
	      "run_stop %d, %s %s", err, db,
	      access(db, F_OK) ? "missing" : "there");
	unlink(db);
record:
	run_opts_release(&o);

	/* ---- record, local: CMD's exit status in the progress ---- */
	snprintf(db, sizeof(db), "%s/record.db", dir);
	run_opts_init(&o, RUN_RECORD);
	o.db = db;
	o.argc = 3;
	o.argv = sh;
	err = run_start(&o, &r);
	if (!err) {
		for (t = propel_mono_s(); propel_mono_s() - t < 10 && run_poll(r, 20, &p);)
			;
		st = p.cmd_status;
		err = run_stop(r);
		CHECK("record/status", p.cmd_done && WIFEXITED(st) &&
					       WEXITSTATUS(st) == 3,
		      "done %d status %#x", p.cmd_done, st);
	} else {
		CHECK("record/status", 0, "run_start: %d", err);
	}
	CHECK("record/stop-stores", err == 0 && access(db, F_OK) == 0,
	      "run_stop %d", err);
	run_opts_release(&o);
	unlink(db);
	rmdir(dir);
	return failures ? 1 : 0;
}
