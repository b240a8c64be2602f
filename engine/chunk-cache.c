/*
 * engine/chunk-cache.c - the chunked form of engine/reconstruct.h: a
 * session's events decoded a chunk at a time, on demand, into an LRU of
 * RECON_CACHE decoded chunks, so that memory does not grow with the
 * session.  reconstruct.c calls it where r->lazy (see chunk-cache.h).
 *
 * chunk_cache_load: the threads get their chunks from the index with each
 * chunk's first index (base) and order-time bounds [lo_ts, hi_ts] (the
 * running max of the index's ts, so that the order time never decreases
 * across chunks); messages are located by id (no decoding);
 * chunk_cache_bounds decodes the last chunk of each thread to see whether
 * it ends in a fatal signal.  chunk_cache_slot() decodes a chunk into the
 * LRU: order ts, depth, then match/up by a monotonic stack (the last
 * earlier event of each smaller depth), leaving RECON_UNRES where the
 * answer lies in another chunk; chunk_cache_get() resolves those by
 * walking the index (chunk_cache_find_fwd / chunk_cache_find_back) and
 * remembers the answer in the slot.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/chunk-cache.h"
#include "engine/chunk.h"
#include "engine/reconstruct.h"
#include "engine/session.h"

#define RECON_UNRES (-2) /* match/up: in another chunk, not looked up yet */
#define RECON_SLOT_BYTES                                                   \
	(CHUNK_EVENTS * (sizeof(struct recon_ev) + sizeof(struct session_event)))
#define RECON_STACK_BYTES                                                  \
	((CHUNK_EVENTS + 1) * (sizeof(int64_t) + sizeof(int32_t)))

