/*
 * analysis/profiles.c - see analysis/profiles.h.
 *
 * One pass over the events accumulates (unit, path) cells: an
 * open-addressed table of 16-byte slots keyed by unit << 32 | space index
 * points into a dense array of cells, made large enough at once for most
 * traces.  The cells then go into each unit's sparse vector, ordered by
 * space index, by two counting sorts (by index, then stably by unit) and
 * are normalized.  Trace paths are mapped to space indices once each
 * (pathk[]).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profiles.h"

static const char *const profiles_names[] = { "coverage", "time", "comm",
					      "composite" };

int profiles_kind_parse(const char *name)
{
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(name, profiles_names[i]) == 0)
			return i;
	return -1;
}

const char *profiles_kind_name(int kind)
{
	return kind >= 0 && kind < 4 ? profiles_names[kind] : "?";
}

static uint64_t profiles_fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

void profiles_space_release(struct profiles_space *sp)
{
	size_t i;

	for (i = 0; i < sp->n; i++)
		free(sp->key[i]);
	free(sp->key);
	free(sp->hash);
	memset(sp, 0, sizeof(*sp));
}

static int profiles_space_grow(struct profiles_space *sp)
{
	size_t nc = sp->hcap ? sp->hcap * 2 : 1024, i;
	uint32_t *nh = malloc(nc * sizeof(*nh));

	if (!nh)
		return -ENOMEM;
	memset(nh, 0xff, nc * sizeof(*nh));
	for (i = 0; i < sp->n; i++) {
		size_t h = profiles_fnv(sp->key[i]) & (nc - 1);

		while (nh[h] != TRACE_NONE)
			h = (h + 1) & (nc - 1);
		nh[h] = (uint32_t)i;
	}
	free(sp->hash);
	sp->hash = nh;
	sp->hcap = nc;
	return 0;
}

uint32_t profiles_space_index(struct profiles_space *sp,
			      const struct trace *t, uint32_t path)
{
	char *key = trace_path_key(t, path);
	size_t h;

	if (!key)
		return TRACE_NONE;
	if (2 * (sp->n + 1) > sp->hcap && profiles_space_grow(sp)) {
		free(key);
		return TRACE_NONE;
	}
	h = profiles_fnv(key) & (sp->hcap - 1);
	while (sp->hash[h] != TRACE_NONE) {
		if (strcmp(sp->key[sp->hash[h]], key) == 0) {
			free(key);
			return sp->hash[h];
		}
		h = (h + 1) & (sp->hcap - 1);
	}
	if (sp->n == sp->cap) {
		size_t nc = sp->cap ? sp->cap * 2 : 256;
		char **n = realloc(sp->key, nc * sizeof(*n));

		if (!n) {
			free(key);
			return TRACE_NONE;
		}
		sp->key = n;
		sp->cap = nc;
	}
	sp->key[sp->n] = key;
	sp->hash[h] = (uint32_t)sp->n;
	return (uint32_t)sp->n++;
}

struct profiles_slot {
	uint64_t key; /* unit << 32 | k; UINT64_MAX empty */
	uint32_t cell; /* index in cell[] */
};

struct profiles_table {
	struct profiles_slot *s;
	size_t cap;
	int bits; /* cap = 1 << bits */
	struct profiles_entry *cell;
	uint32_t *unit; /* per cell */
	size_t n, ncap;
	uint64_t last_key; /* the last cell found (an entry's path is its
			    * time's path too): last_key, or UINT64_MAX */
	size_t last;
};

