// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/vitals.bpf.c - the kernel side of the vital-sign collector: one
 * program per trigger of chopstix Figure 2, all feeding vitals_account().
 *
 * Every label is hashed with the executable's identity (inode of its
 * file, exe_of) and the uid, as chopstix hashes it with a dcookie.
 *
 * Triggers (tp_btf needs BTF only, not tracefs; the loader disables any
 * program whose tracepoint this kernel lacks):
 *   cpu      perf_event cpu-clock     label: PC & ~0xfff (see ulabel)
 *   l2miss   perf_event cache-misses  label: PC & ~0xfff
 *   sched    sched_switch (switch-in of a task that was runnable)
 *            label: priority; weight: us since it was queued (the
 *            kernel's sched_info.last_queued, by the run queue's clock)
 *   block    sched_switch too: the switch-in of a task that slept in
 *            TASK_UNINTERRUPTIBLE (from its switch-out to its wakeup, the
 *            kernel's sched_info.last_queued: no program on every wakeup)
 *            label: priority; weight: us asleep
 *   blkio    block_rq_issue           label: pid, dev; weight: sectors
 *            block_rq_complete adds the device latency to the process
 *   kmem     kmem:mm_page_alloc       label: order, gfp; weight: pages
 *   umem     page_fault_user          label: PC & ~0xfff of the fault
 *   syscall  fentry x64_sys_call (no syscall-work flag on every task: the
 *            cheapest hook; tp_btf/sys_enter where fentry is refused)
 *            label: stack depth & ~0xff, syscall nr
 *   signal   signal_deliver           label: signo, handler
 *   sock     sock_send/recv_length    label: peer address, service port
 *            (the lower of the two ports); weight: bytes
 *   lock     contention_begin/end     label: lock address; weight: us
 *
 * The per-event path is who_current (the current task's ids from a per-CPU
 * cache that context switches invalidate: no helper call on a hit; direct
 * BTF loads, never a probe read, on a miss) and vitals_account: one per-CPU
 * array lookup, a hash, VITALS_HCA_ROWS plain adds and the process's cached
 * sums, and a two-instruction test that no power of 2 was passed: no
 * atomic, no hash map, no ring-buffer traffic, no stack walk; a label's
 * counters sit in one 64-byte block of the sketch.  A sample walks the
 * kernel stack only where the trigger's kernel path varies
 * (kstack_wanted: not at a syscall's entry, a user page fault or a tick in
 * user code).  (On a getppid loop the
 * syscall program's body costs ~12 ns, against ~57 ns before the cache and
 * the direct loads: bpf_get_current_uid_gid alone cost 26 ns.)  Only a
 * sampled event walks stacks and copies the frames it took into the ring,
 * and it wakes the loader
 * only when the ring is half full (the loader reads it on its own clock
 * otherwise).  Labels new in an epoch are always sampled (coverage, with
 * the fingerprints of hca_add); later powers of t are shed while the ring
 * is half full.
 *
 * sched and block happen in another task's context (the scheduler, the
 * waker), so they are sampled in two stages, as chopstix does: the decision
 * and the kernel stack (bpf_get_task_stack) are taken at once and parked in
 * the task's `pending` storage; the user stack is added when that task next
 * switches out.  Per-thread state (since when blocked, since when waiting
 * on a lock) is task-local storage, not a hash map, touched only by the
 * tasks in those states; the run-queue wait is the kernel's own.
 *
 * Every event also adds to its process's sums (struct vitals_pslot), the
 * exact per-process breakdown the report prints.  The collector's own
 * process (self_tgid) is not counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "vitals.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 self_tgid = 0;
const volatile __u64 sched_min_ns = 50000; /* delay-qualifying threshold */
/* sched_switch carries two vitals; each may be off alone (--disable) */
const volatile __u32 sched_off = 0;
const volatile __u32 block_off = 0;
/* Beside a trace (engine/vitals-trace.c): count only the processes of
 * `tgids`, the off-CPU tracer's map (kmod/offcpu.bpf.c, value 1 = traced),
 * which the loader shares with this object.  Off: no lookup at all. */
const volatile __u32 filter_tgids = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} tgids SEC(".maps");

/* Written by the loader through the mmap'd .bss. */
__u32 parity = 0;
__u32 epoch = 0;
__u32 tshift[VITALS_NR];

/* Per-epoch state, two copies, per CPU: see struct vitals_cell. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VITALS_NCELLS);
	__type(key, __u32);
	__type(value, struct vitals_cell);
} cells SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, VITALS_RING_BYTES);
} samples SEC(".maps");

/* Per-process sums evicted from a cell's cache (rare: a slot is shared by
 * processes whose tgids collide on one CPU within an epoch). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct vitals_proc_key);
	__type(value, struct vitals_proc_val);
} procs SEC(".maps");

/* Per-thread state, only for the rarer states: since when blocked in
 * uninterruptible sleep, since when waiting on a contended lock.  (The
 * run-queue wait needs none: the kernel keeps it, sched_info.last_queued.) */
struct tstate {
	__u64 ts;
	__u32 kind;
	__u32 pad;
	__u64 lock_ts;
};
#define TS_BLOCKED 2

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstate);
} tstates SEC(".maps");

