/*
 * inject/agent/adaptive.c - variance-driven instrumentation (issue 34
 * item 2; VAIF, SoCC '21, sections 2.2-3.2, by binary patching instead of
 * log statements).  `propel attach --adaptive` sets PROPEL_START_ADAPTIVE.
 *
 * The frontier.  Each function gets a level when the agent first makes
 * the call sites of a function that calls it: a function whose sites are
 * made without a level (reached by an indirect call or as a callback: a
 * request's entry) is a root, level 0; its direct callees are level + 1.
 * A direct call to a function of a traced module deeper than ADAPT_DEPTH0
 * is not patched (adaptive_skip_call) unless the controller enabled that
 * function; each call left out is kept as a frontier edge (owner ->
 * callee).  So at first only the functions near each request's root are
 * traced.
 *
 * The roots.  The frames on the threads' stacks at attach are made
 * outermost first (agent.c stack_activate calls adaptive_frame), so main
 * is level 0 and a frame is as deep as its call depth: a busy server's
 * innermost frame is deep inside a request, and made a root it would
 * trace that request's subtree from the start.  Which frame is the
 * thread's loop and which the request it serves is seen at run time: a
 * loop never returns.  Each cycle, on each thread the frames that never
 * returned -- those on its stack at attach whose function no exit was
 * seen of since, outermost first, then those the reader saw entered in
 * an earlier cycle and still open -- are walked outermost first, up to
 * the first whose function did return; the first of them with callees
 * left out, or whose callee on that stack returns (traced already: a
 * batch loop near main), is a loop: those callees are roots (level 0,
 * VAIF's request-type start tracepoints, never pruned), the levels below
 * them lowered (relevel) and the functions now within ADAPT_DEPTH0 of a
 * root traced.  One loop a thread and cycle: serve_conn's callee
 * handle_request becomes the root in the first cycle, and the request's
 * frames deeper on the stack at attach, which return, are never loops.
 *
 * The controller (VAIF's Hypothesize, every ADAPT_CYCLE_MS instead of
 * 120 s), run by the lease thread, which never runs the program's code:
 *   read    every traced thread's new records since the last tick (the
 *           committed sub-buffers not yet read and the current one up to
 *           the writer's cursor; every record stamped: --adaptive implies
 *           exact timing), through /proc/self/mem (never a fault);
 *   units   a call that returns to the reader's outermost level or to a
 *           loop (the thread's serve loop: never returns) is one
 *           request, with each traced function's own time in it (its
 *           time minus its traced callees');
 *   group   requests by path: the root function and the sequence of its
 *           direct callees (VAIF's identical critical paths);
 *   problem a group of at least VARIANCE_MIN_UNITS requests (VAIF: 30)
 *           whose coefficient of variation exceeds VARIANCE_CV (0.1), or
 *           whose mean is above the 95th percentile of all requests of
 *           the cycle (VAIF's consistently slow) (the statistics are
 *           the report's own rule: share/variance-stat.h);
 *   rank    the functions of a high-CV group by the share of the group's
 *           variance their own time explains, cov(own, total) / var(total)
 *           (the shares sum to 1 over the functions), scaled as the
 *           report scales them (variance_scale); of a slow group by
 *           their mean own time's part of the group's mean; each
 *           cycle's slowest VARIANCE_TRIM of a path's units (above the
 *           last cycle's cut) left out, as the report leaves them out;
 *   deeper  the top ADAPT_PER_CYCLE functions scoring VARIANCE_NOISE or
 *           more (under it a share is noise: the report's rule) that
 *           have callees left out get those callees enabled: the owners'
 *           sites are made again (patch_function), one level deeper.  A
 *           function whose callees are all traced is where the variance
 *           is (VAIF's stopping condition);
 *   prune   a function the controller enabled whose share (its time with
 *           its callees') stayed under VARIANCE_NOISE in every cycle for
 *           ADAPT_IDLE cycles, and none of whose enabled callees is still
 *           enabled, is unpatched (patch_untrace) and left out again.
 * The statistics are this cycle's only (VAIF's prev.make_empty).
 *
 * Each decision is one map line (share/ring.h), read by
 * engine/ingest-map.c into the session's table `adaptive`
 * (engine/variance-store.c) for `propel report --variance`:
 *   A t <functions>               a traced module's functions, in all
 *   A p <funcid> <ns> <level>     traced near a root (at most
 *                                 ADAPT_DEPTH0 below it)
 *   A + <funcid> <ns> <level>     enabled by the controller
 *   A - <funcid> <ns> <level>     pruned
 * (<ns>: since the agent started in the process).  The
 * report (engine/variance.c) recomputes the groups and shares from the
 * session's flows; this module only decides what is traced.
 *
 * Called: adaptive_start (agent.c start_common, ag_lock held);
 * adaptive_stack/adaptive_frame (agent.c stack_activate, ag_lock held);
 * adaptive_skip_call (budget.c budget_skip_call, from patch.c fn_sites,
 * ag_lock held); adaptive_tick (agent.c's lease thread; takes ag_lock).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/agent/adaptive.h"
#include "inject/agent/agent.h"
#include "inject/agent/budget.h"
#include "share/variance-stat.h"

#define ADAPT_DEPTH0 2        /* levels traced below each root at first */
#define ADAPT_CYCLE_MS 2000   /* a decision this often */
#define ADAPT_PER_CYCLE 3     /* functions deepened per group and cycle */
#define ADAPT_IDLE 3          /* cycles explaining nothing before pruning */
#define ADAPT_THREADS 64
#define ADAPT_STACK 256
#define ADAPT_GROUPS 64
#define ADAPT_FRONTIER 16384
#define ADAPT_ACC_BITS 15
#define ADAPT_DURS 8192
#define ADAPT_READ 4096 /* records read at once */
#define ADAPT_FRAMES 128 /* of a stack at attach */
#define ADAPT_UNIT_FUNCS 512 /* functions of a unit counted, power of 2 */

