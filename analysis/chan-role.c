/*
 * analysis/chan-role.c - see analysis/chan-role.h.  The ends of every
 * tcp/udp channel are sorted once; an end's count is its run's length in
 * that order (n log n: a session under load holds thousands of
 * connections).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/chan-role.h"

struct chan_role_end {
	const char *s;
	size_t n;
};

/* "tcp:E1>E2" (tcp: and udp:): E1 or E2 as [*e, *e + *n). */
static int chan_role_end(const char *ch, int which, const char **e,
			 size_t *n)
{
	const char *gt;

	if (!ch || (strncmp(ch, "tcp:", 4) && strncmp(ch, "udp:", 4)))
		return -1;
	gt = strchr(ch + 4, '>');
	if (!gt)
		return -1;
	*e = which == 1 ? ch + 4 : gt + 1;
	*n = which == 1 ? (size_t)(gt - ch - 4) : strlen(gt + 1);
	return 0;
}

int chan_role_peer_end(const char *chan, const char *peer)
{
	const char *e;
	size_t n;
	int w;

	for (w = 1; peer && w <= 2; w++)
		if (!chan_role_end(chan, w, &e, &n) && strlen(peer) == n &&
		    !strncmp(e, peer, n))
			return w;
	return 0;
}

static int chan_role_cmp(const void *a, const void *b)
{
	const struct chan_role_end *x = a, *y = b;
	int c;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	c = memcmp(x->s, y->s, x->n);
	return c;
}

/* how many of v[0..m) equal k */
static size_t chan_role_count(const struct chan_role_end *v, size_t m,
			      const struct chan_role_end *k)
{
	size_t lo = 0, hi = m, a;

	while (lo < hi) { /* the first not below k */
		size_t mid = (lo + hi) / 2;

		if (chan_role_cmp(&v[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	a = lo;
	hi = m;
	while (lo < hi) { /* the first above k */
		size_t mid = (lo + hi) / 2;

		if (chan_role_cmp(&v[mid], k) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - a;
}

int chan_role_servers(const char *const *chan, size_t n, uint8_t *srv)
{
	struct chan_role_end *v = malloc((2 * n + 1) * sizeof(*v)), k1, k2;
	size_t i, m = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!chan_role_end(chan[i], 1, &k1.s, &k1.n) &&
		    !chan_role_end(chan[i], 2, &k2.s, &k2.n)) {
			v[m++] = k1;
			v[m++] = k2;
		}
	qsort(v, m, sizeof(*v), chan_role_cmp);
	for (i = 0; i < n; i++) {
		size_t c1, c2;

		srv[i] = 0;
		if (chan_role_end(chan[i], 1, &k1.s, &k1.n) ||
		    chan_role_end(chan[i], 2, &k2.s, &k2.n))
			continue;
		c1 = chan_role_count(v, m, &k1);
		c2 = chan_role_count(v, m, &k2);
		srv[i] = c1 > c2 ? 1 : c2 > c1 ? 2 : 0;
	}
	free(v);
	return 0;
}
