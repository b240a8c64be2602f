/*
 * tests/unit/test-peer.c - inject/peer.c's answer for a UNIX stream peer
 * (propagation: which process holds the far end): held by a child, it is
 * that child; once the child has exited (the far end closed by its last
 * holder) it is -EPIPE with "its peer closed its end ... nothing to follow"
 * -- a normal end, told apart from a peer nobody here is seen to hold
 * (sshd/record in follow-real.sh: ssh had exited before propeld looked
 * its socket up, and propel printed a "no process holds" failure line).
 * (A connection whose listener closed before accepting it: follow.sh
 * fault/peer-closed.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject/peer.h"
#include "check.h"

static uint64_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int main(void)
{
	struct peer_addr a;
	pid_t pids[4], child;
	char *cause = NULL;
	int sv[2], go[2], n, st;
	uint64_t far;

	CHECKS_EXPECT(3);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(go))
		return 1;
	child = fork();
	if (child == 0) { /* holds sv[1] until told to go */
		char b;

		close(sv[0]);
		close(go[1]);
		if (read(go[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	far = ino_of(sv[1]); /* the child's end, of which it holds the last copy */
	close(sv[1]);
	close(go[0]);
	memset(&a, 0, sizeof(a));
	strcpy(a.kind, "unix");
	a.lino = ino_of(sv[0]);
	a.pino = far;
	n = peer_find(&a, getpid(), pids, 4, &cause);
	CHECK("peer/held", n == 1 && pids[0] == child,
	      "want the child %d, got %d (%s)", (int)child, n, cause ? cause : "");
	free(cause);
	cause = NULL;

	close(go[1]); /* the child exits: the far end closed */
	waitpid(child, &st, 0);
	n = peer_find(&a, getpid(), pids, 4, &cause);
	CHECK("peer/closed", n == -EPIPE && cause &&
				     strstr(cause, "its peer closed its end"),
	      "got %d (%s)", n, cause ? cause : "no cause");
	free(cause);
	cause = NULL;

	/* the asker unknown (0: a request from another host): no claim */
	n = peer_find(&a, 0, pids, 4, &cause);
	CHECK("peer/closed-unknown-asker", n == 0, "got %d (%s)", n,
	      cause ? cause : "");
	free(cause);
	cause = NULL;

	close(sv[0]);
	return failures ? 1 : 0;
}