static struct {
	int on;
	uint64_t t0, last;
	uint32_t cycle; /* decisions made */
	uint64_t read;  /* records read this cycle */
} cfg;

/* per function, by id (grown with ag_nfuncs) */
struct afunc {
	uint8_t level;   /* 0xff: none yet */
	uint8_t enabled; /* by the controller */
	uint8_t idle;    /* cycles explaining nothing */
	uint8_t seen;    /* in a problem group's units this cycle */
	uint8_t said;    /* its A p line written */
	uint8_t on;      /* its calls are patched (skip_call said 0) */
	uint8_t root;    /* enabled under a loop: a request's root */
	uint8_t loop;    /* a loop: its direct callees are roots */
	uint8_t exited;  /* an exit of it seen: not a loop */
};
static struct afunc *af;
static uint32_t af_cap;

static struct { uint32_t owner, callee; } frontier[ADAPT_FRONTIER];
static uint32_t nfrontier;

/* the stacks at attach, outermost frame first (function ids) */
static struct {
	uint32_t n;
	uint32_t f[ADAPT_FRAMES];
} stacks[ADAPT_THREADS];
static uint32_t nstacks;

static const struct ag_module *counted[64];
static uint32_t ncounted;

static uint64_t since(void)
{
	return ag_mono_ns() - cfg.t0;
}

/* A module's functions, once: the report's total. */
static void module_count(const struct ag_module *m)
{
	size_t n = 0;

	for (uint32_t i = 0; i < ncounted; i++)
		if (counted[i] == m)
			return;
	if (ncounted == sizeof(counted) / sizeof(counted[0]))
		return;
	counted[ncounted++] = m;
	for (size_t i = 0; i < m->nsyms; i++)
		n += !m->syms[i].frag && m->syms[i].size &&
		     (!i || m->syms[i].addr != m->syms[i - 1].addr);
	map_line("A t %zu", n);
}

static struct afunc *afunc_of(uint32_t id)
{
	if (id >= ag_nfuncs)
		return NULL;
	if (id >= af_cap) {
		uint32_t ncap = ag_nfuncs + 4096;
		struct afunc *n = ag_alloc(ncap * sizeof(*n));

		if (!n)
			return NULL;
		if (af)
			memcpy(n, af, af_cap * sizeof(*n));
		for (uint32_t i = af_cap; i < ncap; i++)
			n[i].level = 0xff;
		af = n; /* the old one is never freed: ag_alloc */
		af_cap = ncap;
	}
	return &af[id];
}

void adaptive_start(uint32_t flags)
{
	cfg.on = !!(flags & PROPEL_START_ADAPTIVE);
	cfg.t0 = cfg.last = ag_mono_ns();
	cfg.cycle = 0;
	nfrontier = 0;
	ncounted = 0;
	nstacks = 0;
	for (uint32_t i = 0; i < af_cap; i++) {
		memset(&af[i], 0, sizeof(af[i]));
		af[i].level = 0xff;
	}
}

