/*
 * inject/agent/propagate.c - the agent's propagation request (--follow;
 * DESIGN.md "Agent: self-propelled instrumentation", the paper's §2.2):
 * at the first send of this process on a channel (comm.c's
 * comm_propagate), ask the host's tracer (inject/propeld.c through
 * inject/tracer.c) to inject the process at the other end, and wait until
 * it says it is done, so that the receiver's agent runs before it consumes
 * the bytes.
 *
 * The request is a file <pid>.<tid>.<chan>.peer in the session directory
 * holding the channel's line ("<kind> <laddr> <lport> <paddr> <pport>
 * <lino> <pino>"), written under a .tmp name and renamed, so the tracer
 * (inotify, IN_MOVED_TO) reads it whole; the tracer removes it when the
 * peer is traced, refused or not found.  The wait is bounded by
 * PROPEL_PROPAGATE_MS, or by PROPEL_PROPAGATE_TAKEN_MS once the tracer
 * took the request (renamed it .peer.taken: it is injecting the peer,
 * which takes longer than the first bound for a large process on a
 * loaded host): a host without a tracer, or one busy reaching
 * another host, costs the first send that much once per channel, and the
 * send then goes on with its peer untraced.  A request left unanswered
 * that long says the tracer is gone or stuck (propeld killed: until the
 * lease switches the agent off, every new channel of a server would wait
 * its second -- a single-threaded nginx stalled for seconds): for the next
 * PROPEL_PROPAGATE_MS * 5 requests are still written but not waited for.
 * A tracer whose end the lease saw (ag_coord_gone: its pidfd readable) is
 * not waited for at all: a wait under way ends at once, so a killed
 * propeld costs the program no more than a poll's wake-up; nor one that
 * began to switch the agents off (PROPEL_STOPPING_FILE in the directory):
 * a wait under way ends, no request is made.
 * A send that waited is marked held (comm.c, COMM_F_HELD: the time from
 * the request to the answer is propel's, not the program's, and the
 * analyses leave it out: analysis/trace.h trace_away).
 * Nothing here touches the bytes sent; errno is kept; no malloc, no lock
 * (a vfork child may be here).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/agent/agent.h"

/* no wait before this (ag_mono_ns), after an unanswered request */
static volatile uint64_t propagate_quiet_until;

int propagate_ask(uint32_t chan, const char *line)
{
	struct timespec nap = { 0, 50 * 1000 };
	char tmp[720], path[700], taken[720], stop[700];
	int saved = errno, fd, waited = 0;
	size_t n = strlen(line);
	uint64_t start;

	snprintf(path, sizeof(path), "%s/%d.%d.%u.peer", ag_cfg.dir,
		 (int)syscall(SYS_getpid), (int)ag_gettid(), chan);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(taken, sizeof(taken), "%s.taken", path);
	snprintf(stop, sizeof(stop), "%s/" PROPEL_STOPPING_FILE, ag_cfg.dir);
	if (access(stop, F_OK) == 0)
		goto out; /* the session is ending: no new peer */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (write(fd, line, n) != (ssize_t)n) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		goto out;
	}
	if (ag_mono_ns() < propagate_quiet_until || ag_coord_gone)
		goto out; /* asked; not waited for */
	start = ag_mono_ns();
	for (;;) {
		uint64_t bound = PROPEL_PROPAGATE_MS;

		if (access(path, F_OK) < 0) {
			if (access(taken, F_OK) < 0)
				break; /* answered */
			bound = PROPEL_PROPAGATE_TAKEN_MS; /* injecting */
		}
		if (ag_coord_gone)
			break; /* the tracer ended (the lease saw it) */
		if (access(stop, F_OK) == 0) {
			/* the session's end began: no answer comes */
			unlink(path);
			unlink(taken);
			break;
		}
		if (ag_mono_ns() > start + bound * 1000 * 1000) {
			/* no answer: the send goes on */
			unlink(path);
			unlink(taken);
			propagate_quiet_until =
				ag_mono_ns() +
				(uint64_t)PROPEL_PROPAGATE_MS * 5 * 1000 * 1000;
			break;
		}
		nanosleep(&nap, NULL);
		waited = 1;
		if (nap.tv_nsec < 1000 * 1000)
			nap.tv_nsec *= 2;
	}
out:
	errno = saved;
	return waited;
}