/* Two-stage samples waiting for their task to run; nparked counts them
 * (while it is 0 a context switch looks for none). */
__u32 nparked = 0;
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vitals_wire);
} pending SEC(".maps");

/* Labels seen in this run, per vital (struct vitals_seen): not per CPU,
 * written only when a label is new to a cell. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VITALS_NR);
	__type(key, __u32);
	__type(value, struct vitals_seen);
} seen SEC(".maps");

/* Samples per vital since the start: see struct vitals_tally. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VITALS_NR);
	__type(key, __u32);
	__type(value, struct vitals_tally);
} tally SEC(".maps");

static __always_inline struct vitals_tally *tally_of(__u32 vital)
{
	__u32 k = vital < VITALS_NR ? vital : 0;

	return bpf_map_lookup_elem(&tally, &k);
}

/* Where a sample is built before it is sent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vitals_wire);
} scratch SEC(".maps");

/* Block requests in flight: the issuing tgid and time of a request, in a
 * slot chosen by its address (an array, not a hash map: no lock, no
 * allocation; a request whose slot another took loses its latency). */
#define VITALS_RQ_SLOTS 4096
struct rqinfo {
	__u64 rq;
	__u64 ts;
	__u32 tgid;
	__u32 bytes; /* asked for */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VITALS_RQ_SLOTS);
	__type(key, __u32);
	__type(value, struct rqinfo);
} rqs SEC(".maps");


static __always_inline __u32 ilog2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* A request in flight is named by its queue, hardware queue and tag
 * (pointers cannot be hashed); *id gets the name, never 0. */
static __always_inline struct rqinfo *rq_slot(struct request *rq, __u64 *id)
{
	__u64 h = ((__u64)(__u32)rq->q->id << 40) ^
		  ((__u64)rq->mq_hctx->queue_num << 20) ^ (__u32)rq->tag;
	__u32 k = (__u32)(mix64(h) & (VITALS_RQ_SLOTS - 1));

	*id = h | (1ULL << 63);
	return bpf_map_lookup_elem(&rqs, &k);
}

/* Who an event belongs to: the task (NULL for the current task until a
 * rare path needs it: who_task_ptr), its ids, its executable and the
 * bounds of its address space that ulabel() needs. */
struct who_id {
	__u32 tgid, tid, uid, pad;
	__u64 exe;
	__u64 start_stack, start_code, end_code, mmap_base;
};
struct who {
	struct task_struct *task;
	union {
		struct who_id id;
		struct { /* the same fields, by their names */
			__u32 tgid, tid, uid, pad;
			__u64 exe;
			__u64 start_stack, start_code, end_code, mmap_base;
		};
	};
};

/*
 * The current task's struct who, per CPU, valid while no context switch
 * happened on this CPU since it was filled: the sched_switch program bumps
 * `gen`, a fill stores valid = gen + 1.  A hit costs no helper call (on
 * this machine's kernels a helper call and return, with the return-stack
 * mitigations, cost as much as the rest of an event).  A reader checks
 * gen again after copying (a seqlock against preemption between its
 * reads); a successful exec invalidates it (same task, new program: the
 * sched_process_exec program).  Used only while both programs are
 * attached (who_cache_on, set by the loader).  A uid changed by setuid()
 * shows from the task's next context switch on.
 */
struct whocache {
	__u64 gen;
	__u64 valid;
	struct who_id id;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct whocache);
} whoc SEC(".maps");
__u32 who_cache_on = 0;

/*
 * The executable's identity (chopstix's dcookie): inode and device of
 * mm->exe_file, so that the processes of one program share labels (a shell
 * forking a thousand children samples its page faults once, not a thousand
 * times); the tgid where there is no file (kernel threads).  Direct BTF
 * loads, no helper calls.
 */
static __always_inline __u64 exe_of(struct task_struct *t, __u32 tgid)
{
	struct mm_struct *mm = t->mm;
	struct file *f;
	struct inode *ino;

	if (!mm)
		return tgid;
	f = mm->exe_file;
	if (!f)
		return tgid;
	ino = f->f_inode;
	if (!ino)
		return tgid;
	return ino->i_ino ^ ((__u64)ino->i_sb->s_dev << 40);
}

/*
 * User addresses as labels, made independent of address-space layout
 * randomization so that runs of one program share them: a PC in the main
 * executable's text as its offset there, other user PCs (libraries, the
 * dynamic loader, all mapped top-down from mmap_base in a fixed order) as
 * their distance below mmap_base, a stack pointer as its depth below the
 * initial stack.  Kernel addresses are left as they are.
 */
#define LBL_RAW 0
#define LBL_PC 1
#define LBL_SP 2
static __always_inline __u64 ulabel(const struct who *w, __u64 a, int kind)
{
	if (kind == LBL_RAW || a >= 0xffff800000000000ULL || !w->mmap_base)
		return a;
	if (kind == LBL_SP)
		return w->start_stack - a;
	if (a >= w->start_code && a < w->end_code)
		return a - w->start_code;
	return (w->mmap_base - a) | (1ULL << 62);
}

