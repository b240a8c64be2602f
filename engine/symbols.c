/*
 * engine/symbols.c - see engine/symbols.h.
 *
 * Each module gets its own Dwfl, reported offline with dwfl_report_elf at its
 * load bias: two processes may map different files at the same address, so
 * one Dwfl per process would need a process key everywhere; one per file is
 * simpler and lets forked children share the work.  The cache is a plain
 * list (a session has tens of modules, not thousands).
 *
 * Every source of names (symtab, debug files, debuginfod, MiniDebugInfo,
 * dynsym) is libdwfl's: dwfl_module_addrinfo() loads the symbol table on
 * first use and falls back through dwfl_standard_find_debuginfo (which asks
 * libdebuginfod last) to the auxiliary .gnu_debugdata table and .dynsym.
 * tests/unit/test-symsrc.c proves each one on a stripped fixture.
 *
 * Every answer (name, declaration, source line, parameters) goes through
 * the module's memo, engine/symcache.h, which also keeps it on disk: the
 * first lookup of a module computes its identity (symbols_ident: what the
 * answers depend on, read from the ELF headers and symbol tables and the
 * places a debug file is looked for, never from DWARF) and reads the
 * answers earlier runs saved; only an address not among them reaches
 * libdwfl, and with it the decompression of a library's debug sections
 * (libc's is ~10 MB, inflated by every dwarf_begin_elf).
 * tests/unit/test-symcache.c proves the cache gives libdwfl's answers.
 *
 * Demangling uses the C++ runtime's __cxa_demangle (libstdc++ is linked into
 * propel), so names match what c++filt prints.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/symbols-scope.h"
#include "engine/symbols.h"
#include "engine/symcache.h"
#include "share/hash.h"
#include "share/log.h"

#define PR_DOMAIN "symbols"

/* From the C++ ABI (libstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

struct symbols_mod {
	struct symbols_mod *next;
	char *path;
	uint64_t bias;
	Dwfl *dwfl;	 /* NULL: the file could not be read */
	Dwfl_Module *mod;
	uint64_t low, high;
	/* the answers given so far, and those of earlier runs (symcache.h),
	 * by file address; made on the first lookup */
	struct symcache *memo;
	int memo_tried;
	/* symbols_decl's index of the units' code ranges (symbols-scope.h) */
	struct symbols_scope *scope;
};

struct symbols {
	struct symbols_mod *mods;
};

static const Dwfl_Callbacks symbols_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct symbols *symbols_new(void)
{
	return calloc(1, sizeof(struct symbols));
}

void symbols_free(struct symbols *sy)
{
	struct symbols_mod *m, *n;

	if (!sy)
		return;
	for (m = sy->mods; m; m = n) {
		n = m->next;
		if (m->memo && propel_log_enabled(PR_DOMAIN)) {
			struct symcache_stats st;

			symcache_stats(m->memo, &st);
			propel_log(PR_DOMAIN, "%s: %u answers read from the cache, %u hits,"
				   " %u misses", m->path, st.loaded, st.hits,
				   st.misses);
		}
		symcache_close(m->memo);
		if (m->dwfl)
			dwfl_end(m->dwfl);
		symbols_scope_free(m->scope);
		free(m->path);
		free(m);
	}
	free(sy);
}

struct symbols_mod *symbols_module(struct symbols *sy, const char *path,
				   uint64_t bias, char **cause)
{
	struct symbols_mod *m;
	Dwarf_Addr low = 0, high = 0;

	for (m = sy->mods; m; m = m->next)
		if (m->bias == bias && strcmp(m->path, path) == 0)
			break;
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->path = strdup(path);
		m->bias = bias;
		m->next = sy->mods;
		sy->mods = m;
		m->dwfl = dwfl_begin(&symbols_cbs);
		if (m->dwfl) {
			dwfl_report_begin(m->dwfl);
			m->mod = dwfl_report_elf(m->dwfl, path, path, -1, bias,
						 false);
			dwfl_report_end(m->dwfl, NULL, NULL);
		}
		if (!m->mod) {
			pr_dbg("%s: %s", path, dwfl_errmsg(-1));
			if (m->dwfl)
				dwfl_end(m->dwfl);
			m->dwfl = NULL;
		} else {
			dwfl_module_info(m->mod, NULL, &low, &high, NULL, NULL,
					 NULL, NULL);
			m->low = low;
			m->high = high;
		}
	}
	if (!m->mod) {
		propel_cause(cause, -ENOENT, "%s: cannot read as ELF", path);
		return NULL;
	}
	return m;
}