/* Fibonacci hashing: the product's top bits */
static size_t profiles_slot(uint64_t key, int bits)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* A table of 1 << bits slots (the old one's cells rehashed).  0, -ENOMEM. */
static int profiles_table_grow(struct profiles_table *tb, int nb)
{
	size_t nc = (size_t)1 << nb, i;
	struct profiles_slot *ns = malloc(nc * sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; i < nc; i++)
		ns[i].key = UINT64_MAX;
	for (i = 0; i < tb->cap; i++) {
		size_t j;

		if (tb->s[i].key == UINT64_MAX)
			continue;
		j = profiles_slot(tb->s[i].key, nb);
		while (ns[j].key != UINT64_MAX)
			j = (j + 1) & (nc - 1);
		ns[j] = tb->s[i];
	}
	free(tb->s);
	tb->s = ns;
	tb->cap = nc;
	tb->bits = nb;
	return 0;
}

static struct profiles_entry *profiles_cell(struct profiles_table *tb,
					    uint32_t unit, uint32_t k)
{
	uint64_t key = (uint64_t)unit << 32 | k;
	struct profiles_entry *e;
	size_t h;

	if (key == tb->last_key)
		return &tb->cell[tb->last];
	if (2 * (tb->n + 1) > tb->cap &&
	    profiles_table_grow(tb, tb->bits ? tb->bits + 1 : 12))
		return NULL;
	h = profiles_slot(key, tb->bits);
	while (tb->s[h].key != UINT64_MAX) {
		if (tb->s[h].key == key) {
			tb->last_key = key;
			tb->last = tb->s[h].cell;
			return &tb->cell[tb->last];
		}
		h = (h + 1) & (tb->cap - 1);
	}
	if (tb->n == tb->ncap) {
		size_t nc = tb->ncap ? 2 * tb->ncap : 4096;
		struct profiles_entry *ne = realloc(tb->cell, nc * sizeof(*ne));
		uint32_t *nu = ne ? realloc(tb->unit, nc * sizeof(*nu)) : NULL;

		if (ne)
			tb->cell = ne;
		if (!nu)
			return NULL;
		tb->unit = nu;
		tb->ncap = nc;
	}
	tb->s[h].key = key;
	tb->s[h].cell = (uint32_t)tb->n;
	tb->unit[tb->n] = unit;
	tb->last_key = key;
	tb->last = tb->n;
	e = &tb->cell[tb->n++];
	memset(e, 0, sizeof(*e));
	e->k = k;
	e->path = TRACE_NONE;
	e->first_ts = INT64_MAX;
	return e;
}

/*
 * The cells into each unit's vector, by space index (nk of them): a
 * counting sort by index, then a stable one by unit.  0, -ENOMEM.
 */
static int profiles_table_split(struct profiles_table *tb, size_t nk,
				struct profile *p, size_t nunits)
{
	size_t *at = calloc(nk + 1, sizeof(*at)), i, c;
	uint32_t *order = malloc((tb->n + 1) * sizeof(*order));
	int err = 0;

	if (!at || !order) {
		err = -ENOMEM;
		goto out;
	}
	for (c = 0; c < tb->n; c++)
		at[tb->cell[c].k + 1]++;
	for (i = 0; i < nk; i++)
		at[i + 1] += at[i];
	for (c = 0; c < tb->n; c++)
		order[at[tb->cell[c].k]++] = (uint32_t)c;
	for (c = 0; c < tb->n; c++)
		p[tb->unit[c]].n++;
	for (i = 0; i < nunits; i++) {
		p[i].e = malloc((p[i].n + 1) * sizeof(*p[i].e));
		if (!p[i].e) {
			err = -ENOMEM;
			goto out;
		}
		p[i].n = 0;
	}
	for (c = 0; c < tb->n; c++) {
		uint32_t x = order[c];
		struct profile *q = &p[tb->unit[x]];
		struct profiles_entry *e = &q->e[q->n++];

		*e = tb->cell[x];
		if (q->total_ns)
			e->time /= (double)q->total_ns;
		if (q->total_bytes)
			e->comm /= (double)q->total_bytes;
	}
out:
	free(at);
	free(order);
	return err;
}

void profiles_free(struct profile *p, size_t n)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < n; i++)
		free(p[i].e);
	free(p);
}

/* Did the thread of event i end with its thread or process exiting? */
static int profiles_thread_ended(const struct trace *t, size_t i)
{
	const struct trace_thread *th = &t->th[t->ev[i].thread];
	size_t j;

	for (j = th->first + th->n; j-- > th->first;) {
		int k = t->ev[j].kind;

		if (k == TK_PROCESS_EXIT || k == TK_THREAD_EXIT)
			return 1;
		if (k == TK_ENTRY || k == TK_EXIT)
			return 0;
	}
	return 0;
}

/*
 * Where each unit's time on one thread ([first, end) its events) stops
 * being the unit's: idle[u], the index of the unit's last send on the
 * thread, or SIZE_MAX.  A unit given to the thread by a message (its first
 * event there a recv) is done with it at its last send (the answer, or
 * the request passed on): what the thread does in the unit after it --
 * its loop's wait for the next work, a timer's round between -- is no
 * request's.  Over the unit's events on the thread, not one run of them:
 * a timer's round that no flow holds splits them (redis's serverCron
 * between two waits in epoll_wait), and the run after it, begun by no
 * recv, counted whole.  When the thread's events end in the unit (the
 * trace ended before its next work came), only if one of its sends
 * answered on the channel the work came by, not necessarily the last:
 * redis writes a turn's replies together, and a unit's last send was the
 * other client's reply -- its wait to the end of the trace, 89 ms of
 * epoll_wait, ranked an idle flow over the slow ones (three-tier
 * slow/first, fcr19).  A thread that passed the request on and waits for
 * the reply is still the unit's.
 */
