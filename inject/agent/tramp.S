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
 * last: FAST_W0) and returns (FAST_RET: clears busy, back to the stub);
 * FAST_RET's 8 and 9 are the way to the C path, with every register as it
 * came.
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
	mov	ag_live(%rip), %eax		/* active: this session */
	cmp	AT_GEN(%rcx), %eax
	jne	8f
	cmpl	$0, AT_DEAD(%rcx)
	jne	8f
.endm

/* rax = word 0 of a record of TYPE stamped now (clobbers rdx) */
/*
 * rax = the time now as word 0 wants it (tsc << 4), the thread's stamp
 * renewed (clobbers rdx).  How many call records until the next stamp
 * adapts: when the records since the last stamp took more than
 * STAMP_SPARSE_TSC ticks the next one is stamped too (a call that ran
 * long, code that calls seldom: stamps cost little there), else twice
 * as many as before, up to the thread's most (stamp_every's high half:
 * PROPEL_STAMP_EVERY, or 1 for --timing=exact).
 */
.macro STAMP_NOW
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax			/* the tsc */
	mov	AT_STAMP(%rcx), %rdx
	shr	$4, %rdx
	neg	%rdx
	add	%rax, %rdx			/* ticks since the last stamp */
	shl	$4, %rax
	mov	%rax, AT_STAMP(%rcx)
	cmp	$STAMP_SPARSE_TSC, %rdx
	mov	$1, %edx
	ja	73f
	movzwl	AT_STAMP_EVERY(%rcx), %edx
	add	%edx, %edx
	cmpw	AT_STAMP_EVERY+2(%rcx), %dx
	jbe	73f
	movzwl	AT_STAMP_EVERY+2(%rcx), %edx
73:	mov	%dx, AT_STAMP_EVERY(%rcx)
	mov	%edx, AT_STAMP_LEFT(%rcx)
.endm

.macro FAST_W0 type
	decl	AT_STAMP_LEFT(%rcx)
	jle	71f
	mov	AT_STAMP(%rcx), %rax
	jmp	72f
71:	STAMP_NOW
72:	or	$\type, %rax
.endm

.macro FAST_RET
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
 * The common return (tramp_exit, lean_exit): the call at the top of the
 * shadow stack returns -- its slot is 32(%rsp), under the four saved
 * registers -- with the tail calls that took over its frame (the entries
 * below the top with the same slot, 32 in all at most: a chain of
 * filters that tail-call each other), nothing to
 * intercept, room left in the sub-buffer for their exit records.  Pops
 * them and writes their exit records but word 0 (EXIT_WRITE stamps them
 * all with rax, word 0 last: rsi = the end of them); else to \fail,
 * nothing changed.
 */
.macro EXIT_POP fail, mask=0xc0000000
	cmpq	$0, AT_RING(%rcx)
	je	\fail
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	\fail
	shl	$4, %rax
	lea	AT_SHADOW-16(%rcx,%rax), %rdx	/* the top entry */
	lea	32(%rsp), %rax			/* this call's slot */
	cmp	(%rdx), %rax
	jne	\fail
	mov	AT_CUR(%rcx), %rsi
1:	cmp	AT_END(%rcx), %rsi
	je	\fail
	testl	$\mask, 12(%rdx)		/* SH_HOOK, SH_EXACT: C */
	jnz	\fail
	movq	8(%rdx), %rax			/* func, site */
	mov	%rax, 8(%rsi)
	add	$16, %rsi
	lea	AT_SHADOW(%rcx), %rax
	cmp	%rax, %rdx			/* the bottom entry */
	je	2f
	lea	32(%rsp), %rax
	cmp	-16(%rdx), %rax			/* a tail call shares the slot */
	jne	2f
	sub	$16, %rdx
	mov	%rsi, %rax
	sub	AT_CUR(%rcx), %rax
	cmp	$512, %rax			/* 32 records at most */
	jb	1b
	jmp	\fail
