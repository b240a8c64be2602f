/*
 * tui/cmd-detach.c - `propel detach PID...`: switch off an agent left in a
 * process (its propel died before its lease ran out, or a lease could not
 * be held), on demand, from either state it can be left in (active: no
 * lease; inert: it switched itself off beside running threads and left its
 * code for this: inject/agent/agent.c).  One short ptrace hold per process
 * calls the agent's stop entry (inject_agent_stop): every patched byte restored,
 * recording stopped; the rings stay for `propel recover`.  The library
 * stays mapped (threads may still return through its stubs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/inject.h"
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_detach_one(pid_t pid)
{
	char what[64], *cause = NULL;
	int loaded, n, inert;

	snprintf(what, sizeof(what), "detach %d", (int)pid);
	loaded = inject_agent_loaded(pid, NULL);
	if (loaded < 0) {
		propel_report(what, loaded, "no such process");
		return 1;
	}
	if (!loaded) {
		propel_report(what, -ENOENT,
			      "no propel agent in this process");
		return 1;
	}
	inert = inject_agent_status(pid, NULL) == 2;
	n = inject_agent_stop(pid, &cause);
	if (n < 0) {
		propel_report(what, n, cause);
		free(cause);
		return 1;
	}
	free(cause);
	if (n == 0)
		printf("propel: detach %d: the agent was already off "
		       "(nothing to restore)\n", (int)pid);
	else if (inert)
		printf("propel: detach %d: the agent had switched itself off "
		       "(its propel ended); %d call site%s restored\n",
		       (int)pid, n, n == 1 ? "" : "s");
	else
		printf("propel: detach %d: agent switched off, %d call "
		       "site%s restored\n", (int)pid, n, n == 1 ? "" : "s");
	return 0;
}

static int cmd_detach_exec(int argc, char **argv)
{
	int i, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: propel detach %s\n",
			cmd_detach_entry.usage);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);

		if (*end || v <= 0 || v > 0x3fffffff) {
			fprintf(stderr, "propel: detach %s: not a process id\n",
				argv[i]);
			ret = 2;
			continue;
		}
		if (cmd_detach_one((pid_t)v))
			ret = 1;
	}
	return ret;
}

const struct propel_cmd cmd_detach_entry = {
	.name = "detach",
	.usage = "PID...",
	.summary = "switch off an agent left in a process (its code restored)",
	.exec = cmd_detach_exec,
};
