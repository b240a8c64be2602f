/*
 * engine/vitals-collect.h - collect vital signs into a session in a
 * background thread: `propel vitals record`, and `record|attach --vitals`,
 * which collect vitals alongside their trace (engine/vitals-trace.c: into
 * a side file, filter_fd keeping to the traced processes).
 *
 *   struct vitals_collect *vc = NULL;
 *   struct vitals_collect_opts o = { 0 };        // defaults: 1 s epochs
 *   if (vitals_collect_start(session, &o, &vc, &cause) == 0)
 *           ... run ...   (vitals_collect_summary(vc) says what is missing)
 *   vitals_collect_stop(vc, NULL, &cause);        // before session_close
 *
 * The thread opens its own sqlite connection to session_path(session) and
 * writes one short transaction per epoch (busy timeout 5 s), so the caller
 * may keep writing the same file through its own handle.  Samples carry
 * CLOCK_REALTIME ns and the pid, to be joined with trace events by time and
 * pid.  The collector never counts its own process.  Nothing here exits.
 *
 * Test switch: PROPEL_VITALS_WARP=F stores each epoch (and its samples) F
 * times as far from the collector's start as it is, its length unchanged
 * (so rates, and the rules, are what they were), so that a test simulates
 * a week of history in a minute (tests/e2e/vitals-history.sh).
 */
#ifndef PROPEL_ENGINE_VITALS_COLLECT_H
#define PROPEL_ENGINE_VITALS_COLLECT_H

#include <stdint.h>

#include "engine/session.h"
#include "kmod/vitals-collector.h"

struct vitals_collect_opts {
	unsigned epoch_ms;     /* default 1000 */
	unsigned cpu_hz;       /* default 1000 */
	uint64_t budget_bytes; /* the file's size limit (--max-size), 0 = 64
				  MiB: the oldest history goes first */
	uint64_t raw_window_ns; /* epochs kept whole this long, then
				   summarized (engine/vitals-summary.h);
				   0 = 10 s */
	int proc_only;         /* force the /proc fallback */
	const char *disable;   /* comma-separated vitals not to collect */
	int profile;           /* BPF run-time statistics per program */
	int filter_fd;         /* > 0: only these tgids (vitals_opts) */
	/* called on the collector thread after each stored epoch */
	void (*on_epoch)(void *arg, int64_t epoch_id);
	void *arg;
};

struct vitals_collect;

int vitals_collect_start(struct session *s,
			 const struct vitals_collect_opts *o,
			 struct vitals_collect **out, char **cause);
/* Flush the last epoch, stop the thread, free.  NULL is a no-op.  stats
 * (may be NULL) gets the run's figures. */
struct vitals_collect_stats;
int vitals_collect_stop(struct vitals_collect *vc,
			struct vitals_collect_stats *stats, char **cause);
/* One line: source and the vitals that are off or coarse, with why. */
const char *vitals_collect_summary(struct vitals_collect *vc);

/* Figures for benchmarks (epochs stored, samples, collector CPU time in
 * BPF programs and in the thread, wall time, kernel map bytes, bytes used
 * in the session file). */
#define VITALS_COLLECT_MAX_PROGS 16
struct vitals_collect_stats {
	uint64_t epochs, samples, bpf_run_ns, user_run_ns, wall_ns;
	uint64_t kernel_bytes, kernel_bytes_vital, file_bytes;
	uint64_t unsymbolized; /* samples stored with a user frame left as an
				* address for lack of time */
	uint64_t epochs_full;  /* epochs lost: the file was at --max-size */
	unsigned ncpus;
	/* with opts.profile (or kernel.bpf_stats_enabled): per program */
	struct vitals_prog_stat progs[VITALS_COLLECT_MAX_PROGS];
	int nprogs;
};

#endif
