/*
 * tests/unit/test-procs.c - share/procs.c, the live console's /proc reader:
 * a child named "a) b (c" (a comm with the parentheses and spaces that trip
 * a naive /proc/PID/stat parser) burning CPU is found among the pids, its
 * parent, threads, state and start time read right, its CPU ticks grow;
 * owner and command line of this process; a kernel thread's flag; a pid
 * that does not exist; BPF's answer agrees with the euid.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "share/clock.h"
#include "share/proc.h"
#include "share/procs.h"
#include "check.h"

static void burn(double s)
{
	double t0 = propel_mono_s();
	volatile unsigned long x = 0;

	do {
		for (int i = 0; i < 100000; i++)
			x += i;
	} while (propel_mono_s() - t0 < s);
}

int main(void)
{
	struct procs_stat a, b, k;
	int *pids = NULL, n, i, sorted = 1, seen_me = 0, seen_child = 0, fds[2];
	char buf[512], c;
	const char *why = NULL;
	pid_t child;

	CHECKS_EXPECT(9);
	if (pipe(fds))
		return 1;
	child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, "a) b (c");
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			burn(1);
	}
	if (read(fds[0], &c, 1) != 1)
		return 1;

	n = procs_pids(&pids);
	for (i = 0; i < n; i++) {
		if (i && pids[i - 1] >= pids[i])
			sorted = 0;
		seen_me |= pids[i] == getpid();
		seen_child |= pids[i] == child;
	}
	CHECK("procs/pids", n > 2 && sorted && seen_me && seen_child,
	      "%d pids, sorted %d, me %d, child %d", n, sorted, seen_me,
	      seen_child);
	free(pids);

	memset(&a, 0, sizeof(a));
	i = procs_stat_read(child, &a);
	CHECK("procs/stat-comm-with-parens", !i && !strcmp(a.comm, "a) b (c"),
	      "%d comm '%s'", i, a.comm);
	CHECK("procs/stat-fields",
	      a.pid == child && a.ppid == getpid() && a.nthreads == 1 &&
		      strchr("RSD", a.state) && a.starttime > 0 &&
		      !(a.flags & PROPEL_PF_KTHREAD),
	      "pid %d ppid %d threads %d state %c start %llu flags %lx", a.pid,
	      a.ppid, a.nthreads, a.state, a.starttime, a.flags);
	/* the child burns CPU: its ticks grow (within 5 s on a loaded machine) */
	for (i = 0; i < 50; i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		if (procs_stat_read(child, &b) || b.ticks > a.ticks)
			break;
	}
	i = procs_stat_read(child, &b);
	CHECK("procs/ticks-grow", !i && b.ticks > a.ticks &&
				 b.starttime == a.starttime,
	      "ticks %llu -> %llu, start %llu -> %llu", a.ticks, b.ticks,
	      a.starttime, b.starttime);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	CHECK("procs/uid", procs_uid(getpid()) == (int)getuid(), "uid %d",
	      procs_uid(getpid()));
	i = procs_cmdline(getpid(), buf, sizeof(buf));
	CHECK("procs/cmdline", i > 0 && strstr(buf, "test-procs"),
	      "%d '%s'", i, buf);
	/* pid 2 is kthreadd, unless this runs in a pid namespace of its own */
	i = procs_stat_read(2, &k);
	CHECK("procs/kernel-thread", i == -ENOENT || (k.flags & PROPEL_PF_KTHREAD),
	      "%d flags %lx", i, k.flags);
	CHECK("procs/gone", procs_stat_read(child, &a) == -ENOENT &&
				    procs_uid(child) == -ENOENT,
	      "a reaped child still reads");
	i = procs_bpf_allowed(&why);
	CHECK("procs/bpf-allowed", geteuid() ? !i && why && !strcmp(why, "not root")
					     : i == !why,
	      "%d why %s", i, why ? why : "-");
	return failures != 0;
}
