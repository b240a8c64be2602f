/*
 * inject/hijack-ret.c - the way back from a hijacked call that needs no
 * tracer: a thread whose propel is killed in the middle of a call puts
 * itself back.
 *
 * A call made the plain way returns to address 0, a fault only the tracer
 * turns into "done": if the tracer dies first, the kernel lets the thread
 * go, it returns to 0 and the process dies of SIGSEGV (redis-server, 1 of 20
 * rounds of a kill -9 of `propel attach` in its first 400 ms).  The safe
 * way (hijack_set_return): below the call's frame lies a signal frame (the
 * kernel's struct rt_sigframe, as a signal handler's return reads it)
 * holding the thread's own registers -- as they will be once an interrupted
 * system call is restarted --, its FP/vector state and its signal mask, and
 * the callee returns into a pad that ends in rt_sigreturn: glibc's
 * __restore_rt (`mov $15, %rax; syscall`) or the agent's
 * propel_agent_return, which first stores rax where the injector reads it.
 * With the tracer alive, the call thread runs under PTRACE_SYSCALL and the
 * tracer takes it at that rt_sigreturn's entry (hijack.c); without it, the
 * rt_sigreturn runs and the thread goes on exactly where it was held.
 *
 * What the frame must hold for rt_sigreturn (arch/x86/kernel/signal_64.c):
 * the ucontext at the sp of the syscall (the return slot just below it),
 * uc_flags UC_FP_XSTATE | UC_SIGCONTEXT_SS, cs and ss as they were, the
 * XSAVE image 64-byte aligned with its software bytes filled in
 * (FP_XSTATE_MAGIC1, sizes, and the features: the ptrace regset has only
 * XCR0 there) and FP_XSTATE_MAGIC2 after it -- without them the kernel
 * would restore SSE alone and reset the other vector state --, an alternate
 * signal stack whose mode is invalid, so that sigreturn leaves the thread's
 * own sigaltstack alone (it would install whatever the frame says).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>
#include <unistd.h>

#include "inject/hijack.h"
#include "inject/hijack-ret.h"
#include "share/proc.h"

#define HJ_ERESTARTSYS 512
#define HJ_ERESTARTNOINTR 513
#define HJ_ERESTARTNOHAND 514
#define HJ_ERESTART_RESTARTBLOCK 516
#define HJ_NR_RESTART_SYSCALL 219
#define HJ_UC_FP_XSTATE 0x1
#define HJ_UC_SIGCONTEXT_SS 0x2
#define HJ_FP_XSTATE_MAGIC1 0x46505853u
#define HJ_FP_XSTATE_MAGIC2 0x46505845u
#define HJ_SS_INVALID_MODE 3 /* neither 0, SS_ONSTACK nor SS_DISABLE */
#define HJ_SIGINFO_SIZE 128

/* the kernel's struct sigcontext (x86-64) and struct ucontext */
struct hj_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
};

struct hj_ucontext {
	uint64_t flags, link;
	uint64_t ss_sp;
	int32_t ss_flags, ss_pad;
	uint64_t ss_size;
	struct hj_sigcontext mc;
	uint64_t sigmask;
};

_Static_assert(sizeof(struct hj_sigcontext) == 256, "struct sigcontext");
_Static_assert(offsetof(struct hj_ucontext, mc) == 40, "uc_mcontext");
_Static_assert(offsetof(struct hj_ucontext, sigmask) == 296, "uc_sigmask");

void hj_regs_resumed(const struct user_regs_struct *saved,
		     struct user_regs_struct *out)
{
	long long ax = (long long)saved->rax;

	*out = *saved;
	if ((long long)saved->orig_rax >= 0) {
		if (ax == -HJ_ERESTARTSYS || ax == -HJ_ERESTARTNOINTR ||
		    ax == -HJ_ERESTARTNOHAND) {
			out->rax = saved->orig_rax;
			out->rip -= 2;
		} else if (ax == -HJ_ERESTART_RESTARTBLOCK) {
			out->rax = HJ_NR_RESTART_SYSCALL;
			out->rip -= 2;
		}
	}
	out->orig_rax = (unsigned long long)-1;
}