static int adaptable(const struct ag_func *f)
{
	const struct ag_module *m = f->mod;

	return m && !m->system && !m->self && m->file &&
	       f->intercept == IC_NONE &&
	       !(f->flags & (F_PLT | F_SYSTEM | F_FOREIGN | F_NOTRACE |
			     F_SLOW | F_HOOKED));
}

int adaptive_on(void)
{
	return cfg.on;
}

void adaptive_stack(void)
{
	if (cfg.on && nstacks < ADAPT_THREADS)
		stacks[nstacks++].n = 0;
}

void adaptive_frame(uint64_t pc)
{
	struct ag_module *m = module_of(pc);
	const struct ag_sym *s = m ? module_sym(m, pc) : NULL;
	struct ag_func *f;
	uint32_t k = nstacks - 1;

	if (!cfg.on || !nstacks || !s || s->frag || m->system || m->self ||
	    !(f = func_get(s->addr)) ||
	    stacks[k].n == ADAPT_FRAMES ||
	    (stacks[k].n && stacks[k].f[stacks[k].n - 1] == f->id))
		return;
	stacks[k].f[stacks[k].n++] = f->id;
}

int adaptive_skip_call(struct ag_func *owner, struct ag_func *f)
{
	struct afunc *o, *c;

	if (!cfg.on || !f || !owner || !(o = afunc_of(owner->id)) ||
	    !(c = afunc_of(f->id)))
		return 0;
	if (o->level == 0xff)
		o->level = 0; /* a root: no traced caller gave it a level */
	if (c->level == 0xff || c->level > o->level + 1)
		c->level = (uint8_t)(o->level + 1 < 0xfe ? o->level + 1 : 0xfe);
	if (!adaptable(f))
		return 0;
	module_count(f->mod);
	if (c->enabled)
		return 0;
	if (c->level <= ADAPT_DEPTH0) {
		if (!c->said)
			map_line("A p %u %llu %u", f->id,
				 (unsigned long long)since(), c->level);
		c->said = 1;
		c->on = 1;
		return 0;
	}
	for (uint32_t i = 0; i < nfrontier; i++)
		if (frontier[i].owner == owner->id && frontier[i].callee == f->id)
			return 1;
	if (nfrontier == ADAPT_FRONTIER)
		return 0; /* no room to remember it: traced */
	frontier[nfrontier].owner = owner->id;
	frontier[nfrontier++].callee = f->id;
	return 1;
}

/* ---- reading the rings ---- */

struct rstate {
	pid_t tid;
	uint32_t gen;
	uint64_t k;  /* sub-buffer read next */
	uint32_t i;  /* its record read next */
	uint32_t depth;
	uint32_t ud; /* the depth of the unit in progress's root */
	struct {
		uint32_t func, cycle; /* cycle: cfg.cycle at its entry */
		uint64_t t0, child;
	} stk[ADAPT_STACK];
	/* the unit in progress: its root's direct callees, hashed */
	uint64_t path;
	/* ... and its functions' own and inclusive time, hashed by function
	 * (func + 1; 0: free), the slots in use listed in used: each
	 * thread's own, as its reads are interleaved with the others' */
	uint32_t nused;
	uint16_t used[ADAPT_UNIT_FUNCS];
	struct uown {
		uint32_t func;
		uint64_t own, incl;
	} u[ADAPT_UNIT_FUNCS];
};
static struct rstate rs[ADAPT_THREADS];
static struct propel_rec rbuf[ADAPT_READ];

struct group {
	uint64_t key;
	uint32_t root;
	uint32_t n;
	double sd, sdd;
};
static struct group groups[ADAPT_GROUPS];
static uint32_t ngroups;

/* (group, function) accumulators of this cycle */
struct acc {
	uint32_t g, func; /* func + 1: 0 empty */
	double sx, sxd, si, sid;
};
static struct acc acc[1u << ADAPT_ACC_BITS];
/* this cycle's units: duration, group (ag_sort: the leading key) */
static struct {
	uint64_t d;
	uint64_t g;
} durs[ADAPT_DURS];
static uint32_t ndurs;
/* per path, the slowest VARIANCE_TRIM of the last cycle's units began
 * above cut: this cycle's units above it are outliers (a preemption),
 * left out of the statistics as the report leaves them out */
