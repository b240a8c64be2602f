/*
 * tests/apps/dist.h - what the distributed scenario programs share
 * (dist-client.c, dist-front.c, dist-back.c, dist-logger.c,
 * dist-monitor.c, dist-all.c): the message framing, its self-check, the
 * byte counters and the address parsing.  Header-only: each program is one
 * .c file plus this.
 *
 * Every message, on every channel (TCP, pipe, UNIX stream, UDP), is
 *
 *   struct dist_hdr { magic, type, seq, len, sum }   20 bytes
 *   len payload bytes, byte i = dist_pat(kind, seq, i)
 *
 * where kind names the channel and direction (DK_*), and sum is FNV-1a over
 * the header's first four words and the payload.  The receiver checks the
 * magic, the type, the sequence number it expects, the length bound, the
 * checksum and every payload byte against the pattern: one changed byte
 * anywhere and the program prints
 *   dist-NAME: KIND message SEQ: byte N changed (...)
 * and exits 3.  A stream message is read whole (a header, then exactly len
 * bytes, however the kernel splits them); a datagram is one message.
 *
 * Byte counters count what the program wrote or read on each channel,
 * headers included, so the two ends of a channel print equal numbers.
 */
#ifndef PROPEL_TESTS_DIST_H
#define PROPEL_TESTS_DIST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* every helper: a program uses some of them */
#define DIST_FN static __attribute__((unused))

#define DIST_MAGIC 0x70726f70u /* "prop" */
#define DIST_MAX 8192	       /* the largest payload */

enum dist_type { DT_REQ = 1, DT_REP = 2, DT_STOP = 3 };

/* the channel and direction of a message: salts the payload pattern */
enum dist_kind {
	DK_REQUEST,  /* client -> front, TCP */
	DK_REPLY,    /* front -> client, TCP */
	DK_BACK_REQ, /* front -> back, TCP */
	DK_BACK_REP, /* back -> front, TCP */
	DK_WORK,     /* front -> child, pipe */
	DK_RESULT,   /* child -> front, pipe */
	DK_LOG,	     /* front -> logger, UNIX stream */
	DK_BEAT,     /* front -> monitor, UDP */
	DK_N
};

static const char *const dist_kind_name[DK_N] = {
    "request", "reply",	 "back-request", "back-reply",
    "work",    "result", "log",		 "heartbeat",
};

struct dist_hdr {
	uint32_t magic, type, seq, len, sum;
};

static const char *dist_self = "dist";
/* the sequence number to corrupt on send (--corrupt N); 0 = none */
DIST_FN uint32_t dist_corrupt;
static volatile sig_atomic_t dist_stop;

DIST_FN void dist_on_signal(int sig)
{
	(void)sig;
	dist_stop = 1;
}

/* SIGTERM/SIGINT set dist_stop and interrupt a blocked call (no
 * SA_RESTART); SIGPIPE is ignored (a closed peer is an error return) */
DIST_FN void dist_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = dist_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

DIST_FN void dist_die(const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", dist_self);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	exit(2);
}

static inline __attribute__((always_inline)) unsigned char
dist_pat(int kind, uint32_t seq, uint32_t i)
{
	return (unsigned char)(kind * 29 + seq * 131 + i * 7 + (i >> 8));
}

