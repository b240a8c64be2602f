/*
 * inject/agent/ehframe.c - function bounds from call-frame information.
 *
 * Debian ships its programs stripped of .symtab, but never of .eh_frame:
 * the unwinder needs it.  Every FDE covers one contiguous piece of code, so
 * the FDEs are the function bounds of a stripped binary (.dynsym names some
 * of them).  One piece is not a function, though: the ".cold" part gcc
 * splits off a function begins inside its parent's frame.  Its FDE says so
 * before the first instruction is executed -- a CFA other than rsp+8, or
 * saved registers -- where a function entered by a call has only the CIE's
 * "CFA = rsp+8, return address at CFA-8".  Such FDEs are marked frag: the
 * agent scans them with the function that jumps into them and never takes a
 * jump into one for a tail call.
 *
 * The LSDA pointer of an FDE leads to its C++ landing pads: code the
 * unwinder enters in the middle of a function, which patch.c must not
 * replace.
 *
 * Reads only the file copy of .eh_frame (module.c) and, for LSDAs, memory
 * of the loaded object.  No allocation but ag_alloc, no libc beyond string
 * functions: it runs while other threads may hold malloc's lock.
 */
#include <elf.h>
#include <string.h>

#include "inject/agent/agent.h"

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_pcrel 0x10

struct cursor {
	const uint8_t *p, *end;
	uint64_t vaddr; /* address of p as loaded (for pcrel) */
	const uint8_t *base;
	int bad;
};

static uint64_t uleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	c->bad = 1;
	return 0;
}

static int64_t sleb(struct cursor *c)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (c->p < c->end) {
		b = *c->p++;
		if (shift < 64)
			v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

static uint64_t fixed(struct cursor *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = 1;
		c->p = c->end;
		return 0;
	}
	memcpy(&v, c->p, n);
	c->p += n;
	return v;
}

/* A pointer in encoding enc; pcrel is relative to the field's address. */
static uint64_t encoded(struct cursor *c, uint8_t enc)
{
	uint64_t at = c->vaddr + (uint64_t)(c->p - c->base), v;

	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = fixed(c, 8); break;
	case 0x01: v = uleb(c); break;
	case 0x02: v = fixed(c, 2); break;
	case 0x03: v = fixed(c, 4); break;
	case 0x04: v = fixed(c, 8); break;
	case 0x09: v = (uint64_t)sleb(c); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
	case 0x0c: v = fixed(c, 8); break;
	default: c->bad = 1; return 0;
	}
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += at;
	return v;
}

struct cie {
	uint8_t fde_enc, lsda_enc;
	int has_z;
	uint64_t caf;       /* code alignment factor */
	int64_t daf;        /* data alignment factor */
	const uint8_t *ins; /* its initial instructions */
};

static int cie_parse(struct cursor *c, struct cie *ci)
{
	const char *aug;
	uint8_t version = (uint8_t)fixed(c, 1);

	aug = (const char *)c->p;
	while (c->p < c->end && *c->p)
		c->p++;
	c->p++;
	ci->fde_enc = 0;
	ci->lsda_enc = DW_EH_PE_omit;
	ci->has_z = aug[0] == 'z';
	ci->caf = uleb(c);
	ci->daf = sleb(c);
	if (version == 1)  /* return address column */
		fixed(c, 1);
	else
		uleb(c);
	ci->ins = c->p;
	if (!ci->has_z)
		return c->bad ? -1 : 0;
	{
		uint64_t alen = uleb(c);

		ci->ins = alen <= (uint64_t)(c->end - c->p) ? c->p + alen
							    : c->end;
	}
	for (const char *a = aug + 1; *a && !c->bad; a++) {
		if (*a == 'R')
			ci->fde_enc = (uint8_t)fixed(c, 1);
		else if (*a == 'L')
			ci->lsda_enc = (uint8_t)fixed(c, 1);
		else if (*a == 'P')
			encoded(c, (uint8_t)fixed(c, 1));
		else if (*a != 'S' && *a != 'B' && *a != 'G')
			return -1;
	}
	return c->bad ? -1 : 0;
}

/*
 * Does the FDE describe a frame already set up at its first byte?  Any
 * rule before the first advance_loc (other than nops and GNU_args_size)
 * changes the entry state the CIE gives a called function.
 */