2:	/* rdx = the last entry popped: the new depth is its index */
	lea	AT_SHADOW(%rcx), %rax
	sub	%rax, %rdx
	shr	$4, %rdx
	mov	%edx, AT_DEPTH(%rcx)
.endm

.macro EXIT_WRITE
	mov	AT_CUR(%rcx), %rdx		/* the first record */
	mov	%rsi, AT_CUR(%rcx)
3:	mov	%rax, (%rdx)			/* word 0 last, each record */
	add	$16, %rdx
	cmp	%rsi, %rdx
	jb	3b
.endm

.macro FAST_END type
	FAST_W0 \type
	mov	%rax, (%rsi)
	FAST_RET
.endm

/* \dst = the first slot of callee address \src in a site's table
 * (pic[8]): the top 3 bits of its low half times the golden ratio */
.macro PIC_INDEX src, dst, dst32
	mov	\src, \dst
	imul	$-1640531535, \dst32, \dst32
	shr	$29, \dst32
.endm

/*
 * A site's table is open addressed: a callee's word (id << 48 | target)
 * lies in one of the PIC_PROBES slots from its first, the first of them
 * that was empty when it came (PIC_FILL), so a site that calls seven
 * callees in turn (nginx's phase engine) keeps them all.  PIC_FIND: rdx
 * = the word of callee rax in site r11's table, else to \miss (an empty
 * slot or PIC_PROBES others).  Clobbers rsi.
 */
.macro PIC_TRY hit, miss
	mov	SITE_PIC(%r11,%rsi,8), %rdx
	test	%rdx, %rdx
	jz	\miss
	xor	%rax, %rdx
	shl	$16, %rdx			/* the same target */
	jz	\hit
	inc	%esi
	and	$7, %esi
.endm

.macro PIC_FIND miss
	PIC_INDEX %rax, %rsi, %esi
	.rept	PIC_PROBES_ASM
	PIC_TRY 81f, \miss
	.endr
	jmp	\miss
81:	mov	SITE_PIC(%r11,%rsi,8), %rdx
.endm

/* the word rsi (callee rax) into site r11's table: its slot, the first
 * empty one, else the callee's first slot (clobbers rdx) */
.macro PIC_FILL
	push	%rsi
	PIC_INDEX %rax, %rdx, %edx
	.rept	PIC_PROBES_ASM
	mov	SITE_PIC(%r11,%rdx,8), %rsi
	test	%rsi, %rsi
	jz	82f
	xor	%rax, %rsi
	shl	$16, %rsi
	jz	82f
	inc	%edx
	and	$7, %edx
	.endr
	PIC_INDEX %rax, %rdx, %edx
82:	pop	%rsi
	mov	%rsi, SITE_PIC(%r11,%rdx,8)
.endm

/*
 * The id of the callee of this call or jump, in edx, when the common case
 * may take it: known (the site's fast word says so for this target, or
 * the callee is the site's own, the one its cache holds, or the head of
 * its chain in ag_func_tab, patch.c), ready, not interposed, and not in a
 * system library or PLT unless it takes no callback and never blocks
 * (F_PURE: the others
 * look at their arguments, hot.c).  Else to 8.  The fast word (struct
 * ag_site) is id << 48 | target: one cache line, the site's, for a call
 * seen before.  \off: the target's offset from rsp.  Clobbers rax, rsi.
 */
.macro FAST_CALLEE off
	mov	\off(%rsp), %rax		/* the target */
	mov	SITE_FAST(%r11), %rdx
	mov	%rdx, %rsi
	shl	$16, %rsi
	shr	$16, %rsi
	cmp	%rsi, %rax
	jne	61f
62:	shr	$48, %rdx
	jmp	4f
61:	PIC_FIND 6f				/* the site's table */
	jmp	62b
