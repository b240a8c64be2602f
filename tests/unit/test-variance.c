/*
 * tests/unit/test-variance.c - share/variance-stat.h (the statistics the
 * agent's --adaptive controller and `report --variance` share) and
 * analysis/variance.c over made-up units: a group whose one function
 * costs 5 ms more in 1 unit of 20 is a problem and that function's share
 * is about 1, the others' about 0; a group with a jitter just over the
 * CV threshold is a problem whose shares the scale 1 - (0.1/cv)^2 makes
 * small; a quiet group is no problem; a group under VARIANCE_MIN_UNITS
 * is none whatever its CV; a group slower than the 95th percentile of
 * all units is a problem with its shares unscaled; a function traced only
 * from the middle of the units on (attach --adaptive deepening), at a
 * steady time, takes a share from the step its tracing made (0.4) unless
 * it is judged over the units since it was traced (0).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/variance.h"

#include "tests/unit/check.h"

static void test_stat(void)
{
	/* durations 1, 1, 1, 3 ms: mean 1.5 ms, var 0.75 ms^2 (in ns) */
	const double M = 1.5e6, V = 7.5e11;
	double sd = 6e6, sdd = 1e12 * 3 + 9e12;

	CHECK("stat/mean-var",
	      variance_mean(4, sd) == M && fabs(variance_var(4, sd, sdd) - V) < 1,
	      "mean %g var %g", variance_mean(4, sd), variance_var(4, sd, sdd));
	/* cv = sqrt(0.75) / 1.5 = 0.577 */
	CHECK("stat/high-cv", variance_high_cv(M, V) &&
			      !variance_high_cv(M, 0.01 * M * M * 0.99),
	      "cv 0.577 not high, or cv 0.0995 high");
	CHECK("stat/problem", !variance_problem(29, M, V, 1e12) &&
			      variance_problem(30, M, V, 1e12) &&
			      !variance_problem(30, M, 1, 1e12) &&
			      variance_problem(30, M, 1, 10),
	      "units, cv or slowness misjudged");
	/* cv 0.577: 1 - (0.1 / 0.577)^2 = 0.97; slow: 1 */
	CHECK("stat/scale", fabs(variance_scale(M, V, 1e12) - 0.97) < 1e-9 &&
			    variance_scale(M, V, 10) == 1 &&
			    variance_scale(M, 1, 1e12) == 0,
	      "scale %g", variance_scale(M, V, 1e12));
	/* the same cv at 15 us (std dev 8.7 us, under the floor): jitter;
	 * at 150 us (87 us) a problem whose shares are of the variance
	 * above the floor's, 1 - 20^2 / 87^2 = 0.947 */
	CHECK("stat/floor", !variance_high_cv(M / 100, V / 1e4) &&
			    !variance_problem(30, M / 100, V / 1e4, 1e12) &&
			    variance_scale(M / 100, V / 1e4, 1e12) == 0 &&
			    variance_high_cv(M / 10, V / 100) &&
			    fabs(variance_scale(M / 10, V / 100, 1e12) -
				 (1 - 4e8 / 7.5e9)) < 1e-9,
	      "cv 0.577 at 15 us a problem, or at 150 us scaled %g",
	      variance_scale(M / 10, V / 100, 1e12));
	/* own time equal to the duration: all of the variance */
	CHECK("stat/share", fabs(variance_share(4, sd, sdd, M, V) - 1) < 1e-9,
	      "share %g", variance_share(4, sd, sdd, M, V));
}

#define N 400
#define U 100 /* ns per unit of the durations below (0.4 ms a function) */

static struct variance_unit u[N];
static struct variance_own own[N][3];

/* unit i of path p: functions f0..f2 of path p, base ns each, f1 plus
 * extra */
static void unit_set(size_t i, uint32_t p, int64_t base, int64_t extra)
{
	for (int k = 0; k < 3; k++) {
		own[i][k].func = p * 3 + (uint32_t)k;
		own[i][k].ns = base + (k == 1 ? extra : 0);
	}
	u[i].path = p;
	u[i].own = own[i];
	u[i].nown = 3;
	u[i].dur_ns = 3 * base + extra;
}

static const struct variance_group *group_of(const struct variance *v,
					     uint32_t path)
{
	for (size_t i = 0; i < v->ng; i++)
		if (v->g[i].path == path)
			return &v->g[i];
	return NULL;
}

