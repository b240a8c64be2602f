/*
 * analysis/profiles.h - profiles of flows or processes (self-propelled
 * §4.1, anomaly-diagnosis §4.2.1), over call paths distinguished by call
 * site (analysis/trace.h).
 *
 *   coverage   1 for each path entered in the unit (a bit vector)
 *   time       the fraction of the unit's time spent with the path as the
 *              innermost frame: the time from an event to the next event
 *              of its thread, when both are in the unit, goes to the path
 *              open after the first (self time, so the components sum
 *              to 1); but a thread's wait for its next work is no
 *              unit's: in a run of a thread's events in one unit that
 *              began with a recv (the work came by a message) and ends
 *              with the thread going on to another unit's events (the
 *              message-switch rule), the time after the run's last send
 *              (a server's loop waiting in poll after its answer, the
 *              time until another request arrives, which load sets);
 *              a run the trace ends in, after a last send on the channel
 *              its recv came by (answered: redis waiting in epoll_wait
 *              when the recording stopped, 10 ms that ranked its flow
 *              over the slow ones); not after a send elsewhere (the
 *              request passed on, its reply owed);
 *              nor is a thread's time away from its program
 *              (trace_away): a wait for a CPU (the session's off-CPU
 *              spans, runnable but not running), the host's -- a
 *              request whose nginx waited 52 ms for a CPU between its
 *              recv and its send to the backend, on a loaded host, is
 *              no slower than the others -- or a send propel's agent
 *              held until the tracer injected its peer, propel's (140
 *              ms for nginx's first send on a new upstream connection
 *              while propeld injected redis)
 *   comm       the fraction of the unit's bytes sent from the path
 *   composite  time and comm side by side (two vectors, one distance)
 * The distance is the L1 (Manhattan) norm of the difference.
 *
 * Profiles compared with each other must share one profiles_space, which
 * numbers path keys (trace_path_key) across traces: that is how flows of a
 * reference session line up with the session's.  A profile keeps, per
 * path, where it first occurred (time and trace path) for the root-cause
 * ranking.  Pure: no I/O.
 */
#ifndef PROPEL_ANALYSIS_PROFILES_H
#define PROPEL_ANALYSIS_PROFILES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

enum profiles_kind {
	PROFILES_COVERAGE,
	PROFILES_TIME,
	PROFILES_COMM,
	PROFILES_COMPOSITE,
};

/* "coverage", "time", "comm", "composite"; -1 for another name */
int profiles_kind_parse(const char *name);
const char *profiles_kind_name(int kind);

struct profiles_space {
	char **key;
	size_t n, cap;
	uint32_t *hash;
	size_t hcap;
};

void profiles_space_release(struct profiles_space *sp);
/* The space index of a trace path (interned by key); TRACE_NONE: ENOMEM. */
uint32_t profiles_space_index(struct profiles_space *sp,
			      const struct trace *t, uint32_t path);

struct profiles_entry {
	uint32_t k;	  /* space index */
	uint32_t path;	  /* trace path of the first occurrence */
	uint8_t cov;	  /* entered in the unit */
	double time, comm;
	int64_t first_ts; /* first entry (INT64_MAX: never entered) */
};

struct profile {
	const struct trace *t;
	struct profiles_entry *e; /* sorted by k */
	size_t n;
	int64_t first_ts, last_ts; /* the unit's events */
	int64_t total_ns, total_bytes;
	size_t nevents;
};

/*
 * Profiles of nunits units: unit_of[i] is event i's unit (TRACE_NONE:
 * none).  *out is an array of nunits profiles.  A thread whose trace
 * stops inside a call (no thread or process exit: blocked, killed,
 * crashed) spends the time to the end of the trace in that call.
 * With w1 > w0, only [w0, w1) counts: events in it, time clipped to it.
 * 0 or -ENOMEM.
 */
int profiles_build(struct profiles_space *sp, const struct trace *t,
		   const uint32_t *unit_of, size_t nunits,
		   struct profile **out);
int profiles_build_window(struct profiles_space *sp, const struct trace *t,
			  const uint32_t *unit_of, size_t nunits, int64_t w0,
			  int64_t w1, struct profile **out);
void profiles_free(struct profile *p, size_t n);

/* Units = processes: *unit_of per event and *pids (in order of the
 * process's first event).  0 or -ENOMEM. */
int profiles_units_by_process(const struct trace *t, uint32_t **unit_of,
			      int64_t **pids, size_t *n);

double profiles_distance(const struct profile *a, const struct profile *b,
			 int kind);
/* The entry of path k in p, NULL when absent. */
const struct profiles_entry *profiles_find(const struct profile *p,
					   uint32_t k);
/*
 * The largest component of the delta vector p - q (anomaly-diagnosis
 * eq. 7): its space index, TRACE_NONE when p == q.  Ties go to a path
 * present in p, then to the earliest first occurrence in p.
 */
uint32_t profiles_max_delta(const struct profile *p, const struct profile *q,
			    int kind, double *value);

#endif
