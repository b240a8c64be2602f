/*
 * inject/agent/directive.c - the values mapping directives name
 * (self-propelled §3.2; analysis/flows.h): an argument at a function's
 * entry, or its return value.
 *
 * The coordinator writes them into the session directory
 * (PROPEL_VALUES_FILE, share/agent-abi.h); directive_load reads them at
 * every start, before any function is classified.  A function whose
 * symbol name matches gets f->intercept = IC_DIR_FIRST + code (code =
 * argument + 1, | 8 when rax is wanted, | 16 for the six argument
 * registers) and F_SLOW, so every call of it
 * takes the slow path (slow.c: enter_slow), which records ENTRY and then
 * directive_entry's ARG; when rax is wanted the frame is hooked and
 * ag_on_exit (hot.c) calls intercept_exit, which records the ARG after
 * EXIT.  The hot path is unchanged.
 *
 * The line "*@args" (record|attach --args, uftrace's -a) names every
 * function: each traced call records its six integer argument registers
 * (rdi, rsi, rdx, rcx, r8, r9, after a directive's own ARG) and rax at its
 * exit; its F line has flag 16 (and 8; 4 as well when a directive names
 * one of its arguments, whose ARG comes first: share/ring.h).  Which of the six are arguments, and of
 * what type, the engine reads from DWARF (engine/symbols.h).
 *
 * Names are matched against the agent's own view of the function: the
 * imported name of a PLT entry or system function, else the module's
 * .symtab/.dynsym symbol.  A function named only in a separate debug file
 * is not found (the engine names it later, the agent cannot).
 *
 * Called under ag_lock (load, classify) or by the recording thread itself
 * (entry, exit: rec_put only, built -mgeneral-regs-only as hot.c is,
 * since ag_on_exit runs without the slow path's xsave).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inject/agent/agent.h"

#define DIR_MAX 32
#define DIR_NAME 128

static struct dir_value {
	char name[DIR_NAME];
	unsigned code; /* argument + 1 (0: none) | 8: rax */
} dir_values[DIR_MAX];
static int dir_n;
static int dir_args; /* "*@args": every function's arguments and rax */

/* "name@N" or "name@ret" into the table (merging a function's two). */
static void directive_add(const char *s, size_t n)
{
	const char *at = memchr(s, '@', n);
	size_t nl = at ? (size_t)(at - s) : 0;
	unsigned code;
	int i;

	if (nl == 1 && *s == '*' && n == 6 && !memcmp(at + 1, "args", 4)) {
		dir_args = 1;
		return;
	}
	if (!at || !nl || nl >= DIR_NAME)
		return;
	if (n - nl - 1 == 3 && !memcmp(at + 1, "ret", 3))
		code = 8;
	else if (n - nl - 1 == 1 && at[1] >= '0' && at[1] <= '5')
		code = (unsigned)(at[1] - '0') + 1;
	else
		return;
	for (i = 0; i < dir_n; i++)
		if (!strncmp(dir_values[i].name, s, nl) &&
		    !dir_values[i].name[nl])
			break;
	if (i == dir_n) {
		if (dir_n == DIR_MAX)
			return;
		memcpy(dir_values[i].name, s, nl);
		dir_values[i].name[nl] = 0;
		dir_values[i].code = 0;
		dir_n++;
	}
	if (code == 8)
		dir_values[i].code |= 8;
	else if (!(dir_values[i].code & 7))
		dir_values[i].code |= code; /* one argument per function */
}

static unsigned directive_code(const char *name)
{
	int i;

	if (!name || !*name)
		return 0;
	for (i = 0; i < dir_n; i++)
		if (!strcmp(dir_values[i].name, name))
			return dir_values[i].code;
	return 0;
}

void directive_classify(struct ag_func *f)
{
	const char *name = f->name;
	unsigned code;

	if (dir_kind(f->intercept)) { /* from an earlier session */
		f->intercept = IC_NONE;
		f->flags &= ~(uint32_t)F_SLOW;
	}
	if ((!dir_n && !dir_args) || f->intercept != IC_NONE ||
	    (f->flags & F_NOTRACE))
		return;
	if (dir_n && !name && f->mod) {
		const struct ag_sym *sym = module_sym_at(f->mod, f->addr);

		name = sym ? sym->name : NULL;
	}
	code = dir_n ? directive_code(name) : 0;
	if (dir_args)
		code |= 8 | 16;
	if (!code)
		return;
	f->intercept = IC_DIR_FIRST + code;
	__atomic_or_fetch(&f->flags, F_SLOW, __ATOMIC_RELEASE);
}

void directive_load(const char *dir)
{
	char path[600], buf[4096];
	ssize_t r;
	size_t at = 0, i;
	int fd, had = dir_n;
	uint32_t k;

	dir_n = 0;
	had |= dir_args;
	dir_args = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_VALUES_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (at < sizeof(buf) - 1 &&
		       (r = read(fd, buf + at, sizeof(buf) - 1 - at)) > 0)
			at += (size_t)r;
		close(fd);
	}
	buf[at] = 0;
	for (i = 0; i < at;) {
		size_t n = strcspn(buf + i, ",\n");

		if (n)
			directive_add(buf + i, n);
		i += n + 1;
	}
	if (!had && !dir_n && !dir_args)
		return;
	/* functions known from an earlier session of this process */
	for (k = 0; k < ag_nfuncs; k++)
		directive_classify(ag_funcs_by_id[k]);
}

unsigned directive_map_flags(const struct ag_func *f)
{
	unsigned code;

	if (!dir_kind(f->intercept))
		return 0;
	code = f->intercept - IC_DIR_FIRST;
	return ((code & 7) ? 4u : 0u) | ((code & 8) ? 8u : 0u) |
	       ((code & 16) ? 16u : 0u);
}

int directive_entry(struct athread *t, const struct ag_func *f,
		    const struct ag_frame *fr)
{
	unsigned code = f->intercept - IC_DIR_FIRST;
	const uint64_t arg[6] = {fr->rdi, fr->rsi, fr->rdx,
				 fr->rcx, fr->r8,  fr->r9};

	if (!dir_kind(f->intercept))
		return 0;
	if (code & 7)
		rec_put64(t, arg[(code & 7) - 1]);
	if (code & 16)
		for (int i = 0; i < 6; i++)
			rec_put64(t, arg[i]);
	return (code & 8) != 0;
}

void directive_exit(struct athread *t, const struct ag_func *f, uint64_t rax)
{
	if (dir_kind(f->intercept) && ((f->intercept - IC_DIR_FIRST) & 8))
		rec_put64(t, rax);
}
