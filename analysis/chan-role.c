/*
 * analysis/chan-role.c - see analysis/chan-role.h.  The ends of every
 * tcp/udp channel are sorted once into the distinct ends, each with its
 * count; the sides are a union-find with each end's parity against its
 * root (n log n: a session under load holds thousands of connections).
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

/* The index of k in the distinct ends u[0..nu). */
static size_t chan_role_find(const struct chan_role_end *u, size_t nu,
			     const struct chan_role_end *k)
{
	size_t lo = 0, hi = nu;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (chan_role_cmp(&u[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The indices in u[0..nu) of chan's two ends; -1 when it has none. */
static int chan_role_pair(const char *chan, const struct chan_role_end *u,
			  size_t nu, size_t *a, size_t *b)
{
	struct chan_role_end k1, k2;

	if (chan_role_end(chan, 1, &k1.s, &k1.n) ||
	    chan_role_end(chan, 2, &k2.s, &k2.n))
		return -1;
	*a = chan_role_find(u, nu, &k1);
	*b = chan_role_find(u, nu, &k2);
	return 0;
}

/* Union-find with the parity of each end against its root (the side it
 * is on); odd[root]: the component has a channel whose ends are on one
 * side. */
static size_t chan_role_root(size_t *up, uint8_t *par, size_t x, uint8_t *p)
{
	size_t r = x, y;
	uint8_t q = 0, t;

	while (up[r] != r) {
		q ^= par[r];
		r = up[r];
	}
	*p = q;
	while (up[x] != r) { /* path halving keeps each parity to the root */
		y = up[x];
		t = par[x];
		up[x] = r;
		par[x] = q;
		q ^= t;
		x = y;
	}
	return r;
}

int chan_role_servers(const char *const *chan, size_t n, uint8_t *srv)
{
	struct chan_role_end *v = malloc((2 * n + 1) * sizeof(*v)), k1, k2;
	struct chan_role_end *u = NULL;
	size_t i, m = 0, nu = 0, *cnt = NULL, *up = NULL;
	size_t *side[2] = { NULL, NULL };
	uint8_t *par = NULL, *odd = NULL;
	int err = -ENOMEM;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!chan_role_end(chan[i], 1, &k1.s, &k1.n) &&
		    !chan_role_end(chan[i], 2, &k2.s, &k2.n)) {
			v[m++] = k1;
			v[m++] = k2;
		}
	qsort(v, m, sizeof(*v), chan_role_cmp);
	/* the distinct ends, each with its count (the channels naming it) */
	u = malloc((m + 1) * sizeof(*u));
	cnt = malloc((m + 1) * sizeof(*cnt));
	up = malloc((m + 1) * sizeof(*up));
	side[0] = calloc(m + 1, sizeof(size_t));
	side[1] = calloc(m + 1, sizeof(size_t));
	par = calloc(m + 1, 1);
	odd = calloc(m + 1, 1);
	if (!u || !cnt || !up || !side[0] || !side[1] || !par || !odd)
		goto out;
	for (i = 0; i < m; i++) {
		if (!nu || chan_role_cmp(&u[nu - 1], &v[i])) {
			u[nu] = v[i];
			cnt[nu] = 0;
			up[nu] = nu;
			nu++;
		}
		cnt[nu - 1]++;
	}
	/* each channel joins its two ends on opposite sides */
	for (i = 0; i < n; i++) {
		size_t a, b, ra, rb;
		uint8_t pa, pb;

		if (chan_role_pair(chan[i], u, nu, &a, &b))
			continue;
		ra = chan_role_root(up, par, a, &pa);
		rb = chan_role_root(up, par, b, &pb);
		if (ra == rb) {
			if (pa == pb)
				odd[ra] = 1;
			continue;
		}
		up[rb] = ra;
		par[rb] = pa ^ pb ^ 1;
		odd[ra] |= odd[rb];
	}
	for (i = 0; i < nu; i++) {
		uint8_t p;
		size_t r = chan_role_root(up, par, i, &p);

		side[p][r]++;
	}
	for (i = 0; i < n; i++) {
		size_t a, b, r, s0, s1;
		uint8_t pa, pb;

		srv[i] = 0;
		if (chan_role_pair(chan[i], u, nu, &a, &b))
			continue;
		r = chan_role_root(up, par, a, &pa);
		chan_role_root(up, par, b, &pb);
		s0 = side[0][r];
		s1 = side[1][r];
		if (!odd[r] && pa != pb && s0 != s1) {
			/* the listening side: the one with fewer ends */
			srv[i] = pa == (s0 < s1 ? 0 : 1) ? 1 : 2;
			continue;
		}
		srv[i] = cnt[a] > cnt[b] ? 1 : cnt[b] > cnt[a] ? 2 : 0;
	}
	err = 0;
out:
	free(v);
	free(u);
	free(cnt);
	free(up);
	free(side[0]);
	free(side[1]);
	free(par);
	free(odd);
	return err;
}
