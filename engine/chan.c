/*
 * engine/chan.c - C lines of a map file into channel names (engine/chan.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chan.h"

static int chan_unhex(const char *s, uint8_t *out, int *n)
{
	size_t len = strlen(s), i;

	if (!strcmp(s, "-")) {
		*n = 0;
		return 0;
	}
	if (len != 8 && len != 32)
		return -EINVAL;
	for (i = 0; i < len / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	*n = (int)(len / 2);
	return 0;
}

static void chan_endpoint(char *buf, size_t size, const uint8_t *a, int n,
			  unsigned port)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(n == 4 ? AF_INET : AF_INET6, a, s, sizeof(s));
	if (n == 4)
		snprintf(buf, size, "%s:%u", s, port);
	else
		snprintf(buf, size, "[%s]:%u", s, port);
}

/* local before peer in the canonical order? */
static int chan_first(const uint8_t *la, unsigned lp, const uint8_t *pa,
		      unsigned pp, int n)
{
	int c = memcmp(la, pa, (size_t)n);

	return c < 0 || (c == 0 && lp <= pp);
}

int chan_table_line(struct chan_table *t, const char *line)
{
	char type[16], lh[40], ph[40], le[64], pe[64], buf[200];
	uint8_t la[16], pa[16];
	unsigned lp, pp;
	uint64_t li, pi;
	uint32_t id;
	int ln, pn, first;
	struct chan_info ci = { 0 };

	if (sscanf(line, "C %" SCNu32 " %15s %39s %u %39s %u %" SCNu64
			 " %" SCNu64,
		   &id, type, lh, &lp, ph, &pp, &li, &pi) != 8 ||
	    id >= (1u << 24) || chan_unhex(lh, la, &ln) ||
	    chan_unhex(ph, pa, &pn) || ln != pn)
		return -EINVAL;
	if (!strcmp(type, "tcp") || !strcmp(type, "udp")) {
		if (!ln)
			return -EINVAL;
		chan_endpoint(le, sizeof(le), la, ln, lp);
		chan_endpoint(pe, sizeof(pe), pa, pn, pp);
		first = chan_first(la, lp, pa, pp, ln);
		snprintf(buf, sizeof(buf), "%s:%s>%s", type, first ? le : pe,
			 first ? pe : le);
		ci.peer = strdup(pe);
		ci.send_dir = first ? 0 : 1;
		ci.recv_dir = first ? 1 : 0;
		ci.stream = type[0] == 't';
	} else if (!strcmp(type, "pipe")) {
		snprintf(buf, sizeof(buf), "pipe:%" PRIu64, li);
		ci.peer = strdup("pipe");
		ci.stream = 1;
	} else if (!strcmp(type, "unix") && !pi) {
		/* connected before the server accepted: the other end is
		 * named by engine/match.c from the server's own events */
		snprintf(buf, sizeof(buf), "unix:%" PRIu64 "-?", li);
		ci.peer = strdup("unix:?");
		ci.recv_dir = 1;
		ci.stream = 1;
	} else if (!strcmp(type, "unix")) {
		snprintf(buf, sizeof(buf), "unix:%" PRIu64 "-%" PRIu64,
			 li < pi ? li : pi, li < pi ? pi : li);
		snprintf(pe, sizeof(pe), "unix:%" PRIu64, pi);
		ci.peer = strdup(pe);
		ci.send_dir = li < pi ? 0 : 1;
		ci.recv_dir = li < pi ? 1 : 0;
		ci.stream = 1;
	} else if (!strcmp(type, "unixd")) {
		snprintf(buf, sizeof(buf), "unix:%" PRIu64, li);
		ci.peer = strdup("unix");
	} else {
		return -EINVAL;
	}
	ci.chan = strdup(buf);
	if (!ci.chan || !ci.peer)
		goto nomem;
	if (id >= t->n) {
		uint32_t nn = t->n ? t->n : 16;
		struct chan_info *v;

		while (nn <= id)
			nn *= 2;
		v = realloc(t->v, nn * sizeof(*v));
		if (!v)
			goto nomem;
		memset(v + t->n, 0, (nn - t->n) * sizeof(*v));
		t->v = v;
		t->n = nn;
	}
	free(t->v[id].chan);
	free(t->v[id].peer);
	t->v[id] = ci;
	return 0;
nomem:
	free(ci.chan);
	free(ci.peer);
	return -ENOMEM;
}

const struct chan_info *chan_table_get(const struct chan_table *t, uint32_t id)
{
	return id < t->n && t->v[id].chan ? &t->v[id] : NULL;
}

void chan_table_release(struct chan_table *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		free(t->v[i].chan);
		free(t->v[i].peer);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
