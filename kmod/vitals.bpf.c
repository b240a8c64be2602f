// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/vitals.bpf.c - the kernel side of the vital-sign collector: one
 * program per trigger of chopstix Figure 2, all feeding vitals_account().
 *
 * Triggers (tp_btf needs BTF only, not tracefs; the loader disables any
 * program whose tracepoint this kernel lacks):
 *   cpu      perf_event cpu-clock     label: PC & ~0xff
 *   l2miss   perf_event cache-misses  label: PC & ~0xff
 *   sched    sched_switch (switch-in of a task that was runnable)
 *            label: pid; weight: us since it became runnable
 *   block    sched_wakeup of a task that slept in TASK_UNINTERRUPTIBLE
 *            label: pid; weight: us asleep
 *   blkio    block_rq_issue           label: pid, dev; weight: sectors
 *            block_rq_complete adds the device latency to the process
 *   kmem     kmem:mm_page_alloc       label: pid, order, gfp; weight: pages
 *   umem     page_fault_user          label: PC & ~0xff of the fault
 *   syscall  raw_syscalls:sys_enter   label: SP & ~0xff, syscall nr
 *   signal   signal_deliver           label: signo, handler
 *   sock     sock_send/recv_length    label: pid, sk; weight: bytes
 *   lock     contention_begin/end     label: lock address; weight: us
 *
 * sched and block happen in another task's context (the scheduler, the
 * waker), so they are sampled in two stages, as chopstix does: the decision
 * and the kernel stack (bpf_get_task_stack) are taken at once and parked in
 * `pending`; the user stack is added when that task next switches out.
 *
 * Every event also adds to `procs` (tgid x vital x parity), the exact
 * per-process breakdown the report prints.  The collector's own process
 * (self_tgid) is not counted.
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

/* Written by the loader through the mmap'd .bss. */
__u32 parity = 0;
__u32 epoch = 0;
__u32 tshift[VITALS_NR];

/* Per-epoch state, two copies. */
__u64 hca[2][VITALS_NR][VITALS_HCA_SIZE];
__u64 nevents[2][VITALS_NR];
__u64 nweight[2][VITALS_NR];
__u64 nsampled[2][VITALS_NR];
__u64 ndropped[2][VITALS_NR];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct vitals_proc_key);
	__type(value, struct vitals_proc_val);
} procs SEC(".maps");

/* Per-thread scheduling state: since when runnable (1) or blocked (2). */
struct tstate {
	__u64 ts;
	__u32 kind;
	__u32 pad;
};
#define TS_WAITING 1
#define TS_BLOCKED 2

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct tstate);
} tstates SEC(".maps");

/* Two-stage samples waiting for their task to run. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct vitals_sample);
} pending SEC(".maps");

/* Lock contention begin time, per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} lockwait SEC(".maps");

/* Block requests in flight: request -> issuing tgid and time. */
struct rqinfo {
	__u64 ts;
	__u32 tgid;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct rqinfo);
} rqs SEC(".maps");

/* Scratch for building a sample that is not sent at once. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vitals_sample);
} scratch SEC(".maps");

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

/* Who an event belongs to. */
struct who {
	struct task_struct *task;
	__u32 tgid, tid, uid;
	__u64 exe;
};

static __always_inline void who_task(struct who *w, struct task_struct *t)
{
	w->task = t;
	w->tgid = BPF_CORE_READ(t, tgid);
	w->tid = BPF_CORE_READ(t, pid);
	w->uid = BPF_CORE_READ(t, cred, uid.val);
	w->exe = w->tgid;
}

/* The current task through helpers: no pointer chasing on the hot path
 * (syscalls, page faults); its executable is identified by its tgid. */
static __always_inline void who_current(struct who *w)
{
	__u64 pt = bpf_get_current_pid_tgid();

	w->task = (struct task_struct *)bpf_get_current_task();
	w->tgid = pt >> 32;
	w->tid = (__u32)pt;
	w->uid = (__u32)bpf_get_current_uid_gid();
	w->exe = w->tgid;
}

