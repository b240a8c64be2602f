/*
 * inject/hijack-ret.h - the signal frame a hijacked call returns through,
 * so that a thread whose tracer dies during the call puts itself back
 * (inject/hijack-ret.c).  Used by inject/hijack.c; unit-tested in
 * tests/unit/test-hijack.c.
 */
#ifndef PROPEL_INJECT_HIJACK_RET_H
#define PROPEL_INJECT_HIJACK_RET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

/* What to write in the target: n bytes at lo; sp is the callee's rsp at
 * its first instruction (its return slot holds the pad), and the
 * ucontext lies at sp + 8, where rt_sigreturn reads it. */
struct hj_ret_frame {
	uint64_t lo, sp;
	size_t n;
	unsigned char *bytes; /* malloc'd */
};

/* The registers a held thread goes on with once released: an interrupted
 * restartable system call rewound onto its syscall instruction with its
 * number in rax (what the kernel does when no handler runs), orig_rax -1. */
void hj_regs_resumed(const struct user_regs_struct *saved,
		     struct user_regs_struct *out);

/* Build the frame below top (16-aligned, free stack) for a thread held
 * with saved registers, its FP state (an NT_X86_XSTATE image when
 * is_xstate, else FXSAVE's 512 bytes) and signal mask.  0, -EINVAL for an
 * FP image the kernel would not take, -ENOMEM. */
int hj_ret_frame(const struct user_regs_struct *saved, const void *xstate,
		 size_t xlen, int is_xstate, uint64_t sigmask, uint64_t top,
		 uint64_t pad, struct hj_ret_frame *f);

#endif
