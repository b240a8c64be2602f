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
 * tests/unit/test-ingest.c proves each one on a stripped fixture.
 *
 * Demangling uses the C++ runtime's __cxa_demangle (libstdc++ is linked into
 * propel), so names match what c++filt prints.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/symbols-scope.h"
#include "engine/symbols.h"
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
	/* names already looked up (forked children share a module): an
	 * open-addressing table, addr -> name; 0 = empty */
	uint64_t *nc_addr;
	char **nc_name;
	size_t nc_cap, nc_used;
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
		if (m->dwfl)
			dwfl_end(m->dwfl);
		for (size_t i = 0; i < m->nc_cap; i++)
			free(m->nc_name[i]);
		free(m->nc_addr);
		free(m->nc_name);
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

static size_t symbols_nc_slot(const struct symbols_mod *m, uint64_t addr)
{
	size_t i = (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 20) & (m->nc_cap - 1);

	while (m->nc_addr[i] && m->nc_addr[i] != addr)
		i = (i + 1) & (m->nc_cap - 1);
	return i;
}

/* Remember a name (best effort: a failed allocation only costs time). */
static void symbols_nc_put(struct symbols_mod *m, uint64_t addr,
			   const char *name)
{
	size_t i;

	if (!addr)
		return;
	if (m->nc_used * 2 >= m->nc_cap) {
		size_t ncap = m->nc_cap ? m->nc_cap * 2 : 1024, j;
		uint64_t *na = calloc(ncap, sizeof(*na));
		char **nn = calloc(ncap, sizeof(*nn));
		struct symbols_mod old = *m;

		if (!na || !nn) {
			free(na);
			free(nn);
			return;
		}
		m->nc_addr = na;
		m->nc_name = nn;
		m->nc_cap = ncap;
		for (j = 0; j < old.nc_cap; j++)
			if (old.nc_addr[j]) {
				i = symbols_nc_slot(m, old.nc_addr[j]);
				m->nc_addr[i] = old.nc_addr[j];
				m->nc_name[i] = old.nc_name[j];
			}
		free(old.nc_addr);
		free(old.nc_name);
	}
	i = symbols_nc_slot(m, addr);
	if (m->nc_addr[i])
		return;
	m->nc_name[i] = strdup(name);
	if (m->nc_name[i]) {
		m->nc_addr[i] = addr;
		m->nc_used++;
	}
}

static char *symbols_name_uncached(struct symbols_mod *m, uint64_t addr,
				   uint64_t *offset);

char *symbols_name(struct symbols_mod *m, uint64_t addr, uint64_t *offset)
{
	char *name;

	if (m && !offset && m->nc_cap) {
		size_t i = symbols_nc_slot(m, addr);

		if (m->nc_addr[i] == addr)
			return strdup(m->nc_name[i]);
	}
	name = symbols_name_uncached(m, addr, offset);
	if (m && name && !offset)
		symbols_nc_put(m, addr, name);
	return name;
}

static char *symbols_name_uncached(struct symbols_mod *m, uint64_t addr,
				   uint64_t *offset)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = NULL;
	char *d, *at;

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
	return d;
}

int symbols_srcline(struct symbols_mod *m, uint64_t addr, const char **file,
		    int *line)
{
	Dwfl_Line *l;
	const char *f;
	int ln = 0;

	if (!m || !m->mod)
		return -ENOENT;
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

int symbols_decl(struct symbols_mod *m, uint64_t addr, const char **file,
		 int *line)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, *scopes = NULL, sub;
	int n, i, err = -ENOENT;

	if (!m || !m->mod)
		return -ENOENT;
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

int symbols_params(struct symbols_mod *m, uint64_t addr, char **sig)
{
	Dwarf_Addr bias = 0, entry;
	Dwarf_Die *cu, *scopes = NULL, *fn = NULL, child;
	Dwarf_Attribute a;
	Dwarf_Word cc = 0;
	char buf[1024], code[8];
	size_t at = 0;
	const char *name;
	int n, i, k, err = -ENOENT;

	*sig = NULL;
	if (!m || !m->mod)
		return -ENOENT;
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
