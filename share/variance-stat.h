/*
 * share/variance-stat.h - VAIF's statistics (SoCC '21 sections 2.2-3.2),
 * one copy for the two that use them: the agent's controller under
 * `attach --adaptive` (inject/agent/adaptive.c, which links no libm) and
 * `propel report --variance` (analysis/variance.c).  Over a group of
 * units (flows of one path) with n units, durations summing to sd and
 * their squares to sdd:
 *   a problem   at least VARIANCE_MIN_UNITS units, and a coefficient of
 *               variation above VARIANCE_CV (VAIF's threshold) or a mean
 *               above the 95th percentile of all units (consistently slow);
 *   a share     of function f, whose own time sums to sx and its product
 *               with the unit's duration to sxd: cov(own_f, dur) /
 *               var(dur) -- the shares of a group sum to 1 when every
 *               unit's time is the sum of its functions' own times;
 *   the scale   of a group that is a problem by its CV alone: its shares
 *               are of the variance above the threshold's, 1 -
 *               (VARIANCE_CV / cv)^2 -- a group just over the threshold
 *               (a loaded host's jitter) explains little, one far over it
 *               (a 5 ms fault in 1 request of 20: cv ~5) keeps them whole;
 *   the floor   variation under VARIANCE_FLOOR_NS of standard deviation
 *               is no problem whatever the CV: a host's jitter (a wakeup,
 *               an interrupt, a neighbour's use of the caches) moves a
 *               request of a few microseconds by that much -- a clean
 *               nginx serving 4 KiB from its cache beside a J=2 test
 *               suite had cv 0.54-0.73 at a p95 of 17 us, and the function
 *               holding its work took 0.25 of it.  A group that is a
 *               problem by its CV has its shares of the variance above
 *               both thresholds' (the scale);
 *   the trim    the slowest VARIANCE_TRIM of a group's units are left
 *               out of its statistics: one preemption is an outlier, not
 *               a variance problem;
 *   noise       a share under VARIANCE_NOISE explains nothing: the report
 *               marks it so, and the controller deepens under none (a
 *               loaded host's preemptions give a quiet group's functions
 *               shares of up to ~0.2 between them).
 * Static inline, no sqrt: cv > c is var > c^2 mean^2.
 */
#ifndef PROPEL_SHARE_VARIANCE_STAT_H
#define PROPEL_SHARE_VARIANCE_STAT_H

#include <stddef.h>

#define VARIANCE_MIN_UNITS 30 /* a group's units, at least (VAIF: 30) */
#define VARIANCE_CV 0.1       /* VAIF's CV threshold */
#define VARIANCE_TRIM 0.01    /* the slowest 1% of a group: outliers */
#define VARIANCE_NOISE 0.2    /* a share under this explains nothing */
#define VARIANCE_FLOOR_NS 20000.0 /* a std dev under this: jitter */

static inline double variance_mean(size_t n, double sd)
{
	return n ? sd / (double)n : 0;
}

static inline double variance_var(size_t n, double sd, double sdd)
{
	double m = variance_mean(n, sd), v = n ? sdd / (double)n - m * m : 0;

	return v > 0 ? v : 0;
}

/* The variance a group may have and not be a problem by it: a cv of
 * VARIANCE_CV, or a standard deviation of VARIANCE_FLOOR_NS (ns units). */
static inline double variance_quiet_var(double mean)
{
	double c = VARIANCE_CV * VARIANCE_CV * mean * mean;

	return c > VARIANCE_FLOOR_NS * VARIANCE_FLOOR_NS
		       ? c
		       : VARIANCE_FLOOR_NS * VARIANCE_FLOOR_NS;
}

/* cv above VARIANCE_CV, and a standard deviation above the floor */
static inline int variance_high_cv(double mean, double var)
{
	return var > 0 && mean > 0 && var > variance_quiet_var(mean);
}

/* 1 when a group is a problem: enough units, high cv or slow */
static inline int variance_problem(size_t n, double mean, double var,
				   double p95)
{
	return n >= VARIANCE_MIN_UNITS &&
	       (variance_high_cv(mean, var) || mean > p95);
}

/* The factor of a problem group's shares: 1 when slow, else the part of
 * its variance above the quiet one's, 1 - quiet / var (with the cv's
 * threshold: 1 - (VARIANCE_CV / cv)^2). */
static inline double variance_scale(double mean, double var, double p95)
{
	if (mean > p95)
		return 1;
	if (!variance_high_cv(mean, var))
		return 0;
	return 1 - variance_quiet_var(mean) / var;
}

/* cov(own, dur) / var(dur) over n units */
static inline double variance_share(size_t n, double sx, double sxd,
				    double mean, double var)
{
	if (!n || var <= 0)
		return 0;
	return (sxd / (double)n - sx / (double)n * mean) / var;
}

#endif