static __always_inline void proc_add(__u32 vital, struct who *w, __u64 weight,
				     __u64 aux, __u32 p)
{
	struct vitals_proc_key k = { .tgid = w->tgid, .vital = vital,
				     .parity = p };
	struct vitals_proc_val *v, init = {};

	v = bpf_map_lookup_elem(&procs, &k);
	if (!v) {
		struct task_struct *wt = w->task;
		struct task_struct *leader = BPF_CORE_READ(wt, group_leader);

		init.uid = w->uid;
		BPF_CORE_READ_STR_INTO(&init.comm, leader, comm);
		bpf_map_update_elem(&procs, &k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&procs, &k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->value, weight);
	__sync_fetch_and_add(&v->count, 1);
	if (aux)
		__sync_fetch_and_add(&v->aux, aux);
}

/*
 * Count one event; return 1 when it is to be sampled (its counter passed a
 * power of t), filling *counter.
 */
static __always_inline int vitals_account(__u32 vital, struct who *w,
					  __u64 label, __u64 weight,
					  __u64 *counter, __u32 *pp)
{
	__u32 p = parity & 1, k;
	__u64 h, old, new;

	if (vital >= VITALS_NR)
		return 0;
	if (w->tgid == self_tgid || w->tgid == 0)
		return 0;
	if (weight == 0)
		weight = 1;
	*pp = p;
	__sync_fetch_and_add(&nevents[p][vital], 1);
	__sync_fetch_and_add(&nweight[p][vital], weight);
	proc_add(vital, w, weight, 0, p);

	h = mix64(label ^ (w->exe << 20) ^ ((__u64)w->uid << 48) ^
		  ((__u64)vital << 56));
	old = __sync_fetch_and_add(&hca[p][vital][h & (VITALS_HCA_SIZE - 1)],
				   weight);
	new = old + weight;
	*counter = new;
	k = tshift[vital];
	if (k == 0)
		k = 1;
	if (old != 0 && ilog2_u64(old) / k == ilog2_u64(new) / k)
		return 0;
	return 1;
}

static __always_inline void fill_head(struct vitals_sample *s, __u32 vital,
				      struct who *w, __u64 label,
				      __u64 weight, __u64 counter)
{
	struct task_struct *wt = w->task;
		struct task_struct *leader = BPF_CORE_READ(wt, group_leader);

	s->ts_ns = bpf_ktime_get_ns();
	s->weight = weight;
	s->counter = counter;
	s->label = label;
	s->epoch = epoch;
	s->vital = vital;
	s->tshift = tshift[vital < VITALS_NR ? vital : 0];
	s->tgid = w->tgid;
	s->tid = w->tid;
	s->uid = w->uid;
	BPF_CORE_READ_STR_INTO(&s->comm, leader, comm);
}

/* Sample an event of the current task: both stacks from ctx. */
static __always_inline void emit_current(void *ctx, __u32 vital, struct who *w,
					 __u64 label, __u64 weight,
					 __u64 counter, __u32 p, __u64 d0,
					 __u64 d1, __u64 d2, __u64 d3)
{
	struct vitals_sample *s;

	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&ndropped[p][vital < VITALS_NR ? vital : 0], 1);
		return;
	}
	fill_head(s, vital, w, label, weight, counter);
	s->data[0] = d0;
	s->data[1] = d1;
	s->data[2] = d2;
	s->data[3] = d3;
	s->kstack_bytes = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	s->ustack_bytes = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack),
					BPF_F_USER_STACK);
	bpf_ringbuf_submit(s, 0);
	__sync_fetch_and_add(&nsampled[p][vital < VITALS_NR ? vital : 0], 1);
}

static __always_inline void event_current(void *ctx, __u32 vital, __u64 label,
					  __u64 weight, __u64 d0, __u64 d1,
					  __u64 d2, __u64 d3)
{
	struct who w;
	__u64 counter;
	__u32 p;

	who_current(&w);
	if (vitals_account(vital, &w, label, weight, &counter, &p))
		emit_current(ctx, vital, &w, label, weight, counter, p, d0, d1,
			     d2, d3);
}