6:	mov	SITE_TARGET(%r11), %rsi
	test	%rsi, %rsi
	jnz	7f
	mov	SITE_CACHE(%r11), %rsi
	test	%rsi, %rsi
	jz	3f
	cmp	FUNC_ADDR(%rsi), %rax
	je	7f
3:	movabs	$0x9E3779B97F4A7C15, %rdx	/* hash_addr (patch.c) */
	imul	%rax, %rdx
	shr	$(64 - FUNC_TAB_BITS), %rdx
	lea	ag_func_tab(%rip), %rsi
	mov	(%rsi,%rdx,8), %rsi
	test	%rsi, %rsi
	jz	8f
	cmp	FUNC_ADDR(%rsi), %rax
	jne	8f
	mov	%rsi, SITE_CACHE(%r11)
7:	mov	FUNC_FLAGS(%rsi), %edx
	test	$F_PURE_ASM, %edx
	jz	5f
	and	$~(F_SYSTEM_ASM | F_PLT_ASM), %edx
5:	and	$(F_READY_ASM | F_SLOW_ASM | F_SYSTEM_ASM | F_PLT_ASM), %edx
	cmp	$F_READY_ASM, %edx
	jne	8f
	mov	FUNC_ID(%rsi), %edx
	cmpb	$0, SITE_LEANST(%r11)		/* a lean way to try: C */
	je	8f
	cmp	$0xffff, %edx			/* ids that fit the fast word */
	ja	4f
	mov	%rax, %rsi
	shr	$47, %rsi			/* a user address */
	jnz	4f
	mov	%rdx, %rsi
	shl	$48, %rsi
	or	%rax, %rsi
	mov	%rsi, SITE_FAST(%r11)
	push	%rdx
	PIC_FILL
	pop	%rdx
4:
.endm

/*
 * Push a shadow entry for the call whose return slot is \slot(%rsp) and
 * write its entry record (rax = depth << 4, edx = the callee's id, r11 =
 * the site), as shadow_push and rec_put do; rsi = the record for FAST_END.
 */
.macro FAST_PUSH slot
	incl	AT_DEPTH(%rcx)
	lea	AT_SHADOW(%rcx,%rax), %rax	/* the new entry */
	lea	\slot(%rsp), %rsi
	mov	%rsi, (%rax)
	mov	%edx, 8(%rax)
	mov	SITE_ID(%r11), %esi
	mov	%esi, 12(%rax)
	mov	AT_CUR(%rcx), %rax		/* the record */
	mov	%edx, 8(%rax)
	mov	%esi, 12(%rax)
	lea	16(%rax), %rsi
	mov	%rsi, AT_CUR(%rcx)
	mov	%rax, %rsi
.endm

/*
 * The common call, in four scratch registers and r11 (the site): a callee
 * FAST_CALLEE takes, nothing to unwind (the shadow stack's top is above
 * this slot), room in the shadow stack and the sub-buffer.  Pushes the
 * entry and writes the entry record as ag_on_enter does, busy set around
 * it; anything else goes to ag_on_enter.
 */
	.globl	ag_tramp_enter
	.hidden	ag_tramp_enter
	.type	ag_tramp_enter, @function
	.p2align 4
ag_tramp_enter:
	FAST_BEGIN
	FAST_CALLEE 40
	lea	48(%rsp), %rsi			/* this call's slot */
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	2f
	cmp	$SHADOW_MAX_ASM, %eax
	jae	8f
	shl	$4, %rax
	cmp	AT_SHADOW-16(%rcx,%rax), %rsi	/* the top must lie above */
	jae	8f
	shr	$4, %rax
2:	mov	AT_CUR(%rcx), %rsi
	cmp	AT_END(%rcx), %rsi
	je	8f
	shl	$4, %rax
	FAST_PUSH 48
	FAST_END PROPEL_REC_ENTRY_ASM
	SAVE_FRAME
	call	ag_on_enter
	test	%eax, %eax
	jz	1f
	SLOW_CALL ag_on_enter_slow
