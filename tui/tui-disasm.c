/*
 * tui/tui-disasm.c - disassembly for the source pane where the source file
 * is not on this machine: the function containing the cursor event, read
 * from the file of its module (functions.module: the executable or a shared
 * library; processes.exe when that is not readable) with libelf and decoded
 * with capstone.  The function is found by its symbol (raw or demangled
 * name), or for a "module+0xOFFSET" name (no symbol anywhere, see
 * engine/symbols.h) at that file address.  The instruction at a fault's pc
 * is marked; the module's load bias is the function's run-time address
 * (functions.addr) minus its file address, so PIE binaries and shared
 * libraries work too.  Called by view-source.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include "engine/session.h"
#include "engine/symbols.h"
#include "share/log.h"
#include "tui/tui-core.h"

#define DISASM_MAX_BYTES 4096

/* the file holding func (its module, else its process's executable), its
 * name and address: engine/session.c's session_func_where */
static int disasm_query(struct view *v, int pid, uint32_t func, char **exe,
			char **name, int64_t *addr)
{
	(void)pid;
	return session_func_where(view_session(v), func, exe, name, addr);
}

/* name as the symbol table spells it (raw) or as ingest stored it */
static int disasm_same_name(const char *sn, const char *name)
{
	char *d;
	int same;

	if (strcmp(sn, name) == 0)
		return 1;
	if (sn[0] != '_' || sn[1] != 'Z')
		return 0;
	d = symbols_demangle(sn);
	same = d && strcmp(d, name) == 0;
	free(d);
	return same;
}

/* A "module+0xOFFSET" name: the code at that file address (64 bytes, or to
 * the end of its section). */
static int disasm_read_at(Elf *elf, uint64_t off, uint64_t *value,
			  unsigned char **code, size_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || off < sh.sh_addr ||
		    off >= sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || off - sh.sh_addr >= d->d_size)
			return -ENOENT;
		*size = d->d_size - (off - sh.sh_addr);
		if (*size > 64)
			*size = 64;
		*code = malloc(*size);
		if (!*code)
			return -ENOMEM;
		memcpy(*code, (char *)d->d_buf + (off - sh.sh_addr), *size);
		*value = off;
		return 0;
	}
	return -ENOENT;
}

/* The traced function of func's process holding pc (session.c). */
static int disasm_func_at(struct view *v, uint32_t func, int64_t pc,
			  uint32_t *out)
{
	int64_t id;
	int err = session_func_at(view_session(v), func, pc, &id);

	if (!err)
		*out = (uint32_t)id;
	return err;
}

/* symbol value/size and the bytes of the function */
static int disasm_read(const char *exe, const char *name, uint64_t *value,
		       unsigned char **code, size_t *size, char **cause)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	int fd, err = -ENOENT;
	const char *plus = strstr(name, "+0x");

	elf_version(EV_CURRENT);
	fd = open(exe, O_RDONLY);
	if (fd < 0)
		return propel_cause(cause, -errno, "binary not found: %s", exe);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return propel_cause(cause, -EINVAL, "%s: not an ELF file", exe);
	}
	while ((scn = elf_nextscn(elf, scn)) && err) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t k, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (k = 0; d && k < n; k++) {
			GElf_Sym sym;
			const char *sn;
			Elf_Scn *ts;
			GElf_Shdr tsh;
			Elf_Data *td;

			if (!gelf_getsym(d, (int)k, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || sym.st_shndx == SHN_UNDEF)
				continue;
			sn = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!sn || !disasm_same_name(sn, name))
				continue;
			ts = elf_getscn(elf, sym.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) ||
			    !(td = elf_getdata(ts, NULL)) || !td->d_buf)
				break;
			*size = sym.st_size ? sym.st_size : 64;
			if (*size > DISASM_MAX_BYTES)
				*size = DISASM_MAX_BYTES;
			if (sym.st_value < tsh.sh_addr ||
			    sym.st_value - tsh.sh_addr + *size > td->d_size)
				break;
			*code = malloc(*size);
			if (!*code) {
				err = -ENOMEM;
				break;
			}
			memcpy(*code, (char *)td->d_buf + (sym.st_value - tsh.sh_addr),
			       *size);
			*value = sym.st_value;
			err = 0;
			break;
		}
	}
	if (err == -ENOENT && plus)
		err = disasm_read_at(elf, strtoull(plus + 1, NULL, 16), value,
				     code, size);
	elf_end(elf);
	close(fd);
	if (err)
		propel_cause(cause, err, "%s: no code for %s", exe, name);
	return err;
}

int tui_disasm(struct view *v, int t, int64_t idx, char ***out, int *cur,
	       char **cause)
{
	struct recon *r = tui_recon(v);
	const struct recon_thread *th = &r->threads[t];
	int64_t f = tui_frame(v, t, idx), addr = 0, pc = 0;
	struct recon_ev e = recon_get(r, t, idx), fe;
	char *exe = NULL, *name = NULL, **lines = NULL;
	unsigned char *code = NULL;
	size_t size = 0, n = 0, k;
	uint64_t value = 0;
	cs_insn *insn = NULL;
	csh cs;
	int err;

	*out = NULL;
	*cur = 0;
	if (f < 0)
		return propel_cause(cause, -ENOENT, "no function here");
	fe = recon_get(r, t, f);
	/* a fault: the function whose code holds the pc, which is not the
	 * frame's when the frame is a PLT call into a shared library */
	if (e.kind == SK_SIGNAL) {
		struct recon_row row;
		uint32_t pf;

		if (!recon_row(r, e.id, &row) && row.arg2) {
			pc = row.arg2;
			if (!disasm_func_at(v, fe.func, pc, &pf) &&
			    !disasm_query(v, th->pid, pf, &exe, &name, &addr) &&
			    !disasm_read(exe, name, &value, &code, &size, NULL) &&
			    (uint64_t)pc - (uint64_t)(addr - (int64_t)value) <
				    value + size) {
				pc -= addr - (int64_t)value;
				goto decode;
			}
			free(exe);
			free(name);
			free(code);
			exe = name = NULL;
			code = NULL;
		}
	}
	err = disasm_query(v, th->pid, fe.func, &exe, &name, &addr);
	if (err) {
		propel_cause(cause, err, "no binary recorded for %s",
			     recon_func_name(r, fe.func));
		goto out;
	}
	err = disasm_read(exe, name, &value, &code, &size, cause);
	if (err)
		goto out;
	if (pc)
		pc -= addr ? addr - (int64_t)value : 0;
decode:
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		err = propel_cause(cause, -EIO, "capstone unavailable");
		goto out;
	}
	n = cs_disasm(cs, code, size, value, 0, &insn);
	lines = calloc(n ? n : 1, sizeof(*lines));
	for (k = 0; lines && k < n; k++) {
		char buf[256];

		snprintf(buf, sizeof(buf), "%s%s 0x%llx:  %-7s %s",
			 k == 0 ? name : "", k == 0 ? ":" : "",
			 (unsigned long long)insn[k].address, insn[k].mnemonic,
			 insn[k].op_str);
		lines[k] = strdup(buf);
		if ((int64_t)insn[k].address == pc)
			*cur = (int)k;
	}
	if (n)
		cs_free(insn, n);
	cs_close(&cs);
	*out = lines;
	err = lines ? (int)n : -ENOMEM;
out:
	free(exe);
	free(name);
	free(code);
	return err;
}
