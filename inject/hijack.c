/*
 * inject/hijack.c - the ptrace layer: seize every thread of a live process,
 * make one thread call a function, put everything back, let go.
 *
 * Thread states (struct hj_thread.state):
 *   HJ_RUNNING --hj_stop_many (PTRACE_INTERRUPT + wait)--> HJ_STOPPED
 *   HJ_STOPPED --hj_resume / hijack_call--> HJ_RUNNING
 *   any --(waitpid reports exit, or ESRCH)--> HJ_GONE (reaped)
 *
 * How the pieces work:
 *   - Attach seizes (PTRACE_SEIZE, no options) every tid in /proc/PID/task
 *     and interrupts it, and rescans until a scan finds no new thread: once
 *     all known threads are stopped nobody can create another.
 *   - A signal that arrives while a thread is held shows up as a
 *     signal-delivery-stop: we keep its siginfo and suppress it.  At
 *     detach it goes back with that siginfo (hj_detach_kept: sent again,
 *     taken at its signal-delivery-stop, the siginfo put back, the thread
 *     let go with it), since handlers check who sent it (glibc's setxid
 *     and cancel signals); synchronous faults are dropped because
 *     re-executing the faulting instruction raises them again.  While
 *     HIJACK_OTHERS_RUN lets the other threads run, their signals are
 *     passed straight through (except stop signals, which are kept like
 *     the others).
 *   - A SIGTRAP from an int3 (the agent's sites are int3 for a moment while
 *     they are rewritten) is not kept: the thread is noted as stopped right
 *     after the int3 (hj_stop_step, also when the signal was still pending
 *     at the interrupt) and rewound onto the int3's byte before it runs
 *     again (hj_untrap), so that it executes whatever byte is there by then:
 *     the original instruction if the agent was switched off in the hold,
 *     or the int3 again, whose handler then runs as it would have.
 *   - A call: save the general registers and the whole XSAVE area, build a
 *     frame at (sp - 128 - staged) & ~15, push return address 0, set rip and
 *     the argument registers, orig_rax = -1 so that the kernel's syscall
 *     restart logic does not fire on our frame; run; the return to address 0
 *     faults (SIGSEGV with rip == 0), which is our trap.  Then restore the
 *     registers, including orig_rax and the -ERESTART* rax of an
 *     interrupted syscall, so that the syscall restarts exactly as it would
 *     have without us.  The call thread is preferably one blocked in a
 *     restartable syscall (it holds no user-space lock), never one sleeping
 *     with a restart block (nanosleep) unless there is no other choice,
 *     because a nested interrupted syscall would overwrite that block.
 *   - Every wait is a poll with a deadline: nothing here can hang.
 *
 * The target's symbols are inject/hijack-sym.c's; where the call thread
 * stopped, inject/hijack-where.c's.
 *
 * Callers: inject/inject.c, tests/unit/test-hijack.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "inject/hijack.h"
#include "inject/hijack-ret.h"
#include "share/clock.h"
#include "share/log.h"
#include "share/proc.h"

#define PR_DOMAIN "hijack"

#define HJ_RED_ZONE 128
#define HJ_XSTATE_MAX 32768
#define HJ_STOP_TIMEOUT_MS 5000
#define HJ_MAX_SIGS 16
#define HJ_KEPT_WAIT_MS 200
#define HJ_ERESTARTSYS 512
#define HJ_ERESTARTNOINTR 513
#define HJ_ERESTARTNOHAND 514
#define HJ_ERESTART_RESTARTBLOCK 516

enum { HJ_RUNNING, HJ_STOPPED, HJ_GONE };

struct hj_thread {
	pid_t tid;
	int state;
	struct user_regs_struct regs; /* at the latest stop */
	int draining;      /* resumed to take a pending SIGTRAP (count) */
	int trap;          /* stopped right after an int3, its SIGTRAP taken */
	uint64_t trap_rip; /* rip at that stop (the int3's address + 1) */
};

struct hj_saved {
	uint64_t addr;
	size_t n;
	unsigned char *bytes;
};

struct hijack {
	pid_t pid;
	int memfd;
	int timeout_ms;
	struct hj_thread *th;
	size_t nth, cap;
	pid_t call_tid;
	/* signals kept for re-delivery */
	struct {
		pid_t tid;
		int done;
		siginfo_t si;
	} sigs[HJ_MAX_SIGS];
	int nsigs;
	/* staged data for the next call */
	struct hj_saved stage[8];
	int nstage;
	size_t stage_used;
	/* the way back from a call (hijack_set_return): a pad ending in
	 * rt_sigreturn, and where it leaves rax (0: nowhere) */
	uint64_t ret_pad, ret_result;
	int escaped; /* the last call's thread came back by itself */
};

/* ---- small helpers ---------------------------------------------------- */

static uint64_t hj_now_ms(void)
{
	return propel_mono_ms();
}

/* 50 us for the first 200 polls (10 ms and more: a stop, and a remote
 * call such as the agent's start, which takes 1-5 ms), then doubling up to
 * 1 ms.  It was doubling from the first poll: a 3 ms call was seen up to
 * 1.3 ms late, every stop of the target that much longer. */
void hijack_nap(struct hijack_nap *n)
{
	unsigned us = 50;

	if (n->polls >= 200)
		us = n->polls >= 205 ? 1000 : 50u << (n->polls - 199);
	if (us > 1000)
		us = 1000;
	n->polls++;
	usleep(us);
}


/* A field of /proc/PID/status ("TracerPid", "Uid"...), as text. */
static int hj_status_field(pid_t pid, const char *key, char *out, size_t n)
{
	char path[64], buf[4096], *p;
	size_t kl = strlen(key);
	int err;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	err = propel_read_small(path, buf, sizeof(buf));
	if (err < 0)
		return err;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			snprintf(out, n, "%.*s", (int)strcspn(p, "\n"), p);
			return 0;
		}
	}
	return -ENOENT;
}

static void hj_comm(pid_t pid, char *out, size_t n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (propel_read_small(path, out, n) <= 0)
		snprintf(out, n, "?");
	out[strcspn(out, "\n")] = 0;
}