static struct {
	uint64_t key;
	double cut;
} cuts[ADAPT_GROUPS];
static uint32_t ncuts;

static struct acc *acc_of(uint32_t g, uint32_t func)
{
	uint32_t h = (g * 2654435761u ^ func * 40503u) &
		     ((1u << ADAPT_ACC_BITS) - 1);

	for (uint32_t p = 0; p < 64; p++, h = (h + 1) & ((1u << ADAPT_ACC_BITS) - 1)) {
		if (!acc[h].func) {
			acc[h].g = g;
			acc[h].func = func + 1;
			return &acc[h];
		}
		if (acc[h].g == g && acc[h].func == func + 1)
			return &acc[h];
	}
	return NULL;
}

static void unit_touch(struct rstate *r, uint32_t func, uint64_t own,
		       uint64_t incl)
{
	const uint32_t mask = ADAPT_UNIT_FUNCS - 1;
	uint32_t h = (func * 2654435761u) & mask;
	struct uown *e;

	for (uint32_t p = 0; p < 16; p++, h = (h + 1) & mask) {
		e = &r->u[h];
		if (e->func == func + 1)
			break;
		if (!e->func) {
			if (r->nused >= ADAPT_UNIT_FUNCS / 2)
				return; /* full enough: the rest uncounted */
			e->func = func + 1;
			e->own = e->incl = 0;
			r->used[r->nused++] = (uint16_t)h;
			break;
		}
	}
	if (e->func != func + 1)
		return;
	e->own += own;
	e->incl += incl;
}

/* A unit ended: root func, dur ns, path key. */
static int adaptable(const struct ag_func *f);

static void unit_end(struct rstate *r, uint32_t root, uint64_t path,
		     double dur)
{
	uint64_t key = path * 31 + root;
	uint32_t g;

	/* a call of the loop into libc (read, write: waiting) is no request */
	if (root >= ag_nfuncs || !adaptable(ag_funcs_by_id[root]))
		return;
	for (g = 0; g < ngroups && groups[g].key != key; g++)
		;
	if (g == ngroups) {
		if (ngroups == ADAPT_GROUPS)
			return;
		memset(&groups[g], 0, sizeof(groups[g]));
		groups[g].key = key;
		groups[g].root = root;
		ngroups++;
	}
	if (ndurs < ADAPT_DURS) {
		durs[ndurs].d = (uint64_t)dur;
		durs[ndurs++].g = g;
	}
	for (uint32_t i = 0; i < ncuts; i++)
		if (cuts[i].key == key && dur > cuts[i].cut)
			return;
	groups[g].n++;
	groups[g].sd += dur;
	groups[g].sdd += dur * dur;
	for (uint32_t i = 0; i < r->nused; i++) {
		const struct uown *e = &r->u[r->used[i]];
		struct acc *c = acc_of(g, e->func - 1);

		if (!c)
			continue;
		c->sx += (double)e->own;
		c->sxd += (double)e->own * dur;
		c->si += (double)e->incl;
		c->sid += (double)e->incl * dur;
	}
}

/* A call at depth d is a unit's root: the reader's outermost level, or
 * a loop's direct callee. */
static int unit_root(const struct rstate *r, uint32_t d)
{
	uint32_t up = d ? r->stk[d - 1].func : 0;

	return !d || (up < af_cap && af[up].loop);
}

static void unit_drop(struct rstate *r)
{
	for (uint32_t i = 0; i < r->nused; i++)
		r->u[r->used[i]].func = 0;
	r->nused = 0;
	r->path = 0;
	r->ud = 0;
}

