/*
 * engine/vitals-store.h - vital signs in the session file (sqlite).
 *
 * Tables (created here, IF NOT EXISTS, beside whatever else the session
 * holds: a `propel record` session keeps its trace tables):
 *   vitals_runs(id, start_ns, end_ns, source, epoch_ms, notes)
 *   vitals_status(run, vital, state, why)        state: on|coarse|off
 *   vitals_epochs(id, run, seq, start_ns, end_ns, ncpus, bpf_run_ns,
 *                 user_run_ns, memfree_kb)
 *   vitals_totals(epoch, vital, events, weight, sampled, dropped, tshift)
 *   vitals_values(epoch, vital, pid, uid, comm, value, count, aux, short)
 *                 (short: blkio requests answered with less than asked)
 *   vitals_stacks(id, hash, frames)        frames: names joined by '\n',
 *                                          innermost first; hash: FNV-1a
 *                                          of frames >> 1 (indexed)
 *   vitals_samples(id, epoch, ts_ns, vital, pid, tid, uid, comm, weight,
 *                  counter, label, d0..d3, kstack, ustack, n)
 *                  n (NULL = 1): samples of one epoch folded into this
 *                  row, alike in vital, pid, label and both stacks (the
 *                  first one's time, thread and data; the last counter)
 *   vitals_summary(id, start_ns, end_ns, nepochs, blob)
 *       a minute of epochs older than the raw window, summarized
 *       (engine/vitals-summary.h): the long-term history
 *   vitals_agg   (sessions written before the summaries; no longer written:
 *       the 5 min / 1 h / 1 day scales are summed from the epochs on read)
 * Vitals are stored by name (cpu, l2miss, ...); times are CLOCK_REALTIME ns.
 *
 * Retention (the file is a ring by size): vitals_store_retain() deletes
 * the oldest summaries (and the samples kept with them), then, when there
 * are none, the oldest raw epochs (samples first, then values), until the
 * file's used pages fit the budget.  Writers use one transaction per epoch.
 */
#ifndef PROPEL_ENGINE_VITALS_STORE_H
#define PROPEL_ENGINE_VITALS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/session.h"
#include "share/kinds.h"

struct vitals_store;

/* Use an open session (the store does not own it). */
int vitals_store_new(struct session *s, struct vitals_store **out,
		     char **cause);
void vitals_store_free(struct vitals_store *st);

/* ---- writing ---- */
int vitals_store_run_begin(struct vitals_store *st, const char *source,
			   unsigned epoch_ms, const char *notes,
			   int64_t *run_id);
int vitals_store_status(struct vitals_store *st, int64_t run, const char *vital,
			const char *state, const char *why);
int vitals_store_run_end(struct vitals_store *st, int64_t run);

struct vitals_store_epoch {
	int64_t run;
	uint32_t seq;
	uint64_t start_ns, end_ns, bpf_run_ns, user_run_ns, memfree_kb;
	unsigned ncpus;
};
/* Returns the epoch's row id (> 0) or -errno. */
int64_t vitals_store_epoch(struct vitals_store *st,
			   const struct vitals_store_epoch *e);
int vitals_store_total(struct vitals_store *st, int64_t epoch,
		       const char *vital, uint64_t events, uint64_t weight,
		       uint64_t sampled, uint64_t dropped, unsigned tshift);
/* Also adds into the 5 min / 1 h / 1 day aggregates. */
int vitals_store_value(struct vitals_store *st, int64_t epoch,
		       uint64_t start_ns, const char *vital, uint32_t pid,
		       uint32_t uid, const char *comm, uint64_t value,
		       uint64_t count, uint64_t aux, uint64_t short_io);

struct vitals_store_sample {
	uint64_t ts_ns, weight, counter, label, d[4];
	const char *vital, *comm;
	uint32_t pid, tid, uid;
	const char *kstack, *ustack; /* '\n'-joined names, or NULL */
	uint64_t n; /* samples folded into this one (0 or 1: itself) */
};
int vitals_store_sample(struct vitals_store *st, int64_t epoch,
			const struct vitals_store_sample *s);
