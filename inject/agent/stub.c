/*
 * inject/agent/stub.c - the code that runs instead of a patched site: call
 * and tail stubs (layout in agent.h), entry stubs of hooked callbacks, the
 * instructions moved out of a window, and the DWARF FDEs that let
 * unwinders (C++ exceptions, backtrace()) pass through all of them.
 *
 * Stubs live in arenas within +-2 GiB of their module, so a rel32 jump
 * reaches them, and are never freed: after a detach, threads may still
 * return through them.  Called by patch.c under ag_lock.
 */
#include <string.h>
#include <sys/mman.h>

#include "inject/agent/stub.h"

/* ---- stub memory ---- */

static int64_t lean_tls(void);
static size_t lean_rt_copy(uint8_t *p);

/* Reserve stub memory within reach of a rel32 jump from the module; a new
 * arena starts with the lean call's routines (tramp.S ag_lean_rt). */
static uint8_t *arena_alloc(struct ag_module *m, size_t n)
{
	const size_t size = 16u << 20;
	uint8_t *p;

	n = (n + 15) & ~(size_t)15;
	if (m->arena_cur && m->arena_cur + n <= m->arena_end) {
		p = m->arena_cur;
		m->arena_cur += n;
		return p;
	}
	for (uint64_t step = 1; step < 96; step++) {
		uint64_t want;

		for (int dir = 0; dir < 2; dir++) {
			want = dir ? (m->text_hi + (step << 24)) & ~0xfffull
				   : (m->text_lo - (step << 24)) & ~0xfffull;
			if (!dir && m->text_lo < (step << 24) + size)
				continue;
			p = mmap((void *)want, size,
				 PROT_READ | PROT_WRITE | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
					 MAP_FIXED_NOREPLACE,
				 -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)p != want) {
				munmap(p, size);
				continue;
			}
			m->arena = p;
			m->arena_cur = p;
			m->arena_end = p + size;
			m->lean_rt = NULL;
			if (lean_tls() != 1) {
				m->lean_rt = p;
				m->arena_cur += lean_rt_copy(p);
			}
			p = m->arena_cur;
			m->arena_cur += n;
			return p;
		}
	}
	return NULL;
}

/* ---- stub emission ---- */


struct emit {
	uint8_t *p;
};

static void e8(struct emit *e, uint8_t b)
{
	*e->p++ = b;
}

static void e64(struct emit *e, uint64_t v)
{
	memcpy(e->p, &v, 8);
	e->p += 8;
}

static void e32(struct emit *e, uint32_t v)
{
	memcpy(e->p, &v, 4);
	e->p += 4;
}

static void emit_movabs_r11(struct emit *e, uint64_t v)
{
	e8(e, 0x49);
	e8(e, 0xbb);
	e64(e, v);
}

/*
 * Emit "r11 = callee" for the original instruction: an immediate for a
 * direct call/jmp, or the original operand re-encoded as mov r/m64 -> r11.
 * Returns 0 or -1 when the operand cannot be re-encoded.
 */
static int emit_target(struct emit *e, const uint8_t *ins, int len,
		       uint64_t direct, uint64_t next)
{
	int i = 0, seg = 0, rex = 0;
	uint8_t modrm;

	if (direct) {
		emit_movabs_r11(e, direct);
		return 0;
	}
	for (; i < len; i++) {
		uint8_t b = ins[i];

		if (b == 0x64 || b == 0x65)
			seg = b;
		else if (b == 0x3e || b == 0xf2 || b == 0x2e)
			continue; /* notrack, bnd, branch hints */
		else
			break;
	}
	if (i < len && (ins[i] & 0xf0) == 0x40)
		rex = ins[i++];
	if (i + 1 >= len || ins[i] != 0xff)
		return -1;
	modrm = ins[i + 1];
	if ((modrm & 0xc0) == 0x00 && (modrm & 7) == 5) {
		/* rip-relative: load the absolute address, then through it */
		int32_t disp;

		if (seg || i + 6 > len)
			return -1;
		memcpy(&disp, ins + i + 2, 4);
		emit_movabs_r11(e, next + (int64_t)disp);
		e8(e, 0x4d);
		e8(e, 0x8b);
		e8(e, 0x1b);
		return 0;
	}
	if (seg)
		e8(e, (uint8_t)seg);
	e8(e, (uint8_t)(0x4c | (rex & 3))); /* REX.W + REX.R + X/B kept */
	e8(e, 0x8b);
	{
		int mod = modrm >> 6, k = i + 2;
		int rsp_base = mod != 3 && (modrm & 7) == 4 && k < len &&
			       (ins[k] & 7) == 4 && !(rex & 1);

		if (!rsp_base) {
			e8(e, (uint8_t)((modrm & 0xc7) | (3 << 3)));
			for (; k < len; k++)
				e8(e, ins[k]);
			return 0;
		}
		/* the stub pushed r11 first: rsp-based operands move by 8 */
		int32_t disp = 0;

		if (mod == 1)
			disp = (int8_t)ins[k + 1];
		else if (mod == 2)
			memcpy(&disp, ins + k + 1, 4);
		disp += 8;
		if (disp >= -128 && disp <= 127) {
			e8(e, (uint8_t)(0x40 | ((3 << 3) | 4)));
			e8(e, ins[k]);
			e8(e, (uint8_t)(int8_t)disp);
		} else {
			e8(e, (uint8_t)(0x80 | ((3 << 3) | 4)));
			e8(e, ins[k]);
			e32(e, (uint32_t)disp);
		}
	}
	return 0;
}