struct profiles_idle_tab {
	size_t *idle;	   /* per unit: the result */
	size_t *recv;	   /* per unit: its first event, when a recv */
	uint8_t *seen;	   /* per unit: 1 met on this thread, 2 answered */
	uint32_t *touched; /* the units met, in order */
};

static void profiles_idle(const struct trace *t, const uint32_t *unit_of,
			  size_t nunits, size_t first, size_t end,
			  struct profiles_idle_tab *it)
{
	uint32_t lastu = end > first ? unit_of[end - 1] : TRACE_NONE;
	size_t i, nt = 0;

	for (i = first; i < end; i++) {
		uint32_t u = unit_of[i];

		if (u == TRACE_NONE || u >= nunits)
			continue;
		if (!it->seen[u]) {
			it->seen[u] = 1;
			it->touched[nt++] = u;
			it->idle[u] = SIZE_MAX;
			it->recv[u] = t->ev[i].kind == TK_RECV ? i : SIZE_MAX;
		}
		if (it->recv[u] != SIZE_MAX && t->ev[i].kind == TK_SEND) {
			it->idle[u] = i;
			if (t->ev[i].arg && t->ev[i].arg == t->ev[it->recv[u]].arg)
				it->seen[u] |= 2; /* answered */
		}
	}
	for (i = 0; i < nt; i++) {
		uint32_t u = it->touched[i];

		if (u == lastu && !(it->seen[u] & 2))
			it->idle[u] = SIZE_MAX; /* a reply owed */
		it->seen[u] = 0;
	}
}

/* The first event of [lo, hi) (one thread's) at or after ts. */
static size_t profiles_first_at(const struct trace *t, size_t lo, size_t hi,
				int64_t ts)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ev[mid].ts_ns < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int profiles_build(struct profiles_space *sp, const struct trace *t,
		   const uint32_t *unit_of, size_t nunits,
		   struct profile **out)
{
	return profiles_build_window(sp, t, unit_of, nunits, 0, 0, out);
}

int profiles_build_window(struct profiles_space *sp, const struct trace *t,
			  const uint32_t *unit_of, size_t nunits, int64_t w0,
			  int64_t w1, struct profile **out)
{
	int win = w1 > w0;
	struct profiles_table tb = { .last_key = UINT64_MAX };
	struct profiles_idle_tab it = { 0 };
	struct profile *p;
	uint32_t *pathk;
	size_t i, th, est;
	int err = 0, bits = 12;

	p = calloc(nunits + 1, sizeof(*p));
	pathk = malloc(t->npath * sizeof(*pathk));
	it.idle = malloc((nunits + 1) * sizeof(*it.idle));
	it.recv = malloc((nunits + 1) * sizeof(*it.recv));
	it.seen = calloc(nunits + 1, 1);
	it.touched = malloc((nunits + 1) * sizeof(*it.touched));
	if (!p || !pathk || !it.idle || !it.recv || !it.seen || !it.touched) {
		err = -ENOMEM;
		goto out;
	}
	memset(pathk, 0xff, t->npath * sizeof(*pathk));
	/* room for the cells most traces make, at once: (unit, path) pairs,
	 * at most one per event (bounded: 2M slots, 32 MB) */
	est = t->npath * (nunits ? nunits : 1);
	if (est > t->nev)
		est = t->nev;
	while (bits < 21 && ((size_t)1 << bits) < 2 * est)
		bits++;
	if (profiles_table_grow(&tb, bits)) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nunits; i++) {
		p[i].t = t;
		p[i].first_ts = INT64_MAX;
		p[i].last_ts = INT64_MIN;
	}
