/*
 * engine/offcpu-store.h - the off-CPU spans of a session (table `offcpu`),
 * recorded beside a trace by `propel record|attach --vitals`
 * (engine/vitals-trace.c, kernel side kmod/offcpu.bpf.c):
 *
 *   offcpu(pid, tid, ts_ns, dur_ns, runq_ns, reason, op, fd, host)
 *
 * ts_ns is when the thread left the CPU, on the trace's clock
 * (CLOCK_MONOTONIC, as events' ts_ns); dur_ns until it ran again, of which
 * runq_ns runnable but waiting for a CPU; reason is one of runqueue, io,
 * lock, socket, pipe, sleep, poll, child, fault, other; op the syscall the
 * thread was in ("read", "futex", ...; NULL when none or unnamed); fd its
 * descriptor (NULL when none); host the host the span's pid is a process
 * of, named as table processes names it (a `--follow` reaches hosts with
 * pid spaces of their own: engine/vitals-trace.c names the spans its
 * collectors saw, engine/vitals-host.c a host's it merges).  Beside them,
 * the signals the kernel delivered to those threads:
 *
 *   ksignals(pid, tid, ts_ns, signo, code, handled, host)
 *
 * (code: si_code; handled: 1 when a handler took it, 0 the default
 * action).  Read by engine/replay.c (the `offcpu` events
 * of replay jsonl) and the TUI (what the kernel did to the thread at the
 * cursor).  A session without the table has no spans: every reader treats
 * that as empty.
 */
#ifndef PROPEL_ENGINE_OFFCPU_STORE_H
#define PROPEL_ENGINE_OFFCPU_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/session.h"

struct offcpu_row {
	int64_t pid, tid, ts_ns, dur_ns, runq_ns;
	int fd; /* -1: none */
	char reason[12];
	char op[20];   /* "" when none */
	char host[65]; /* "" when not known yet (stored NULL) */
};

/*
 * The spans of a thread of pid ?1 of the session are those whose host is a
 * host where a process of that pid was traced (NULL: written before the
 * host was known): a pid of another host's kernel, seen there by its
 * collectors, is another process.  For the WHERE of offcpu and ksignals.
 */
#define OFFCPU_STORE_OF_PID                                                    \
	"(host IS NULL OR host IN (SELECT host FROM processes WHERE pid = ?1))"

struct offcpu_signal {
	int64_t pid, tid, ts_ns;
	int signo, code, handled;
};

/* CREATE TABLE IF NOT EXISTS (both, and their indexes).  0 or -EIO. */
int offcpu_store_create(struct session *s);
/* Insert n rows in one transaction.  0 or -EIO. */
int offcpu_store_put(struct session *s, const struct offcpu_row *rows,
		     size_t n);
int offcpu_store_put_signals(struct session *s, const struct offcpu_signal *sig,
			     size_t n);
/* Does the session have the table (recorded with --vitals)? */
int offcpu_store_present(struct session *s);
/*
 * The spans of thread (pid, tid) that overlap [t0, t1], by ts_ns
 * (OFFCPU_STORE_OF_PID), into
 * *rows (malloc'd, free() it) and *n.  tid 0: every thread of pid.  0 (no
 * rows when the session has no table) or -errno.
 */
int offcpu_store_range(struct session *s, int64_t pid, int64_t tid, int64_t t0,
		       int64_t t1, struct offcpu_row **rows, size_t *n);
/*
 * Each wait for a CPU of the session's spans (runq_ns > 0: the span's
 * last runq_ns, [ts + dur - runq, ts + dur)), of a pid as
 * OFFCPU_STORE_OF_PID: fn's non-zero return ends the walk and is
 * returned.  0 (none when the session has no table) or -EIO.
 */
int offcpu_store_runq_each(struct session *s,
			   int (*fn)(int64_t pid, int64_t tid, int64_t a,
				     int64_t b, void *arg),
			   void *arg);
/*
 * How much of [t0, t1] (a call) the spans rows[0..n) cover: the off-CPU
 * ns, and in *main the index of the span that covers most of it (-1 when
 * none overlaps).  Returns the off-CPU ns.
 */
int64_t offcpu_store_split(const struct offcpu_row *rows, size_t n, int64_t t0,
			   int64_t t1, int *main);
/* "off-CPU 38 ms: blocked in sock write" into buf (a span in words). */
const char *offcpu_store_text(const struct offcpu_row *r, char *buf,
			      size_t size);
/* The reason in a few words ("lock wait in futex", "pipe read", "sleep in
 * nanosleep", "run queue") into buf. */
const char *offcpu_store_why(const struct offcpu_row *r, char *buf,
			     size_t size);
/* A duration for a person ("38 ms", "1.2 s", "850 us") into buf. */
const char *offcpu_store_dur(int64_t ns, char *buf, size_t size);

#endif
