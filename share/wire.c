/*
 * share/wire.c - frames of the propeld protocol (see share/wire.h).  Plain
 * blocking I/O on a descriptor: both ends poll() before they read, and a
 * frame once begun is read to its end within a deadline.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "share/clock.h"
#include "share/wire.h"

static int wire_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = { fd, POLLOUT, 0 };

			poll(&pfd, 1, 1000);
			continue;
		}
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int wire_send(int fd, int type, const void *payload, size_t len)
{
	struct wire_hdr h = { (uint32_t)len, (uint16_t)type, WIRE_VERSION };
	char small[512];
	int err;

	if (len > WIRE_MAX)
		return -EMSGSIZE;
	/* header and a short payload in one write: one frame, one segment */
	if (len <= sizeof(small) - sizeof(h)) {
		memcpy(small, &h, sizeof(h));
		if (len)
			memcpy(small + sizeof(h), payload, len);
		return wire_write_all(fd, small, sizeof(h) + len);
	}
	err = wire_write_all(fd, &h, sizeof(h));
	if (!err)
		err = wire_write_all(fd, payload, len);
	return err;
}

int wire_sendf(int fd, int type, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return wire_send(fd, type, buf, (size_t)n);
}

/* Read exactly n bytes; the first byte may wait forever if first_wait. */
static int wire_read_all(int fd, void *p, size_t n, int ms, int first)
{
	char *c = p;
	uint64_t end = ms >= 0 ? propel_mono_ms() + (uint64_t)ms : 0;

	while (n) {
		ssize_t r;

		if (ms >= 0 && !first) {
			struct pollfd pfd = { fd, POLLIN, 0 };
			int64_t left = (int64_t)(end - propel_mono_ms());

			if (left <= 0 || poll(&pfd, 1, (int)left) == 0)
				return -ETIMEDOUT;
		}
		r = read(fd, c, n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE;
		first = 0;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int wire_recv(int fd, int *type, char *buf, size_t cap, int ms)
{
	struct wire_hdr h;
	int err;

	err = wire_read_all(fd, &h, sizeof(h), ms, ms >= 0 ? 0 : 1);
	if (err)
		return err;
	if (h.ver != WIRE_VERSION || h.len > WIRE_MAX || !h.type)
		return -EPROTO;
	if (h.len + 1 > cap) {
		/* skip it, so the stream stays in step */
		char junk[4096];
		size_t left = h.len;

		while (left && !err) {
			size_t n = left < sizeof(junk) ? left : sizeof(junk);

			err = wire_read_all(fd, junk, n, ms < 0 ? 10000 : ms, 0);
			left -= n;
		}
		return err ? err : -EMSGSIZE;
	}
	err = wire_read_all(fd, buf, h.len, ms < 0 ? 10000 : ms, 0);
	if (err)
		return err == -EPIPE ? -EPIPE : err;
	buf[h.len] = 0;
	*type = h.type;
	return (int)h.len;
}

const char *wire_type_name(int type)
{
	static const char *const names[] = {
		[WIRE_HELLO] = "HELLO",	  [WIRE_TIME] = "TIME",
		[WIRE_ATTACH] = "ATTACH", [WIRE_FOLLOW] = "FOLLOW",
		[WIRE_RESULT] = "RESULT", [WIRE_PEER] = "PEER",
		[WIRE_PEER_DONE] = "PEER_DONE", [WIRE_NOTE] = "NOTE",
		[WIRE_STOP] = "STOP",	  [WIRE_FILE] = "FILE",
		[WIRE_DATA] = "DATA",	  [WIRE_END] = "END",
		[WIRE_VITALS] = "VITALS",
	};

	if (type > 0 && type < (int)(sizeof(names) / sizeof(names[0])) &&
	    names[type])
		return names[type];
	return "?";
}
