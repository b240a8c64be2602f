/*
 * analysis/trace.c - see analysis/trace.h.
 *
 * Strings and paths are interned through open-addressed tables of indices
 * (FNV-1a hashes, linear probing, grown at half load).  trace_finish sorts
 * (id, index) pairs once to resolve the messages, then walks each thread
 * keeping a stack of paths by depth.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace.h"

static uint64_t trace_fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 1099511628211ull;
	return h;
}

static int trace_grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *n;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	n = realloc(*arr, nc * size);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = nc;
	return 0;
}

struct trace *trace_new(void)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (trace_grow((void **)&t->str, &t->strcap, 1, sizeof(*t->str)) ||
	    trace_grow((void **)&t->path, &t->pathcap, 1, sizeof(*t->path)) ||
	    !(t->str[0] = strdup(""))) {
		trace_free(t);
		return NULL;
	}
	t->nstr = 1;
	memset(&t->path[0], 0, sizeof(t->path[0]));
	t->npath = 1;
	return t;
}

void trace_free(struct trace *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nstr; i++)
		free(t->str[i]);
	free(t->str);
	free(t->ev);
	free(t->th);
	free(t->proc);
	free(t->path);
	free(t->strhash);
	free(t->pathhash);
	free(t->msg);
	free(t->aw);
	free(t);
}

/* Rebuild a table of indices at twice the size; hash(i) hashes entry i. */
static int trace_rehash(uint32_t **tab, size_t *cap, size_t n,
			uint64_t (*hash)(const struct trace *, uint32_t),
			const struct trace *t)
{
	size_t nc = *cap ? *cap * 2 : 1024, i;
	uint32_t *nt;

	while (nc < 2 * n + 2)
		nc *= 2;
	nt = malloc(nc * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	memset(nt, 0xff, nc * sizeof(*nt));
	for (i = 1; i < n; i++) {
		size_t h = hash(t, (uint32_t)i) & (nc - 1);

		while (nt[h] != TRACE_NONE)
			h = (h + 1) & (nc - 1);
		nt[h] = (uint32_t)i;
	}
	free(*tab);
	*tab = nt;
	*cap = nc;
	return 0;
}

static uint64_t trace_str_hash(const struct trace *t, uint32_t i)
{
	return trace_fnv(t->str[i], strlen(t->str[i]), 1469598103934665603ull);
}

uint32_t trace_intern(struct trace *t, const char *s)
{
	size_t h;

	if (!s || !*s)
		return 0;
	if (2 * (t->nstr + 1) > t->strhcap &&
	    trace_rehash(&t->strhash, &t->strhcap, t->nstr, trace_str_hash, t))
		return TRACE_NONE;
	h = trace_fnv(s, strlen(s), 1469598103934665603ull) & (t->strhcap - 1);
	while (t->strhash[h] != TRACE_NONE) {
		if (strcmp(t->str[t->strhash[h]], s) == 0)
			return t->strhash[h];
		h = (h + 1) & (t->strhcap - 1);
	}
	if (trace_grow((void **)&t->str, &t->strcap, t->nstr + 1,
		       sizeof(*t->str)))
		return TRACE_NONE;
	if (!(t->str[t->nstr] = strdup(s)))
		return TRACE_NONE;
	t->strhash[h] = (uint32_t)t->nstr;
	return (uint32_t)t->nstr++;
}

const char *trace_str(const struct trace *t, uint32_t i)
{
	return i < t->nstr ? t->str[i] : "";
}

static uint64_t trace_path_hash3(uint32_t parent, uint32_t func, uint32_t site)
{
	uint32_t k[3] = { parent, func, site };

	return trace_fnv(k, sizeof(k), 1469598103934665603ull);
}

static uint64_t trace_path_hash(const struct trace *t, uint32_t i)
{
	return trace_path_hash3(t->path[i].parent, t->path[i].func,
				t->path[i].site);
}

static uint32_t trace_path_get(struct trace *t, uint32_t parent, uint32_t func,
			       uint32_t site)
{
	size_t h;
	struct trace_path *p;

	if (2 * (t->npath + 1) > t->pathhcap &&
	    trace_rehash(&t->pathhash, &t->pathhcap, t->npath, trace_path_hash,
			 t))
		return TRACE_NONE;
	h = trace_path_hash3(parent, func, site) & (t->pathhcap - 1);
	while (t->pathhash[h] != TRACE_NONE) {
		p = &t->path[t->pathhash[h]];
		if (p->parent == parent && p->func == func && p->site == site)
			return t->pathhash[h];
		h = (h + 1) & (t->pathhcap - 1);
	}
	if (trace_grow((void **)&t->path, &t->pathcap, t->npath + 1,
		       sizeof(*t->path)))
		return TRACE_NONE;
	p = &t->path[t->npath];
	p->parent = parent;
	p->func = func;
	p->site = site;
	p->len = t->path[parent].len + 1;
	t->pathhash[h] = (uint32_t)t->npath;
	return (uint32_t)t->npath++;
}

int trace_reserve(struct trace *t, size_t n)
{
	return trace_grow((void **)&t->ev, &t->cap, n, sizeof(*t->ev));
}

int trace_thread_begin(struct trace *t, int64_t pid, int64_t tid)
{
	struct trace_thread *th;

	if (trace_grow((void **)&t->th, &t->thcap, t->nth + 1, sizeof(*t->th)))
		return -ENOMEM;
	th = &t->th[t->nth++];
	th->pid = pid;
	th->tid = tid;
	th->first = t->nev;
	th->n = 0;
	th->aw_first = th->aw_n = 0;
	return 0;
}

int trace_add(struct trace *t, const struct trace_event *e)
{
	struct trace_event *d;

	if (!t->nth)
		return -EINVAL;
	if (trace_grow((void **)&t->ev, &t->cap, t->nev + 1, sizeof(*t->ev)))
		return -ENOMEM;
	d = &t->ev[t->nev++];
	*d = *e;
	d->pid = t->th[t->nth - 1].pid;
	d->tid = t->th[t->nth - 1].tid;
	d->thread = (uint32_t)(t->nth - 1);
	d->match = TRACE_NONE;
	d->path = d->after = 0;
	t->th[t->nth - 1].n++;
	return 0;
}

int trace_message(struct trace *t, int64_t send_id, int64_t recv_id)
{
	if (trace_grow((void **)&t->msg, &t->msgcap, t->nmsg + 1,
		       sizeof(*t->msg)))
		return -ENOMEM;
	t->msg[t->nmsg][0] = send_id;
	t->msg[t->nmsg][1] = recv_id;
	t->nmsg++;
	return 0;
}

int trace_process_add(struct trace *t, const struct trace_process *p)
{
	if (trace_grow((void **)&t->proc, &t->proccap, t->nproc + 1,
		       sizeof(*t->proc)))
		return -ENOMEM;
	t->proc[t->nproc++] = *p;
	return 0;
}

int trace_away_add(struct trace *t, int64_t pid, int64_t tid, int64_t a,
		   int64_t b)
{
	if (b <= a)
		return 0;
	if (trace_grow((void **)&t->aw, &t->awcap, t->naw + 1, sizeof(*t->aw)))
		return -ENOMEM;
	t->aw[t->naw].pid = pid;
	t->aw[t->naw].tid = tid;
	t->aw[t->naw].a = a;
	t->aw[t->naw++].b = b;
	return 0;
}

static int trace_away_cmp(const void *x, const void *y)
{
	const struct trace_away *p = x, *q = y;

	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	return p->a < q->a ? -1 : p->a > q->a;
}

/* Each thread's times away: sorted, overlaps merged, found by (pid,
 * tid). */
static void trace_away_threads(struct trace *t)
{
	size_t i, n = 0;

	if (!t->naw)
		return;
	qsort(t->aw, t->naw, sizeof(*t->aw), trace_away_cmp);
	for (i = 0; i < t->naw; i++) {
		struct trace_away *l = n ? &t->aw[n - 1] : NULL;

		if (l && l->pid == t->aw[i].pid && l->tid == t->aw[i].tid &&
		    t->aw[i].a <= l->b) {
			if (t->aw[i].b > l->b)
				l->b = t->aw[i].b;
		} else {
			t->aw[n++] = t->aw[i];
		}
	}
	t->naw = n;
	for (i = 0; i < t->nth; i++) {
		struct trace_thread *th = &t->th[i];
		size_t lo = 0, hi = t->naw;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct trace_away *r = &t->aw[mid];

			if (r->pid < th->pid ||
			    (r->pid == th->pid && r->tid < th->tid))
				lo = mid + 1;
			else
				hi = mid;
		}
		th->aw_first = lo;
		while (lo < t->naw && t->aw[lo].pid == th->pid &&
		       t->aw[lo].tid == th->tid)
			lo++;
		th->aw_n = lo - th->aw_first;
	}
}