1:	RESTORE_FRAME
	ret
	.size	ag_tramp_enter, .-ag_tramp_enter

/*
 * A tail call (jmp to another function; stack as for tramp_enter, the
 * jump's return slot 8 above the saved r11).  An indirect jump back into
 * its own function (a switch's table) is no call: straight back.  The
 * common case: the callee FAST_CALLEE takes becomes a child of the
 * function that jumped, sharing its slot (tail_enter, hot.c), when that
 * function's entry is the shadow stack's top.  Anything else goes to
 * ag_on_tail.
 */
	.globl	ag_tramp_tail
	.hidden	ag_tramp_tail
	.type	ag_tramp_tail, @function
	.p2align 4
ag_tramp_tail:
	push	%rax
	mov	16(%rsp), %rax			/* the target */
	cmp	SITE_OLO(%r11), %rax
	jb	1f
	cmp	SITE_OHI(%r11), %rax
	jae	1f
	pop	%rax
	ret
1:	pop	%rax
	FAST_BEGIN
	FAST_CALLEE 40
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	8f
	cmp	$SHADOW_MAX_ASM, %eax
	jae	8f
	shl	$4, %rax
	lea	56(%rsp), %rsi			/* the jump's return slot */
	cmp	AT_SHADOW-16(%rcx,%rax), %rsi	/* the jumper's, at the top */
	jne	8f
	mov	AT_CUR(%rcx), %rsi
	cmp	AT_END(%rcx), %rsi
	je	8f
	FAST_PUSH 56
	FAST_END PROPEL_REC_ENTRY_ASM
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
 * reuses), with the tail calls that took over its frame (the entries below
 * the top with the same slot, at most 32 in all), nothing to intercept,
 * room left in the sub-buffer for their exit records.  Pops them and
 * writes their exit records as ag_on_exit and rec_put (hot.c) do, one
 * timestamp for all, busy set around it; anything else goes to
 * ag_on_exit.  Offsets: AT_* in agent.h, checked there.
 */
	.globl	ag_tramp_exit
	.hidden	ag_tramp_exit
	.type	ag_tramp_exit, @function
	.p2align 4
ag_tramp_exit:
	FAST_BEGIN
	EXIT_POP 8f
	FAST_W0 PROPEL_REC_EXIT_ASM
	EXIT_WRITE
	FAST_RET
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
 * The lean call (stub.c stub_lean): a direct call site whose callee is
 * known plain runs
 *
 *   L:  push r11 ; r11 = func id | site id << 32 ; call lean_enter
 *       pop r11 ; jne G                  (not recorded: the generic stub)
 *       call T ; call lean_exit ; jne GX (its call of tramp_exit)
 *       jmp GJ                           (its jump back)
 *
 * lean_enter and lean_exit do what tramp_enter's and tramp_exit's common
 * cases do -- busy flag, shadow push and pop, entry and exit records --
 * with the ids from r11: no look at the site or the callee, no indirect
 * branch.  They answer in ZF (1: recorded), which a call leaves undefined
 * for the program anyway.  A copy of this template lives at the start of
 * every stub arena (stub.c arena_alloc), within a rel32 of its stubs.
 *
 * LMARK K marks the end of an instruction whose last bytes stub.c fills
 * in (enum lean_mark); LROW N says the CFA is N bytes above rsp at the
 * routine's entry from here on.  Both go to tables stub.c reads.
 */
.macro LMARK k
888:
	.pushsection .rodata.ag_lean, "a"
	.long	\k, 888b - ag_lean_rt
	.popsection
.endm

.macro LROW cfa
887:
	.pushsection .rodata.ag_lean_rows, "a"
	.long	887b - ag_lean_rt, \cfa
	.popsection
.endm