/*
 * Moving an instruction of a window into a stub: relative jumps become
 * their rel32 forms, rip-relative operands keep pointing where they did.
 * Both are fixed up once the stub's address is known.
 */
struct fixup {
	uint32_t at, end; /* the disp32 field; the end of its instruction */
	uint64_t to;      /* the absolute address it must reach */
};

#define MAX_FIXUPS 32
#define MAX_MOVED 23 /* instructions moved out of one window */

/* ---- the lean call (tramp.S ag_lean_rt) ---- */

enum lean_mark { /* what tramp.S's LMARK K fills in (ends an insn) */
	LM_TLS,    /* disp32: ag_self's offset from the thread pointer */
	LM_LIVE,   /* imm64: &ag_live */
	LM_FUNCS,  /* imm64: &ag_funcs_by_id (the callee's F_QUIET) */
	LM_SLOW,   /* imm64: ag_leaf_exit_slow */
};

extern const uint8_t ag_lean_rt[], ag_lean_rt_exit[], ag_lean_rt_end[];
extern const uint8_t ag_lean_rt_leaf[];
extern const uint8_t ag_lean_rt_enter2[], ag_lean_rt_tail[];
extern const uint8_t ag_lean_rt_enter_x[], ag_lean_rt_exit_x[];
extern const uint8_t ag_lean_rt_enter_pic[];
extern const uint32_t ag_lean_marks[][2], ag_lean_marks_end[];
extern const uint32_t ag_lean_rows[][2], ag_lean_rows_end[];

/* fixup targets resolved once the stub's arena is known: the routine at
 * this offset from the arena's ag_lean_rt copy */
#define TO_LEAN_ENTER 1
#define TO_LEAN_EXIT 2
#define TO_LEAF_CALL 3
#define TO_LEAN_ENTER2 5
#define TO_LEAN_TAIL 6
#define TO_LEAN_ENTER_X 7
#define TO_LEAN_EXIT_X 8
#define TO_LEAN_ENTER_PIC 9
#define TO_LEAN_LAST 9

static uint64_t lean_rt_off(uint64_t to)
{
	const uint8_t *r[] = { ag_lean_rt,	 ag_lean_rt,
			       ag_lean_rt_exit,	 ag_lean_rt_leaf,
			       ag_lean_rt_leaf, ag_lean_rt_enter2,
			       ag_lean_rt_tail, ag_lean_rt_enter_x,
			       ag_lean_rt_exit_x, ag_lean_rt_enter_pic };

	return (uint64_t)(r[to] - ag_lean_rt);
}

static int64_t lean_tls_off; /* 0: not looked at; 1: no lean calls */

/* ag_self's offset from the thread pointer: the same in every thread
 * (initial-exec TLS); 1 when it does not fit a disp32. */
static int64_t lean_tls(void)
{
	uint64_t tp;
	int64_t off;

	if (lean_tls_off)
		return lean_tls_off;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	off = (int64_t)((uint64_t)&ag_self - tp);
	lean_tls_off = off == (int32_t)off && off != 0 && off != 1 ? off : 1;
	return lean_tls_off;
}

static size_t lean_rt_fde(uint8_t *p, uint64_t lo, uint64_t len);

/* The routines' copy at the start of a new arena p; its FDE registered.
 * Returns the bytes it takes. */
static size_t lean_rt_copy(uint8_t *p)
{
	size_t n = (size_t)(ag_lean_rt_end - ag_lean_rt), nm;
	uint64_t live = (uint64_t)&ag_live;
	uint64_t slow = (uint64_t)ag_leaf_exit_slow;
	uint64_t funcs = (uint64_t)&ag_funcs_by_id;
	int32_t tls = (int32_t)lean_tls();
	uint8_t *eh;

	memcpy(p, ag_lean_rt, n);
	nm = (size_t)((const uint8_t *)ag_lean_marks_end -
		      (const uint8_t *)ag_lean_marks) / 8;
	for (size_t i = 0; i < nm; i++) {
		uint8_t *at = p + ag_lean_marks[i][1];

		switch (ag_lean_marks[i][0]) {
		case LM_TLS:
			memcpy(at - 4, &tls, 4);
			break;
		case LM_LIVE:
			memcpy(at - 8, &live, 8);
			break;
		case LM_SLOW:
			memcpy(at - 8, &slow, 8);
			break;
		case LM_FUNCS:
			memcpy(at - 8, &funcs, 8);
			break;
		}
	}
	eh = ag_alloc(1024);
	size_t cie = stub_cie(eh);
	lean_rt_fde(eh + cie, (uint64_t)p, n);
	stub_register(eh);
	return (n + 63) & ~(size_t)63;
}

/* A callee that records nothing inside: one CALL record (tramp.S leaf) */
int stub_leaf(const struct ag_func *f)
{
	return (f->flags & (F_PLT | F_SYSTEM)) && (f->flags & F_PURE) &&
	       !(f->flags & F_NOTRACE) && f->intercept == IC_NONE;
}