static pid_t hj_tracer(pid_t pid)
{
	char v[32];

	if (hj_status_field(pid, "TracerPid", v, sizeof(v)) < 0)
		return 0;
	return atoi(v);
}

static int hj_cause_traced(char **cause, pid_t tracer)
{
	char name[64];

	hj_comm(tracer, name, sizeof(name));
	return propel_cause(cause, -EBUSY, "already traced by pid %d (%s)",
			    tracer, name);
}

static int hj_cause_eperm(pid_t pid, char **cause)
{
	char uid[64] = "?";
	uid_t me = geteuid();

	hj_status_field(pid, "Uid", uid, sizeof(uid));
	if ((uid_t)atoi(uid) != me)
		return propel_cause(cause, -EPERM,
				    "not permitted: process runs as uid %d and "
				    "we are uid %d without CAP_SYS_PTRACE",
				    atoi(uid), (int)me);
	return propel_cause(cause, -EPERM,
			    "not permitted: process is not dumpable (setuid?) "
			    "or a security module forbids ptrace");
}

/* ---- threads and waiting ---------------------------------------------- */

static struct hj_thread *hj_find(struct hijack *h, pid_t tid)
{
	size_t i;

	for (i = 0; i < h->nth; i++)
		if (h->th[i].tid == tid)
			return &h->th[i];
	return NULL;
}

static struct hj_thread *hj_add(struct hijack *h, pid_t tid)
{
	if (h->nth == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct hj_thread *n = realloc(h->th, cap * sizeof(*n));

		if (!n)
			return NULL;
		h->th = n;
		h->cap = cap;
	}
	memset(&h->th[h->nth], 0, sizeof(h->th[0]));
	h->th[h->nth].tid = tid;
	h->th[h->nth].state = HJ_RUNNING;
	return &h->th[h->nth++];
}

static void hj_keep_signal(struct hijack *h, pid_t tid, const siginfo_t *si)
{
	if (h->nsigs >= HJ_MAX_SIGS) {
		pr_dbg("signal %d for %d dropped: too many kept", si->si_signo,
		       tid);
		return;
	}
	h->sigs[h->nsigs].tid = tid;
	h->sigs[h->nsigs].done = 0;
	h->sigs[h->nsigs].si = *si;
	h->nsigs++;
}

/* Wait for any state change of t, up to timeout_ms.  Returns 0 with
 * *status for a stop; -ESRCH when the thread is gone (reaped, marked
 * HJ_GONE); -ETIMEDOUT. */
static int hj_wait(struct hijack *h, struct hj_thread *t, int timeout_ms,
		   int *status)
{
	uint64_t end = hj_now_ms() + timeout_ms;
	struct hijack_nap nap = { 0 };

	for (;;) {
		pid_t r = waitpid(t->tid, status, WNOHANG | __WALL);

		if (r == t->tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
				t->state = HJ_GONE;
				return -ESRCH;
			}
			if (WIFSTOPPED(*status))
				return 0;
			continue;
		}
		if (r < 0 && errno != EINTR) {
			t->state = HJ_GONE;
			return -ESRCH;
		}
		if (hj_now_ms() >= end)
			return -ETIMEDOUT;
		hijack_nap(&nap);
	}
}

static int hj_is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* A byte of the target's memory through ptrace (works before memfd is
 * open); -1 if it cannot be read. */
static int hj_peek_byte(pid_t tid, uint64_t addr)
{
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKDATA, tid, (void *)addr, 0);
	if (errno)
		return -1;
	return (int)(w & 0xff);
}

/* 1 if SIGTRAP is pending for thread tid and not blocked by it. */
static int hj_trap_pending(pid_t pid, pid_t tid)
{
	char path[96], buf[4096], *p;
	unsigned long long pnd = 0, blk = 0;
	const unsigned long long bit = 1ull << (SIGTRAP - 1);

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (propel_read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	if ((p = strstr(buf, "\nSigPnd:")))
		pnd = strtoull(p + 8, NULL, 16);
	if ((p = strstr(buf, "\nSigBlk:")))
		blk = strtoull(p + 8, NULL, 16);
	return (pnd & bit) && !(blk & bit);
}

/*
 * Was this SIGTRAP raised by executing an int3 (0xcc) that ends right
 * before rip?  x86 reports an int3 as SI_KERNEL; "int $3" (cd 03) too, and
 * that one must not be taken for an int3.  The byte at rip-1 may already
 * differ from 0xcc: the agent rewrites a site while other threads run (an
 * int3 is only ever a moment of a rewrite), and it restores every site
 * when it is switched off.
 */
static int hj_int3_trap(pid_t tid, const siginfo_t *si, uint64_t rip)
{
	int b1, b2;

	if (si->si_signo != SIGTRAP || !rip)
		return 0;
	b1 = hj_peek_byte(tid, rip - 1);
	if (si->si_code == TRAP_BRKPT)
		return b1 == 0xcc;
	if (si->si_code != SI_KERNEL || b1 < 0)
		return 0;
	b2 = hj_peek_byte(tid, rip - 2);
	return b1 == 0xcc || !(b2 == 0xcd && b1 == 0x03);
}

/* 1 if tid is in a syscall-entry or -exit stop (a SIGTRAP that is no
 * signal). */
static int hj_syscall_stop(pid_t tid)
{
	struct __ptrace_syscall_info sc;

	return ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(sc), &sc) > 0 &&
	       (sc.op == PTRACE_SYSCALL_INFO_ENTRY ||
		sc.op == PTRACE_SYSCALL_INFO_EXIT);
}

/*
 * A held thread that blocks SIGTRAP gets it unblocked: the agent's int3s
 * (a site being rewritten) must reach its handler, and the kernel kills a
 * thread that meets an int3 with SIGTRAP blocked -- after resetting the
 * handler of the whole process to SIG_DFL, so that the next int3 of any
 * thread kills it too (servers block every signal in their workers:
 * jemalloc's background thread in redis).  The agent keeps it unblocked
 * afterwards (inject/agent/slow.c, emul_sigmask).  A thread that never
 * asks for SIGTRAP sees no difference: nothing else sends it.
 */
