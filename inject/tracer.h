/*
 * inject/tracer.h - keep the processes of an attach session traced when
 * they exec.
 *
 * Under attach the agent is loaded by hand (inject_agent_start), so a new
 * image made by execve has no agent.  The agent asks to be followed just
 * before an exec (a <pid>.<tid>.exec file in the session directory,
 * inject/agent/slow.c); the tracer seizes that thread with
 * PTRACE_O_TRACEEXEC, lets the exec happen, runs the new image to main and
 * injects the agent there, then lets go (no thread stays ptraced once the
 * new image is traced).  If anything fails the process runs on untraced
 * and the tracer reports one warning.
 *
 * Caller: tui/cmd-attach.c (the attach loop calls tracer_poll).  Errors:
 * 0 or -errno with a one-line cause.
 */
#ifndef PROPEL_INJECT_TRACER_H
#define PROPEL_INJECT_TRACER_H

#include <stdint.h>
#include <sys/types.h>

struct tracer;

/* Told once per exec that could not be followed (pid, -errno, cause). */
typedef void (*tracer_warn_fn)(pid_t pid, int err, const char *cause,
			       void *arg);

/* Watch session_dir for exec requests; agent_so and flags are those of
 * inject_agent_start. */
int tracer_new(const char *session_dir, const char *agent_so, uint32_t flags,
	       tracer_warn_fn warn, void *arg, struct tracer **out,
	       char **cause);

/* Serve requests and ptrace events for up to timeout_ms (returns early
 * when something happened).  Returns the number of execs being followed
 * (their processes are between two traced images), or -errno. */
int tracer_poll(struct tracer *tr, int timeout_ms);

/* Execs followed into a traced image, and those that could not be. */
void tracer_counts(const struct tracer *tr, int *followed, int *failed);

/* Let go of every thread still seized, stop watching, free. */
void tracer_free(struct tracer *tr);

#endif
