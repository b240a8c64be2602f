/*
 * kmod/offcpu.h - the structs shared by the off-CPU tracer's kernel side
 * (kmod/offcpu.bpf.c) and its loader (kmod/offcpu.c), and the loader's API.
 *
 * The tracer runs beside a trace (`propel record|attach --vitals`): for the
 * traced processes (the tgids of the `tgids` map and the processes they
 * fork; every process with `all`) it records each span a thread spent off
 * the CPU for at least min_ns, with why: the thread's state when it was
 * switched out, the syscall it was in (read from its saved registers at
 * that moment, so no syscall hook runs), the kind of file that syscall's
 * descriptor names (pipe or socket) and whether it was waiting on a
 * contended kernel lock.  It also sends each signal delivered to one of
 * those threads (OFFCPU_EV_SIGNAL).  Times are CLOCK_MONOTONIC ns
 * (bpf_ktime_get_ns), the clock of the trace's ts_ns (engine/ingest.c).
 *
 * Life cycle: offcpu_open -> offcpu_add_tgid* -> (offcpu_poll)* ->
 * offcpu_close.  One thread polls; the callback runs on it.
 */
#ifndef PROPEL_KMOD_OFFCPU_H
#define PROPEL_KMOD_OFFCPU_H

enum offcpu_reason {
	OFFCPU_RUNQ = 0, /* runnable, waiting for a CPU (preempted, or woken
			    and not yet run) */
	OFFCPU_IO,	 /* uninterruptible sleep: block I/O, fsync */
	OFFCPU_LOCK,	 /* futex, or a contended kernel lock */
	OFFCPU_SOCK,	 /* a socket read/write/accept/connect */
	OFFCPU_PIPE,	 /* a pipe read/write */
	OFFCPU_SLEEP,	 /* nanosleep, clock_nanosleep, pause */
	OFFCPU_POLL,	 /* poll, select, epoll_wait */
	OFFCPU_CHILD,	 /* wait4, waitid */
	OFFCPU_FAULT,	 /* a page fault waiting for I/O */
	OFFCPU_OTHER,
	OFFCPU_NREASONS,
};

#define OFFCPU_NO_SYSCALL 0xffff

enum offcpu_kind {
	OFFCPU_EV_SPAN = 0,   /* a span off the CPU (all fields below) */
	OFFCPU_EV_SIGNAL = 1, /* a signal delivered: ts_ns, tgid, tid;
				 reason = signo, fd = si_code, state = 0
				 default action, 1 a handler */
};

/* One off-CPU span (or signal, by kind) as the ring buffer carries it. */
struct offcpu_span {
	unsigned long long ts_ns;   /* switched out (CLOCK_MONOTONIC) */
	unsigned long long dur_ns;  /* until switched in again */
	unsigned long long runq_ns; /* of which runnable (woken, waiting) */
	unsigned int tgid, tid;
	unsigned short reason; /* enum offcpu_reason */
	unsigned short nr;     /* syscall, OFFCPU_NO_SYSCALL if none */
	int fd;		       /* its first argument (-1 when none) */
	unsigned int state;    /* prev_state at the switch */
	unsigned int kind;     /* enum offcpu_kind */
};

#ifndef __bpf__
#include <stdint.h>

struct offcpu;

struct offcpu_opts {
	int all;	 /* every process, not only the tgids added */
	uint64_t min_ns; /* shortest span recorded, default 1 ms */
};

/* 0 or -errno with a one-line *cause (BPF refused, a tracepoint missing). */
int offcpu_open(const struct offcpu_opts *o, struct offcpu **out, char **cause);
/* Trace tgid and the processes it forks from now on.  parent_only: only
 * its children (record: propel itself, whose child becomes CMD). */
int offcpu_add_tgid(struct offcpu *oc, uint32_t tgid, int parent_only);
/* Stop following what a parent-only tgid forks (propel, once CMD is
 * forked: its later children -- a background rm, ssh -- are not traced). */
int offcpu_forget_tgid(struct offcpu *oc, uint32_t tgid);
/* Wait up to timeout_ms, hand each span to cb.  Spans it could not send
 * (the ring was full) are counted in offcpu_lost. */
int offcpu_poll(struct offcpu *oc, int timeout_ms,
		void (*cb)(void *arg, const struct offcpu_span *s), void *arg);
uint64_t offcpu_lost(struct offcpu *oc);
/* The fd of the map of traced tgids, to share with kmod/vitals.c. */
int offcpu_tgids_fd(struct offcpu *oc);
/* What the tracer could not attach ("" when none): one line. */
const char *offcpu_notes(struct offcpu *oc);
void offcpu_close(struct offcpu *oc);

const char *offcpu_reason_name(int reason);
/* "read", "futex", ... or NULL for a syscall the tracer does not name */
const char *offcpu_syscall_name(unsigned nr);
#endif

#endif
