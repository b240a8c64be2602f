/*
 * inject/agent/budget.c - the agent's cost budget (issue 34, item 1): trace
 * what matters, and say what was left out.  On by default for `propel
 * attach`; `record` keeps every call unless asked (--budget).
 *
 * Two rules; the static one on direct call and tail call sites only, the
 * dynamic one on indirect call sites too (F_QUIET, below):
 *
 * Static (LLVM XRay's: functions under -fxray-instruction-threshold=200
 * instructions without loops are not instrumented).  When patch.c makes
 * the sites of a caller (fn_sites), a direct call (or jmp) to a function
 * of a traced module that is a leaf -- no call, no jump out of it (a tail
 * call), no indirect jump, no loop (a cycle in its control flow, as
 * XRay's LLVM loop info sees one; a backward jump to a shared exit is
 * none) and no rep-prefixed string instruction (a loop) -- of fewer than
 * leaf_insns instructions is left alone (budget_skip_call).  Only leaves:
 * an unpatched call into a function that calls others would stop the
 * instrumentation from propagating below it.  `--leaf-insns N` sets the
 * threshold (0: no static rule).
 *
 * Dynamic (VAIF's economy: instrument where the time is).  Every
 * BUDGET_TICK_MS the lease thread (agent.c, which never runs the program's
 * code) calls budget_tick: for each traced thread whose ring committed a
 * sub-buffer since the last tick, the newest committed sub-buffer (32,768
 * records, read through /proc/self/mem so that a ring unmapped meanwhile
 * by its exiting thread gives an error, never a fault) is a sample of
 * that thread's calls.  Its duration is exact (share/ring.h sub_tsc);
 * a call's duration is estimated from the sampled stamps (share/record.h:
 * one record in 64 carries its own rdtsc) as (records inside it + 1) x the
 * time per record of its stamp run; runs slower than BUDGET_BLOCKED_NS
 * per record (a blocking call, a preemption) say nothing about short
 * calls and are left out of the means.  The agent's estimated share of the
 * thread's time is calls x BUDGET_CALL_NS / its time on the CPU in the
 * sub-buffer (the runs that neither blocked nor were preempted: the same
 * decisions on a loaded machine as on an idle one); rates below are per
 * second of that time too.  While it exceeds
 * --budget PCT (default 5), functions are untraced in two tiers, each
 * most frequent first.  Every candidate (a) fires at least
 * BUDGET_RATE_MIN times a second on the thread, (b) with a mean under
 * BUDGET_DUR_NS, and (c) records nothing inside in most of its calls (a
 * leaf of the trace: the call tree keeps its shape, and the skeleton --
 * the ancestors of the interposed calls (recv, writev, open...) and of
 * every function kept -- stays, having traced calls inside) and sent or
 * received in none of them (a function that sends in half its calls and
 * only buffers in the others -- nginx's ngx_http_write_filter, twice a
 * request -- is on the request's path however the sample falls; by the
 * majority alone it was untraced in 1 sample of ~30).  Tier 1:
 * (d) called more than BUDGET_MEDIAN_X times as often as the median
 * function of the sample: the helpers a request runs many times
 * (ngx_palloc, memcpy).  Tier 2, only while tier 1 left the share over
 * the budget: the functions (d) keeps (a request runs them once or
 * twice) that (e) have no loop of their own (XRay's loop criterion at
 * any size, calls allowed: bounded(), BUDGET_BOUNDED_INSNS at most).
 * Such a function calls only untraced functions, each short by the same
 * rules, so its time is bounded by its size and theirs, the same in every
 * request: VAIF instruments where requests' latency varies, and a call of
 * constant time explains none of it, while a function with a loop (a
 * parser walking the request: ngx_http_parse_request_line; a filter
 * walking its chain: ngx_http_write_filter) takes the time its input asks
 * for and stays.  A function untraced leaves its caller a leaf of the
 * trace, judged at the next tick by the same rules: the trace shrinks
 * toward its skeleton while the estimate stays over the budget.  So the
 * budget is a bound the agent works toward, not a guarantee: what is left
 * when (a)-(e) exclude the rest is kept.  Each
 * untraced function: each of its direct call and tail call sites gets its
 * original bytes back (patch_untrace: the int3 protocol of any patch, a
 * direct site is one instruction, so no thread can be inside it; a
 * thread already inside the callee returns through the stub, which stays,
 * and its exit is recorded).  Functions the agent interposes (send, recv,
 * fork, exec...) or that a mapping directive names are never untraced.
 * Its calls through an indirect call site (nginx's phase checkers, filter
 * chains, variable getters: most of a request's calls) stop recording too:
 * it gets F_QUIET, which the indirect site's lean enter (tramp.S
 * LEAN_ENTER ind) looks up by the callee's id and, when set, sends the
 * stub to call the callee as is, no record, no shadow entry (an indirect
 * site's lean way only: a callee past its PIC table, an indirect tail call,
 * takes the generic stub, and is still recorded).
 *
 * Each decision is one map line (share/ring.h), read by engine/ingest-map.c
 * into the session's `untraced` table and shown by `propel replay`:
 *   B <funcid> leaf <ns> <insns>                 static rule
 *   B <funcid> rate <ns> <calls/s> <mean ns> <sites>   dynamic rule (both
 *                                                      tiers)
 *   U <caller funcid> <funcid>    a caller whose calls of it are left out
 * (<ns>: when decided, since the agent started in the process).  `--all` patches everything.
 *
 * Called: budget_start (agent.c start_common, ag_lock held, threads held);
 * budget_skip_call (patch.c fn_sites, ag_lock held); budget_tick (the lease
 * thread, every signal blocked; takes ag_lock).
 */
