/*
 * inject/agent/tramp.S - the three trampolines every stub calls (agent.h
 * draws the stub).  They save what the hot path (hot.c, general registers
 * only) could clobber, call it, and take the slow path with the complete
 * extended register state saved (xsave) when the hot path asks for it.
 *
 * tramp_enter/tramp_tail, on entry: [rsp] = return into the stub,
 * [rsp+8] = callee, [rsp+16] = the caller's r11 (this word is the slot where
 * the call's return address will go), r11 = the site.  They build struct
 * ag_frame (agent.h) below rbp.
 * tramp_exit, on entry: [rsp] = return into the stub (its final jmp, which
 * is followed by the site's address), rsp+8 = the sp of the original call.
 * Compilers keep values in caller-saved registers across calls to callees
 * known not to touch them (gcc -fipa-ra), so no register may change that
 * the callee itself did not change: tramp_exit preserves all of them.
 */
#include "inject/agent/offsets.h"

	.text

.macro SAVE_FRAME
	push	%rbp
	mov	%rsp, %rbp
	push	%r11
	push	%rax
	push	%rdi
	push	%rsi
	push	%rdx
	push	%rcx
	push	%r8
	push	%r9
	push	%r10
	mov	%rsp, %rdi
	and	$-16, %rsp
.endm

.macro RESTORE_FRAME
	lea	-72(%rbp), %rsp
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rcx
	pop	%rdx
	pop	%rsi
	pop	%rdi
	pop	%rax
	pop	%r11
	pop	%rbp
.endm

/* Every caller-saved general register, for a call made where all of them
 * hold a callee's results (tramp_exit, tramp_fret).  rbp = the frame. */
.macro SAVE_RESULTS
	push	%rbp
	mov	%rsp, %rbp
	push	%rax
	push	%rdx
	push	%rcx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	and	$-16, %rsp
.endm

.macro RESTORE_RESULTS
	lea	-72(%rbp), %rsp
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rcx
	pop	%rdx
	pop	%rax
	pop	%rbp
.endm

/* Slow path: \fn(frame) with the full extended state saved around it. */
.macro SLOW_CALL fn
	mov	ag_xsave_size(%rip), %ecx
	sub	%rcx, %rsp
	and	$-64, %rsp
	xor	%eax, %eax
	mov	%rax, 512(%rsp)
	mov	%rax, 520(%rsp)
	mov	%rax, 528(%rsp)
	mov	%rax, 536(%rsp)
	mov	%rax, 544(%rsp)
	mov	%rax, 552(%rsp)
	mov	%rax, 560(%rsp)
	mov	%rax, 568(%rsp)
	mov	ag_xsave_mask(%rip), %eax
	mov	ag_xsave_mask+4(%rip), %edx
	xsave64	(%rsp)
	lea	-72(%rbp), %rdi
	call	\fn
	mov	ag_xsave_mask(%rip), %eax
	mov	ag_xsave_mask+4(%rip), %edx
	xrstor64 (%rsp)
.endm

/*
 * The fast paths' frame: FAST_BEGIN saves four scratch registers, loads
 * this thread (struct athread, ag_self) into rcx and sets its busy flag;
 * it goes to 9 when there is no thread or it is busy already, to 8 when
 * the agent is off, of another generation, or the thread is dead.
 * FAST_END TYPE stamps the record at rsi (word 0: tsc << 4 | TYPE, written
 * last), clears busy and returns to the stub; its 8 and 9 are the way to
 * the C path, with every register as it came.
 */
.macro FAST_BEGIN
	push	%rax
	push	%rdx
	push	%rcx
	push	%rsi
	movq	ag_self@gottpoff(%rip), %rcx
	movq	%fs:(%rcx), %rcx
	test	%rcx, %rcx
	jz	9f
	cmpl	$0, AT_BUSY(%rcx)
	jne	9f
	movl	$1, AT_BUSY(%rcx)
	cmpl	$0, ag_active(%rip)
	je	8f
	mov	ag_gen(%rip), %eax
	cmp	AT_GEN(%rcx), %eax
	jne	8f
	cmpl	$0, AT_DEAD(%rcx)
	jne	8f
.endm