int vitals_store_begin(struct vitals_store *st);
int vitals_store_commit(struct vitals_store *st);
/* Keep the file's used size under budget bytes (0: no limit). */
int vitals_store_retain(struct vitals_store *st, uint64_t budget);
/* Bytes in use in the file (pages minus free pages). */
uint64_t vitals_store_used_bytes(struct vitals_store *st);
/* Never let this connection grow the file past bytes (a write that would
 * fails with SQLITE_FULL).  0 or -errno. */
int vitals_store_limit(struct vitals_store *st, uint64_t bytes);
/* The store's connection (engine/vitals-summary.c runs its queries on it). */
sqlite3 *vitals_store_db(struct vitals_store *st);
/* Stack ids may have been deleted: empty the cache of stored stacks. */
void vitals_store_forget_stacks(struct vitals_store *st);
/* Delete the stacks no sample refers to any more.  0 or -errno. */
int vitals_store_gc_stacks(struct vitals_store *st);

/* ---- reading ---- */
struct vitals_hrow {
	char vital[12];
	uint32_t pid, uid;
	char comm[16];
	double value;
	uint64_t count;
	uint64_t aux;      /* blkio: us of device latency */
	uint64_t short_io; /* blkio: unsatisfied requests (rule 3) */
};

/* A summarized epoch's figures per vital (engine/vitals-summary.h). */
struct vitals_htotal {
	uint64_t events, weight, sampled, dropped;
	uint32_t tshift;
	uint64_t q[3]; /* p50, p90, p99 of its samples' weights (0: none) */
};

struct vitals_hepoch {
	int64_t id;
	uint64_t start_ns, end_ns;
	unsigned ncpus;
	uint64_t bpf_run_ns, user_run_ns;
	struct vitals_hrow *rows; /* summarized: the top processes only */
	size_t nrows;
	int summarized; /* from vitals_summary: tot[] is filled */
	struct vitals_htotal tot[PROPEL_VITAL_NR];
};

struct vitals_hist {
	struct vitals_hepoch *ep;
	size_t n;
	char source[16];
	unsigned epoch_ms;
	char notes[512];
	struct {
		char vital[12], state[12], why[200];
	} status[16];
	int nstatus;
};

/*
 * Load epochs in time order: scale 0 = the raw epochs (all runs), else the
 * aggregates of that many seconds.  Returns 0 (an empty history when the
 * session has no vitals) or -errno.
 */
int vitals_store_load(struct vitals_store *st, unsigned scale,
		      struct vitals_hist *h, char **cause);
/* The same, of the epochs that overlap [from_ns, to_ns): raw and
 * summarized alike (with a scale: summed into buckets of that many s). */
int vitals_store_load_window(struct vitals_store *st, unsigned scale,
			     uint64_t from_ns, uint64_t to_ns,
			     struct vitals_hist *h, char **cause);
void vitals_hist_release(struct vitals_hist *h);
/* Append an epoch (zeroed) / a row (zeroed); *cap is the caller's
 * capacity counter.  0 or -ENOMEM. */
int vitals_hist_add_epoch(struct vitals_hist *h, size_t *cap);
int vitals_hepoch_add_row(struct vitals_hepoch *e, size_t *cap);
/* The first and last time of the history (raw and summarized); 0 when
 * there is none. */
int vitals_store_span(struct vitals_store *st, uint64_t *first_ns,
		      uint64_t *last_ns);

struct vitals_hsample {
	int64_t id, epoch;
	uint64_t ts_ns, epoch_start_ns, weight;
	char vital[12], comm[16];
	uint32_t pid, tid, uid;
	uint64_t d[4];
	const char *kstack, *ustack; /* valid during the callback */
	uint64_t n; /* samples folded into this one (>= 1) */
};

/*
 * Call cb for each sample, of one epoch (epoch > 0) or all, of one vital
 * (vital non-NULL) or all; order by weight (by_weight) or by time.  A
 * non-zero return from cb stops and is returned.
 */
int vitals_store_samples(struct vitals_store *st, int64_t epoch,
			 const char *vital, int by_weight,
			 int (*cb)(void *arg, const struct vitals_hsample *s),
			 void *arg);
/* The same, of the samples taken in [from_ns, to_ns). */
int vitals_store_samples_window(struct vitals_store *st, int64_t epoch,
				const char *vital, int by_weight,
				uint64_t from_ns, uint64_t to_ns,
				int (*cb)(void *arg,
					  const struct vitals_hsample *s),
				void *arg);

#endif
