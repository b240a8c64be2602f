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
 * Propagation (--follow): an agent started with PROPEL_START_FOLLOW asks,
 * at its first send on a channel, that the process at the other end be
 * traced too: a file <pid>.<tid>.<chan>.peer whose one line names the
 * channel as its C line does ("<kind> <laddr> <lport> <paddr> <pport>
 * <lino> <pino>", inject/agent/comm.c).  The tracer hands the request to
 * its owner (tracer_peer_fn; inject/propeld.c finds and injects the peer,
 * here or through the coordinator on another host), which answers with
 * tracer_peer_done: the file goes, and the agent's send goes on.  The
 * agent waits for that at most PROPEL_PROPAGATE_MS, or, once the tracer
 * has taken the request (renamed it <...>.peer.taken before it starts the
 * injection), at most PROPEL_PROPAGATE_TAKEN_MS: injecting a large
 * process on a loaded host (python3: 0.6-0.9 s here idle) outlasts the
 * first bound, and the peer's agent must run before it reads the bytes.
 *
 * Also here: which processes trace into a session directory
 * (tracer_traced_pids), shared by record, attach and propeld.
 *
 * Callers: engine/run.c (attach), inject/propeld.c.  Errors: 0 or -errno with
 * a one-line cause.
 */
#ifndef PROPEL_INJECT_TRACER_H
#define PROPEL_INJECT_TRACER_H

#include <stdint.h>
#include <sys/types.h>

struct tracer;

/* Told once per exec that could not be followed (pid, -errno, cause). */
typedef void (*tracer_warn_fn)(pid_t pid, int err, const char *cause,
			       void *arg);

/* A propagation request, as the agent wrote it. */
struct tracer_peer {
	pid_t pid, tid;    /* the process that sends */
	char name[96];     /* the request file's name (tracer_peer_done) */
	char line[256];    /* "<kind> <laddr> <lport> <paddr> <pport> <lino>
			      <pino>" */
};

/* Told once per request; answer with tracer_peer_done, now or later. */
typedef void (*tracer_peer_fn)(const struct tracer_peer *req, void *arg);

/* Watch session_dir for exec requests; agent_so and flags are those of
 * inject_agent_start. */
int tracer_new(const char *session_dir, const char *agent_so, uint32_t flags,
	       tracer_warn_fn warn, void *arg, struct tracer **out,
	       char **cause);

/* Serve propagation requests with fn (without: they are let go at once). */
void tracer_set_peer(struct tracer *tr, tracer_peer_fn fn, void *arg);
/* The request named name is served (or refused): the agent goes on. */
void tracer_peer_done(struct tracer *tr, const char *name);
/* A descriptor that becomes readable when a request may be waiting (for
 * the owner's poll; then call tracer_poll(tr, 0)). */
int tracer_fd(const struct tracer *tr);

/* Serve requests and ptrace events for up to timeout_ms (returns early
 * when something happened).  Returns the number of execs being followed
 * (their processes are between two traced images), or -errno. */
int tracer_poll(struct tracer *tr, int timeout_ms);

/* Execs followed into a traced image, and those that could not be. */
void tracer_counts(const struct tracer *tr, int *followed, int *failed);

/* Let go of every thread still seized, stop watching, free. */
void tracer_free(struct tracer *tr);

/*
 * The processes still tracing into the session directory dir: every pid
 * named by a map file of the directory ("<pid>.<nonce>.map", one per
 * process image), or a child of the caller (a child just forked has no
 * map file yet), that is alive and maps a file of the directory (its
 * rings) or the agent library agent (an attached process whose threads
 * have no ring yet, an image that has just exec'd and loads the agent
 * again); and a child of the caller that is exiting but not yet a zombie
 * (its children are about to become the caller's).  A process that exec'd
 * an image without the agent has detached.  Returns how many, their pids
 * in *pids (malloc'd), or -errno.
 */
int tracer_traced_pids(const char *dir, const char *agent, pid_t **pids);
/*
 * Switch off the agent in every process still tracing into dir
 * (tracer_traced_pids; every patched byte restored): the one detach-all
 * of the coordinator (engine/run.c) and of propeld.  A process gone
 * meanwhile is not an error; any other failure -- a stop refused, or one
 * that left the agent inert with code still patched -- is given to warn
 * (may be NULL) with the pid, -errno and its cause, and the others go on.
 * Returns how many were switched off, or -errno if dir cannot be read.
 */
int tracer_detach_all(const char *dir, const char *agent,
		      void (*warn)(void *arg, pid_t pid, int err,
				   const char *cause),
		      void *arg);
/* 1 if pid has just exec'd a program whose environment preloads agent (a
 * record's child; dynamic: its loader is mapped) and that agent has not
 * had time to start yet: it starts itself before main. */
int tracer_exec_pending(pid_t pid, const char *agent, int dynamic);

#endif