void symbols_cache_stats(struct symbols_mod *m, struct symcache_stats *st)
{
	symcache_stats(m ? m->memo : NULL, st);
}

int symbols_contains(struct symbols_mod *m, uint64_t addr)
{
	return m && m->mod && addr >= m->low && addr < m->high;
}

char *symbols_demangle(const char *name)
{
	char *d;
	int status = -1;

	if (name[0] == '_' && name[1] == 'Z') {
		d = __cxa_demangle(name, NULL, NULL, &status);
		if (d && status == 0)
			return d;
		free(d);
	}
	return strdup(name);
}

char *symbols_fallback_name(const char *path, uint64_t bias, uint64_t addr)
{
	const char *base;
	char *s = NULL;

	if (!path || !*path)
		return asprintf(&s, "0x%" PRIx64, addr) < 0 ? NULL : s;
	base = strrchr(path, '/');
	base = base && base[1] ? base + 1 : path;
	return asprintf(&s, "%s+0x%" PRIx64, base, addr - bias) < 0 ? NULL : s;
}

/* ---- the module's identity, for its cache file (symcache.h) ---- */

static uint64_t symbols_fnv_stat(uint64_t h, const char *path)
{
	struct stat sb;

	h = propel_fnv(h, path, strlen(path) + 1);
	if (stat(path, &sb))
		return propel_fnv(h, "-", 1);
	h = propel_fnv(h, &sb.st_size, sizeof(sb.st_size));
	h = propel_fnv(h, &sb.st_mtim, sizeof(sb.st_mtim));
	h = propel_fnv(h, &sb.st_ino, sizeof(sb.st_ino));
	return propel_fnv(h, &sb.st_dev, sizeof(sb.st_dev));
}

/* The places libdwfl's standard search (dwfl_standard_find_debuginfo, our
 * callback) looks for a separate debug file of path, in its order: by
 * build-id under /usr/lib/debug, then by .gnu_debuglink beside the file,
 * in its .debug/ and under /usr/lib/debug (for the file and, if it is a
 * symlink, its target), then debuginfod when DEBUGINFOD_URLS is set (its
 * client's cache file of the build-id). */
static uint64_t symbols_debug_places(uint64_t h, const char *path,
				     const char *bid, const char *link)
{
	static const char *const fmt[] = { "%s/%s", "%s/.debug/%s",
					   "/usr/lib/debug%s/%s" };
	const char *v, *base;
	char *real = realpath(path, NULL), *p = NULL, *dir;
	const char *names[2] = { path, real && strcmp(real, path) ? real : NULL };
	size_t i, k;

	if (*bid && asprintf(&p, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid,
			     bid + 2) >= 0) {
		h = symbols_fnv_stat(h, p);
		free(p);
	}
	for (k = 0; link && k < 2 && names[k]; k++) {
		dir = strdup(names[k]);
		if (!dir)
			break;
		base = strrchr(dir, '/');
		if (base)
			dir[base - dir] = 0;
		for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++)
			if (asprintf(&p, fmt[i], base ? dir : ".", link) >= 0) {
				h = symbols_fnv_stat(h, p);
				free(p);
			}
		free(dir);
	}
	free(real);
	v = getenv("DEBUGINFOD_URLS");
	if (v && *v && *bid) {
		h = propel_fnv(h, v, strlen(v) + 1);
		if ((v = getenv("DEBUGINFOD_CACHE_PATH")) && *v)
			i = (size_t)asprintf(&p, "%s/%s/debuginfo", v, bid);
		else if ((v = getenv("XDG_CACHE_HOME")) && *v)
			i = (size_t)asprintf(&p, "%s/debuginfod_client/%s/debuginfo",
					     v, bid);
		else
			i = (size_t)asprintf(&p, "%s/.cache/debuginfod_client/%s"
					     "/debuginfo", getenv("HOME") ?: "", bid);
		if (i != (size_t)-1) {
			h = symbols_fnv_stat(h, p);
			free(p);
		}
	}
	return h;
}

/*
 * *key and *stamp (malloc'd) of m for symcache_open: the key is the
 * build-id (when there is one: the linker's digest of the file, DWARF
 * included) followed by a digest of what else names come from in the file
 * itself -- every section's header, the symbol and string tables and the
 * MiniDebugInfo -- so a stripped copy, which keeps the build-id, is
 * another key; a file without a build-id adds its path, size, mtime and
 * inode.  The stamp is the state (each one's size, mtime and inode, or
 * absence) of the places a separate debug file is looked for.  0 or
 * -ENOENT.
 */
