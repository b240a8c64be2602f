/*
 * inject/agent/module.c - the loaded objects of the traced process and their
 * symbols, read without the dynamic loader's help.
 *
 * Modules come from /proc/self/maps (not dl_iterate_phdr: the agent starts
 * while other threads are stopped, perhaps holding the loader's lock).  Each
 * object's file is mapped read-only once; its function symbols (.symtab, or
 * .dynsym when stripped) are sorted by address, and its PLT ranges and GOT
 * relocations let a call into the PLT be named after its import.
 * A module is "system" when it lives under /lib or /usr/lib: the agent
 * records calls into it but does not instrument inside it.
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject/agent/agent.h"

struct ag_module *ag_modules;
static int next_modid;

static int is_system_path(const char *p)
{
	if (ag_cfg.flags & PROPEL_START_TRACE_LIBC)
		return strstr(p, "/ld-linux") != NULL;
	return strncmp(p, "/lib/", 5) == 0 || strncmp(p, "/usr/lib/", 9) == 0 ||
	       strncmp(p, "/lib64/", 7) == 0 || strncmp(p, "/usr/lib64/", 11) == 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct ag_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* prefer the sized symbol, then the global-looking name: the one
	 * with the fewest leading underscores (write, not __write or
	 * __libc_write), then the shorter */
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	size_t ux = strspn(x->name, "_"), uy = strspn(y->name, "_");

	if (ux != uy)
		return ux < uy ? -1 : 1;
	ux = strlen(x->name);
	uy = strlen(y->name);
	return ux < uy ? -1 : ux > uy ? 1 : strcmp(x->name, y->name);
}