/* Direct loads from a trusted task pointer: no helper, no probe read. */
static __always_inline void who_task(struct who *w, struct task_struct *t)
{
	struct mm_struct *mm = t->mm;

	w->task = t;
	w->tgid = t->tgid;
	w->tid = t->pid;
	w->uid = t->cred->uid.val;
	w->exe = exe_of(t, w->tgid);
	w->start_stack = mm ? mm->start_stack : 0;
	w->start_code = mm ? mm->start_code : 0;
	w->end_code = mm ? mm->end_code : 0;
	w->mmap_base = mm ? mm->mmap_base : 0;
}

/* The current task: from the per-CPU cache, else one helper call. */
static __always_inline void who_current(struct who *w)
{
	__u32 zero = 0;
	struct whocache *wc = who_cache_on ? bpf_map_lookup_elem(&whoc, &zero)
					   : 0;
	__u64 g;

	if (wc) {
		g = *(volatile __u64 *)&wc->gen;
		if (*(volatile __u64 *)&wc->valid == g + 1) {
			__builtin_memcpy(&w->id, &wc->id, sizeof(w->id));
			asm volatile("" ::: "memory");
			if (*(volatile __u64 *)&wc->gen == g) {
				w->task = 0;
				return;
			}
		}
	}
	who_task(w, bpf_get_current_task_btf());
	w->task = 0; /* the same whether or not it came from the cache */
	if (wc) {
		__builtin_memcpy(&wc->id, &w->id, sizeof(w->id));
		asm volatile("" ::: "memory");
		wc->valid = g + 1;
	}
}

/* The task of w, fetched for the current task when a rare path (a new
 * process slot, a sample) needs it. */
static __always_inline struct task_struct *who_task_ptr(struct who *w)
{
	if (!w->task)
		w->task = bpf_get_current_task_btf();
	return w->task;
}

/* A context switch on this CPU: the cached identity is stale. */
static __always_inline void who_cache_switch(void)
{
	__u32 zero = 0;
	struct whocache *wc = bpf_map_lookup_elem(&whoc, &zero);

	if (wc)
		wc->gen++;
}

/* exec: the task stays, its program (exe, address space) changes. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(vitals_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 zero = 0;
	struct whocache *wc = bpf_map_lookup_elem(&whoc, &zero);

	if (wc)
		wc->valid = 0;
	return 0;
}

static __always_inline struct vitals_cell *cell_of(__u32 p, __u32 vital,
						  __u32 chunk)
{
	__u32 key = (p * VITALS_NR + vital) * VITALS_HCA_CHUNKS + chunk;

	return bpf_map_lookup_elem(&cells, &key);
}

/*
 * The rare paths of an event (a slot's eviction, a label new to its cell,
 * a power of t passed, a sample's tail) are global functions: each is
 * verified once per program, on its own, where inlined it was verified
 * once per path of the accounting that reaches it (11,000 instructions
 * processed for a program of 700, 4,600 now).  The programs' load took
 * ~1.3 s of the verifier's CPU, which a loaded machine stretched past
 * 30 s (bench-short/vitals: "did not start"); the common event calls none
 * of them.
 */

/* Move the sums of slot idx of cell `cell` into the shared hash (atomics:
 * any CPU), before another process takes the slot. */
__noinline int vitals_slot_evict(__u32 cell, __u32 idx, __u32 vital, __u32 p)
{
	struct vitals_cell *c = bpf_map_lookup_elem(&cells, &cell);
	struct vitals_proc_key k = { .vital = vital, .parity = p };
	struct vitals_proc_val *v, init = {};
	struct vitals_pslot *sl;

	if (!c)
		return 0;
	sl = &c->slot[idx & (VITALS_PSLOTS - 1)];
	k.tgid = sl->tgid;
	v = bpf_map_lookup_elem(&procs, &k);
	if (!v) {
		init.uid = sl->uid;
		__builtin_memcpy(init.comm, sl->comm, sizeof(init.comm));
		bpf_map_update_elem(&procs, &k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&procs, &k);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->value, sl->value);
	__sync_fetch_and_add(&v->count, sl->count);
	__sync_fetch_and_add(&v->aux, sl->aux);
	__sync_fetch_and_add(&v->short_io, sl->short_io);
	return 0;
}

/* The process's slot in cell c (key `cell`), taken (after evicting its
 * holder) when another process holds it; its comm from w's task (w NULL:
 * left empty, the loader fills it). */
static __always_inline struct vitals_pslot *
slot_get(struct vitals_cell *c, __u32 cell, __u32 vital, __u32 p, __u32 tgid,
	 __u32 uid, struct who *w)
{
	__u32 idx = (tgid * 2654435761u >> 16) & (VITALS_PSLOTS - 1);
	struct vitals_pslot *sl = &c->slot[idx];

	if (sl->tgid == tgid)
		return sl;
	if (sl->tgid)
		vitals_slot_evict(cell, idx, vital, p);
	sl->tgid = tgid;
	sl->uid = uid;
	sl->value = sl->count = sl->aux = sl->short_io = 0;
	sl->comm[0] = 0;
	if (w) {
		struct task_struct *leader = who_task_ptr(w)->group_leader;

		if (leader)
			bpf_probe_read_kernel_str(&sl->comm, sizeof(sl->comm),
						  leader->comm);
	}
	return sl;
}