/* Stage one of a sample for a task that is not current. */
static __always_inline void park(__u32 vital, struct who *w, __u64 label,
				 __u64 weight, __u64 counter, __u64 d0,
				 __u64 d1)
{
	__u32 zero = 0, tid = w->tid;
	struct vitals_sample *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return;
	fill_head(s, vital, w, label, weight, counter);
	s->data[0] = d0;
	s->data[1] = d1;
	s->data[2] = 0;
	s->data[3] = 0;
	s->kstack_bytes = bpf_get_task_stack(w->task, s->kstack,
					     sizeof(s->kstack), 0);
	s->ustack_bytes = -1;
	bpf_map_update_elem(&pending, &tid, s, BPF_ANY);
}

/* Stage two: the parked task is current; add its user stack and send. */
static __always_inline void unpark(void *ctx, __u32 tid)
{
	struct vitals_sample *s, *p = bpf_map_lookup_elem(&pending, &tid);
	__u32 vital;

	if (!p)
		return;
	vital = p->vital;
	if (vital >= VITALS_NR)
		vital = 0;
	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&ndropped[parity & 1][vital], 1);
		bpf_map_delete_elem(&pending, &tid);
		return;
	}
	__builtin_memcpy(s, p, sizeof(*s));
	s->ustack_bytes = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack),
					BPF_F_USER_STACK);
	if (s->kstack_bytes <= 0)
		s->kstack_bytes = bpf_get_stack(ctx, s->kstack,
						sizeof(s->kstack), 0);
	bpf_ringbuf_submit(s, 0);
	__sync_fetch_and_add(&nsampled[parity & 1][vital], 1);
	bpf_map_delete_elem(&pending, &tid);
}

static __always_inline void event_task(__u32 vital, struct task_struct *t,
				       __u64 weight, __u64 d0, __u64 d1)
{
	struct who w;
	__u64 counter;
	__u32 p;

	who_task(&w, t);
	if (vitals_account(vital, &w, w.tid, weight, &counter, &p))
		park(vital, &w, w.tid, weight, counter, d0, d1);
}

/* ---- cpu, l2miss ---------------------------------------------------- */

SEC("perf_event")
int vitals_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 ip = PT_REGS_IP(&ctx->regs);

	event_current(ctx, VITALS_CPU, ip & ~0xffULL, 1, ip, 0, 0, 0);
	return 0;
}

SEC("perf_event")
int vitals_l2miss(struct bpf_perf_event_data *ctx)
{
	__u64 ip = PT_REGS_IP(&ctx->regs);

	event_current(ctx, VITALS_L2MISS, ip & ~0xffULL, 1, ip, 0, 0, 0);
	return 0;
}

/* ---- sched, block ----------------------------------------------------- */