/* chunk k of thread t holding index i */
size_t chunk_cache_chunk_of(const struct recon_thread *th, int64_t i)
{
	size_t lo = 0, hi = th->nck;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (th->ck[mid].base <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

static int chunk_cache_may_hold(const struct recon_chunkref *c, int kind)
{
	return c->kinds < 0 || (c->kinds & (1 << kind));
}

/* order time and the recv raise (happens-before) for chunk k: the first
 * message received in it, in byrecv */
static int64_t chunk_cache_first_recv(const struct recon *r, int t, int64_t i)
{
	int64_t lo = 0, hi = r->nmsgs;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		const struct recon_msg *m = &r->byrecv[mid];

		if (m->rt < t || (m->rt == t && m->ri < i))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The depth tables of a decoded chunk (see struct recon_slot), in three
 * steps: chunk_cache_depths_init (the range, from the conversion loop), one
 * chunk_cache_depths_note per event (in the match/up loop), chunk_cache_depths_done. */
static int chunk_cache_depths_init(struct recon_slot *slot, int32_t lo, int32_t hi)
{
	size_t want;
	int32_t x;

	if (lo > hi)
		lo = hi = 0;
	slot->dlo = lo;
	slot->dhi = hi;
	slot->first_lost = CHUNK_EVENTS;
	slot->last_lost = -1;
	want = (size_t)(hi - lo + 1);
	if (want > slot->cap_le) {
		int32_t *f = realloc(slot->first_le, want * sizeof(*f));
		int32_t *l;

		if (!f)
			return -ENOMEM;
		slot->first_le = f;
		if (!(l = realloc(slot->last_le, want * sizeof(*l))))
			return -ENOMEM;
		slot->last_le = l;
		slot->cap_le = want;
	}
	for (x = 0; x <= hi - lo; x++) {
		slot->first_le[x] = CHUNK_EVENTS;
		slot->last_le[x] = -1;
	}
	return 0;
}

static inline void chunk_cache_depths_note(struct recon_slot *slot, int32_t i,
				    const struct recon_ev *e)
{
	int32_t x;

	if (e->kind == SK_LOST) {
		if (slot->first_lost == CHUNK_EVENTS)
			slot->first_lost = i;
		slot->last_lost = i;
		return;
	}
	x = e->depth - slot->dlo;
	if (slot->first_le[x] == CHUNK_EVENTS)
		slot->first_le[x] = i;
	slot->last_le[x] = i;
}

static void chunk_cache_depths_done(struct recon_slot *slot)
{
	int32_t x;

	for (x = 1; x <= slot->dhi - slot->dlo; x++) {
		if (slot->first_le[x - 1] < slot->first_le[x])
			slot->first_le[x] = slot->first_le[x - 1];
		if (slot->last_le[x - 1] > slot->last_le[x])
			slot->last_le[x] = slot->last_le[x - 1];
	}
}

/* Decode chunk k of thread t into a slot (the least recently used). */
struct recon_slot *chunk_cache_slot(struct recon *r, int t, size_t k)
{
	struct recon_thread *th = &r->threads[t];
	const struct recon_chunkref *c = &th->ck[k];
	struct recon_slot *slot = &r->slots[0];
	int64_t n, i, sp = 0, ts, *stk, nstk = 0;
	int32_t *sdepth, dlo = INT32_MAX, dhi = INT32_MIN;
	int j;

	for (j = 0; j < RECON_CACHE; j++) {
		if (r->slots[j].t == t && r->slots[j].k == k) {
			r->slots[j].used = ++r->tick;
			return &r->slots[j];
		}
		if (r->slots[j].used < slot->used)
			slot = &r->slots[j];
	}
	slot->t = -1;
	slot->raised = 0;
	r->decodes++;
	n = chunk_store_decode(r->store, c->ci, slot->se);
	slot->n = n == c->count ? n : 0;
	if (n != c->count) {
		/* damaged (said on stderr): a gap of its size */
		for (i = 0; i < c->count; i++)
			slot->ev[i] = (struct recon_ev){
				.ts = c->lo_ts, .id = -1, .match = -1,
				.up = -1, .depth = (int16_t)(c->depth_min > 0
							     ? c->depth_min
							     : 0),
				.kind = SK_LOST,
			};
		if (chunk_cache_depths_init(slot, 0, 0))
			return NULL;
		for (i = 0; i < c->count; i++)
			chunk_cache_depths_note(slot, (int32_t)i, &slot->ev[i]);
		goto done;
	}
	ts = c->lo_ts;
	for (i = 0; i < n; i++) {
		const struct session_event *se = &slot->se[i];
		struct recon_ev *e = &slot->ev[i];

		if (se->ts_ns > ts)
			ts = se->ts_ns;
		e->ts = ts < c->hi_ts ? ts : c->hi_ts;
		e->id = se->id;
		e->func = (uint32_t)se->func;
		e->kind = se->kind;
		e->flags = 0;
		if (se->has & SE_DEPTH)
			sp = se->depth > 0 ? se->depth : 0;
		e->depth = (int16_t)(sp < INT16_MAX ? sp : INT16_MAX);
		if (se->kind == SK_ENTRY)
			sp++;
		else if (!(se->has & SE_DEPTH) && se->kind == SK_EXIT && sp)
			e->depth = (int16_t)--sp;
		if (e->kind != SK_LOST) {
			if (e->depth < dlo)
				dlo = e->depth;
			if (e->depth > dhi)
				dhi = e->depth;
		}
	}
	if (chunk_cache_depths_init(slot, dlo, dhi))
		return NULL;
	/* match and up: a stack of earlier events of strictly rising depth
	 * (a gap sits at the bottom, below every depth) */
	stk = r->stack;
	sdepth = (int32_t *)(stk + CHUNK_EVENTS + 1);
	for (i = 0; i < n; i++) {
		struct recon_ev *e = &slot->ev[i];
		int32_t d = e->depth;

		e->match = e->up = RECON_UNRES;
		chunk_cache_depths_note(slot, (int32_t)i, e);
		if (e->kind == SK_LOST) {
			while (nstk) {
				struct recon_ev *o = &slot->ev[stk[--nstk]];

				if (o->kind == SK_ENTRY && o->match == RECON_UNRES)
					o->match = -1;
			}
			e->match = e->up = -1;
			stk[nstk] = i;
			sdepth[nstk++] = -1;
			continue;
		}
		while (nstk && sdepth[nstk - 1] > d) {
			struct recon_ev *o = &slot->ev[stk[--nstk]];

			if (o->kind == SK_ENTRY && o->match == RECON_UNRES)
				o->match = -1;
		}
		if (e->kind == SK_EXIT || e->kind == SK_ENTRY)
			e->match = e->kind == SK_EXIT && nstk ? -1 : RECON_UNRES;
		if (nstk && sdepth[nstk - 1] == d) {
			struct recon_ev *o = &slot->ev[stk[nstk - 1]];

			if (e->kind == SK_EXIT && o->kind == SK_ENTRY) {
				o->match = (int32_t)(c->base + i);
				e->match = (int32_t)(c->base + stk[nstk - 1]);
			} else if (o->kind == SK_ENTRY &&
				   o->match == RECON_UNRES) {
				o->match = -1;
			}
			nstk--;
		}
		if (e->kind != SK_ENTRY && e->kind != SK_EXIT)
			e->match = -1;
		if (!d)
			e->up = -1;
		else if (nstk)
			e->up = slot->ev[stk[nstk - 1]].kind == SK_ENTRY &&
						sdepth[nstk - 1] == d - 1
					? (int32_t)(c->base + stk[nstk - 1])
					: -1;
		stk[nstk] = i;
		sdepth[nstk++] = d;
	}
done:
	chunk_cache_depths_done(slot);
	slot->t = t;
	slot->k = k;
	slot->used = ++r->tick;
	return slot;
}

/* The raw ts_ns of event i of thread t (0 when unreadable). */
static int64_t chunk_cache_raw_ts(struct recon *r, int t, int64_t i)
{
	const struct recon_thread *th = &r->threads[t];
	size_t k = chunk_cache_chunk_of(th, i);
	struct recon_slot *slot = chunk_cache_slot(r, t, k);

	if (!slot || i - th->ck[k].base >= slot->n)
		return 0;
	return slot->se[i - th->ck[k].base].ts_ns;
}

/* Final order times of a decoded chunk: a recv comes after its send
 * (raised above the send's ts_ns, within the chunk's range).  Needs the
 * senders' chunks decoded, not their order times, so that it does not
 * recurse. */
static void chunk_cache_raise(struct recon *r, struct recon_slot *slot)
{
	const struct recon_chunkref *c = &r->threads[slot->t].ck[slot->k];
	int t = slot->t;
	int64_t m, i;

	slot->raised = 1;
	for (m = chunk_cache_first_recv(r, t, c->base);
	     m < r->nmsgs && r->byrecv[m].rt == t &&
	     r->byrecv[m].ri < c->base + c->count;
	     m++) {
		int64_t want = chunk_cache_raw_ts(r, r->byrecv[m].st, r->byrecv[m].si);

		slot->used = ++r->tick; /* keep this slot out of the LRU's way */
		if (!want)
			continue;
		want = want + 1 < c->hi_ts ? want + 1 : c->hi_ts;
		for (i = r->byrecv[m].ri - c->base;
		     i < c->count && slot->ev[i].ts < want; i++)
			slot->ev[i].ts = want;
	}
}

/* The event at i, from the cache (NULL when out of memory). */
static struct recon_ev *chunk_cache_at(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	const struct recon_thread *th = &r->threads[t];
	size_t k = chunk_cache_chunk_of(th, i);
	struct recon_slot *slot = chunk_cache_slot(r, t, k);

	return slot ? &slot->ev[i - th->ck[k].base] : NULL;
}

/* The same, with its final order time. */
struct recon_ev *chunk_cache_at_ts(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	const struct recon_thread *th = &r->threads[t];
	size_t k = chunk_cache_chunk_of(th, i);
	struct recon_slot *slot = chunk_cache_slot(r, t, k);

	if (!slot)
		return NULL;
	if (!slot->raised) {
		chunk_cache_raise(r, slot);
		if (!(slot = chunk_cache_slot(r, t, k)))
			return NULL;
	}
	return &slot->ev[i - th->ck[k].base];
}

/* The first event of chunks k.. with depth <= d, or a gap: its index,
 * or -1.  A chunk that cannot hold one (its depth range, no gap) is
 * skipped undecoded; a decoded one answers from its depth table. */
static int64_t chunk_cache_find_fwd(struct recon *r, int t, size_t k, int32_t d)
{
	const struct recon_thread *th = &r->threads[t];

	for (; k < th->nck; k++) {
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int32_t j;

		if (!c->count ||
		    (c->depth_min > d && !chunk_cache_may_hold(c, SK_LOST)))
			continue;
		if (!(slot = chunk_cache_slot(r, t, k)))
			return -1;
		j = slot->first_lost;
		if (d >= slot->dlo) {
			int32_t x = d < slot->dhi ? d - slot->dlo
						  : slot->dhi - slot->dlo;

			if (slot->first_le[x] < j)
				j = slot->first_le[x];
		}
		if (j < c->count)
			return c->base + j;
	}
	return -1;
}

/* The last event of chunks ..k with depth <= d, or a gap (as above). */
static int64_t chunk_cache_find_back(struct recon *r, int t, size_t k, int32_t d)
{
	const struct recon_thread *th = &r->threads[t];

	for (k++; k-- > 0;) {
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int32_t j;

		if (!c->count ||
		    (c->depth_min > d && !chunk_cache_may_hold(c, SK_LOST)))
			continue;
		if (!(slot = chunk_cache_slot(r, t, k)))
			return -1;
		j = slot->last_lost;
		if (d >= slot->dlo) {
			int32_t x = d < slot->dhi ? d - slot->dlo
						  : slot->dhi - slot->dlo;

			if (slot->last_le[x] > j)
				j = slot->last_le[x];
		}
		if (j >= 0)
			return c->base + j;
	}
	return -1;
}

struct recon_ev chunk_cache_get(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	struct recon_ev *e = chunk_cache_at_ts(r, t, i), v;
	int64_t j, match = -1, up = -1;
	size_t k;

	if (!e)
		return (struct recon_ev){ .id = -1, .match = -1, .up = -1,
					  .kind = SK_LOST };
	v = *e;
	if (v.match != RECON_UNRES && v.up != RECON_UNRES)
		return v;
	/* unresolved: the answer is not in i's chunk (chunk_cache_slot's stack
	 * saw no candidate), so the search starts at the next/previous one */
	k = chunk_cache_chunk_of(&r->threads[t], i);
	if (v.match == RECON_UNRES && v.kind == SK_ENTRY) {
		j = chunk_cache_find_fwd(r, t, k + 1, v.depth);
		if (j >= 0) {
			struct recon_ev *x = chunk_cache_at(r, t, j);

			if (x && x->kind == SK_EXIT && x->depth == v.depth)
				match = j;
		}
	} else if (v.match == RECON_UNRES) { /* an exit */
		j = k ? chunk_cache_find_back(r, t, k - 1, v.depth) : -1;
		if (j >= 0) {
			struct recon_ev *x = chunk_cache_at(r, t, j);

			if (x && x->kind == SK_ENTRY && x->depth == v.depth)
				match = j;
		}
	} else {
		match = v.match;
	}
	if (v.up == RECON_UNRES) {
		j = k ? chunk_cache_find_back(r, t, k - 1, v.depth - 1) : -1;
		if (j >= 0) {
			struct recon_ev *x = chunk_cache_at(r, t, j);

			if (x && x->kind == SK_ENTRY && x->depth == v.depth - 1)
				up = j;
		}
	} else {
		up = v.up;
	}
	v.match = (int32_t)match;
	v.up = (int32_t)up;
	if ((e = chunk_cache_at(r, t, i))) { /* remember (the slot may be new) */
		e->match = v.match;
		e->up = v.up;
	}
	return v;
}

/* Thread t's chunks from the store's index, with their order-time range. */
static int chunk_cache_thread(struct recon *r, int t, const struct chunk_thread *ct)
{
	struct recon_thread *th = &r->threads[t];
	const struct session_chunk *idx;
	size_t nidx, k;
	int64_t base = 0, carry = INT64_MIN;

	idx = chunk_store_index(r->store, &nidx);
	th->ck = calloc(ct->n ? ct->n : 1, sizeof(*th->ck));
	if (!th->ck)
		return -ENOMEM;
	th->nck = ct->n;
	for (k = 0; k < ct->n; k++) {
		const struct session_chunk *sc = &idx[ct->first + k];
		struct recon_chunkref *c = &th->ck[k];
		int64_t cnt = sc->count > 0 && sc->count <= CHUNK_EVENTS
				      ? sc->count
				      : 0;

		c->ci = ct->first + k;
		c->base = base;
		c->count = cnt;
		c->first_seq = sc->first_seq;
		c->depth_min = sc->depth_min;
		c->kinds = sc->kinds;
		if (sc->first_ts > carry)
			carry = sc->first_ts;
		c->lo_ts = carry;
		if (sc->last_ts > carry)
			carry = sc->last_ts;
		base += cnt;
	}
	for (k = 0; k < th->nck; k++)
		th->ck[k].hi_ts = k + 1 < th->nck ? th->ck[k + 1].lo_ts
						  : INT64_MAX;
	th->n = base;
	return 0;
}

int chunk_cache_load(struct recon *r, char **cause)
{
	const struct chunk_thread *cts;
	size_t nct, c;
	int t, j, err;

	r->lazy = 1;
	r->slots = calloc(RECON_CACHE, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	/* the slots' buffers and chunk_cache_slot's match/up stack (indices, then
	 * depths) in one mapping, its pages populated now: a first touch of
	 * each page later costs far more (a page fault each, ~10x the time
	 * here), and would fall on the first steps into new chunks */
	r->maplen = RECON_CACHE * RECON_SLOT_BYTES + RECON_STACK_BYTES;
	r->map = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (r->map == MAP_FAILED)
		return -ENOMEM;
	for (j = 0; j < RECON_CACHE; j++) {
		char *b = (char *)r->map + (size_t)j * RECON_SLOT_BYTES;

		r->slots[j].t = -1;
		r->slots[j].ev = (struct recon_ev *)b;
		r->slots[j].se = (struct session_event *)(b + CHUNK_EVENTS *
						       sizeof(struct recon_ev));
	}
	r->stack = (int64_t *)((char *)r->map + RECON_CACHE * RECON_SLOT_BYTES);
	cts = chunk_store_threads(r->store, &nct);
	for (c = 0; c < nct; c++) {
		t = recon_thread_find(r, (int)cts[c].pid, (int)cts[c].tid);
		if (t < 0 && (t = recon_thread_add(r, (int)cts[c].pid,
						   (int)cts[c].tid)) < 0)
			return t;
		if (r->threads[t].nck)
			continue;
		if ((err = chunk_cache_thread(r, t, &cts[c])))
			return err;
	}
	(void)cause;
	return 0;
}

/* the final order time of (t, i); 0 when out of memory */
static int64_t chunk_cache_ts(struct recon *r, int t, int64_t i)
{
	const struct recon_ev *e = chunk_cache_at_ts(r, t, i);

	return e ? e->ts : 0;
}

/* Session bounds, counts, and whether a thread ends in a fatal signal
 * (its last four events: the last chunk of each thread that may hold a
 * signal is decoded). */
void chunk_cache_bounds(struct recon *r)
{
	int t, signo_fatal = 0;

	r->first_ts = INT64_MAX;
	r->last_ts = INT64_MIN;
	for (t = 0; t < r->nthreads; t++) {
		const struct recon_thread *th = &r->threads[t];
		int64_t i;

		r->nevents += th->n;
		if (!th->n)
			continue;
		if (th->ck[0].lo_ts < r->first_ts)
			r->first_ts = th->ck[0].lo_ts;
		if (chunk_cache_ts(r, t, th->n - 1) > r->last_ts)
			r->last_ts = chunk_cache_ts(r, t, th->n - 1);
		if (!chunk_cache_may_hold(&th->ck[th->nck - 1], SK_SIGNAL) &&
		    (th->nck < 2 || th->ck[th->nck - 1].count >= 4 ||
		     !chunk_cache_may_hold(&th->ck[th->nck - 2], SK_SIGNAL)))
			continue;
		for (i = th->n - 1; i >= 0 && i >= th->n - 4; i--)
			if (chunk_cache_at(r, t, i) && chunk_cache_at(r, t, i)->kind == SK_SIGNAL)
				signo_fatal = 1;
	}
	if (!r->nthreads || r->first_ts == INT64_MAX)
		r->first_ts = r->last_ts = 0;
	if (signo_fatal && !r->hang)
		r->crashed = 1;
}

/* The cache's memory (the slots, their depth tables, the mapping). */
void chunk_cache_free(struct recon *r)
{
	int j;

	if (r->slots)
		for (j = 0; j < RECON_CACHE; j++) {
			free(r->slots[j].first_le);
			free(r->slots[j].last_le);
		}
	free(r->slots);
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->maplen);
}