static void hj_unblock_trap(pid_t tid)
{
	uint64_t mask;

	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(mask), &mask) < 0 ||
	    !(mask & (1ull << (SIGTRAP - 1))))
		return;
	mask &= ~(1ull << (SIGTRAP - 1));
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) == 0)
		pr_dbg("thread %d: SIGTRAP unblocked", tid);
}

/*
 * Before a thread stopped right after an int3 runs again (detach, or the
 * other threads running during a call): rewind it onto the int3's byte and
 * forget the signal we took.  If the agent restored the original byte
 * meanwhile, the thread executes the original instruction, as if the trap
 * had never happened; if the byte is still an int3, executing it raises the
 * same SIGTRAP again, so the signal is delivered on resume exactly as the
 * agent expects it (same si_code, same rip).  Resuming at rip as it was
 * would run the second byte of the instruction (the detach defect).
 */
static void hj_untrap(struct hj_thread *t)
{
	struct user_regs_struct r;

	if (!t->trap)
		return;
	t->trap = 0;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0 || r.rip != t->trap_rip)
		return;
	r.rip--;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
		return;
	if (t->regs.rip == t->trap_rip)
		t->regs.rip = r.rip;
	pr_dbg("thread %d rewound onto the int3 at %#llx", t->tid,
	       (unsigned long long)r.rip);
}

/* One non-blocking step towards stopping a RUNNING thread (already
 * interrupted): 1 once it is in its interrupt stop (regs read) or gone,
 * 0 if not yet.  Signals met on the way are kept and suppressed, except a
 * SIGTRAP from an int3, which is noted on the thread (hj_untrap).  A
 * thread interrupted between an int3 and the delivery of its SIGTRAP is
 * resumed once so that the signal shows up as a signal-delivery-stop
 * (pending unblocked signals are dequeued before any user instruction
 * runs), then stopped again. */
static int hj_stop_step(struct hijack *h, struct hj_thread *t)
{
	int status;
	siginfo_t si;

	if (t->state != HJ_RUNNING)
		return 1;
	if (hj_wait(h, t, 0, &status))
		return t->state == HJ_GONE;
	if ((status >> 16) == PTRACE_EVENT_STOP) {
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) < 0)
			pr_dbg("getregs %d: %s", t->tid, strerror(errno));
		if (t->draining < HJ_MAX_SIGS && !t->trap &&
		    hj_trap_pending(h->pid, t->tid) &&
		    ptrace(PTRACE_CONT, t->tid, 0, 0) == 0) {
			pr_dbg("thread %d: a SIGTRAP is pending, taking it",
			       t->tid);
			t->draining++;
			return 0;
		}
		t->draining = 0;
		t->state = HJ_STOPPED;
		hj_unblock_trap(t->tid);
		return 1;
	}
	if ((status >> 16) == 0 &&
	    ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0) {
		struct user_regs_struct r;

		if (si.si_signo == SIGTRAP && hj_syscall_stop(t->tid)) {
			/* a call's PTRACE_SYSCALL stop (hijack_call, the
			 * safe way): no signal to keep */
		} else if (!t->trap && si.si_signo == SIGTRAP &&
		    ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 &&
		    hj_int3_trap(t->tid, &si, r.rip)) {
			/* rewound at once, not only before it runs again: a
			 * thread let go by the kernel when propel dies must
			 * not go on at the int3's second byte */
			r.rip--;
			if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0) {
				t->trap = 1;
				t->trap_rip = r.rip + 1;
			}
		} else {
			hj_keep_signal(h, t->tid, &si);
		}
	}
	/* the pending interrupt traps right after this (a draining thread
	 * consumed its interrupt: ask again) */
	if (t->draining)
		ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
	ptrace(PTRACE_CONT, t->tid, 0, 0);
	return 0;
}

/* Interrupt (if asked) and wait for every RUNNING thread, all at once, so
 * that a zombie leader whose exit report waits for its threads' is not
 * waited for first.  -ETIMEDOUT (with *late the first one left) or 0. */
static int hj_stop_many(struct hijack *h, int interrupt, int timeout_ms,
			pid_t *late)
{
	uint64_t end = hj_now_ms() + timeout_ms;
	struct hijack_nap nap = { 0 };
	size_t i;

	if (interrupt)
		for (i = 0; i < h->nth; i++)
			if (h->th[i].state == HJ_RUNNING)
				ptrace(PTRACE_INTERRUPT, h->th[i].tid, 0, 0);
	for (;;) {
		int left = 0;

		for (i = 0; i < h->nth; i++)
			if (!hj_stop_step(h, &h->th[i])) {
				if (!left && late)
					*late = h->th[i].tid;
				left++;
			}
		if (!left)
			return 0;
		if (hj_now_ms() >= end)
			return -ETIMEDOUT;
		hijack_nap(&nap);
	}
}

/* Seize and stop every thread in /proc/PID/task until no new one shows up.
 * Returns 0, or -errno with a cause for the main thread's seize failure. */