/*
 * Add w to the label's VITALS_HCA_ROWS counters.  *oldmin: the estimate
 * before (the smallest of them); *mine: whether one of them carries the
 * label's fingerprint.  A label whose counters were all taken by others
 * when it first came (a collision that would hide it, chopstix §5.3) owns
 * none of them: it writes its fingerprint over the smallest and counts as
 * new, so that a rare event is sampled however crowded the sketch is.
 */
static __always_inline __u32 hca_add(struct vitals_cell *c, __u64 h, __u32 w,
				     __u32 *oldmin, int *mine)
{
	__u32 i, lo = 0xffffffffu, olo = 0xffffffffu, imin = 0, pos[3];
	__u32 blk = ((h >> 1) & (VITALS_HCA_SIZE / VITALS_HCA_BLOCK - 1)) *
		    VITALS_HCA_BLOCK;
	__u16 fp = (__u16)(h >> 48) | 1;
	int own = 0;

	/* three distinct counters of the block: offsets 0, 1..4, 5..6 */
	pos[0] = (h >> 20) & 7;
	pos[1] = (pos[0] + 1 + ((h >> 23) & 3)) & 7;
	pos[2] = (pos[0] + 5 + ((h >> 25) & 1)) & 7;
#pragma unroll
	for (i = 0; i < VITALS_HCA_ROWS; i++) {
		__u32 j = (blk + pos[i]) & (VITALS_HCA_SIZE - 1);
		struct vitals_ctr *ctr = &c->hca[j];
		__u32 o = ctr->n, n = o + w;

		if (n < o)
			n = 0xffffffffu; /* saturate */
		ctr->n = n;
		if (ctr->fp == fp)
			own = 1;
		else if (!o)
			ctr->fp = fp; /* a free counter: take it */
		if (o < olo) {
			olo = o;
			imin = j;
		}
		if (n < lo)
			lo = n;
	}
	if (!own && olo) {
		c->hca[imin & (VITALS_HCA_SIZE - 1)].fp = fp;
		olo = 0;
	}
	*oldmin = olo;
	*mine = own;
	return lo;
}

/*
 * Has this vital seen the label of hash h in this run (on another CPU, in
 * the other copy of the cells, or before a crowded sketch gave its
 * counters to others)?  If not it is remembered now: in a free one of its
 * two slots, else over one of them chosen by the hash.  Plain loads and a
 * store (two CPUs racing on a slot lose at most one label: sampled once
 * more later).  Called only for a label new to its cell.
 */
__noinline int vitals_seen_before(__u32 vital, __u64 h)
{
	struct vitals_seen *s = bpf_map_lookup_elem(&seen, &vital);
	__u32 i = (__u32)(h >> 33) & (VITALS_SEEN - 2);
	__u16 fp = (__u16)(h >> 17) | 1;

	if (!s)
		return 0;
	if (s->fp[i] == fp || s->fp[i + 1] == fp)
		return 1;
	if (s->fp[i] && (!s->fp[i + 1] || (h >> 32) & 1))
		i++;
	s->fp[i & (VITALS_SEEN - 1)] = fp;
	return 0;
}

/*
 * The estimate of a label of cell `cell` went from old to new past a
 * power of 2: 1 when it passed a power of t (= 2^tshift) and is worth a
 * sample.  Not when the ring is filling up: then only labels new in this
 * epoch are (they are what coverage is made of; the loader is behind and
 * will drop someone).
 */
__noinline int vitals_power(__u32 vital, __u32 old, __u32 new)
{
	struct vitals_tally *ty;
	__u32 k;

	k = tshift[vital < VITALS_NR ? vital : 0];
	if (k == 0)
		k = 1;
	if (ilog2_u64(old) / k == ilog2_u64(new) / k)
		return 0;
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >=
	    VITALS_RING_BYTES / 2) {
		ty = tally_of(vital);
		if (ty)
			ty->nshed++;
		return 0;
	}
	return 1;
}

/*
 * Count one event; return non-zero when it is to be sampled (2: the first
 * of its label, 1: its estimate passed a power of t), filling *counter.
 */
static __always_inline int vitals_account(__u32 vital, struct who *w,
					  __u64 label, __u64 weight,
					  __u64 *counter,
					  struct vitals_cell **cp, __u32 *keyp)
{
	__u32 p = parity & 1, old, new;
	struct vitals_cell *c;
	int mine;
	struct vitals_pslot *sl;
	__u64 h, hw;

