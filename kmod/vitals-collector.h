/*
 * kmod/vitals-collector.h - the user-side API of the vital-sign collector,
 * implemented by kmod/vitals.c (eBPF, the normal case) and kmod/vitals-proc.c
 * (the coarser /proc-polling fallback used where BPF is refused).
 *
 * Life cycle:  vitals_open -> (vitals_poll)* -> vitals_flush -> vitals_close.
 * vitals_poll() sleeps until the epoch's end (or timeout_ms, or the
 * kernel's sample ring is half full, or vitals_wake()), hands each sample
 * to ops->sample, and when the epoch is over swaps the double-buffered
 * kernel state and hands the finished epoch to ops->epoch: one wake-up per
 * epoch in the common case, none per event.  One thread drives a
 * collector; callbacks run on that thread (vitals_wake may be called from
 * any).  Times are CLOCK_REALTIME ns.
 */
#ifndef PROPEL_KMOD_VITALS_COLLECTOR_H
#define PROPEL_KMOD_VITALS_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "kmod/vitals.h"

/* The names used by reports and the session: cpu, l2miss, sched, ... */
const char *vitals_name(int vital);
/* -1 when unknown */
int vitals_lookup(const char *name);
/* The unit of a vital's value ("ticks", "us", ...). */
const char *vitals_unit(int vital);

enum vitals_state {
	VITALS_OFF = 0, /* not collected; vitals_status says why */
	VITALS_ON = 1,
	VITALS_COARSE = 2, /* /proc fallback: per-process totals, no samples */
};

struct vitals_row {
	uint32_t tgid;
	uint32_t uid;
	uint16_t vital;
	char comm[VITALS_COMM_LEN];
	uint64_t value, count, aux;
	uint64_t short_io; /* blkio: requests answered with less than asked */
};

struct vitals_epoch {
	uint32_t seq;
	uint64_t start_ns, end_ns;
	const char *source; /* "bpf" or "proc" */
	struct vitals_row *rows;
	size_t nrows;
	uint64_t events[VITALS_NR], weight[VITALS_NR];
	uint64_t sampled[VITALS_NR], dropped[VITALS_NR];
	uint64_t shed[VITALS_NR]; /* later powers of t not sampled: the ring
				     was half full (first ones always are) */
	uint32_t tshift[VITALS_NR];
	uint64_t bpf_run_ns;  /* kernel time spent in our programs */
	uint64_t user_run_ns; /* the collecting thread's own CPU time */
	uint64_t memfree_kb;
	unsigned ncpus;
};

struct vitals_sink_ops {
	void (*sample)(void *arg, const struct vitals_sample *s);
	void (*epoch)(void *arg, const struct vitals_epoch *e);
};

struct vitals_opts {
	unsigned epoch_ms;   /* default 1000 */
	unsigned cpu_hz;     /* cpu-clock sampling rate, default 1000 */
	double high_wm;      /* collector CPU share that raises t (0.005) */
	double low_wm;       /* share under which t halves (0.002) */
	unsigned tshift;     /* initial log2 t, default 1 (t = 2) */
	int proc_only;       /* use the /proc fallback even if BPF works */
	const char *disable; /* comma-separated vital names not to collect */
	int profile;         /* turn on BPF run-time statistics (costs) */
	int filter_fd;       /* > 0: count only the tgids of this BPF hash
				map (kmod/offcpu.h's, value 1) */
};

/* One BPF program's run-time statistics (where they are on). */
struct vitals_prog_stat {
	char name[32];
	int vital;
	uint64_t run_cnt, run_ns;
};

struct vitals;

int vitals_open(const struct vitals_opts *o, struct vitals **out,
		char **cause);
/* timeout_ms < 0: until the epoch's end */
int vitals_poll(struct vitals *v, int timeout_ms,
		const struct vitals_sink_ops *ops, void *arg);
/* End a vitals_poll() in progress now (thread-safe), e.g. to stop. */
void vitals_wake(struct vitals *v);
/* End the current epoch now (delivering it), e.g. before close. */
int vitals_flush(struct vitals *v, const struct vitals_sink_ops *ops,
		 void *arg);
void vitals_close(struct vitals *v);
/* Hand every sample waiting in the kernel's ring to ops->sample now,
 * without waiting (for a sink that does slow work between polls). */
int vitals_drain(struct vitals *v, const struct vitals_sink_ops *ops,
		 void *arg);

/* "bpf" or "proc" */
const char *vitals_source(struct vitals *v);
/* State of one vital and, when not VITALS_ON, a one-line why. */
int vitals_status(struct vitals *v, int vital, const char **why);
/* Notes about the environment (tracefs, bpf stats), "" when none. */
const char *vitals_notes(struct vitals *v);
/* Bytes of kernel memory held by the collector's maps; *per_vital (may
 * be NULL) gets the part that belongs to one vital (its per-CPU cells),
 * the rest (ring buffer, shared maps) is shared by all. */
uint64_t vitals_kernel_bytes(struct vitals *v, uint64_t *per_vital);
/* The syscall hook in use ("fentry x64_sys_call", "tp_btf sys_enter"),
 * NULL without BPF. */
const char *vitals_sys_hook(struct vitals *v);
/* Fill up to max entries; return how many, 0 when statistics are off. */
int vitals_prog_stats(struct vitals *v, struct vitals_prog_stat *out,
		      int max);

/* ---- the /proc fallback (kmod/vitals-proc.c) ---- */
struct vitals_proc;
int vitals_proc_open(struct vitals_proc **out, unsigned cpu_hz,
		     char **cause);
/* Fill e->rows (malloc'd, replaced each call) with the deltas since the
 * last call. */
int vitals_proc_epoch(struct vitals_proc *p, struct vitals_epoch *e);
void vitals_proc_close(struct vitals_proc *p);
/* Which vitals the fallback provides, and why not the others. */
int vitals_proc_status(int vital, const char **why);

#endif
