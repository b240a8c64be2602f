/*
 * kmod/vitals.h - the structs shared by the eBPF collector of vital signs
 * (kmod/vitals.bpf.c) and its loader (kmod/vitals.c).  Nothing else.
 *
 * Chopstix (papers/chopstix-vital-signs-sketches.txt, Figure 2) on eBPF:
 * each vital keeps, per epoch and per CPU, a hashed counter array (HCA,
 * the sketch) indexed by hash(label, executable id, uid); an event adds its
 * weight to VITALS_HCA_ROWS counters of one chunk (a count-min sketch: the
 * estimate is the smallest; each counter also keeps a 16-bit fingerprint
 * of its label so that a label whose counters were all taken by others is
 * still seen as new) and is sampled (stacks + data sent through a
 * ring buffer) when the estimate passes a power of t = 2^tshift[vital].
 * A cell (struct vitals_cell) is one chunk of one vital's sketch with the
 * chunk's event totals and a direct-mapped cache of per-process sums, so
 * that an event costs one per-CPU array lookup and no atomic operation.
 * Two copies of every per-epoch cell exist, selected by `parity`; the
 * loader flips parity at an epoch boundary, then reads and clears the idle
 * copy.
 *
 * Weight units (the `value` a report shows is the sum of weights):
 *   cpu: cpu-clock ticks (1 tick = 1/cpu_hz s)   l2miss: overflows of the
 *   cache-miss counter (1 = VITALS_L2_PERIOD misses)   sched: us runnable
 *   but not running   block: us blocked in uninterruptible sleep
 *   blkio: 512-byte sectors issued   kmem: pages allocated   umem: user page
 *   faults   syscall: calls   signal: deliveries   sock: bytes sent+received
 *   lock: us waited on a contended kernel lock
 */
#ifndef PROPEL_KMOD_VITALS_H
#define PROPEL_KMOD_VITALS_H

#include "share/kinds.h"

/* The vital ids (share/kinds.h) by the collector's names. */
#define VITALS_CPU PROPEL_VITAL_CPU
#define VITALS_L2MISS PROPEL_VITAL_L2MISS
#define VITALS_SCHED PROPEL_VITAL_SCHED
#define VITALS_BLOCK PROPEL_VITAL_BLOCK
#define VITALS_BLKIO PROPEL_VITAL_BLKIO
#define VITALS_KMEM PROPEL_VITAL_KMEM
#define VITALS_UMEM PROPEL_VITAL_UMEM
#define VITALS_SYSCALL PROPEL_VITAL_SYSCALL
#define VITALS_SIGNAL PROPEL_VITAL_SIGNAL
#define VITALS_SOCK PROPEL_VITAL_SOCK
#define VITALS_LOCK PROPEL_VITAL_LOCK
#define VITALS_NR PROPEL_VITAL_NR

#define VITALS_HCA_SIZE 2048 /* counters per chunk (power of 2) */
#define VITALS_HCA_BLOCK 8   /* counters per 64-byte block: a label's
				VITALS_HCA_ROWS counters are in one block,
				so an event touches one cache line */
#define VITALS_HCA_CHUNKS 2  /* chunks per vital per epoch per CPU */
#define VITALS_HCA_ROWS 3    /* counters an event adds to (count-min) */
#define VITALS_PSLOTS 64     /* per-process cache slots per chunk */
#define VITALS_RING_BYTES (2 << 20) /* samples in flight to the loader */
#define VITALS_STACK_DEPTH 32
#define VITALS_COMM_LEN 16
#define VITALS_L2_PERIOD 10000

/* Key of the per-process aggregate map `procs`: tgid x vital x parity. */
struct vitals_proc_key {
	unsigned int tgid;
	unsigned short vital;
	unsigned short parity;
};

struct vitals_proc_val {
	unsigned long long value; /* sum of weights */
	unsigned long long count; /* events */
	unsigned long long aux;   /* blkio: us of device latency */
	unsigned long long short_io; /* blkio: unsatisfied requests */
	unsigned int uid;
	unsigned int pad;
	char comm[VITALS_COMM_LEN];
};