.macro FAST_END type
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	shl	$4, %rax
	or	$\type, %rax
	mov	%rax, (%rsi)
	movl	$0, AT_BUSY(%rcx)
	pop	%rsi
	pop	%rcx
	pop	%rdx
	pop	%rax
	ret
8:	movl	$0, AT_BUSY(%rcx)
9:	pop	%rsi
	pop	%rcx
	pop	%rdx
	pop	%rax
.endm

/*
 * The common call, in four scratch registers and r11 (the site): a callee
 * known and ready (the site's own, or the one its cache holds for this
 * target), not in a system library or PLT (those look at their arguments
 * for callbacks: hot.c), nothing to unwind (the shadow stack's top is
 * above this slot), room in the shadow stack and the sub-buffer.  Pushes
 * the entry and writes the entry record as ag_on_enter does, busy set
 * around it; anything else goes to ag_on_enter.
 */
	.globl	ag_tramp_enter
	.hidden	ag_tramp_enter
	.type	ag_tramp_enter, @function
	.p2align 4
ag_tramp_enter:
	FAST_BEGIN
	mov	SITE_TARGET(%r11), %rsi		/* the callee */
	test	%rsi, %rsi
	jnz	1f
	mov	SITE_CACHE(%r11), %rsi
	test	%rsi, %rsi
	jz	8f
	mov	40(%rsp), %rax			/* the target of this call */
	cmp	FUNC_ADDR(%rsi), %rax
	jne	8f
1:	mov	FUNC_FLAGS(%rsi), %eax
	and	$(F_READY_ASM | F_SLOW_ASM | F_SYSTEM_ASM | F_PLT_ASM), %eax
	cmp	$F_READY_ASM, %eax
	jne	8f
	lea	48(%rsp), %rdx			/* this call's slot */
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	2f
	cmp	$SHADOW_MAX_ASM, %eax
	jae	8f
	shl	$4, %rax
	cmp	AT_SHADOW-16(%rcx,%rax), %rdx	/* the top must lie above */
	jae	8f
	shr	$4, %rax
2:	mov	AT_CUR(%rcx), %rdx
	cmp	AT_END(%rcx), %rdx
	je	8f
	incl	AT_DEPTH(%rcx)
	shl	$4, %rax
	lea	AT_SHADOW(%rcx,%rax), %rax	/* the new entry */
	lea	48(%rsp), %rdx
	mov	%rdx, (%rax)
	mov	FUNC_ID(%rsi), %edx
	mov	%edx, 8(%rax)
	mov	SITE_ID(%r11), %esi
	mov	%esi, 12(%rax)
	mov	AT_CUR(%rcx), %rax		/* the record */
	mov	%edx, 8(%rax)
	mov	%esi, 12(%rax)
	lea	16(%rax), %rsi
	mov	%rsi, AT_CUR(%rcx)
	mov	%rax, %rsi
	FAST_END PROPEL_REC_ENTRY_ASM
	SAVE_FRAME
	call	ag_on_enter
	test	%eax, %eax
	jz	1f
	SLOW_CALL ag_on_enter_slow
1:	RESTORE_FRAME
	ret
	.size	ag_tramp_enter, .-ag_tramp_enter

	.globl	ag_tramp_tail
	.hidden	ag_tramp_tail
	.type	ag_tramp_tail, @function
	.p2align 4
ag_tramp_tail:
	SAVE_FRAME
	call	ag_on_tail
	test	%eax, %eax
	jz	1f
	SLOW_CALL ag_on_tail_slow
1:	RESTORE_FRAME
	ret
	.size	ag_tramp_tail, .-ag_tramp_tail

/*
 * The common return, in four scratch registers: the call at the top of the
 * shadow stack returns (its slot is the one this call into tramp_exit
 * reuses), no tail call shares its slot, nothing to intercept, room left in
 * the sub-buffer.  Pops the entry and writes the exit record as
 * ag_on_exit and rec_put (hot.c) do, busy set around it; anything else
 * goes to ag_on_exit.  Offsets: AT_* in agent.h, checked there.
 */
	.globl	ag_tramp_exit
	.hidden	ag_tramp_exit
	.type	ag_tramp_exit, @function
	.p2align 4