/* busy set, this session's thread: else to \busy (busy set) or \none */
.macro LEAN_BEGIN busy, none
	push	%rax
	LROW 8
	push	%rdx
	LROW 16
	push	%rcx
	LROW 24
	push	%rsi
	LROW 32
	mov	%fs:0x7fffffff, %rcx		/* ag_self */
	LMARK 0
	test	%rcx, %rcx
	jz	\none
	cmpl	$0, AT_BUSY(%rcx)
	jne	\none
	movl	$1, AT_BUSY(%rcx)
	movabs	$0x7fffffffffffffff, %rax	/* &ag_live: active, this */
	LMARK 1					/* session */
	mov	(%rax), %eax
	cmp	AT_GEN(%rcx), %eax
	jne	\busy
	cmpl	$0, AT_DEAD(%rcx)
	jne	\busy
.endm

/* rax = word 0 of a record of TYPE at rsi (FAST_W0, its rdtsc out of line
 * at \cold, which comes back to \back) */
.macro LEAN_W0 type, cold, back
	decl	AT_STAMP_LEFT(%rcx)
	jle	\cold
	mov	AT_STAMP(%rcx), %rax
\back:	or	$\type, %rax
.endm

.macro LEAN_STAMP back
	STAMP_NOW
	jmp	\back
.endm

/* back to the stub: ZF = \zf (2: ZF and CF, the callee is untraced) */
.macro LEAN_RET zf
	.if \zf
	cmp	%rsp, %rsp
	.if \zf == 2
	stc
	.endif
	.else
	test	%rsp, %rsp
	.endif
	pop	%rsi
	LROW 24
	pop	%rcx
	LROW 16
	pop	%rdx
	LROW 8
	pop	%rax
	LROW 0
	ret
	LROW 32
.endm

/* lean_enter's body: the call's slot is \slot(%rsp) after LEAN_BEGIN */
/*
 * Push the shadow entry (slot rsi, ids r11) at index rax (depth << 4) and
 * write the entry record's ids at rdx (the thread's cursor), which moves
 * on; rsi = the record for its word 0.  exact: SH_EXACT on the entry.
 */
.macro LEAN_PUSH exact=0
	incl	AT_DEPTH(%rcx)
	mov	%rsi, AT_SHADOW(%rcx,%rax)
	mov	%r11, AT_SHADOW+8(%rcx,%rax)	/* func, site */
	.if \exact
	orl	$0x40000000, AT_SHADOW+12(%rcx,%rax) /* SH_EXACT */
	.endif
	mov	%r11, 8(%rdx)
	lea	16(%rdx), %rsi
	mov	%rsi, AT_CUR(%rcx)
	mov	%rdx, %rsi
.endm

/* rax = the time now as word 0 wants it, exactly: the thread's stamp
 * renewed, its sampling untouched (clobbers rdx) */
.macro LEAN_RDTSC
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
	shl	$4, %rax
	mov	%rax, AT_STAMP(%rcx)
.endm

/* exact: the call goes into untraced code that may block (SH_EXACT);
 * pic: r11 is the site, whose table (struct ag_site pic, filled by
 * tramp.S FAST_CALLEE) gives the callee at \slot-8(%rsp), or no lean way;
 * ind: an indirect call, whose callee the budget may have untraced
 * (F_QUIET: nothing recorded, ZF and CF back, the stub calls it as is) */
.macro LEAN_ENTER slot, exact=0, pic=0, ind=0
	LEAN_BEGIN 18f, 19f
	.if \pic
	mov	\slot-8(%rsp), %rax		/* the callee */
	PIC_FIND 18f
	shr	$48, %rdx			/* its id */
	mov	SITE_ID(%r11), %esi
	shl	$32, %rsi
	or	%rdx, %rsi
	mov	%rsi, %r11			/* ids (the stub restores r11) */
	.endif
	.if \ind
	movabs	$0x7fffffffffffffff, %rax	/* &ag_funcs_by_id */
	LMARK 2
	mov	(%rax), %rax
	mov	%r11d, %edx			/* the callee's id */
	mov	(%rax,%rdx,8), %rax
	testl	$F_QUIET_ASM, FUNC_FLAGS(%rax)
	jnz	15f
	.endif
	lea	\slot(%rsp), %rsi		/* this call's slot */
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	11f
	cmp	$SHADOW_MAX_ASM, %eax
	jae	18f
	shl	$4, %rax
	cmp	AT_SHADOW-16(%rcx,%rax), %rsi	/* the top must lie above */
	jae	18f