#include <capstone/capstone.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/agent/adaptive.h"
#include "inject/agent/agent.h"
#include "inject/agent/budget.h"

#define BUDGET_CALL_NS 30      /* estimated agent cost of one traced call */
#define BUDGET_RATE_MIN 1000   /* calls/s on a thread, at least */
#define BUDGET_DUR_NS 1000     /* mean duration, under */
#define BUDGET_BLOCKED_NS 5000 /* per record: a run that blocked */
#define BUDGET_SUB_MAX (1u << 16) /* records per sample, at most */
#define BUDGET_MEDIAN_X 2     /* calls, more than this x the median */
#define BUDGET_BOUNDED_INSNS 4096 /* the third tier's loop search, at most */
#define BUDGET_HBITS 14

static struct {
	int on;
	uint32_t pct;
	uint32_t leaf_insns;
	uint64_t t0; /* ns, the session's start */
} cfg;

static csh bcs;
static cs_insn *bins;
static struct ag_fd mem = { -1, 0, 0 };

/* ---- configuration ---- */

void budget_start(const char *dir, uint32_t flags)
{
	char path[700], buf[128];
	unsigned pct = BUDGET_PCT_DEFAULT, leaf = BUDGET_LEAF_DEFAULT;
	int fd;
	ssize_t n;

	cfg.on = !!(flags & PROPEL_START_BUDGET);
	cfg.t0 = ag_mono_ns();
	/* a new session decides again (an earlier one may have had other
	 * options) */
	for (uint32_t i = 0; i < ag_nfuncs; i++)
		__atomic_and_fetch(&ag_funcs_by_id[i]->flags,
				   ~(uint32_t)(F_UNTRACED | F_BUDGETED |
					       F_QUIET),
				   __ATOMIC_RELEASE);
	/* each thread gets a new ring, its commits counted from 0 */
	for (struct athread *t = ag_threads; t; t = t->next)
		t->budget_seen = 0;
	if (!cfg.on)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_BUDGET_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		if (sscanf(buf, "%u %u", &pct, &leaf) < 2) {
			pct = BUDGET_PCT_DEFAULT;
			leaf = BUDGET_LEAF_DEFAULT;
		}
	}
	cfg.pct = pct;
	cfg.leaf_insns = leaf;
	if (!bcs) {
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &bcs) != CS_ERR_OK) {
			bcs = 0;
			cfg.leaf_insns = 0;
			return;
		}
		cs_option(bcs, CS_OPT_DETAIL, CS_OPT_ON);
		bins = cs_malloc(bcs);
		if (!bins)
			cfg.leaf_insns = 0;
	}
}

