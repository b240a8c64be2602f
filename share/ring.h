/*
 * share/ring.h - the ring file: one per traced thread, in the session directory.
 *
 * Layout of a ring file (mapped MAP_SHARED by the agent, so it outlives the
 * process that wrote it):
 *
 *   offset 0      struct propel_ring_hdr (one page)
 *   offset 4096   sub_count sub-buffers of sub_recs records each
 *
 * Commit points (TraceBack 3.2).  The writer fills sub-buffer k = commits %
 * sub_count.  When it is full the writer (the agent's ring_advance):
 *   1. stores sub_tsc[(k+1) % sub_count] = now: when k+1 begins,
 *   2. stores the calibration pair (tsc_last, mono_last_ns),
 *   3. increments commits (release).
 * A reader therefore finds the newest record without any pointer from the
 * dead writer: the sub-buffer being written is commits % sub_count and its
 * records end at the first one that is empty (a ring's first lap) or older
 * than the sub-buffer's sub_tsc (left from the lap before: every one of
 * those was written before the commit that began this sub-buffer, by the
 * same thread).  Nothing is zeroed: the writer never sweeps a sub-buffer
 * through the cache ahead of itself.  The older, full sub-buffers precede
 * it in ring order.  A kill before step 3 leaves k current, its sub_tsc
 * as it was.
 *
 * Draining (keep_all set by the agent: propel record, attach --mode=full).
 * The coordinator's drain (share/drain.c) copies every committed
 * sub-buffer, in order, to the end of the ring file itself -- the spool,
 * after the ring's sub_count sub-buffers -- and then stores drained = the
 * number it has copied.  The writer never begins sub-buffer k while
 * k - drained >= sub_count (that would overwrite one not yet copied): it
 * drops the records instead, counting them, and the first record of the
 * sub-buffer it begins once the drain has caught up is LOST (share/
 * record.h) with the count.  The program never waits.  A reader takes
 * the spool's whole sub-buffers first, then the ring from the first
 * sub-buffer the spool does not hold; spool and ring together are the
 * thread's every record, also after propel was killed.
 *
 * The session directory (/dev/shm/propel/<session>/) holds, per process image
 * (a pid, renewed at exec), a nonce chosen at agent start:
 *   <pid>.<nonce>.map            text, appended one line per write(2):
 *       P <pid> <ppid> <nonce> <exe path>           process image
 *       M <modid> <bias-hex> <path>                  module (load bias)
 *       F <funcid> <addr-hex> <modid> <flags> <name|->   function
 *       S <siteid> <addr-hex> <funcid|-1>            call site (address of the
 *                                                    call; funcid = the traced
 *                                                    function containing it)
 *       C <chanid> <type> <laddr-hex|-> <lport> <paddr-hex|-> <pport> <lino> <pino>
 *                                                    a channel (tcp, udp, unix,
 *                                                    unixd, pipe) that SEND/RECV
 *                                                    records name (engine/chan.h)
 *       E <status>                                   clean exit seen
 *       B <funcid> leaf <ns> <insns>                 the cost budget left it
 *       B <funcid> rate <ns> <calls/s> <mean-ns> <sites>   untraced (inject/
 *                                                    agent/budget.c)
 *       U <caller-funcid> <funcid>                   its calls of funcid are
 *                                                    left out (the same)
 *   <pid>.<nonce>.<tid>.ring     the thread's ring
 *   chan.<pipe|unix>.<inode>     byte counts of a pipe or UNIX stream
 *                                direction (the pipe's inode, the sending
 *                                socket's), shared by every agent that
 *                                holds it (inject/agent/comm.c)
 *   chan.orphan.<inode>          the same, of a UNIX stream whose other end
 *                                is unknown
 *   chan.upeer.<inode>, chan.upend.<pid>.<hash>.<seq>
 *                                symlinks to a socket's inode: who is at
 *                                the other end of a UNIX stream
 *                                (inject/agent/comm.c)
 * F flags: 1 = PLT entry (name is the imported symbol), 2 = system library,
 * 4 = its ENTRY records are followed by ARG(an argument), 8 = its EXIT
 * records by ARG(rax): values a mapping directive names (share/agent-abi.h),
 * 16 = its ENTRY records are followed (after flag 4's one) by six ARGs, the
 * argument registers rdi, rsi, rdx, rcx, r8, r9 (--args).
 */
#ifndef PROPEL_SHARE_RING_H
#define PROPEL_SHARE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "share/record.h"