static int symbols_ident(struct symbols_mod *m, char **key, char **stamp)
{
	const unsigned char *bits = NULL;
	char bid[81] = "", *link_dup = NULL;
	const char *link = NULL, *name;
	uint64_t h = PROPEL_FNV_INIT, st = PROPEL_FNV_INIT;
	GElf_Addr vaddr;
	GElf_Word crc = 0;
	Dwarf_Addr dbias;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	size_t shstrndx;
	Elf *elf;
	int nb, i;

	elf = dwfl_module_getelf(m->mod, &dbias);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	nb = dwfl_module_build_id(m->mod, &bits, &vaddr);
	for (i = 0; i < nb && i < 40; i++)
		snprintf(bid + 2 * i, 3, "%02x", bits[i]);
	if (nb <= 0)
		h = symbols_fnv_stat(h, m->path);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOENT;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name)
			h = propel_fnv(h, name, strlen(name) + 1);
		h = propel_fnv(h, &sh.sh_type, sizeof(sh.sh_type));
		h = propel_fnv(h, &sh.sh_flags, sizeof(sh.sh_flags));
		h = propel_fnv(h, &sh.sh_addr, sizeof(sh.sh_addr));
		h = propel_fnv(h, &sh.sh_size, sizeof(sh.sh_size));
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM &&
		    sh.sh_type != SHT_STRTAB &&
		    !(name && !strcmp(name, ".gnu_debugdata")))
			continue;
		if (sh.sh_type == SHT_NOBITS || !(d = elf_rawdata(scn, NULL)))
			continue;
		h = propel_fnv(h, d->d_buf, d->d_size);
	}
	link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (link) {
		link_dup = strdup(link);
		st = propel_fnv(st, &crc, sizeof(crc));
	}
	st = symbols_debug_places(st, m->path, bid, link_dup);
	free(link_dup);
	if (asprintf(key, "%s-%016" PRIx64, *bid ? bid : "nobid", h) < 0)
		return -ENOMEM;
	if (asprintf(stamp, "%016" PRIx64, st) < 0) {
		free(*key);
		*key = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The module's memo (symcache.h), opened on first use: with its file when
 * the cache is on and the module's identity is known, else for this run
 * only.  NULL when memory ran out (every lookup is then made). */
static struct symcache *symbols_memo(struct symbols_mod *m)
{
	char *dir, *key = NULL, *stamp = NULL;

	if (m->memo_tried)
		return m->memo;
	m->memo_tried = 1;
	dir = symcache_dir();
	if (dir && symbols_ident(m, &key, &stamp))
		pr_dbg("%s: no identity for the symbol cache", m->path);
	free(dir);
	m->memo = symcache_open(key, stamp);
	free(key);
	free(stamp);
	return m->memo;
}

static char *symbols_name_uncached(struct symbols_mod *m, uint64_t addr,
				   uint64_t *offset, int *found);

char *symbols_name(struct symbols_mod *m, uint64_t addr, uint64_t *offset)
{
	struct symcache *c = NULL;
	const char *s;
	char *name;
	int found = 0;

	if (m && m->mod && !offset && (c = symbols_memo(m))) {
		switch (symcache_get(c, addr - m->bias, SYMCACHE_NAME, &s, NULL)) {
		case 1:
			return strdup(s);
		case 0:
			return symbols_fallback_name(m->path, m->bias, addr);
		}
	}
	name = symbols_name_uncached(m, addr, offset, &found);
	if (c && name)
		symcache_put(c, addr - m->bias, SYMCACHE_NAME, found, name, 0);
	return name;
}

/* *found: 1 when a symbol named it, 0 for a fallback name. */
static char *symbols_name_uncached(struct symbols_mod *m, uint64_t addr,
				   uint64_t *offset, int *found)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = NULL;
	char *d, *at;

	*found = 0;
	if (m && m->mod)
		name = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL,
					    NULL, NULL);
	/* a sizeless symbol (an assembler label) names only its own address */
	if (name && off && !sym.st_size)
		name = NULL;
	if (offset)
		*offset = name && *name ? off : 0;
	if (!name || !*name)
		return symbols_fallback_name(m ? m->path : NULL,
					     m ? m->bias : 0, addr);
	/* Versioned dynamic names ("memcpy@GLIBC_2.14") keep only the name. */
	d = symbols_demangle(name);
	if (d && (at = strchr(d, '@')) && at != d && !strchr(d, '('))
		*at = 0;
	*found = 1;
	return d;
}

