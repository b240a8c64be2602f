/*
 * share/record.h - the trace record: what the agent writes and the engine reads.
 *
 * Every event is one 16-byte record (TraceBack 3.1: fixed-size records in
 * wrap-around buffers).  Word 0 holds the raw TSC shifted left by four bits
 * with the record type in the low nibble; words a and b are type specific.
 * A record whose word 0 is zero is an empty slot (a ring's first lap; later
 * laps end at the first record older than the sub-buffer: share/ring.h);
 * the agent writes word 0 last, so a record with a non-zero word 0 is
 * complete even after a kill -9.
 *
 * TSC values are converted to nanoseconds (CLOCK_MONOTONIC) by the engine,
 * using the calibration pairs stored in each ring header (share/ring.h).
 *
 *   type           a                    b
 *   ENTRY          function id          call-site id (PROPEL_SITE_NONE if none)
 *   EXIT           function id          call-site id | PROPEL_EXIT_UNWOUND
 *                  (of a function whose map F line has flag 4 / 8: followed
 *                  by ARG(the argument / return value a directive names))
 *   SIGNAL         signo                si_code; followed by ARG(fault addr), ARG(pc)
 *   ARG            low 32 bits          high 32 bits of a 64-bit argument
 *   THREAD_START   parent tid           0
 *   THREAD_EXIT    0                    0
 *   FORK           child pid            PROPEL_FORK_VFORK if made by vfork
 *   EXEC           0                    0 ; followed by nothing: the path is in the .map file
 *   PROCESS_EXIT   exit status          0
 *   SEND, RECV     fd                   bytes (the call's result); followed by
 *                                       ARG(stream offset, or datagram hash),
 *                                       ARG(channel id | flags << 32: 1 offset,
 *                                       2 hash, 4 held), ARG(TSC at the call's
 *                                       entry), and when held ARG(TSC when the
 *                                       agent began holding the send for its
 *                                       propagation request: propagate.c)
 *                                       (inject/agent/comm.c)
 *   LOST           records dropped      the shadow depth's change over the gap (int32)
 *   CALL           function id          call-site id: a whole call of a function
 *                                       that records nothing inside (an ENTRY and
 *                                       its EXIT at once: inject/agent/tramp.S)
 *   SWITCH         0                    the depth's change (int32): the thread
 *                                       switched to another context's frames
 *                                       (swapcontext/setcontext, a makecontext
 *                                       function's end: inject/agent/context.c)
 *
 * Function and call-site ids index the per-process map file (share/ring.h).
 */
#ifndef PROPEL_SHARE_RECORD_H
#define PROPEL_SHARE_RECORD_H

#include <stdint.h>

#include "share/clock.h" /* propel_rdtsc */
#include "share/kinds.h"

/* A record's type: an event kind (share/kinds.h) or one of the ring's own
 * (EMPTY, ARG, CALL). */
enum propel_rec_type {
	PROPEL_REC_EMPTY = 0,
	PROPEL_REC_ENTRY = PROPEL_KIND_ENTRY,
	PROPEL_REC_EXIT = PROPEL_KIND_EXIT,
	PROPEL_REC_SIGNAL = PROPEL_KIND_SIGNAL,
	PROPEL_REC_ARG = 4,
	PROPEL_REC_THREAD_START = PROPEL_KIND_THREAD_START,
	PROPEL_REC_THREAD_EXIT = PROPEL_KIND_THREAD_EXIT,
	PROPEL_REC_FORK = PROPEL_KIND_FORK,
	PROPEL_REC_EXEC = PROPEL_KIND_EXEC,
	PROPEL_REC_PROCESS_EXIT = PROPEL_KIND_PROCESS_EXIT,
	PROPEL_REC_SEND = PROPEL_KIND_SEND,
	PROPEL_REC_RECV = PROPEL_KIND_RECV,
	PROPEL_REC_LOST = PROPEL_KIND_LOST,
	PROPEL_REC_CALL = 13, /* never a session's kind: ingest splits it */
	PROPEL_REC_SWITCH = 14, /* never a session's kind: ingest moves depth */
	PROPEL_REC_NTYPES
};

/* The ring ABI: a record's type nibble, written by agents of other builds
 * and read from rings that outlived them, is these numbers for good. */
_Static_assert(PROPEL_REC_EMPTY == 0 && PROPEL_REC_ENTRY == 1 &&
		       PROPEL_REC_EXIT == 2 && PROPEL_REC_SIGNAL == 3 &&
		       PROPEL_REC_ARG == 4 && PROPEL_REC_THREAD_START == 5 &&
		       PROPEL_REC_THREAD_EXIT == 6 && PROPEL_REC_FORK == 7 &&
		       PROPEL_REC_EXEC == 8 && PROPEL_REC_PROCESS_EXIT == 9 &&
		       PROPEL_REC_SEND == 10 && PROPEL_REC_RECV == 11 &&
		       PROPEL_REC_LOST == 12 && PROPEL_REC_CALL == 13 &&
		       PROPEL_REC_SWITCH == 14,
	       "the ring ABI's record types");
_Static_assert(PROPEL_REC_NTYPES <= 16, "a record type fits in four bits");

#define PROPEL_SITE_NONE 0x7fffffffu
#define PROPEL_EXIT_UNWOUND 0x80000000u /* frame left by longjmp/exception */
#define PROPEL_FORK_VFORK 1u /* FORK: the child shared memory until exec/_exit */

struct propel_rec {
	uint64_t w0; /* tsc << 4 | type; zero = empty */
	uint32_t a;
	uint32_t b;
};

_Static_assert(sizeof(struct propel_rec) == 16, "a record is 16 bytes");

static inline unsigned propel_rec_type(const struct propel_rec *r)
{
	return (unsigned)(r->w0 & 0xf);
}

static inline uint64_t propel_rec_tsc(const struct propel_rec *r)
{
	return r->w0 >> 4;
}

static inline uint64_t propel_rec_w0(uint64_t tsc, unsigned type)
{
	return (tsc << 4) | (type & 0xf);
}

#endif