#define PATHK(x)                                                           \
	(pathk[x] != TRACE_NONE ? pathk[x]                                 \
				: (pathk[x] = profiles_space_index(sp, t, x)))
	for (th = 0; th < t->nth; th++) {
		size_t lo = t->th[th].first, hi = lo + t->th[th].n;

		if (win) { /* from the event before w0 (its time runs into the
			    * window) to the first at w1 */
			lo = profiles_first_at(t, lo, hi, w0);
			if (lo > t->th[th].first)
				lo--;
			hi = profiles_first_at(t, lo, hi, w1);
		}
		size_t end = t->th[th].first + t->th[th].n;

		profiles_idle(t, unit_of, nunits, t->th[th].first, end, &it);

		for (i = lo; i < hi; i++) {
			const struct trace_event *e = &t->ev[i];
			uint32_t u = unit_of[i], k;
			struct profiles_entry *ce;

			if (u == TRACE_NONE || u >= nunits)
				continue;
			if (!win || (e->ts_ns >= w0 && e->ts_ns < w1)) {
				p[u].nevents++;
				if (e->ts_ns < p[u].first_ts)
					p[u].first_ts = e->ts_ns;
				if (e->ts_ns > p[u].last_ts)
					p[u].last_ts = e->ts_ns;
				if (e->kind == TK_ENTRY && e->path) {
					if ((k = PATHK(e->path)) == TRACE_NONE ||
					    !(ce = profiles_cell(&tb, u, k))) {
						err = -ENOMEM;
						goto out;
					}
					ce->cov = 1;
					if (e->ts_ns < ce->first_ts) {
						ce->first_ts = e->ts_ns;
						ce->path = e->path;
					}
				}
				if (e->kind == TK_SEND && e->bytes > 0 && e->path) {
					if ((k = PATHK(e->path)) == TRACE_NONE ||
					    !(ce = profiles_cell(&tb, u, k))) {
						err = -ENOMEM;
						goto out;
					}
					ce->comm += (double)e->bytes;
					p[u].total_bytes += e->bytes;
					if (ce->path == TRACE_NONE)
						ce->path = e->path;
				}
			}
			/* the time to the thread's next event, both in the unit; from
			 * a thread's last event in a call, to the end of the trace */
			if (e->after && i < it.idle[u]) {
				int64_t a = e->ts_ns, b = a, dt;

				if (i + 1 < t->nev && t->ev[i + 1].thread == e->thread) {
					if (unit_of[i + 1] == u)
						b = t->ev[i + 1].ts_ns;
				} else if (!profiles_thread_ended(t, i)) {
					b = t->end_ts;
				}
				if (win) {
					a = a < w0 ? w0 : a;
					b = b > w1 ? w1 : b;
				}
				/* less its waits for a CPU: the host's */
				dt = b - a - trace_away_within(t, th, a, b);
				if (dt <= 0)
					continue;

				if ((k = PATHK(e->after)) == TRACE_NONE ||
				    !(ce = profiles_cell(&tb, u, k))) {
					err = -ENOMEM;
					goto out;
				}
				ce->time += (double)dt;
				p[u].total_ns += dt;
				if (ce->path == TRACE_NONE)
					ce->path = e->after;
			}
		}
	}
#undef PATHK
	free(tb.s); /* only the cells are needed now */
	tb.s = NULL;
	err = profiles_table_split(&tb, sp->n, p, nunits);
out:
	free(tb.s);
	free(tb.cell);
	free(tb.unit);
	free(pathk);
	free(it.idle);
	free(it.recv);
	free(it.seen);
	free(it.touched);
	if (err) {
		profiles_free(p, nunits);
		return err;
	}
	*out = p;
	return 0;
}

int profiles_units_by_process(const struct trace *t, uint32_t **unit_of,
			      int64_t **pids, size_t *n)
{
	int64_t *pl = NULL, *first = NULL;
	uint32_t *of;
	size_t np = 0, i, k;

	of = malloc((t->nev + 1) * sizeof(*of));
	pl = malloc((t->nth + 1) * sizeof(*pl));
	first = malloc((t->nth + 1) * sizeof(*first));
	if (!of || !pl || !first) {
		free(of);
		free(pl);
		free(first);
		return -ENOMEM;
	}
	for (k = 0; k < t->nth; k++) {
		int64_t ts;

		if (!t->th[k].n)
			continue;
		ts = t->ev[t->th[k].first].ts_ns;
		for (i = 0; i < np && pl[i] != t->th[k].pid; i++)
			;
		if (i == np) {
			pl[np] = t->th[k].pid;
			first[np++] = ts;
		} else if (ts < first[i]) {
			first[i] = ts;
		}
	}
	/* by first event, then pid */
	for (i = 1; i < np; i++)
		for (k = i; k > 0 && (first[k] < first[k - 1] ||
				      (first[k] == first[k - 1] &&
				       pl[k] < pl[k - 1]));
		     k--) {
			int64_t a = pl[k], b = first[k];

			pl[k] = pl[k - 1];
			first[k] = first[k - 1];
			pl[k - 1] = a;
			first[k - 1] = b;
		}
	for (i = 0; i < t->nev; i++) {
		of[i] = TRACE_NONE;
		for (k = 0; k < np; k++)
			if (pl[k] == t->ev[i].pid) {
				of[i] = (uint32_t)k;
				break;
			}
	}
	free(first);
	*unit_of = of;
	*pids = pl;
	*n = np;
	return 0;
}

