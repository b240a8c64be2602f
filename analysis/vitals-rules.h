/*
 * analysis/vitals-rules.h - the symptom rules of chopstix §3.2 and an EWMA
 * anomaly detector, as pure functions over epochs of per-process vital
 * values held in memory (no I/O: the caller loads them from the session).
 *
 * Rules implemented (the numbering of the paper):
 *   1 busy-loop        high cpu, low l2miss (where there is no cache-miss
 *                      counter: no syscalls and no page allocation either);
 *                      "high" is the demand, cpu + time waiting to run, so
 *                      that a spinner squeezed by others still counts
 *   2 leak             user or kernel pages allocated in every one of
 *                      >= leak_epochs consecutive epochs, at a steady rate
 *   3 bad-blocks       block requests answered with fewer bytes than asked
 *                      for, or with an error (unsatisfied I/O)
 *   4 kernel-bottleneck processes' cpu low, their sched delay high, system
 *                      cpu high
 *   5 blocking         block high; attributed to blkio, lock or sock of the
 *                      same process (or "unattributed")
 *   6 memory-pressure  umem, block and blkio high for one process
 *   7 held             cpu low, sched high: normal (fair share) when the
 *                      system's cpu is high, abnormal when it is low
 *   8 syscall-loop     many syscalls, few kernel pages per call
 *   9 initialization / high umem with low l2miss is a program initializing,
 *     increasing-load  with high l2miss growing load; where there is no
 *                      cache-miss counter the process's age stands in for
 *                      l2miss: in its first init_epochs it is initializing,
 *                      later with rising cpu it is taking more load
 *  10 death            a process's vitals vanish; its signals are quoted
 *   ewma               a vital's system total far above its moving average
 * Called by tui/cmd-vitals.c and the view.
 */
#ifndef PROPEL_ANALYSIS_VITALS_RULES_H
#define PROPEL_ANALYSIS_VITALS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "share/kinds.h"

/* The vital ids (share/kinds.h) by the rules' names. */
#define VR_CPU PROPEL_VITAL_CPU
#define VR_L2MISS PROPEL_VITAL_L2MISS
#define VR_SCHED PROPEL_VITAL_SCHED
#define VR_BLOCK PROPEL_VITAL_BLOCK
#define VR_BLKIO PROPEL_VITAL_BLKIO
#define VR_KMEM PROPEL_VITAL_KMEM
#define VR_UMEM PROPEL_VITAL_UMEM
#define VR_SYSCALL PROPEL_VITAL_SYSCALL
#define VR_SIGNAL PROPEL_VITAL_SIGNAL
#define VR_SOCK PROPEL_VITAL_SOCK
#define VR_LOCK PROPEL_VITAL_LOCK
#define VR_NR PROPEL_VITAL_NR

struct vitals_rules_proc {
	uint32_t pid;
	char comm[16];
	double v[VR_NR]; /* the epoch's values, units of kmod/vitals.h */
	double blkio_reqs;  /* block requests issued (count of blkio) */
	double short_io;    /* of which answered short or with an error */
};

struct vitals_rules_epoch {
	uint64_t start_ns, end_ns;
	unsigned ncpus;
	struct vitals_rules_proc *procs;
	size_t nprocs;
};

struct vitals_rules_opts {
	double cpu_hz;       /* ticks per second of the cpu vital (1000) */
	int have_l2;         /* the l2miss vital was collected */
	double busy_cpu;     /* share of one core that is "high" (0.3) */
	double block_frac;   /* share of the epoch blocked that is high (0.1) */
	double sched_frac;   /* share of the epoch waiting that is high (0.3) */
	double syscall_rate; /* calls per second that are many (20000) */
	int leak_epochs;     /* consecutive epochs of allocation (4) */
	double leak_pages;   /* pages per second that count (100) */
	double ewma_alpha;   /* 0.3 */
	double ewma_k;       /* deviations above the mean (3) */
	int ewma_warmup;     /* epochs before it may flag (5) */
	double umem_rate;    /* user page faults per second that are high
				(rule 9: 2000) */
	int init_epochs;     /* rule 9 without l2miss: a process this young
				is initializing (3) */
};

struct vitals_rules_flag {
	char rule[20]; /* "busy-loop", "leak", ... */
	size_t epoch;  /* index into the epochs given */
	uint32_t pid;  /* 0 for a system-wide flag */
	char comm[16];
	char why[256];
};

/* "cpu", "l2miss", ... <-> VR_*; -1 / "?" when unknown. */
int vitals_rules_vital(const char *name);
const char *vitals_rules_name(int vital);

/*
 * Build epochs from a flat list of (epoch index, vital name, pid, comm,
 * value) rows is the caller's job; this frees what such a caller built.
 */
void vitals_rules_epochs_free(struct vitals_rules_epoch *ep, size_t n);

/* Fill *opts with the defaults. */
void vitals_rules_defaults(struct vitals_rules_opts *opts);

/*
 * Run every rule over n epochs (in time order).  *out is a malloc'd array
 * of *nout flags in epoch order; 0 or -ENOMEM.
 */
int vitals_rules_run(const struct vitals_rules_epoch *ep, size_t n,
		     const struct vitals_rules_opts *opts,
		     struct vitals_rules_flag **out, size_t *nout);

#endif
