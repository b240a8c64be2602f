/*
 * inject/agent/stub.h - what patch.c (deciding what to patch) and stub.c
 * (writing the code that runs instead) share: the decoded instruction, and
 * the stubs with their unwind information.
 */
#ifndef PROPEL_AGENT_STUB_H
#define PROPEL_AGENT_STUB_H

#include <stddef.h>
#include <stdint.h>

#include "inject/agent/agent.h"

/* One decoded instruction of the function being instrumented. */
enum { REL_NONE, REL_JMP, REL_JCC };

struct pinsn {
	uint64_t addr;
	uint64_t direct;  /* a site's direct target; a relative jump's */
	uint8_t len;
	uint8_t disp_off; /* offset of a rip-relative disp32, 0 = none */
	uint8_t flow;     /* cannot be moved into a stub */
	uint8_t rel;      /* REL_JMP, REL_JCC: a relative jump (movable) */
	uint8_t claimed;  /* in a window already */
	uint8_t stop;     /* nothing falls through it (jmp, ret) */
	uint8_t ijmp;     /* an indirect jmp (not through the GOT) */
	int8_t kind;      /* SITE_CALL, SITE_TAIL, or -1 */
};

/*
 * The stub of a site (layout in agent.h).  win[0..npre) are the window's
 * instructions before the site, moved to the stub's front; win[npre] is the
 * site; the npost after it are moved behind the call.  FDEs are appended
 * to fde_buf (after a CIE at offset -cie_off).  0, or -1.
 */
int stub_build(struct ag_site *s, const uint8_t *ins, uint64_t direct,
	       const struct pinsn *win, int npre, int npost, uint8_t *fde_buf,
	       size_t *fde_len, size_t cie_off);
/* The stub of a hooked entry (callback.c): n moved instructions, then on
 * past them, or into via's stub.  NULL when it cannot be built. */
uint8_t *stub_entry(struct ag_site *s, const struct pinsn *win, int n,
		    const struct ag_site *via, uint8_t *fde_buf, size_t *fde_len,
		    size_t cie_off);
/* A call site with a lean copy takes it (on) or its generic stub (off);
 * the callee must be plain (patch.c lean_ok) for on.  The caller makes
 * the cores see it (sync_cores) before it counts. */
void stub_lean(struct ag_site *s, int on);
/* A callee whose direct call's lean way is one CALL record after it
 * returned (leaf_call): a system function that is pure (F_PURE). */
int stub_leaf(const struct ag_func *f);
/* An indirect site's lean way takes callee f (its generic stub, any
 * other); before stub_lean(s, 1), with the lean way off. */
void stub_lean_target(struct ag_site *s, const struct ag_func *f);
size_t stub_cie(uint8_t *p);     /* the CIE every stub FDE refers to */
void stub_register(uint8_t *eh); /* an .eh_frame blob, to the unwinder */

#endif
