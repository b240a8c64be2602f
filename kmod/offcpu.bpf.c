// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/offcpu.bpf.c - the kernel side of the off-CPU tracer (kmod/offcpu.h):
 * per traced thread, each span off the CPU of at least min_ns with its
 * reason, sent through a ring buffer; nothing else leaves the kernel.
 *
 * Per traced thread, in the `ostates` hash by thread id (struct ostate):
 * when it was switched out, when it was woken, why it sleeps, and since
 * when it waits on a contended kernel lock; an entry is made when a thread
 * of a traced process (the `tgids` map) is first switched out, checked
 * again once per generation of `tgids`, and deleted when the thread exits
 * (its start time tells a reused id).  Not task storage: a tracing
 * program's task-storage helpers fail (NULL) while another one is inside
 * one on the same CPU, and these programs run preemptible: a vitals or
 * lock program preempted there made sched_switch lose a switch-out stamp,
 * the span of a sleep missing altogether (vitals-trace attach-naps, 1 run
 * in 18 beside two spinners).  A hash lookup takes no lock.  Transitions:
 *
 *   on-CPU --sched_switch(prev)--> off (off_ts, reason; preempted: runnable)
 *   off --sched_wakeup--> runnable (wake_ts)
 *   off|runnable --sched_switch(next)--> on-CPU: a span if >= min_ns
 *
 * The reason is decided at switch-out, when the thread is `current`: its
 * saved registers (bpf_task_pt_regs) give the syscall it is in (orig_ax)
 * and the descriptor (di), whose inode mode tells a pipe from a socket.  No
 * syscall hook: a syscall costs the machine nothing more.  A switch of an
 * untraced task costs two hash lookups (its thread, its process).
 *
 * sched_process_fork adds a traced (or parent-only) process's children to
 * `tgids` before they first run; signal_deliver sends each signal a traced
 * thread gets (with whether a handler takes it).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 self_tgid = 0;
const volatile __u32 trace_all = 0;
const volatile __u64 min_ns = 1000000;

/* Written by the loader (mmap'd .bss): bumped after it adds tgids, so that
 * a thread decided untraced before is looked up again. */
__u32 gen = 1;
__u64 lost = 0;
__u64 nostate = 0; /* a traced thread's entry not made: ostates full */
__u64 unseen = 0;  /* switch-ins not seen (offcpu_switch) */

#define TGID_TRACED 1
#define TGID_PARENT 2 /* its children are traced, not itself */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} spans SEC(".maps");

struct ostate {
	__u64 start;   /* the thread's start_time: a reused id is another */
	__u64 off_ts;  /* switched out; 0: on a CPU (or never seen off) */
	__u64 wake_ts; /* runnable since; 0: not woken yet */
	__u64 lock_ts; /* waiting on a contended kernel lock since */
	__u32 gen;     /* of the decision below */
	__u16 traced;  /* 1 traced, 2 not (its process no longer is) */
	__u16 reason;
	__u16 nr;
	__u16 pad;
	__s32 fd;
	__u32 state;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct ostate);
} ostates SEC(".maps");

/* Whether task t's process is traced now. */
static __always_inline int tgid_traced(struct task_struct *t)
{
	__u32 tgid = t->tgid, *v;

	if (tgid == self_tgid || !t->mm)
		return 0; /* ourselves, kernel threads */
	if (trace_all)
		return 1;
	v = bpf_map_lookup_elem(&tgids, &tgid);
	return v && *v == TGID_TRACED;
}

/* Task t's entry, whoever t is (NULL: none, or of an earlier thread of
 * that id). */
static __always_inline struct ostate *state_of(struct task_struct *t)
{
	__u32 tid = t->pid;
	struct ostate *o = bpf_map_lookup_elem(&ostates, &tid);

	return o && o->start == t->start_time ? o : 0;
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFIFO 0010000

/* The kind of file fd names in task t: S_IFSOCK, S_IFIFO, or another
 * mode (0 when it cannot tell). */
static __always_inline __u32 fd_mode(struct task_struct *t, int fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **arr, *f = 0;
	unsigned int max;

	if (!fdt || fd < 0)
		return 0;
	max = BPF_CORE_READ(fdt, max_fds);
	if ((unsigned int)fd >= max)
		return 0;
	arr = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]) || !f)
		return 0;
	return BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
}