	if (vital >= VITALS_NR)
		return 0;
	if (w->tgid == self_tgid || w->tgid == 0)
		return 0;
	if (filter_tgids) {
		__u32 *t = bpf_map_lookup_elem(&tgids, &w->tgid);

		if (!t || *t != 1)
			return 0;
	}
	if (weight == 0)
		weight = 1;
	h = mix64(label ^ (w->exe << 20) ^ ((__u64)w->uid << 48) ^
		  ((__u64)vital << 56));
	*keyp = (p * VITALS_NR + vital) * VITALS_HCA_CHUNKS +
		(__u32)(h & (VITALS_HCA_CHUNKS - 1));
	c = bpf_map_lookup_elem(&cells, keyp);
	if (!c)
		return 0;
	*cp = c;
	sl = slot_get(c, *keyp, vital, p, w->tgid, w->uid, w);
	sl->value += weight;
	sl->count++;

	/* the sketch counts time in ~ms (chopstix: jiffies), not us: a
	 * label's samples grow with log2 of its total, and us would give ten
	 * more per label and epoch than ms.  The sums above stay in us. */
	hw = weight;
	if (vital == VITALS_SCHED || vital == VITALS_BLOCK ||
	    vital == VITALS_LOCK)
		hw = 1 + (weight >> 10);
	new = hca_add(c, h, hw > 0xffffffffu ? 0xffffffffu : hw, &old, &mine);
	*counter = new;
	/* First of its label in this epoch on this CPU.  A label that was
	 * here in an earlier epoch still owns its fingerprint (the loader
	 * clears the counters, not the fingerprints): it is sampled at the
	 * powers of t like any other, so that under cost pressure (t high) a
	 * machine that runs the same programs over and over does not sample
	 * all of their labels again every second.  A label new to this cell
	 * but seen before by the vital (seen_before: on the other CPU, in the
	 * other copy, or pushed out of a crowded sketch) is no new label. */
	if (old == 0 && !mine && !vitals_seen_before(vital, h)) {
		*counter = new | VITALS_FRESH; /* says so to the loader */
		return 2;
	}
	/* the common case, in two instructions: no power of 2 was passed
	 * (the highest bit of the estimate did not move), so no power of
	 * t = 2^k either */
	if ((old ^ new) <= old)
		return 0;
	return vitals_power(vital, old, new);
}

/* A sample's head but its comm. */
static __always_inline void fill_ids(struct vitals_wire *s, __u32 vital,
				     struct who *w, __u64 label, __u64 weight,
				     __u64 counter)
{
	s->ts_ns = bpf_ktime_get_ns();
	s->weight = weight;
	s->counter = counter & ~VITALS_FRESH;
	s->label = label;
	s->epoch = epoch;
	s->vital = vital;
	s->tshift = tshift[vital < VITALS_NR ? vital : 0] |
		    (counter & VITALS_FRESH ? VITALS_TSHIFT_FRESH : 0);
	s->tgid = w->tgid;
	s->tid = w->tid;
	s->uid = w->uid;
}

static __always_inline void fill_head(struct vitals_wire *s, __u32 vital,
				      struct who *w, __u64 label,
				      __u64 weight, __u64 counter)
{
	struct task_struct *leader = who_task_ptr(w)->group_leader;

	fill_ids(s, vital, w, label, weight, counter);
	s->comm[0] = 0;
	if (leader)
		bpf_probe_read_kernel_str(&s->comm, sizeof(s->comm),
					  leader->comm);
}

/* Sample an event of the current task: both stacks from ctx. */
/* Wake the loader only when the ring is half full: it reads the ring on
 * its own clock otherwise (no wakeup, no context switch per sample). */