11:	mov	AT_CUR(%rcx), %rdx
	cmp	AT_END(%rcx), %rdx
	je	18f
	LEAN_PUSH \exact
	.if \exact
	LEAN_RDTSC
16:	or	$PROPEL_REC_ENTRY_ASM, %rax
	.else
	LEAN_W0 PROPEL_REC_ENTRY_ASM, 17f, 16
	.endif
	mov	%rax, (%rsi)
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
17:	LEAN_STAMP 16b
	.if \ind
15:	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 2
	.endif
18:	movl	$0, AT_BUSY(%rcx)
19:	LEAN_RET 0
.endm

	.pushsection .rodata.ag_lean, "a"
	.p2align 2
	.globl	ag_lean_marks
	.hidden	ag_lean_marks
ag_lean_marks:
	.popsection
	.pushsection .rodata.ag_lean_rows, "a"
	.p2align 2
	.globl	ag_lean_rows
	.hidden	ag_lean_rows
ag_lean_rows:
	.popsection

	.globl	ag_lean_rt
	.hidden	ag_lean_rt
	.globl	ag_lean_rt_exit
	.hidden	ag_lean_rt_exit
	.globl	ag_lean_rt_end
	.hidden	ag_lean_rt_end
	.globl	ag_lean_rt_leaf
	.hidden	ag_lean_rt_leaf
	.globl	ag_lean_rt_enter2
	.hidden	ag_lean_rt_enter2
	.globl	ag_lean_rt_tail
	.hidden	ag_lean_rt_tail
	.globl	ag_lean_rt_enter_x
	.hidden	ag_lean_rt_enter_x
	.globl	ag_lean_rt_enter_pic
	.hidden	ag_lean_rt_enter_pic
	.globl	ag_lean_rt_exit_x
	.hidden	ag_lean_rt_exit_x
	.p2align 6
ag_lean_rt:		/* lean_enter: [rsp+8] = the call's slot, r11 = ids */
	LEAN_ENTER 40
	.p2align 4
ag_lean_rt_enter2:	/* the same, one word more on the stack: [rsp+16] */
	LROW 0
	LEAN_ENTER 48, 0, 0, 1
	.p2align 4
ag_lean_rt_enter_pic:	/* as enter2, r11 = the site, [rsp+8] = the callee */
	LROW 0
	LEAN_ENTER 48, 0, 1, 1

	.p2align 4
ag_lean_rt_exit:	/* lean_exit: [rsp] = the slot of the call that returned */
	LROW 0
	LEAN_BEGIN 28f, 29f
	/* the common case first: one frame, no tail call sharing its slot */
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	28f
	shl	$4, %rax
	lea	32(%rsp), %rsi			/* this call's slot */
	cmp	AT_SHADOW-16(%rcx,%rax), %rsi
	jne	28f
	mov	AT_CUR(%rcx), %rdx		/* (NULL = end: no ring) */
	cmp	AT_END(%rcx), %rdx
	je	28f
	testl	$0xc0000000, AT_SHADOW-4(%rcx,%rax) /* SH_HOOK, SH_EXACT */
	jnz	28f
	cmp	$16, %eax
	je	21f
	cmp	AT_SHADOW-32(%rcx,%rax), %rsi	/* a tail call shares it */
	je	24f
