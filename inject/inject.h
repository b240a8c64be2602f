/*
 * inject/inject.h - load the propel agent into a live process and switch it
 * on or off (share/agent-abi.h is the contract with the agent).
 *
 * Each call is one complete hold: attach, do the work, detach; the target
 * runs untouched between calls.  Callers: `propel attach` (engine/run.c),
 * propeld, tests/unit/test-hijack.c.  Errors: 0 or -errno with a one-line
 * cause ("propel: attach PID: <cause>").  The call thread's errno is as
 * the program left it when each hold ends, also after a call whose thread
 * went back to the program by itself (inject.c inject_agent_run).
 */
#ifndef PROPEL_INJECT_INJECT_H
#define PROPEL_INJECT_INJECT_H

#include <stdint.h>
#include <sys/types.h>

/* dlopen(agent_so, RTLD_NOW) in pid (other threads running), then
 * propel_agent_start(session_dir, hints, n, flags) with every other thread
 * stopped.  -EBUSY ("already being traced by propel") if already active. */
int inject_agent_start(pid_t pid, const char *agent_so, const char *session_dir,
		       uint32_t flags, char **cause);

struct hijack;

/* The same, in a process already held (hijack_attach or hijack_adopt);
 * the hold stays. */
int inject_agent_start_held(struct hijack *h, const char *agent_so,
			    const char *session_dir, uint32_t flags,
			    char **cause);

/* propel_agent_stop() in pid: the number of restored sites, or -errno
 * (-ENOENT "propel agent not loaded"). */
int inject_agent_stop(pid_t pid, char **cause);

/* Without ptrace, from /proc/PID/maps: 1 if an agent library is mapped in
 * pid (its path in *path if path is non-NULL, malloc'd), 0 if not, -errno. */
int inject_agent_loaded(pid_t pid, char **path);

/* 1 if the agent is loaded and active in pid, 2 if it is inert (switched
 * itself off, its code still patched: propel_agent_stop restores it), 0 if
 * neither (loaded or not), -errno.  Loaded-but-unknown needs a short hold
 * to ask the agent. */
int inject_agent_status(pid_t pid, char **cause);

/*
 * The agent library: PROPEL_AGENT when set, else libpropel-agent.so beside
 * this program (propel, propeld) or in ../lib/propel.  Its path in buf; 0
 * or -ENOENT with a one-line *cause.  Used by engine/capture.c and
 * inject/propeld.c.
 */
int inject_find_agent(char *buf, size_t n, char **cause);

#endif
