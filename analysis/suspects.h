/*
 * analysis/suspects.h - suspect scores (anomaly-diagnosis §4.2.2).
 *
 * Unsupervised: the score of h in T is its distance to its k-th nearest
 * neighbour in T (itself excluded), k = |T|/4 (at least 1, at most
 * |T| - 1): a profile needs k close neighbours to score low (eq. 4).
 * One-class, with reference profiles N (known-good runs, or earlier
 * unrelated failures, which then stop generic symptoms from scoring):
 * min(d(h, h_k), d(h, n_1)) (eq. 6).  A lone profile without reference
 * scores 0.  Rank 1 is the highest score; ties keep the units' order.
 * Each score names the neighbour that set it (the one the delta vector is
 * taken against, §5.2).  Pure.
 */
#ifndef PROPEL_ANALYSIS_SUSPECTS_H
#define PROPEL_ANALYSIS_SUSPECTS_H

#include <stddef.h>

#include "analysis/profiles.h"

struct suspects_score {
	double score;
	size_t nb;	/* neighbour that set the score (index in T or N) */
	int nb_ref;	/* 1: nb indexes N; -1: no neighbour */
	size_t rank;	/* 1 = most suspect */
};

/* k for |T| = n: n / 4, clamped to [1, n - 1] (0 when n < 2). */
size_t suspects_k(size_t n);

/*
 * Scores of the n profiles of T against T and the m profiles of N (m may
 * be 0), with k (0: suspects_k(n)).  out has n entries.  0 or -ENOMEM.
 */
int suspects_score(const struct profile *T, size_t n, const struct profile *N,
		   size_t m, int kind, size_t k, struct suspects_score *out);

/* The index of T's profile nearest to T[a] other than a (n < 2: n). */
size_t suspects_nearest(const struct profile *T, size_t n, size_t a, int kind);

#endif