/* ---- the static rule ---- */

/* The instructions of the body being scanned: each one's address and the
 * index of its jump's target inside the body (-1: none, or outside), and
 * whether control can fall through to the next one. */
static struct {
	uint64_t at;
	int32_t to;
	uint8_t falls;
	uint8_t seen; /* the cycle search: 0 new, 1 on the path, 2 done */
} ins[BUDGET_BOUNDED_INSNS];

static int32_t ins_find(uint32_t n, uint64_t a)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (ins[mid].at < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ins[lo].at == a ? (int32_t)lo : -1;
}

/* Whether the control flow of the n instructions has a cycle (a loop:
 * XRay asks LLVM's loop info the same question).  A backward jump alone
 * is not one: compilers place a rare block after the function's end and
 * jump back to the common exit.  Depth first over the instructions, each
 * with at most two successors (the next one, the jump's target). */
static int has_cycle(uint32_t n)
{
	static uint32_t path[BUDGET_BOUNDED_INSNS];
	static uint8_t edge[BUDGET_BOUNDED_INSNS]; /* successors tried */

	for (uint32_t i = 0; i < n; i++)
		ins[i].seen = 0;
	for (uint32_t r = 0; r < n; r++) {
		uint32_t d = 0;

		if (ins[r].seen)
			continue;
		path[d] = r;
		edge[d++] = 0;
		ins[r].seen = 1;
		while (d) {
			uint32_t v = path[d - 1];
			int32_t w = -1;

			if (edge[d - 1] == 0) {
				edge[d - 1] = 1;
				if (ins[v].falls && v + 1 < n)
					w = (int32_t)v + 1;
			}
			if (w < 0 && edge[d - 1] == 1) {
				edge[d - 1] = 2;
				w = ins[v].to;
			}
			if (w < 0) {
				if (edge[d - 1] == 2) {
					ins[v].seen = 2;
					d--;
				}
				continue;
			}
			if (ins[w].seen == 1)
				return 1;
			if (!ins[w].seen) {
				ins[w].seen = 1;
				path[d] = (uint32_t)w;
				edge[d++] = 0;
			}
		}
	}
	return 0;
}

/* Instructions of f's body if it has no loop (no cycle in its control
 * flow, no rep-prefixed string instruction, no indirect jump) and fewer
 * than max of them, else 0.  calls: whether it may call (or tail-call)
 * other functions; a leaf (calls 0) does neither. */
static uint32_t body_scan(const struct ag_func *f, uint32_t max, int calls)
{
	struct ag_module *m = f->mod;
	const struct ag_sym *s;
	const uint8_t *code;
	uint64_t a, lo, hi;
	size_t left;
	uint32_t n = 0;

	if (!max || !bins || !m || m->system || m->self || !m->file ||
	    f->intercept != IC_NONE ||
	    (f->flags & (F_PLT | F_SYSTEM | F_FOREIGN | F_NOTRACE | F_SLOW |
			 F_HOOKED)))
		return 0;
	if (max > BUDGET_BOUNDED_INSNS)
		max = BUDGET_BOUNDED_INSNS;
	s = module_sym_at(m, f->addr);
	if (!s || s->addr != f->addr || s->frag || s->cold >= 0 || !s->size ||
	    s->size > 16ull * max)
		return 0;
	lo = s->addr;
	hi = s->addr + s->size;
	code = module_code(m, lo, s->size);
	if (!code)
		return 0;
	left = s->size;
	a = lo;
	while (left) {
		cs_x86 *x;

		if (n >= max - 1)
			return 0;
		ins[n].at = a;
		ins[n].to = -1;
		ins[n].falls = 1;
		if (!cs_disasm_iter(bcs, &code, &left, &a, bins))
			return 0;
		x = &bins->detail->x86;
		if ((!calls && cs_insn_group(bcs, bins, CS_GRP_CALL)) ||
		    cs_insn_group(bcs, bins, CS_GRP_INT) ||
		    cs_insn_group(bcs, bins, CS_GRP_IRET) ||
		    bins->id == X86_INS_SYSCALL || bins->id == X86_INS_SYSENTER)
			return 0;
		if (x->prefix[0] == X86_PREFIX_REP ||
		    x->prefix[0] == X86_PREFIX_REPNE)
			return 0; /* rep movs/stos/cmps/scas: a loop */
		if (cs_insn_group(bcs, bins, CS_GRP_RET))
			ins[n].falls = 0;
		if (cs_insn_group(bcs, bins, CS_GRP_JUMP)) {
			uint64_t t;

			if (x->op_count < 1 || x->operands[0].type != X86_OP_IMM)
				return 0; /* a jump table or a tail call */
			t = (uint64_t)x->operands[0].imm;
			if ((t < lo || t >= hi) && !calls)
				return 0; /* a tail call */
			if (bins->id == X86_INS_JMP)
				ins[n].falls = 0;
			/* the target's index, once every one is known */
			ins[n].to = t >= lo && t < hi ? -2 - (int32_t)(t - lo) : -1;
		}
		n++;
	}
	for (uint32_t i = 0; i < n; i++)
		if (ins[i].to <= -2) {
			ins[i].to = ins_find(n, lo + (uint64_t)(-2 - ins[i].to));
			if (ins[i].to < 0)
				return 0; /* into an instruction: not ours to read */
		}
	return has_cycle(n) ? 0 : n;
}