/* Why a thread that is switched out in state `state` sleeps. */
static __always_inline void classify(struct task_struct *t, struct ostate *o,
				     __u32 state)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	long nr = -1;
	__u32 mode;
	int fd = -1;

	if (regs) {
		nr = BPF_CORE_READ(regs, orig_ax);
		fd = (int)BPF_CORE_READ(regs, di);
	}
	o->nr = nr >= 0 && nr < OFFCPU_NO_SYSCALL ? nr : OFFCPU_NO_SYSCALL;
	o->fd = -1;
	if (o->lock_ts) {
		o->reason = OFFCPU_LOCK;
		return;
	}
	switch (nr) {
	case 35:  /* nanosleep */
	case 230: /* clock_nanosleep */
	case 34:  /* pause */
	case 130: /* rt_sigsuspend */
	case 128: /* rt_sigtimedwait */
		o->reason = OFFCPU_SLEEP;
		return;
	case 202: /* futex */
	case 449: /* futex_waitv */
	case 73:  /* flock */
		o->reason = OFFCPU_LOCK;
		return;
	case 74:  /* fsync */
	case 75:  /* fdatasync */
	case 26:  /* msync */
	case 162: /* sync */
	case 277: /* sync_file_range */
	case 306: /* syncfs */
		o->fd = fd;
		o->reason = OFFCPU_IO;
		return;
	case 7:	  /* poll */
	case 23:  /* select */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 441: /* epoll_pwait2 */
		o->reason = OFFCPU_POLL;
		return;
	case 61:  /* wait4 */
	case 247: /* waitid */
		o->reason = OFFCPU_CHILD;
		return;
	case 42:  /* connect */
	case 43:  /* accept */
	case 288: /* accept4 */
	case 44:  /* sendto */
	case 45:  /* recvfrom */
	case 46:  /* sendmsg */
	case 47:  /* recvmsg */
	case 299: /* recvmmsg */
	case 307: /* sendmmsg */
		o->fd = fd;
		o->reason = OFFCPU_SOCK;
		return;
	case 0:	  /* read */
	case 1:	  /* write */
	case 17:  /* pread64 */
	case 18:  /* pwrite64 */
	case 19:  /* readv */
	case 20:  /* writev */
	case 295: /* preadv */
	case 296: /* pwritev */
	case 327: /* preadv2 */
	case 328: /* pwritev2 */
	case 40:  /* sendfile (out fd) */
	case 275: /* splice (in fd) */
		o->fd = fd;
		mode = fd_mode(t, fd);
		if (mode == S_IFSOCK)
			o->reason = OFFCPU_SOCK;
		else if (mode == S_IFIFO)
			o->reason = OFFCPU_PIPE;
		else if (state & 2 /* TASK_UNINTERRUPTIBLE */)
			o->reason = OFFCPU_IO;
		else
			o->reason = OFFCPU_OTHER; /* a tty, an eventfd... */
		return;
	}
	if (state & 2 /* TASK_UNINTERRUPTIBLE */)
		o->reason = nr < 0 ? OFFCPU_FAULT : OFFCPU_IO;
	else
		o->reason = OFFCPU_OTHER;
}

/* The state of task t (which must be current or about to be switched out),
 * made when missing; NULL when t is not traced. */
static __always_inline struct ostate *traced_state(struct task_struct *t)
{
	struct ostate *o, fresh = {};
	__u32 tid = t->pid, g = gen;

	o = bpf_map_lookup_elem(&ostates, &tid);
	if (o && o->start == t->start_time) {
		if (o->gen != g) {
			o->gen = g;
			o->traced = tgid_traced(t) ? 1 : 2;
		}
		return o->traced == 1 ? o : 0;
	}
	if (!tgid_traced(t))
		return 0;
	fresh.start = t->start_time;
	fresh.gen = g;
	fresh.traced = 1;
	if (bpf_map_update_elem(&ostates, &tid, &fresh, BPF_ANY)) {
		__sync_fetch_and_add(&nostate, 1);
		return 0;
	}
	return bpf_map_lookup_elem(&ostates, &tid);
}

/* A span of the thread t whose state is o: off the CPU from o->off_ts for
 * dur, the last runq of it waiting for a CPU. */