static int fde_is_fragment(const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint8_t op = *p;

		if (op == 0x00 || op == 0x2e) /* nop, GNU_args_size */
			return 0;
		if ((op & 0xc0) == 0x40 || op == 0x02 || op == 0x03 || op == 0x04)
			return 0; /* an advance: the entry state held so far */
		return 1;
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct ag_fde *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void ehframe_load(struct ag_module *m, const uint8_t *sec, size_t size,
		  uint64_t vaddr)
{
	struct cursor c = { sec, sec + size, vaddr, sec, 0 };
	size_t cap = 0, n = 0;
	struct ag_fde *v = NULL;

	/* count first: one FDE per record at most */
	for (const uint8_t *p = sec; p + 8 <= sec + size;) {
		uint32_t len;

		memcpy(&len, p, 4);
		if (len == 0 || len == 0xffffffffu || len > (size_t)(sec + size - p - 4))
			break;
		cap++;
		p += 4 + len;
	}
	if (!cap)
		return;
	v = ag_alloc(cap * sizeof(*v));
	if (!v)
		return;
	while (c.p + 8 <= c.end && n < cap) {
		const uint8_t *rec = c.p, *rec_end;
		uint32_t len, id;
		struct cursor cc;
		struct cie ci;
		uint64_t lo, range, lsda = 0;

		memcpy(&len, rec, 4);
		if (len == 0 || len == 0xffffffffu ||
		    len > (size_t)(c.end - rec - 4))
			break;
		rec_end = rec + 4 + len;
		memcpy(&id, rec + 4, 4);
		c.p = rec_end;
		if (id == 0)
			continue; /* a CIE */
		/* the CIE pointer counts back from its own field */
		if ((size_t)(rec + 4 - sec) < id)
			continue;
		cc.base = sec;
		cc.vaddr = vaddr;
		cc.bad = 0;
		cc.p = rec + 4 - id;
		cc.end = c.end;
		{
			uint32_t clen, cid;

			if (cc.p + 8 > cc.end)
				continue;
			memcpy(&clen, cc.p, 4);
			memcpy(&cid, cc.p + 4, 4);
			if (cid != 0 || clen > (size_t)(cc.end - cc.p - 4))
				continue;
			cc.end = cc.p + 4 + clen;
			cc.p += 8;
		}
		if (cie_parse(&cc, &ci) < 0)
			continue;
		cc.p = rec + 8;
		cc.end = rec_end;
		lo = encoded(&cc, ci.fde_enc);
		range = encoded(&cc, ci.fde_enc & 0x0f);
		if (ci.has_z) {
			uint64_t alen = uleb(&cc);
			const uint8_t *ins = cc.p + alen;

			if (ci.lsda_enc != DW_EH_PE_omit && alen)
				lsda = encoded(&cc, ci.lsda_enc);
			cc.p = ins;
		}
		if (cc.bad || cc.p > rec_end || !lo || !range)
			continue;
		v[n].lo = lo + m->bias;
		v[n].hi = lo + range + m->bias;
		v[n].lsda = lsda ? lsda + m->bias : 0;
		v[n].frag = (uint32_t)fde_is_fragment(cc.p, rec_end);
		n++;
	}
	ag_sort(v, n, sizeof(*v), fde_cmp);
	m->fdes = v;
	m->nfdes = n;
}

const struct ag_fde *ehframe_find(struct ag_module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nfdes;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->fdes[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < m->fdes[lo - 1].hi)
		return &m->fdes[lo - 1];
	return NULL;
}

/*
 * The LSDA (gcc's .gcc_except_table): landing-pad base encoding and value,
 * type-table encoding and offset, call-site encoding and table length, then
 * (start, length, landing pad, action) per call site.
 */
int ehframe_landing_pads(struct ag_module *m, const struct ag_fde *fde,
			 uint64_t *out, int max)
{
	const uint8_t *p = (const uint8_t *)fde->lsda;
	struct cursor c = { p, p, fde->lsda, p, 0 };
	uint64_t lpstart = fde->lo, cs_len;
	uint8_t enc, cs_enc;
	int n = 0;

	if (!fde->lsda)
		return 0;
	for (int i = 0; i < m->nrd; i++)
		if (fde->lsda >= m->rd_lo[i] && fde->lsda < m->rd_hi[i])
			c.end = p + (m->rd_hi[i] - fde->lsda);
	if (c.end == p)
		return -1;
	enc = (uint8_t)fixed(&c, 1);
	if (enc != DW_EH_PE_omit)
		lpstart = encoded(&c, enc);
	enc = (uint8_t)fixed(&c, 1);
	if (enc != DW_EH_PE_omit)
		uleb(&c);
	cs_enc = (uint8_t)fixed(&c, 1);
	cs_len = uleb(&c);
	if (c.bad || cs_len > (uint64_t)(c.end - c.p))
		return -1;
	c.end = c.p + cs_len;
	while (c.p < c.end && !c.bad) {
		uint64_t lp;

		encoded(&c, cs_enc);
		encoded(&c, cs_enc);
		lp = encoded(&c, cs_enc);
		uleb(&c);
		if (lp) {
			if (n < max)
				out[n] = lpstart + lp;
			n++;
		}
	}
	return c.bad ? -1 : n;
}

/*
 * ---- the CFA at an address, from memory ----
 *
 * Where a thread stopped at pc keeps its return address: CFA - 8, the CFA
 * being rsp + *off there.  From the module's .eh_frame_hdr as loaded
 * (PT_GNU_EH_FRAME: system libraries are not read from their files), its
 * table giving the FDE, whose rules are run up to pc.  Only what gcc
 * emits for ordinary frames is understood; -1 for anything else (a CFA on
 * another register, or given by an expression).
 */

/* Run CFA instructions [p, end) from *loc while the row covers pc. */
static int cfa_run(struct cursor *c, const struct cie *ci, uint64_t *loc,
		   uint64_t pc, uint64_t *reg, int64_t *off)
{
	uint64_t stk_reg[8];
	int64_t stk_off[8];
	int depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = *c->p++;
		uint64_t adv = 0;

		switch (op & 0xc0) {
		case 0x40: /* advance_loc */
			adv = (op & 0x3f) * ci->caf;
			break;
		case 0x80: /* offset */
			uleb(c);
			continue;
		case 0xc0: /* restore */
			continue;
		}
		if (!(op & 0xc0))
			switch (op) {
			case 0x00: /* nop */
				continue;
			case 0x02: adv = fixed(c, 1) * ci->caf; break;
			case 0x03: adv = fixed(c, 2) * ci->caf; break;
			case 0x04: adv = fixed(c, 4) * ci->caf; break;
			case 0x05: /* offset_extended */
			case 0x09: /* register */
			case 0x14: /* val_offset */
			case 0x2f: /* GNU_negative_offset_extended */
				uleb(c);
				uleb(c);
				continue;
			case 0x11: /* offset_extended_sf */
			case 0x15: /* val_offset_sf */
				uleb(c);
				sleb(c);
				continue;
			case 0x06: /* restore_extended */
			case 0x07: /* undefined */
			case 0x08: /* same_value */
			case 0x2e: /* GNU_args_size */
				uleb(c);
				continue;
			case 0x10: /* expression */
			case 0x16: { /* val_expression */
				uint64_t n;

				uleb(c);
				n = uleb(c);
				if (n > (uint64_t)(c->end - c->p))
					return -1;
				c->p += n;
				continue;
			}
			case 0x0a: /* remember_state */
				if (depth == 8)
					return -1;
				stk_reg[depth] = *reg;
				stk_off[depth++] = *off;
				continue;
			case 0x0b: /* restore_state */
				if (!depth)
					return -1;
				*reg = stk_reg[--depth];
				*off = stk_off[depth];
				continue;
			case 0x0c: /* def_cfa */
				*reg = uleb(c);
				*off = (int64_t)uleb(c);
				continue;
			case 0x0d: /* def_cfa_register */
				*reg = uleb(c);
				continue;
			case 0x0e: /* def_cfa_offset */
				*off = (int64_t)uleb(c);
				continue;
			case 0x12: /* def_cfa_sf */
				*reg = uleb(c);
				*off = sleb(c) * ci->daf;
				continue;
			case 0x13: /* def_cfa_offset_sf */
				*off = sleb(c) * ci->daf;
				continue;
			default: /* def_cfa_expression, set_loc, unknown */
				return -1;
			}
		if (*loc + adv > pc)
			return 0; /* the next row begins after pc */
		*loc += adv;
	}
	return c->bad ? -1 : 0;
}

