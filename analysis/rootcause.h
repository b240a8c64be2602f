/*
 * analysis/rootcause.h - from an anomaly to the call paths that explain
 * it (anomaly-diagnosis §4.1, §5; self-propelled §4.2).
 *
 * Fail-stop (earliest last timestamp): the last timestamp of every
 * process.  The candidate
 * is the process with the earliest last timestamp among those that did
 * not end with exit status 0 (a clean exit is no failure: a helper that
 * finished early is not one); a process whose trace stops inside a call
 * that never returned (blocked, then killed) or at a crash is one.  The
 * mean and deviation are those of the processes that did not end cleanly
 * when there are two or more (the paper's hosts are long-running daemons:
 * short-lived helpers that exited early would hide the one that stopped),
 * else of all.  A process whose tracing was switched off (trace_process
 * stop_ns: the end of an attach stops the processes one after another)
 * counts with its last timestamp moved by how much earlier than the last
 * one it was stopped: its silence before its own stop is what is judged.  It is reported as fail-stop when mean - its timestamp
 * exceeds both the clock precision and z standard deviations.  A process
 * still alive at the end whose last event is inside a wait for input
 * (poll, accept, read, waitpid...) that it waited in before, by the same
 * call path, and came back from (rootcause.c, rootcause_idle) is idle, not
 * stopped: it counts in the mean, it is never the one reported (its
 * loop's wait for work: a daemon between requests when the recording
 * ended; a wait it never came back from before, or one blocked in a write,
 * a lock or a sleep, still is).  Its last function is the
 * innermost frame open at its last event, with the whole call stack
 * (trace paths are rebuilt by depth, so a wrapped ring's rebuilt entries
 * give the stack too).
 *
 * Root-cause paths: Δa = coverage paths of the anomalous profile absent
 * from the normal one, Δn the reverse; in each, a path whose proper
 * prefix is also in the set is dropped; paths left that differ only in
 * the last call are merged (main -> [A, D]); each kept path is ranked by
 * its first occurrence (time from its flow's start) and by length
 * (shorter first, then earlier), over both sides together.  Given the
 * flows the normal one was drawn from (rootcause_paths_among), a path
 * that is a normal variation in coverage (§4.2: "slight differences in
 * system load or program input between flows", which "can occur even
 * before the root cause") ranks after every path that is not, in both
 * orders: a path of Δa that another of those flows took too (the paper's
 * Δa is "absent from all normal ones"; a request that opened a fresh
 * upstream connection, or missed a cache, like a few others did), and a
 * path of Δn that fewer than half of them took (the normal flow's own
 * detour, not what normal flows do).  A merged path is one when all its
 * members are.
 *
 * Anomalous time window (§5.3): the processes' traces cut into windows of
 * equal length; in each window the processes' time profiles are scored
 * (unsupervised); the earliest window in which the anomalous process
 * ranks first.  Pure.
 */
#ifndef PROPEL_ANALYSIS_ROOTCAUSE_H
#define PROPEL_ANALYSIS_ROOTCAUSE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profiles.h"
#include "analysis/trace.h"

struct rootcause_failstop {
	int found;
	int64_t pid, tid, ts_ns;
	uint32_t last_func;	/* interned name, 0 unknown */
	uint32_t stack;		/* trace path of the innermost open frame */
	double mean_ns, sd_ns;
	size_t nproc;
};

#define ROOTCAUSE_PRECISION_NS 10000000 /* 10 ms */
#define ROOTCAUSE_Z 1.0

void rootcause_failstop(const struct trace *t, int64_t precision_ns, double z,
			struct rootcause_failstop *out);
/* The fail-stop thread's last event (its flow is the anomalous one:
 * anomaly-diagnosis §4.1 reports the process that stopped first before
 * any outlier), TRACE_NONE when none was found. */
uint32_t rootcause_failstop_event(const struct trace *t,
				  const struct rootcause_failstop *fs);

struct rootcause_path {
	int side;		/* 0: in the anomalous flow only; 1: normal */
	const struct trace *t;	/* whose trace path */
	uint32_t path;		/* the earliest member, whole */
	uint32_t *last;		/* last calls merged (interned in t), >= 1 */
	size_t nlast;
	uint32_t len;		/* frames of path */
	int64_t first_ts, rel_ts;
	size_t rank_time, rank_length;
	int variation;		/* a normal variation (rootcause_paths_among) */
	size_t seen;		/* of the others, how many took the path (a
				 * merged path: its member seen most) */
};

struct rootcause {
	size_t delta_raw;	/* |Δa| + |Δn| */
	size_t delta_pruned;	/* after prefix pruning */
	struct rootcause_path *p; /* kept paths, by rank_time */
	size_t n;
};

/* a: anomalous profile, nm: normal; both from one profiles_space. */
int rootcause_paths(struct profiles_space *sp, const struct profile *a,
		    const struct profile *nm, struct rootcause *out);
/* The same, with the nothers flows nm was drawn from (a and nm may be
 * among them: they are skipped), which tell the normal variations. */
int rootcause_paths_among(struct profiles_space *sp, const struct profile *a,
			  const struct profile *nm,
			  const struct profile *const *others, size_t nothers,
			  struct rootcause *out);
void rootcause_release(struct rootcause *rc);

/*
 * The earliest window (of window_ns) where process pid ranks first
 * among the processes (time profiles, k-th neighbour).  0 and
 * *start and *end, -ENOENT when it never does, -ENOMEM.
 */
int rootcause_window(const struct trace *t, int64_t pid, int64_t window_ns,
		     int64_t *start, int64_t *end);

#endif
