/*
 * analysis/variance.c - VAIF's groups and shares (variance.h).  A group is
 * the units of one path; it is a problem when it has VARIANCE_MIN_UNITS
 * units and its coefficient of variation exceeds VARIANCE_CV or its mean
 * is above the 95th percentile of all units (VAIF's consistently slow);
 * the statistics are share/variance-stat.h's, which the agent's
 * controller (inject/agent/adaptive.c) uses too.
 * Within a problem group, after leaving out its slowest VARIANCE_TRIM
 * (a single preemption is an outlier, not a variance problem), function
 * f's share is cov(own_f, dur) / var(dur): the shares of the functions
 * sum to 1 when every unit's time is the sum of their own times, a
 * function whose time does not move with the unit's has none.  In a group
 * that is a problem by its CV alone, the shares are of the variance above
 * the threshold's, each scaled by 1 - (VARIANCE_CV / cv)^2: a group just
 * over the threshold (a loaded host's jitter: cv 0.106 spread over four
 * stage functions gave each a quarter) explains little, one far over it
 * (a 5 ms fault in 1 request of 20: cv 5.4) keeps its shares whole.
 * A function traced late (attach --adaptive deepens as it goes) is judged
 * over the group's units since, with their own mean, variance and scale.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/variance.h"

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int u32_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct variance_unit *u = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (u[x].path != u[y].path)
		return u[x].path < u[y].path ? -1 : 1;
	return u[x].dur_ns < u[y].dur_ns ? -1 : u[x].dur_ns > u[y].dur_ns;
}

static int share_cmp(const void *a, const void *b)
{
	double x = ((const struct variance_func *)a)->share,
	       y = ((const struct variance_func *)b)->share;

	return x > y ? -1 : x < y;
}

static int start_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct variance_unit *u = arg;
	int64_t x = u[*(const size_t *)a].start_ns, y = u[*(const size_t *)b].start_ns;

	return x < y ? -1 : x > y;
}

/* Over the units of [lo, hi) that began at from or later (by is their
 * indices by start, sum and sq the suffix sums of their durations and
 * squares): n, mean, var into *n, *mean, *var. */
static void group_since(const struct variance_unit *u, const size_t *by,
			const double *sum, const double *sq, size_t n0,
			int64_t from, size_t *n, double *mean, double *var)
{
	size_t a = 0, b = n0;

	while (a < b) { /* the first that began at from or later */
		size_t m = (a + b) / 2;

		if (u[by[m]].start_ns < from)
			a = m + 1;
		else
			b = m;
	}
	*n = n0 - a;
	*mean = variance_mean(*n, sum[a]);
	*var = variance_var(*n, sum[a], sq[a]);
}

/* The shares of group [lo, hi) of idx into best (per function); a
 * function traced late (from_ns) over the units since. */
static void group_shares(const struct variance_unit *u, const size_t *idx,
			 size_t lo, size_t hi, double *sx, double *sxd,
			 struct variance_func *best, size_t gi, uint32_t nfunc,
			 double p95, const int64_t *from_ns, size_t *by,
			 double *sum, double *sq)
{
	size_t n = hi - lo;
	double sd = 0, sdd = 0, mean, var, scale;

	for (size_t i = lo; i < hi; i++) {
		double d = (double)u[idx[i]].dur_ns;

		sd += d;
		sdd += d * d;
	}
	mean = variance_mean(n, sd);
	var = variance_var(n, sd, sdd);
	if (var <= 0)
		return;
	scale = variance_scale(mean, var, p95);
	if (from_ns) { /* the units by start, suffix sums of dur and dur^2 */
		for (size_t i = 0; i < n; i++)
			by[i] = idx[lo + i];
		qsort_r(by, n, sizeof(*by), start_idx_cmp, (void *)u);
		sum[n] = sq[n] = 0;
		for (size_t i = n; i-- > 0;) {
			double d = (double)u[by[i]].dur_ns;

			sum[i] = sum[i + 1] + d;
			sq[i] = sq[i + 1] + d * d;
		}
	}
	memset(sx, 0, nfunc * sizeof(*sx));
	memset(sxd, 0, nfunc * sizeof(*sxd));
	for (size_t i = lo; i < hi; i++) {
		const struct variance_unit *x = &u[idx[i]];

		for (size_t k = 0; k < x->nown; k++) {
			uint32_t f = x->own[k].func;

			if (f >= nfunc ||
			    (from_ns && from_ns[f] > 0 && x->start_ns < from_ns[f]))
				continue;
			sx[f] += (double)x->own[k].ns;
			sxd[f] += (double)x->own[k].ns * (double)x->dur_ns;
		}
	}
	for (uint32_t f = 0; f < nfunc; f++) {
		double s, fm = mean, fv = var, fs = scale;
		size_t fn = n;

		if (!sx[f])
			continue;
		if (from_ns && from_ns[f] > 0) {
			group_since(u, by, sum, sq, n, from_ns[f], &fn, &fm, &fv);
			if (fn < VARIANCE_MIN_UNITS || fv <= 0)
				continue; /* too few units since: no share */
			fs = variance_scale(fm, fv, p95);
		}
		s = fs * variance_share(fn, sx[f], sxd[f], fm, fv);
		if (s > best[f].share) {
			best[f].share = s;
			best[f].group = gi;
		}
	}
}

