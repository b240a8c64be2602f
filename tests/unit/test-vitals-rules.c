/*
 * tests/unit/test-vitals-rules.c - chopstix §3.2 rules on synthetic epochs
 * (analysis/vitals-rules.c is pure, so no kernel is needed): rule 1 by
 * demand (a spinner squeezed to 25% of a core by others still counts),
 * rule 3 (unsatisfied block requests), rule 9 with and without a cache-miss
 * counter (initialization vs increasing load; a process seen since the
 * first epoch has no known age), rule 2 (a leak: allocation without pause
 * for leak_epochs epochs, flagged in the epoch that completes them, not
 * one later), and that none of them fires on a process that only does
 * ordinary work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/vitals-rules.h"
#include "tests/unit/check.h"

#define NEP 6

static struct vitals_rules_epoch *epochs(void)
{
	struct vitals_rules_epoch *ep = calloc(NEP, sizeof(*ep));
	int i;

	for (i = 0; i < NEP; i++) {
		ep[i].start_ns = (uint64_t)i * 1000000000ull;
		ep[i].end_ns = ep[i].start_ns + 1000000000ull;
		ep[i].ncpus = 2;
		ep[i].procs = calloc(8, sizeof(*ep[i].procs));
	}
	return ep;
}

static struct vitals_rules_proc *proc(struct vitals_rules_epoch *e,
				      uint32_t pid, const char *comm)
{
	struct vitals_rules_proc *p = &e->procs[e->nprocs++];

	p->pid = pid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	return p;
}

/* Does a flag of `rule` exist for pid in epoch k (k < 0: any epoch)? */
static int has(const struct vitals_rules_flag *f, size_t n, const char *rule,
	       uint32_t pid, int k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(f[i].rule, rule) && f[i].pid == pid &&
		    (k < 0 || (int)f[i].epoch == k))
			return 1;
	return 0;
}

int main(void)
{
	CHECKS_EXPECT(10);
	struct vitals_rules_epoch *ep = epochs();
	struct vitals_rules_flag *f = NULL;
	struct vitals_rules_opts o;
	size_t n = 0;
	int i;

	vitals_rules_defaults(&o);
	for (i = 0; i < NEP; i++) {
		struct vitals_rules_proc *p;

		/* pid 10: spins at 25% of a core, waits to run 70% */
		p = proc(&ep[i], 10, "spinner");
		p->v[VR_CPU] = 250;
		p->v[VR_SCHED] = 700000;
		/* pid 20: a disk whose requests come back short */
		p = proc(&ep[i], 20, "reader");
		p->v[VR_BLKIO] = 800;
		p->blkio_reqs = 100;
		p->short_io = i == 3 ? 7 : 0;
		p->v[VR_CPU] = 20;
		/* pid 30: a server running from the start, faulting in pages
		 * while its cpu grows in epoch 4 */
		p = proc(&ep[i], 30, "server");
		p->v[VR_CPU] = i == 4 ? 400 : 100;
		p->v[VR_UMEM] = i == 4 || i == 0 ? 5000 : 10;
		p->v[VR_SYSCALL] = 5000;
		p->v[VR_KMEM] = 500;
		/* pid 40: born in epoch 2, touching its pages at once */
		if (i >= 2) {
			p = proc(&ep[i], 40, "young");
			p->v[VR_CPU] = 50;
			p->v[VR_UMEM] = i == 2 ? 8000 : 5;
		}
		/* pid 50: ordinary work */
		p = proc(&ep[i], 50, "quiet");
		p->v[VR_CPU] = 100;
		p->v[VR_SYSCALL] = 2000;
		p->v[VR_KMEM] = 100;
		p->v[VR_UMEM] = 50;
		/* pid 60: allocates 300 pages/s from the first epoch on */
		p = proc(&ep[i], 60, "leaker");
		p->v[VR_CPU] = 30;
		p->v[VR_UMEM] = 300;
	}
	if (vitals_rules_run(ep, NEP, &o, &f, &n)) {
		printf("FAIL vitals-rules-run: error\n");
		return 1;
	}
	for (i = 0; i < (int)n; i++)
		printf("# epoch %zu pid %u %s: %s\n", f[i].epoch, f[i].pid,
		       f[i].rule, f[i].why);

	CHECK("vitals-rules-1-demand", has(f, n, "busy-loop", 10, -1),
	      "a spinner at 25%% of a core, runnable 95%%, not flagged");
	CHECK("vitals-rules-1-not-quiet", !has(f, n, "busy-loop", 50, -1),
	      "ordinary work flagged as a busy loop");
	CHECK("vitals-rules-3", has(f, n, "bad-blocks", 20, 3) &&
				     !has(f, n, "bad-blocks", 20, 2),
	      "short requests in epoch 3 only");
	CHECK("vitals-rules-9-init-noL2", has(f, n, "initialization", 40, 2),
	      "a process born in epoch 2 touching 8000 pages/s");
	CHECK("vitals-rules-9-load-noL2",
	      has(f, n, "increasing-load", 30, 4) &&
		      !has(f, n, "initialization", 30, -1),
	      "the server's faults under growing cpu");
	CHECK("vitals-rules-9-first-epoch",
	      !has(f, n, "initialization", 30, 0) &&
		      !has(f, n, "increasing-load", 30, 0),
	      "a process of unknown age judged in the first epoch");
	CHECK("vitals-rules-9-quiet", !has(f, n, "initialization", 50, -1) &&
				       !has(f, n, "increasing-load", 50, -1),
	      "ordinary work flagged by rule 9");
	CHECK("vitals-rules-2-leak", has(f, n, "leak", 60, 3) &&
					     !has(f, n, "leak", 60, 2),
	      "300 pages/s in epochs 0-3: want a leak flagged in epoch 3 "
	      "(the fourth), not before");
	free(f);

	/* with a cache-miss counter, rule 9 reads l2miss instead of age */
	o.have_l2 = 1;
	for (i = 0; i < NEP; i++) {
		size_t j;

		for (j = 0; j < ep[i].nprocs; j++) {
			if (ep[i].procs[j].pid == 30)
				ep[i].procs[j].v[VR_L2MISS] = 90000;
			if (ep[i].procs[j].pid == 40)
				ep[i].procs[j].v[VR_L2MISS] = 100;
		}
	}
	if (vitals_rules_run(ep, NEP, &o, &f, &n)) {
		printf("FAIL vitals-rules-run-l2: error\n");
		return 1;
	}
	CHECK("vitals-rules-9-init-L2", has(f, n, "initialization", 40, 2),
	      "faults with few misses are initialization");
	CHECK("vitals-rules-9-load-L2", has(f, n, "increasing-load", 30, 4),
	      "faults with many misses are load");
	free(f);
	vitals_rules_epochs_free(ep, NEP);
	return failures ? 1 : 0;
}