/* push r11 ; r11 = ids ; call the routine `to` ; pop r11 -- and its rows */
static void lean_call(struct emit *e, uint8_t *tmp, uint64_t ids, uint64_t to,
		      struct fixup *fx, int *nfx, uint32_t rows[][2], int *nrows)
{
	e8(e, 0x41); /* push r11 */
	e8(e, 0x53);
	rows[*nrows][0] = (uint32_t)(e->p - tmp);
	rows[(*nrows)++][1] = 8;
	emit_movabs_r11(e, ids);
	e8(e, 0xe8);
	fx[*nfx].at = (uint32_t)(e->p - tmp);
	fx[*nfx].end = fx[*nfx].at + 4;
	fx[(*nfx)++].to = to;
	e32(e, 0);
	e8(e, 0x41); /* pop r11 */
	e8(e, 0x5b);
	rows[*nrows][0] = (uint32_t)(e->p - tmp);
	rows[(*nrows)++][1] = 0;
}

void stub_lean_target(struct ag_site *s, const struct ag_func *f)
{
	uint64_t ids = (uint64_t)s->id << 32 | f->id;

	memcpy(s->lean_ids, &ids, 8);
	__atomic_store_n(s->lean_lit, f->addr, __ATOMIC_RELEASE);
}

void stub_lean(struct ag_site *s, int on)
{
	int32_t d = 0;

	if (!s->lean)
		return;
	if (on)
		d = (int32_t)(s->lean - ((uint8_t *)s->lean_jmp + 4));
	__atomic_store_n(s->lean_jmp, d, __ATOMIC_RELEASE);
}

static size_t stub_cie_len;

/* CIE shared by every stub FDE: CFA = rsp + 0 at the stub's start. */
size_t stub_cie(uint8_t *p)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0,     /* length */
		0, 0, 0, 0,        /* CIE id */
		1,                 /* version */
		'z', 'R', 0,       /* augmentation */
		1,                 /* code align */
		0x78,              /* data align -8 */
		16,                /* return address column (rip) */
		1, 0x00,           /* augmentation data: FDE encoding absptr */
		0x0c, 7, 0,        /* DW_CFA_def_cfa rsp, 0 */
		0, 0, 0, 0,        /* padding (DW_CFA_nop) to 24 bytes */
	};
	memcpy(p, cie, sizeof(cie));
	stub_cie_len = sizeof(cie);
	return sizeof(cie);
}

/*
 * FDE for one stub.  A call stub: the return address is the constant R (the
 * instruction after the original call) and the caller's rsp is CFA-8.  A
 * tail stub is entered with the caller's return address on the stack, like
 * a function.  The CFA moves while the stub holds words on the stack:
 * rows[i] = (offset in the stub, CFA offset from there on).
 *
 * Instructions moved out of a window (before the stub proper, and after the
 * call) are described as what they are: the original instruction, in the
 * original function, with every register as it is -- rip = its original
 * address and rsp unchanged.  The unwinder then goes on with the function's
 * own CFI at that address.
 */
struct fde_moved {
	uint32_t off;  /* in the stub */
	uint64_t orig; /* the instruction's own address */
};

static uint8_t *fde_advance(uint8_t *p, uint32_t *at, uint32_t to)
{
	uint32_t d = to - *at;

	if (!d)
		return p;
	if (d < 64) {
		*p++ = (uint8_t)(0x40 | d); /* advance_loc */
	} else if (d < 256) {
		*p++ = 0x02; /* advance_loc1 */
		*p++ = (uint8_t)d;
	} else {
		*p++ = 0x03; /* advance_loc2 */
		memcpy(p, &(uint16_t){ (uint16_t)d }, 2);
		p += 2;
	}
	*at = to;
	return p;
}

static uint8_t *fde_rip_is(uint8_t *p, uint64_t v)
{
	*p++ = 0x16; /* DW_CFA_val_expression rip */
	*p++ = 16;
	*p++ = 9;
	*p++ = 0x0e; /* DW_OP_const8u */
	memcpy(p, &v, 8);
	return p + 8;
}

/* An FDE's head at s (its length filled in by fde_end): the CIE cie_off
 * bytes before s, the code [lo, lo + len), no augmentation data. */
static uint8_t *fde_head(uint8_t *s, size_t cie_off, uint64_t lo, uint64_t len)
{
	uint8_t *p = s + 4;
	uint32_t cie_ptr = (uint32_t)(4 + cie_off);

	memcpy(p, &cie_ptr, 4);
	p += 4;
	memcpy(p, &lo, 8);
	p += 8;
	memcpy(p, &len, 8);
	p += 8;
	*p++ = 0; /* augmentation data length */
	return p;
}

/* rows[i]: from code offset rows[i][0] on, the CFA is rows[i][1] bytes
 * above rsp at entry (8 more than at the call) */
static uint8_t *fde_rows(uint8_t *p, uint32_t *at, const uint32_t rows[][2],
			 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		p = fde_advance(p, at, rows[i][0]);
		*p++ = 0x0e; /* def_cfa_offset */
		*p++ = (uint8_t)(rows[i][1] + 8);
	}
	return p;
}

/* The FDE from s to p, padded, its length set: its size. */
static size_t fde_end(uint8_t *s, uint8_t *p)
{
	uint32_t n;

	while ((p - s) % 8)
		*p++ = 0;
	n = (uint32_t)(p - s) - 4;
	memcpy(s, &n, 4);
	return (size_t)(p - s);
}

