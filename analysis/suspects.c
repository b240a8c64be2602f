/*
 * analysis/suspects.c - see analysis/suspects.h.  O(|T|^2 + |T||N|)
 * distances, each a merge of two sparse vectors; suspects_steady's look
 * for a path in the other units of a kind is a binary search each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/rootcause.h"
#include "analysis/suspects.h"

size_t suspects_k(size_t n)
{
	size_t k = n / 4;

	if (n < 2)
		return 0;
	if (k < 1)
		k = 1;
	if (k > n - 1)
		k = n - 1;
	return k;
}

static int suspects_score_k(const struct profile *T, size_t n,
			    const uint32_t *group, const struct profile *N,
			    size_t m, const uint32_t *ngroup, int kind,
			    size_t kfix, const uint8_t *cut,
			    struct suspects_score *out);

struct suspects_nb {
	double d;
	size_t i;
};

static int suspects_nb_cmp(const void *a, const void *b)
{
	const struct suspects_nb *x = a, *y = b;

	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int suspects_score(const struct profile *T, size_t n, const struct profile *N,
		   size_t m, int kind, size_t k, struct suspects_score *out)
{
	if (!k)
		return suspects_score_kinds(T, n, NULL, N, m, NULL, kind, out);
	return suspects_score_k(T, n, NULL, N, m, NULL, kind, k, NULL, out);
}

int suspects_score_kinds(const struct profile *T, size_t n,
			 const uint32_t *group, const struct profile *N,
			 size_t m, const uint32_t *ngroup, int kind,
			 struct suspects_score *out)
{
	return suspects_score_k(T, n, group, N, m, ngroup, kind, 0, NULL,
				out);
}

int suspects_score_cut(const struct profile *T, size_t n,
		       const uint32_t *group, const struct profile *N,
		       size_t m, const uint32_t *ngroup, int kind,
		       const uint8_t *cut, struct suspects_score *out)
{
	return suspects_score_k(T, n, group, N, m, ngroup, kind, 0, cut, out);
}

/* Put the k-th smallest of nb[0..n) (in suspects_nb_cmp's order: by
 * distance, ties by index) at nb[k], the smaller ones before it
 * (Hoare's selection): only h_k is wanted, and sorting every unit's
 * neighbours was a tenth of `report --suspects` on 1,400 flows. */