static int hj_seize_all(struct hijack *h, char **cause)
{
	char path[64];
	int round, err;
	pid_t late = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", h->pid);
	for (round = 0; round < 1000; round++) {
		DIR *d = opendir(path);
		struct dirent *de;
		int fresh = 0;

		if (!d)
			return propel_cause(cause, -ESRCH,
					    "the target exited during attach");
		while ((de = readdir(d))) {
			pid_t tid = atoi(de->d_name);
			struct hj_thread *t;

			if (tid <= 0 || hj_find(h, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
				err = -errno;
				/* exited meanwhile; EPERM for a thread of a
				 * process we already hold means it is exiting */
				if (err == -ESRCH || (err == -EPERM && h->nth))
					continue;
				closedir(d);
				if (err == -EPERM) {
					pid_t tr = hj_tracer(h->pid);
					unsigned long fl;
					char st;

					if (propel_proc_stat(h->pid, &st, &fl) < 0 ||
					    st == 'Z' || st == 'X')
						return propel_cause(
							cause, -ESRCH,
							"the target exited "
							"during attach");

					if (tr)
						return hj_cause_traced(cause, tr);
					return hj_cause_eperm(h->pid, cause);
				}
				return propel_cause(cause, err,
						    "PTRACE_SEIZE %d: %s", tid,
						    strerror(-err));
			}
			t = hj_add(h, tid);
			if (!t) {
				ptrace(PTRACE_DETACH, tid, 0, 0);
				closedir(d);
				return propel_cause(cause, -ENOMEM,
						    "out of memory");
			}
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
				pr_dbg("interrupt %d: %s", tid, strerror(errno));
			fresh++;
		}
		closedir(d);
		err = hj_stop_many(h, 0, HJ_STOP_TIMEOUT_MS, &late);
		if (err)
			return propel_cause(cause, err,
					    "thread %d did not stop within %d ms",
					    late, HJ_STOP_TIMEOUT_MS);
		if (!fresh)
			break;
	}
	for (size_t i = 0; i < h->nth; i++)
		if (h->th[i].state == HJ_STOPPED)
			return 0;
	return propel_cause(cause, -ESRCH, "the target exited during attach");
}

/* Stop every thread again after HIJACK_OTHERS_RUN and catch threads that
 * were created meanwhile. */
static int hj_stop_all(struct hijack *h, char **cause)
{
	pid_t late = 0;
	int err = hj_stop_many(h, 1, HJ_STOP_TIMEOUT_MS, &late);

	if (err)
		return propel_cause(cause, err,
				    "thread %d did not stop within %d ms", late,
				    HJ_STOP_TIMEOUT_MS);
	return hj_seize_all(h, cause);
}

/* The target's memory, for reading and staging (every thread held). */
static int hj_open_mem(struct hijack *h, char **cause)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)h->pid);
	h->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (h->memfd >= 0)
		return 0;
	err = -errno;
	return propel_cause(cause, err, "open %s: %s", path, strerror(-err));
}

/* ---- attach / detach -------------------------------------------------- */

int hijack_attach(pid_t pid, struct hijack **out, char **cause)
{
	struct hijack *h;
	unsigned long flags;
	char state, v[32];
	pid_t tracer;
	int err;

	*out = NULL;
	if (pid <= 0 || propel_proc_stat(pid, &state, &flags) < 0)
		return propel_cause(cause, -ESRCH, "no such process");
	if (flags & PROPEL_PF_KTHREAD)
		return propel_cause(cause, -EPERM,
				    "a kernel thread (cannot be traced)");
	if (state == 'Z' || state == 'X')
		return propel_cause(cause, -ESRCH,
				    "a zombie (it has exited; its parent has "
				    "not reaped it)");
	if (hj_status_field(pid, "Tgid", v, sizeof(v)) == 0 && atoi(v) != pid)
		return propel_cause(cause, -EINVAL,
				    "%d is a thread of process %d: attach to "
				    "the process",
				    pid, atoi(v));
	tracer = hj_tracer(pid);
	if (tracer)
		return hj_cause_traced(cause, tracer);
	if (state == 'T')
		return propel_cause(cause, -EAGAIN,
				    "the process is stopped (SIGSTOP): "
				    "continue it first");
	if (pid == getpid())
		return propel_cause(cause, -EINVAL, "cannot attach to myself");

	h = calloc(1, sizeof(*h));
	if (!h)
		return propel_cause(cause, -ENOMEM, "out of memory");
	h->pid = pid;
	h->memfd = -1;
	h->timeout_ms = HIJACK_CALL_TIMEOUT_MS;
	err = hj_seize_all(h, cause);
	if (err)
		goto fail;
	err = hj_open_mem(h, cause);
	if (err)
		goto fail;
	pr_dbg("attached %d (%zu threads)", pid, h->nth);
	*out = h;
	return 0;
fail:
	if (err == -ESRCH && propel_proc_stat(pid, &state, &flags) < 0)
		propel_cause(cause, err, "the target exited during attach");
	hijack_detach(h);
	return err;
}

int hijack_adopt(pid_t pid, pid_t tid, struct hijack **out, char **cause)
{
	struct hijack *h;
	struct hj_thread *t;
	int err;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return propel_cause(cause, -ENOMEM, "out of memory");
	h->pid = pid;
	h->memfd = -1;
	h->timeout_ms = HIJACK_CALL_TIMEOUT_MS;
	t = hj_add(h, tid);
	if (!t) {
		free(h);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	t->state = HJ_STOPPED;
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs) < 0) {
		err = -errno;
		t->state = HJ_GONE;
		hijack_free(h);
		return propel_cause(cause, err, "thread %d is not held: %s",
				    (int)tid, strerror(-err));
	}
	err = hj_seize_all(h, cause);
	if (err)
		goto fail;
	err = hj_open_mem(h, cause);
	if (err)
		goto fail;
	pr_dbg("adopted %d (%zu threads)", pid, h->nth);
	*out = h;
	return 0;
fail:
	hijack_detach(h);
	return err;
}

/* The staged bytes' old contents put back (put_back), or only forgotten:
 * the call thread ran the program's code since, and the stack below its
 * old sp is its own again (hijack_call, escaped). */
static void hj_unstage(struct hijack *h, int put_back)
{
	while (h->nstage > 0) {
		struct hj_saved *s = &h->stage[--h->nstage];

		if (put_back)
			hijack_write(h, s->addr, s->bytes, s->n);
		free(s->bytes);
	}
	h->stage_used = 0;
}

/* A synchronous fault: re-executing the instruction raises it again. */
static int hj_sync_fault(const siginfo_t *si)
{
	int sig = si->si_signo;

	return si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS ||
				   sig == SIGILL || sig == SIGFPE);
}

/* Re-send the kept signals hj_detach_kept did not: those of a thread that
 * was not stopped at the end.  They come from our pid. */
static void hj_redeliver(struct hijack *h)
{
	int i;

	for (i = 0; i < h->nsigs; i++) {
		siginfo_t *si = &h->sigs[i].si;
		pid_t tid = h->sigs[i].tid;
		int sig = si->si_signo, r;

		if (h->sigs[i].done || hj_sync_fault(si))
			continue;
		if (si->si_code < 0 && si->si_code != SI_TKILL)
			r = syscall(SYS_rt_tgsigqueueinfo, h->pid, tid, sig, si);
		else
			r = syscall(SYS_tgkill, h->pid, tid, sig);
		if (r < 0)
			r = kill(h->pid, sig);
		pr_dbg("re-delivered signal %d to %d: %d", sig, tid, r);
	}
	h->nsigs = 0;
}