static __always_inline void send_span(struct task_struct *t, struct ostate *o,
				      __u64 dur, __u64 runq)
{
	struct offcpu_span *s;

	if (dur < min_ns)
		return;
	s = bpf_ringbuf_reserve(&spans, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	s->ts_ns = o->off_ts;
	s->dur_ns = dur;
	s->runq_ns = runq;
	s->tgid = t->tgid;
	s->tid = t->pid;
	/* blocked for less than the threshold, then waiting for a CPU: the
	 * run queue is why */
	s->reason = dur - runq < min_ns ? OFFCPU_RUNQ : o->reason;
	s->nr = o->nr;
	s->fd = o->fd;
	s->state = o->state;
	s->kind = OFFCPU_EV_SPAN;
	bpf_ringbuf_submit(s, 0);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(), runq;
	struct ostate *o;

	if (prev->pid && (o = traced_state(prev))) {
		/* still off since its last switch-out, yet running: its
		 * switch-in was not seen.  This kernel fires no sched_switch
		 * and no sched_wakeup while some tasks are current (a
		 * Firecracker guest's init threads: bpftrace sees none
		 * either), so a thread woken and switched in there is back
		 * unseen (vitals-trace attach-naps lost a 60-ms nap 1 run in
		 * 20 beside two spinners).  Its last switch-in: now less the
		 * CPU time of the slice ending (update_curr ran before the
		 * tracepoint; set_next_entity set prev_sum_exec_runtime) */
		if (o->off_ts) {
			__u64 slice = BPF_CORE_READ(prev, se.sum_exec_runtime) -
				      BPF_CORE_READ(prev, se.prev_sum_exec_runtime);
			__u64 in = now > slice ? now - slice : now;

			if (in > o->off_ts) {
				runq = o->wake_ts > o->off_ts && o->wake_ts <= in
					       ? in - o->wake_ts
					       : 0;
				send_span(prev, o, in - o->off_ts, runq);
				__sync_fetch_and_add(&unseen, 1);
			}
		}
		o->off_ts = now;
		o->state = prev_state;
		if ((prev_state & 0xff) == 0) {
			/* preempted: runnable all along */
			o->wake_ts = now;
			o->reason = OFFCPU_RUNQ;
			o->nr = OFFCPU_NO_SYSCALL;
			o->fd = -1;
		} else {
			o->wake_ts = 0;
			classify(prev, o, prev_state);
		}
	}
	if (!next->pid)
		return 0;
	o = state_of(next);
	if (!o || o->traced != 1 || !o->off_ts)
		return 0;
	runq = o->wake_ts && o->wake_ts <= now ? now - o->wake_ts : 0;
	send_span(next, o, now - o->off_ts, runq);
	o->off_ts = 0;
	o->wake_ts = 0;
	return 0;
}

static __always_inline void on_wakeup(struct task_struct *p)
{
	struct ostate *o = state_of(p);

	if (o && o->off_ts && !o->wake_ts)
		o->wake_ts = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	on_wakeup(p);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(offcpu_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid, one = TGID_TRACED;

	if (trace_all || ctgid == ptgid || !bpf_map_lookup_elem(&tgids, &ptgid))
		return 0;
	bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(offcpu_signal, int sig, struct kernel_siginfo *info,
	     struct k_sigaction *ka)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct offcpu_span *s;
	__u64 handler;

	if (!t->pid || !traced_state(t))
		return 0;
	s = bpf_ringbuf_reserve(&spans, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	handler = (__u64)BPF_CORE_READ(ka, sa.sa_handler);
	__builtin_memset(s, 0, sizeof(*s));
	s->ts_ns = bpf_ktime_get_ns();
	s->tgid = t->tgid;
	s->tid = t->pid;
	s->reason = sig;
	s->nr = OFFCPU_NO_SYSCALL;
	s->fd = info ? BPF_CORE_READ(info, si_code) : 0;
	s->state = handler > 1; /* SIG_DFL 0, SIG_IGN 1 */
	s->kind = OFFCPU_EV_SIGNAL;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(offcpu_contention_begin, void *lock, unsigned int flags)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct ostate *o;

	if (flags & 1 /* LCB_F_SPIN */)
		return 0;
	o = state_of(t);
	if (o && o->traced == 1)
		o->lock_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(offcpu_contention_end, void *lock, int ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct ostate *o = state_of(t);

	if (o)
		o->lock_ts = 0;
	return 0;
}

/* a thread's entry goes with it (every thread's exit passes here) */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct ostate *o = bpf_map_lookup_elem(&ostates, &tid);

	if (o && o->start == p->start_time)
		bpf_map_delete_elem(&ostates, &tid);
	return 0;
}