static size_t emit_fde(uint8_t *p, size_t cie_off, uint64_t lo, uint64_t len,
		       uint64_t ra, int ra_on_stack, uint32_t ra_at,
		       const uint32_t rows[][2], int nrows,
		       const struct fde_moved *mv, int npre, int npost)
{
	uint8_t *s = p;
	uint32_t at = 0;

	p = fde_head(s, cie_off, lo, len);
	/*
	 * An artificial CFA 8 above the caller's rsp, with rsp given
	 * explicitly: a zero-sized frame would share its identity (the CFA)
	 * with the caller, and the unwinder would take the stub for the
	 * handler frame of an exception caught there.
	 */
	*p++ = 0x0e; /* def_cfa_offset 8 */
	*p++ = 8;
	*p++ = 0x14; /* DW_CFA_val_offset rsp, cfa-8 */
	*p++ = 7;
	*p++ = 1;
	for (int i = 0; i < npre; i++) {
		p = fde_advance(p, &at, mv[i].off);
		p = fde_rip_is(p, mv[i].orig);
	}
	p = fde_advance(p, &at, ra_at); /* past the moved instructions */
	if (ra_on_stack) {
		*p++ = 0xc0 | 7;  /* restore rsp: the caller's is the CFA */
		*p++ = 0x80 | 16; /* offset rip, cfa-8 */
		*p++ = 1;
	} else {
		p = fde_rip_is(p, ra);
	}
	p = fde_rows(p, &at, rows, (size_t)nrows);
	if (npost) {
		p = fde_advance(p, &at, mv[npre].off);
		*p++ = 0x0e;
		*p++ = 8;
		for (int i = npre; i < npre + npost; i++) {
			p = fde_advance(p, &at, mv[i].off);
			p = fde_rip_is(p, mv[i].orig);
		}
	}
	return fde_end(s, p);
}


/* The FDE of an arena's lean routines: functions entered by a call,
 * their CFA moving as tramp.S's LROW rows say. */
static size_t lean_rt_fde(uint8_t *p, uint64_t lo, uint64_t len)
{
	uint8_t *s = p;
	uint32_t at = 0;

	p = fde_head(s, stub_cie_len, lo, len);
	*p++ = 0x0e;	  /* def_cfa_offset 8: a function's entry */
	*p++ = 8;
	*p++ = 0x80 | 16; /* offset rip, cfa-8 */
	*p++ = 1;
	p = fde_rows(p, &at, ag_lean_rows,
		     (size_t)((const uint8_t *)ag_lean_rows_end -
			      (const uint8_t *)ag_lean_rows) / 8);
	return fde_end(s, p);
}

static int emit_moved(struct emit *e, uint8_t *base, struct ag_module *m,
		      const struct pinsn *pi, struct fixup *fx, int *nfx)
{
	const uint8_t *b = module_code(m, pi->addr, pi->len);
	int k = 0;

	if (!b || *nfx >= MAX_FIXUPS)
		return -1;
	if (pi->rel == REL_JMP || pi->rel == REL_JCC) {
		while (k < pi->len && (b[k] == 0x2e || b[k] == 0x3e || b[k] == 0xf2))
			k++; /* branch hints, bnd */
		if (pi->rel == REL_JMP) {
			e8(e, 0xe9);
		} else {
			uint8_t cc = b[k] == 0x0f ? b[k + 1] & 0xf : b[k] & 0xf;

			e8(e, 0x0f);
			e8(e, (uint8_t)(0x80 | cc));
		}
		fx[*nfx].at = (uint32_t)(e->p - base);
		fx[*nfx].end = fx[*nfx].at + 4;
		fx[(*nfx)++].to = pi->direct;
		e32(e, 0);
		return 0;
	}
	memcpy(e->p, b, pi->len);
	if (pi->disp_off) {
		int32_t od;

		memcpy(&od, b + pi->disp_off, 4);
		fx[*nfx].at = (uint32_t)(e->p - base) + pi->disp_off;
		fx[*nfx].end = (uint32_t)(e->p - base) + pi->len;
		fx[(*nfx)++].to = pi->addr + pi->len + (int64_t)od;
	}
	e->p += pi->len;
	return 0;
}

/* jne/jmp rel32 to an offset of tmp */
static void emit_jcc_to(struct emit *e, uint8_t *tmp, int jne, uint32_t to)
{
	if (jne) {
		e8(e, 0x0f);
		e8(e, 0x85);
	} else {
		e8(e, 0xe9);
	}
	e32(e, to - (uint32_t)(e->p + 4 - tmp));
}

static void emit_fix(struct emit *e, uint8_t *tmp, uint8_t op,
		     struct fixup *fx, int *nfx, uint64_t to)
{
	e8(e, op);
	fx[*nfx].at = (uint32_t)(e->p - tmp);
	fx[*nfx].end = fx[*nfx].at + 4;
	fx[(*nfx)++].to = to;
	e32(e, 0);
}

static void emit_row(struct emit *e, uint8_t *tmp, uint32_t rows[][2],
		     int *nrows, uint32_t cfa)
{
	rows[*nrows][0] = (uint32_t)(e->p - tmp);
	rows[(*nrows)++][1] = cfa;
}

