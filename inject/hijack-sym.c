/*
 * inject/hijack-sym.c - the target's libraries and their dynamic symbols,
 * read from /proc/PID/maps and the ELF files (libelf): where a library is
 * mapped, whether the program is dynamic, the address of a function in it
 * (an IFUNC's through a call of its resolver, in a hold).
 *
 * Callers: inject/inject.c, inject/hijack-where.c, tests/unit/test-hijack.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>

#include "inject/hijack.h"
#include "share/log.h"
#include "share/proc.h"

#define PR_DOMAIN "hijack"

int hijack_lib_matches(const char *path, const char *lib)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(lib);

	if (strchr(lib, '/'))
		return !strcmp(path, lib);
	base = base ? base + 1 : path;
	if (!strcmp(base, lib))
		return 1;
	return !strncmp(base, lib, n) && (base[n] == '.' || base[n] == '-');
}

struct hj_maps_q {
	const char *lib;
	char *path;
	size_t pn;
	long long want_off;
	uint64_t *start;
	int found;
};

static int hj_maps_step(const struct propel_map *m, void *arg)
{
	struct hj_maps_q *q = arg;

	if (m->path[0] != '/' ||
	    (q->found ? strcmp(m->path, q->path)
		      : !hijack_lib_matches(m->path, q->lib)))
		return 0;
	if (!q->found) {
		snprintf(q->path, q->pn, "%s", m->path);
		q->found = 1;
		if (q->want_off < 0)
			return 1;
	}
	if ((long long)m->off == q->want_off) {
		*q->start = m->lo;
		q->found = 2;
		return 1;
	}
	return 0;
}

/* Walk /proc/PID/maps; for the first mapped file matching lib, fill path;
 * if want_off >= 0 also find the mapping of that file at that offset. */
static int hj_maps_find(pid_t pid, const char *lib, char *path, size_t pn,
		       long long want_off, uint64_t *start)
{
	struct hj_maps_q q = { lib, path, pn, want_off, start, 0 };

	if (propel_maps_each(pid, hj_maps_step, &q) < 0)
		return -ESRCH;
	if (!q.found || (want_off >= 0 && q.found != 2))
		return -ENOENT;
	return 0;
}

int hijack_find_lib(pid_t pid, const char *lib, char **path)
{
	char p[PATH_MAX];
	int err = hj_maps_find(pid, lib, p, sizeof(p), -1, NULL);

	if (err)
		return err;
	*path = strdup(p);
	return *path ? 0 : -ENOMEM;
}

static Elf *hj_elf_open(pid_t pid, const char *path, int *fd)
{
	char root[PATH_MAX + 32];

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	snprintf(root, sizeof(root), "/proc/%d/root%s", pid, path);
	*fd = open(root, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	return elf_begin(*fd, ELF_C_READ, NULL);
}

int hijack_exe_dynamic(pid_t pid)
{
	char path[64];
	size_t i, n;
	int fd, dyn = 0;
	Elf *e;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getphdrnum(e, &n) < 0) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_INTERP)
			dyn = 1;
	}
	elf_end(e);
	close(fd);
	return dyn;
}

/* Look sym up in .dynsym; prefer the default version over hidden ones. */
static int hj_elf_sym(Elf *e, const char *sym, uint64_t *value, int *ifunc)
{
	Elf_Scn *scn = NULL, *vscn = NULL, *dscn = NULL;
	Elf_Data *data, *vdata = NULL;
	GElf_Shdr sh, dsh = { 0 };
	size_t i, n;
	int found = 0;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM) {
			dscn = scn;
			dsh = sh;
		} else if (sh.sh_type == SHT_GNU_versym) {
			vscn = scn;
		}
	}
	if (!dscn || !(data = elf_getdata(dscn, NULL)) || !dsh.sh_entsize)
		return -ENOENT;
	if (vscn)
		vdata = elf_getdata(vscn, NULL);
	n = dsh.sh_size / dsh.sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		GElf_Versym vs = 0;

		if (!gelf_getsym(data, i, &s) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		name = elf_strptr(e, dsh.sh_link, s.st_name);
		if (!name || strcmp(name, sym))
			continue;
		if (vdata)
			gelf_getversym(vdata, i, &vs);
		if (!found || !(vs & 0x8000)) {
			*value = s.st_value;
			*ifunc = GELF_ST_TYPE(s.st_info) == STT_GNU_IFUNC;
		}
		found = 1;
		if (!(vs & 0x8000))
			break;
	}
	return found ? 0 : -ENOENT;
}

/* The address of sym in lib as mapped in pid; *ifunc set for an IFUNC
 * (then *addr is its resolver). */
static int hj_sym_addr(pid_t pid, const char *lib, const char *sym,
		       uint64_t *addr, int *ifunc, char **cause)
{
	char path[PATH_MAX];
	uint64_t start = 0, value = 0, vpage = 0;
	long long opage = -1;
	long pagesz = sysconf(_SC_PAGESIZE);
	size_t i, n;
	int fd = -1, err;
	Elf *e;

	*ifunc = 0;
	if (hj_maps_find(pid, lib, path, sizeof(path), -1, NULL))
		return propel_cause(cause, -ENOENT, "%s is not mapped in process %d",
				    lib, pid);
	e = hj_elf_open(pid, path, &fd);
	if (!e) {
		err = fd < 0 ? -errno : -ENOEXEC;
		if (fd >= 0)
			close(fd);
		return propel_cause(cause, err, "cannot read ELF %s", path);
	}
	if (elf_getphdrnum(e, &n) < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD) {
			vpage = ph.p_vaddr & ~(uint64_t)(pagesz - 1);
			opage = ph.p_offset & ~(uint64_t)(pagesz - 1);
			break;
		}
	}
	err = hj_elf_sym(e, sym, &value, ifunc);
	elf_end(e);
	close(fd);
	if (err)
		return propel_cause(cause, err, "%s: no dynamic symbol %s", path,
				    sym);
	if (opage < 0 ||
	    hj_maps_find(pid, path, path, sizeof(path), opage, &start))
		return propel_cause(cause, -ENOENT,
				    "%s: cannot find its load address", path);
	*addr = start - vpage + value;
	pr_dbg("%s!%s = %#llx%s", path, sym, (unsigned long long)*addr,
	       *ifunc ? " (resolver)" : "");
	return 0;
}

int hijack_sym(struct hijack *h, const char *lib, const char *sym,
	       uint64_t *addr, char **cause)
{
	int err, ifunc = 0;

	err = hj_sym_addr(hijack_pid(h), lib, sym, addr, &ifunc, cause);
	if (err)
		return err;
	if (ifunc) {
		/* an IFUNC: its value is a resolver that returns the real
		 * implementation (x86-64 glibc resolvers take no argument) */
		uint64_t impl = 0;

		err = hijack_call(h, *addr, NULL, 0, 0, &impl, cause);
		if (err)
			return err;
		if (!impl)
			return propel_cause(cause, -ENOENT,
					    "%s: resolver of %s returned NULL",
					    lib, sym);
		*addr = impl;
	}
	return 0;
}

int hijack_sym_noexec(pid_t pid, const char *lib, const char *sym,
		      uint64_t *addr, char **cause)
{
	int ifunc = 0, err = hj_sym_addr(pid, lib, sym, addr, &ifunc, cause);

	if (!err && ifunc)
		return propel_cause(cause, -ENOENT,
				    "%s: %s is an IFUNC (needs a call)", lib, sym);
	return err;
}