static void recs_scan(struct rstate *r, uint32_t n, double ns_per_tick)
{
	cfg.read += n;
	for (uint32_t i = 0; i < n; i++) {
		unsigned type = (unsigned)(rbuf[i].w0 & 0xf);
		uint64_t tsc = rbuf[i].w0 >> 4;
		uint32_t d = r->depth;

		if (type == PROPEL_REC_ENTRY) {
			if (d == ADAPT_STACK)
				continue;
			if (unit_root(r, d)) {
				unit_drop(r);
				r->ud = d;
			} else if (d == r->ud + 1) {
				r->path = r->path * 1000003u + rbuf[i].a + 1;
			}
			r->stk[d].func = rbuf[i].a;
			r->stk[d].cycle = cfg.cycle;
			r->stk[d].t0 = tsc;
			r->stk[d].child = 0;
			r->depth = d + 1;
		} else if (type == PROPEL_REC_EXIT) {
			uint64_t incl, own;
			struct afunc *a = afunc_of(rbuf[i].a);

			if (a)
				a->exited = 1; /* it returns: not a loop */
			while (d && r->stk[d - 1].func != rbuf[i].a)
				d--;
			if (!d)
				continue; /* entered before the reader began */
			d--;
			incl = tsc > r->stk[d].t0 ? tsc - r->stk[d].t0 : 0;
			own = incl > r->stk[d].child ? incl - r->stk[d].child : 0;
			unit_touch(r, rbuf[i].a, (uint64_t)(own * ns_per_tick),
				   (uint64_t)(incl * ns_per_tick));
			r->depth = d;
			if (d)
				r->stk[d - 1].child += incl;
			if (d == r->ud && unit_root(r, d)) {
				unit_end(r, rbuf[i].a, r->path,
					 incl * ns_per_tick);
				unit_drop(r);
			}
		} else if (type == PROPEL_REC_LOST || type == PROPEL_REC_SWITCH) {
			r->depth = 0; /* the frames are not known any more */
			unit_drop(r);
		}
	}
}

/* Records [from, to) of sub-buffer k into the unit builder; the index
 * read up to (a record not yet complete stops it). */
static uint32_t sub_read(struct rstate *r, struct propel_ring_hdr *hp,
			 const struct propel_ring_hdr *h, uint64_t k,
			 uint32_t from, uint32_t to, double ns_per_tick)
{
	uint64_t st = propel_rec_tsc60(h->sub_tsc[k % h->sub_count]);

	while (from < to) {
		uint32_t n = to - from < ADAPT_READ ? to - from : ADAPT_READ, m;

		if (ag_mem_read((uint64_t)(propel_ring_sub(hp, k) + from), rbuf,
			     n * sizeof(rbuf[0])) < 0)
			return to;
		for (m = 0; m < n; m++)
			if (!rbuf[m].w0 || (rbuf[m].w0 >> 4) < st)
				break; /* not written yet (this lap) */
		recs_scan(r, m, ns_per_tick);
		from += m;
		if (m < n)
			break;
	}
	return from;
}

static void thread_read(struct athread *t)
{
	struct propel_ring_hdr *hp =
		__atomic_load_n(&t->ring, __ATOMIC_ACQUIRE);
	struct propel_ring_hdr h;
	struct rstate *r = NULL;
	struct propel_rec *cur, *base;
	double ns_per_tick;
	uint64_t tsc, ns;

	if (!hp || t->dead || ag_mem_read((uint64_t)hp, &h, sizeof(h)) < 0 ||
	    memcmp(h.magic, PROPEL_RING_MAGIC, 8) || h.tid != (uint32_t)t->tid ||
	    !h.sub_count || h.sub_count > PROPEL_RING_SUB_MAX)
		return;
	/* the ring's clock pair is stored at its commits: a quiet thread's
	 * first commit may be seconds away (a batch loop's first cycle read
	 * nothing), so until then a pair taken here, 20 ms on at least */
	if (h.tsc_last <= h.tsc0 || h.mono_last_ns <= h.mono0_ns) {
		ring_pair(&tsc, &ns);
		if (tsc <= h.tsc0 || ns < h.mono0_ns + 20000000)
			return;
		h.tsc_last = tsc;
		h.mono_last_ns = ns;
	}
	for (uint32_t i = 0; i < ADAPT_THREADS && !r; i++)
		if (rs[i].tid == t->tid && rs[i].gen == ag_gen)
			r = &rs[i];
	for (uint32_t i = 0; i < ADAPT_THREADS && !r; i++)
		if (!rs[i].tid || rs[i].gen != ag_gen) {
			r = &rs[i];
			memset(r, 0, sizeof(*r));
			r->tid = t->tid;
			r->gen = ag_gen;
			r->k = h.commits;
		}
	if (!r)
		return;
	ns_per_tick = (double)(h.mono_last_ns - h.mono0_ns) /
		      (double)(h.tsc_last - h.tsc0);
	if (h.commits > r->k && h.commits - r->k >= h.sub_count) {
		r->k = h.commits; /* lapped: what was not read is gone */
		r->i = 0;
		r->depth = 0;
	}
	while (r->k < h.commits) {
		sub_read(r, hp, &h, r->k, r->i, h.sub_recs, ns_per_tick);
		r->k++;
		r->i = 0;
	}
	cur = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
	base = propel_ring_sub(hp, r->k);
	if (cur > base && cur <= base + h.sub_recs && cur - base > r->i)
		r->i = sub_read(r, hp, &h, r->k, r->i, (uint32_t)(cur - base),
				ns_per_tick);
}