21:	decl	AT_DEPTH(%rcx)
	mov	AT_SHADOW-8(%rcx,%rax), %rsi	/* func, site */
	mov	%rsi, 8(%rdx)
	lea	16(%rdx), %rsi
	mov	%rsi, AT_CUR(%rcx)
	mov	%rdx, %rsi
	LEAN_W0 PROPEL_REC_EXIT_ASM, 27f, 26
	mov	%rax, (%rsi)
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
27:	LEAN_STAMP 26b
24:	EXIT_POP 28f				/* several frames */
	LEAN_W0 PROPEL_REC_EXIT_ASM, 37f, 36
	EXIT_WRITE
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
37:	LEAN_STAMP 36b
28:	movl	$0, AT_BUSY(%rcx)
29:	LEAN_RET 0

/*
 * The leaf call: a callee that records nothing inside (a system function
 * that takes no callback and never blocks, F_PURE) is one record, CALL,
 * written after it returned: no shadow entry (nothing can unwind through
 * it, nothing nests in it but signal handlers, whose records come before
 * it), one routine call.  Its stub:
 *
 *   L:  call T ; push r11 ; r11 = ids ; call leaf_call ; pop r11 ; jmp on
 *
 * leaf_call takes the C path when the sub-buffer is full
 * (ag_leaf_exit_slow, hot.c).
 */
	.p2align 4
ag_lean_rt_leaf:	/* leaf_call: r11 = ids */
	LROW 0
	LEAN_BEGIN 48f, 49f
	cmpq	$0, AT_RING(%rcx)
	je	48f
	mov	AT_CUR(%rcx), %rsi
	cmp	AT_END(%rcx), %rsi
	je	45f
	mov	%r11, 8(%rsi)
	lea	16(%rsi), %rdx
	mov	%rdx, AT_CUR(%rcx)
	LEAN_W0 PROPEL_REC_CALL_ASM, 47f, 46
	mov	%rax, (%rsi)
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
47:	LEAN_STAMP 46b
45:	push	%rdi			/* the sub-buffer is full: C, which */
	LROW 40				/* commits it (every caller-saved */
	push	%r8			/* register kept) */
	LROW 48
	push	%r9
	LROW 56
	push	%r10
	LROW 64
	push	%r11
	LROW 72
	push	%rcx				/* the thread */
	LROW 80
	mov	%r11, %rdi
	mov	%rcx, %rsi
	movabs	$0x7fffffffffffffff, %rax	/* ag_leaf_exit_slow */
	LMARK 3
	call	*%rax			/* (general registers only) */
	pop	%rcx
	LROW 72
	pop	%r11
	LROW 64
	pop	%r10
	LROW 56
	pop	%r9
	LROW 48
	pop	%r8
	LROW 40
	pop	%rdi
	LROW 32
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
48:	movl	$0, AT_BUSY(%rcx)
49:	LEAN_RET 0

/*
 * lean_tail: a tail call (stub: push r11 ; push the callee ; r11 = ids ;
 * call lean_tail ; restore r11 and rsp ; jne G ; jmp T): the callee
 * becomes a child of the function that jumped, sharing its slot, when
 * that function's entry is the shadow stack's top (tramp_tail's common
 * case).  The jump's return slot is [rsp+24] at the call.
 */
	.p2align 4
ag_lean_rt_tail:
	LROW 0
	LEAN_BEGIN 58f, 59f
	mov	AT_DEPTH(%rcx), %eax
	test	%eax, %eax
	jz	58f
	cmp	$SHADOW_MAX_ASM, %eax
	jae	58f
	shl	$4, %rax
	lea	56(%rsp), %rsi			/* the jump's return slot */
	cmp	AT_SHADOW-16(%rcx,%rax), %rsi	/* the jumper's, at the top */
	jne	58f
	mov	AT_CUR(%rcx), %rdx
	cmp	AT_END(%rcx), %rdx
	je	58f
	LEAN_PUSH
	LEAN_W0 PROPEL_REC_ENTRY_ASM, 57f, 56
	mov	%rax, (%rsi)
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
57:	LEAN_STAMP 56b
58:	movl	$0, AT_BUSY(%rcx)
59:	LEAN_RET 0

