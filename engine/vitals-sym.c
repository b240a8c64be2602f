/*
 * engine/vitals-sym.c - kallsyms and libdwfl symbolization of vital-sign
 * stacks (see engine/vitals-sym.h).
 *
 * Kernel: /proc/kallsyms read once, text symbols sorted by address; when
 * kptr_restrict hides the addresses (all zero) every kernel frame is hex.
 *
 * User: symbols are kept per executable file, not per process.  A pid's
 * executable mappings are read from /proc/PID/maps on first use (kept
 * until vitals_sym_forget, the least recently used of VITALS_SYM_PIDS
 * going first); an address in none of them re-reads them -- an exec, a
 * new library: every time for a sample's PC (never an unwinder's guess)
 * unless they were read within the last millisecond, once for a deeper
 * frame; a read that fails (the process is gone) keeps the maps it had
 * and stops the re-reads for good; a mapping names its file by device and inode, and each
 * file is opened once for the whole run (through /proc/PID/map_files, so a
 * file of another mount namespace or one deleted since is still found),
 * reported to libdwfl at its link-time addresses (which also finds its
 * separate debuginfo), and its function symbols copied into one sorted
 * array: a frame is then a binary search.  A machine that starts the same
 * programs over and over (a build's thousand cc1 processes, a shell's
 * children) reads each file's symbols once, not once per process and
 * epoch -- libdwfl's own address lookup scans the symbol table, and a
 * Dwfl per pid re-opened every ELF file of every process.  A pid that
 * cannot be read (gone, permission) is remembered as such, one try per
 * epoch.  The last VITALS_SYM_CACHE (pid, address) -> name answers are
 * kept in a direct-mapped cache in front of all this.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PR_DOMAIN "vitals"

#include "engine/vitals-sym.h"
#include "share/log.h"
#include "share/clock.h"

struct vitals_ksym {
	uint64_t addr;
	char *name;
};

#define VITALS_SYM_PIDS 128
#define VITALS_SYM_FILES 256
#define VITALS_SYM_CACHE 8192 /* direct-mapped (pid, addr) -> name */
#define VITALS_SYM_LOADS 16   /* PT_LOAD headers kept per file */

struct vitals_sym_ent {
	uint32_t pid;
	uint64_t addr;
	char *name;
};

/* A function symbol of a file, at its link-time address (plus the
 * module's bias in its Dwfl, which owns the name). */
struct vitals_fn {
	uint64_t addr, size;
	const char *name;
	int bind; /* STB_GLOBAL before STB_WEAK before STB_LOCAL at one address */
};

/* One executable file, by identity (device and inode as /proc/PID/maps
 * prints them). */
struct vitals_file {
	uint64_t dev, ino;
	uint64_t used; /* LRU tick */
	Dwfl *dwfl;    /* NULL: could not be read (hex frames) */
	uint64_t bias; /* Dwfl address - link-time address */
	struct vitals_fn *fn;
	size_t nfn;
	struct {
		uint64_t off, filesz, vaddr;
	} load[VITALS_SYM_LOADS];
	int nload;
	char base[64]; /* file name for "name+0x..." */
};

/* One executable mapping of a process. */
struct vitals_map {
	uint64_t start, end, off;
	uint64_t dev, ino; /* 0, 0: no file ([vdso], anonymous code) */
	char special[16];  /* "[vdso]" and alike */
};

struct vitals_pid {
	uint32_t pid;
	int ok;	       /* maps read */
	int refreshed; /* re-read for an unknown deeper frame */
	int gone;      /* a read failed: the maps kept are its last */
	uint64_t read_ns; /* when they were read (monotonic) */
	struct vitals_map *maps;
	size_t nmaps;
};

struct vitals_sym {
	struct vitals_ksym *ks;
	size_t nks;
	int ks_loaded;
	struct vitals_pid pids[VITALS_SYM_PIDS]; /* most recently used last */
	int npids;
	struct vitals_file *files[VITALS_SYM_FILES];
	int nfiles;
	uint64_t tick;
	struct vitals_sym_ent cache[VITALS_SYM_CACHE];
	uint64_t load_cpu_ns; /* this thread's CPU reading files (file_read) */
	uint64_t load_wall_ns; /* and the clock's time */
	int quick;	      /* no new file read (vitals_sym_set_quick) */
};