static int symbols_srcline_uncached(struct symbols_mod *m, uint64_t addr,
				    const char **file, int *line)
{
	Dwfl_Line *l;
	const char *f;
	int ln = 0;

	l = dwfl_module_getsrc(m->mod, addr);
	if (!l)
		return -ENOENT;
	f = dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL);
	if (!f || ln <= 0)
		return -ENOENT;
	*file = f;
	*line = ln;
	return 0;
}

/* *file and *line from a subprogram DIE's declaration: 0 or -ENOENT */
static int symbols_decl_of(Dwarf_Die *sub, const char **file, int *line)
{
	const char *f = dwarf_decl_file(sub);
	int ln = 0;

	if (!f || dwarf_decl_line(sub, &ln) != 0 || ln <= 0)
		return -ENOENT;
	*file = f;
	*line = ln;
	return 0;
}

/*
 * A file:line answer (kind SYMCACHE_SRC or _DECL) for addr: from m's memo,
 * else from lookup (libdw), remembered.  *file points into the memo, which
 * lives as long as m.  0 or -ENOENT.
 */
static int symbols_line(struct symbols_mod *m, int kind, uint64_t addr,
			const char **file, int *line,
			int (*lookup)(struct symbols_mod *, uint64_t,
				      const char **, int *))
{
	struct symcache *c;
	const char *s = NULL;
	int ln = 0, err;

	if (!m || !m->mod)
		return -ENOENT;
	c = symbols_memo(m);
	switch (symcache_get(c, addr - m->bias, kind, &s, &ln)) {
	case 1:
		*file = s;
		*line = ln;
		return 0;
	case 0:
		return -ENOENT;
	}
	err = lookup(m, addr, file, line);
	if (err && err != -ENOENT)
		return err;
	s = symcache_put(c, addr - m->bias, kind, !err, err ? NULL : *file,
			 err ? 0 : *line);
	if (s)
		*file = s;
	return err;
}

int symbols_srcline(struct symbols_mod *m, uint64_t addr, const char **file,
		    int *line)
{
	return symbols_line(m, SYMCACHE_SRC, addr, file, line,
			    symbols_srcline_uncached);
}

static int symbols_decl_uncached(struct symbols_mod *m, uint64_t addr,
				 const char **file, int *line)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, *scopes = NULL, sub;
	int n, i, err = -ENOENT;

	cu = dwfl_module_addrdie(m->mod, addr, &bias);
	if (!cu)
		return -ENOENT;
	/* the first subprogram among dwarf_getscopes's scopes, found without
	 * a walk of the unit per address where the index can tell */
	n = symbols_scope_subprogram(&m->scope, cu, addr - bias, &sub);
	if (n >= 0)
		return n ? symbols_decl_of(&sub, file, line) : -ENOENT;
	n = dwarf_getscopes(cu, addr - bias, &scopes);
	for (i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		err = symbols_decl_of(&scopes[i], file, line);
		break;
	}
	free(scopes);
	return err;
}

int symbols_decl(struct symbols_mod *m, uint64_t addr, const char **file,
		 int *line)
{
	return symbols_line(m, SYMCACHE_DECL, addr, file, line,
			    symbols_decl_uncached);
}

int symbols_comp_dirs(const char *path, char ***dirs, size_t *n)
{
	Dwarf *dw;
	Dwarf_Off off = 0, next;
	size_t hsize, k;
	char **v = NULL;
	int fd;

	*dirs = NULL;
	*n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENOENT;
	}
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Attribute a;
		const char *d;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    (d = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &a)))) {
			for (k = 0; k < *n && strcmp(v[k], d); k++)
				;
			if (k == *n) {
				char **nv = realloc(v, (*n + 1) * sizeof(*v));

				if (!nv)
					break;
				v = nv;
				if (!(v[*n] = strdup(d)))
					break;
				(*n)++;
			}
		}
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	*dirs = v;
	return 0;
}

/* ---- --args: a function's arguments as DWARF gives them ---- */

/* One type's code (symbols.h, symbols_params): through typedefs and
 * qualifiers to what decides how its value is passed and printed. */