DIST_FN uint32_t dist_fnv(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

DIST_FN uint32_t dist_sum(const struct dist_hdr *h, const unsigned char *pl)
{
	return dist_fnv(dist_fnv(2166136261u, h, 16), pl, h->len);
}

/* The payload length of message seq of a kind: varied, 1..DIST_MAX. */
DIST_FN uint32_t dist_len(int kind, uint32_t seq)
{
	static const uint32_t base[DK_N] = {64, 32, 48, 16, 8, 8, 40, 24};
	static const uint32_t span[DK_N] = {2000, 3000, 1500, 1200,
					    100,  60,	200,  80};

	return base[kind] + (seq * 97 + (uint32_t)kind * 13) % span[kind];
}

/* Build a message into buf (DIST_MAX + header); returns its size. */
DIST_FN size_t dist_build(unsigned char *buf, int type, int kind, uint32_t seq,
			  uint32_t len)
{
	struct dist_hdr h = {DIST_MAGIC, (uint32_t)type, seq, len, 0};
	uint32_t i;

	for (i = 0; i < len; i++)
		buf[sizeof(h) + i] = dist_pat(kind, seq, i);
	h.sum = dist_sum(&h, buf + sizeof(h));
	memcpy(buf, &h, sizeof(h));
	/* the corrupted-payload mode: one byte changed after the sum */
	if (dist_corrupt && seq == dist_corrupt && type == DT_REQ && len)
		buf[sizeof(h) + len / 2] ^= 0x20;
	return sizeof(h) + len;
}

/* Check a whole message (header and payload in buf); exits 3 on any
 * difference. */
DIST_FN void dist_check(const unsigned char *buf, size_t n, int kind,
			uint32_t want_seq, int want_type)
{
	struct dist_hdr h;
	uint32_t i;

	if (n < sizeof(h)) {
		fprintf(stderr,
			"%s: %s message %u: %zu bytes, shorter than "
			"its header\n",
			dist_self, dist_kind_name[kind], want_seq, n);
		exit(3);
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != DIST_MAGIC || h.len > DIST_MAX ||
	    n != sizeof(h) + h.len) {
		fprintf(stderr,
			"%s: %s message %u: bad header (magic %08x, "
			"len %u, %zu bytes)\n",
			dist_self, dist_kind_name[kind], want_seq, h.magic,
			h.len, n);
		exit(3);
	}
	if (h.type == DT_STOP && want_type != DT_STOP)
		want_type = DT_STOP; /* a stop may come instead */
	if (h.type != (uint32_t)want_type || (want_seq && h.seq != want_seq)) {
		fprintf(stderr,
			"%s: %s message: type %u seq %u, expected "
			"type %d seq %u\n",
			dist_self, dist_kind_name[kind], h.type, h.seq,
			want_type, want_seq);
		exit(3);
	}
	for (i = 0; i < h.len; i++)
		if (buf[sizeof(h) + i] != dist_pat(kind, h.seq, i)) {
			fprintf(stderr,
				"%s: %s message %u: byte %u changed "
				"(0x%02x, expected 0x%02x)\n",
				dist_self, dist_kind_name[kind], h.seq, i,
				buf[sizeof(h) + i], dist_pat(kind, h.seq, i));
			exit(3);
		}
	if (dist_sum(&h, buf + sizeof(h)) != h.sum) {
		fprintf(stderr, "%s: %s message %u: checksum differs\n",
			dist_self, dist_kind_name[kind], h.seq);
		exit(3);
	}
}

/* write all of it; returns n, or -1 (errno) */
DIST_FN ssize_t dist_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	size_t done = 0;

	while (done < n) {
		ssize_t r = write(fd, b + done, n - done);

		if (r < 0 && errno == EINTR && !dist_stop)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return (ssize_t)n;
}

/* read exactly n; returns n, 0 at a clean EOF before the first byte, -1 on
 * an error or an EOF in the middle (errno EPIPE), or -2 when stopped */
DIST_FN ssize_t dist_read_all(int fd, void *p, size_t n)
{
	char *b = p;
	size_t done = 0;

	while (done < n) {
		ssize_t r = read(fd, b + done, n - done);

		if (r < 0 && errno == EINTR) {
			if (dist_stop)
				return -2;
			continue;
		}
		if (r < 0)
			return -1;
		if (r == 0) {
			if (done == 0)
				return 0;
			errno = EPIPE;
			return -1;
		}
		done += (size_t)r;
	}
	return (ssize_t)n;
}

/* Send one message on a stream; returns the bytes written (exits 2 on a
 * write error). */
DIST_FN __attribute__((noinline)) size_t dist_send(int fd, int type, int kind,
						   uint32_t seq)
{
	static unsigned char buf[sizeof(struct dist_hdr) + DIST_MAX];
	size_t n = dist_build(buf, type, kind, seq,
			      type == DT_STOP ? 0 : dist_len(kind, seq));

	if (dist_write_all(fd, buf, n) < 0)
		dist_die("write %s: failed", dist_kind_name[kind]);
	return n;
}

/*
 * Receive one message from a stream and check it.  Returns its size;
 * *type is its type (DT_STOP: a stop).  0 at EOF or when stopped by a
 * signal, *type then -1 (no type: a caller that checks only the type,
 * as the client and the front end do for a reply, sees no reply -- left
 * as it was, the previous call's DT_REP in the same stack slot read as
 * one, and a client whose front end had died of a corrupt message went
 * on and exited 0: dist corrupt/front, fcr18).  want_seq 0 accepts any
 * sequence number.
 */
DIST_FN __attribute__((noinline)) size_t dist_recv(int fd, int kind,
						   uint32_t want_seq,
						   int want_type, int *type,
						   uint32_t *seq)
{
	static unsigned char buf[sizeof(struct dist_hdr) + DIST_MAX];
	struct dist_hdr h;
	ssize_t r = dist_read_all(fd, buf, sizeof(h));

	*type = -1;
	if (r == 0 || r == -2)
		return 0;
	if (r < 0) {
		fprintf(stderr, "%s: %s: %s\n", dist_self, dist_kind_name[kind],
			strerror(errno));
		exit(2);
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != DIST_MAGIC || h.len > DIST_MAX) {
		fprintf(stderr,
			"%s: %s message %u: bad header (magic %08x, "
			"len %u)\n",
			dist_self, dist_kind_name[kind], want_seq, h.magic,
			h.len);
		exit(3);
	}
	r = dist_read_all(fd, buf + sizeof(h), h.len);
	if (r != (ssize_t)h.len) {
		fprintf(stderr, "%s: %s message %u: cut short\n", dist_self,
			dist_kind_name[kind], h.seq);
		exit(3);
	}
	dist_check(buf, sizeof(h) + h.len, kind, want_seq, want_type);
	*type = (int)h.type;
	*seq = h.seq;
	return sizeof(h) + h.len;
}

/* "A.B.C.D:PORT" or "PORT" (127.0.0.1) into sa; exits 2 when malformed */
DIST_FN void dist_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - s) : 9,
		 colon ? s : "127.0.0.1");
	port = strtol(colon ? colon + 1 : s, &end, 10);
	if (*end || port < 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		dist_die("bad address %s (want A.B.C.D:PORT)", s);
	sa->sin_port = htons((uint16_t)port);
}

/* A bound socket (listening for TCP); prints nothing. */
DIST_FN int dist_bind(int type, const char *addr, struct sockaddr_in *got)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;

	dist_addr(addr, &sa);
	if (fd < 0)
		dist_die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		dist_die("bind %s: failed", addr);
	if (type == SOCK_STREAM && listen(fd, 16) < 0)
		dist_die("listen %s: failed", addr);
	getsockname(fd, (struct sockaddr *)got, &sl);
	return fd;
}

DIST_FN int dist_connect(const char *addr)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), tries;

	dist_addr(addr, &sa);
	if (fd < 0)
		dist_die("socket: %s", strerror(errno));
	for (tries = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0;
	     tries++) {
		if (tries == 50 || (errno != ECONNREFUSED && errno != EINTR))
			dist_die("connect %s: failed", addr);
		usleep(100000);
	}
	return fd;
}

#endif
