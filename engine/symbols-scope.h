/*
 * engine/symbols-scope.h - which subprogram DIE holds a code address, the
 * answer dwarf_getscopes() gives (its first DW_TAG_subprogram scope), found
 * without walking the whole compile unit for each address.
 *
 * dwarf_getscopes() tries every top-level DIE of the unit in order until one
 * holds the address: for a unit of thousands of DIEs (redis's server.c) that
 * walk is most of what naming a session's functions costs (about 60 ms of a
 * 0.1 s attach to redis, one walk per function).  Here each unit touched is
 * read once into a sorted table of its top-level address ranges; a lookup is
 * a binary search, then the same descent dwarf_getscopes makes inside the
 * one DIE found.  Where the two could differ the lookup says so (-1) and the
 * caller asks dwarf_getscopes: an address inside an inlined call (whose
 * scopes dwarf_getscopes takes from the abstract origin), a unit whose
 * top-level ranges overlap or whose ranges cannot all be read, any DWARF
 * error on the way.
 *
 * Owned by a struct symbols_mod (engine/symbols.c), one per module.
 */
#ifndef PROPEL_ENGINE_SYMBOLS_SCOPE_H
#define PROPEL_ENGINE_SYMBOLS_SCOPE_H

#include <elfutils/libdw.h>

struct symbols_scope;

void symbols_scope_free(struct symbols_scope *s);

/*
 * The innermost DW_TAG_subprogram among the scopes of pc (a DWARF address:
 * run-time address minus the bias) in the unit cu, as dwarf_getscopes()
 * lists them: 1 with *sub set, 0 when there is none, -1 when this cannot
 * tell (ask dwarf_getscopes).  *s is created on first use.
 */
int symbols_scope_subprogram(struct symbols_scope **s, Dwarf_Die *cu,
			     Dwarf_Addr pc, Dwarf_Die *sub);

#endif