int ehframe_cfa_sp(struct ag_module *m, uint64_t pc, int64_t *off)
{
	/* the ELF header: at the bias, or (a fixed-address program) at the
	 * lowest address mapped */
	uint64_t base = m->bias;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	const uint8_t *hdr = NULL, *fde, *cie;
	uint64_t hsize = 0, loc, reg = 7, lo, range, count;
	uint32_t len, id, clen;
	size_t a, b;
	struct cursor c;
	struct cie ci;
	int i;

	for (i = 0; !m->bias && i < m->nrd; i++)
		if (!base || m->rd_lo[i] < base)
			base = m->rd_lo[i];
	eh = (const Elf64_Ehdr *)base;
	if (!base || !module_readable(m, base, sizeof(*eh)) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    !module_readable(m, base + eh->e_phoff,
			     (uint64_t)eh->e_phnum * sizeof(*ph)))
		return -1;
	ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			hdr = (const uint8_t *)(m->bias + ph[i].p_vaddr);
			hsize = ph[i].p_memsz;
		}
	if (!hdr || hsize < 12 || !module_readable(m, (uint64_t)hdr, hsize) ||
	    hdr[0] != 1 || hdr[3] != 0x3b) /* datarel sdata4 */
		return -1;
	c = (struct cursor){ hdr + 4, hdr + hsize, (uint64_t)(hdr + 4),
			     hdr + 4, 0 };
	encoded(&c, hdr[1]); /* eh_frame_ptr */
	count = encoded(&c, hdr[2]);
	if (c.bad || count > (uint64_t)(c.end - c.p) / 8)
		return -1;
	/* the last entry whose initial location is at or before pc */
	a = 0;
	b = count;
	while (a < b) {
		size_t mid = (a + b) / 2;
		int32_t v;

		memcpy(&v, c.p + mid * 8, 4);
		if ((uint64_t)hdr + (uint64_t)(int64_t)v <= pc)
			a = mid + 1;
		else
			b = mid;
	}
	if (!a)
		return -1;
	{
		int32_t v;

		memcpy(&v, c.p + (a - 1) * 8 + 4, 4);
		fde = hdr + v;
	}
	if (!module_readable(m, (uint64_t)fde, 8))
		return -1;
	memcpy(&len, fde, 4);
	memcpy(&id, fde + 4, 4);
	if (len == 0xffffffffu || !id || !module_readable(m, (uint64_t)fde, 4 + (uint64_t)len))
		return -1;
	cie = fde + 4 - id;
	if (!module_readable(m, (uint64_t)cie, 8))
		return -1;
	memcpy(&clen, cie, 4);
	if (clen == 0xffffffffu || !module_readable(m, (uint64_t)cie, 4 + (uint64_t)clen))
		return -1;
	memcpy(&id, cie + 4, 4);
	if (id != 0)
		return -1;
	c = (struct cursor){ cie + 8, cie + 4 + clen, (uint64_t)(cie + 8),
			     cie + 8, 0 };
	if (cie_parse(&c, &ci) < 0)
		return -1;
	c = (struct cursor){ fde + 8, fde + 4 + len, (uint64_t)(fde + 8),
			     fde + 8, 0 };
	lo = encoded(&c, ci.fde_enc);
	range = encoded(&c, ci.fde_enc & 0x0f);
	if (ci.has_z) {
		uint64_t alen = uleb(&c);

		if (alen > (uint64_t)(c.end - c.p))
			return -1;
		c.p += alen;
	}
	if (c.bad || pc < lo || pc >= lo + range)
		return -1;
	*off = 8;
	loc = lo;
	{
		struct cursor ic = { ci.ins, cie + 4 + clen, (uint64_t)ci.ins,
				     ci.ins, 0 };

		if (cfa_run(&ic, &ci, &loc, pc, &reg, off) < 0)
			return -1;
	}
	if (cfa_run(&c, &ci, &loc, pc, &reg, off) < 0 || reg != 7)
		return -1;
	return 0;
}