const struct profiles_entry *profiles_find(const struct profile *p,
					   uint32_t k)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->e[mid].k < k)
			lo = mid + 1;
		else if (p->e[mid].k > k)
			hi = mid;
		else
			return &p->e[mid];
	}
	return NULL;
}

/* One component of the difference; x or y may be NULL (zero). */
static inline __attribute__((always_inline)) double
profiles_component(const struct profiles_entry *x,
		   const struct profiles_entry *y, int kind)
{
	double cx, cy, tx, ty, sx, sy;

	cx = x ? x->cov : 0;
	cy = y ? y->cov : 0;
	tx = x ? x->time : 0;
	ty = y ? y->time : 0;
	sx = x ? x->comm : 0;
	sy = y ? y->comm : 0;
	switch (kind) {
	case PROFILES_COVERAGE:
		return fabs(cx - cy);
	case PROFILES_TIME:
		return fabs(tx - ty);
	case PROFILES_COMM:
		return fabs(sx - sy);
	default:
		return fabs(tx - ty) + fabs(sx - sy);
	}
}

/* The merge of two profiles' sorted entries, for one kind known at
 * compile time (profiles_distance below: the k-NN scores of a session of
 * 1,400 flows made two million of these, and the kind's switch and the
 * call per entry were half of `report --suspects`). */
static inline __attribute__((always_inline)) double
profiles_distance_of(const struct profile *a, const struct profile *b,
		     int kind)
{
	const struct profiles_entry *x = a->e, *xe = a->e + a->n;
	const struct profiles_entry *y = b->e, *ye = b->e + b->n;
	double d = 0;

	while (x < xe && y < ye) {
		if (x->k < y->k)
			d += profiles_component(x++, NULL, kind);
		else if (y->k < x->k)
			d += profiles_component(NULL, y++, kind);
		else
			d += profiles_component(x++, y++, kind);
	}
	for (; x < xe; x++)
		d += profiles_component(x, NULL, kind);
	for (; y < ye; y++)
		d += profiles_component(NULL, y, kind);
	return d;
}

double profiles_distance(const struct profile *a, const struct profile *b,
			 int kind)
{
	switch (kind) {
	case PROFILES_COVERAGE:
		return profiles_distance_of(a, b, PROFILES_COVERAGE);
	case PROFILES_TIME:
		return profiles_distance_of(a, b, PROFILES_TIME);
	case PROFILES_COMM:
		return profiles_distance_of(a, b, PROFILES_COMM);
	default:
		return profiles_distance_of(a, b, PROFILES_COMPOSITE);
	}
}

uint32_t profiles_max_delta(const struct profile *p, const struct profile *q,
			    int kind, double *value)
{
	size_t i = 0, j = 0;
	uint32_t best = TRACE_NONE;
	double bv = 0;
	int bin = 0;
	int64_t bts = INT64_MAX;

	while (i < p->n || j < q->n) {
		const struct profiles_entry *x = NULL, *y = NULL;
		double v;
		int in;
		int64_t ts;
		uint32_t k;

		if (j == q->n || (i < p->n && p->e[i].k < q->e[j].k)) {
			x = &p->e[i++];
		} else if (i == p->n || q->e[j].k < p->e[i].k) {
			y = &q->e[j++];
		} else {
			x = &p->e[i++];
			y = &q->e[j++];
		}
		v = profiles_component(x, y, kind);
		in = x && (x->cov || x->time > 0 || x->comm > 0);
		ts = x ? x->first_ts : INT64_MAX;
		k = x ? x->k : y->k;
		if (v <= 0)
			continue;
		if (best == TRACE_NONE || v > bv + 1e-12 ||
		    (fabs(v - bv) <= 1e-12 &&
		     (in > bin || (in == bin && ts < bts)))) {
			best = k;
			bv = v;
			bin = in;
			bts = ts;
		}
	}
	if (value)
		*value = bv;
	return best;
}