ag_tramp_exit:
	FAST_BEGIN
	cmpq	$0, AT_RING(%rcx)
	je	8f
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	8f
	dec	%eax
	shl	$4, %rax
	lea	AT_SHADOW(%rcx,%rax), %rdx	/* the top entry */
	lea	32(%rsp), %rax			/* this call's slot */
	cmp	(%rdx), %rax
	jne	8f
	cmpl	$1, AT_DEPTH(%rcx)
	je	1f
	cmp	-16(%rdx), %rax			/* a tail call shares it */
	je	8f
1:	mov	12(%rdx), %eax			/* site; the top bit: intercepted */
	test	%eax, %eax
	js	8f
	mov	AT_CUR(%rcx), %rsi
	cmp	AT_END(%rcx), %rsi
	je	8f
	decl	AT_DEPTH(%rcx)
	mov	%eax, 12(%rsi)
	mov	8(%rdx), %eax
	mov	%eax, 8(%rsi)
	lea	16(%rsi), %rax
	mov	%rax, AT_CUR(%rcx)
	FAST_END PROPEL_REC_EXIT_ASM
	/* every register is the callee's result: keep them all */
	SAVE_RESULTS
	mov	8(%rbp), %rdi	/* return into the stub: its jmp, then the site */
	mov	6(%rdi), %rdi
	lea	16(%rbp), %rsi
	lea	-8(%rbp), %rdx
	call	ag_on_exit
	RESTORE_RESULTS
	ret
	.size	ag_tramp_exit, .-ag_tramp_exit


/*
 * uint64_t ag_invoke(fn, a, b, c, struct ag_func *f): fn(a, b, c) as a
 * traced call made from agent code (thread start routines, signal
 * handlers, main).  Written here so that the return-address slot of the
 * call is known exactly: ag_invoke_enter/exit get it, like a stub's.
 */
	.globl	ag_invoke
	.hidden	ag_invoke
	.type	ag_invoke, @function
	.p2align 4
ag_invoke:
	.cfi_startproc
	push	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub	$48, %rsp
	mov	%rdi, -8(%rbp)
	mov	%rsi, -16(%rbp)
	mov	%rdx, -24(%rbp)
	mov	%rcx, -32(%rbp)
	mov	%r8, -40(%rbp)
	mov	%r8, %rdi
	lea	-56(%rbp), %rsi
	call	ag_invoke_enter
	mov	-16(%rbp), %rdi
	mov	-24(%rbp), %rsi
	mov	-32(%rbp), %rdx
	call	*-8(%rbp)
	mov	%rax, -16(%rbp)
	mov	-40(%rbp), %rdi
	lea	-56(%rbp), %rsi
	call	ag_invoke_exit
	mov	-16(%rbp), %rax
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ag_invoke, .-ag_invoke

/*
 * A hooked function's entry (callback.c).  The entry stub pushed r11 and
 * called here with r11 = the hook: [rsp] = return into the stub,
 * [rsp+8] = the saved r11, [rsp+16] = the function's return address.
 */
	.globl	ag_tramp_fentry
	.hidden	ag_tramp_fentry
	.type	ag_tramp_fentry, @function
	.p2align 4
ag_tramp_fentry:
	SAVE_RESULTS		/* the arguments, here */
	mov	%r11, %rdi
	lea	24(%rbp), %rsi
	call	ag_on_fentry
	RESTORE_RESULTS
	ret
	.size	ag_tramp_fentry, .-ag_tramp_fentry

/*
 * Where a hooked function called from untraced code returns: rsp is its
 * return slot + 8.  ag_on_fret records the exit and gives the caller's real
 * return address, which goes back into the slot; every register the
 * function returned in is kept.
 */
	.globl	ag_tramp_fret
	.hidden	ag_tramp_fret
	.type	ag_tramp_fret, @function
	.p2align 4
ag_tramp_fret:
	sub	$8, %rsp
	SAVE_RESULTS
	lea	8(%rbp), %rdi
	call	ag_on_fret
	mov	%rax, 8(%rbp)
	RESTORE_RESULTS
	ret
	.size	ag_tramp_fret, .-ag_tramp_fret

	.section .note.GNU-stack,"",@progbits
