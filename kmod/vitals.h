/*
 * kmod/vitals.h - the structs shared by the eBPF collector of vital signs
 * (kmod/vitals.bpf.c) and its loader (kmod/vitals.c).  Nothing else.
 *
 * Chopstix (papers/chopstix-vital-signs-sketches.txt, Figure 2) on eBPF:
 * each vital keeps, per epoch, a hashed counter array (HCA, the sketch)
 * indexed by hash(label, executable id, uid); an event adds its weight to
 * its counter and is sampled (stacks + data sent through a ring buffer) when
 * the counter passes a power of t = 2^tshift[vital].  Two copies of every
 * per-epoch structure exist, selected by `parity`; the loader flips parity
 * at an epoch boundary, then reads and clears the idle copy.
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

enum vitals_kind {
	VITALS_CPU = 0,
	VITALS_L2MISS,
	VITALS_SCHED,
	VITALS_BLOCK,
	VITALS_BLKIO,
	VITALS_KMEM,
	VITALS_UMEM,
	VITALS_SYSCALL,
	VITALS_SIGNAL,
	VITALS_SOCK,
	VITALS_LOCK,
	VITALS_NR,
};

#define VITALS_HCA_SIZE 2048 /* counters per vital per epoch (power of 2) */
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
	unsigned int uid;
	unsigned int pad;
	char comm[VITALS_COMM_LEN];
};

/* One sample, sent through the ring buffer. */
struct vitals_sample {
	unsigned long long ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	unsigned long long weight;
	unsigned long long counter; /* HCA counter after the update */
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

#endif
