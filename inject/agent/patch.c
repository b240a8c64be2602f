/*
 * inject/agent/patch.c - deciding what to patch, and patching code that
 * other threads may be executing.  The code that runs instead is stub.c's.
 *
 * patch_function(f) decodes f once (fn_decode: its body, a .cold part, the
 * fragments it jumps into) and collects every way into it other than the
 * preceding instruction: branch targets, jump-table entries, addresses of
 * labels, C++ landing pads.  Then, for every
 *   call rel32 / call *mem / call *reg      -> a call stub   (SITE_CALL)
 *   jmp/jcc rel32 or jmp *got leaving f,     -> a tail stub   (SITE_TAIL)
 *   jmp * in a function with no jump table
 * it builds a stub and rewrites the site: the same jmp/jcc when it has 5
 * bytes or more; else a window (fn_window) -- the site and the straight-
 * line instructions before it (or, for a call, after it) that make 5 bytes,
 * none of them entered from elsewhere but the first -- becomes a jmp, the
 * other instructions moving into the stub.  Only where no window fits does
 * a site become an int3 (record only; under attach it is left alone).
 * patch_entry(f) hooks a callback's entry the same way (callback.c).
 *
 * Cross-modifying code (Intel SDM 8.1.3): no thread may execute a
 * half-written instruction.  Every multi-byte rewrite goes
 *   int3 at byte 0 -> sync all cores -> bytes 1..n-1 -> sync -> byte 0 -> sync
 * with membarrier(SYNC_CORE); a thread that meets the int3 meanwhile is sent
 * to the stub by patch_trap().  A window is written only when quiesce.c has
 * shown no thread inside it; one that had a thread inside is tried again on
 * a later call.  A thread alone in its process writes each site at once.
 * Writes go through /proc/self/mem, leaving page protections alone.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "inject/agent/budget.h"
#include "inject/agent/offsets.h"
#include "inject/agent/stub.h"

static csh cs;
static cs_insn *insn;
static struct ag_fd mem = { -1, 0, 0 }; /* /proc/self/mem */
static int sync_ok;
struct ag_site *ag_sites_all;
int ag_no_traps;
uint32_t ag_skipped; /* short sites left alone, or unsafe to patch */
#define MAX_SITES_PER_BATCH 4096
#define RESTORE_HELD_BATCH 64
uint32_t ag_nfuncs, ag_nsites;

/* ---- lock-free hash tables (insert under ag_lock, read anywhere) ---- */

#define HBITS FUNC_TAB_BITS
/* read by tramp.S too: the head of a chain, for a call that missed its
 * site's cache */
struct ag_func *ag_func_tab[1 << HBITS] __attribute__((visibility("hidden")));
static struct ag_site *site_tab[1 << HBITS];
struct ag_func **ag_funcs_by_id;
static uint32_t funcs_cap;

static inline unsigned hash_addr(uint64_t a)
{
	return (unsigned)((a * 0x9E3779B97F4A7C15ull) >> (64 - HBITS));
}

struct ag_func *func_find(uint64_t addr)
{
	struct ag_func *f =
		__atomic_load_n(&ag_func_tab[hash_addr(addr)], __ATOMIC_ACQUIRE);

	for (; f; f = f->hnext)
		if (f->addr == addr)
			return f;
	return NULL;
}

/* A new site, zeroed, its first cache line its own (struct ag_site). */
static struct ag_site *site_alloc(void)
{
	uint8_t *p = ag_alloc(sizeof(struct ag_site) + 48); /* 16-aligned */

