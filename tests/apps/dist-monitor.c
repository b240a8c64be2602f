/*
 * tests/apps/dist-monitor.c - the monitor of the distributed scenario:
 * receives the front end's UDP heartbeats (tests/apps/dist-front.c) and
 * checks each datagram (tests/apps/dist.h); a sequence number that skips
 * counts as lost (UDP may drop; the test compares the counts).  Runs until
 * a STOP datagram or SIGTERM.
 *
 *   dist-monitor [-l ADDR:PORT]
 *
 * Port 0 (the default) picks one; the ready line says which:
 *   dist-monitor: ready ADDR PORT pid PID
 * At the end:
 *   dist-monitor: beats N recv BYTES lost N ok
 */
#include "tests/apps/dist.h"

static long beats, lost;
static size_t got;
static uint32_t last;

/* One datagram: 1 a heartbeat, 0 stopped by a signal (or, with
 * MSG_DONTWAIT, none queued), -1 a STOP. */
__attribute__((noinline)) static int monitor_beat(int fd, int flags)
{
	static unsigned char buf[sizeof(struct dist_hdr) + DIST_MAX + 1];
	struct dist_hdr h;
	ssize_t n = recvfrom(fd, buf, sizeof(buf), flags, NULL, NULL);

	if (n < 0 && errno == EINTR)
		return dist_stop ? 0 : 1;
	if (n < 0 && (flags & MSG_DONTWAIT) &&
	    (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n < 0)
		dist_die("recvfrom: %s", strerror(errno));
	dist_check(buf, (size_t)n, DK_BEAT, 0, DT_REQ);
	got += (size_t)n;
	memcpy(&h, buf, sizeof(h));
	if (h.type == DT_STOP)
		return -1;
	if (h.seq > last + 1)
		lost += h.seq - last - 1;
	last = h.seq;
	beats++;
	return 1;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];
	int fd;

	dist_self = "dist-monitor";
	if (argc == 3 && strcmp(argv[1], "-l") == 0)
		listen_at = argv[2];
	else if (argc != 1)
		dist_die("usage: dist-monitor [-l ADDR:PORT]%s", "");
	dist_signals();
	fd = dist_bind(SOCK_DGRAM, listen_at, &sa);
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("dist-monitor: ready %s %d pid %d\n", host, ntohs(sa.sin_port),
	       (int)getpid());
	fflush(stdout);
	while (monitor_beat(fd, 0) > 0 && !dist_stop)
		;
	/* stopped by a signal: the heartbeats already queued are counted
	 * (a loaded machine may deliver the SIGTERM before this process ran
	 * to read the front end's last ones) */
	while (dist_stop && monitor_beat(fd, MSG_DONTWAIT) > 0)
		;
	printf("dist-monitor: beats %ld recv %zu lost %ld ok\n", beats, got,
	       lost);
	return 0;
}