/* Instructions of f if it is a loop-free leaf under the threshold, else
 * 0. */
static uint32_t leaf_small(const struct ag_func *f)
{
	return body_scan(f, cfg.leaf_insns, 0);
}

/* Whether f has no loop of its own (the third tier; cached in its flags). */
static int bounded(struct ag_func *f)
{
	uint32_t fl = __atomic_load_n(&f->flags, __ATOMIC_ACQUIRE);

	if (!(fl & F_BOUNDCHK))
		fl = __atomic_or_fetch(&f->flags,
				       F_BOUNDCHK |
					       (body_scan(f, BUDGET_BOUNDED_INSNS, 1)
							? F_BOUNDED
							: 0),
				       __ATOMIC_RELEASE);
	return !!(fl & F_BOUNDED);
}

int budget_skip_call(struct ag_func *owner, struct ag_func *f)
{
	uint32_t fl, n;

	if (adaptive_skip_call(owner, f))
		return 1; /* below the adaptive frontier (adaptive.c) */
	if (!cfg.on || !f)
		return 0;
	fl = __atomic_load_n(&f->flags, __ATOMIC_ACQUIRE);
	if (!(fl & F_BUDGETED)) {
		n = leaf_small(f);
		fl = __atomic_or_fetch(&f->flags,
				       F_BUDGETED | (n ? F_UNTRACED : 0),
				       __ATOMIC_RELEASE);
		if (n)
			map_line("B %u leaf %llu %u", f->id,
				 (unsigned long long)(ag_mono_ns() - cfg.t0),
				 n);
	}
	if (!(fl & F_UNTRACED))
		return 0;
	map_line("U %u %u", owner->id, f->id);
	return 1;
}

/* ---- the dynamic rule ---- */

struct fstat {
	uint32_t calls, timed;
	uint64_t dur_ns; /* of the timed calls */
	uint32_t empty;  /* calls that recorded nothing inside */
	uint32_t comm;   /* calls that sent or received inside */
};

static struct fstat *fst;    /* by function id */
static uint32_t fst_cap;
static uint32_t touched[1u << BUDGET_HBITS];
static uint32_t ntouched;
static struct propel_rec sub[BUDGET_SUB_MAX];
static uint32_t tau[BUDGET_SUB_MAX]; /* ns per record of each one's run */
static struct {
	uint32_t func, at;
	uint32_t comm; /* a send or receive inside it so far */
} stk[1024];