int variance_analyze(const struct variance_unit *u, size_t n, uint32_t nfunc,
		     const int64_t *from_ns, struct variance *out)
{
	size_t *idx = malloc((n + 1) * sizeof(*idx));
	size_t *by = from_ns ? malloc((n + 1) * sizeof(*by)) : NULL;
	double *sum = from_ns ? malloc((n + 1) * sizeof(*sum)) : NULL;
	double *sq = from_ns ? malloc((n + 1) * sizeof(*sq)) : NULL;
	int64_t *d = malloc((n + 1) * sizeof(*d));
	double *sx = calloc(nfunc + 1, sizeof(*sx));
	double *sxd = calloc(nfunc + 1, sizeof(*sxd));
	struct variance_func *best = calloc(nfunc + 1, sizeof(*best));
	int64_t p95 = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!idx || !d || !sx || !sxd || !best ||
	    (from_ns && (!by || !sum || !sq)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		idx[i] = i;
		d[i] = u[i].dur_ns;
	}
	if (n) {
		qsort(d, n, sizeof(*d), i64_cmp);
		p95 = d[n * 95 / 100];
	}
	qsort_r(idx, n, sizeof(*idx), u32_idx_cmp, (void *)u);
	out->g = calloc(n + 1, sizeof(*out->g));
	if (!out->g)
		goto out;
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		struct variance_group *g = &out->g[out->ng];
		double sd = 0, sdd = 0, var;
		size_t keep;

		for (hi = lo; hi < n && u[idx[hi]].path == u[idx[lo]].path; hi++)
			;
		g->path = u[idx[lo]].path;
		g->n = hi - lo;
		g->p95_ns = u[idx[lo + (hi - lo) * 95 / 100]].dur_ns;
		/* sorted by duration within the group: the trim is its top */
		keep = g->n - (size_t)(g->n * VARIANCE_TRIM);
		for (size_t i = lo; i < lo + keep; i++) {
			sd += (double)u[idx[i]].dur_ns;
			sdd += (double)u[idx[i]].dur_ns * u[idx[i]].dur_ns;
		}
		g->mean_ns = variance_mean(keep, sd);
		var = variance_var(keep, sd, sdd);
		g->cv = var > 0 && g->mean_ns > 0 ? sqrt(var) / g->mean_ns : 0;
		g->problem = variance_problem(g->n, g->mean_ns, var, (double)p95);
		if (g->problem)
			group_shares(u, idx, lo, lo + keep, sx, sxd, best,
				     out->ng, nfunc, (double)p95, from_ns, by,
				     sum, sq);
		out->ng++;
	}
	out->f = calloc(nfunc + 1, sizeof(*out->f));
	if (!out->f)
		goto out;
	for (uint32_t f = 0; f < nfunc; f++)
		if (best[f].share > 0) {
			out->f[out->nf] = best[f];
			out->f[out->nf++].func = f;
		}
	qsort(out->f, out->nf, sizeof(*out->f), share_cmp);
	err = 0;
out:
	free(idx);
	free(by);
	free(sum);
	free(sq);
	free(d);
	free(sx);
	free(sxd);
	free(best);
	if (err)
		variance_release(out);
	return err;
}

void variance_release(struct variance *v)
{
	free(v->g);
	free(v->f);
	memset(v, 0, sizeof(*v));
}