/*
 * Detach the stopped thread t so that each signal kept for it reaches it
 * as it came, with its own siginfo: glibc's SIGSETXID and SIGCANCEL
 * handlers ignore one their own process did not send (si_pid, SI_TKILL),
 * and a setgid then waits for ever for the thread.  The kernel lets no
 * other process forge such a siginfo, so each is sent again (tgkill, from
 * our pid) and taken at its signal-delivery-stop, which comes before the
 * thread runs a user instruction: its siginfo is put back and the thread
 * resumed -- detached, at the last one -- with it.  Returns 1 once t is
 * detached or gone; 0 with t stopped again for a plain detach (a signal it
 * blocks by now stays pending, as sent by us).
 */
static int hj_detach_kept(struct hijack *h, struct hj_thread *t)
{
	int want = 0, i, status;

	for (i = 0; i < h->nsigs; i++) {
		if (h->sigs[i].tid != t->tid || h->sigs[i].done)
			continue;
		if (hj_sync_fault(&h->sigs[i].si))
			h->sigs[i].done = 1;
		else if (syscall(SYS_tgkill, h->pid, t->tid,
				 h->sigs[i].si.si_signo) == 0)
			want++;
	}
	if (!want || ptrace(PTRACE_CONT, t->tid, 0, 0) < 0)
		return 0;
	t->state = HJ_RUNNING;
	while (want > 0 && !hj_wait(h, t, HJ_KEPT_WAIT_MS, &status)) {
		int sig = 0;

		if ((status >> 16) == 0) {
			siginfo_t si;

			sig = WSTOPSIG(status);
			memset(&si, 0, sizeof(si));
			ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si);
			for (i = 0; i < h->nsigs; i++)
				if (h->sigs[i].tid == t->tid &&
				    !h->sigs[i].done &&
				    h->sigs[i].si.si_signo == sig)
					break;
			if (i < h->nsigs) {
				/* ours, or the thread's own one that ours
				 * merged into (a standard signal pends once) */
				if (si.si_pid == getpid() &&
				    si.si_code == SI_TKILL)
					ptrace(PTRACE_SETSIGINFO, t->tid, 0,
					       &h->sigs[i].si);
				h->sigs[i].done = 1;
				pr_dbg("signal %d back to %d with its siginfo",
				       sig, t->tid);
				if (--want == 0 &&
				    ptrace(PTRACE_DETACH, t->tid, 0, sig) == 0) {
					t->state = HJ_GONE;
					return 1;
				}
			}
		}
		/* an interrupt or group stop goes on without a signal */
		ptrace(PTRACE_CONT, t->tid, 0, sig);
	}
	if (t->state == HJ_GONE)
		return 1;
	/* the rest pend, as sent by us */
	for (i = 0; i < h->nsigs; i++)
		if (h->sigs[i].tid == t->tid)
			h->sigs[i].done = 1;
	ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
	for (i = 0; i < 1000 && !hj_stop_step(h, t); i++)
		usleep(1000);
	return t->state == HJ_GONE;
}

int hijack_detach(struct hijack *h)
{
	uint64_t end;
	size_t i;
	int err = 0, left;

	if (!h)
		return 0;
	/* the call thread's regs are already restored; put staged bytes
	 * back, then bring every thread to a stop and detach it; a thread
	 * that dies meanwhile must be reaped (a traced zombie is not
	 * released to its parent until its tracer waits for it) */
	if (h->memfd >= 0)
		hj_unstage(h, 1);
	end = hj_now_ms() + HJ_STOP_TIMEOUT_MS;
	do {
		left = 0;
		hj_stop_many(h, 1, 50, NULL);
		for (i = 0; i < h->nth; i++) {
			struct hj_thread *t = &h->th[i];

			if (t->state != HJ_STOPPED)
				continue;
			hj_untrap(t);
			if (hj_detach_kept(h, t))
				continue;
			if (t->state != HJ_STOPPED)
				continue;
			if (ptrace(PTRACE_DETACH, t->tid, 0, 0) == 0) {
				t->state = HJ_GONE;
				continue;
			}
			if (errno != ESRCH && !err)
				err = -errno;
			t->state = HJ_RUNNING; /* dying: reap it below */
		}
		for (i = 0; i < h->nth; i++)
			left += h->th[i].state != HJ_GONE;
	} while (left && hj_now_ms() < end);
	if (left && !err)
		err = -ETIMEDOUT;
	hj_redeliver(h);
	pr_dbg("detached %d%s", h->pid, left ? " (some threads left)" : "");
	hijack_free(h);
	return err;
}

void hijack_free(struct hijack *h)
{
	if (!h)
		return;
	while (h->nstage > 0)
		free(h->stage[--h->nstage].bytes);
	if (h->memfd >= 0)
		close(h->memfd);
	free(h->th);
	free(h);
}

pid_t hijack_pid(const struct hijack *h)
{
	return h->pid;
}

void hijack_set_return(struct hijack *h, uint64_t pad, uint64_t result)
{
	h->ret_pad = pad;
	h->ret_result = pad ? result : 0;
}

int hijack_threads(struct hijack *h, struct propel_thread_hint **hints,
		   size_t *n)
{
	size_t i, k = 0;

	*hints = calloc(h->nth ? h->nth : 1, sizeof(**hints));
	if (!*hints)
		return -ENOMEM;
	for (i = 0; i < h->nth; i++) {
		if (h->th[i].state != HJ_STOPPED)
			continue;
		(*hints)[k].tid = h->th[i].tid;
		(*hints)[k].pc = h->th[i].regs.rip;
		(*hints)[k].sp = h->th[i].regs.rsp;
		(*hints)[k].sys = (int64_t)h->th[i].regs.orig_rax;
		(*hints)[k].sys_arg[0] = h->th[i].regs.rdi;
		(*hints)[k].sys_arg[1] = h->th[i].regs.rsi;
		(*hints)[k].sys_arg[2] = h->th[i].regs.rdx;
		(*hints)[k].sys_arg[3] = h->th[i].regs.r10;
		(*hints)[k].sys_arg[4] = h->th[i].regs.r8;
		(*hints)[k].sys_arg[5] = h->th[i].regs.r9;
		k++;
	}
	*n = k;
	return 0;
}