#define PROPEL_RING_MAGIC "PRPLRNG1"
#define PROPEL_RING_VERSION 2 /* 1: sub-buffers zeroed ahead, no sub_tsc */
#define PROPEL_RING_HDR_SIZE 4096
#define PROPEL_RING_SUBS 16   /* sub_count, at least */
#define PROPEL_RING_SUB_MAX 64 /* sub_count, from version 2 */
/* Ring size per thread when --buffer-size is not given (KiB): a flight
 * recorder keeps the newest 8 MiB; a drained ring (keep_all) is the
 * drain's headroom, 32 MiB: a thread that calls at full speed writes
 * ~800 MB/s here, so 8 MiB would hold the drain's hiccups only 10 ms.
 * Pages are made as the writer first reaches them (the agent's
 * ring_populate): a thread that records little never pays for them. */
#define PROPEL_RING_KB_FLIGHT 8192
#define PROPEL_RING_KB_FULL 32768
/* Sub-buffers of a large ring are kept near this size (up to
 * PROPEL_RING_SUB_MAX of them): the unit the drain copies and the writer
 * populates. */
#define PROPEL_RING_SUB_BYTES (512u * 1024)

#define PROPEL_RING_F_EXITED 1u /* thread exit record written */
/* a sub-buffer's pages could not be made (/dev/shm full): the writer
 * dropped records there, counted in `dropped`, instead of taking SIGBUS */
#define PROPEL_RING_F_NOSPACE 2u
/* the agent was switched off in its process (a stop, a sandbox entered),
 * which lives on untraced: said here too, as the map's X line may be lost
 * (sshd's pre-authentication child may write no file: RLIMIT_FSIZE 0) */
#define PROPEL_RING_F_STOPPED 4u

struct propel_ring_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint32_t pid;
	uint32_t tid;
	uint64_t nonce;
	uint32_t sub_count;
	uint32_t sub_recs;
	volatile uint64_t commits;
	uint64_t tsc0;
	uint64_t mono0_ns;
	volatile uint64_t tsc_last;
	volatile uint64_t mono_last_ns;
	volatile uint32_t flags;
	char comm[16];
	volatile uint64_t sub_tsc[PROPEL_RING_SUB_MAX]; /* when each began */
	uint32_t keep_all;          /* drained: never overwrite (above) */
	/* 1: every call record stamped now (--timing=exact): records with
	 * one stamp were written at one moment (a return that ends a tail
	 * call's frames too), not dated between two stamps (0: sampled, and
	 * rings older than the field) */
	uint32_t exact;
	volatile uint64_t drained;  /* sub-buffers the drain has copied */
	volatile uint64_t dropped;  /* records the writer dropped, in all */
};

_Static_assert(sizeof(struct propel_ring_hdr) <= PROPEL_RING_HDR_SIZE,
	       "the header fits its page");

/* A record's tsc as it stores it (60 bits), for comparing with sub_tsc. */
static inline uint64_t propel_rec_tsc60(uint64_t tsc)
{
	return tsc & (~0ull >> 4);
}

static inline size_t propel_ring_size(uint32_t sub_count, uint32_t sub_recs)
{
	return PROPEL_RING_HDR_SIZE +
	       (size_t)sub_count * sub_recs * sizeof(struct propel_rec);
}

/* Bytes of one sub-buffer (the spool's unit). */
static inline size_t propel_ring_sub_bytes(const struct propel_ring_hdr *h)
{
	return (size_t)h->sub_recs * sizeof(struct propel_rec);
}

static inline struct propel_rec *propel_ring_sub(struct propel_ring_hdr *h,
						 uint64_t k)
{
	char *base = (char *)h + PROPEL_RING_HDR_SIZE;

	return (struct propel_rec *)(base + (k % h->sub_count) * h->sub_recs *
						    sizeof(struct propel_rec));
}

/*
 * Reading a ring (engine side; also valid on a live ring, best effort).
 * Calls fn on every record from oldest to newest -- the spool's, then the
 * ring's (file_size covers both) -- stops if fn returns non-zero and
 * returns that value.  Returns -EINVAL on a malformed header.
 */
typedef int (*propel_ring_fn)(const struct propel_rec *r, void *arg);
int propel_ring_walk(const struct propel_ring_hdr *h, size_t file_size,
		     propel_ring_fn fn, void *arg);
/* The same, the spool's first `from` sub-buffers left out: the rest of a
 * walk that read them while the drain went (engine/ingest-live.c). */
int propel_ring_walk_from(const struct propel_ring_hdr *h, size_t file_size,
			  uint64_t from, propel_ring_fn fn, void *arg);

/* Check a mapped header; 0 or -EINVAL/-EPROTO with *why set. */
int propel_ring_check(const struct propel_ring_hdr *h, size_t file_size,
		      const char **why);

#endif
