/*
 * analysis/trace.h - the in-memory trace every analysis works on: the
 * events of one session, thread by thread in time order, with names
 * interned, call paths built and every matched recv pointing at its send.
 *
 * Built by engine/analysis-load.c from a session (the same reader replay
 * uses), or by hand in tests/unit/: trace_new, then per thread
 * trace_thread_begin + trace_add (events in time order), trace_message
 * for each matched pair (by event id), trace_process for what is known of
 * a process, trace_away_add for each time a thread was away (a wait for a
 * CPU, a send propel held), and
 * trace_finish, which resolves the messages and computes each event's
 * call path.  After trace_finish the trace is read-only.
 *
 * Call paths (self-propelled §5.1, fixed): a path is the chain of
 * (function, call site) pairs from the thread's outermost traced frame,
 * so two calls of one function from two sites are two paths.  Paths live
 * in a trie (struct trace_path, index 0 = the empty path); the key that
 * compares paths across sessions is trace_path_key(): names and the call
 * site's file basename and line, never addresses.  Frames are tracked by
 * depth, so a stack rebuilt at the start of a wrapped ring (entries with
 * the rebuilt flag) gives whole paths too.
 *
 * Pure: no I/O.  Kinds are share/kinds.h's, the session's own, so that
 * the loader passes them through unchanged.
 */
#ifndef PROPEL_ANALYSIS_TRACE_H
#define PROPEL_ANALYSIS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "share/kinds.h"

/* The event kinds (share/kinds.h) by the analyses' short names. */
#define TK_ENTRY PROPEL_KIND_ENTRY
#define TK_EXIT PROPEL_KIND_EXIT
#define TK_SIGNAL PROPEL_KIND_SIGNAL
#define TK_THREAD_START PROPEL_KIND_THREAD_START
#define TK_THREAD_EXIT PROPEL_KIND_THREAD_EXIT
#define TK_FORK PROPEL_KIND_FORK
#define TK_EXEC PROPEL_KIND_EXEC
#define TK_PROCESS_EXIT PROPEL_KIND_PROCESS_EXIT
#define TK_SEND PROPEL_KIND_SEND
#define TK_RECV PROPEL_KIND_RECV
#define TK_LOST PROPEL_KIND_LOST

#define TRACE_NONE ((uint32_t)-1)

struct trace_event {
	int64_t id, ts_ns;
	int64_t pid, tid;
	int64_t bytes;	 /* send/recv: the call's result */
	int64_t arg;	 /* fork: child pid; signal: signo; process_exit: status;
			  * send/recv: the interned chan string (0 unknown) */
	int64_t val[1];	 /* the value a mapping directive names (the entry's
			  * argument, the exit's return value), has_val
			  * bit 0 (one: 8 bytes more per event are 80 MB
			  * in a 10M-event session) */
	uint32_t func;	 /* interned name, 0 = none */
	uint32_t site;	 /* interned "file:line" of the call site, 0 = none */
	uint32_t path;	 /* trace_finish: entry: its own path; other events:
			  * the innermost open frame's path (0 = none) */
	uint32_t after;	 /* trace_finish: the innermost frame's path after
			  * the event (an exit: its caller's) */
	uint32_t match;	 /* recv: index of the send holding its first byte */
	uint32_t thread; /* index in trace->th */
	int32_t depth;
	uint8_t kind;	 /* enum propel_kind */
	uint8_t has_val; /* bit i: val[i] set */
	uint8_t rebuilt; /* entry rebuilt for a frame lost in a wrapped ring */
	uint8_t peer_end; /* send/recv: the end of its tcp/udp channel its
			   * peer is (1, 2; analysis/chan-role.h), 0 unknown */
};

struct trace_thread {
	int64_t pid, tid;
	size_t first, n; /* its events: ev[first .. first + n) */
	size_t aw_first, aw_n; /* its times away: aw[aw_first ..) */
};