static struct fstat *fstat_of(uint32_t id)
{
	if (id >= ag_nfuncs)
		return NULL;
	if (id >= fst_cap) {
		uint32_t ncap = ag_nfuncs + 4096;
		struct fstat *n = ag_alloc(ncap * sizeof(*n));

		if (!n)
			return NULL;
		if (fst)
			memcpy(n, fst, fst_cap * sizeof(*n));
		fst = n; /* the old one is never freed: ag_alloc */
		fst_cap = ncap;
	}
	if (!fst[id].calls && ntouched < (1u << BUDGET_HBITS))
		touched[ntouched++] = id;
	else if (!fst[id].calls)
		return NULL;
	return &fst[id];
}

static void fstat_call(uint32_t id, uint32_t inside, uint32_t t,
		       uint32_t comm)
{
	struct fstat *s = fstat_of(id);

	if (!s)
		return;
	s->calls++;
	s->empty += !inside;
	s->comm += !!comm;
	if (t && t <= BUDGET_BLOCKED_NS) {
		s->timed++;
		s->dur_ns += (uint64_t)(inside + 1) * t;
	}
}

/* The time per record of each stamp run (records sharing a tsc), from
 * the next run's stamp; the last run's from the sub-buffer's end.  Returns
 * the thread's time on the CPU in the sub-buffer: its runs but those that
 * blocked or were preempted (over BUDGET_BLOCKED_NS a record). */
static double runs_time(uint32_t n, uint64_t end_tsc, double ns_per_tick)
{
	double busy = 0;
	uint32_t i = 0;

	while (i < n) {
		uint64_t t = sub[i].w0 >> 4, nx = end_tsc;
		uint32_t j = i + 1, v;

		while (j < n && (sub[j].w0 >> 4) == t)
			j++;
		if (j < n)
			nx = sub[j].w0 >> 4;
		v = nx > t ? (uint32_t)((double)(nx - t) * ns_per_tick / (j - i))
			   : 0;
		if (v <= BUDGET_BLOCKED_NS)
			busy += (double)v * (j - i);
		for (; i < j; i++)
			tau[i] = v ? v : 1;
	}
	return busy;
}

/* The calls of one sub-buffer, into fst; how many. */
static uint64_t sub_scan(uint32_t n)
{
	uint32_t depth = 0;
	uint64_t calls = 0;

	for (uint32_t i = 0; i < n; i++) {
		unsigned type = (unsigned)(sub[i].w0 & 0xf);

		if (type == PROPEL_REC_CALL) {
			fstat_call(sub[i].a, 0, tau[i], 0);
			calls++;
		} else if (type == PROPEL_REC_SEND ||
			   type == PROPEL_REC_RECV) {
			if (depth)
				stk[depth - 1].comm = 1;
		} else if (type == PROPEL_REC_ENTRY) {
			calls++;
			if (depth < sizeof(stk) / sizeof(stk[0])) {
				stk[depth].func = sub[i].a;
				stk[depth].comm = 0;
				stk[depth++].at = i;
			} else {
				fstat_call(sub[i].a, 1, 0, 0); /* unknown inside */
			}
		} else if (type == PROPEL_REC_EXIT) {
			uint32_t d = depth;

			while (d && stk[d - 1].func != sub[i].a)
				d--;
			if (!d)
				continue; /* entered before the sample */
			d--;
			/* frames above it were left without exits: counted,
			 * untimed, not as empty */
			for (uint32_t k = d + 1; k < depth; k++) {
				fstat_call(stk[k].func, 1, 0, stk[k].comm);
				stk[d].comm |= stk[k].comm;
			}
			fstat_call(sub[i].a, i - stk[d].at - 1, tau[i],
				   stk[d].comm);
			if (d && stk[d].comm)
				stk[d - 1].comm = 1; /* the caller's too */
			depth = d;
		}
	}
	for (uint32_t k = 0; k < depth; k++)
		fstat_call(stk[k].func, 1, 0, stk[k].comm); /* still open */
	return calls;
}

struct cand {
	uint64_t key; /* calls, for the sort (descending: ~calls) */
	struct ag_func *f;
	uint32_t calls;
	uint32_t mean_ns;
};
static struct cand cands[1u << BUDGET_HBITS];

