/*
 * engine/symbols-scope.c - see engine/symbols-scope.h.
 *
 * What dwarf_getscopes(cu, pc) does (elfutils libdw_visit_scopes.c and
 * dwarf_getscopes.c), and what this mirrors:
 *
 *   - it walks the unit's children in order, the children of an imported
 *     unit (dwz) in place of it, and takes the first child that holds pc
 *     (dwarf_haspc); DIEs without code (types, namespaces) never hold it;
 *   - inside that child it goes down the same way, into DIEs that may have
 *     scopes (subprograms, lexical blocks, inlined calls...), and stops at
 *     the innermost DIE that holds pc;
 *   - the scopes are that DIE and its parents up to the unit, except past an
 *     inlined call: there the parents are those of the call's abstract
 *     origin.
 *
 * So the unit's top-level children with code are read once (every range of
 * each, sorted); pc finds its child by binary search when no two ranges
 * overlap (else the order of the children would matter: -1), and the
 * descent from there is dwarf_getscopes's own.  The innermost subprogram on
 * the way down is the first DW_TAG_subprogram scope; an inlined call on the
 * way gives -1.
 */
#include <dwarf.h>
#include <stdlib.h>

#include "engine/symbols-scope.h"

struct scope_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

/* one unit's top-level ranges, sorted by lo */
struct scope_unit {
	Dwarf_Off off; /* the unit DIE's offset */
	int usable;    /* 0: ranges overlap or could not be read */
	struct scope_range *r;
	size_t n, cap;
};

struct symbols_scope {
	struct scope_unit *u;
	size_t n, cap;
};

void symbols_scope_free(struct symbols_scope *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->u[i].r);
	free(s->u);
	free(s);
}

/* the tags dwarf_getscopes goes down into */
static int scope_may_have_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return 1;
	}
	return 0;
}

static int scope_add(struct scope_unit *u, Dwarf_Addr lo, Dwarf_Addr hi,
		     Dwarf_Die *die)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		struct scope_range *r = realloc(u->r, cap * sizeof(*r));

		if (!r)
			return -1;
		u->r = r;
		u->cap = cap;
	}
	u->r[u->n].lo = lo;
	u->r[u->n].hi = hi;
	u->r[u->n].die = *die;
	u->n++;
	return 0;
}

/* The ranges of parent's children (an imported unit's in its place): 0, or
 * -1 on any DWARF error or ENOMEM. */
static int scope_read_children(struct scope_unit *u, Dwarf_Die *parent)
{
	Dwarf_Die c;
	int r = dwarf_child(parent, &c);

	if (r)
		return r < 0 ? -1 : 0;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&c) == DW_TAG_imported_unit) {
			Dwarf_Attribute a;
			Dwarf_Die unit;

			if (dwarf_formref_die(dwarf_attr(&c, DW_AT_import, &a),
					      &unit) &&
			    scope_read_children(u, &unit) < 0)
				return -1;
			continue;
		}
		while ((off = dwarf_ranges(&c, off, &base, &lo, &hi)) > 0)
			if (lo < hi && scope_add(u, lo, hi, &c) < 0)
				return -1;
		if (off < 0)
			return -1;
	} while ((r = dwarf_siblingof(&c, &c)) == 0);
	return r < 0 ? -1 : 0;
}

static int scope_cmp(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct scope_unit *scope_unit(struct symbols_scope *s, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct scope_unit *u;
	Dwarf_Addr end = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->u[i].off == off)
			return &s->u[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct scope_unit *nu = realloc(s->u, cap * sizeof(*nu));

		if (!nu)
			return NULL;
		s->u = nu;
		s->cap = cap;
	}
	u = &s->u[s->n++];
	*u = (struct scope_unit){ .off = off, .usable = 1 };
	if (scope_read_children(u, cu) < 0) {
		u->usable = 0;
		return u;
	}
	qsort(u->r, u->n, sizeof(*u->r), scope_cmp);
	for (size_t i = 0; i < u->n; i++) {
		if (i && u->r[i].lo < end) {
			u->usable = 0;
			break;
		}
		if (u->r[i].hi > end)
			end = u->r[i].hi;
	}
	return u;
}

/* From top (the unit's child that holds pc) down as dwarf_getscopes goes:
 * the innermost subprogram on the way (1), none (0), or -1. */
static int scope_descend(Dwarf_Die *top, Dwarf_Addr pc, Dwarf_Die *sub)
{
	Dwarf_Die cur = *top, c;
	int found = 0, tag, r;

	for (;;) {
		tag = dwarf_tag(&cur);
		if (tag == DW_TAG_inlined_subroutine)
			return -1;
		if (tag == DW_TAG_subprogram) {
			*sub = cur;
			found = 1;
		}
		if (!scope_may_have_scopes(tag) || dwarf_haschildren(&cur) <= 0)
			return found;
		r = dwarf_child(&cur, &c);
		if (r)
			return r < 0 ? -1 : found;
		for (;;) {
			if (dwarf_tag(&c) == DW_TAG_imported_unit)
				return -1;
			r = dwarf_haspc(&c, pc);
			if (r < 0)
				return -1;
			if (r > 0)
				break;
			r = dwarf_siblingof(&c, &c);
			if (r)
				return r < 0 ? -1 : found;
		}
		cur = c;
	}
}

int symbols_scope_subprogram(struct symbols_scope **s, Dwarf_Die *cu,
			     Dwarf_Addr pc, Dwarf_Die *sub)
{
	struct scope_unit *u;
	size_t lo = 0, hi;

	if (!*s && !(*s = calloc(1, sizeof(**s))))
		return -1;
	u = scope_unit(*s, cu);
	if (!u || !u->usable)
		return -1;
	/* the last range starting at or before pc */
	hi = u->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= u->r[lo - 1].hi)
		return 0;
	return scope_descend(&u->r[lo - 1].die, pc, sub);
}
