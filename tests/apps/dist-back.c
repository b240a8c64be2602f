/*
 * tests/apps/dist-back.c - the back end of the distributed scenario: on
 * TCP, answers every back-request of the front end (tests/apps/dist-front.c)
 * with a back-reply of the same sequence number, checking every request
 * (tests/apps/dist.h).  Serves one connection at a time until a STOP
 * message or SIGTERM.
 *
 *   dist-back [-l ADDR:PORT] [--corrupt SEQ]
 *
 * Port 0 (the default) picks one; the ready line says which:
 *   dist-back: ready ADDR PORT pid PID
 * At the end:
 *   dist-back: requests N recv BYTES sent BYTES ok
 */
#include "tests/apps/dist.h"

static long requests;
static size_t got, put;

/* One request: 1 served, 0 the connection is gone, -1 stop. */
__attribute__((noinline)) static int back_request(int fd)
{
	int type;
	uint32_t seq;
	size_t r = dist_recv(fd, DK_BACK_REQ, 0, DT_REQ, &type, &seq);

	got += r;
	if (!r)
		return 0;
	if (type == DT_STOP)
		return -1;
	put += dist_send(fd, DT_REP, DK_BACK_REP, seq);
	requests++;
	return 1;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];
	int lfd, i, stop = 0;

	dist_self = "dist-back";
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-l") == 0)
			listen_at = argv[i + 1];
		else if (strcmp(argv[i], "--corrupt") == 0)
			dist_corrupt = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (i != argc)
		dist_die("usage: dist-back [-l ADDR:PORT]%s", "");
	dist_signals();
	lfd = dist_bind(SOCK_STREAM, listen_at, &sa);
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("dist-back: ready %s %d pid %d\n", host, ntohs(sa.sin_port),
	       (int)getpid());
	fflush(stdout);
	while (!stop && !dist_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), r;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			dist_die("accept: %s", strerror(errno));
		}
		while ((r = back_request(fd)) > 0)
			;
		stop = r < 0;
		close(fd);
	}
	printf("dist-back: requests %ld recv %zu sent %zu ok\n", requests, got,
	       put);
	return 0;
}
