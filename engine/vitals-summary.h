/*
 * engine/vitals-summary.h - the long-term history of the vital signs, as
 * chopstix keeps it (papers/chopstix-vital-signs-sketches.txt §2.2, §4.1.5):
 * per epoch the sketch's summary, not every row.
 *
 * The collector (engine/vitals-collect.c) writes each epoch in full
 * (engine/vitals-store.c's raw tables: every process's values, every
 * sample).  Once an epoch is older than the raw window (default 10 s),
 * vitals_summary_compact() folds a minute of such epochs into one row of
 * vitals_summary(id, start_ns, end_ns, nepochs, blob): zstd of, per epoch,
 * its times and costs, and per vital its totals (events, weight, samples
 * taken, dropped, log2 t), the quantiles p50/p90/p99 of its samples'
 * weights and its top VITALS_SUMMARY_TOPK processes by value.  The
 * samples kept are those of a process a rule (analysis/vitals-rules.c)
 * flagged in that epoch, alike ones folded across the minute, the heaviest
 * few (VITALS_SUMMARY_KEEP_PID per process, VITALS_SUMMARY_KEEP a
 * minute), or, with keep_samples, every sample.  Everything else of the
 * minute is deleted.  (Beside a trace, engine/vitals-trace.c, the
 * collector summarizes nothing: every value and sample there is of a
 * traced process.)
 *
 * vitals_store_load_window() (engine/vitals-store.c) reads raw epochs and
 * summarized ones alike, so `vitals report`, the rules and the view read
 * any window of the history.  The file is a ring by size:
 * vitals_store_retain() deletes the oldest summaries when it is full.
 */
#ifndef PROPEL_ENGINE_VITALS_SUMMARY_H
#define PROPEL_ENGINE_VITALS_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/vitals-rules.h"
#include "engine/vitals-store.h"

#define VITALS_SUMMARY_TOPK 3	/* processes per vital and epoch */
#define VITALS_SUMMARY_KEEP_PID 2 /* samples kept per flagged process */
#define VITALS_SUMMARY_KEEP 12	/* samples kept per minute */
#define VITALS_SUMMARY_BATCH_NS (60ull * 1000000000ull)

/*
 * Summarize the raw epochs older than now_ns - raw_window_ns, a minute at
 * a time (at most max_batches of them; 0: all).  keep_samples: keep every
 * sample (a trace's: all of traced processes).  0 or -errno.
 */
int vitals_summary_compact(struct vitals_store *st, uint64_t now_ns,
			   uint64_t raw_window_ns, int keep_samples,
			   int max_batches);

/*
 * Append the epochs of the summaries that overlap [from_ns, to_ns) to h
 * (unsorted: the caller sorts).  0 or -errno.
 */
int vitals_summary_load(struct vitals_store *st, uint64_t from_ns,
			uint64_t to_ns, struct vitals_hist *h);

/* Epochs for the rules from a loaded history; 0 or -ENOMEM. */
int vitals_hist_rules_epochs(const struct vitals_hist *h,
			     struct vitals_rules_epoch **out);
/* Run the rules over a history; *f is malloc'd.  0 or -ENOMEM. */
int vitals_hist_flags(const struct vitals_hist *h,
		      struct vitals_rules_flag **f, size_t *nf);

#endif