int64_t trace_away_within(const struct trace *t, size_t th, int64_t a,
			  int64_t b)
{
	const struct trace_away *r;
	size_t lo, hi, end;
	int64_t sum = 0;

	if (th >= t->nth || !t->th[th].aw_n || b <= a)
		return 0;
	lo = t->th[th].aw_first;
	end = hi = lo + t->th[th].aw_n;
	while (lo < hi) { /* the first wait that ends after a */
		size_t mid = (lo + hi) / 2;

		if (t->aw[mid].b <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (r = &t->aw[lo]; r < &t->aw[end] && r->a < b; r++)
		sum += (r->b < b ? r->b : b) - (r->a > a ? r->a : a);
	return sum;
}

const struct trace_process *trace_process_get(const struct trace *t,
					      int64_t pid)
{
	size_t i;

	/* the last row: an exec makes a new one for the same pid */
	for (i = t->nproc; i-- > 0;)
		if (t->proc[i].pid == pid)
			return &t->proc[i];
	return NULL;
}

struct trace_idx {
	int64_t id;
	uint32_t i;
};

static int trace_idx_cmp(const void *a, const void *b)
{
	const struct trace_idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t trace_find(const struct trace_idx *ix, size_t n, int64_t id)
{
	struct trace_idx k = { id, 0 }, *r;

	r = bsearch(&k, ix, n, sizeof(*ix), trace_idx_cmp);
	return r ? r->i : TRACE_NONE;
}

static int trace_paths(struct trace *t)
{
	uint32_t *stack = NULL;
	size_t cap = 0, k, i;
	int err = 0;

	for (k = 0; k < t->nth && !err; k++) {
		size_t sp = 0;

		for (i = t->th[k].first; i < t->th[k].first + t->th[k].n; i++) {
			struct trace_event *e = &t->ev[i];
			size_t d = e->depth > 0 ? (size_t)e->depth : 0;

			if (e->kind == TK_ENTRY) {
				uint32_t parent = d > 0 && d - 1 < sp
							  ? stack[d - 1]
							  : 0;
				uint32_t p = trace_path_get(t, parent, e->func,
							    e->site);

				if (p == TRACE_NONE ||
				    trace_grow((void **)&stack, &cap, d + 1,
					       sizeof(*stack))) {
					err = -ENOMEM;
					break;
				}
				if (d > sp) /* frames we never saw */
					memset(stack + sp, 0,
					       (d - sp) * sizeof(*stack));
				stack[d] = p;
				sp = d + 1;
				e->path = e->after = p;
			} else if (e->kind == TK_EXIT) {
				e->path = d < sp ? stack[d] : 0;
				if (d < sp)
					sp = d;
				e->after = sp > 0 ? stack[sp - 1] : 0;
			} else {
				e->path = e->after = sp > 0 ? stack[sp - 1] : 0;
			}
		}
	}
	free(stack);
	return err;
}

int trace_finish(struct trace *t)
{
	struct trace_idx *ix = NULL;
	int64_t *child = NULL;
	size_t i, nchild = 0, nix = 0;
	int64_t best_ts = INT64_MAX;

	if (t->nmsg) {
		/* only sends and recvs can be a message's ends */
		for (i = 0; i < t->nev; i++)
			nix += t->ev[i].kind == TK_SEND ||
			       t->ev[i].kind == TK_RECV;
		ix = malloc((nix + 1) * sizeof(*ix));
		if (!ix)
			return -ENOMEM;
		for (i = 0, nix = 0; i < t->nev; i++)
			if (t->ev[i].kind == TK_SEND ||
			    t->ev[i].kind == TK_RECV) {
				ix[nix].id = t->ev[i].id;
				ix[nix++].i = (uint32_t)i;
			}
		qsort(ix, nix, sizeof(*ix), trace_idx_cmp);
		for (i = 0; i < t->nmsg; i++) {
			uint32_t s = trace_find(ix, nix, t->msg[i][0]);
			uint32_t r = trace_find(ix, nix, t->msg[i][1]);

			if (s == TRACE_NONE || r == TRACE_NONE ||
			    t->ev[s].kind != TK_SEND || t->ev[r].kind != TK_RECV)
				continue;
			if (t->ev[r].match == TRACE_NONE)
				t->nrecv_matched++;
			t->ev[r].match = s;
		}
		free(ix);
	}
	/* the first traced process: no traced process forked it; of those,
	 * the one whose first event is earliest */
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].kind == TK_FORK)
			nchild++;
	child = malloc((nchild + 1) * sizeof(*child));
	if (!child)
		return -ENOMEM;
	nchild = 0;
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].kind == TK_FORK)
			child[nchild++] = t->ev[i].arg;
	t->first_pid = 0;
	t->end_ts = INT64_MIN;
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].ts_ns > t->end_ts)
			t->end_ts = t->ev[i].ts_ns;
	for (i = 0; i < t->nth; i++) {
		size_t c;
		int forked = 0;

		if (!t->th[i].n)
			continue;
		for (c = 0; c < nchild; c++)
			forked |= child[c] == t->th[i].pid;
		if (forked)
			continue;
		if (t->ev[t->th[i].first].ts_ns < best_ts ||
		    (t->ev[t->th[i].first].ts_ns == best_ts &&
		     t->th[i].pid < t->first_pid)) {
			best_ts = t->ev[t->th[i].first].ts_ns;
			t->first_pid = t->th[i].pid;
		}
	}
	free(child);
	trace_away_threads(t);
	return trace_paths(t);
}