void hijack_set_timeout(struct hijack *h, int ms)
{
	h->timeout_ms = ms > 0 ? ms : HIJACK_CALL_TIMEOUT_MS;
}

/* ---- memory ----------------------------------------------------------- */

int hijack_read(struct hijack *h, uint64_t addr, void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(h->memfd, (char *)buf + done, n - done,
				  (off_t)(addr + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += r;
	}
	return 0;
}

int hijack_write(struct hijack *h, uint64_t addr, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pwrite(h->memfd, (const char *)buf + done, n - done,
				   (off_t)(addr + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += r;
	}
	return 0;
}

int hijack_read_str(struct hijack *h, uint64_t addr, size_t max, char **out)
{
	char *s = calloc(1, max);
	size_t i;
	int err;

	if (!s)
		return -ENOMEM;
	/* byte-wise chunks so that a string near the end of a mapping is
	 * still read */
	for (i = 0; i + 1 < max; i++) {
		err = hijack_read(h, addr + i, s + i, 1);
		if (err) {
			free(s);
			return err;
		}
		if (!s[i])
			break;
	}
	s[max - 1] = 0;
	*out = s;
	return 0;
}

/* ---- calls ------------------------------------------------------------ */

static int hj_restart_kind(const struct user_regs_struct *r)
{
	long long ax = (long long)r->rax;

	if ((long long)r->orig_rax < 0)
		return 1; /* in user code */
	if (ax == -HJ_ERESTARTSYS || ax == -HJ_ERESTARTNOINTR ||
	    ax == -HJ_ERESTARTNOHAND)
		return 0; /* blocked in a restartable syscall: best */
	if (ax == -HJ_ERESTART_RESTARTBLOCK)
		return 3;
	return 2;
}

static struct hj_thread *hj_call_thread(struct hijack *h)
{
	struct hj_thread *best = NULL;
	size_t i;

	if (h->call_tid) {
		best = hj_find(h, h->call_tid);
		if (best && best->state == HJ_STOPPED)
			return best;
		h->call_tid = 0;
	}
	for (i = 0; i < h->nth; i++) {
		struct hj_thread *t = &h->th[i];

		if (t->state != HJ_STOPPED)
			continue;
		if (!best || hj_restart_kind(&t->regs) < hj_restart_kind(&best->regs))
			best = t;
	}
	if (best)
		h->call_tid = best->tid;
	return best;
}

int hijack_set_call_thread(struct hijack *h, pid_t tid)
{
	struct hj_thread *t = hj_find(h, tid);

	if (!t || t->state != HJ_STOPPED || h->nstage)
		return -EINVAL;
	h->call_tid = tid;
	return 0;
}

int hijack_call_escaped(const struct hijack *h)
{
	return h->escaped;
}

pid_t hijack_call_thread(struct hijack *h)
{
	struct hj_thread *t = hj_call_thread(h);

	return t ? t->tid : 0;
}

uint64_t hijack_call_thread_tp(struct hijack *h)
{
	struct hj_thread *t = hj_call_thread(h);

	return t ? (uint64_t)t->regs.fs_base : 0;
}

int hijack_call_thread_hint(struct hijack *h, struct propel_thread_hint *out)
{
	struct hj_thread *t = hj_call_thread(h);

	if (!t)
		return -ESRCH;
	memset(out, 0, sizeof(*out));
	out->tid = t->tid;
	out->pc = t->regs.rip;
	out->sp = t->regs.rsp;
	out->sys = (int64_t)t->regs.orig_rax;
	return 0;
}

int hijack_stage(struct hijack *h, const void *buf, size_t n, uint64_t *addr)
{
	struct hj_thread *t = hj_call_thread(h);
	struct hj_saved *s;
	uint64_t a;
	int err;

	if (!t)
		return -ESRCH;
	if (h->nstage >= (int)(sizeof(h->stage) / sizeof(h->stage[0])) ||
	    h->stage_used + n > 256 * 1024)
		return -ENOSPC;
	h->stage_used = (h->stage_used + n + 15) & ~(size_t)15;
	a = ((t->regs.rsp - HJ_RED_ZONE) & ~(uint64_t)15) - h->stage_used;
	s = &h->stage[h->nstage];
	s->bytes = malloc(n ? n : 1);
	if (!s->bytes)
		return -ENOMEM;
	err = hijack_read(h, a, s->bytes, n);
	if (!err)
		err = hijack_write(h, a, buf, n);
	if (err) {
		free(s->bytes);
		return err;
	}
	s->addr = a;
	s->n = n;
	h->nstage++;
	*addr = a;
	return 0;
}

/* Stop the call thread, back in the pad (hijack_set_return with a
 * result): 0 once it is held again, -ESRCH if it is gone. */
static int hj_take_back(struct hijack *h, struct hj_thread *t, char **cause)
{
	struct hijack_nap nap = { 0 };
	uint64_t end = hj_now_ms() + HJ_STOP_TIMEOUT_MS;

	ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
	while (!hj_stop_step(h, t) && hj_now_ms() < end)
		hijack_nap(&nap);
	if (t->state == HJ_GONE)
		return propel_cause(cause, -ESRCH, "the process exited during "
						   "the call");
	if (t->state != HJ_STOPPED)
		return propel_cause(cause, -ETIMEDOUT, "thread %d does not "
						       "stop after the call",
				    t->tid);
	return 0;
}

/* Service the other (running) threads during an HIJACK_OTHERS_RUN call:
 * pass their signals through, keep stop signals, note exits. */
static void hj_service_others(struct hijack *h, struct hj_thread *self)
{
	size_t i;

	for (i = 0; i < h->nth; i++) {
		struct hj_thread *t = &h->th[i];
		int status, sig = 0;

		if (t == self || t->state != HJ_RUNNING)
			continue;
		if (hj_wait(h, t, 0, &status))
			continue;
		if ((status >> 16) == 0) {
			siginfo_t si;

			sig = WSTOPSIG(status);
			if (hj_is_stop_sig(sig)) {
				if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0)
					hj_keep_signal(h, t->tid, &si);
				sig = 0;
			}
		}
		ptrace(PTRACE_CONT, t->tid, 0, sig);
	}
}

int hijack_call(struct hijack *h, uint64_t fn, const uint64_t *args, int nargs,
		unsigned flags, uint64_t *ret, char **cause)
{
	unsigned char *xbuf = NULL, *frame_old = NULL;
	struct hj_thread *t = hj_call_thread(h);
	struct user_regs_struct saved, regs;
	struct iovec xio = { NULL, HJ_XSTATE_MAX };
	int xnote = NT_X86_XSTATE, err = 0, status;
	uint64_t sp, zero = 0, slot_old = 0, end, sigmask = 0;
	unsigned long long *argreg[6];
	struct hj_ret_frame fr = { 0 };
	/* safe: the call returns through a signal frame (hijack-ret.c), and
	 * the thread runs under PTRACE_SYSCALL until its rt_sigreturn;
	 * at_entry: the call ended at that syscall's entry stop */
	int safe = h->ret_pad != 0, at_entry = 0, escaped = 0, put_back = 1;
	/* poll: the pad says it is back (ret_result + 8), we take it there */
	int poll = 0;
	struct hijack_nap nap = { 0 };
	int cont = PTRACE_CONT;
	size_t i;

	h->escaped = 0;
	if (!t)
		return propel_cause(cause, -ESRCH, "no stopped thread to call from");
	if (nargs < 0 || nargs > 6)
		return propel_cause(cause, -EINVAL, "at most 6 arguments");
	saved = t->regs;
	xio.iov_base = xbuf = malloc(HJ_XSTATE_MAX);
	if (!xbuf) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto unstage;
	}
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(long)xnote, &xio) < 0) {
		xnote = NT_PRFPREG;
		xio.iov_len = HJ_XSTATE_MAX;
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(long)xnote, &xio) < 0) {
			err = -errno;
			propel_cause(cause, err, "cannot read FP state of %d: %s",
				     t->tid, strerror(-err));
			goto unstage;
		}
	}

	/* the frame: below the red zone and the staged data, aligned so
	 * that rsp + 8 is a multiple of 16 at the callee's first insn */
	sp = ((saved.rsp - HJ_RED_ZONE) & ~(uint64_t)15) - h->stage_used;
	/* the safe way back, when its frame can be built (else the plain
	 * one: return to 0) */
	if (safe &&
	    (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(sigmask),
		    &sigmask) < 0 ||
	     hj_ret_frame(&saved, xbuf, xio.iov_len, xnote == NT_X86_XSTATE,
			  sigmask, sp & ~(uint64_t)15, h->ret_pad, &fr) < 0 ||
	     !(frame_old = malloc(fr.n)) ||
	     hijack_read(h, fr.lo, frame_old, fr.n) < 0 ||
	     hijack_write(h, fr.lo, fr.bytes, fr.n) < 0)) {
		pr_dbg("call in %d: no signal frame, the plain way back",
		       t->tid);
		if (frame_old && fr.n)
			hijack_write(h, fr.lo, frame_old, fr.n);
		free(frame_old);
		frame_old = NULL;
		safe = 0;
	}
	if (safe && h->ret_result) {
		uint64_t clear[2] = { 0, 0 };

		sp = fr.sp;
		poll = !hijack_write(h, h->ret_result, clear, sizeof(clear));
		cont = poll ? PTRACE_CONT : PTRACE_SYSCALL;
	} else if (safe) {
		sp = fr.sp;
		cont = PTRACE_SYSCALL;
		/* syscall stops told from SIGTRAPs (and PTRACE_GET_SYSCALL_INFO
		 * says which only with it) */
		ptrace(PTRACE_SETOPTIONS, t->tid, 0, PTRACE_O_TRACESYSGOOD);
	} else {
		sp = (sp & ~(uint64_t)15) - 8;
		err = hijack_read(h, sp, &slot_old, 8);
		if (!err)
			err = hijack_write(h, sp, &zero, 8);
	}
	if (err) {
		propel_cause(cause, err, "cannot write the stack of thread %d",
			     t->tid);
		goto unstage;
	}
	regs = saved;
	argreg[0] = &regs.rdi;
	argreg[1] = &regs.rsi;
	argreg[2] = &regs.rdx;
	argreg[3] = &regs.rcx;
	argreg[4] = &regs.r8;
	argreg[5] = &regs.r9;
	for (i = 0; i < (size_t)nargs; i++)
		*argreg[i] = args[i];
	regs.rsp = sp;
	regs.rip = fn;
	regs.rax = 0;
	regs.orig_rax = (unsigned long long)-1;
	regs.eflags &= ~0x500ull; /* DF, TF */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &regs) < 0) {
		err = -errno;
		propel_cause(cause, err, "cannot set registers of %d", t->tid);
		goto slot;
	}

	if (flags & HIJACK_OTHERS_RUN)
		for (i = 0; i < h->nth; i++)
			if (&h->th[i] != t && h->th[i].state == HJ_STOPPED) {
				hj_untrap(&h->th[i]);
				if (ptrace(PTRACE_CONT, h->th[i].tid, 0, 0) == 0)
					h->th[i].state = HJ_RUNNING;
			}
	if (ptrace(cont, t->tid, 0, 0) < 0) {
		err = -errno;
		propel_cause(cause, err, "cannot resume thread %d", t->tid);
		goto restore;
	}
	t->state = HJ_RUNNING;
	/* a test switch (tests/e2e/harm-escape.sh): propel that late at the
	 * pad, as a loaded machine keeps it off its CPU; the thread comes
	 * back by itself */
	if (poll)
		propel_test_delay("PROPEL_TEST_PAD_LATE_MS");

	end = hj_now_ms() + h->timeout_ms;
	for (;;) {
		int left = (int)(end - hj_now_ms());

		if ((int64_t)(end - hj_now_ms()) <= 0)
			left = 0;
		if ((flags & HIJACK_OTHERS_RUN) || poll) {
			uint64_t done = 0;

			if (flags & HIJACK_OTHERS_RUN)
				hj_service_others(h, t);
			/* a poll: one look at the thread, one at the pad's
			 * word, a nap (short while a return is likely) */
			err = hj_wait(h, t, poll ? 0 : left < 2 ? left : 2, &status);
			if (err == -ETIMEDOUT && poll &&
			    !hijack_read(h, h->ret_result + 8, &done, 8) && done) {
				err = hj_take_back(h, t, cause);
				if (err)
					goto others;
				hijack_read(h, h->ret_result, ret, 8);
				/* not stopped in the pad: its rt_sigreturn
				 * ran, the thread is back as it was held (and
				 * ran on a moment) */
				escaped = t->regs.rip < h->ret_pad ||
					  t->regs.rip >= h->ret_pad + HIJACK_PAD_SIZE;
				h->escaped = escaped;
				if (escaped)
					pr_dbg("call thread %d came back by "
					       "itself: rip %#llx sp %#llx, the "
					       "call's frame %#llx-%#llx",
					       t->tid,
					       (unsigned long long)t->regs.rip,
					       (unsigned long long)t->regs.rsp,
					       (unsigned long long)fr.lo,
					       (unsigned long long)(fr.lo + fr.n));
				break;
			}
			if (err == -ETIMEDOUT && poll && left > 0) {
				hijack_nap(&nap);
				continue;
			}
			if (err == -ETIMEDOUT && left > 2)
				continue;
		} else {
			err = hj_wait(h, t, left, &status);
		}
		if (err == -ESRCH) {
			propel_cause(cause, err, "the process exited during the "
						 "call");
			goto others;
		}
		if (err == -ETIMEDOUT) {
			char fw[PATH_MAX / 4], tw[PATH_MAX / 4];

			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
			for (int k = 0; k < 1000 && !hj_stop_step(h, t); k++)
				usleep(1000);
			/* where it stayed: the next look starts there */
			hijack_where(h->pid, fn, fw, sizeof(fw));
			hijack_where(h->pid, t->regs.rip, tw, sizeof(tw));
			propel_cause(cause, err,
				     "call to %s in thread %d did not return "
				     "within %d ms: abandoned (it was at %s, "
				     "syscall %lld)",
				     fw, t->tid, h->timeout_ms, tw,
				     t->state == HJ_STOPPED
					     ? (long long)t->regs.orig_rax
					     : -2LL);
			goto restore;
		}
		if ((status >> 16) == 0) {
			int sig = WSTOPSIG(status);
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si);
			ptrace(PTRACE_GETREGS, t->tid, 0, &regs);
			if (safe && sig == (SIGTRAP | 0x80)) {
				struct __ptrace_syscall_info sc;
				long n = ptrace(PTRACE_GET_SYSCALL_INFO, t->tid,
						(void *)sizeof(sc), &sc);

				if (n > 0 && sc.op == PTRACE_SYSCALL_INFO_ENTRY &&
				    sc.entry.nr == SYS_rt_sigreturn &&
				    sc.stack_pointer == sp + 8) {
					/* back in the pad: its rt_sigreturn is
					 * not run, we put the thread back */
					*ret = 0;
					if (h->ret_result)
						hijack_read(h, h->ret_result, ret, 8);
					t->state = HJ_STOPPED;
					at_entry = 1;
					break;
				}
				ptrace(cont, t->tid, 0, 0);
				continue;
			}
			if (!safe && sig == SIGSEGV && regs.rip == 0 &&
			    regs.rsp == sp + 8) {
				*ret = regs.rax;
				t->state = HJ_STOPPED;
				break;
			}
			if (si.si_code > 0 &&
			    (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
			     sig == SIGFPE)) {
				err = propel_cause(cause, -EFAULT,
						   "the call faulted in thread "
						   "%d (%s at %#llx)",
						   t->tid, strsignal(sig),
						   (unsigned long long)regs.rip);
				t->state = HJ_STOPPED;
				goto restore;
			}
			if (hj_int3_trap(t->tid, &si, regs.rip)) {
				/* an int3 met by the call (an agent site):
				 * its handler must run, now */
				ptrace(cont, t->tid, 0, SIGTRAP);
				continue;
			}
			hj_keep_signal(h, t->tid, &si);
		}
		ptrace(cont, t->tid, 0, 0);
	}

