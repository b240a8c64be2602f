/*
 * analysis/suspects.c - see analysis/suspects.h.  O(|T|^2 + |T||N|)
 * distances, each a merge of two sparse vectors.
 */
#include <errno.h>
#include <stdlib.h>

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
	struct suspects_nb *nb;
	size_t h, i, r;

	if (!k)
		k = suspects_k(n);
	if (k > (n ? n - 1 : 0))
		k = n ? n - 1 : 0;
	nb = malloc((n + 1) * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (h = 0; h < n; h++) {
		size_t c = 0;

		out[h].score = 0;
		out[h].nb_ref = -1;
		out[h].nb = 0;
		for (i = 0; i < n; i++)
			if (i != h) {
				nb[c].d = profiles_distance(&T[h], &T[i], kind);
				nb[c++].i = i;
			}
		qsort(nb, c, sizeof(*nb), suspects_nb_cmp);
		if (k >= 1 && c >= k) {
			out[h].score = nb[k - 1].d; /* h_k */
			out[h].nb = nb[k - 1].i;
			out[h].nb_ref = 0;
		}
		for (i = 0; i < m; i++) { /* n_1 */
			double d = profiles_distance(&T[h], &N[i], kind);

			if (out[h].nb_ref < 0 || d < out[h].score) {
				out[h].score = d;
				out[h].nb = i;
				out[h].nb_ref = 1;
			}
		}
	}
	free(nb);
	/* ranks: by score, descending; ties by index */
	for (h = 0; h < n; h++) {
		r = 1;
		for (i = 0; i < n; i++)
			if (out[i].score > out[h].score ||
			    (out[i].score == out[h].score && i < h))
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
