/*
 * inject/agent/quiesce.c - proving that no thread is inside bytes about to
 * be replaced.
 *
 * A short call site (`call *%rax`, 2 bytes) has no room for a 5-byte jump,
 * so patch.c replaces a window: the call and the straight-line instructions
 * just before it, relocated into the stub.  Unlike one instruction, a
 * window can have a thread inside it -- preempted between two of its
 * instructions, or interrupted there by a signal whose handler is still
 * running.  Such a thread would resume in the middle of the new bytes.
 *
 * patch.c first puts an int3 on the window's first byte (a thread that gets
 * there from now on is sent to the stub by the trap handler) and then asks
 * quiesce_check() about every thread:
 *   - the calling thread: its stack, for signal frames holding a pc inside;
 *   - a thread blocked in the kernel (or stopped by the injector):
 *     /proc/self/task/TID/syscall gives its user sp and pc without
 *     disturbing it; its pc and stack are checked;
 *   - a thread running user code: after a short wait for it to block, it is
 *     asked with a queued SIGTRAP carrying our cookie; the handler reports
 *     pc and sp (quiesce_signal).  A thread that does not answer in time
 *     makes the whole batch unsafe.
 * Only a pc strictly inside a window matters (the first byte is the int3).
 * Stacks are scanned conservatively, every word from sp to the end of the
 * stack's mapping, so a false alarm only leaves a site unpatched.  Windows
 * hold no call but the last instruction, so a return address can point
 * inside one only through a signal frame -- which the scan covers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "share/clock.h"

char *ag_read_proc(const char *path, size_t *len);

static const int hs_cookie;
static volatile pid_t hs_tid;
static volatile uint64_t hs_pc, hs_sp;
static volatile int hs_done;

int quiesce_signal(const siginfo_t *si, const ucontext_t *uc)
{
	if (si->si_code != SI_QUEUE || si->si_pid != getpid() ||
	    si->si_value.sival_ptr != (void *)&hs_cookie)
		return 0;
	if (hs_tid == ag_gettid() && !hs_done) {
		hs_pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
		hs_sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
		__atomic_store_n(&hs_done, 1, __ATOMIC_RELEASE);
	}
	return 1; /* ours, even when late: never the program's */
}

static int inside(const struct quiesce_win *w, int n, uint64_t v, uint8_t *bad)
{
	int hit = 0;

	for (int i = 0; i < n; i++)
		if (v > w[i].lo && v < w[i].hi) {
			bad[i] = 1;
			hit = 1;
		}
	return hit;
}

/* The end of the readable mapping holding sp, from a maps text; its
 * start in *start when asked. */
static uint64_t stack_map(const char *maps, uint64_t sp, uint64_t *start)
{
	for (const char *l = maps; l && *l;) {
		unsigned long lo = 0, hi = 0;
		const char *p = l;

		while (*p && *p != '-') {
			lo = lo * 16 + (unsigned long)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10);
			p++;
		}
		if (*p == '-')
			p++;
		while (*p && *p != ' ') {
			hi = hi * 16 + (unsigned long)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10);
			p++;
		}
		if (sp >= lo && sp < hi && p[1] == 'r') {
			if (start)
				*start = lo;
			return hi;
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return 0;
}

/*
 * Where the calling thread's own scan begins: the frame it entered the
 * agent from (quiesce_enter), else its current frame.  Below that frame
 * lie only the agent's own frames, whose slots the decoder and patcher
 * fill with instruction addresses -- a stale one (a local never written
 * in this call) inside a window read as a thread in it, and the site was
 * left unpatched for good, by whatever the stack held before (ind_got's
 * `call *%rax` when a module's code began to be read lazily).
 */
static __thread uint64_t q_floor __attribute__((tls_model("initial-exec")));

uint64_t quiesce_enter(uint64_t floor)
{
	uint64_t old = q_floor;

	q_floor = floor; /* the innermost entry: any program frames of an
			  * outer one lie above it, scanned */
	return old;
}

void quiesce_leave(uint64_t old)
{
	q_floor = old;
}

static uint64_t own_sp(uint64_t sp)
{
	return q_floor > sp ? q_floor : sp;
}

static void scan_stack(const struct quiesce_win *w, int n, uint64_t sp,
		       uint64_t end, uint8_t *bad)
{
	for (uint64_t a = sp & ~7ull; a + 8 <= end; a += 8)
		inside(w, n, *(const uint64_t *)a, bad);
}

