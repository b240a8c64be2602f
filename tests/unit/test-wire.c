/*
 * tests/unit/test-wire.c - share/wire.c and inject/peer.c's parsing: a
 * frame goes through a pipe whole (text, empty, binary, the largest
 * allowed), in order; a frame of another version is refused (-EPROTO);
 * one larger than the reader's buffer is skipped whole (-EMSGSIZE) and the
 * next one still read; end of stream is -EPIPE; a reader waits no longer
 * than its deadline for a frame begun but not finished (-ETIMEDOUT).
 * peer_parse reads the agent's channel lines, peer_name writes them, and
 * a bad line is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/peer.h"
#include "share/wire.h"

#include "tests/unit/check.h"

static void test_frames(void)
{
	int p[2], type = 0, n;
	char buf[256], *big = malloc(WIRE_MAX), *in = malloc(WIRE_MAX + 1);
	struct wire_hdr h = { 3, WIRE_NOTE, WIRE_VERSION + 1 };

	if (pipe(p) || !big || !in)
		return;
	wire_sendf(p[1], WIRE_NOTE, "hello %d", 42);
	n = wire_recv(p[0], &type, buf, sizeof(buf), 1000);
	CHECK("wire/text", n == 8 && type == WIRE_NOTE && !strcmp(buf, "hello 42"),
	      "n %d type %d '%s'", n, type, buf);
	wire_send(p[1], WIRE_STOP, NULL, 0);
	n = wire_recv(p[0], &type, buf, sizeof(buf), 1000);
	CHECK("wire/empty", n == 0 && type == WIRE_STOP, "n %d type %d", n, type);
	/* the largest frame, binary, through a pipe (a writer thread is not
	 * needed: a child writes it) */
	for (size_t i = 0; i < WIRE_MAX; i++)
		big[i] = (char)(i * 7 + 1);
	big[5] = 0;
	if (fork() == 0) {
		wire_send(p[1], WIRE_DATA, big, WIRE_MAX);
		wire_sendf(p[1], WIRE_END, "after");
		_exit(0);
	}
	n = wire_recv(p[0], &type, in, WIRE_MAX + 1, 5000);
	CHECK("wire/largest", n == (int)WIRE_MAX && type == WIRE_DATA &&
			      !memcmp(in, big, WIRE_MAX),
	      "n %d type %d", n, type);
	n = wire_recv(p[0], &type, buf, sizeof(buf), 5000);
	CHECK("wire/in-order", n == 5 && type == WIRE_END && !strcmp(buf, "after"),
	      "n %d type %d", n, type);
	CHECK("wire/too-large-send", wire_send(p[1], WIRE_DATA, big, WIRE_MAX + 1) == -EMSGSIZE,
	      "a frame over WIRE_MAX was sent");
	/* larger than the reader's buffer: skipped, the next one read */
	if (fork() == 0) {
		wire_send(p[1], WIRE_DATA, big, 1000);
		wire_sendf(p[1], WIRE_NOTE, "next");
		_exit(0);
	}
	n = wire_recv(p[0], &type, buf, sizeof(buf), 5000);
	CHECK("wire/skip-oversize", n == -EMSGSIZE, "n %d", n);
	n = wire_recv(p[0], &type, buf, sizeof(buf), 5000);
	CHECK("wire/after-oversize", n == 4 && !strcmp(buf, "next"), "n %d '%s'", n, buf);
	/* another version */
	if (write(p[1], &h, sizeof(h)) != sizeof(h) || write(p[1], "abc", 3) != 3)
		return;
	n = wire_recv(p[0], &type, buf, sizeof(buf), 1000);
	CHECK("wire/version", n == -EPROTO, "n %d", n);
	close(p[0]);
	close(p[1]);
	/* begun, not finished: the deadline */
	if (pipe(p))
		return;
	h.ver = WIRE_VERSION;
	h.len = 10;
	if (write(p[1], &h, sizeof(h)) != sizeof(h) || write(p[1], "abc", 3) != 3)
		return;
	n = wire_recv(p[0], &type, buf, sizeof(buf), 200);
	CHECK("wire/deadline", n == -ETIMEDOUT, "n %d", n);
	close(p[1]);
	n = wire_recv(p[0], &type, buf, sizeof(buf), 200);
	CHECK("wire/eof", n == -EPIPE, "n %d", n);
	close(p[0]);
	free(big);
	free(in);
}

static void test_peer(void)
{
	struct peer_addr a;
	char name[96], host[64];
	int err;

	err = peer_parse("tcp 7f000001 5000 0a000002 8080 0 0", &a);
	peer_name(&a, name, sizeof(name));
	peer_host(&a, host, sizeof(host));
	CHECK("peer/tcp", !err && a.alen == 4 && a.lport == 5000 && a.pport == 8080 &&
				  !strcmp(name, "10.0.0.2:8080") && !strcmp(host, "10.0.0.2"),
	      "err %d name %s host %s", err, name, host);
	err = peer_parse("tcp 00000000000000000000000000000001 5000 "
			 "00000000000000000000000000000001 80 0 0", &a);
	peer_name(&a, name, sizeof(name));
	CHECK("peer/tcp6", !err && a.alen == 16 && !strcmp(name, "[::1]:80") &&
				   peer_is_local(&a) == 1,
	      "err %d name %s", err, name);
	err = peer_parse("pipe - 0 - 0 1234 1234", &a);
	peer_name(&a, name, sizeof(name));
	CHECK("peer/pipe", !err && a.alen == 0 && a.pino == 1234 &&
				   !strcmp(name, "pipe:1234") && peer_is_local(&a) == 1,
	      "err %d name %s", err, name);
	CHECK("peer/bad", peer_parse("tcp 7f00 1 7f000001 2 0 0", &a) == -EINVAL &&
				  peer_parse("tcp 7f000001 1", &a) == -EINVAL,
	      "a bad line was taken");
	err = peer_parse("udp 7f000001 5000 c0000201 53 0 0", &a);
	CHECK("peer/not-local", !err && peer_is_local(&a) == 0,
	      "192.0.2.1 (TEST-NET-1) taken as this host's");
}

int main(void)
{
	CHECKS_EXPECT(15);
	test_frames();
	test_peer();
	return failures ? 1 : 0;
}