restore:
	/* (an escaped thread put itself back by its own rt_sigreturn) */
	if (t->state == HJ_STOPPED && !escaped) {
		/* at a syscall's entry stop, the syscall is skipped (orig_rax
		 * -1) and the thread goes on as if released from its hold:
		 * an interrupted call restarted (hj_regs_resumed); at any
		 * other stop, the kernel restarts it from saved */
		struct user_regs_struct back = saved;

		if (at_entry)
			hj_regs_resumed(&saved, &back);
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &back) < 0 && !err)
			err = propel_cause(cause, -errno,
					   "cannot restore registers of %d",
					   t->tid);
		if (ptrace(PTRACE_SETREGSET, t->tid, (void *)(long)xnote, &xio) < 0 &&
		    !err)
			err = propel_cause(cause, -errno,
					   "cannot restore FP state of %d",
					   t->tid);
		t->regs = saved;
	}
others:
	if (flags & HIJACK_OTHERS_RUN) {
		int e2 = hj_stop_all(h, cause);

		if (e2 && !err)
			err = e2;
	}
slot:
	/*
	 * The bytes under the thread's sp (the call's frame, the staged
	 * data) go back only while they are still ours: the thread held and
	 * about to resume from saved (or never resumed).  A thread that came
	 * back by itself (escaped: the pad's rt_sigreturn ran because we were
	 * late, a loaded machine starving propel for the pad's ~0.4 s) has
	 * run the program since, and that stack is its own again: its live
	 * frames may lie there now, and the old bytes written over them were
	 * its next return address -- spin's worker jumped to the base of its
	 * stack mapping, nginx's to 0 (capture attach/200-cycles, real-software
	 * nginx/cycles under make test J=2).  A thread still running (not
	 * taken back) is on its way out through the frame: not touched either.
	 */
	put_back = t->state == HJ_STOPPED && !escaped;
	if (put_back) {
		if (frame_old)
			hijack_write(h, fr.lo, frame_old, fr.n);
		else
			hijack_write(h, sp, &slot_old, 8);
	}
unstage:
	hj_unstage(h, put_back);
	free(frame_old);
	free(fr.bytes);
	free(xbuf);
	return err;
}