static void symbols_type_code(Dwarf_Die *die, char *out, size_t n)
{
	Dwarf_Attribute a;
	Dwarf_Die t = *die, next;
	Dwarf_Word size = 0, enc = 0;
	int hops = 0;

	for (;;) {
		if (!dwarf_attr_integrate(&t, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, &next)) {
			snprintf(out, n, "v"); /* no type: void */
			return;
		}
		t = next;
		switch (dwarf_tag(&t)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (++hops < 32)
				continue;
			snprintf(out, n, "s");
			return;
		case DW_TAG_pointer_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
		case DW_TAG_ptr_to_member_type:
			snprintf(out, n, "p");
			return;
		case DW_TAG_enumeration_type:
			size = dwarf_bytesize(&t) > 0 ? (Dwarf_Word)dwarf_bytesize(&t)
						      : 4;
			snprintf(out, n, "i%u", (unsigned)size);
			return;
		case DW_TAG_base_type:
			size = dwarf_bytesize(&t) > 0 ? (Dwarf_Word)dwarf_bytesize(&t)
						      : 0;
			if (dwarf_attr(&t, DW_AT_encoding, &a))
				dwarf_formudata(&a, &enc);
			if (enc == DW_ATE_float || enc == DW_ATE_complex_float)
				snprintf(out, n, "x"); /* in xmm: not recorded */
			else if (size > 8 || !size)
				snprintf(out, n, "s");
			else if (enc == DW_ATE_boolean)
				snprintf(out, n, "b");
			else if (enc == DW_ATE_signed ||
				 enc == DW_ATE_signed_char)
				snprintf(out, n, "i%u", (unsigned)size);
			else
				snprintf(out, n, "u%u", (unsigned)size);
			return;
		default: /* struct, union, class, array: by value */
			size = dwarf_bytesize(&t) > 0 ? (Dwarf_Word)dwarf_bytesize(&t)
						      : 0;
			snprintf(out, n, size > 16 ? "S" : "s");
			return;
		}
	}
}

static int symbols_params_uncached(struct symbols_mod *m, uint64_t addr,
				   char **sig)
{
	Dwarf_Addr bias = 0, entry;
	Dwarf_Die *cu, *scopes = NULL, *fn = NULL, child;
	Dwarf_Attribute a;
	Dwarf_Word cc = 0;
	char buf[1024], code[8];
	size_t at = 0;
	const char *name;
	int n, i, k, err = -ENOENT;

	/* a clone gcc made (fib.constprop.0, .isra.N, .part.N): arguments
	 * dropped or reshaped, its DWARF the original's: not trusted */
	name = dwfl_module_addrname(m->mod, addr);
	if (name && strchr(name, '.'))
		return -ENOENT;
	cu = dwfl_module_addrdie(m->mod, addr, &bias);
	if (!cu)
		return -ENOENT;
	n = dwarf_getscopes(cu, addr - bias, &scopes);
	for (i = 0; i < n && !fn; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			fn = &scopes[i];
	/* the function that starts here, called as declared (gcc marks a
	 * clone whose arguments it changed DW_CC_nocall: not trusted) */
	if (!fn || dwarf_entrypc(fn, &entry) || entry != addr - bias ||
	    (dwarf_attr_integrate(fn, DW_AT_calling_convention, &a) &&
	     !dwarf_formudata(&a, &cc) && cc == DW_CC_nocall))
		goto out;
	symbols_type_code(fn, code, sizeof(code));
	at = (size_t)snprintf(buf, sizeof(buf), "%s|", code);
	k = 0;
	if (dwarf_child(fn, &child) == 0) {
		do {
			const char *name;

			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			name = dwarf_diename(&child);
			if (!name && dwarf_attr_integrate(&child, DW_AT_name, &a))
				name = dwarf_formstring(&a);
			symbols_type_code(&child, code, sizeof(code));
			if (at + strlen(name ? name : "?") + 12 >= sizeof(buf))
				break;
			at += (size_t)snprintf(buf + at, sizeof(buf) - at,
					       "%s%s:%s", k++ ? "," : "",
					       name ? name : "?", code);
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	*sig = strdup(buf);
	err = *sig ? 0 : -ENOMEM;
out:
	free(scopes);
	return err;
}

int symbols_params(struct symbols_mod *m, uint64_t addr, char **sig)
{
	struct symcache *c;
	const char *s;
	int err;

	*sig = NULL;
	if (!m || !m->mod)
		return -ENOENT;
	c = symbols_memo(m);
	switch (symcache_get(c, addr - m->bias, SYMCACHE_PARAMS, &s, NULL)) {
	case 1:
		*sig = strdup(s);
		return *sig ? 0 : -ENOMEM;
	case 0:
		return -ENOENT;
	}
	err = symbols_params_uncached(m, addr, sig);
	if (!err || err == -ENOENT)
		symcache_put(c, addr - m->bias, SYMCACHE_PARAMS, !err, *sig, 0);
	return err;
}