/* Parse /proc/self/task/TID/syscall: "running", or "... sp pc". */
static int task_regs(pid_t tid, uint64_t *sp, uint64_t *pc)
{
	char path[64], buf[256], *p, *q;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH; /* gone */
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -ESRCH;
	buf[r] = 0;
	if (strncmp(buf, "running", 7) == 0)
		return -EAGAIN;
	p = strrchr(buf, ' ');
	if (!p)
		return -EIO;
	*p = 0;
	q = strrchr(buf, ' ');
	if (!q)
		return -EIO;
	*pc = strtoull(p + 1, NULL, 16);
	*sp = strtoull(q + 1, NULL, 16);
	return 0;
}

/* Ask a running thread where it is. */
static int task_ask(pid_t tid, uint64_t *sp, uint64_t *pc)
{
	siginfo_t si;
	uint64_t t0 = propel_mono_ns() / 1000;
	int err;

	/* most "running" threads are about to block: wait for that first,
	 * since a signal would cut short a blocking call (EINTR) */
	while (propel_mono_ns() / 1000 - t0 < 2000) {
		err = task_regs(tid, sp, pc);
		if (err != -EAGAIN)
			return err;
		sched_yield();
	}
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGTRAP;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)&hs_cookie;
	hs_done = 0;
	hs_tid = tid;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGTRAP, &si) < 0)
		return -errno == -ESRCH ? -ESRCH : -EIO;
	t0 = propel_mono_ns() / 1000;
	while (!__atomic_load_n(&hs_done, __ATOMIC_ACQUIRE)) {
		if (propel_mono_ns() / 1000 - t0 > 50000) {
			hs_tid = 0;
			return -ETIMEDOUT;
		}
		sched_yield();
	}
	*sp = hs_sp;
	*pc = hs_pc;
	hs_tid = 0;
	return 0;
}

int quiesce_check(const struct quiesce_win *w, int n, uint8_t *bad)
{
	char *maps = NULL, dents[4096];
	size_t cap = 0;
	uint64_t sp = (uint64_t)__builtin_frame_address(0), end;
	pid_t self = ag_gettid();
	int fd, err = 0;
	long got;

	memset(bad, 0, (size_t)n);
	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	maps = ag_read_proc("/proc/self/maps", &cap);
	if (!maps) {
		close(fd);
		return -EIO;
	}
	end = stack_map(maps, sp, NULL);
	if (end)
		scan_stack(w, n, own_sp(sp), end, bad);
	while (!err && (got = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < got;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
			uint64_t tsp = 0, tpc = 0;

			off += d->d_reclen;
			/* the lease thread (agent.c) runs only agent code */
			if (tid <= 0 || tid == self || tid == ag_lease_tid)
				continue;
			err = task_regs(tid, &tsp, &tpc);
			if (err == -EAGAIN)
				err = task_ask(tid, &tsp, &tpc);
			if (err == -ESRCH) {
				err = 0; /* exited meanwhile */
				continue;
			}
			if (err)
				break;
			inside(w, n, tpc, bad);
			end = stack_map(maps, tsp, NULL);
			if (!end) {
				err = -EFAULT; /* a stack we cannot read */
				break;
			}
			scan_stack(w, n, tsp, end, bad);
		}
	}
	close(fd);
	munmap(maps, cap);
	if (err)
		memset(bad, 1, (size_t)n);
	return err;
}

/* The calling thread alone: its own stack, for signal frames. */
int quiesce_self(const struct quiesce_win *w, int n, uint8_t *bad)
{
	static uint64_t lo, hi; /* the stack mapping last seen */
	uint64_t sp = (uint64_t)__builtin_frame_address(0);

	if (!(sp >= lo && sp < hi)) {
		size_t cap = 0;
		char *maps = ag_read_proc("/proc/self/maps", &cap);

		if (!maps) {
			memset(bad, 1, (size_t)n);
			return -EIO;
		}
		hi = stack_map(maps, sp, &lo);
		munmap(maps, cap);
		if (!hi) {
			memset(bad, 1, (size_t)n);
			return -EFAULT;
		}
	}
	scan_stack(w, n, own_sp(sp), hi, bad);
	return 0;
}

/* The calling thread is the only one that runs the program's code (the
 * lease thread, agent.c, does not count). */
int quiesce_alone(void)
{
	char dents[512];
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long got, n = 0;

	/* the lease thread patching for the cost budget (budget.c) is never
	 * the program's only thread: the one it does not count runs */
	if (ag_lease_tid && ag_gettid() == ag_lease_tid) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (fd < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0)
		for (long off = 0; off < got;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);

			off += d->d_reclen;
			if (d->d_name[0] != '.' &&
			    strtol(d->d_name, NULL, 10) != ag_lease_tid)
				n++;
		}
	close(fd);
	return n == 1;
}