	return (struct ag_site *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

struct ag_site *site_find(uint64_t addr)
{
	struct ag_site *s =
		__atomic_load_n(&site_tab[hash_addr(addr)], __ATOMIC_ACQUIRE);

	for (; s; s = s->hnext)
		if (s->addr == addr)
			return s;
	return NULL;
}

/* Name and classify a new callee.  Called with ag_lock held. */
/* A PLT entry or a system library's function, by its name: interposed
 * (slow.c), or known to take no callback (callback.c). */
static void func_classify_import(struct ag_func *f)
{
	f->intercept = intercept_kind(f->name);
	if (f->intercept && f->intercept != IC_SYSCALL)
		f->flags |= F_SLOW; /* syscall(): only some (hot.c) */
	else if (!f->intercept && !(f->flags & F_NOTRACE) &&
		 cb_takes_none(f->name))
		f->flags |= F_NOCB | (cb_pure(f->name) ? F_PURE : 0);
}

static void func_classify(struct ag_func *f)
{
	struct ag_module *m = module_of(f->addr);
	const struct ag_sym *sym;

	if (!m && module_scan() > 0)
		m = module_of(f->addr);
	f->mod = m;
	if (!m) {
		f->flags |= F_FOREIGN;
		return;
	}
	if (m->self)
		f->flags |= F_NOTRACE | F_SYSTEM;
	if (module_in_plt(m, f->addr)) {
		uint64_t got = 0;
		size_t left = 32;
		const uint8_t *code = (const uint8_t *)f->addr;
		uint64_t a = f->addr;

		/* the PLT entry jumps through its GOT slot: name it */
		while (cs_disasm_iter(cs, &code, &left, &a, insn)) {
			cs_x86_op *op = &insn->detail->x86.operands[0];

			if (insn->id == X86_INS_JMP && op->type == X86_OP_MEM &&
			    op->mem.base == X86_REG_RIP) {
				got = a + op->mem.disp;
				break;
			}
			if (insn->id == X86_INS_JMP || insn->id == X86_INS_RET)
				break;
		}
		f->name = got ? module_got_name(m, got) : NULL;
		f->flags |= F_PLT;
		func_classify_import(f);
		return;
	}
	if (m->system) {
		f->flags |= F_SYSTEM;
		sym = module_sym_at(m, f->addr);
		f->name = sym ? sym->name : NULL;
		func_classify_import(f);
	}
}

struct ag_func *func_get(uint64_t addr)
{
	struct ag_func *f = func_find(addr);
	unsigned h;

	if (f)
		return f;
	f = ag_alloc(sizeof(*f));
	f->addr = addr;
	f->id = ag_nfuncs;
	func_classify(f);
	directive_classify(f);
	if (ag_nfuncs == funcs_cap) {
		uint32_t ncap = funcs_cap ? funcs_cap * 2 : 4096;
		struct ag_func **n = ag_alloc(ncap * sizeof(*n));

		if (ag_funcs_by_id)
			memcpy(n, ag_funcs_by_id, funcs_cap * sizeof(*n));
		__atomic_store_n(&ag_funcs_by_id, n, __ATOMIC_RELEASE);
		funcs_cap = ncap;
	}
	ag_funcs_by_id[ag_nfuncs++] = f;
	map_func(f);
	h = hash_addr(addr);
	f->hnext = ag_func_tab[h];
	__atomic_store_n(&ag_func_tab[h], f, __ATOMIC_RELEASE);
	return f;
}

/*
 * A direct call may take its lean copy (stub.c) when everything the
 * trampolines' common case asks of the callee holds for good: it is
 * instrumented, not interposed (slow.c), and traced (or a system function
 * known to take no callback, as tramp.S FAST_CALLEE rules).  Until then,
 * and after a stop, the generic stub runs.
 */
static int sync_cores(void);

static int lean_ok_for(const struct ag_site *s, const struct ag_func *f)
{
	uint32_t fl;

	if (!s->lean || !f || f->intercept != IC_NONE)
		return 0;
	fl = __atomic_load_n(&f->flags, __ATOMIC_ACQUIRE);
	/* a pure function's lean way is one CALL record, one time for its
	 * entry and exit: not when every record is to be stamped */
	if (ag_stamp_every == 1 && s->kind == SITE_CALL && s->target &&
	    stub_leaf(f))
		return 0;
	/* a system function: pure, or a direct call's exact way (tramp.S) */
	if ((fl & F_PURE) ||
	    ((fl & F_NOCB) && s->kind == SITE_CALL && s->target == f))
		fl &= ~(uint32_t)(F_SYSTEM | F_PLT);
	return (fl & (F_READY | F_SLOW | F_SYSTEM | F_PLT | F_NOTRACE |
		      F_FOREIGN)) == F_READY;
}

static int lean_ok(const struct ag_site *s)
{
	return lean_ok_for(s, s->target);
}

/* The first callee an indirect call or jump reached, once it is ready,
 * is the one its lean way takes (one compare in the stub; any other goes
 * the generic way).  A jump back into its own function is no call. */
void patch_lean_indirect(struct ag_site *s, struct ag_func *f)
{
	if (!s->lean || s->target || s->lean_state)
		return;
	if (f->addr >= s->olo && f->addr < s->ohi) {
		s->lean_state = 2;
		return;
	}
	if (!(f->flags & F_READY))
		return; /* not yet: asked again at its next call */
	if (!lean_ok_for(s, f)) {
		s->lean_state = 2;
		return;
	}
	stub_lean_target(s, f);
	stub_lean(s, 1);
	s->lean_state = 1;
	sync_cores();
}

/* ---- code memory ---- */

static int sync_cores(void)
{
	if (sync_ok)
		return (int)syscall(SYS_membarrier,
				    MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	/* without membarrier, an mprotect round trip makes the kernel
	 * interrupt (and so serialize) every CPU running this mm */
	static char page[4096] __attribute__((aligned(4096)));
	mprotect(page, sizeof(page), PROT_READ);
	return mprotect(page, sizeof(page), PROT_READ | PROT_WRITE);
}

static int code_write(uint64_t addr, const void *buf, size_t n)
{
	/* mem.fd was checked by sites_write, once per batch */
	ssize_t w = mem.fd < 0 ? -1 : pwrite(mem.fd, buf, n, (off_t)addr);

	return w == (ssize_t)n ? 0 : -EFAULT;
}

int patch_init(void)
{
	static int done;

	/* after a fork, the parent's: the child needs its own */
	ag_fd_close(&mem);
	if (ag_fd_get(&mem, "/proc/self/mem", O_RDWR) < 0)
		return -errno;
	if (done)
		return 0;
	if (syscall(SYS_membarrier,
		    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
		sync_ok = 1;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	if (!insn)
		return -ENOMEM;
	done = 1;
	return 0;
}

/* ---- patching ---- */

static int site_make_bytes(struct ag_site *s, const uint8_t *ins)
{
	int32_t rel;
	int64_t d = (int64_t)((uint64_t)s->stub - (s->at + 5));
	const uint8_t *orig = module_code(s->owner->mod, s->at, s->plen);

	if (!orig)
		return -1;
	memcpy(s->orig, orig, s->plen);
	memcpy(s->new_bytes, orig, s->plen);
	if (s->trap) {
		s->new_bytes[0] = 0xcc;
		return 0;
	}
	if (s->plen == s->len && ins[0] == 0x0f && (ins[1] & 0xf0) == 0x80) {
		/* jcc rel32: the same jcc, to the stub */
		d = (int64_t)((uint64_t)s->stub - (s->addr + 6));
		if (d != (int32_t)d)
			return -1;
		rel = (int32_t)d;
		memcpy(s->new_bytes + 2, &rel, 4);
		return 0;
	}
	if (d != (int32_t)d)
		return -1;
	rel = (int32_t)d;
	s->new_bytes[0] = 0xe9;
	memcpy(s->new_bytes + 1, &rel, 4);
	for (int i = 5; i < s->plen; i++)
		s->new_bytes[i] = 0xcc;
	return 0;
}

/* Windows found unsafe to write (a thread inside, or no answer). */
static uint32_t sites_unsafe;

/* Sites by patch address, for the int3 of a window being written. */
static struct ag_site *win_tab[1 << 12];

static unsigned win_hash(uint64_t a)
{
	return (unsigned)((a * 0x9E3779B97F4A7C15ull) >> 52);
}

/*
 * 1 if another patched site's bytes overlap s's.  An entry hook takes a
 * call site at the entry along (entry_hook's `via`: its jump ends inside
 * the call's bytes, its stub goes on into the call's stub), and a window
 * made by an earlier decode may cover an instruction a later one (another
 * session's budget) would patch on its own.  Writing s then -- its
 * original bytes (the budget's patch_untrace) or its jump -- would cut
 * into the other site's jump: a callback hooked so crashed at its next
 * call once the budget untraced the function its entry calls
 * (tests/e2e/harm-untrace.sh).  s is left as it is; the other site's
 * stub runs its instruction.
 */
static int site_overlapped(const struct ag_site *s)
{
	const uint64_t reach = sizeof(s->orig) - 1;

	for (uint64_t a = s->at - reach; a < s->at + s->plen; a++)
		for (const struct ag_site *o =
			     __atomic_load_n(&win_tab[win_hash(a)], __ATOMIC_ACQUIRE);
		     o; o = o->wnext)
			if (o != s && o->at == a && o->patched &&
			    o->at + o->plen > s->at)
				return 1;
	return 0;
}

/*
 * The windows a thread was inside (or whose check failed: a thread that
 * did not answer on a loaded machine), asked again a few times over ~4 ms.
 * Their int3s stay meanwhile, so no thread enters one; a thread inside
 * straight-line code leaves it within microseconds unless it is off its
 * CPU.  Given up at once, the function's sites waited for its next call
 * (patch_function's retries), and the calls made inside this one were
 * lost: record of budget's hot kept 196,544 of 196,608 calls of mix, one
 * request's 64, in 1 fresh-clone run of ~10.
 */
static void quiesce_again(const struct quiesce_win *w, size_t n, uint8_t *bad)
{
	static struct quiesce_win w2[MAX_SITES_PER_BATCH];
	static uint8_t bad2[MAX_SITES_PER_BATCH];
	static uint32_t idx[MAX_SITES_PER_BATCH];
	static const long wait_us[] = { 50, 100, 200, 400, 800, 1000, 1000,
					1000 };

	for (size_t r = 0; r < sizeof(wait_us) / sizeof(wait_us[0]); r++) {
		struct timespec ts = { 0, wait_us[r] * 1000 };
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (bad[i]) {
				w2[m] = w[i];
				idx[m++] = (uint32_t)i;
			}
		if (!m)
			return;
		nanosleep(&ts, NULL);
		quiesce_check(w2, (int)m, bad2);
		for (size_t j = 0; j < m; j++)
			bad[idx[j]] = bad2[j];
	}
}

/*
 * Apply (or undo) a batch of sites with the int3 protocol.  A window (more
 * than one instruction) is written only once quiesce_check() has shown no
 * thread inside it; one that has a thread inside keeps its original bytes
 * (and its site is counted as not patched).
 */
static int sites_write(struct ag_site **v, size_t n, int restore)
{
	static const uint8_t int3 = 0xcc;
	static struct quiesce_win w[MAX_SITES_PER_BATCH];
	static uint8_t bad[MAX_SITES_PER_BATCH];
	size_t i;
	int err = 0, nw = 0;

	if (ag_fd_get(&mem, "/proc/self/mem", O_RDWR) < 0)
		return -EIO;
	/*
	 * Alone in the process (record's start, a single-threaded server),
	 * with signals blocked: nobody can see a half-written site, and a
	 * window cannot hold this thread (quiesce_check proves it on our own
	 * stack).  One write per site, no core syncs.
	 */
	if (quiesce_alone()) {
		for (i = 0; i < n && !restore; i++) {
			w[i].lo = v[i]->at;
			w[i].hi = v[i]->plen > v[i]->len ? v[i]->at + v[i]->plen
							  : v[i]->at + 1;
			nw += v[i]->plen > v[i]->len;
		}
		memset(bad, 0, n);
		if (nw)
			quiesce_self(w, (int)n, bad);
		for (i = 0; i < n; i++) {
			const uint8_t *b = restore ? v[i]->orig : v[i]->new_bytes;

			if (bad[i]) {
				sites_unsafe++;
				continue;
			}
			err |= code_write(v[i]->at, b, v[i]->plen);
			v[i]->patched = !restore;
		}
		sync_cores();
		return err ? -EFAULT : 0;
	}
	signals_trap_check();
	for (i = 0; i < n; i++)
		err |= code_write(v[i]->at, &int3, 1);
	sync_cores();
	memset(bad, 0, n);
	for (i = 0; i < n && !restore; i++)
		if (v[i]->plen > v[i]->len || v[i]->at != v[i]->addr)
			nw++;
	if (nw) {
		for (i = 0; i < n; i++) {
			w[i].lo = v[i]->at;
			w[i].hi = v[i]->plen > v[i]->len || v[i]->at != v[i]->addr
					  ? v[i]->at + v[i]->plen
					  : v[i]->at + 1;
		}
		quiesce_check(w, (int)n, bad);
		quiesce_again(w, n, bad);
		for (i = 0; i < n; i++) {
			if (!bad[i])
				continue;
			code_write(v[i]->at, v[i]->orig, 1);
			sites_unsafe++;
		}
		sync_cores();
	}
	for (i = 0; i < n; i++) {
		const uint8_t *b = restore ? v[i]->orig : v[i]->new_bytes;

		if (v[i]->plen > 1 && !bad[i])
			err |= code_write(v[i]->at + 1, b + 1, v[i]->plen - 1);
	}
	sync_cores();
	for (i = 0; i < n; i++) {
		const uint8_t *b = restore ? v[i]->orig : v[i]->new_bytes;

		if (bad[i])
			continue;
		err |= code_write(v[i]->at, b, 1);
		v[i]->patched = !restore;
	}
	sync_cores();
	return err ? -EFAULT : 0;
}

/*
 * Decoding a function.  fn_decode() reads every range of the function (its
 * body, a .cold part named by .symtab, and fragments it jumps into), and
 * keeps per instruction what fn_sites() needs: length, rip-relative operand,
 * whether it ends straight-line code, and whether it is a site.  It also
 * collects every place control can enter from elsewhere than the preceding
 * instruction: direct branch targets, jump-table entries that land inside,
 * and C++ landing pads.  No window may have one of those inside.
 */
#define MAX_INSNS (1 << 17)
#define MAX_TARGETS (1 << 16)
#define MAX_RANGES 10
#define MAX_TABLES 64

struct fn {
	struct ag_func *f;
	struct ag_module *m;
	uint64_t lo[MAX_RANGES], hi[MAX_RANGES];
	int nranges;
	struct pinsn *ins;
	size_t nins;
	uint64_t *tg;
	size_t ntg;
	uint64_t tables[MAX_TABLES];
	int ntables;
	int ijmp;      /* an indirect jump that is not a GOT tail call */
	int inner;     /* jump-table entries and code addresses taken inside */
	int no_window; /* targets unknown (an unreadable LSDA): no windows */
};

static struct pinsn fn_ins[MAX_INSNS];
static uint64_t fn_tg[MAX_TARGETS];

static int fn_inside(const struct fn *fn, uint64_t a)
{
	for (int i = 0; i < fn->nranges; i++)
		if (a >= fn->lo[i] && a < fn->hi[i])
			return 1;
	return 0;
}

static void fn_target(struct fn *fn, uint64_t a)
{
	if (fn->ntg < MAX_TARGETS)
		fn->tg[fn->ntg++] = a;
	else
		fn->no_window = 1;
}

static void fn_add_range(struct fn *fn, uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < fn->nranges; i++)
		if (fn->lo[i] == lo)
			return;
	if (fn->nranges == MAX_RANGES) {
		fn->no_window = 1;
		return;
	}
	fn->lo[fn->nranges] = lo;
	fn->hi[fn->nranges++] = hi;
}

/* A jump to t leaves the function: is t a fragment of it (.cold)? */
static int fn_fragment(struct fn *fn, uint64_t t)
{
	struct ag_module *tm = module_of(t);
	const struct ag_sym *ts = tm ? module_sym(tm, t) : NULL;

	if (!ts || !ts->frag || module_in_plt(tm, t))
		return 0;
	fn_add_range(fn, ts->addr, ts->addr + ts->size);
	return 1;
}

static void fn_decode_range(struct fn *fn, uint64_t lo, uint64_t hi)
{
	const uint8_t *code = module_code(fn->m, lo, hi - lo);
	size_t left = hi - lo;
	uint64_t a = lo;

	if (!code) {
		fn->no_window = 1;
		return;
	}
	while (left) {
		uint64_t at = a;
		struct pinsn *pi;
		cs_x86 *x;

		if (!cs_disasm_iter(cs, &code, &left, &a, insn)) {
			/* undecodable byte (data, padding): skip it */
			code++;
			left--;
			a++;
			continue;
		}
		if (fn->nins == MAX_INSNS) {
			fn->no_window = 1;
			return;
		}
		pi = &fn->ins[fn->nins++];
		memset(pi, 0, sizeof(*pi));
		pi->addr = at;
		pi->len = (uint8_t)insn->size;
		pi->kind = -1;
		x = &insn->detail->x86;
		for (int k = 0; k < x->op_count; k++) {
			cs_x86_op *op = &x->operands[k];

			if (op->type != X86_OP_MEM)
				continue;
			if (op->mem.base == X86_REG_RIP) {
				pi->disp_off = x->encoding.disp_offset;
				if (fn_inside(fn, a + op->mem.disp)) {
					/* a label's address (computed goto) */
					fn_target(fn, a + op->mem.disp);
					fn->inner++;
				} else if (fn->ntables < MAX_TABLES) {
					fn->tables[fn->ntables++] = a + op->mem.disp;
				}
			} else if (op->mem.base == X86_REG_INVALID &&
				   op->mem.index != X86_REG_INVALID &&
				   fn->ntables < MAX_TABLES) {
				fn->tables[fn->ntables++] = (uint64_t)op->mem.disp;
			}
		}
		/* movable: anything but calls, indirect jumps, traps and the
		 * rel8-only jumps (loop, jrcxz); relative jumps are re-encoded */
		if (cs_insn_group(cs, insn, CS_GRP_JUMP) &&
		    x->operands[0].type == X86_OP_IMM &&
		    insn->id != X86_INS_JRCXZ && insn->id != X86_INS_JECXZ &&
		    insn->id != X86_INS_JCXZ && insn->id != X86_INS_LOOP &&
		    insn->id != X86_INS_LOOPE && insn->id != X86_INS_LOOPNE) {
			pi->rel = insn->id == X86_INS_JMP ? REL_JMP : REL_JCC;
			pi->direct = (uint64_t)x->operands[0].imm;
			pi->stop = insn->id == X86_INS_JMP;
		} else if (cs_insn_group(cs, insn, CS_GRP_JUMP) ||
			   cs_insn_group(cs, insn, CS_GRP_CALL) ||
			   cs_insn_group(cs, insn, CS_GRP_INT) ||
			   cs_insn_group(cs, insn, CS_GRP_IRET) ||
			   insn->id == X86_INS_SYSCALL ||
			   insn->id == X86_INS_SYSENTER ||
			   insn->id == X86_INS_HLT || insn->id == X86_INS_UD2 ||
			   insn->id == X86_INS_INT3) {
			pi->flow = 1;
		} else if (cs_insn_group(cs, insn, CS_GRP_RET)) {
			pi->stop = 1;
		}
		if (insn->id == X86_INS_CALL) {
			pi->kind = SITE_CALL;
			if (x->operands[0].type == X86_OP_IMM) {
				pi->direct = (uint64_t)x->operands[0].imm;
				/* call next; pop (pc thunks) is not a call */
				if (pi->direct == a)
					pi->kind = -1;
			}
		} else if (cs_insn_group(cs, insn, CS_GRP_JUMP)) {
			cs_x86_op *op = &x->operands[0];

			if (op->type == X86_OP_IMM) {
				uint64_t t = (uint64_t)op->imm;
				struct ag_module *tm;

				if (fn_inside(fn, t) || fn_fragment(fn, t)) {
					fn_target(fn, t);
					continue;
				}
				tm = module_of(t);
				if (!tm || (!module_sym_at(tm, t) &&
					    !module_in_plt(tm, t)))
					continue;
				if (insn->id != X86_INS_JMP && insn->size != 6)
					continue; /* short jcc: leave it */
				pi->kind = SITE_TAIL;
				pi->direct = t;
			} else if (insn->id == X86_INS_JMP &&
				   op->type == X86_OP_MEM &&
				   op->mem.base == X86_REG_RIP &&
				   insn->size >= 6) {
				pi->kind = SITE_TAIL; /* jmp *got(%rip) */
			} else {
				fn->ijmp = 1;
				pi->ijmp = 1;
			}
		}
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Jump tables: entries (32-bit relative to the table, or absolute
 * addresses) that land inside the function are targets.  A table need
 * not be aligned (the compiler's are, but its start is a guess from a
 * lea): entries are read with memcpy, a plain mov on x86. */
static void fn_tables(struct fn *fn)
{
	for (int i = 0; i < fn->ntables; i++) {
		uint64_t t = fn->tables[i], k;

		for (k = 0; k < 4096 && module_readable(fn->m, t + 4 * k, 4); k++) {
			int32_t v;

			__builtin_memcpy(&v, (const void *)(t + 4 * k), 4);

			if (!fn_inside(fn, t + (int64_t)v))
				break;
			fn_target(fn, t + (int64_t)v);
			fn->inner++;
		}
		for (k = 0; k < 4096 && module_readable(fn->m, t + 8 * k, 8); k++) {
			uint64_t v;

			__builtin_memcpy(&v, (const void *)(t + 8 * k), 8);

			if (!fn_inside(fn, v))
				break;
			fn_target(fn, v);
			fn->inner++;
		}
	}
}

static void fn_decode(struct fn *fn, const struct ag_sym *fs,
		      const struct ag_sym *cold)
{
	fn->ins = fn_ins;
	fn->tg = fn_tg;
	fn_add_range(fn, fs->addr, fs->addr + fs->size);
	if (cold)
		fn_add_range(fn, cold->addr, cold->addr + cold->size);
	/* fragments found while decoding are decoded in turn */
	for (int r = 0; r < fn->nranges; r++)
		fn_decode_range(fn, fn->lo[r], fn->hi[r]);
	if (fn->ijmp)
		fn_tables(fn);
	/*
	 * Indirect jumps of a function that has no jump table and takes no
	 * label's address can only leave it: tail calls through a pointer
	 * (the stub still lets a jump back inside pass, unrecorded).
	 */
	for (size_t i = 0; fn->ijmp && !fn->inner && i < fn->nins; i++)
		if (fn->ins[i].ijmp)
			fn->ins[i].kind = SITE_TAIL;
	for (int r = 0; r < fn->nranges; r++) {
		const struct ag_fde *fde = ehframe_find(fn->m, fn->lo[r]);
		uint64_t pads[256];
		int np = fde ? ehframe_landing_pads(fn->m, fde, pads, 256) : 0;

		if (np < 0 || np > 256)
			fn->no_window = 1;
		for (int k = 0; k < np && k < 256; k++)
			fn_target(fn, pads[k]);
	}
	ag_sort(fn->tg, fn->ntg, sizeof(*fn->tg), u64_cmp);
}

static int fn_is_target(const struct fn *fn, uint64_t a)
{
	size_t lo = 0, hi = fn->ntg;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fn->tg[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < fn->ntg && fn->tg[lo] == a;
}

/* Can ins[i] be moved into a window (as other than its first)? */
static int fn_movable(const struct fn *fn, size_t i, int first)
{
	const struct pinsn *pi = &fn->ins[i];

	return !pi->flow && !pi->claimed && pi->kind < 0 &&
	       (first || !fn_is_target(fn, pi->addr));
}

/*
 * The window for a short site at ins[j]: the fewest neighbouring
 * instructions that make 5 bytes, contiguous, movable, none of them taken
 * by another window, and none but the first entered from elsewhere.
 * Instructions before the site are preferred; for a call, those after it
 * are the other choice (the callee then returns into the stub).  Sets
 * *first and *last (indexes), or returns -1.
 */
static int fn_window(const struct fn *fn, size_t j, size_t *first,
		     size_t *last)
{
	const size_t cap = sizeof(((struct ag_site *)0)->orig);
	uint64_t len = fn->ins[j].len;
	size_t i = j;

	if (fn->no_window || fn->ins[j].claimed)
		return -1;
	/* back */
	while (len < 5 && i > 0 && !fn_is_target(fn, fn->ins[i].addr) &&
	       fn->ins[i - 1].addr + fn->ins[i - 1].len == fn->ins[i].addr &&
	       fn_movable(fn, i - 1, 1) && len + fn->ins[i - 1].len <= cap) {
		i--;
		len += fn->ins[i].len;
	}
	if (len >= 5) {
		*first = i;
		*last = j;
		return 0;
	}
	if (fn->ins[j].kind != SITE_CALL)
		return -1;
	/* forward, from the call itself */
	len = fn->ins[j].len;
	i = j;
	while (len < 5) {
		const struct pinsn *nx;

		if (i + 1 >= fn->nins)
			return -1;
		nx = &fn->ins[i + 1];
		if (fn->ins[i].addr + fn->ins[i].len != nx->addr ||
		    !fn_movable(fn, i + 1, 0) || len + nx->len > cap)
			return -1;
		if (i > j && fn->ins[i].stop)
			return -1; /* nothing falls through a jmp or ret */
		i++;
		len += nx->len;
	}
	*first = j;
	*last = i;
	return 0;
}

/* Make the sites of a decoded function (the ones not made before). */
static void fn_sites(struct fn *fn, struct ag_site **v, size_t *n,
		     uint8_t *fde, size_t *fde_len, size_t cie_off,
		     size_t fde_cap)
{
	/* the windows of the sites an earlier decode made (another session's,
	 * or one cut short below) are taken: no new window may share them */
	for (size_t j = 0; j < fn->nins; j++) {
		const struct ag_site *s =
			fn->ins[j].kind < 0 ? NULL : site_find(fn->ins[j].addr);

		for (size_t k = j; s && k < fn->nins && fn->ins[k].addr >= s->at &&
				   fn->ins[k].addr < s->at + s->plen; k++)
			fn->ins[k].claimed = 1;
		for (size_t k = j; s && k-- > 0 && fn->ins[k].addr >= s->at &&
				   fn->ins[k].addr < s->at + s->plen;)
			fn->ins[k].claimed = 1;
	}
	for (size_t j = 0; j < fn->nins && *n < MAX_SITES_PER_BATCH; j++) {
		struct pinsn *pi = &fn->ins[j];
		struct ag_site *s;
		size_t w = j, last = j;
		int trap = 0;

		if (pi->kind < 0)
			continue;
		/* the cost budget: a call (or a direct tail call: the
		 * callee returns into the caller's stub, as a callee of
		 * an untraced call does) left untraced (budget.c) */
		if ((pi->kind == SITE_CALL || pi->kind == SITE_TAIL) &&
		    pi->direct &&
		    budget_skip_call(fn->f, func_get(pi->direct)))
			continue;
		s = site_find(pi->addr);
		if (s) {
			if (!s->patched && !site_overlapped(s))
				v[(*n)++] = s;
			continue;
		}
		if (*fde_len + 512 > fde_cap)
			break; /* the rest on the function's next patch */
		if (pi->len < 5 && fn_window(fn, j, &w, &last) < 0) {
			/* no room: an int3 (record), or left alone: under
			 * attach a thread stopped at a trap when the agent is
			 * switched off could not be told from the program's */
			if (ag_no_traps) {
				ag_skipped++;
				continue;
			}
			trap = 1;
			w = last = j;
		}
		const uint8_t *ib = module_code(fn->m, pi->addr, pi->len);

		if (!ib)
			continue;
		s = site_alloc();
		s->addr = pi->addr;
		s->len = pi->len;
		s->ret = pi->addr + pi->len;
		s->at = fn->ins[w].addr;
		s->plen = (uint8_t)(fn->ins[last].addr + fn->ins[last].len - s->at);
		s->kind = (uint8_t)pi->kind;
		s->trap = (uint8_t)trap;
		s->owner = fn->f;
		if (pi->ijmp) {
			s->olo = fn->lo[0];
			s->ohi = fn->hi[0];
		}
		/* func_get() may decode a PLT entry with the shared capstone
		 * buffer: the decoded instructions are kept in fn->ins */
		s->target = pi->direct ? func_get(pi->direct) : NULL;
		s->id = ag_nsites++;
		if (stub_build(s, ib, pi->direct, &fn->ins[w], (int)(j - w),
			       (int)(last - j), fde, fde_len, cie_off) < 0 ||
		    site_make_bytes(s, ib) < 0) {
			ag_nsites--;
			ag_skipped++;
			continue;
		}
		for (size_t k = w; k <= last; k++)
			fn->ins[k].claimed = 1;
		if (s->lean && s->target) { /* not patched in: no thread runs it */
			s->cnext = s->target->callers;
			s->target->callers = s;
			if (lean_ok(s))
				stub_lean(s, 1);
		}
		map_site(s);
		s->hnext = site_tab[hash_addr(s->addr)];
		__atomic_store_n(&site_tab[hash_addr(s->addr)], s, __ATOMIC_RELEASE);
		s->wnext = win_tab[win_hash(s->at)];
		__atomic_store_n(&win_tab[win_hash(s->at)], s, __ATOMIC_RELEASE);
		s->next_all = ag_sites_all;
		ag_sites_all = s;
		v[(*n)++] = s;
	}
}

static uint8_t fde_scratch[1u << 20];

int patch_function(struct ag_func *f)
{
	static struct ag_site *v[MAX_SITES_PER_BATCH];
	static struct fn fn;
	struct ag_module *m = f->mod;
	const struct ag_sym *fs, *cold = NULL;
	uint8_t *fde;
	size_t n = 0, fde_len, cie_len;
	uint32_t unsafe;
	int err;

	if (f->flags & F_READY)
		return 0;
	if (!m || m->system || m->self || !m->file)
		goto done;
	fs = module_sym(m, f->addr);
	if (!fs || fs->frag)
		goto done;
	if (fs->cold >= 0)
		cold = &m->syms[fs->cold];
	memset(&fn, 0, sizeof(fn));
	fn.f = f;
	fn.m = m;
	fn_decode(&fn, fs, cold);
	/* one .eh_frame blob per function: CIE, FDEs, terminator */
	fde = fde_scratch;
	cie_len = stub_cie(fde);
	fde_len = 0;
	fn_sites(&fn, v, &n, fde + cie_len, &fde_len, cie_len,
		 sizeof(fde_scratch) - cie_len - 8);
	if (fde_len) {
		uint8_t *blob = ag_alloc(cie_len + fde_len + 8);

		memcpy(blob, fde, cie_len + fde_len);
		stub_register(blob);
	}
	unsafe = sites_unsafe;
	err = n ? sites_write(v, n, 0) : 0;
	if (err)
		ag_warn("cannot patch %s: %s", *fs->name ? fs->name : "a function",
			strerror(-err));
	if (sites_unsafe != unsafe) {
		/* a thread was inside a window, or did not answer (a loaded
		 * machine): not ready, so its next call tries again */
		if (++f->retries < 16)
			return 0;
		ag_skipped += sites_unsafe - unsafe;
	}
done:
	patch_ready(f);
	return 0;
}

void patch_ready(struct ag_func *f)
{
	int n = 0;

	__atomic_or_fetch(&f->flags, F_READY, __ATOMIC_RELEASE);
	/* its direct callers may now skip the trampolines */
	for (struct ag_site *c = f->callers; c; c = c->cnext)
		if (lean_ok(c)) {
			stub_lean(c, 1);
			n++;
		}
	if (n)
		sync_cores();
}

/*
 * Hook f's entry: its first instructions (5 bytes or more, straight-line,
 * none of them entered from elsewhere -- the entry itself included, since
 * a jump back to it would be taken for a call) move into an entry stub.
 * An entry that overlaps a site's window, or cannot be proved free of
 * threads, is left alone.
 */
static int entry_hook(struct ag_func *f)
{
	static struct fn fn;
	static uint8_t fde[1024];
	const size_t cap = sizeof(((struct ag_site *)0)->orig);
	struct ag_module *m = f->mod;
	const struct ag_sym *fs, *cold = NULL;
	struct ag_site *s, *via = NULL;
	size_t i, len = 0, fde_len = 0, cie_len;

	__atomic_or_fetch(&f->flags, F_HOOKED, __ATOMIC_RELEASE);
	/* hooked in an earlier session (restored since): the same hook */
	for (s = win_tab[win_hash(f->addr)]; s; s = s->wnext)
		if (s->at == f->addr && s->kind == SITE_ENTRY && s->owner == f)
			return s->patched ? 0 : sites_write(&s, 1, 0);
	fs = module_sym_at(m, f->addr);
	if (!fs || fs->frag)
		return 0;
	if (fs->cold >= 0)
		cold = &m->syms[fs->cold];
	memset(&fn, 0, sizeof(fn));
	fn.f = f;
	fn.m = m;
	fn_decode(&fn, fs, cold);
	if (fn.no_window || !fn.nins || fn.ins[0].addr != f->addr ||
	    fn_is_target(&fn, f->addr))
		goto skip;
	for (i = 0; len < 5; i++) {
		const struct pinsn *pi = &fn.ins[i];

		/* a short call or tail jump's window that begins at the entry
		 * (it took the entry's instructions along): the same bytes,
		 * and the stub goes on into that site's stub */
		for (struct ag_site *o = i ? NULL : win_tab[win_hash(f->addr)];
		     o && !via; o = o->wnext)
			if (o->at == f->addr && o->kind != SITE_ENTRY &&
			    o->stub && o->plen >= 5 && o->plen <= cap)
				via = o;
		if (via) {
			len = via->plen;
			break;
		}

		/* a call site, or a direct jmp's tail site of its own 5
		 * bytes (crtstuff's frame_dummy is endbr64; jmp), patched on
		 * its own at its own address: the entry's bytes end with its
		 * window, and the stub goes on into the site's stub */
		if (i < fn.nins &&
		    (pi->kind == SITE_CALL ||
		     (pi->kind == SITE_TAIL && pi->rel == REL_JMP &&
		      pi->direct && pi->len == 5 &&
		      (via = site_find(pi->addr)) && via->plen == 5)) &&
		    (via = site_find(pi->addr)) && via->at == pi->addr &&
		    via->stub && (!i || !fn_is_target(&fn, pi->addr)) &&
		    (!i || (pi->addr == fn.ins[i - 1].addr + fn.ins[i - 1].len &&
			    !fn.ins[i - 1].stop)) &&
		    via->at + via->plen - f->addr <= cap) {
			len = via->at + via->plen - f->addr;
			break;
		}
		via = NULL;
		if (i == fn.nins || !fn_movable(&fn, i, i == 0) ||
		    (i && (pi->addr != fn.ins[i - 1].addr + fn.ins[i - 1].len ||
			   fn.ins[i - 1].stop)) ||
		    len + pi->len > cap)
			goto skip;
		/* a site's window begins here: it owns these bytes */
		for (struct ag_site *o = win_tab[win_hash(pi->addr)]; o; o = o->wnext)
			if (o->at == pi->addr)
				goto skip;
		len += pi->len;
	}
	s = site_alloc();
	s->addr = s->at = f->addr;
	s->ret = f->addr;
	s->plen = (uint8_t)len;
	s->len = 0; /* several instructions: a window */
	s->kind = SITE_ENTRY;
	s->owner = f;
	s->id = PROPEL_SITE_NONE;
	cie_len = stub_cie(fde);
	s->stub = stub_entry(s, fn.ins, (int)i, via, fde + cie_len, &fde_len,
			      cie_len);
	if (!s->stub || site_make_bytes(s, s->orig) < 0)
		goto skip;
	{
		uint8_t *blob = ag_alloc(cie_len + fde_len + 8);

		memcpy(blob, fde, cie_len + fde_len);
		stub_register(blob);
	}
	s->wnext = win_tab[win_hash(s->at)];
	__atomic_store_n(&win_tab[win_hash(s->at)], s, __ATOMIC_RELEASE);
	s->next_all = ag_sites_all;
	ag_sites_all = s;
	return sites_write(&s, 1, 0);
skip:
	ag_skipped++;
	return 0;
}

int patch_entry(struct ag_func *f)
{
	struct ag_module *m = f->mod;

	if (f->flags & (F_HOOKED | F_PLT | F_SYSTEM | F_FOREIGN | F_NOTRACE) ||
	    !m || m->system || m->self || !m->file)
		return 0;
	return entry_hook(f);
}

/* The same for a function of a system library, whose calls from
 * untraced code the agent wants to see (comm.c): tramp_fentry tells them
 * apart by the module (callback.c). */
int patch_entry_system(struct ag_func *f)
{
	struct ag_module *m = f->mod;

	if (f->flags & (F_HOOKED | F_PLT | F_FOREIGN | F_NOTRACE) || !m ||
	    !m->system || m->self || !m->file)
		return 0;
	return entry_hook(f);
}

/* The cost budget untraces f (budget.c): each of its direct call and tail
 * call sites back to its original bytes, by the same int3 protocol as any
 * patch.  A direct call (jmp, jcc) is one instruction (5 or 6 bytes, no
 * window): no thread can be inside it.  Its stub stays: a thread inside
 * f returns through it. */
int patch_untrace(struct ag_func *f)
{
	static struct ag_site *v[MAX_SITES_PER_BATCH];
	size_t n = 0;

	for (struct ag_site *s = f->callers; s && n < MAX_SITES_PER_BATCH;
	     s = s->cnext)
		if (s->patched &&
		    (s->kind == SITE_CALL || s->kind == SITE_TAIL) &&
		    s->target == f &&
		    !s->trap && s->at == s->addr && s->plen == s->len &&
		    !site_overlapped(s))
			v[n++] = s;
	if (n && sites_write(v, n, 1) < 0)
		return -1;
	return (int)n;
}

int patch_restore_all(int (*held)(void), int *cut)
{
	static struct ag_site *v[MAX_SITES_PER_BATCH];
	struct ag_site *s;
	size_t n = 0;
	int count = 0;

	*cut = 0;
	for (s = ag_sites_all; s; s = s->next_all) {
		__atomic_store_n(&s->fast, 0, __ATOMIC_RELAXED);
		for (int i = 0; i < 8; i++)
			__atomic_store_n(&s->pic[i], 0, __ATOMIC_RELAXED);
		stub_lean(s, 0); /* the callee is made ready again first */
		if (s->lean && !s->target)
			s->lean_state = 0;
		if (!s->patched)
			continue;
		v[n++] = s;
		count++;
		/* looked at often when held (a batch is ~0.3 ms of writes and
		 * core syncs): the threads let go mid-batch meet at most this
		 * many sites half-way */
		if (n == (held ? RESTORE_HELD_BATCH : MAX_SITES_PER_BATCH)) {
			if (held && !held()) {
				*cut = 1;
				return count - (int)n;
			}
			sites_write(v, n, 1);
			n = 0;
		}
	}
	if (n && held && !held()) {
		*cut = 1;
		return count - (int)n;
	}
	if (n)
		sites_write(v, n, 1);
	for (uint32_t i = 0; i < ag_nfuncs; i++)
		__atomic_and_fetch(&ag_funcs_by_id[i]->flags,
				   ~(uint32_t)(F_READY | F_HOOKED), __ATOMIC_RELEASE);
	cb_reset();
	return count;
}

/* SIGTRAP: one of our int3s (a short site, or a site being rewritten). */
int patch_trap(ucontext_t *uc)
{
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
	struct ag_site *s =
		__atomic_load_n(&win_tab[win_hash(rip)], __ATOMIC_ACQUIRE);

	for (; s; s = s->wnext)
		if (s->at == rip)
			break;
	if (!s)
		return 0;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)s->stub;
	return 1;
}