static void suspects_select(struct suspects_nb *nb, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		struct suspects_nb pv = nb[lo + (hi - lo) / 2], tmp;
		size_t i = lo, j = hi;

		while (i <= j) {
			while (suspects_nb_cmp(&nb[i], &pv) < 0)
				i++;
			while (suspects_nb_cmp(&nb[j], &pv) > 0)
				j--;
			if (i <= j) {
				tmp = nb[i];
				nb[i] = nb[j];
				nb[j] = tmp;
				i++;
				if (j-- == 0)
					break;
			}
		}
		if (k <= j && j != (size_t)-1)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

/* The distance of units h and i, each pair computed once: profiles_distance
 * is symmetric to the bit (the same components summed in the same key
 * order), and every unit's neighbours are all the others, so each pair was
 * computed twice.  dm: the pairs' distances, -1 until computed (NULL: too
 * many units for the memory, computed each time). */
#define SUSPECTS_PAIRS_MAX (8u << 20) /* 64 MB of doubles */
static double suspects_pair(const struct profile *T, double *dm, size_t h,
			    size_t i, int kind)
{
	size_t a = h < i ? h : i, b = h < i ? i : h, x;

	if (!dm)
		return profiles_distance(&T[h], &T[i], kind);
	x = b * (b - 1) / 2 + a;
	if (dm[x] < 0)
		dm[x] = profiles_distance(&T[a], &T[b], kind);
	return dm[x];
}

static int suspects_score_k(const struct profile *T, size_t n,
			    const uint32_t *group, const struct profile *N,
			    size_t m, const uint32_t *ngroup, int kind,
			    size_t kfix, const uint8_t *cut,
			    struct suspects_score *out)
{
	struct suspects_nb *nb;
	double *dm = NULL;
	size_t h, i, r;

	nb = malloc((n + 1) * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	if (n >= 2 && n * (n - 1) / 2 <= SUSPECTS_PAIRS_MAX &&
	    (dm = malloc(n * (n - 1) / 2 * sizeof(*dm))))
		for (i = 0; i < n * (n - 1) / 2; i++)
			dm[i] = -1;
	for (h = 0; h < n; h++) {
		size_t c = 0, g = 0, k = kfix;
		int kin = 0; /* a reference of h's kind exists */

		out[h].score = 0;
		out[h].nb_ref = -1;
		out[h].nb = 0;
		out[h].why = SUSPECTS_KNN;
		out[h].cut = cut && cut[h];
		for (i = 0; i < n; i++) {
			if (group && group[i] != group[h])
				continue;
			if (cut && cut[i] && i != h)
				continue; /* no one's neighbour */
			g++;
			if (i != h) {
				nb[c].d = suspects_pair(T, dm, h, i, kind);
				nb[c++].i = i;
			}
		}
		if (!k)
			k = suspects_k(g);
		if (k > (g ? g - 1 : 0))
			k = g ? g - 1 : 0;
		if (k >= 1 && c >= k)
			suspects_select(nb, c, k - 1);
		if (k >= 1 && c >= k) {
			out[h].score = nb[k - 1].d; /* h_k */
			out[h].nb = nb[k - 1].i;
			out[h].nb_ref = 0;
		}
		for (i = 0; group && ngroup && i < m; i++)
			kin |= ngroup[i] == group[h];
		for (i = 0; i < m; i++) { /* n_1 */
			double d;

			if (kin && ngroup[i] != group[h])
				continue;
			d = profiles_distance(&T[h], &N[i], kind);
			if (out[h].nb_ref < 0 || d < out[h].score) {
				out[h].score = d;
				out[h].nb = i;
				out[h].nb_ref = 1;
			}
		}
	}
	free(nb);
	free(dm);
	/* ranks: the complete units first; by score, descending; ties by
	 * index */
	for (h = 0; h < n; h++) {
		r = 1;
		for (i = 0; i < n; i++)
			if (out[i].cut < out[h].cut ||
			    (out[i].cut == out[h].cut &&
			     (out[i].score > out[h].score ||
			      (out[i].score == out[h].score && i < h))))
				r++;
		out[h].rank = r;
	}
	return 0;
}

size_t suspects_nearest(const struct profile *T, size_t n, size_t a, int kind)
{
	size_t i, best = n;
	double bd = 0;

	for (i = 0; i < n; i++) {
		double d;

		if (i == a)
			continue;
		d = profiles_distance(&T[a], &T[i], kind);
		if (best == n || d < bd) {
			best = i;
			bd = d;
		}
	}
	return best;
}

void suspects_failstop_first(struct suspects_score *sc, size_t n, size_t u)
{
	size_t i, r;

	if (u >= n)
		return;
	r = sc[u].rank;
	for (i = 0; i < n; i++)
		if (sc[i].rank < r)
			sc[i].rank++;
	sc[u].rank = 1;
	sc[u].why = SUSPECTS_FAILSTOP;
}

/* Whether path k is in p (entered, timed or sending). */
static int suspects_has(const struct profile *p, uint32_t k)
{
	const struct profiles_entry *e = profiles_find(p, k);

	return e && (e->cov || e->time > 0 || e->comm > 0);
}

static int suspects_entry_cmp(const void *a, const void *b)
{
	const struct profiles_entry *x = a, *y = b;

	return x->k < y->k ? -1 : x->k > y->k;
}

/* The members of u's kind: how many, and the first (lowest index). */
static size_t suspects_kind(size_t n, const uint32_t *group, size_t u,
			    size_t *first)
{
	size_t i, g = 0;

	*first = u;
	for (i = 0; i < n; i++)
		if (!group || group[i] == group[u]) {
			if (!g)
				*first = i;
			g++;
		}
	return g;
}

/* Whether every unit of u's kind but u has path k. */
/* Does unit j vote on what every other unit of u's kind entered: of u's
 * kind, not u, and complete (a unit the window cut lacks the paths run
 * before it began: it cannot say a path is not every request's) -- unless
 * every other unit of the kind was cut (cut_all), then all of them. */
static int suspects_voter(const uint32_t *group, const uint8_t *cut,
			  int cut_all, size_t u, size_t j)
{
	return j != u && (!group || group[j] == group[u]) &&
	       (cut_all || !cut || !cut[j]);
}

static int suspects_all_others(const struct profile *T, size_t n,
			       const uint32_t *group, const uint8_t *cut,
			       int cut_all, size_t u, uint32_t k)
{
	size_t j;

	for (j = 0; j < n; j++)
		if (suspects_voter(group, cut, cut_all, u, j) &&
		    !suspects_has(&T[j], k))
			return 0;
	return 1;
}

/* The first unit u of a kind of g units, in steady state into p (room for
 * T[u].n + T[o].n entries, o another unit of the kind, a voter): its
 * paths no other unit has out, the paths every other voter has and it
 * has not in (their mean values); *ndropped counts both. */
static void suspects_steady_one(const struct profile *T, size_t n,
				const uint32_t *group, const uint8_t *cut,
				int cut_all, size_t u, size_t o,
				struct profile *p, size_t *ndropped)
{
	size_t i, j, w = 0, g = 0;
	double ts = 0, cs = 0;

	for (i = 0; i < T[u].n; i++) {
		const struct profiles_entry *e = &T[u].e[i];
		int other = 0;

		for (j = 0; !other && j < n; j++)
			other = j != u && (!group || group[j] == group[u]) &&
				suspects_has(&T[j], e->k);
		if (!other && suspects_has(&T[u], e->k)) {
			(*ndropped)++;
			continue;
		}
		p->e[w++] = *e;
	}
	for (j = 0; j < n; j++)
		g += suspects_voter(group, cut, cut_all, u, j);
	for (i = 0; i < T[o].n; i++) {
		struct profiles_entry *e;
		uint32_t k = T[o].e[i].k;

		if (suspects_has(&T[u], k) || !suspects_has(&T[o], k) ||
		    !suspects_all_others(T, n, group, cut, cut_all, u, k))
			continue;
		e = &p->e[w++];
		*e = T[o].e[i];
		e->first_ts = INT64_MAX; /* never entered in u */
		e->cov = 1;
		e->time = e->comm = 0;
		for (j = 0; j < n; j++)
			if (suspects_voter(group, cut, cut_all, u, j)) {
				const struct profiles_entry *x =
					profiles_find(&T[j], k);

				e->time += x->time / (double)g;
				e->comm += x->comm / (double)g;
			}
		(*ndropped)++;
	}
	p->n = w;
	qsort(p->e, w, sizeof(*p->e), suspects_entry_cmp);
	for (i = 0; i < w; i++) {
		ts += p->e[i].time;
		cs += p->e[i].comm;
	}
	for (i = 0; i < w; i++) { /* renormalized */
		if (ts > 0)
			p->e[i].time /= ts;
		if (cs > 0)
			p->e[i].comm /= cs;
	}
}

int suspects_steady(const struct profile *T, size_t n, const uint32_t *group,
		    struct profile **out, size_t *ndropped)
{
	return suspects_steady_cut(T, n, group, NULL, out, ndropped);
}

int suspects_steady_cut(const struct profile *T, size_t n,
			const uint32_t *group, const uint8_t *cut,
			struct profile **out, size_t *ndropped)
{
	struct profile *p = calloc(n + 1, sizeof(*p));
	size_t u, first, g, o, j;
	int cut_all;

	*ndropped = 0;
	if (!p)
		return -ENOMEM;
	for (u = 0; u < n; u++) {
		p[u] = T[u];
		g = suspects_kind(n, group, u, &first);
		o = n; /* as it is */
		if (g >= SUSPECTS_STEADY_MIN && first == u) {
			/* the voters: the kind's complete units, else all */
			for (j = 0; cut && j < n &&
				    !suspects_voter(group, cut, 0, u, j);
			     j++)
				;
			cut_all = cut && j == n;
			for (o = u + 1;
			     o < n && !suspects_voter(group, cut, cut_all, u, o);
			     o++)
				;
		}
		p[u].e = malloc((T[u].n + (o < n ? T[o].n : 0) + 1) *
				sizeof(*p[u].e));
		if (!p[u].e) {
			profiles_free(p, u);
			return -ENOMEM;
		}
		if (o < n) {
			suspects_steady_one(T, n, group, cut, cut_all, u, o,
					    &p[u], ndropped);
		} else {
			memcpy(p[u].e, T[u].e, T[u].n * sizeof(*p[u].e));
			p[u].n = T[u].n;
		}
	}
	*out = p;
	return 0;
}

int suspects_rank(const struct profile *T, size_t n, const uint32_t *group,
		  int kind, size_t failstop, struct suspects_score *out)
{
	return suspects_rank_cut(T, n, group, kind, failstop, NULL, out);
}

int suspects_rank_cut(const struct profile *T, size_t n,
		      const uint32_t *group, int kind, size_t failstop,
		      const uint8_t *cut, struct suspects_score *out)
{
	struct profile *st = NULL;
	size_t nd;
	int err = suspects_steady_cut(T, n, group, cut, &st, &nd);

	if (!err)
		err = suspects_score_cut(st, n, group, NULL, 0, NULL, kind,
					 cut, out);
	if (!err && failstop != (size_t)-1)
		suspects_failstop_first(out, n, failstop);
	profiles_free(st, n);
	return err;
}

size_t suspects_unit_back(const struct trace *t, const uint32_t *unit_of,
			  size_t nunits, uint32_t ev)
{
	const struct trace_thread *th;
	size_t j;

	if (ev == TRACE_NONE || ev >= t->nev)
		return (size_t)-1;
	th = &t->th[t->ev[ev].thread];
	for (j = (size_t)ev + 1; j-- > th->first;)
		if (unit_of[j] != TRACE_NONE && unit_of[j] < nunits)
			return unit_of[j];
	return (size_t)-1;
}

int suspects_rank_flows(const struct trace *t, const struct flows *f,
			const struct profile *prof, int kind,
			struct rootcause_failstop *fs,
			struct suspects_score *out)
{
	uint32_t *kinds = NULL;
	uint8_t *cut = calloc(f->n + 1, 1);
	int err = cut ? 0 : -ENOMEM;

	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, fs);
	if (!err)
		err = flows_kinds(t, f, &kinds);
	if (!err && !f->per_process)
		err = suspects_cut(t, f, cut);
	if (!err)
		err = suspects_rank_cut(prof, f->n, kinds, kind,
					suspects_unit_back(
						t, f->of, f->n,
						rootcause_failstop_event(t, fs)),
					cut, out);
	free(kinds);
	free(cut);
	return err;
}