size_t trace_path_funcs(const struct trace *t, uint32_t path,
			const char **out, size_t max)
{
	size_t n = path < t->npath ? t->path[path].len : 0, i = n;
	uint32_t p = path;

	while (i > 0 && p) {
		i--;
		if (i < max)
			out[i] = trace_str(t, t->path[p].func);
		p = t->path[p].parent;
	}
	return n;
}

char *trace_path_key(const struct trace *t, uint32_t path)
{
	size_t n = path < t->npath ? t->path[path].len : 0, len = 1, i;
	uint32_t *chain, p = path;
	char *key, *w;

	chain = malloc((n + 1) * sizeof(*chain));
	if (!chain)
		return NULL;
	for (i = n; i > 0 && p; p = t->path[p].parent)
		chain[--i] = p;
	for (i = 0; i < n; i++) {
		const char *site = trace_str(t, t->path[chain[i]].site);
		const char *base = strrchr(site, '/');

		base = base ? base + 1 : site;
		len += strlen(trace_str(t, t->path[chain[i]].func)) +
		       strlen(base) + 2;
	}
	key = malloc(len);
	if (!key) {
		free(chain);
		return NULL;
	}
	w = key;
	*w = 0;
	for (i = 0; i < n; i++) {
		const char *site = trace_str(t, t->path[chain[i]].site);
		const char *base = strrchr(site, '/');

		base = base ? base + 1 : site;
		w += sprintf(w, "%s%s@%s", i ? ">" : "",
			     trace_str(t, t->path[chain[i]].func), base);
	}
	free(chain);
	return key;
}