/*
 * The exact call: a callee in untraced code that may block but takes no
 * callback (F_NOCB but not F_PURE: pread, epoll_wait, a mutex) is the
 * lean call with its entry and exit stamped exactly, as every such call
 * is (agent.h sh_exact), without the C path.
 */
	.p2align 4
ag_lean_rt_enter_x:
	LROW 0
	LEAN_ENTER 40, 1
	.p2align 4
ag_lean_rt_exit_x:
	LROW 0
	LEAN_BEGIN 68f, 69f
	EXIT_POP 68f, 0x80000000
	LEAN_RDTSC
	or	$PROPEL_REC_EXIT_ASM, %rax
	EXIT_WRITE
	movl	$0, AT_BUSY(%rcx)
	LEAN_RET 1
68:	movl	$0, AT_BUSY(%rcx)
69:	LEAN_RET 0
ag_lean_rt_end:

	.pushsection .rodata.ag_lean, "a"
	.globl	ag_lean_marks_end
	.hidden	ag_lean_marks_end
ag_lean_marks_end:
	.popsection
	.pushsection .rodata.ag_lean_rows, "a"
	.globl	ag_lean_rows_end
	.hidden	ag_lean_rows_end
ag_lean_rows_end:
	.popsection

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
	lea	-72(%rbp), %rdx	/* the saved registers (struct ag_fregs) */
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
	lea	-8(%rbp), %rsi	/* the saved rax */
	call	ag_on_fret
	mov	%rax, 8(%rbp)
	RESTORE_RESULTS
	ret
	.size	ag_tramp_fret, .-ag_tramp_fret

	.section .note.GNU-stack,"",@progbits

/*
 * propel_agent_return (share/agent-abi.h): where the injector's calls into
 * the agent return (inject/hijack.h hijack_set_return).  rax and "back"
 * for the injector, which polls them and takes the thread here; then, if
 * it has not (it died), after about 1e9 TSC cycles of yields (a bound in
 * time, ~0.3-0.5 s at 2-3.5 GHz: a yield may give the CPU away for a whole
 * slice) rt_sigreturn of the signal frame it built below the call
 * (inject/hijack-ret.c) puts the thread back as it was held.  The bound
 * is what a propel killed mid-call costs the program (a pause), and what
 * a propel merely late may be before the thread goes back by itself: at
 * 2e8 (~77 ms here) a loaded machine kept propel off its CPU that long,
 * and the thread, gone back to the program, ran where no call was meant
 * to find it -- a followed exec's child ran to its end untraced
 * (fcr3 golden spawn.O0.attach), nginx's worker was taken back inside
 * the agent's lock (956adfc).  Alone in its 128 bytes (HIJACK_PAD_SIZE):
 * a thread stopped there has not returned to the program yet.
 */
	.text
	.balign	128
	.globl	propel_agent_return
	.type	propel_agent_return, @function
propel_agent_return:
	mov	%rax, ag_result(%rip)
	movq	$1, ag_result+8(%rip)
	rdtsc
	shl	$32, %rdx
	or	%rax, %rdx
	mov	%rdx, %r8
1:	mov	$24, %eax			/* SYS_sched_yield */
	syscall
	rdtsc
	shl	$32, %rdx
	or	%rax, %rdx
	sub	%r8, %rdx
	cmp	$1000000000, %rdx
	jb	1b
	mov	$15, %eax			/* SYS_rt_sigreturn */
	syscall
	ud2
	.size	propel_agent_return, .-propel_agent_return
	.balign	128, 0xcc

	.data
	.balign	16
	.globl	propel_agent_result
	.type	propel_agent_result, @object
	.size	propel_agent_result, 16
propel_agent_result:
ag_result:
	.quad	0, 0
