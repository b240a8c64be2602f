/*
 * engine/vitals-trace.h - vital signs beside a trace: `propel record|attach
 * --vitals[=all]`.  While the trace runs, two collectors run beside it:
 *   - the off-CPU tracer (kmod/offcpu.h): each span of >= 1 ms a thread of
 *     the traced processes (and of the processes they fork; with all, of
 *     every process) spent off the CPU, with its reason;
 *   - the vital-sign collector (engine/vitals-collect.h), its BPF programs
 *     restricted to the same processes (all: the whole host).
 * The session file does not exist until the trace is stored (engine/
 * capture.c renames it into place at the end), so the samples go to a side
 * file next to it and the spans stay in memory; vitals_trace_store() moves
 * both into the stored session (tables of engine/vitals-store.h and
 * engine/offcpu-store.h).  What could not run is said in one line
 * (vitals_trace_summary); the trace records either way.
 *
 *   vitals_trace_start(db, &o, &vt, &cause)   before the traced code runs
 *   vitals_trace_add(vt, pid, 0)              each process traced
 *   vitals_trace_forget(vt, getpid())         propel, once CMD is forked
 *   vitals_trace_stop(vt)                     when the trace ends
 *   vitals_trace_store(vt, db, &cause)        after capture_end; frees vt
 *
 * Nothing here exits; every error is a return and a cause.
 */
#ifndef PROPEL_ENGINE_VITALS_TRACE_H
#define PROPEL_ENGINE_VITALS_TRACE_H

#include <stdint.h>
#include <sys/types.h>

struct vitals_trace_opts {
	int all;	 /* the whole host, not only the traced processes */
	uint64_t min_ns; /* shortest off-CPU span kept (default 1 ms) */
};

struct vitals_trace;

/* 0 with whatever could run (*out is set even when nothing could: its
 * summary says why, and store then stores nothing) or -errno. */
int vitals_trace_start(const char *db, const struct vitals_trace_opts *o,
		       struct vitals_trace **out, char **cause);
/* Trace pid and what it forks from now on; parent_only: only its
 * children (propel itself, before it forks CMD). */
int vitals_trace_add(struct vitals_trace *vt, pid_t pid, int parent_only);
/* Stop following what a parent-only pid forks (propel once CMD runs). */
int vitals_trace_forget(struct vitals_trace *vt, pid_t pid);
/* One line: what runs, what does not and why. */
const char *vitals_trace_summary(struct vitals_trace *vt);
/* Stop collecting (the spans and samples are kept for store). */
void vitals_trace_stop(struct vitals_trace *vt);
/* Write what was collected into the session db, remove the side file,
 * free vt.  NULL is a no-op.  0 or -errno with *cause. */
int vitals_trace_store(struct vitals_trace *vt, const char *db, char **cause);
/* Stop and free without storing (the trace failed). */
void vitals_trace_abort(struct vitals_trace *vt);

#endif