/*
 * The lean way of a site (tramp.S draws the direct call's; the others):
 *   indirect call:  push r11 ; r11 = operand ; push r11
 *                   cmp [lit], r11 ; jne miss ; r11 = ids ; call lean_enter2
 *             join: r11 = [rsp+8] ; rsp += 16 ; jne G ; call *-16(%rsp)
 *                   call lean_exit ; jne GX ; jmp on
 *             miss: r11 = site ; call lean_enter_pic ; jmp join
 *   direct tail:    push r11 ; push r11 ; r11 = ids ; call lean_tail
 *                   r11 = [rsp+8] ; rsp += 16 ; jne G ; jmp T
 *   indirect tail:  as the indirect call up to the jne G ; jmp *-16(%rsp)
 * lit (the one callee an indirect site takes this way) and the ids of an
 * indirect site's callee are filled in by stub_lean_target.  `on` is
 * the rel32 of the final jump, set by the caller.
 */
struct lean_at {
	uint32_t g, gx;       /* the generic stub, its call of tramp_exit */
	uint32_t on;          /* the final jump's rel32 (calls) */
	uint32_t lit_disp;    /* the cmp's disp32 (indirect), or 0 */
	uint32_t ids;         /* the ids' imm64 */
};

static int lean_emit(struct emit *e, uint8_t *tmp, struct ag_site *s,
		     const uint8_t *ins, uint64_t direct, struct fixup *fx,
		     int *nfx, uint32_t rows[][2], int *nrows,
		     struct lean_at *at)
{
	uint64_t ids = (uint64_t)s->id << 32 | (direct ? s->target->id : 0);
	static const uint8_t call_red[] = { 0xff, 0x54, 0x24, 0xf0 };
	static const uint8_t restore[] = {
		0x4c, 0x8b, 0x5c, 0x24, 0x08, /* mov 8(%rsp), %r11 */
		0x48, 0x8d, 0x64, 0x24, 0x10, /* lea 16(%rsp), %rsp */
	};
	uint8_t *jmiss = NULL, *jquiet = NULL;

	if (s->kind == SITE_CALL && direct) {
		int leaf = stub_leaf(s->target), x = !leaf && sh_exact(s->target);

		if (!leaf) {
			lean_call(e, tmp, ids, x ? TO_LEAN_ENTER_X : TO_LEAN_ENTER,
				  fx, nfx, rows, nrows);
			emit_jcc_to(e, tmp, 1, at->g);
		}
		emit_fix(e, tmp, 0xe8, fx, nfx, direct); /* call the callee */
		if (leaf) {
			lean_call(e, tmp, ids, TO_LEAF_CALL, fx, nfx, rows,
				  nrows);
		} else {
			emit_fix(e, tmp, 0xe8, fx, nfx,
				 x ? TO_LEAN_EXIT_X : TO_LEAN_EXIT);
			emit_jcc_to(e, tmp, 1, at->gx);
		}
		e8(e, 0xe9);
		at->on = (uint32_t)(e->p - tmp);
		e32(e, 0);
		return 0;
	}
	e8(e, 0x41); /* push r11 */
	e8(e, 0x53);
	emit_row(e, tmp, rows, nrows, 8);
	if (direct) {
		e8(e, 0x41); /* push r11: the callee's word, unused */
		e8(e, 0x53);
	} else {
		if (emit_target(e, ins, s->len, 0, s->ret) < 0)
			return -1;
		e8(e, 0x41); /* push r11 (the callee) */
		e8(e, 0x53);
	}
	emit_row(e, tmp, rows, nrows, 16);
	if (!direct) {
		e8(e, 0x4c); /* cmp lit(%rip), %r11 */
		e8(e, 0x3b);
		e8(e, 0x1d);
		at->lit_disp = (uint32_t)(e->p - tmp);
		e32(e, 0);
		e8(e, 0x0f); /* jne miss */
		e8(e, 0x85);
		jmiss = e->p;
		e32(e, 0);
	}
	emit_movabs_r11(e, ids);
	at->ids = (uint32_t)(e->p - tmp) - 8;
	e8(e, 0xe8);
	fx[*nfx].at = (uint32_t)(e->p - tmp);
	fx[*nfx].end = fx[*nfx].at + 4;
	fx[(*nfx)++].to = s->kind == SITE_CALL ? TO_LEAN_ENTER2 : TO_LEAN_TAIL;
	e32(e, 0);
	uint32_t join = (uint32_t)(e->p - tmp);

	memcpy(e->p, restore, sizeof(restore));
	e->p += sizeof(restore);
	emit_row(e, tmp, rows, nrows, 0);
	emit_jcc_to(e, tmp, 1, at->g);
	if (s->kind == SITE_CALL) {
		e8(e, 0x0f); /* jc quiet: the budget untraced the callee */
		e8(e, 0x82);
		jquiet = e->p;
		e32(e, 0);
		memcpy(e->p, call_red, 4); /* call *-16(%rsp) */
		e->p += 4;
		emit_fix(e, tmp, 0xe8, fx, nfx, TO_LEAN_EXIT);
		emit_jcc_to(e, tmp, 1, at->gx);
		e8(e, 0xe9);
		at->on = (uint32_t)(e->p - tmp);
		e32(e, 0);
	} else if (direct) {
		emit_fix(e, tmp, 0xe9, fx, nfx, direct); /* jmp T */
	} else {
		static const uint8_t jmp_red[] = { 0xff, 0x64, 0x24, 0xf0 };

		memcpy(e->p, jmp_red, 4); /* jmp *-16(%rsp) */
		e->p += 4;
	}
	if (jmiss) {
		int32_t d = (int32_t)(e->p - (jmiss + 4));

		memcpy(jmiss, &d, 4);
		emit_row(e, tmp, rows, nrows, 16);
		if (s->kind == SITE_CALL) {
			/* another callee: the site's table (lean_enter_pic) */
			emit_movabs_r11(e, (uint64_t)s);
			emit_fix(e, tmp, 0xe8, fx, nfx, TO_LEAN_ENTER_PIC);
			emit_jcc_to(e, tmp, 0, join);
		} else {
			memcpy(e->p, restore, sizeof(restore));
			e->p += sizeof(restore);
			emit_row(e, tmp, rows, nrows, 0);
			emit_jcc_to(e, tmp, 0, at->g);
		}
	}
	if (jquiet) {
		/* quiet: the callee as is, then the final jump back */
		int32_t d = (int32_t)(e->p - (jquiet + 4));

		memcpy(jquiet, &d, 4);
		emit_row(e, tmp, rows, nrows, 0);
		memcpy(e->p, call_red, 4); /* call *-16(%rsp) */
		e->p += 4;
		emit_jcc_to(e, tmp, 0, at->on - 1);
	}
	return 0;
}