static int rel_cmp(const void *a, const void *b)
{
	const struct ag_reloc *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* Link every "<f>.cold" part to its function, through a hash of names. */
static void link_cold_parts(struct ag_module *m)
{
	size_t cap = 1, i;
	int32_t *tab;

	while (cap < m->nsyms * 2)
		cap <<= 1;
	tab = ag_alloc(cap * sizeof(*tab));
	for (i = 0; i < cap; i++)
		tab[i] = -1;
	for (i = 0; i < m->nsyms; i++) {
		const char *n = m->syms[i].name;
		uint64_t h = name_hash(n, strlen(n)) & (cap - 1);

		m->syms[i].cold = -1;
		while (tab[h] >= 0)
			h = (h + 1) & (cap - 1);
		tab[h] = (int32_t)i;
	}
	for (i = 0; i < m->nsyms; i++) {
		const char *n = m->syms[i].name, *c = strstr(n, ".cold");
		uint64_t h;

		if (!c || c == n)
			continue;
		h = name_hash(n, (size_t)(c - n)) & (cap - 1);
		while (tab[h] >= 0) {
			const char *pn = m->syms[tab[h]].name;

			if (strlen(pn) == (size_t)(c - n) &&
			    memcmp(pn, n, (size_t)(c - n)) == 0) {
				m->syms[tab[h]].cold = (int32_t)i;
				break;
			}
			h = (h + 1) & (cap - 1);
		}
	}
}

/*
 * A stripped object's constructors and destructors: the toolchain's own
 * (crtstuff's frame_dummy and __do_global_dtors_aux) have no FDE, yet
 * they are function entries the loader and libc call (module_initfini),
 * and so is every direct call or jump target of theirs no FDE covers
 * (deregister_tm_clones, register_tm_clones): each is a function of its
 * own, sized up to the next one (load_elf), as the named object's .symtab
 * makes it, so a stripped run traces the calls a named one does.
 */
#define INITFINI_MAX 64

static int in_fde(const struct ag_module *m, uint64_t a)
{
	for (size_t k = 0; k < m->nfdes; k++)
		if (a >= m->fdes[k].lo && a < m->fdes[k].hi)
			return 1;
	return 0;
}

/* Where the function at a ends at the latest: the next symbol's start,
 * or the next FDE's (a stripped object's .dynsym names few of its
 * functions) */
static uint64_t next_start(const struct ag_module *m, uint64_t a)
{
	uint64_t e = m->text_hi;

	for (size_t k = 0; k < m->nsyms; k++)
		if (m->syms[k].addr > a && m->syms[k].addr < e)
			e = m->syms[k].addr;
	for (size_t k = 0; k < m->nfdes; k++)
		if (m->fdes[k].lo > a && m->fdes[k].lo < e)
			e = m->fdes[k].lo;
	return e;
}

static int sym_known(const struct ag_module *m, uint64_t a)
{
	for (size_t k = 0; k < m->nsyms; k++)
		if (m->syms[k].addr == a)
			return 1;
	return 0;
}

static void add_initfini_syms(struct ag_module *m)
{
	static csh cs;
	static cs_insn *insn;
	uint64_t fn[INITFINI_MAX];
	size_t first = m->nsyms, w;
	int n = module_initfini(m, fn, INITFINI_MAX), added = 0;

	for (int i = 0; i < n; i++)
		if (!in_fde(m, fn[i]) && !sym_known(m, fn[i])) {
			m->syms[m->nsyms].addr = fn[i];
			m->syms[m->nsyms].size = 0;
			m->syms[m->nsyms].name = "";
			m->nsyms++;
			added++;
		}
	if (!insn && (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK ||
		      cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
		      !(insn = cs_malloc(cs))))
		return;
	/* their direct targets, and those targets' own, in turn */
	for (w = first; w < m->nsyms; w++) {
		uint64_t lo = m->syms[w].addr, a = lo, hi = next_start(m, lo);
		const uint8_t *code = hi > lo ? module_code(m, lo, hi - lo) : NULL;
		size_t left = code ? hi - lo : 0;

		while (left && cs_disasm_iter(cs, &code, &left, &a, insn)) {
			cs_x86_op *op = &insn->detail->x86.operands[0];
			uint64_t t;

			if ((insn->id != X86_INS_CALL && insn->id != X86_INS_JMP) ||
			    insn->detail->x86.op_count != 1 ||
			    op->type != X86_OP_IMM)
				continue;
			t = (uint64_t)op->imm;
			if ((t >= lo && t < hi) || t < m->text_lo ||
			    t >= m->text_hi || module_in_plt(m, t) ||
			    in_fde(m, t) || sym_known(m, t) ||
			    added >= INITFINI_MAX)
				continue;
			m->syms[m->nsyms].addr = t;
			m->syms[m->nsyms].size = 0;
			m->syms[m->nsyms].name = "";
			m->nsyms++;
			added++;
		}
	}
}

/*
 * A stripped object: every FDE not named by .dynsym is a function of its
 * own (named later by the engine, from debug files or as module+offset),
 * and FDEs of .cold parts are fragments.  The symbols so far come from
 * .dynsym only; the caller sorts.
 */
static void add_fde_syms(struct ag_module *m)
{
	size_t named = m->nsyms, i;

	ag_sort(m->syms, named, sizeof(*m->syms), sym_cmp);
	for (i = 0; i < m->nfdes; i++) {
		const struct ag_fde *fd = &m->fdes[i];
		size_t lo = 0, hi = named;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (m->syms[mid].addr < fd->lo)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < named && m->syms[lo].addr == fd->lo) {
			if (!m->syms[lo].size)
				m->syms[lo].size = fd->hi - fd->lo;
			continue;
		}
		m->syms[m->nsyms].addr = fd->lo;
		m->syms[m->nsyms].size = fd->hi - fd->lo;
		m->syms[m->nsyms].name = "";
		m->syms[m->nsyms].frag = fd->frag;
		m->nsyms++;
	}
	/* a system library's code is never patched (its .eh_frame is not even
	 * read): its constructors would be names for nothing, and bounded
	 * by .dynsym alone their scan ran megabytes (crtstuff's frame_dummy
	 * in libcapstone, which the agent loads: 745 KB disassembled, 2/3 of
	 * every agent start) */
	if (!m->system)
		add_initfini_syms(m);
}

#define X_CHUNK (64u << 10) /* the executable segment is read this much at a time */
#define X_HAVE_BYTES(size) ((size) / X_CHUNK / 8 + 1) /* its bitmap of chunks read */

/* Read [off, off+n) of the file into the same offsets of base. */
static int file_piece(int fd, const char *base, uint64_t size, uint64_t off,
		      uint64_t n)
{
	if (off > size || n > size - off)
		return 0;
	return pread(fd, (char *)base + off, n, (off_t)off) == (ssize_t)n;
}

/*
 * A relocation section the loader mapped (and has read): read in place.
 * The agent wants only its GOT slots, and a library's .rela.dyn can be
 * megabytes of relative relocations (libcapstone's: 1.8 MB, once copied
 * at every injection).
 */
