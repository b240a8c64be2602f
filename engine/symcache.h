/*
 * engine/symcache.h - the answers engine/symbols.c gave for one module's
 * addresses (a function's name, its declaration's file:line, a call site's
 * line, its DWARF parameters), kept in memory for the run and on disk
 * between runs, so a propel process does not decompress and index a
 * library's debug information again to name the same few functions (libc's
 * compressed .debug_* sections were three quarters of a short `propel
 * record`'s CPU).
 *
 * A cache is opened for one module's identity, given by the caller as two
 * strings (engine/symbols.c makes them): the key names the file's content
 * (its build-id and a digest of its section headers and symbol tables, or
 * its path, size, mtime and inode when it has no build-id) and is the cache
 * file's name; the stamp says what else the answers came from (the state of
 * the places a separate debug file is looked for) and is kept in the file:
 * a file whose stamp differs is ignored and replaced.
 *
 * Where: $PROPEL_SYMBOL_CACHE when set ("off" or "0": no file is read or
 * written, the cache lives for the run only), else
 * $XDG_CACHE_HOME/propel/symbols, else ~/.cache/propel/symbols.  The files
 * of the directory are kept under $PROPEL_SYMBOL_CACHE_MAX MiB (default 64)
 * together, the least recently used removed first.
 *
 * A file is written whole to a temporary name and renamed over the old one
 * (two propel processes saving the same module at once: the last wins, each
 * having merged what the file held when it saved), and is read whole and
 * checked before anything in it is used (size, counts, a checksum, every
 * string offset, key and stamp): a truncated, corrupt or foreign file is
 * ignored and rewritten, never trusted.  Nothing here fails a lookup: a
 * directory that cannot be made or written costs only the time saved.
 */
#ifndef PROPEL_ENGINE_SYMCACHE_H
#define PROPEL_ENGINE_SYMCACHE_H

#include <stdint.h>

struct symcache;

/* What an entry answers (one entry per address and kind). */
enum symcache_kind {
	SYMCACHE_NAME = 1,	/* symbols_name: the name, or none (fallback) */
	SYMCACHE_DECL,		/* symbols_decl: file and line, or none */
	SYMCACHE_SRC,		/* symbols_srcline: file and line, or none */
	SYMCACHE_PARAMS,	/* symbols_params: the signature, or none */
	SYMCACHE_NKINDS
};

/*
 * The cache of the module key (with stamp), its file read if there is a
 * valid one.  key NULL: in memory only.  NULL only on ENOMEM.
 */
struct symcache *symcache_open(const char *key, const char *stamp);

/* Write the new answers (merged with the file's) if there are any, and
 * free everything. */
void symcache_close(struct symcache *c);

/*
 * The answer for (addr, kind): 1 with *str (owned by the cache, may be
 * NULL for a kind without a string) and *line set, 0 when the answer was
 * "none", -1 when it is not known.
 */
int symcache_get(struct symcache *c, uint64_t addr, int kind,
		 const char **str, int *line);

/*
 * Remember an answer; str NULL (and has 0) for "none".  Returns the stored
 * copy of str (owned by the cache), or NULL (none, or no memory: the
 * answer is then only not remembered).
 */
const char *symcache_put(struct symcache *c, uint64_t addr, int kind,
			 int has, const char *str, int line);

/* The directory the cache files go to (malloc'd), or NULL when disabled. */
char *symcache_dir(void);

/* What a cache did so far (tests and the "symbols" debug log). */
struct symcache_stats {
	unsigned loaded;	/* entries read from its file */
	unsigned hits, misses;	/* symcache_get calls */
	int file_bad;		/* a file was there and was not used */
};
void symcache_stats(const struct symcache *c, struct symcache_stats *st);

#endif
