/*
 * tests/apps/dist-client.c - the client of the distributed scenario: sends
 * REQUESTS requests over TCP to the front end (tests/apps/dist-front.c),
 * one at a time, and checks every reply (tests/apps/dist.h).
 *
 *   dist-client FRONT_ADDR:PORT [-n REQUESTS] [--first SEQ] [--stop]
 *               [--corrupt SEQ]
 *
 * --first: the first sequence number (default 1; a second client goes on
 * where the first stopped).  --stop: after the last reply, tell the front
 * end to stop the whole system (it passes the stop on).  --corrupt SEQ:
 * change one payload byte of request SEQ after its checksum is made (the
 * front end must notice and fail).  Prints, on success,
 *   dist-client: requests N sent BYTES recv BYTES ok
 * and exits 0; 2 on an I/O error, 3 when a reply was wrong.
 */
#include "tests/apps/dist.h"

static size_t sent, got;

__attribute__((noinline)) static void client_request(int fd, uint32_t seq)
{
	int type;
	uint32_t s;

	sent += dist_send(fd, DT_REQ, DK_REQUEST, seq);
	got += dist_recv(fd, DK_REPLY, seq, DT_REP, &type, &s);
	if (type != DT_REP) {
		fprintf(stderr, "%s: no reply to request %u\n", dist_self, seq);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *front = NULL;
	long n = 10, first = 1;
	int stop = 0, fd, i;
	uint32_t seq;

	dist_self = "dist-client";
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc)
			first = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--corrupt") == 0 && i + 1 < argc)
			dist_corrupt = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--stop") == 0)
			stop = 1;
		else if (argv[i][0] != '-' && !front)
			front = argv[i];
		else
			dist_die("usage: dist-client FRONT_ADDR:PORT [-n N] "
				 "[--first SEQ] [--stop] [--corrupt SEQ]%s",
				 "");
	}
	if (!front || n < 0 || first < 1)
		dist_die("usage: dist-client FRONT_ADDR:PORT [-n N]%s", "");
	dist_signals();
	fd = dist_connect(front);
	for (seq = (uint32_t)first; seq < (uint32_t)(first + n); seq++)
		client_request(fd, seq);
	if (stop)
		sent += dist_send(fd, DT_STOP, DK_REQUEST, seq);
	close(fd);
	printf("dist-client: requests %ld sent %zu recv %zu ok\n", n, sent,
	       got);
	return 0;
}