int hj_ret_frame(const struct user_regs_struct *saved, const void *xstate,
		 size_t xlen, int is_xstate, uint64_t sigmask, uint64_t top,
		 uint64_t pad, struct hj_ret_frame *f)
{
	struct user_regs_struct r;
	struct hj_ucontext uc;
	uint64_t xs, ucp;
	uint32_t xsize = (uint32_t)xlen, magic2 = HJ_FP_XSTATE_MAGIC2;

	memset(f, 0, sizeof(*f));
	if (xlen < 512 || xlen > 64 * 1024 || (is_xstate && xlen < 576))
		return -EINVAL;
	xs = (top - xsize - 4 - 64) & ~(uint64_t)63;
	ucp = (xs - sizeof(uc) - HJ_SIGINFO_SIZE) & ~(uint64_t)15;
	f->lo = ucp - 8;
	f->n = (size_t)(top - f->lo);
	f->sp = f->lo;
	f->bytes = calloc(1, f->n);
	if (!f->bytes)
		return -ENOMEM;

	hj_regs_resumed(saved, &r);
	/* a call the kernel restarts by its restart block (nanosleep, poll
	 * with a timeout: -ERESTART_RESTARTBLOCK) is made again whole: the
	 * rt_sigreturn that reads this frame sets that block to fail with
	 * EINTR (restore_sigcontext), which the program would have seen --
	 * a sleep a little longer instead (test-hijack late-sleep) */
	if ((long long)saved->orig_rax >= 0 &&
	    (long long)saved->rax == -HJ_ERESTART_RESTARTBLOCK)
		r.rax = saved->orig_rax;
	memset(&uc, 0, sizeof(uc));
	uc.flags = HJ_UC_FP_XSTATE | HJ_UC_SIGCONTEXT_SS;
	uc.ss_flags = HJ_SS_INVALID_MODE;
	uc.mc.r8 = r.r8, uc.mc.r9 = r.r9, uc.mc.r10 = r.r10, uc.mc.r11 = r.r11;
	uc.mc.r12 = r.r12, uc.mc.r13 = r.r13, uc.mc.r14 = r.r14;
	uc.mc.r15 = r.r15, uc.mc.rdi = r.rdi, uc.mc.rsi = r.rsi;
	uc.mc.rbp = r.rbp, uc.mc.rbx = r.rbx, uc.mc.rdx = r.rdx;
	uc.mc.rax = r.rax, uc.mc.rcx = r.rcx, uc.mc.rsp = r.rsp;
	uc.mc.rip = r.rip, uc.mc.eflags = r.eflags;
	uc.mc.cs = (uint16_t)r.cs;
	uc.mc.ss = (uint16_t)r.ss;
	uc.mc.fpstate = xs;
	uc.sigmask = sigmask;

	memcpy(f->bytes, &pad, 8);
	memcpy(f->bytes + 8, &uc, sizeof(uc));
	memcpy(f->bytes + (xs - f->lo), xstate, xsize);
	if (is_xstate) {
		/* the regset has XCR0's user bits at 464, where a signal
		 * frame has its software bytes (struct _fpx_sw_bytes) */
		unsigned char *sw = f->bytes + (xs - f->lo) + 464;
		uint32_t magic1 = HJ_FP_XSTATE_MAGIC1, ext = xsize + 4;
		uint64_t xcr0;

		memcpy(&xcr0, sw, 8);
		memset(sw, 0, 48);
		memcpy(sw, &magic1, 4);
		memcpy(sw + 4, &ext, 4);
		memcpy(sw + 8, &xcr0, 8);
		memcpy(sw + 16, &xsize, 4);
		memcpy(f->bytes + (xs - f->lo) + xsize, &magic2, 4);
	}
	return 0;
}

struct hj_rt_scan {
	const char *libc;
	uint64_t lo, hi;
};

static int hj_rt_step(const struct propel_map *m, void *arg)
{
	struct hj_rt_scan *s = arg;

	if (!m->path || !strchr(m->perms, 'x') ||
	    !hijack_lib_matches(m->path, s->libc))
		return 0;
	s->lo = m->lo;
	s->hi = m->hi;
	return 1;
}

uint64_t hijack_restore_rt(struct hijack *h)
{
	static const unsigned char pat[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00,
					     0x00, 0x0f, 0x05 };
	struct hj_rt_scan s = { "libc.so.6", 0, 0 };
	unsigned char *buf;
	uint64_t found = 0;
	size_t n;

	if (propel_maps_each(hijack_pid(h), hj_rt_step, &s) < 0 || !s.hi ||
	    s.hi - s.lo > (64u << 20))
		return 0;
	n = (size_t)(s.hi - s.lo);
	buf = malloc(n);
	if (!buf)
		return 0;
	if (!hijack_read(h, s.lo, buf, n)) {
		unsigned char *p = memmem(buf, n, pat, sizeof(pat));

		/* glibc's __restore_rt is 16-aligned: anything else is the
		 * pattern met inside other code */
		while (p && ((s.lo + (uint64_t)(p - buf)) & 15))
			p = memmem(p + 1, n - (size_t)(p + 1 - buf), pat, sizeof(pat));
		if (p)
			found = s.lo + (uint64_t)(p - buf);
	}
	free(buf);
	return found;
}