static __always_inline __u64 wake_flags(void)
{
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >=
			       VITALS_RING_BYTES / 2
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* Send a sample built in s: its kernel frames are in place (kstack_bytes
 * of them, at the start of s->stack), the current task's user frames go
 * right after them; only the bytes taken travel.  0 or -errno. */
static __always_inline long send_wire(void *ctx, struct vitals_wire *s)
{
	__u64 kb, ub, size;
	long r;

	r = s->kstack_bytes;
	kb = r > 0 ? r : 0;
	if (kb > VITALS_STACK_DEPTH * 8)
		kb = VITALS_STACK_DEPTH * 8;
	r = bpf_get_stack(ctx, (char *)s->stack + kb, VITALS_STACK_DEPTH * 8,
			  BPF_F_USER_STACK);
	s->ustack_bytes = r;
	ub = r > 0 ? r : 0;
	if (ub > VITALS_STACK_DEPTH * 8)
		ub = VITALS_STACK_DEPTH * 8;
	size = VITALS_WIRE_HEAD + kb + ub;
	if (size > sizeof(*s))
		size = sizeof(*s);
	return bpf_ringbuf_output(&samples, s, size, wake_flags());
}

/* Send s counted: counted first (see struct vitals_tally). */
static __always_inline void send_counted(void *ctx, struct vitals_wire *s,
					 struct vitals_tally *ty)
{
	ty->nsampled++;
	if (send_wire(ctx, s)) {
		ty->nsampled--;
		ty->ndropped++;
	}
}

/*
 * Is the kernel stack of a sample of the current task worth its walk (the
 * costliest part of a sample)?  Not where the trigger's kernel path is
 * the same every time: a syscall's entry, a user page fault's, a cpu or
 * l2miss tick that interrupted user code (d0: the PC) -- those frames are
 * the entry and interrupt code the loader strips anyway.
 */
static __always_inline int kstack_wanted(__u32 vital, __u64 d0)
{
	if (vital == VITALS_SYSCALL || vital == VITALS_UMEM)
		return 0;
	if (vital == VITALS_CPU || vital == VITALS_L2MISS)
		return d0 >= 0xffff800000000000ULL;
	return 1;
}

/* A global function's argument that is the program's context (the
 * kernel reads the tag from BTF; libbpf's __arg_ctx, newer than ours). */
#define VITALS_ARG_CTX __attribute__((btf_decl_tag("arg:ctx")))

/* The tail of a sample of the current task (out of line: see
 * vitals_slot_evict): the head is in the per-CPU scratch (emit_current),
 * cell is the key of the cell that counts it. */
__noinline int vitals_send_current(void *ctx VITALS_ARG_CTX)
{
	__u32 zero = 0;
	struct vitals_wire *s = bpf_map_lookup_elem(&scratch, &zero);
	struct vitals_tally *ty;
	struct task_struct *leader;

	if (!s)
		return 0;
	ty = tally_of(s->vital);
	if (!ty)
		return 0;
	leader = bpf_get_current_task_btf()->group_leader;
	s->comm[0] = 0;
	if (leader)
		bpf_probe_read_kernel_str(&s->comm, sizeof(s->comm),
					  leader->comm);
	s->kstack_bytes = kstack_wanted(s->vital, s->data[0])
				  ? bpf_get_stack(ctx, s->stack,
						  VITALS_STACK_DEPTH * 8, 0)
				  : 0;
	send_counted(ctx, s, ty);
	return 0;
}

/* Sample an event of the current task: its head into the scratch, the
 * rest (comm, stacks, the ring) in vitals_send_current. */
static __always_inline void emit_current(void *ctx, __u32 vital, struct who *w,
					 __u64 label, __u64 weight,
					 __u64 counter,
					 __u64 d0, __u64 d1, __u64 d2, __u64 d3)
{
	__u32 zero = 0;
	struct vitals_wire *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return;
	fill_ids(s, vital, w, label, weight, counter);
	s->data[0] = d0;
	s->data[1] = d1;
	s->data[2] = d2;
	s->data[3] = d3;
	vitals_send_current(ctx);
}

/* An event of the current task, whose who_current() is in w. */
static __always_inline void event_who(void *ctx, __u32 vital, struct who *w,
				      __u64 label, int kind, __u64 weight,
				      __u64 d0, __u64 d1, __u64 d2, __u64 d3)
{
	struct vitals_cell *c = 0;
	__u64 counter;
	__u32 cell = 0;

	label = ulabel(w, label, kind);
	if (kind == LBL_PC)
		label &= ~0xfffULL; /* 4 KiB buckets of code: a function or a
				       few; finer buckets sampled a busy
				       machine's every cpu tick */
	if (vitals_account(vital, w, label, weight, &counter, &c, &cell) && c)
		emit_current(ctx, vital, w, label, weight, counter, d0, d1, d2,
			     d3);
}

static __always_inline void event_current_l(void *ctx, __u32 vital,
					    __u64 label, int kind, __u64 weight,
					    __u64 d0, __u64 d1, __u64 d2,
					    __u64 d3)
{
	struct who w;

	who_current(&w);
	event_who(ctx, vital, &w, label, kind, weight, d0, d1, d2, d3);
}

static __always_inline void event_current(void *ctx, __u32 vital, __u64 label,
					  __u64 weight, __u64 d0, __u64 d1,
					  __u64 d2, __u64 d3)
{
	event_current_l(ctx, vital, label, LBL_RAW, weight, d0, d1, d2, d3);
}

/* Stage one of a sample for a task that is not current. */
static __always_inline void park(__u32 vital, struct who *w, __u64 label,
				 __u64 weight, __u64 counter, __u64 d0,
				 __u64 d1)
{
	struct vitals_wire *s = bpf_task_storage_get(&pending, w->task, 0, 0);

	if (!s) {
		s = bpf_task_storage_get(&pending, w->task, 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s)
			return;
		__sync_fetch_and_add(&nparked, 1);
	}
	fill_head(s, vital, w, label, weight, counter);
	s->data[0] = d0;
	s->data[1] = d1;
	s->data[2] = 0;
	s->data[3] = 0;
	s->kstack_bytes = bpf_get_task_stack(w->task, s->stack,
					     VITALS_STACK_DEPTH * 8, 0);
	s->ustack_bytes = -1;
}

/* Stage two: the parked task is current; add its user stack and send. */
static __always_inline void unpark(void *ctx, struct task_struct *t)
{
	struct vitals_wire *p = bpf_task_storage_get(&pending, t, 0, 0), *s;
	struct vitals_tally *ty;
	__u32 zero = 0;

	if (!p)
		return;
	s = bpf_map_lookup_elem(&scratch, &zero);
	ty = tally_of(p->vital);
	if (s) {
		__builtin_memcpy(s, p, sizeof(*s));
		if (s->kstack_bytes <= 0)
			s->kstack_bytes = bpf_get_stack(ctx, s->stack,
							VITALS_STACK_DEPTH * 8, 0);
		if (ty)
			send_counted(ctx, s, ty);
	}
	if (bpf_task_storage_delete(&pending, t) == 0)
		__sync_fetch_and_sub(&nparked, 1);
}

static __always_inline void event_task(__u32 vital, struct task_struct *t,
				       __u64 weight, __u64 d0, __u64 d1)
{
	struct vitals_cell *c = 0;
	struct who w;
	__u64 counter;
	__u32 cell;

	/* labelled by program (hashed in) and priority, not by thread: a
	 * browser's hundred threads waiting are one label sampled at the
	 * powers of t, not a hundred stack walks of other tasks per epoch */
	who_task(&w, t);
	if (vitals_account(vital, &w, d0, weight, &counter, &c, &cell))
		park(vital, &w, d0, weight, counter, d0, d1);
}

/* ---- cpu, l2miss ---------------------------------------------------- */

SEC("perf_event")
int vitals_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 ip = PT_REGS_IP(&ctx->regs);

	event_current_l(ctx, VITALS_CPU, ip, LBL_PC, 1, ip, 0, 0, 0);
	return 0;
}