/* A time the thread was away from its program: runnable but waiting for
 * a CPU (the session's off-CPU spans, `--vitals`: engine/offcpu-store.h
 * runq_ns), the host's time; or held by propel's agent in a send until
 * the tracer injected the peer (table holds), propel's.  Not the
 * program's (analysis/profiles.h). */
struct trace_away {
	int64_t pid, tid;
	int64_t a, b; /* [a, b) */
};

struct trace_process {
	int64_t pid, start_ns;
	int exited;	 /* the process ended with an exit status */
	int status;	 /* exit status when exited */
	int signal;	 /* killed by this signal, 0 none */
	uint32_t exe;	 /* interned path, 0 unknown */
	uint32_t name;	 /* interned program name shown (session_proc_name),
			  * 0 unknown */
	int64_t stop_ns; /* tracing switched off in it (a detach, the end of
			  * an attach), 0 unknown: its trace ends there */
};

struct trace_path {
	uint32_t parent; /* 0 for a thread's outermost frame */
	uint32_t func, site;
	uint32_t len;	 /* frames */
};

struct trace {
	struct trace_event *ev;
	size_t nev, cap;
	struct trace_thread *th;
	size_t nth, thcap;
	struct trace_process *proc;
	size_t nproc, proccap;
	struct trace_path *path; /* path[0]: the empty path */
	size_t npath, pathcap;
	char **str; /* str[0] = "" */
	size_t nstr, strcap;
	/* private: interning and message tables */
	uint32_t *strhash, *pathhash;
	size_t strhcap, pathhcap;
	int64_t (*msg)[2];
	size_t nmsg, msgcap;
	struct trace_away *aw; /* by thread, then time (trace_finish) */
	size_t naw, awcap;
	int64_t first_pid; /* the first traced process (trace_finish) */
	int64_t end_ts;	   /* the latest event of all (trace_finish) */
	size_t nrecv_matched;
};

struct trace *trace_new(void);
void trace_free(struct trace *t);

/* Intern a string: its index (>= 1), 0 for NULL/"", TRACE_NONE on ENOMEM. */
uint32_t trace_intern(struct trace *t, const char *s);

/* Room for n events (a hint: trace_add grows past it).  0 or -ENOMEM. */
int trace_reserve(struct trace *t, size_t n);
/* Events of one thread follow, in time order.  0 or -ENOMEM. */
int trace_thread_begin(struct trace *t, int64_t pid, int64_t tid);
/* Append an event to the current thread (func/site already interned).
 * 0 or -ENOMEM / -EINVAL (no thread begun). */
int trace_add(struct trace *t, const struct trace_event *e);
/* A matched pair, by event id.  0 or -ENOMEM. */
int trace_message(struct trace *t, int64_t send_id, int64_t recv_id);
/* What the session knows of a process.  0 or -ENOMEM. */
int trace_process_add(struct trace *t, const struct trace_process *p);
/* A time away of thread (pid, tid), [a, b), in any order (overlapping
 * ones, a hold during which the thread also waited for a CPU, count
 * once).  0 or -ENOMEM. */
int trace_away_add(struct trace *t, int64_t pid, int64_t tid, int64_t a,
		   int64_t b);
/* Resolve messages, compute paths and the first process.  0 or -ENOMEM. */
int trace_finish(struct trace *t);
/* How much of [a, b) thread th (index in t->th) was away. */
int64_t trace_away_within(const struct trace *t, size_t th, int64_t a,
			  int64_t b);

const char *trace_str(const struct trace *t, uint32_t i);
/* The process record of pid, NULL when unknown. */
const struct trace_process *trace_process_get(const struct trace *t,
					      int64_t pid);
/* The path's functions from the outermost, into out[0..n): returns the
 * number of frames (may exceed max: only max written). */
size_t trace_path_funcs(const struct trace *t, uint32_t path,
			const char **out, size_t max);
/* The key comparing paths across sessions, malloc'd ("f@file:line>..."),
 * NULL on ENOMEM. */
char *trace_path_key(const struct trace *t, uint32_t path);

#endif