static int cand_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int untraceable(const struct ag_func *f)
{
	uint32_t fl = __atomic_load_n(&f->flags, __ATOMIC_ACQUIRE);

	return !(fl & (F_UNTRACED | F_SLOW | F_NOTRACE | F_FOREIGN)) &&
	       f->intercept == IC_NONE;
}

static int cand_cmp(const void *a, const void *b);

/* The median of the sample's per-function call counts: a function called
 * no more often than the thread's typical one (once per request, in a
 * server) is the request's structure and is always kept. */
static uint32_t calls_median(void)
{
	static uint64_t v[1u << BUDGET_HBITS];

	for (uint32_t i = 0; i < ntouched; i++)
		v[i] = fst[touched[i]].calls;
	if (!ntouched)
		return 0;
	ag_sort(v, ntouched, sizeof(v[0]), cand_cmp);
	return (uint32_t)v[ntouched / 2];
}

/* The tier of a function of the sample (0: not a candidate).  Tier 1:
 * (a)-(d).  Tier 2, the functions (d) keeps, taken only while tier 1 has
 * not brought the share under the budget: (a)-(c) and (e) its own code has
 * no loop (bounded()).  Such a function called nothing traced, so the
 * functions it called are untraced ones, each short (or it would not be
 * untraced): its time is bounded by its size and theirs, the same in every
 * request (VAIF: a call of constant time explains none of the requests'
 * variance), while a function with a loop (a parser walking the request,
 * a filter walking its chain) takes the time its input asks for and stays.
 * The skeleton stays by (c): the ancestors of interposed calls (send,
 * recv, writev...) and of every function kept have traced calls inside. */
static int tier_of(const struct fstat *s, struct ag_func *f, uint32_t med,
		   double dur_ns)
{
	uint64_t mean = s->timed ? s->dur_ns / s->timed : ~0ull;

	if (s->calls * 1e9 / dur_ns < BUDGET_RATE_MIN ||
	    mean >= BUDGET_DUR_NS || 2 * s->empty <= s->calls || s->comm ||
	    !untraceable(f))
		return 0;
	if (s->calls > BUDGET_MEDIAN_X * med)
		return 1;
	return bounded(f) ? 2 : 0;
}

/* One thread's sample: decide, and untrace what is decided. */
static void thread_decide(uint64_t calls, double dur_ns)
{
	double share = (double)calls * BUDGET_CALL_NS / dur_ns;
	double limit = cfg.pct / 100.0;
	uint32_t nc = 0, med = calls_median();

	for (uint32_t i = 0; i < ntouched; i++) {
		struct fstat *s = &fst[touched[i]];
		struct ag_func *f = ag_funcs_by_id[touched[i]];
		int tier = share > limit ? tier_of(s, f, med, dur_ns) : 0;

		if (tier) {
			/* tier 1 first, each tier most frequent first */
			cands[nc].key = (uint64_t)tier << 32 | (uint32_t)~s->calls;
			cands[nc].f = f;
			cands[nc].calls = s->calls;
			cands[nc++].mean_ns = s->timed ? (uint32_t)(s->dur_ns /
								     s->timed)
						       : 0;
		}
		memset(s, 0, sizeof(*s));
	}
	ntouched = 0;
	ag_sort(cands, nc, sizeof(cands[0]), cand_cmp);
	for (uint32_t i = 0; i < nc && share > limit; i++) {
		struct ag_func *f = cands[i].f;
		int sites;

		/* the callers whose calls of f are left out (replay marks
		 * them): before the restore, which clears `patched` */
		for (struct ag_site *c = f->callers; c; c = c->cnext)
			if (c->patched && c->owner)
				map_line("U %u %u", c->owner->id, f->id);
		sites = patch_untrace(f);

		__atomic_or_fetch(&f->flags, F_UNTRACED | F_BUDGETED |
				  F_QUIET, __ATOMIC_RELEASE);
		map_line("B %u rate %llu %llu %u %d", f->id,
			 (unsigned long long)(ag_mono_ns() - cfg.t0),
			 (unsigned long long)(cands[i].calls * 1e9 / dur_ns),
			 cands[i].mean_ns, sites);
		/* its indirect calls record nothing either (F_QUIET,
		 * tramp.S LEAN_ENTER ind) */
		share -= (double)cands[i].calls * BUDGET_CALL_NS / dur_ns;
	}
}