SEC("perf_event")
int vitals_l2miss(struct bpf_perf_event_data *ctx)
{
	__u64 ip = PT_REGS_IP(&ctx->regs);

	event_current_l(ctx, VITALS_L2MISS, ip, LBL_PC, 1, ip, 0, 0, 0);
	return 0;
}

/* ---- sched, block ----------------------------------------------------- */

/*
 * The common switch costs no helper call: the run-queue wait of `next` is
 * the kernel's own (sched_info.last_queued, set when the task was queued on
 * this run queue: at its wakeup, or when it was preempted; the run queue's
 * clock was read by __schedule just before), and per-thread storage is
 * touched only for a task going into uninterruptible sleep, one coming
 * back from it, or one with a parked sample.  A wait that a migration
 * split counts its last part.
 *
 * Block: a task switched out in TASK_UNINTERRUPTIBLE (not NOLOAD: an idle
 * kernel thread) is stamped with its run queue's clock; at its next
 * switch-in its sleep ended when it was queued (last_queued, the same
 * clock), so the sleep is known without a program on every wakeup -- the
 * kernel's sched_contributes_to_load bit, set at that switch-out, says
 * which switch-ins to look at.  (A wakeup on one CPU and a migration to
 * another before it ran moves last_queued to the migration: the sleep
 * then includes the first part of its run-queue wait.)
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(vitals_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct tstate *sp;
	__u64 now, since;

	who_cache_switch();
	if (prev->pid) {
		if (nparked)
			unpark(ctx, prev);
		if (!block_off && (prev_state & 2 /* TASK_UNINTERRUPTIBLE */) &&
		    !(prev_state & 0x400 /* TASK_NOLOAD: idle */)) {
			sp = bpf_task_storage_get(&tstates, prev, 0,
						  BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (sp) {
				sp->ts = prev->se.cfs_rq->rq->clock;
				sp->kind = TS_BLOCKED;
			}
		}
	}
	if (!next->pid)
		return 0;
	since = next->sched_info.last_queued;
	if (!since)
		return 0;
	if (!block_off &&
	    BPF_CORE_READ_BITFIELD(next, sched_contributes_to_load)) {
		sp = bpf_task_storage_get(&tstates, next, 0, 0);
		if (sp && sp->kind == TS_BLOCKED) {
			sp->kind = 0;
			if (since > sp->ts && since - sp->ts >= sched_min_ns)
				event_task(VITALS_BLOCK, next,
					   (since - sp->ts) / 1000, next->prio,
					   0);
		}
	}
	if (sched_off)
		return 0;
	now = next->se.cfs_rq->rq->clock;
	if (now > since && now - since >= sched_min_ns)
		event_task(VITALS_SCHED, next, (now - since) / 1000,
			   next->prio, 0);
	return 0;
}

/* ---- blkio -------------------------------------------------------------- */

