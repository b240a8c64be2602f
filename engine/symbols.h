/*
 * engine/symbols.h - names and source lines for addresses of a traced
 * process image, with libdwfl, offline (the process may be long gone: each
 * module is reported from its file with the load bias the agent wrote in the
 * map file's M line).
 *
 * A struct symbols is a cache: one Dwfl per (path, bias), shared by every
 * process image that mapped the same file at the same place (forked
 * children, repeated runs).  Each module's answers are also kept between
 * propel processes (engine/symcache.h), so the debug information of a
 * library every run maps (libc's) is read once, not by every command.  Addresses given to the lookups are run-time
 * addresses (file address + bias).  Lookups never fail hard: a stripped
 * binary gives what .dynsym knows, an unreadable file gives "?".
 *
 * Called by engine/ingest.c while it reads map files; usable by anything
 * that needs a name for an address (the TUI's disassembly view).
 */
#ifndef PROPEL_ENGINE_SYMBOLS_H
#define PROPEL_ENGINE_SYMBOLS_H

#include <stdint.h>

struct symbols;
struct symbols_mod;

struct symbols *symbols_new(void);
void symbols_free(struct symbols *sy);

/*
 * The module for the file at path loaded with bias (cached).  Returns NULL
 * with *cause set when the file cannot be read as ELF; a later call for the
 * same (path, bias) returns NULL again without retrying.
 */
struct symbols_mod *symbols_module(struct symbols *sy, const char *path,
				   uint64_t bias, char **cause);

/* 1 if addr falls inside the module's mapped range. */
int symbols_contains(struct symbols_mod *m, uint64_t addr);

/*
 * The demangled name of the symbol containing addr, malloc'd; when no
 * symbol covers it (a sizeless symbol only counts at its own address),
 * symbols_fallback_name() of the module.  *offset (if non-NULL) gets addr
 * minus the symbol's start (0 for a fallback name).  NULL only on ENOMEM.
 */
char *symbols_name(struct symbols_mod *m, uint64_t addr, uint64_t *offset);

/*
 * "basename+0xOFFSET" with OFFSET = addr - bias, malloc'd (for a module
 * whose file cannot be read too); "0xADDR" when path is NULL (no module
 * known).  NULL only on ENOMEM.
 */
char *symbols_fallback_name(const char *path, uint64_t bias, uint64_t addr);

/*
 * Source position of the instruction at addr (DWARF line table).  0 with
 * *file (owned by the module) and *line set, or -ENOENT.
 */
int symbols_srcline(struct symbols_mod *m, uint64_t addr, const char **file,
		    int *line);

/*
 * Declaration file:line of the (out-of-line) function whose code contains
 * addr.  0 or -ENOENT.
 */
int symbols_decl(struct symbols_mod *m, uint64_t addr, const char **file,
		 int *line);

/*
 * --args: the arguments and return value of the function that starts at
 * addr, as DWARF declares them, in *sig (malloc'd): "RET|name:T,..." with
 * each T one of i1 i2 i4 i8 (signed integer of that size; enums too),
 * u1..u8 (unsigned), b (bool), p (pointer or reference), x (floating:
 * passed in an xmm register), s (a struct or union of at most 16 bytes:
 * its registers are not known), S (larger: passed in memory; returned
 * through a hidden pointer in rdi) and, for RET, v (void).  Read by
 * engine/callvals.h.  0, -ENOENT (no DWARF for it, or a clone whose
 * arguments the compiler may have changed: its symbol has gcc's suffix,
 * .constprop.N .isra.N .part.N, or DWARF says DW_CC_nocall), -ENOMEM.
 */
int symbols_params(struct symbols_mod *m, uint64_t addr, char **sig);

/*
 * What the module's cache of answers (engine/symcache.h: kept between runs
 * under $PROPEL_SYMBOL_CACHE) did so far; zeros before its first lookup.
 */
struct symcache_stats;
void symbols_cache_stats(struct symbols_mod *m, struct symcache_stats *st);

/* Demangle a C++ symbol (malloc'd copy of name when it is not mangled). */
char *symbols_demangle(const char *name);

/*
 * The compilation directories (DW_AT_comp_dir) of the file at path's
 * compile units, each once, in *dirs (malloc'd array of malloc'd strings):
 * where a relative source name of that binary is found, as gdb looks.
 * 0 (maybe none), or -errno when the file cannot be read as DWARF.
 */
int symbols_comp_dirs(const char *path, char ***dirs, size_t *n);

#endif