static const Dwfl_Callbacks vitals_sym_cb = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct vitals_sym *vitals_sym_new(void)
{
	return calloc(1, sizeof(struct vitals_sym));
}

static void pid_release(struct vitals_pid *p)
{
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

void vitals_sym_forget(struct vitals_sym *vs)
{
	int i;

	for (i = 0; i < VITALS_SYM_CACHE; i++) {
		free(vs->cache[i].name);
		vs->cache[i].name = NULL;
	}
	for (i = 0; i < vs->npids; i++)
		pid_release(&vs->pids[i]);
	vs->npids = 0;
}

static void file_free(struct vitals_file *f)
{
	if (!f)
		return;
	if (f->dwfl)
		dwfl_end(f->dwfl);
	free(f->fn);
	free(f);
}

void vitals_sym_free(struct vitals_sym *vs)
{
	size_t i;

	if (!vs)
		return;
	vitals_sym_forget(vs);
	for (i = 0; i < (size_t)vs->nfiles; i++)
		file_free(vs->files[i]);
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

/* ---- processes: their executable mappings ------------------------------ */

static int map_cmp(const void *a, const void *b)
{
	const struct vitals_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Read pid's executable mappings; 0 or -errno. */
/* Read the pid's executable mappings; on failure (gone, permission) the
 * ones it had stay, and -errno.  A process whose first user frames were
 * sampled in the shell that forked it, then in taskset, then in its own
 * program had its maps read in the middle of that chain: with one
 * re-read, every later frame of its program stayed an address
 * (vitals-workloads: a spinner's 8 samples "0x5635dd89b3c8"). */
static int pid_read_maps(struct vitals_pid *p)
{
	char path[64], line[4608];
	struct vitals_map *maps = NULL;
	size_t cap = 0, nmaps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = fopen(path, "re");
	if (!f) {
		p->gone = 1;
		return -errno;
	}
	p->read_ns = propel_mono_ns();
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;
		struct vitals_map *m;
		const char *name;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
			   perms, &off, &maj, &min, &ino, &pos) < 7 ||
		    !strchr(perms, 'x'))
			continue;
		if (nmaps == cap) {
			struct vitals_map *n;

			cap = cap ? 2 * cap : 32;
			n = realloc(maps, cap * sizeof(*n));
			if (!n)
				break;
			maps = n;
		}
		m = &maps[nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = start;
		m->end = end;
		m->off = off;
		if (ino) {
			m->dev = ((uint64_t)maj << 32) | min;
			m->ino = ino;
		} else {
			name = line + pos;
			snprintf(m->special, sizeof(m->special), "%.*s",
				 (int)strcspn(name, "\n"), name);
		}
	}
	fclose(f);
	if (nmaps)
		qsort(maps, nmaps, sizeof(*maps), map_cmp);
	pid_release(p);
	p->maps = maps;
	p->nmaps = nmaps;
	return 0;
}

/* The pid's entry, most recently used last; read on first use. */
static struct vitals_pid *pid_get(struct vitals_sym *vs, uint32_t pid)
{
	struct vitals_pid hit;
	int i;

	for (i = vs->npids - 1; i >= 0; i--)
		if (vs->pids[i].pid == pid) {
			hit = vs->pids[i];
			memmove(&vs->pids[i], &vs->pids[i + 1],
				(size_t)(vs->npids - i - 1) * sizeof(hit));
			vs->pids[vs->npids - 1] = hit;
			return &vs->pids[vs->npids - 1];
		}
	/* least recently used out: a process sampled all along keeps its
	 * maps after it exits (its last epoch is symbolized after its end),
	 * however many others a busy machine samples once */
	if (vs->npids == VITALS_SYM_PIDS) {
		pid_release(&vs->pids[0]);
		memmove(&vs->pids[0], &vs->pids[1],
			(VITALS_SYM_PIDS - 1) * sizeof(vs->pids[0]));
		vs->npids--;
	}
	memset(&hit, 0, sizeof(hit));
	hit.pid = pid;
	hit.ok = pid_read_maps(&hit) == 0;
	vs->pids[vs->npids++] = hit;
	return &vs->pids[vs->npids - 1];
}

static const struct vitals_map *pid_find_map(const struct vitals_pid *p,
					     uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* ---- files: their function symbols, once per run ----------------------- */

static int fn_cmp(const void *a, const void *b)
{
	const struct vitals_fn *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->bind - y->bind;
}

static int bind_rank(int bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

/* Fill f from the file open at fd (consumed). */
static void file_read(struct vitals_file *f, const char *path, int fd)
{
	Dwfl_Module *m;
	GElf_Addr bias = 0;
	size_t i, nph = 0, cap = 0, o;
	Elf *elf;
	int n;

	f->dwfl = dwfl_begin(&vitals_sym_cb);
	if (!f->dwfl) {
		close(fd);
		return;
	}
	m = dwfl_report_elf(f->dwfl, f->base, path, fd, 0, true);
	if (!m)
		close(fd);
	dwfl_report_end(f->dwfl, NULL, NULL);
	elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph)) {
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		return;
	}
	f->bias = bias;
	for (i = 0; i < nph && f->nload < VITALS_SYM_LOADS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X)) {
			f->load[f->nload].off = ph.p_offset;
			f->load[f->nload].filesz = ph.p_filesz;
			f->load[f->nload].vaddr = ph.p_vaddr;
			f->nload++;
		}
	}
	n = dwfl_module_getsymtab(m);
	for (i = 1; n > 0 && i < (size_t)n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(m, (int)i, &sym, &addr,
							   &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || shndx == SHN_UNDEF || !addr ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		if (f->nfn == cap) {
			struct vitals_fn *nf;

			cap = cap ? 2 * cap : 256;
			nf = realloc(f->fn, cap * sizeof(*nf));
			if (!nf)
				break;
			f->fn = nf;
		}
		f->fn[f->nfn++] = (struct vitals_fn){
			addr, sym.st_size, name, bind_rank(GELF_ST_BIND(sym.st_info))
		};
	}
	qsort(f->fn, f->nfn, sizeof(*f->fn), fn_cmp);
	/* one symbol per address: the global name before its aliases */
	for (i = 0, o = 0; i < f->nfn; i++)
		if (!o || f->fn[o - 1].addr != f->fn[i].addr)
			f->fn[o++] = f->fn[i];
	f->nfn = o;
}