SEC("tp_btf/block_rq_issue")
int BPF_PROG(vitals_block_rq_issue, struct request *rq)
{
	__u64 key, bytes = rq->__data_len, sectors = bytes >> 9;
	__u32 dev = 0, op = rq->cmd_flags & 0xff;
	struct gendisk *disk = rq->q->disk;
	struct rqinfo *ri = rq_slot(rq, &key);
	struct who w;

	who_current(&w);
	if (ri) {
		ri->rq = key;
		ri->ts = bpf_ktime_get_ns();
		ri->tgid = w.tgid;
		ri->bytes = bytes;
	}
	if (disk)
		dev = (disk->major << 20) | disk->first_minor;
	event_who(ctx, VITALS_BLKIO, &w, ((__u64)dev << 32) ^ w.tgid, LBL_RAW,
		  sectors, dev, rq->__sector, bytes, op);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(vitals_block_rq_complete, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	__u64 key, now;
	struct rqinfo *ri = rq_slot(rq, &key);
	__u32 p = parity & 1;
	struct vitals_cell *c;
	struct vitals_pslot *sl;

	if (!ri || ri->rq != key)
		return 0;
	ri->rq = 0;
	c = cell_of(p, VITALS_BLKIO, 0);
	/* the issuer's slot on this CPU (a completion interrupt runs in no
	 * particular task: the slot may be new, with no value of its own) */
	if (c && ri->tgid) {
		sl = &c->slot[(ri->tgid * 2654435761u >> 16) &
			      (VITALS_PSLOTS - 1)];
		if (sl->tgid != ri->tgid) /* not the issuer's: no comm */
			sl = slot_get(c, (p * VITALS_NR + VITALS_BLKIO) *
						 VITALS_HCA_CHUNKS,
				      VITALS_BLKIO, p, ri->tgid, 0, 0);
		now = bpf_ktime_get_ns();
		if (now > ri->ts)
			sl->aux += (now - ri->ts) / 1000;
		/* rule 3: an unsatisfied request (error, or fewer bytes done
		 * than asked for) */
		if (error || nr_bytes < ri->bytes)
			sl->short_io++;
	}
	return 0;
}

/* ---- kmem, umem --------------------------------------------------------- */

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(vitals_mm_page_alloc, struct page *page, unsigned int order,
	     gfp_t gfp, int migratetype)
{
	event_current(ctx, VITALS_KMEM, ((__u64)gfp << 4) ^ order,
		      1ULL << (order & 15), order, gfp, migratetype, 0);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(vitals_page_fault_user, unsigned long address,
	     struct pt_regs *regs, unsigned long error_code)
{
	__u64 ip = regs->ip;

	event_current_l(ctx, VITALS_UMEM, ip, LBL_PC, 1, address, error_code,
			ip, 0);
	return 0;
}

/* ---- syscall, signal ---------------------------------------------------- */

static __always_inline void on_syscall(void *ctx, struct pt_regs *regs,
				       __u64 id)
{
	struct vitals_cell *c = 0;
	struct who w;
	__u64 counter, sp = regs->sp, label;
	__u32 cell = 0;

	who_current(&w);
	label = (ulabel(&w, sp, LBL_SP) & ~0xffULL) ^ (id << 48);
	if (vitals_account(VITALS_SYSCALL, &w, label, 1, &counter, &c,
			   &cell) && c)
		emit_current(ctx, VITALS_SYSCALL, &w, label, 1, counter, id,
			     regs->di, sp, 0);
}

/* The cheapest hook: a trampoline on the syscall table's dispatcher, where
 * a tracepoint sets the syscall-work flag on every task (the slow entry
 * path for every syscall of the machine). */
SEC("fentry/x64_sys_call")
int BPF_PROG(vitals_sys_fentry, struct pt_regs *regs, unsigned int nr)
{
	on_syscall(ctx, regs, nr);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(vitals_sys_enter, struct pt_regs *regs, long id)
{
	on_syscall(ctx, regs, id);
	return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(vitals_signal_deliver, int sig, struct kernel_siginfo *info,
	     struct k_sigaction *ka)
{
	__u64 handler = (__u64)ka->sa.sa_handler;

	event_current(ctx, VITALS_SIGNAL, ((__u64)sig << 48) ^ handler, 1, sig,
		      handler, info ? info->si_code : 0, 0);
	return 0;
}

/* ---- sock ---------------------------------------------------------------- */

static __always_inline int on_sock(void *ctx, struct sock *sk, int ret,
				   __u64 dir)
{
	__u64 daddr, dport, sport, service, family, proto;

	if (ret <= 0)
		return 0;
	family = sk->__sk_common.skc_family;
	daddr = sk->__sk_common.skc_daddr;
	dport = bpf_ntohs(sk->__sk_common.skc_dport);
	sport = sk->__sk_common.skc_num;
	proto = sk->sk_protocol;
	/* labelled by the peer and the service's port, the lower of the two
	 * (the other end's is drawn from the ephemeral range, above it): a
	 * server's every client connection is not a label of its own */
	service = sport && sport < dport ? sport : dport;
	event_current(ctx, VITALS_SOCK,
		      (daddr << 16) ^ (service << 48),
		      ret, daddr, dport, (family << 16) | proto, dir);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(vitals_sock_send, struct sock *sk, int ret, int flags)
{
	return on_sock(ctx, sk, ret, 1);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(vitals_sock_recv, struct sock *sk, int ret, int flags)
{
	return on_sock(ctx, sk, ret, 2);
}

/* ---- lock ------------------------------------------------------------------ */

SEC("tp_btf/contention_begin")
int BPF_PROG(vitals_contention_begin, void *lock, unsigned int flags)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tstate *sp;

	if (!t->pid || (flags & 1 /* LCB_F_SPIN */))
		return 0;
	sp = bpf_task_storage_get(&tstates, t, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (sp)
		sp->lock_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(vitals_contention_end, void *lock, int ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tstate *sp = bpf_task_storage_get(&tstates, t, 0, 0);
	__u64 waited;

	if (!sp || !sp->lock_ts)
		return 0;
	waited = bpf_ktime_get_ns() - sp->lock_ts;
	sp->lock_ts = 0;
	event_current(ctx, VITALS_LOCK, (__u64)lock, waited / 1000,
		      (__u64)lock, waited, ret, 0);
	return 0;
}