/*
 * The code of a stub (layout in agent.h); 0, -1 when the operand is
 * unusual or no stub memory is in reach, -2 when `near` (call the direct
 * callee with a rel32) cannot reach it from there.  win[0..npre) are the window's
 * instructions before the site, moved to the stub's front; win[npre] is the
 * site; the npost after it are moved behind the call, where the callee
 * returns, followed by a jump back to the end of the window.  A site with
 * a lean way (stub_lean) starts with a jump to the generic code (G) and
 * has its lean code after G's.
 */
static int stub_emit(struct ag_site *s, const uint8_t *ins, uint64_t direct,
		     const struct pinsn *win, int npre, int npost,
		     uint8_t *fde_buf, size_t *fde_len, size_t cie_off, int near)
{
	struct ag_module *m = module_of(s->addr);
	uint8_t tmp[768];
	struct emit e = { tmp };
	struct fixup fx[MAX_FIXUPS];
	struct fde_moved mv[MAX_FIXUPS];
	uint32_t rows[12][2], code_len, post_off = 0;
	uint32_t j_off = 0, g_off, l_off = 0, lit_off = 0;
	struct lean_at la = { 0 };
	int nfx = 0, nrows = 3;
	uint8_t *stub, *p_enter, *p_exit = NULL, *p_jmp = NULL, *lit;
	int32_t d;
	/* a lean way: every call and tail call but a direct one that cannot
	 * reach its callee with a rel32 (stub_lean) */
	int lean = (!direct || (near && s->target)) && lean_tls() != 1;

	if (!m || npre + npost >= MAX_MOVED)
		return -1;
	for (int i = 0; i < npre; i++) {
		mv[i].off = (uint32_t)(e.p - tmp);
		mv[i].orig = win[i].addr;
		if (emit_moved(&e, tmp, m, &win[i], fx, &nfx) < 0)
			return -1;
	}
	const uint32_t plen = (uint32_t)(e.p - tmp);
	if (lean) { /* jmp G, its displacement 4-aligned: one atomic store */
		while ((e.p - tmp + 1) % 4)
			e8(&e, 0x90);
		j_off = (uint32_t)(e.p - tmp);
		e8(&e, 0xe9);
		e32(&e, 0);
	}
	g_off = (uint32_t)(e.p - tmp);
	e8(&e, 0x41); /* push r11 */
	e8(&e, 0x53);
	rows[0][0] = g_off + 2;
	rows[0][1] = 8;
	if (emit_target(&e, ins, s->len, direct, s->ret) < 0)
		return -1;
	e8(&e, 0x41); /* push r11 (the callee) */
	e8(&e, 0x53);
	rows[1][0] = (uint32_t)(e.p - tmp);
	rows[1][1] = 16;
	emit_movabs_r11(&e, (uint64_t)s);
	e8(&e, 0xff); /* call *[rip+enter] */
	e8(&e, 0x15);
	p_enter = e.p;
	e32(&e, 0);
	static const uint8_t tail_of_enter[] = {
		0x4c, 0x8b, 0x5c, 0x24, 0x08, /* mov 8(%rsp), %r11 */
		0x48, 0x8d, 0x64, 0x24, 0x10, /* lea 16(%rsp), %rsp */
	};
	memcpy(e.p, tail_of_enter, sizeof(tail_of_enter));
	e.p += sizeof(tail_of_enter);
	rows[2][0] = (uint32_t)(e.p - tmp);
	rows[2][1] = 0;
	la.g = g_off;
	if (s->kind == SITE_CALL) {
		static const uint8_t call_red[] = { 0xff, 0x54, 0x24, 0xf0 };

		if (direct && near) { /* call callee: no indirect branch */
			e8(&e, 0xe8);
			fx[nfx].at = (uint32_t)(e.p - tmp);
			fx[nfx].end = fx[nfx].at + 4;
			fx[nfx++].to = direct;
			e32(&e, 0);
		} else {
			memcpy(e.p, call_red, 4); /* call *-16(%rsp) */
			e.p += 4;
		}
		e8(&e, 0xff); /* call *[rip+exit] */
		e8(&e, 0x15);
		p_exit = e.p;
		e32(&e, 0);
		e8(&e, 0xe9); /* jmp R (the arena is near), or the moved */
		p_jmp = e.p;  /* instructions after the call */
		e32(&e, 0);
		e8(&e, 0xcc);
		e64(&e, (uint64_t)s); /* tramp_exit reads the site here */
		la.gx = (uint32_t)(p_exit - 2 - tmp);
	} else {
		static const uint8_t jmp_red[] = { 0xff, 0x64, 0x24, 0xf0 };

		memcpy(e.p, jmp_red, 4); /* jmp *-16(%rsp) */
		e.p += 4;
	}
	if (lean) {
		l_off = (uint32_t)(e.p - tmp);
		if (lean_emit(&e, tmp, s, ins, direct, fx, &nfx, rows, &nrows,
			      &la) < 0)
			return -1;
	}
	if (s->kind == SITE_CALL && npost) {
		const struct pinsn *last = &win[npre + npost];

		post_off = (uint32_t)(e.p - tmp);
		for (int i = npre + 1; i <= npre + npost; i++) {
			mv[i - 1].off = (uint32_t)(e.p - tmp);
			mv[i - 1].orig = win[i].addr;
			if (emit_moved(&e, tmp, m, &win[i], fx, &nfx) < 0)
				return -1;
		}
		e8(&e, 0xe9); /* back to the end of the window */
		fx[nfx].at = (uint32_t)(e.p - tmp);
		fx[nfx].end = fx[nfx].at + 4;
		fx[nfx++].to = last->addr + last->len;
		e32(&e, 0);
	}
	code_len = (uint32_t)(e.p - tmp);
	while ((e.p - tmp) % 8)
		e8(&e, 0xcc);
	if (la.lit_disp) { /* the lean way's one callee (an address never
			    * called: none yet) */
		lit_off = (uint32_t)(e.p - tmp);
		e64(&e, 1);
		d = (int32_t)(lit_off - (la.lit_disp + 4));
		memcpy(tmp + la.lit_disp, &d, 4);
	}
	lit = e.p;
	e64(&e, s->kind == SITE_CALL ? (uint64_t)ag_tramp_enter
				     : (uint64_t)ag_tramp_tail);
	d = (int32_t)(lit - (p_enter + 4));
	memcpy(p_enter, &d, 4);
	if (s->kind == SITE_CALL) {
		lit = e.p;
		e64(&e, (uint64_t)ag_tramp_exit);
		d = (int32_t)(lit - (p_exit + 4));
		memcpy(p_exit, &d, 4);
		if (npost) {
			d = (int32_t)(post_off - (uint32_t)(p_jmp + 4 - tmp));
			memcpy(p_jmp, &d, 4);
			if (lean) {
				d = (int32_t)(post_off - (la.on + 4));
				memcpy(tmp + la.on, &d, 4);
			}
		} else {
			fx[nfx].at = (uint32_t)(p_jmp - tmp);
			fx[nfx].end = fx[nfx].at + 4;
			fx[nfx++].to = s->ret;
			if (lean) {
				fx[nfx].at = la.on;
				fx[nfx].end = la.on + 4;
				fx[nfx++].to = s->ret;
			}
		}
	}
	stub = arena_alloc(m, (size_t)(e.p - tmp));
	if (!stub)
		return -1;
	for (int i = 0; i < nfx; i++) {
		uint64_t to = fx[i].to;

		if (to >= TO_LEAN_ENTER && to <= TO_LEAN_LAST) {
			if (!m->lean_rt)
				return -1;
			to = (uint64_t)m->lean_rt + lean_rt_off(to);
		}
		int64_t nd = (int64_t)(to - ((uint64_t)stub + fx[i].end));

		if (nd != (int32_t)nd)
			return direct && near ? -2 : -1;
		d = (int32_t)nd;
		memcpy(tmp + fx[i].at, &d, 4);
	}
	/* the site's own rip-relative operand was made absolute */
	memcpy(stub, tmp, (size_t)(e.p - tmp));
	s->stub = stub;
	s->lean = lean ? stub + l_off : NULL;
	s->lean_jmp = lean ? (int32_t *)(stub + j_off + 1) : NULL;
	s->lean_lit = la.lit_disp ? (uint64_t *)(stub + lit_off) : NULL;
	s->lean_ids = lean ? stub + la.ids : NULL;
	s->lean_state = lean && !direct ? 0 : 2;
	*fde_len += emit_fde(fde_buf + *fde_len, *fde_len + cie_off,
			     (uint64_t)stub, code_len, s->ret,
			     s->kind == SITE_TAIL, plen, rows, nrows, mv, npre,
			     npost);
	return 0;
}