SEC("tp_btf/sched_switch")
int BPF_PROG(vitals_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	struct tstate st = { .ts = now }, *sp;

	if (prev_tid) {
		unpark(ctx, prev_tid);
		if ((prev_state & 0xff) == 0) {
			st.kind = TS_WAITING;
			bpf_map_update_elem(&tstates, &prev_tid, &st, BPF_ANY);
		} else if ((prev_state & 2 /* TASK_UNINTERRUPTIBLE */) &&
			   !(prev_state & 0x400 /* TASK_NOLOAD: idle */)) {
			st.kind = TS_BLOCKED;
			bpf_map_update_elem(&tstates, &prev_tid, &st, BPF_ANY);
		} else {
			bpf_map_delete_elem(&tstates, &prev_tid);
		}
	}
	if (!next_tid)
		return 0;
	sp = bpf_map_lookup_elem(&tstates, &next_tid);
	if (!sp || sp->kind != TS_WAITING)
		return 0;
	if (now - sp->ts >= sched_min_ns)
		event_task(VITALS_SCHED, next, (now - sp->ts) / 1000,
			   next->prio, 0);
	bpf_map_delete_elem(&tstates, &next_tid);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = p->pid;
	struct tstate st = { .ts = now, .kind = TS_WAITING }, *sp;

	if (!tid)
		return 0;
	sp = bpf_map_lookup_elem(&tstates, &tid);
	if (sp && sp->kind == TS_BLOCKED && now - sp->ts >= sched_min_ns)
		event_task(VITALS_BLOCK, p, (now - sp->ts) / 1000, p->prio,
			   0);
	bpf_map_update_elem(&tstates, &tid, &st, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(vitals_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(vitals_sched_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p);
}

/* ---- blkio -------------------------------------------------------------- */

SEC("tp_btf/block_rq_issue")
int BPF_PROG(vitals_block_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq, sectors = BPF_CORE_READ(rq, __data_len) >> 9;
	__u32 dev = 0, op = BPF_CORE_READ(rq, cmd_flags) & 0xff;
	struct rqinfo ri = { .ts = bpf_ktime_get_ns(),
			     .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);

	if (disk)
		dev = (BPF_CORE_READ(disk, major) << 20) |
		      BPF_CORE_READ(disk, first_minor);
	bpf_map_update_elem(&rqs, &key, &ri, BPF_ANY);
	event_current(ctx, VITALS_BLKIO, ((__u64)dev << 32) ^ ri.tgid, sectors,
		      dev, BPF_CORE_READ(rq, __sector), sectors << 9, op);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(vitals_block_rq_complete, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct rqinfo *ri = bpf_map_lookup_elem(&rqs, &key);
	struct vitals_proc_key k = { .vital = VITALS_BLKIO };
	struct vitals_proc_val *v;

	if (!ri)
		return 0;
	k.tgid = ri->tgid;
	k.parity = parity & 1;
	v = bpf_map_lookup_elem(&procs, &k);
	if (v)
		__sync_fetch_and_add(&v->aux,
				     (bpf_ktime_get_ns() - ri->ts) / 1000);
	bpf_map_delete_elem(&rqs, &key);
	return 0;
}

/* ---- kmem, umem --------------------------------------------------------- */

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(vitals_mm_page_alloc, struct page *page, unsigned int order,
	     gfp_t gfp, int migratetype)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!tgid)
		return 0;
	event_current(ctx, VITALS_KMEM,
		      ((__u64)tgid << 32) ^ ((__u64)gfp << 4) ^ order,
		      1ULL << (order & 15), order, gfp, migratetype, 0);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(vitals_page_fault_user, unsigned long address,
	     struct pt_regs *regs, unsigned long error_code)
{
	__u64 ip = BPF_CORE_READ(regs, ip);

	event_current(ctx, VITALS_UMEM, ip & ~0xffULL, 1, address, error_code,
		      ip, 0);
	return 0;
}

/* ---- syscall, signal ---------------------------------------------------- */

SEC("tp_btf/sys_enter")
int BPF_PROG(vitals_sys_enter, struct pt_regs *regs, long id)
{
	__u64 sp = BPF_CORE_READ(regs, sp);

	event_current(ctx, VITALS_SYSCALL, (sp & ~0xffULL) ^ ((__u64)id << 48),
		      1, id, BPF_CORE_READ(regs, di), sp, 0);
	return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(vitals_signal_deliver, int sig, struct kernel_siginfo *info,
	     struct k_sigaction *ka)
{
	__u64 handler = (__u64)BPF_CORE_READ(ka, sa.sa_handler);

	event_current(ctx, VITALS_SIGNAL, ((__u64)sig << 48) ^ handler, 1, sig,
		      handler, info ? BPF_CORE_READ(info, si_code) : 0, 0);
	return 0;
}

/* ---- sock ---------------------------------------------------------------- */

static __always_inline int on_sock(void *ctx, struct sock *sk, int ret,
				   __u64 dir)
{
	__u64 daddr, dport, family, proto;

	if (ret <= 0)
		return 0;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	proto = BPF_CORE_READ(sk, sk_protocol);
	event_current(ctx, VITALS_SOCK,
		      (daddr << 16) ^ (dport << 48) ^ (bpf_get_current_pid_tgid() >> 32),
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
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();

	if (!tid || (flags & 1 /* LCB_F_SPIN */))
		return 0;
	bpf_map_update_elem(&lockwait, &tid, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(vitals_contention_end, void *lock, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *t0 = bpf_map_lookup_elem(&lockwait, &tid), waited;

	if (!t0)
		return 0;
	waited = bpf_ktime_get_ns() - *t0;
	bpf_map_delete_elem(&lockwait, &tid);
	event_current(ctx, VITALS_LOCK, (__u64)lock, waited / 1000,
		      (__u64)lock, waited, ret, 0);
	return 0;
}
