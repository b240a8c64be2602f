/*
 * share/kinds.h - the one definition of the event kinds every floor
 * shares: what the agent records (share/record.h), what the session
 * stores (engine/session.h: column kind of table events and chunks),
 * what the analyses read (analysis/trace.h) and what replay names in its
 * JSONL (engine/event.c).
 *
 * The numbers are a contract twice over: the ring ABI (a record's type
 * nibble, share/record.h) and the session file (format 2 stores them as
 * integers, engine/session.c).  Each of those places pins the numbers it
 * depends on with a _Static_assert, and engine/event.c's table of names
 * is indexed by this enum with a size check, so a kind added here that
 * one of them does not know fails the build instead of a replay.
 *
 * 4 is no kind: the ring's ARG record (a continuation of the record
 * before it) has it.  OFFCPU and KSIGNAL never come through a ring: the
 * session's tables offcpu and ksignals hold them (engine/offcpu-store.h)
 * and replay merges them into a thread's events when asked to.
 *
 * The short names engine/ (SK_*) and analysis/ (TK_*) use are aliases
 * of these, with no numbers of their own.
 *
 * The vital signs (enum propel_vital) are numbered here too: the eBPF
 * collector indexes its maps by them (kmod/vitals.h, VITALS_*), the
 * rules read them (analysis/vitals-rules.h, VR_*); their names (the
 * session's vitals tables store a vital by name) are share/kinds.c's.
 * This header is included by the BPF program too: no includes, nothing
 * but enums and (outside BPF) two prototypes.
 */
#ifndef PROPEL_SHARE_KINDS_H
#define PROPEL_SHARE_KINDS_H

enum propel_kind {
	PROPEL_KIND_ENTRY = 1,
	PROPEL_KIND_EXIT = 2,
	PROPEL_KIND_SIGNAL = 3,
	/* 4: the ring's ARG record, never an event */
	PROPEL_KIND_THREAD_START = 5,
	PROPEL_KIND_THREAD_EXIT = 6,
	PROPEL_KIND_FORK = 7,
	PROPEL_KIND_EXEC = 8,
	PROPEL_KIND_PROCESS_EXIT = 9,
	PROPEL_KIND_SEND = 10,
	PROPEL_KIND_RECV = 11,
	PROPEL_KIND_LOST = 12,
	PROPEL_KIND_OFFCPU = 13,  /* session only: table offcpu */
	PROPEL_KIND_KSIGNAL = 14, /* session only: table ksignals */
	PROPEL_KIND_COUNT	  /* one past the last */
};

/* A chunk stores a kind in a nibble and the kinds it holds a bit each
 * (engine/chunk.h). */
_Static_assert(PROPEL_KIND_COUNT <= 16, "a kind fits in four bits");

/* Chopstix's vital signs (papers/chopstix-vital-signs-sketches.txt),
 * units in kmod/vitals.h. */
enum propel_vital {
	PROPEL_VITAL_CPU = 0,
	PROPEL_VITAL_L2MISS,
	PROPEL_VITAL_SCHED,
	PROPEL_VITAL_BLOCK,
	PROPEL_VITAL_BLKIO,
	PROPEL_VITAL_KMEM,
	PROPEL_VITAL_UMEM,
	PROPEL_VITAL_SYSCALL,
	PROPEL_VITAL_SIGNAL,
	PROPEL_VITAL_SOCK,
	PROPEL_VITAL_LOCK,
	PROPEL_VITAL_NR
};

#ifndef __bpf__
/* "cpu", "l2miss", ...; "?" for an unknown id (share/kinds.c). */
const char *propel_vital_name(int vital);
/* The id of a name; -1 when none. */
int propel_vital_lookup(const char *name);
#endif

#endif