/*
 * Build the stub for a site (layout in agent.h); 0, or -1 when the operand
 * is unusual or no stub memory is in reach.  A direct callee is called
 * directly when it is in reach of the stub and nothing (slow.c's
 * intercepts) may replace it; the callee's address is pushed all the same.
 */
int stub_build(struct ag_site *s, const uint8_t *ins, uint64_t direct,
	       const struct pinsn *win, int npre, int npost,
	       uint8_t *fde_buf, size_t *fde_len, size_t cie_off)
{
	int near = direct && s->target && s->target->intercept == IC_NONE;
	int r = stub_emit(s, ins, direct, win, npre, npost, fde_buf, fde_len,
			  cie_off, near);

	if (r == -2)
		r = stub_emit(s, ins, direct, win, npre, npost, fde_buf,
			      fde_len, cie_off, 0);
	return r;
}

/* ---- unwinder registration ---- */

static void (*register_frame)(void *);
static uint8_t **pending_frames;
static size_t npending, pending_cap;

void stub_register(uint8_t *eh)
{
	if (!register_frame) {
		for (struct ag_module *m = ag_modules; m; m = m->next) {
			const struct ag_sym *s;

			if (!strstr(m->path, "libgcc_s"))
				continue;
			for (size_t i = 0; i < m->nsyms; i++) {
				s = &m->syms[i];
				if (strcmp(s->name, "__register_frame") == 0)
					register_frame = (void (*)(void *))s->addr;
			}
		}
	}
	if (!register_frame) {
		if (npending == pending_cap) {
			size_t nc = pending_cap ? pending_cap * 2 : 256;
			uint8_t **n = ag_alloc(nc * sizeof(*n));

			if (pending_frames)
				memcpy(n, pending_frames, npending * sizeof(*n));
			pending_frames = n;
			pending_cap = nc;
		}
		pending_frames[npending++] = eh;
		return;
	}
	while (npending)
		register_frame(pending_frames[--npending]);
	register_frame(eh);
}


