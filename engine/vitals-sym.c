/*
 * engine/vitals-sym.c - kallsyms and libdwfl symbolization of vital-sign
 * stacks (see engine/vitals-sym.h).
 *
 * Kernel: /proc/kallsyms read once, text symbols sorted by address; when
 * kptr_restrict hides the addresses (all zero) every kernel frame is hex.
 * User: one Dwfl per pid, reported from /proc/PID/maps on first use and
 * kept until vitals_sym_forget() (the least recently used of
 * VITALS_SYM_PIDS goes first); a pid that cannot be reported (gone,
 * permission) is remembered as such so that it costs one try per epoch.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/vitals-sym.h"

struct vitals_ksym {
	uint64_t addr;
	char *name;
};

#define VITALS_SYM_PIDS 64
#define VITALS_SYM_CACHE 8192 /* direct-mapped (pid, addr) -> name */

struct vitals_sym_ent {
	uint32_t pid;
	uint64_t addr;
	char *name;
};

struct vitals_sym {
	struct vitals_ksym *ks;
	size_t nks;
	int ks_loaded;
	struct {
		uint32_t pid;
		Dwfl *dwfl; /* NULL: could not be reported */
		int refreshed; /* re-reported once for an unknown address */
	} pids[VITALS_SYM_PIDS];
	int npids;
	struct vitals_sym_ent cache[VITALS_SYM_CACHE];
};

static const Dwfl_Callbacks vitals_sym_cb = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

struct vitals_sym *vitals_sym_new(void)
{
	return calloc(1, sizeof(struct vitals_sym));
}

void vitals_sym_forget(struct vitals_sym *vs)
{
	int i;

	for (i = 0; i < VITALS_SYM_CACHE; i++) {
		free(vs->cache[i].name);
		vs->cache[i].name = NULL;
	}

	for (i = 0; i < vs->npids; i++)
		if (vs->pids[i].dwfl)
			dwfl_end(vs->pids[i].dwfl);
	vs->npids = 0;
}

void vitals_sym_free(struct vitals_sym *vs)
{
	size_t i;

	if (!vs)
		return;
	vitals_sym_forget(vs);
	for (i = 0; i < vs->nks; i++)
		free(vs->ks[i].name);
	free(vs->ks);
	free(vs);
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct vitals_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct vitals_sym *vs)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;

	vs->ks_loaded = 1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!addr)
			continue;
		if (vs->nks == cap) {
			struct vitals_ksym *n;

			cap = cap ? 2 * cap : 65536;
			n = realloc(vs->ks, cap * sizeof(*n));
			if (!n)
				break;
			vs->ks = n;
		}
		vs->ks[vs->nks].addr = addr;
		vs->ks[vs->nks].name = strdup(name);
		if (vs->ks[vs->nks].name)
			vs->nks++;
	}
	fclose(f);
	qsort(vs->ks, vs->nks, sizeof(*vs->ks), ksym_cmp);
}

const char *vitals_sym_kernel(struct vitals_sym *vs, uint64_t addr, char *buf,
			      size_t n)
{
	size_t lo = 0, hi;

	if (!vs->ks_loaded)
		load_kallsyms(vs);
	hi = vs->nks;
	if (!hi || addr < vs->ks[0].addr) {
		snprintf(buf, n, "0x%" PRIx64, addr);
		return buf;
	}
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (vs->ks[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return vs->ks[lo].name;
}

static Dwfl *pid_report(uint32_t pid)
{
	Dwfl *d = dwfl_begin(&vitals_sym_cb);

	if (d && (dwfl_linux_proc_report(d, pid) != 0 ||
		  dwfl_report_end(d, NULL, NULL) != 0)) {
		dwfl_end(d);
		d = NULL;
	}
	return d;
}

/*
 * The process's maps changed since they were read (it exec'd: a child
 * sampled between fork and exec; or it mapped a library): read them again,
 * once per pid until vitals_sym_forget.  NULL when done already.
 */
static Dwfl *pid_refresh(struct vitals_sym *vs, uint32_t pid)
{
	int i;

	for (i = 0; i < vs->npids; i++) {
		if (vs->pids[i].pid != pid)
			continue;
		if (vs->pids[i].refreshed)
			return NULL;
		if (vs->pids[i].dwfl)
			dwfl_end(vs->pids[i].dwfl);
		vs->pids[i].dwfl = pid_report(pid);
		vs->pids[i].refreshed = 1;
		return vs->pids[i].dwfl;
	}
	return NULL;
}

static Dwfl *pid_dwfl(struct vitals_sym *vs, uint32_t pid)
{
	Dwfl *d;
	int i;

	/* least recently used out: a process sampled all along keeps its
	 * maps after it exits (its last epoch is symbolized after its end),
	 * however many others a busy machine samples once */
	for (i = 0; i < vs->npids; i++)
		if (vs->pids[i].pid == pid) {
			__typeof__(vs->pids[0]) hit = vs->pids[i];

			memmove(&vs->pids[i], &vs->pids[i + 1],
				(size_t)(vs->npids - i - 1) * sizeof(hit));
			vs->pids[vs->npids - 1] = hit;
			return hit.dwfl;
		}
	if (vs->npids == VITALS_SYM_PIDS) {
		if (vs->pids[0].dwfl)
			dwfl_end(vs->pids[0].dwfl);
		memmove(&vs->pids[0], &vs->pids[1],
			(VITALS_SYM_PIDS - 1) * sizeof(vs->pids[0]));
		vs->npids--;
	}
	d = pid_report(pid);
	vs->pids[vs->npids].pid = pid;
	vs->pids[vs->npids].dwfl = d;
	vs->pids[vs->npids].refreshed = 0;
	vs->npids++;
	return d;
}

static const char *vitals_sym_user_slow(struct vitals_sym *vs, uint32_t pid,
					uint64_t addr, char *buf, size_t n);

const char *vitals_sym_user(struct vitals_sym *vs, uint32_t pid,
			    uint64_t addr, char *buf, size_t n)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;
	struct vitals_sym_ent *e = &vs->cache[h >> 51 & (VITALS_SYM_CACHE - 1)];
	const char *name;

	if (e->name && e->pid == pid && e->addr == addr)
		return e->name;
	name = vitals_sym_user_slow(vs, pid, addr, buf, n);
	if (name[0] == '0' && name[1] == 'x')
		return name; /* unresolved: may resolve on a later try */
	free(e->name);
	e->name = strdup(name);
	e->pid = pid;
	e->addr = addr;
	return e->name ? e->name : name;
}

static const char *vitals_sym_user_slow(struct vitals_sym *vs, uint32_t pid,
					uint64_t addr, char *buf, size_t n)
{
	Dwfl *d = pid_dwfl(vs, pid);
	Dwfl_Module *m;
	const char *name, *mname;
	Dwarf_Addr start = 0;

	if (!d) {
		snprintf(buf, n, "0x%" PRIx64, addr);
		return buf;
	}
	m = dwfl_addrmodule(d, addr);
	if (!m && (d = pid_refresh(vs, pid)))
		m = dwfl_addrmodule(d, addr);
	if (!m) {
		snprintf(buf, n, "0x%" PRIx64, addr);
		return buf;
	}
	name = dwfl_module_addrname(m, addr);
	if (name)
		return name;
	mname = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	if (mname) {
		const char *base = strrchr(mname, '/');

		snprintf(buf, n, "%s+0x%" PRIx64, base ? base + 1 : mname,
			 addr - start);
	} else {
		snprintf(buf, n, "0x%" PRIx64, addr);
	}
	return buf;
}
