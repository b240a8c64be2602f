/*
 * inject/hijack-where.c - where the thread that will run a hold's calls
 * was stopped: in which mapped file, in which system call, and whether a
 * library is on its stack (unwound with libdwfl through .eh_frame).
 * inject/inject.c's safe point asks these before it calls.
 *
 * Callers: inject/inject.c.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "inject/hijack.h"
#include "share/proc.h"

struct hj_file_q {
	uint64_t pc;
	char *path;
	size_t n;
	int in;
};

static int hj_file_step(const struct propel_map *m, void *arg)
{
	struct hj_file_q *q = arg;
	size_t l = strlen(m->path);

	if (q->pc < m->lo || q->pc >= m->hi)
		return 0;
	q->in = m->path[0] == '/' && l < q->n;
	if (q->in)
		memcpy(q->path, m->path, l + 1);
	return 1;
}

int hijack_call_thread_file(struct hijack *h, char *path, size_t n)
{
	struct propel_thread_hint t;
	struct hj_file_q q = { 0, path, n, 0 };

	if (hijack_call_thread_hint(h, &t))
		return 0;
	q.pc = t.pc;
	propel_maps_each(hijack_pid(h), hj_file_step, &q);
	return q.in;
}

struct hj_where_q {
	uint64_t pc;
	char *out;
	size_t n;
};

static int hj_where_step(const struct propel_map *m, void *arg)
{
	struct hj_where_q *q = arg;
	const char *base = strrchr(m->path, '/');

	if (q->pc < m->lo || q->pc >= m->hi)
		return 0;
	snprintf(q->out, q->n, "%s+%#llx", base ? base + 1 : *m->path ? m->path
								   : "anonymous",
		 (unsigned long long)(q->pc - m->lo + m->off));
	return 1;
}

void hijack_where(pid_t pid, uint64_t pc, char *out, size_t n)
{
	struct hj_where_q q = { pc, out, n };

	if (propel_maps_each(pid, hj_where_step, &q) != 1)
		snprintf(out, n, "%#llx", (unsigned long long)pc);
}

/* No separate debug files: the unwinder reads .eh_frame from the module
 * itself (and never waits on a debuginfod server). */
static int hj_no_debuginfo(Dwfl_Module *mod, void **userdata,
			   const char *modname, Dwarf_Addr base,
			   const char *file_name, const char *debuglink_file,
			   GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

/* The file of the module whose range holds pc, or NULL. */
static const char *hj_module_at(Dwfl *dwfl, Dwarf_Addr pc)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
	Dwarf_Addr lo = 0, hi = 0;
	const char *name;

	if (!m)
		return NULL;
	name = dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	return name && pc >= lo && pc < hi ? name : NULL;
}

struct hj_unwind {
	Dwfl *dwfl;
	const char *lib;
	int frames, in, lost;
};

static int hj_frame(Dwfl_Frame *state, void *arg)
{
	struct hj_unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;
	const char *name;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (!activation)
		pc--; /* a return address: the call is the byte before */
	name = hj_module_at(u->dwfl, pc);
	/* past code no module holds (an agent's stub: no CFI), the frames
	 * the unwinder guesses are not to be trusted */
	if (!name) {
		u->lost = 1;
		return DWARF_CB_ABORT;
	}
	if (hijack_lib_matches(name, u->lib)) {
		u->in = 1;
		return DWARF_CB_ABORT;
	}
	return ++u->frames < 256 ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int hijack_call_thread_calls_from(struct hijack *h, const char *lib)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = hj_no_debuginfo,
	};
	struct propel_thread_hint t;
	struct hj_unwind u = { .lib = lib };
	pid_t pid = hijack_pid(h);

	if (hijack_call_thread_hint(h, &t) || !(u.dwfl = dwfl_begin(&cb)))
		return 0;
	if (dwfl_linux_proc_report(u.dwfl, pid) == 0 &&
	    dwfl_report_end(u.dwfl, NULL, NULL) == 0 &&
	    dwfl_linux_proc_attach(u.dwfl, pid, true) == 0) {
		dwfl_getthread_frames(u.dwfl, (pid_t)t.tid, hj_frame, &u);
		/* stopped where no CFI describes the frame: a library's
		 * _init (its .init section has none; crti's prologue is one
		 * `sub $8, %rsp`), at its first instruction reached by a
		 * page fault on its first page or a few after: the return
		 * address is one of the first words at sp.  A word that only
		 * looks like one delays the injection, no more. */
		if (!u.in && u.frames == 1 && !u.lost &&
		    (int64_t)t.sys < 0) {
			uint64_t ra[3] = { 0 };
			const char *name;
			int i;

			if (!hijack_read(h, t.sp, ra, sizeof(ra)))
				for (i = 0; i < 3 && !u.in; i++)
					u.in = ra[i] &&
					       (name = hj_module_at(u.dwfl,
								    ra[i] - 1)) &&
					       hijack_lib_matches(name, lib);
		}
	}
	dwfl_end(u.dwfl);
	return u.in;
}

long hijack_call_thread_syscall(struct hijack *h)
{
	struct propel_thread_hint t;

	return !hijack_call_thread_hint(h, &t) && (int64_t)t.sys >= 0
		       ? (long)t.sys
		       : -1;
}