/*
 * The stub of a hooked entry (callback.c):
 *   push r11 ; r11 = hook ; call *tramp_fentry ; pop r11
 *   <the entry's first instructions, moved> ; jmp back past them
 * Its FDE: a function's entry state (return address at CFA-8) around the
 * trampoline call, then the moved instructions as themselves.
 */
uint8_t *stub_entry(struct ag_site *s, const struct pinsn *win, int n,
			   const struct ag_site *via, uint8_t *fde_buf,
			   size_t *fde_len, size_t cie_off)
{
	struct ag_module *m = s->owner->mod;
	uint8_t tmp[256], *stub, *p_call, *lit, *f, *fs;
	struct emit e = { tmp };
	struct fixup fx[MAX_FIXUPS];
	struct fde_moved mv[MAX_FIXUPS];
	uint32_t pop_end, code_len, at = 0, len32;
	int nfx = 0;
	int32_t d;

	if (n >= MAX_MOVED)
		return NULL;
	e8(&e, 0x41); /* push r11 */
	e8(&e, 0x53);
	emit_movabs_r11(&e, (uint64_t)s);
	e8(&e, 0xff); /* call *[rip+fentry] */
	e8(&e, 0x15);
	p_call = e.p;
	e32(&e, 0);
	e8(&e, 0x41); /* pop r11 */
	e8(&e, 0x5b);
	pop_end = (uint32_t)(e.p - tmp);
	for (int i = 0; i < n; i++) {
		mv[i].off = (uint32_t)(e.p - tmp);
		mv[i].orig = win[i].addr;
		if (emit_moved(&e, tmp, m, &win[i], fx, &nfx) < 0)
			return NULL;
	}
	/* then past the moved bytes, or into the stub of the call site the
	 * entry's bytes took over (it returns past its own window) */
	e8(&e, 0xe9);
	fx[nfx].at = (uint32_t)(e.p - tmp);
	fx[nfx].end = fx[nfx].at + 4;
	fx[nfx++].to = via ? (uint64_t)via->stub : s->at + s->plen;
	e32(&e, 0);
	code_len = (uint32_t)(e.p - tmp);
	while ((e.p - tmp) % 8)
		e8(&e, 0xcc);
	lit = e.p;
	e64(&e, (uint64_t)ag_tramp_fentry);
	d = (int32_t)(lit - (p_call + 4));
	memcpy(p_call, &d, 4);
	stub = arena_alloc(m, (size_t)(e.p - tmp));
	if (!stub)
		return NULL;
	for (int i = 0; i < nfx; i++) {
		int64_t nd = (int64_t)(fx[i].to - ((uint64_t)stub + fx[i].end));

		if (nd != (int32_t)nd)
			return NULL;
		d = (int32_t)nd;
		memcpy(tmp + fx[i].at, &d, 4);
	}
	memcpy(stub, tmp, (size_t)(e.p - tmp));
	/* FDE */
	fs = f = fde_buf + *fde_len;
	f += 4;
	len32 = (uint32_t)((f - fs) + *fde_len + cie_off);
	memcpy(f, &len32, 4);
	f += 4;
	memcpy(f, &(uint64_t){ (uint64_t)stub }, 8);
	f += 8;
	memcpy(f, &(uint64_t){ code_len }, 8);
	f += 8;
	*f++ = 0;
	*f++ = 0x0e; /* def_cfa_offset 8; rip at cfa-8 */
	*f++ = 8;
	*f++ = 0x80 | 16;
	*f++ = 1;
	f = fde_advance(f, &at, 2);
	*f++ = 0x0e;
	*f++ = 16;
	f = fde_advance(f, &at, pop_end);
	*f++ = 0x0e;
	*f++ = 8;
	*f++ = 0x14; /* from here, rsp as it is */
	*f++ = 7;
	*f++ = 1;
	for (int i = 0; i < n; i++) {
		f = fde_advance(f, &at, mv[i].off);
		f = fde_rip_is(f, mv[i].orig);
	}
	while ((f - fs) % 8)
		*f++ = 0;
	len32 = (uint32_t)(f - fs) - 4;
	memcpy(fs, &len32, 4);
	*fde_len += (size_t)(f - fs);
	return stub;
}