/* One slot of the per-process cache: the sums of one process (tgid) on
 * one CPU until another process takes the slot (the sums then go to the
 * shared `procs` hash) or the epoch ends (the loader reads both). */
struct vitals_pslot {
	unsigned int tgid;
	unsigned int uid;
	unsigned long long value, count, aux;
	unsigned long long short_io; /* blkio: unsatisfied requests (rule 3) */
	char comm[VITALS_COMM_LEN];
};

/* Value of the per-CPU array `tally`, key the vital: its samples since
 * the collector began (sent, dropped: the ring was full; shed: not taken,
 * the ring was filling).  Never written by the loader, which takes each
 * epoch's difference: a program still on the old copy when the loader
 * read and cleared it (a vCPU preempted past the 3 ms it waits) counted
 * into the cleared cell and its sample was stored uncounted (fcr9:
 * vitals-workloads, 11,011 samples stored of 11,010 taken).  A sample is
 * counted before it is sent: the loader that reads it from the ring
 * reads its count too. */
struct vitals_tally {
	unsigned long long nsampled, ndropped, nshed, pad;
};

/* Key of the per-CPU array `cells`:
 *   (parity * VITALS_NR + vital) * VITALS_HCA_CHUNKS + chunk */
struct vitals_cell {
	/* events and weights are the sums of the slots' (and of the rows
	 * evicted to `procs`): not counted twice on the hot path */
	struct vitals_pslot slot[VITALS_PSLOTS];
	struct vitals_ctr {
		unsigned int n;
		unsigned short fp; /* fingerprint of its label (hca_add) */
		unsigned short pad;
	} hca[VITALS_HCA_SIZE];
};

#define VITALS_NCELLS (2 * VITALS_NR * VITALS_HCA_CHUNKS)

/* The labels a vital has seen in this run, on any CPU and in either copy
 * of the cells: a 16-bit fingerprint in one of two slots chosen by the
 * label's hash (value of the array `seen`, one per vital).  Consulted
 * only when a cell's sketch takes a label for new, so that a label is
 * sampled as new once per run, not once per CPU, parity and eviction from
 * a crowded sketch. */
#define VITALS_SEEN 32768
struct vitals_seen {
	unsigned short fp[VITALS_SEEN];
};

/* One sample as the user side sees it (kmod/vitals.c unpacks the record
 * of the ring buffer, struct vitals_wire, into this). */
struct vitals_sample {
	unsigned long long ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	unsigned long long weight;
	unsigned long long counter; /* HCA estimate after the update */
	unsigned long long label;
	unsigned long long data[4]; /* per vital, see vitals.bpf.c */
	unsigned int epoch;
	unsigned short vital;
	unsigned short tshift;
	unsigned int tgid;
	unsigned int tid;
	unsigned int uid;
	int kstack_bytes; /* < 0: not taken (-errno) */
	int ustack_bytes;
	char comm[VITALS_COMM_LEN];
	unsigned long long kstack[VITALS_STACK_DEPTH];
	unsigned long long ustack[VITALS_STACK_DEPTH];
};

/* The ring buffer's record: the same head, then the kernel frames and
 * right after them the user frames, only as many as were taken (a sample
 * is ~250 bytes, not 640: four times as many fit in the ring). */
struct vitals_wire {
	unsigned long long ts_ns;
	unsigned long long weight;
	unsigned long long counter;
	unsigned long long label;
	unsigned long long data[4];
	unsigned int epoch;
	unsigned short vital;
	unsigned short tshift;
	unsigned int tgid;
	unsigned int tid;
	unsigned int uid;
	int kstack_bytes;
	int ustack_bytes;
	char comm[VITALS_COMM_LEN];
	unsigned long long stack[2 * VITALS_STACK_DEPTH];
};

/* A sample of a label new to the run (not one of a power of t): the
 * kernel side marks its counter, the wire its tshift (the loader takes
 * the mark off; only the powers of t are what the watermark can move). */
#define VITALS_FRESH (1ULL << 63)
#define VITALS_TSHIFT_FRESH 0x8000

#define VITALS_WIRE_HEAD (sizeof(struct vitals_wire) - \
			  2 * VITALS_STACK_DEPTH * sizeof(unsigned long long))

#endif
