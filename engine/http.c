/*
 * engine/http.c - see engine/http.h.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/http.h"
#include "share/clock.h"
#include "share/log.h"

struct http_url {
	char host[256], port[16], path[1024];
};

static int http_parse(const char *url, struct http_url *u, char **cause)
{
	const char *p, *h, *colon, *slash;
	size_t n;

	if (strncmp(url, "http://", 7) != 0)
		return propel_cause(cause, -EINVAL,
				    "%s: only http:// URLs (no TLS)", url);
	h = url + 7;
	slash = strchr(h, '/');
	p = slash ? slash : h + strlen(h);
	colon = memchr(h, ':', (size_t)(p - h));
	n = (size_t)((colon ? colon : p) - h);
	if (h[0] == '[') /* [v6]:port */
		colon = NULL, n = (size_t)(p - h);
	if (!n || n >= sizeof(u->host))
		return propel_cause(cause, -EINVAL, "%s: no host", url);
	memcpy(u->host, h, n);
	u->host[n] = 0;
	if (u->host[0] == '[' && u->host[n - 1] == ']') {
		memmove(u->host, u->host + 1, n - 2);
		u->host[n - 2] = 0;
		colon = memchr(h + n, ':', (size_t)(p - h - n));
	}
	if (colon) {
		n = (size_t)(p - colon - 1);
		if (!n || n >= sizeof(u->port) ||
		    strspn(colon + 1, "0123456789") < n)
			return propel_cause(cause, -EINVAL, "%s: bad port",
					    url);
		memcpy(u->port, colon + 1, n);
		u->port[n] = 0;
	} else {
		strcpy(u->port, "80");
	}
	snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "/");
	return 0;
}

int http_url_check(const char *url, char **cause)
{
	struct http_url u;

	return http_parse(url, &u, cause);
}

/* wait for fd to be ready for ev until *end (CLOCK_MONOTONIC ns): 0 or
 * -ETIMEDOUT */
static int http_wait(int fd, short ev, const int64_t *end)
{
	struct pollfd p = { fd, ev, 0 };
	int64_t left = (*end - (int64_t)propel_mono_ns()) / 1000000;

	if (left <= 0 || poll(&p, 1, (int)left) <= 0)
		return -ETIMEDOUT;
	return 0;
}

static int http_send_all(int fd, const void *buf, size_t n,
			 const int64_t *end)
{
	const char *p = buf;

	while (n) {
		ssize_t w;

		if (http_wait(fd, POLLOUT, end))
			return -ETIMEDOUT;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int http_post(const char *url, const char *ctype, const void *body,
	      size_t len, int timeout_ms, char **cause)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int64_t end;
	struct http_url u;
	char head[1600], resp[512];
	size_t got = 0;
	int fd = -1, err, code;

	err = http_parse(url, &u, cause);
	if (err)
		return err;
	end = (int64_t)propel_mono_ns() + (int64_t)timeout_ms * 1000000;
	err = getaddrinfo(u.host, u.port, &hints, &ai);
	if (err)
		return propel_cause(cause, -EHOSTUNREACH, "%s: %s", url,
				    gai_strerror(err));
	err = -ECONNREFUSED;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC |
						  SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && !http_wait(fd, POLLOUT, &end))) {
			int so = 0;
			socklen_t sl = sizeof(so);

			getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
			if (!so)
				break;
			err = -so;
		} else {
			err = errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return propel_cause(cause, err, "%s: %s", url, strerror(-err));
	snprintf(head, sizeof(head),
		 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: propel\r\n"
		 "Content-Type: %s\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n",
		 u.path, u.host, u.port, ctype, len);
	err = http_send_all(fd, head, strlen(head), &end);
	if (!err)
		err = http_send_all(fd, body, len, &end);
	/* the status line is all that is read */
	while (!err && got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
		ssize_t r;

		if ((err = http_wait(fd, POLLIN, &end)))
			break;
		r = recv(fd, resp + got, sizeof(resp) - 1 - got, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EPROTO;
			break;
		}
		got += (size_t)r;
		resp[got] = 0;
	}
	close(fd);
	if (err)
		return propel_cause(cause, err, "%s: %s", url,
				    err == -EPROTO ? "no answer" : strerror(-err));
	resp[got] = 0;
	resp[strcspn(resp, "\r\n")] = 0;
	if (sscanf(resp, "HTTP/%*d.%*d %d", &code) != 1)
		return propel_cause(cause, -EPROTO, "%s: not HTTP: %.60s", url,
				    resp);
	if (code < 200 || code > 299)
		return propel_cause(cause, -EPROTO, "%s: %s", url, resp);
	return 0;
}