static int rela_mapped(struct ag_module *m, const Elf64_Shdr *s)
{
	return (s->sh_flags & SHF_ALLOC) && s->sh_addr &&
	       module_readable(m, m->bias + s->sh_addr, s->sh_size);
}

static void load_elf(struct ag_module *m)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh, *shstr;
	char *base;
	size_t i, nsyms = 0, nrel = 0;
	struct stat st;
	int fd, has_symtab = 0;

	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	/*
	 * Not a file mapping: the injector and this very scan read
	 * /proc/PID/maps, where a second mapping of a loaded object would
	 * look like the object itself.  Only the pieces needed are read into
	 * anonymous memory, at their file offsets.
	 */
	base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		close(fd);
		return;
	}
	m->file = (void *)base;
	m->file_size = st.st_size;
	eh = (const Elf64_Ehdr *)base;
	if (!file_piece(fd, base, st.st_size, 0, sizeof(*eh)) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) >
		    (uint64_t)st.st_size ||
	    !file_piece(fd, base, st.st_size, eh->e_shoff,
			(uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
		close(fd);
		return;
	}
	/* the executable segment: pristine code to decode and restore; a
	 * system library's is read when a function of it is first patched
	 * (module_code): most of it (libc, the agent's own libraries) never
	 * is */
	if (eh->e_phoff && file_piece(fd, base, st.st_size, eh->e_phoff,
				      (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);

		for (i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
			    ph[i].p_offset <= (uint64_t)st.st_size &&
			    ph[i].p_filesz <= (uint64_t)st.st_size - ph[i].p_offset) {
				m->x_have = ag_alloc(X_HAVE_BYTES(ph[i].p_filesz));
				if (!m->x_have)
					break;
				m->x_vaddr = ph[i].p_vaddr;
				m->x_off = ph[i].p_offset;
				m->x_size = ph[i].p_filesz;
				m->x_dev = st.st_dev;
				m->x_ino = st.st_ino;
				m->x_mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 +
					     st.st_mtim.tv_nsec;
				/* the program's own code is patched as it runs,
				 * maybe long after a package upgrade has replaced
				 * the file: read now */
				if (!m->system &&
				    file_piece(fd, base, st.st_size, m->x_off,
					       m->x_size))
					memset(m->x_have, 0xff,
					       X_HAVE_BYTES(m->x_size));
				break;
			}
	}
	sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		unsigned t = sh[i].sh_type;

		if (t == SHT_SYMTAB || t == SHT_DYNSYM || t == SHT_STRTAB ||
		    (t == SHT_RELA && !rela_mapped(m, &sh[i])))
			file_piece(fd, base, st.st_size, sh[i].sh_offset,
				   sh[i].sh_size);
	}
	/* .eh_frame: function bounds and landing pads (ehframe.c) */
	shstr = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : NULL;
	if (shstr && !m->system)
		for (i = 0; i < eh->e_shnum; i++)
			if (sh[i].sh_type == SHT_PROGBITS &&
			    sh[i].sh_name < shstr->sh_size &&
			    strcmp(base + shstr->sh_offset + sh[i].sh_name,
				   ".eh_frame") == 0 &&
			    file_piece(fd, base, st.st_size, sh[i].sh_offset,
				       sh[i].sh_size))
				ehframe_load(m, (const uint8_t *)base + sh[i].sh_offset,
					     sh[i].sh_size, sh[i].sh_addr);
	close(fd);
	sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	shstr = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : NULL;
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_SYMTAB)
			has_symtab = 1;
		if (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM)
			nsyms += sh[i].sh_size / sizeof(Elf64_Sym);
		if (sh[i].sh_type == SHT_RELA)
			nrel += sh[i].sh_size / sizeof(Elf64_Rela);
	}
	if (!has_symtab)
		nsyms += m->nfdes + INITFINI_MAX;
	m->syms = ag_alloc((nsyms + 1) * sizeof(*m->syms));
	m->relocs = ag_alloc((nrel + 1) * sizeof(*m->relocs));
	for (i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *s = &sh[i];
		const char *sname = shstr ? base + shstr->sh_offset + s->sh_name
					  : "";

		if (s->sh_offset + s->sh_size > (uint64_t)st.st_size)
			continue;
		if (s->sh_type == SHT_PROGBITS && shstr) {
			int k = strcmp(sname, ".plt") == 0       ? 0
				: strcmp(sname, ".plt.sec") == 0 ? 1
				: strcmp(sname, ".plt.got") == 0 ? 2
								 : -1;
			if (k >= 0) {
				m->plt_lo[k] = m->bias + s->sh_addr;
				m->plt_hi[k] = m->bias + s->sh_addr + s->sh_size;
			}
		}
		if ((s->sh_type == SHT_SYMTAB ||
		     (s->sh_type == SHT_DYNSYM && !has_symtab)) &&
		    s->sh_link < eh->e_shnum) {
			const Elf64_Sym *sy = (const void *)(base + s->sh_offset);
			const char *str = base + sh[s->sh_link].sh_offset;
			size_t n = s->sh_size / sizeof(*sy), j;

			for (j = 0; j < n; j++) {
				unsigned t = ELF64_ST_TYPE(sy[j].st_info);

				if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
				    sy[j].st_shndx == SHN_UNDEF ||
				    sy[j].st_value == 0)
					continue;
				m->syms[m->nsyms].addr = m->bias + sy[j].st_value;
				m->syms[m->nsyms].size = sy[j].st_size;
				m->syms[m->nsyms].name = str + sy[j].st_name;
				m->nsyms++;
			}
		}
		if (s->sh_type == SHT_RELA && s->sh_link < eh->e_shnum &&
		    sh[s->sh_link].sh_type == SHT_DYNSYM) {
			const Elf64_Rela *r =
				rela_mapped(m, s)
					? (const void *)(m->bias + s->sh_addr)
					: (const void *)(base + s->sh_offset);
			const Elf64_Shdr *ds = &sh[s->sh_link];
			const Elf64_Sym *dsy = (const void *)(base + ds->sh_offset);
			const char *dstr = base + sh[ds->sh_link].sh_offset;
			size_t n = s->sh_size / sizeof(*r), j;

			for (j = 0; j < n; j++) {
				unsigned ty = ELF64_R_TYPE(r[j].r_info);
				size_t si = ELF64_R_SYM(r[j].r_info);

				if ((ty != R_X86_64_JUMP_SLOT &&
				     ty != R_X86_64_GLOB_DAT) ||
				    si == 0)
					continue;
				m->relocs[m->nrelocs].got = m->bias + r[j].r_offset;
				m->relocs[m->nrelocs].name = dstr + dsy[si].st_name;
				m->nrelocs++;
			}
		}
	}
	if (!has_symtab)
		add_fde_syms(m);
	ag_sort(m->syms, m->nsyms, sizeof(*m->syms), sym_cmp);
	/* drop duplicates at one address, keeping the first (sized) one */
	if (m->nsyms) {
		size_t w = 1;

		for (i = 1; i < m->nsyms; i++)
			if (m->syms[i].addr != m->syms[w - 1].addr)
				m->syms[w++] = m->syms[i];
		m->nsyms = w;
	}
	/* symbols without a size end where the next one starts */
	for (i = 0; i < m->nsyms; i++)
		if (m->syms[i].size == 0)
			m->syms[i].size = i + 1 < m->nsyms
						  ? m->syms[i + 1].addr - m->syms[i].addr
						  : m->text_hi - m->syms[i].addr;
	ag_sort(m->relocs, m->nrelocs, sizeof(*m->relocs), rel_cmp);
	link_cold_parts(m);
}

