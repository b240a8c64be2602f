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
 *
 * And a TCP peer among many connections (a server holding 300 accepted
 * ones): peer/tcp-held, the child that accepted it, found by one lookup
 * of its four addresses (peer/tcp-one: sock_diag gave at most a few
 * records; a dump of every socket, as before, gave more than 600: ~200 ms
 * of propeld's CPU per lookup on a host whose clients churn, which held
 * nginx's answers to wrk); peer/tcp-queued, a connection still in the
 * accept queue, the listener's holder.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

#define TCP_CONNS 300

static uint16_t port_of(int fd)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof(sa);

	return getsockname(fd, (struct sockaddr *)&sa, &l) == 0
		       ? ntohs(sa.sin_port)
		       : 0;
}

/* the channel of client socket c to the server port sp, from c's end */
static void tcp_addr(struct peer_addr *a, int c, uint16_t sp)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };

	memset(a, 0, sizeof(*a));
	strcpy(a->kind, "tcp");
	a->alen = 4;
	memcpy(a->laddr, lo, 4);
	memcpy(a->paddr, lo, 4);
	a->lport = port_of(c);
	a->pport = sp;
}

static void test_tcp(void)
{
	static int cl[TCP_CONNS + 1];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct rlimit rl;
	struct peer_addr a;
	unsigned long before, reads = 0;
	pid_t child, pids[4];
	char *cause = NULL, b;
	int l, ready[2], go[2], n = -1, nq = -1, st, i;
	uint16_t sp;

	/* 2 x 300 sockets: more than a soft limit of 1,024 with the rest */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, TCP_CONNS + 8) || pipe(ready) || pipe(go))
		goto out;
	sp = port_of(l);
	sa.sin_port = htons(sp);
	child = fork();
	if (child == 0) { /* the server: accepts TCP_CONNS, holds them */
		close(ready[0]);
		close(go[1]);
		for (i = 0; i < TCP_CONNS; i++)
			if (accept(l, NULL, NULL) < 0)
				_exit(1);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(l);
	close(ready[1]);
	close(go[0]);
	for (i = 0; i <= TCP_CONNS; i++) {
		cl[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (i == TCP_CONNS && read(ready[0], &b, 1) != 1)
			break; /* the last one only once the rest are taken */
		if (cl[i] < 0 ||
		    connect(cl[i], (struct sockaddr *)&sa, sizeof(sa)))
			break;
	}
	if (i > TCP_CONNS) {
		tcp_addr(&a, cl[TCP_CONNS / 2], sp);
		before = peer_diag_records;
		n = peer_find(&a, getpid(), pids, 4, &cause);
		reads = peer_diag_records - before;
		free(cause);
		cause = NULL;
		tcp_addr(&a, cl[TCP_CONNS], sp); /* never accepted */
		nq = peer_find(&a, getpid(), pids + 1, 3, &cause);
	}
	CHECK("peer/tcp-held", n == 1 && pids[0] == child,
	      "want the server %d, got %d", (int)child, n);
	CHECK("peer/tcp-one", n == 1 && reads <= 4,
	      "%lu socket records read for one lookup among %d connections",
	      reads, TCP_CONNS);
	CHECK("peer/tcp-queued", nq == 1 && pids[1] == child,
	      "want the listener's holder %d, got %d (%s)", (int)child, nq,
	      cause ? cause : "");
	free(cause);
	close(go[1]);
	waitpid(child, &st, 0);
	for (i = 0; i <= TCP_CONNS; i++)
		if (cl[i] > 0)
			close(cl[i]);
	close(ready[0]);
	return;
out:
	CHECK("peer/tcp-held", 0, "no listener: %s", strerror(errno));
	CHECK("peer/tcp-one", 0, "no listener");
	CHECK("peer/tcp-queued", 0, "no listener");
}

int main(void)
{
	struct peer_addr a;
	pid_t pids[4], child;
	char *cause = NULL;
	int sv[2], go[2], n, st;
	uint64_t far;

	CHECKS_EXPECT(6);
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
	test_tcp();
	return failures ? 1 : 0;
}