/* Read len bytes at addr of our own memory, or fail (never a fault):
 * the lease thread's readers of the rings (here and adaptive.c). */
int ag_mem_read(uint64_t addr, void *buf, size_t len)
{
	int fd = ag_fd_get(&mem, "/proc/self/mem", O_RDONLY);

	return fd >= 0 && pread(fd, buf, len, (off_t)addr) == (ssize_t)len ? 0
									     : -1;
}

/*
 * One sample of t: 0, or 1 if its ring lapped the sub-buffer while it was
 * read.  A busy thread fills a sub-buffer in a few ms (hot's: 3 ms), so a
 * lease thread preempted during the read on a loaded machine lost every
 * sample of a 2-s attach (budget hot/cycles, 1 attach in 10 of a
 * fresh-clone run left mix traced): thread_sample reads the newest one
 * again, BUDGET_LAP_TRIES times at most.
 */
#define BUDGET_LAP_TRIES 4

static int sample_once(struct athread *t)
{
	struct propel_ring_hdr *hp =
		__atomic_load_n(&t->ring, __ATOMIC_ACQUIRE);
	struct propel_ring_hdr h;
	uint64_t k, t0, t1, calls, commits;
	double ns_per_tick, busy, wall;
	uint32_t n;

	if (!hp || t->dead || ag_mem_read((uint64_t)hp, &h, sizeof(h)) < 0 ||
	    memcmp(h.magic, PROPEL_RING_MAGIC, 8) || h.tid != (uint32_t)t->tid ||
	    !h.sub_count || h.sub_count > PROPEL_RING_SUB_MAX || !h.commits ||
	    h.commits <= t->budget_seen)
		return 0;
	t->budget_seen = h.commits;
	k = h.commits - 1;
	n = h.sub_recs < BUDGET_SUB_MAX ? h.sub_recs : BUDGET_SUB_MAX;
	t0 = h.sub_tsc[k % h.sub_count];
	t1 = h.sub_tsc[(k + 1) % h.sub_count];
	if (t1 <= t0 || h.tsc_last <= h.tsc0 || h.mono_last_ns <= h.mono0_ns)
		return 0;
	ns_per_tick = (double)(h.mono_last_ns - h.mono0_ns) /
		      (double)(h.tsc_last - h.tsc0);
	if (ag_mem_read((uint64_t)propel_ring_sub(hp, k), sub, n * sizeof(sub[0])) <
	    0)
		return 0;
	/* lapped while it was read (a flight ring): not a sample */
	if (ag_mem_read((uint64_t)hp + offsetof(struct propel_ring_hdr, commits),
		     &commits, sizeof(commits)) < 0)
		return 0;
	if (commits - k >= h.sub_count)
		return 1;
	/* the share of the thread's time on the CPU, not of the wall clock:
	 * on a loaded machine the sub-buffer's wall time holds the thread's
	 * waits for a CPU, and the same calls looked cheaper (budget's
	 * hot/tail: twist kept, under the budget by the wall clock, 1
	 * fresh-clone run in 6); a thread that blocks is judged by the work
	 * it does */
	busy = runs_time(n, propel_rec_tsc60(t1), ns_per_tick);
	wall = (double)(t1 - t0) * ns_per_tick;
	calls = sub_scan(n);
	thread_decide(calls, busy > 0 && busy < wall ? busy : wall);
	return 0;
}

static void thread_sample(struct athread *t)
{
	for (int i = 0; i < BUDGET_LAP_TRIES && sample_once(t); i++)
		;
}

void budget_tick(void)
{
	sigset_t old;

	if (!cfg.on || cfg.pct >= 100 || !ag_active)
		return;
	slow_lock(&old);
	if (ag_active && !ag_inert)
		for (struct athread *t = ag_threads; t; t = t->next)
			if (t->gen == ag_gen)
				thread_sample(t);
	slow_unlock(&old);
}