/* Bias of an object: where its first PT_LOAD (file offset 0) landed. */
static uint64_t elf_first_vaddr(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t v = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0) {
		for (i = 0; i < eh.e_phnum; i++) {
			if (pread(fd, &ph, sizeof(ph),
				  eh.e_phoff + (off_t)i * eh.e_phentsize) !=
			    sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD) {
				v = ph.p_vaddr & ~(uint64_t)(ph.p_align ? ph.p_align - 1 : 0xfff);
				break;
			}
		}
	}
	close(fd);
	return v;
}

static struct ag_module *module_by_path(const char *path)
{
	struct ag_module *m;

	for (m = ag_modules; m; m = m->next)
		if (strcmp(m->path, path) == 0)
			return m;
	return NULL;
}

extern char ag_tramp_enter[];

/* Read a whole /proc file without stdio (no malloc: see agent.h). */
char *ag_read_proc(const char *path, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	for (;;) {
		char *nb;
		ssize_t r;

		if (!buf || n + 1 >= cap) {
			if (buf)
				cap *= 2;
			nb = mmap(NULL, cap, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (nb == MAP_FAILED)
				break;
			if (buf) {
				memcpy(nb, buf, n);
				munmap(buf, cap / 2);
			}
			buf = nb;
			/* /proc files must be read from the start in one pass */
			if (n) {
				lseek(fd, 0, SEEK_SET);
				n = 0;
			}
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	if (buf)
		buf[n] = 0;
	*len = cap;
	return buf;
}

int module_scan(void)
{
	size_t cap = 0;
	char *text = ag_read_proc("/proc/self/maps", &cap), *line, *nl;
	int added = 0;

	if (!text)
		return -EIO;
	for (line = text; *line; line = nl + 1) {
		unsigned long lo, hi, off;
		char perms[8], path[4096];
		struct ag_module *m;
		int n;

		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line) - 1;
		path[0] = 0;
		n = sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &lo, &hi,
			   perms, &off, path);
		if (n < 5 || path[0] != '/')
			continue;
		m = module_by_path(path);
		if (!m) {
			m = ag_alloc(sizeof(*m));
			m->path = ag_strdup(path);
			m->id = next_modid++;
			m->bias = lo - off - elf_first_vaddr(path);
			m->system = is_system_path(path);
			m->text_lo = ~0ull;
			m->next = ag_modules;
			ag_modules = m;
			added++;
		}
		if (perms[2] == 'x') {
			if (lo < m->text_lo)
				m->text_lo = lo;
			if (hi > m->text_hi)
				m->text_hi = hi;
		}
		if (perms[0] == 'r') {
			int k;

			for (k = 0; k < m->nrd; k++)
				if (m->rd_lo[k] == lo)
					break;
			if (k == m->nrd && k < 8) {
				m->rd_lo[k] = lo;
				m->rd_hi[k] = hi;
				m->nrd++;
			}
		}
	}
	munmap(text, cap);
	for (struct ag_module *m = ag_modules; m; m = m->next) {
		if (m->file || m->text_hi == 0)
			continue;
		if ((uint64_t)ag_tramp_enter >= m->text_lo &&
		    (uint64_t)ag_tramp_enter < m->text_hi)
			m->self = m->system = 1;
		load_elf(m);
		if (!m->file)
			m->file = (void *)1; /* unreadable: no symbols */
		map_line("M %d %llx %s", m->id, (unsigned long long)m->bias,
			 m->path);
	}
	cb_range_update();
	return added;
}

struct ag_module *module_of(uint64_t addr)
{
	struct ag_module *m;

	for (m = ag_modules; m; m = m->next)
		if (addr >= m->text_lo && addr < m->text_hi)
			return m;
	return NULL;
}

/* The function symbol containing addr. */
const struct ag_sym *module_sym(struct ag_module *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (addr < m->syms[lo - 1].addr + m->syms[lo - 1].size)
		return &m->syms[lo - 1];
	return NULL;
}

/* The function symbol starting exactly at addr. */
const struct ag_sym *module_sym_at(struct ag_module *m, uint64_t addr)
{
	const struct ag_sym *s = module_sym(m, addr);

	return s && s->addr == addr ? s : NULL;
}

/* The run-time address of the function the module exports as name, or 0
 * (from the file's .dynsym: module_sym names one alias per address). */
uint64_t module_export(struct ag_module *m, const char *name)
{
	const Elf64_Ehdr *eh = m->file;
	const Elf64_Shdr *sh;

	if ((uintptr_t)m->file <= 1 || !eh->e_shoff ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > m->file_size)
		return 0;
	sh = (const Elf64_Shdr *)((const char *)m->file + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sy;
		const char *str;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		sy = (const void *)((const char *)m->file + sh[i].sh_offset);
		str = (const char *)m->file + sh[sh[i].sh_link].sh_offset;
		for (size_t j = 0; j < sh[i].sh_size / sizeof(*sy); j++) {
			unsigned t = ELF64_ST_TYPE(sy[j].st_info);

			if ((t == STT_FUNC || t == STT_GNU_IFUNC) &&
			    sy[j].st_shndx != SHN_UNDEF && sy[j].st_value &&
			    sy[j].st_name < sh[sh[i].sh_link].sh_size &&
			    !strcmp(str + sy[j].st_name, name))
				return m->bias + sy[j].st_value;
		}
	}
	return 0;
}

/*
 * The functions the dynamic loader and libc call before main and after it
 * (.preinit_array, .init_array, .fini_array: constructors, C++ static
 * initialisation, destructors), in the order of the arrays: up to max of
 * them into out, read from the loaded arrays (relocated by the loader);
 * how many.  Entered from untraced code, they get entry hooks (callback.c
 * cb_hook_start).
 */
int module_initfini(struct ag_module *m, uint64_t *out, int max)
{
	const Elf64_Ehdr *eh = m->file;
	const Elf64_Shdr *sh;
	int n = 0;

	if ((uintptr_t)m->file <= 1 || !eh->e_shoff ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > m->file_size)
		return 0;
	sh = (const Elf64_Shdr *)((const char *)m->file + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		uint64_t a = m->bias + sh[i].sh_addr;

		if ((sh[i].sh_type != SHT_PREINIT_ARRAY &&
		     sh[i].sh_type != SHT_INIT_ARRAY &&
		     sh[i].sh_type != SHT_FINI_ARRAY) ||
		    !sh[i].sh_addr || !module_readable(m, a, sh[i].sh_size))
			continue;
		for (uint64_t j = 0; j + 8 <= sh[i].sh_size && n < max; j += 8) {
			uint64_t fn = *(const uint64_t *)(a + j);

			if (fn >= m->text_lo && fn < m->text_hi)
				out[n++] = fn;
		}
	}
	return n;
}

/* Read the chunks of the executable segment that [v, v+n) (file
 * addresses, inside it) needs and are not read yet; 0 when the file is
 * gone or is no longer the one loaded (replaced by an upgrade).  It runs
 * while functions are patched, libc's among them (comm.c hooks open and
 * close): system calls, not their libc wrappers, and errno untouched. */
static int code_read(struct ag_module *m, uint64_t v, uint64_t n)
{
	uint64_t c0 = (v - m->x_vaddr) / X_CHUNK;
	uint64_t c1 = (v + n - 1 - m->x_vaddr) / X_CHUNK, c;
	struct stat st;
	long fd = -1;
	int ok = 1;

	for (c = c0; c <= c1 && ok; c++) {
		uint64_t off = c * X_CHUNK, len = X_CHUNK;

		if (m->x_have[c / 8] & (1u << (c % 8)))
			continue;
		if (fd < 0) {
			fd = ag_rawsys(SYS_openat, AT_FDCWD, (long)m->path,
				       O_RDONLY | O_CLOEXEC, 0);
			if (fd < 0 || ag_rawsys(SYS_fstat, fd, (long)&st, 0, 0) < 0 ||
			    (uint64_t)st.st_dev != m->x_dev ||
			    (uint64_t)st.st_ino != m->x_ino ||
			    (int64_t)st.st_mtim.tv_sec * 1000000000 +
					    st.st_mtim.tv_nsec !=
				    m->x_mtime) {
				ok = 0;
				break;
			}
		}
		if (len > m->x_size - off)
			len = m->x_size - off;
		ok = ag_rawsys(SYS_pread64, fd,
			       (long)((char *)m->file + m->x_off + off), (long)len,
			       (long)(m->x_off + off)) == (long)len;
		if (ok)
			__atomic_or_fetch(&m->x_have[c / 8], (uint8_t)(1u << (c % 8)),
					  __ATOMIC_RELEASE);
	}
	if (fd >= 0)
		ag_rawsys(SYS_close, fd, 0, 0, 0);
	return ok;
}

const uint8_t *module_code(struct ag_module *m, uint64_t addr, uint64_t n)
{
	uint64_t v = addr - m->bias;

	if (!m->x_size || (uintptr_t)m->file <= 1 || v < m->x_vaddr ||
	    v + n > m->x_vaddr + m->x_size || (n && !code_read(m, v, n)))
		return NULL;
	return (const uint8_t *)m->file + m->x_off + (v - m->x_vaddr);
}

int module_readable(struct ag_module *m, uint64_t addr, uint64_t n)
{
	for (int i = 0; i < m->nrd; i++)
		if (addr >= m->rd_lo[i] && addr + n <= m->rd_hi[i] && addr + n > addr)
			return 1;
	return 0;
}

int module_in_plt(struct ag_module *m, uint64_t addr)
{
	int k;

	for (k = 0; k < 3; k++)
		if (addr >= m->plt_lo[k] && addr < m->plt_hi[k])
			return 1;
	return 0;
}

const char *module_got_name(struct ag_module *m, uint64_t got)
{
	size_t lo = 0, hi = m->nrelocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->relocs[mid].got == got)
			return m->relocs[mid].name;
		if (m->relocs[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
