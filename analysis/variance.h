/*
 * analysis/variance.h - VAIF's analysis (SoCC '21 sections 2.2-3.2) over
 * units of work (flows): groups of identical paths, their coefficient of
 * variation and tail, and the share of a problem group's latency variance
 * each function's own time explains.  Pure: engine/variance.c feeds it a
 * session's flows, `propel report --variance` prints it.
 */
#ifndef PROPEL_ANALYSIS_VARIANCE_H
#define PROPEL_ANALYSIS_VARIANCE_H

#include <stddef.h>
#include <stdint.h>

#include "share/variance-stat.h" /* VARIANCE_MIN_UNITS, _CV, _TRIM, _NOISE */


struct variance_own {
	uint32_t func; /* the caller's function id */
	int64_t ns;    /* its own time in the unit */
};

struct variance_unit {
	uint32_t path;   /* the caller's path id (identical paths, one id) */
	int64_t start_ns; /* when it began */
	int64_t dur_ns;
	const struct variance_own *own;
	size_t nown;
};

struct variance_group {
	uint32_t path;
	size_t n;
	double mean_ns, cv;
	int64_t p95_ns;
	int problem; /* cv above VARIANCE_CV, or mean above all units' p95 */
};

struct variance_func {
	uint32_t func;
	double share;   /* of its problem group's variance (the largest) */
	size_t group;   /* that group's index */
};

struct variance {
	struct variance_group *g;
	size_t ng;
	struct variance_func *f; /* sorted by share, descending */
	size_t nf;
};

/* 0 or -ENOMEM; nfunc bounds the function ids.  from_ns (NULL: none):
 * per function, when it began to be traced (0: from the start): its share
 * is taken over its group's units that began since, as many as
 * VARIANCE_MIN_UNITS at least (the units before held none of its time,
 * untraced, not unspent -- and, with less instrumentation, were faster:
 * a function attach --adaptive traced 16 s into a clean nginx took 0.29
 * of a group's variance, the noise line 0.2). */
int variance_analyze(const struct variance_unit *u, size_t n, uint32_t nfunc,
		     const int64_t *from_ns, struct variance *out);
void variance_release(struct variance *v);

#endif
