/*
 * tests/unit/test-exec-pending.c - tracer_exec_pending (inject/tracer.c):
 * is a process that has just exec'd about to load the agent?  record
 * waits for such a process before it ends (record/lingering in
 * tests/e2e/lifecycle.sh).  The kernel maps a program's segments before
 * its dynamic loader, so a look in between sees no loader in the maps;
 * the answer must then come from the program itself (its PT_INTERP).
 *   pending/loader-not-mapped  a dynamic program (sleep) whose environment
 *                              preloads the agent, seen as if its maps
 *                              showed no loader yet: pending (it said
 *                              not, and record ended while it ran: a
 *                              lingering run at load 6, 7 in 60)
 *   pending/loader-mapped      the same with the loader seen: pending
 *   pending/no-preload         its environment does not preload this
 *                              agent: not pending
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject/tracer.h"
#include "share/clock.h"
#include "tests/unit/check.h"

static int failures;

/* sleep with LD_PRELOAD=lib (the loader warns that it cannot load it and
 * runs the program), once its new image's environment is there */
static pid_t start_sleep(const char *lib)
{
	char path[64], buf[256];
	pid_t pid = fork();
	FILE *f;
	size_t n = 0;
	int i;

	if (pid == 0) {
		char env[300];
		char *envp[] = { env, NULL };
		char *argv[] = { "sleep", "10", NULL };

		snprintf(env, sizeof(env), "LD_PRELOAD=%s", lib);
		freopen("/dev/null", "w", stderr);
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	for (i = 0; i < 2000 && pid > 0; i++) {
		f = fopen(path, "re");
		n = f ? fread(buf, 1, sizeof(buf), f) : 0;
		if (f)
			fclose(f);
		if (n > 11 && !memcmp(buf, "LD_PRELOAD=", 11))
			break;
		propel_sleep_ms(1);
	}
	return pid;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

int main(void)
{
	const char *agent = "/nonexistent/libpropel-agent-test.so";
	pid_t pid;

	CHECKS_EXPECT(3);
	pid = start_sleep(agent);
	CHECK("pending/loader-not-mapped",
	      tracer_exec_pending(pid, agent, 0) == 1,
	      "a dynamic program preloading the agent, its loader not yet "
	      "in its maps, is not counted as about to load it");
	CHECK("pending/loader-mapped", tracer_exec_pending(pid, agent, 1) == 1,
	      "a dynamic program preloading the agent is not counted");
	stop(pid);
	pid = start_sleep("/nonexistent/libother.so");
	CHECK("pending/no-preload", tracer_exec_pending(pid, agent, 0) == 0,
	      "a program that does not preload the agent is counted");
	stop(pid);
	return failures ? 1 : 0;
}
