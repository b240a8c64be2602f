/*
 * engine/vitals-sym.h - names for the stack addresses of vital-sign samples:
 * kernel addresses from /proc/kallsyms, user addresses by the process's
 * executable mappings (read while it lives, so the recorder symbolizes
 * samples as they arrive) and each file's symbols, read once per file with
 * libdwfl and kept for the run.  Never fails hard: an
 * address without a name comes back as "0x..." (or "module+0x...").
 *
 * Used by engine/vitals-collect.c only.
 */
#ifndef PROPEL_ENGINE_VITALS_SYM_H
#define PROPEL_ENGINE_VITALS_SYM_H

#include <stddef.h>
#include <stdint.h>

struct vitals_sym;

struct vitals_sym *vitals_sym_new(void);
void vitals_sym_free(struct vitals_sym *vs);

/* Name of a kernel text address (pointer into the table, or buf). */
const char *vitals_sym_kernel(struct vitals_sym *vs, uint64_t addr, char *buf,
			      size_t n);
/* Name of a user address in process pid (pointer into a cache, or buf).
 * pc: addr is the sample's PC, not a return address the unwinder found
 * (an address of no mapping then means the process mapped new code). */
const char *vitals_sym_user(struct vitals_sym *vs, uint32_t pid,
			    uint64_t addr, int pc, char *buf, size_t n);
/* With quick set, a user address whose file's symbols were not read yet
 * is left as "0x..." instead of reading them: what is known already (the
 * files read, each process's maps, which are read even then because they
 * go with the process) still names frames.  For a symbolizer out of time. */
void vitals_sym_set_quick(struct vitals_sym *vs, int quick);
/* Drop the per-process caches (at an epoch's end: pids come and go);
 * the files' symbols stay. */
void vitals_sym_forget(struct vitals_sym *vs);
/* The calling thread's CPU time and the clock's time spent reading files'
 * symbols (once per file per run) so far: engine/vitals-collect.c leaves
 * them out of its symbolizing budget. */
void vitals_sym_load_time(const struct vitals_sym *vs, uint64_t *cpu_ns,
			  uint64_t *wall_ns);

#endif
