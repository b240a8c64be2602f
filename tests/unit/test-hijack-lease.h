/*
 * tests/unit/test-hijack-lease.h - test-hijack's lease check, run by the
 * "agent" case on the real agent: a session whose coordinator is gone (it
 * ended during the injection) -- the agent, in propel's pid namespace
 * (the injector sets PROPEL_START_NEED_LEASE), refuses to start rather
 * than stay on with no lease.  Included by tests/unit/test-hijack.c only
 * (after th_pass, th_fail and th_one_line).
 */
#include "share/agent-abi.h"
#include "share/proc.h"

static void th_lease_gone(pid_t target, const char *so, const char *dir)
{
	char coord[300], *cause = NULL;
	pid_t gone = fork();
	unsigned long long st;
	FILE *f;
	int err;

	if (gone == 0) {
		pause();
		_exit(0);
	}
	st = propel_proc_start(gone);
	kill(gone, SIGKILL);
	waitpid(gone, NULL, 0);
	snprintf(coord, sizeof(coord), "%s/%s", dir, PROPEL_COORD_FILE);
	if ((f = fopen(coord, "w"))) {
		fprintf(f, "%d %llu\n", (int)gone, st);
		fclose(f);
	}
	err = inject_agent_start(target, so, dir, 0, &cause);
	if (err != -ESRCH || !th_one_line(cause) ||
	    inject_agent_status(target, NULL) != 0)
		th_fail("lease_gone", "err %d (want -ESRCH), status %d: %s", err,
			inject_agent_status(target, NULL), cause ? cause : "");
	else
		th_pass("lease_gone");
	free(cause);
	unlink(coord);
}