/* The file of mapping m of pid, read on first use; NULL: out of memory. */
static struct vitals_file *file_get(struct vitals_sym *vs, uint32_t pid,
				    const struct vitals_map *m)
{
	struct vitals_file *f;
	char path[4200], line[4608];
	int i, lru = 0, fd;
	FILE *mf;

	vs->tick++;
	for (i = 0; i < vs->nfiles; i++)
		if (vs->files[i]->dev == m->dev && vs->files[i]->ino == m->ino) {
			vs->files[i]->used = vs->tick;
			return vs->files[i];
		}
	if (vs->quick)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = m->dev;
	f->ino = m->ino;
	f->used = vs->tick;
	if (vs->nfiles == VITALS_SYM_FILES) {
		for (i = 1; i < vs->nfiles; i++)
			if (vs->files[i]->used < vs->files[lru]->used)
				lru = i;
		file_free(vs->files[lru]);
		vs->files[lru] = f;
	} else {
		vs->files[vs->nfiles++] = f;
	}
	/* its name, from the maps line (for "name+0x..." and debuginfo) */
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	mf = fopen(path, "re");
	path[0] = 0;
	while (mf && fgets(line, sizeof(line), mf)) {
		unsigned long long start;
		int pos = 0;

		if (sscanf(line, "%llx-%*x %*s %*x %*x:%*x %*u %n", &start, &pos) >= 1 &&
		    start == m->start && pos) {
			snprintf(path, sizeof(path), "%.*s",
				 (int)strcspn(line + pos, "\n"), line + pos);
			break;
		}
	}
	if (mf)
		fclose(mf);
	{
		const char *b = strrchr(path, '/');

		snprintf(f->base, sizeof(f->base), "%s", b ? b + 1 : path);
	}
	snprintf(line, sizeof(line), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
		 pid, m->start, m->end);
	fd = open(line, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && path[0] == '/') {
		snprintf(line, sizeof(line), "/proc/%u/root%s", pid, path);
		fd = open(line, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0) {
		uint64_t c0 = propel_clock_ns(CLOCK_THREAD_CPUTIME_ID);

		uint64_t w0 = propel_mono_ns(), cpu, wall;

		file_read(f, path[0] ? path : line, fd);
		cpu = propel_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall = propel_mono_ns() - w0;
		vs->load_cpu_ns += cpu;
		vs->load_wall_ns += wall;
		pr_dbg("symbols of %s: %zu functions in %.1f ms (cpu %.1f ms)",
		       f->base, f->nfn, wall / 1e6, cpu / 1e6);
	}
	return f;
}

void vitals_sym_set_quick(struct vitals_sym *vs, int quick)
{
	vs->quick = quick;
}

void vitals_sym_load_time(const struct vitals_sym *vs, uint64_t *cpu_ns,
			  uint64_t *wall_ns)
{
	*cpu_ns = vs ? vs->load_cpu_ns : 0;
	*wall_ns = vs ? vs->load_wall_ns : 0;
}

/* Name of link-time address a of f (pointer into f, or buf). */
static const char *file_name_at(const struct vitals_file *f, uint64_t a,
				char *buf, size_t n)
{
	uint64_t d = a + f->bias;
	size_t lo = 0, hi = f->nfn;

	while (lo < hi) { /* the first symbol above d */
		size_t mid = (lo + hi) / 2;

		if (f->fn[mid].addr <= d)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the symbol that holds d, or a sizeless one just below it */
	if (lo > 0) {
		const struct vitals_fn *s = &f->fn[lo - 1];

		if (!s->size || d < s->addr + s->size)
			return s->name;
	}
	snprintf(buf, n, "%s+0x%" PRIx64, f->base, a);
	return buf;
}

static const char *vitals_sym_user_slow(struct vitals_sym *vs, uint32_t pid,
					uint64_t addr, int pc, char *buf,
					size_t n)
{
	struct vitals_pid *p = pid_get(vs, pid);
	const struct vitals_map *m = p->ok ? pid_find_map(p, addr) : NULL;
	struct vitals_file *f;
	uint64_t off;
	int i;

	if (!m && p->ok && !p->gone &&
	    (pc ? propel_mono_ns() - p->read_ns >= 1000000 : !p->refreshed)) {
		/* mapped since its maps were read (an exec, a library) */
		if (!pc)
			p->refreshed = 1;
		pid_read_maps(p);
		m = pid_find_map(p, addr);
	}
	if (!m) {
		snprintf(buf, n, "0x%" PRIx64, addr);
		return buf;
	}
	if (!m->ino) {
		snprintf(buf, n, "%s+0x%" PRIx64,
			 m->special[0] ? m->special : "[anon]", addr - m->start);
		return buf;
	}
	f = file_get(vs, pid, m);
	if (!f && vs->quick) {
		snprintf(buf, n, "0x%" PRIx64, addr); /* not cached */
		return buf;
	}
	off = addr - m->start + m->off; /* in the file */
	for (i = 0; f && f->dwfl && i < f->nload; i++)
		if (off >= f->load[i].off &&
		    off < f->load[i].off + f->load[i].filesz)
			return file_name_at(f, off - f->load[i].off +
						       f->load[i].vaddr,
					    buf, n);
	snprintf(buf, n, "%s+0x%" PRIx64, f && f->base[0] ? f->base : "?", off);
	return buf;
}

const char *vitals_sym_user(struct vitals_sym *vs, uint32_t pid,
			    uint64_t addr, int pc, char *buf, size_t n)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;
	struct vitals_sym_ent *e = &vs->cache[h >> 51 & (VITALS_SYM_CACHE - 1)];
	const char *name;

	if (e->name && e->pid == pid && e->addr == addr)
		return e->name;
	name = vitals_sym_user_slow(vs, pid, addr, pc, buf, n);
	if (name[0] == '0' && name[1] == 'x')
		return name; /* unresolved: may resolve on a later try */
	free(e->name);
	e->name = strdup(name);
	e->pid = pid;
	e->addr = addr;
	return e->name ? e->name : name;
}