static double share_of(const struct variance *v, uint32_t func)
{
	for (size_t i = 0; i < v->nf; i++)
		if (v->f[i].func == func)
			return v->f[i].share;
	return 0;
}

static void test_analyze(void)
{
	struct variance v;
	const struct variance_group *g0, *g1, *g2, *g3;
	int err;

	/* path 0: the fault (5 ms in 1 of 20) in f1; 100 units */
	for (size_t i = 0; i < 100; i++)
		unit_set(i, 0, 4000 * U, i % 20 == 7 ? 5000000 : 0);
	/* path 1: jitter, cv just over 0.1 (f1 +-1300 of 12000) */
	for (size_t i = 100; i < 300; i++)
		unit_set(i, 1, 4000 * U, i % 2 ? 1300 * U : -1300 * U);
	/* path 2: quiet */
	for (size_t i = 300; i < 380; i++)
		unit_set(i, 2, 4000 * U, (int64_t)(i % 3) * U);
	/* path 3: too few units, high cv */
	for (size_t i = 380; i < N; i++)
		unit_set(i, 3, 4000 * U, i % 2 ? 4000 * U : 0);
	err = variance_analyze(u, N, 12, NULL, &v);
	CHECK("analyze/ok", !err && v.ng == 4, "err %d ng %zu", err, v.ng);
	if (err)
		return;
	g0 = group_of(&v, 0);
	g1 = group_of(&v, 1);
	g2 = group_of(&v, 2);
	g3 = group_of(&v, 3);
	CHECK("analyze/problems", g0 && g0->problem && g1 && g1->problem &&
					  g2 && !g2->problem && g3 && !g3->problem,
	      "problems %d %d %d %d", g0 && g0->problem, g1 && g1->problem,
	      g2 && g2->problem, g3 && g3->problem);
	CHECK("analyze/fault-first", v.nf && v.f[0].func == 1 &&
					     v.f[0].share > 0.9 &&
					     share_of(&v, 0) < 0.05 &&
					     share_of(&v, 2) < 0.05,
	      "first %u %g", v.nf ? v.f[0].func : 0, v.nf ? v.f[0].share : 0);
	/* cv 2600/2/12000 = 0.108: scale 1 - (0.1/0.108)^2 ~ 0.15 */
	CHECK("analyze/jitter-scaled", share_of(&v, 4) < VARIANCE_NOISE &&
					       share_of(&v, 4) > 0,
	      "share %g cv %g", share_of(&v, 4), g1->cv);
	variance_release(&v);
}

/* 200 units of one path by start: f0 jitters +-1500, f1 steady, f2
 * traced from unit 100 on (0 before: untraced) at a steady 3000 */
static void test_late(void)
{
	static struct variance_unit lu[200];
	static struct variance_own lo[200][3];
	int64_t from[3] = { 0, 0, 100 * 1000 };
	struct variance v;
	double without, with, f0;
	int err;

	for (size_t i = 0; i < 200; i++) {
		lo[i][0] = (struct variance_own){ 0, (4000 + (i % 2 ? 1500 : -1500)) * U };
		lo[i][1] = (struct variance_own){ 1, 4000 * U };
		lo[i][2] = (struct variance_own){ 2, i < 100 ? 0 : 3000 * U };
		lu[i] = (struct variance_unit){ .path = 0, .start_ns = (int64_t)i * 1000,
						.own = lo[i], .nown = 3 };
		lu[i].dur_ns = lo[i][0].ns + lo[i][1].ns + lo[i][2].ns;
	}
	err = variance_analyze(lu, 200, 3, NULL, &v);
	without = err ? -1 : share_of(&v, 2);
	if (!err)
		variance_release(&v);
	err = err ? err : variance_analyze(lu, 200, 3, from, &v);
	with = err ? -1 : share_of(&v, 2);
	f0 = err ? -1 : share_of(&v, 0);
	CHECK("analyze/traced-late",
	      !err && without > VARIANCE_NOISE && with >= 0 && with < 0.05 &&
		      f0 > 0.3,
	      "f2 %g without its start, %g with; f0 %g", without, with, f0);
	if (!err)
		variance_release(&v);
}

int main(void)
{
	CHECKS_EXPECT(11);
	test_stat();
	test_analyze();
	test_late();
	return failures ? 1 : 0;
}