/* ---- deciding ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ag_sort orders by an element's leading uint64_t first (sort.c) and
 * asks cmp only where two are equal: the candidates lead with a key that
 * is smaller for a higher score (a double's bits made order-preserving,
 * then inverted).  Sorted by the double itself, the smallest share came
 * first and the controller never deepened. */
struct cand {
	uint64_t key;
	double score;
	uint32_t func;
};

static uint64_t score_key(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	b = b >> 63 ? ~b : b | 1ull << 63; /* ascending with x */
	return ~b;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

static struct cand cands[1u << ADAPT_ACC_BITS];

/* Make f's sites again: its callees enabled since are patched now. */
static void repatch(uint32_t func)
{
	struct ag_func *o = ag_funcs_by_id[func];

	__atomic_and_fetch(&o->flags, ~(uint32_t)F_READY, __ATOMIC_RELEASE);
	patch_function(o);
}

/* Enable f's callees left out (as roots when f is a loop): the owner's
 * sites made again.  The number enabled. */
static int deepen(uint32_t func, int roots)
{
	int n = 0;

	for (uint32_t i = 0; i < nfrontier; i++) {
		struct afunc *c = &af[frontier[i].callee];

		if (frontier[i].owner != func || c->on)
			continue;
		c->enabled = c->on = 1;
		c->idle = 0;
		if (roots) {
			c->root = 1;
			c->level = 0;
		}
		map_line("A + %u %llu %u", frontier[i].callee,
			 (unsigned long long)since(), c->level);
		n++;
	}
	if (n)
		repatch(func);
	return n;
}

/* Roots were made: the levels below them lowered along the frontier, and
 * an owner whose callee left out is now within ADAPT_DEPTH0 of a root
 * made again (adaptive_skip_call traces it; making the owner's sites
 * lowers its traced callees' levels, whose own edges the next pass
 * sees). */
static void relevel(void)
{
	for (int pass = 0; pass < 64; pass++) {
		int changed = 0;

		for (uint32_t i = 0; i < nfrontier; i++) {
			struct afunc *o = &af[frontier[i].owner],
				     *c = &af[frontier[i].callee];

			if (o->level >= 0xfe || o->level + 1 >= c->level)
				continue;
			c->level = (uint8_t)(o->level + 1);
			changed = 1;
			if (c->level <= ADAPT_DEPTH0 && !c->on)
				repatch(frontier[i].owner);
		}
		if (!changed)
			break;
	}
}

/* The first frame of a thread that never returned and has callees left
 * out is a loop: its callees are roots.  At most one a thread. */
static int loops_find(void)
{
	int made = 0;

	for (uint32_t k = 0; k < nstacks; k++)
		for (uint32_t i = 0; i < stacks[k].n; i++) {
			uint32_t f = stacks[k].f[i], g;

			if (f >= af_cap || af[f].exited)
				break;
			if (af[f].loop) {
				/* its callees left out since: roots too */
				made += deepen(f, 1) > 0;
				continue;
			}
			if (deepen(f, 1)) {
				af[f].loop = 1;
				made++;
				break;
			}
			/* its callee on the stack returns, traced already (a
			 * batch loop in main, two levels down): the root */
			g = i + 1 < stacks[k].n ? stacks[k].f[i + 1] : ~0u;
			if (g < af_cap && af[g].exited) {
				af[f].loop = 1;
				af[g].root = 1;
				af[g].level = 0;
				made++;
				break;
			}
		}
	for (uint32_t k = 0; k < ADAPT_THREADS; k++) {
		struct rstate *r = &rs[k];

		if (!r->tid || r->gen != ag_gen)
			continue;
		for (uint32_t d = 0; d < r->depth; d++) {
			uint32_t f = r->stk[d].func;

			if (r->stk[d].cycle == cfg.cycle || f >= af_cap)
				break; /* entered in this cycle */
			if (deepen(f, 1)) {
				af[f].loop = 1;
				made++;
				break;
			}
		}
	}
	if (made)
		relevel();
	return made;
}

static void group_decide(uint32_t g, double p95)
{
	struct group *gr = &groups[g];
	double mean = variance_mean(gr->n, gr->sd);
	double var = variance_var(gr->n, gr->sd, gr->sdd);
	int slow = mean > p95;
	double scale = variance_scale(mean, var, p95);
	uint32_t nc = 0, done = 0;

	if (!variance_problem(gr->n, mean, var, p95))
		return;
	for (uint32_t h = 0; h < (1u << ADAPT_ACC_BITS); h++) {
		struct acc *c = &acc[h];
		double ishare;

		if (!c->func || c->g != g)
			continue;
		ishare = scale *
			 variance_share(gr->n, c->si, c->sid, mean, var);
		af[c->func - 1].seen |= ishare >= VARIANCE_NOISE;
		cands[nc].func = c->func - 1;
		cands[nc].score =
			slow ? c->sx / gr->n / mean
			     : scale * variance_share(gr->n, c->sx, c->sxd,
						      mean, var);
		cands[nc].key = score_key(cands[nc].score);
		nc++;
	}
	ag_sort(cands, nc, sizeof(cands[0]), cand_cmp);
	for (uint32_t i = 0; i < nc && done < ADAPT_PER_CYCLE; i++) {
		if (cands[i].score < VARIANCE_NOISE)
			break;
		if (deepen(cands[i].func, 0))
			done++;
	}
}

/* A function the controller enabled that explained nothing for a while,
 * none of its enabled callees still enabled: left out again.  A root
 * stays. */
static void prune(void)
{
	for (uint32_t i = 0; i < nfrontier; i++) {
		uint32_t f = frontier[i].callee;
		int busy = 0;

		if (!af[f].enabled || af[f].root)
			continue;
		if (af[f].seen) {
			af[f].idle = 0;
			continue;
		}
		if (++af[f].idle < ADAPT_IDLE)
			continue;
		for (uint32_t j = 0; j < nfrontier && !busy; j++)
			busy = frontier[j].owner == f &&
			       af[frontier[j].callee].enabled;
		if (busy)
			continue;
		af[f].enabled = af[f].on = 0;
		patch_untrace(ag_funcs_by_id[f]);
		map_line("A - %u %llu %u", f, (unsigned long long)since(),
			 af[f].level);
	}
	for (uint32_t i = 0; i < af_cap; i++)
		af[i].seen = 0;
}

/* Each path's cut for the next cycle: the duration its slowest
 * VARIANCE_TRIM of this cycle's units (sorted) are above. */
static void trim_cuts(void)
{
	uint32_t seen[ADAPT_GROUPS] = { 0 }, nth[ADAPT_GROUPS];

	for (uint32_t i = 0; i < ndurs; i++)
		seen[durs[i].g]++;
	ncuts = 0;
	for (uint32_t g = 0; g < ngroups; g++) {
		nth[g] = (uint32_t)(seen[g] * VARIANCE_TRIM);
		seen[g] = 0;
		cuts[ncuts].key = groups[g].key;
		cuts[ncuts++].cut = 1e300;
	}
	for (uint32_t i = ndurs; i-- > 0;) {
		uint32_t g = (uint32_t)durs[i].g;

		if (nth[g] && ++seen[g] == nth[g])
			cuts[g].cut = (double)durs[i].d;
	}
}

static void decide(void)
{
	double p95 = 0;

	if (ndurs) {
		ag_sort(durs, ndurs, sizeof(durs[0]), u64_cmp);
		p95 = (double)durs[(ndurs * 95) / 100].d;
	}
	trim_cuts();
	/* (nothing read yet -- a ring is read once its clock is calibrated,
	 * at its first commit -- says nothing of what returns) */
	if (cfg.read)
		loops_find();
	cfg.read = 0;
	for (uint32_t g = 0; g < ngroups; g++)
		group_decide(g, p95);
	prune();
	ngroups = 0;
	ndurs = 0;
	memset(acc, 0, sizeof(acc));
	cfg.cycle++;
}

void adaptive_tick(void)
{
	sigset_t old;
	uint64_t now;

	if (!cfg.on || !ag_active)
		return;
	slow_lock(&old);
	if (ag_active && !ag_inert) {
		for (struct athread *t = ag_threads; t; t = t->next)
			if (t->gen == ag_gen)
				thread_read(t);
		now = ag_mono_ns();
		if (now - cfg.last >= ADAPT_CYCLE_MS * 1000000ull) {
			cfg.last = now;
			decide();
		}
	}
	slow_unlock(&old);
}
