/*
 * engine/reconstruct.c - rebuilding call trees and the global order from a
 * session (see engine/reconstruct.h for the invariants).
 *
 * The chunked form (lazy, recon_load -> lazy_load): the threads get their
 * chunks from the index with each chunk's first index (base) and order-time
 * bounds [lo_ts, hi_ts] (the running max of the index's ts, so that the
 * order time never decreases across chunks); messages are located by id
 * (no decoding); the last chunk of each thread is decoded to see whether
 * it ends in a fatal signal.  lazy_slot() decodes a chunk into the LRU:
 * order ts, depth, then match/up by a monotonic stack (the last earlier
 * event of each smaller depth), leaving RECON_UNRES where the answer lies
 * in another chunk; recon_get() resolves those by walking the index
 * (lazy_find_fwd / lazy_find_back) and remembers the answer in the slot.
 *
 * The row form (eager), recon_load() is three passes:
 *   1. one scan of `events` in id order (= per-thread time order), appending
 *      (ts, id, kind, func, stored depth) to each thread's array;
 *   2. per thread: count the exits that have no entry (a wrapped ring lost
 *      them), put one synthetic entry per lost frame at the front (outermost
 *      first, named from the exit record), then walk with a stack to set
 *      match, up and the rebuilt depth, and make ts non-decreasing; a LOST
 *      event empties the stack (its depth becomes the base of what follows);
 *   3. messages: locate both ends, raise a recv's order time above its send
 *      (happens-before) and re-propagate, then sort for lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/chunk.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "share/log.h"

#define PR_DOMAIN "recon"

static int recon_thread_add(struct recon *r, int pid, int tid)
{
	struct recon_thread *nt;

	nt = realloc(r->threads, (r->nthreads + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	r->threads = nt;
	memset(&nt[r->nthreads], 0, sizeof(*nt));
	nt[r->nthreads].pid = pid;
	nt[r->nthreads].tid = tid;
	return r->nthreads++;
}

int recon_thread_find(const struct recon *r, int pid, int tid)
{
	int i;

	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].pid == pid && r->threads[i].tid == tid)
			return i;
	return -1;
}

static int recon_reserve(struct recon_thread *th, int64_t want)
{
	struct recon_ev *ev;
	int64_t cap = th->cap ? th->cap : 1024;

	if (want <= th->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	ev = realloc(th->ev, cap * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	th->ev = ev;
	th->cap = cap;
	return 0;
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

static int load_meta(struct recon *r)
{
	char *v;

	v = session_meta_get(r->session, "crashed");
	r->crashed = v && atoi(v) == 1;
	free(v);
	v = session_meta_get(r->session, "reason");
	r->hang = v && strcmp(v, "hang") == 0;
	free(v);
	return 0;
}

static int load_funcs(struct recon *r, char **cause)
{
	sqlite3 *db = session_db(r->session);
	sqlite3_stmt *st;
	int64_t max = 0;

	if (sqlite3_prepare_v2(db, "SELECT max(id) FROM functions", -1, &st,
			       NULL) != SQLITE_OK)
		goto sqlerr;
	if (sqlite3_step(st) == SQLITE_ROW)
		max = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (max < 0 || max > 100000000)
		return propel_cause(cause, -EINVAL, "%s: bad function ids",
				    session_path(r->session));
	r->nfuncs = (uint32_t)max + 1;
	r->funcs = calloc(r->nfuncs, sizeof(*r->funcs));
	if (!r->funcs)
		return -ENOMEM;
	if (sqlite3_prepare_v2(db, "SELECT id, name, file, line FROM functions",
			       -1, &st, NULL) != SQLITE_OK)
		goto sqlerr;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id < 0 || id >= r->nfuncs)
			continue;
		/* (an id twice: a damaged file's table; the last one) */
		free(r->funcs[id].name);
		free(r->funcs[id].file);
		r->funcs[id].name = col_strdup(st, 1);
		r->funcs[id].file = col_strdup(st, 2);
		r->funcs[id].line = sqlite3_column_int(st, 3);
	}
	sqlite3_finalize(st);
	return 0;
sqlerr:
	return propel_cause(cause, -EIO, "%s: %s", session_path(r->session),
			    sqlite3_errmsg(db));
}

static int load_threads(struct recon *r, char **cause)
{
	sqlite3 *db = session_db(r->session);
	sqlite3_stmt *st;
	int t, err = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT pid, tid, name, nevents, wrapped FROM "
			       "threads ORDER BY first_ns, id",
			       -1, &st, NULL) != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s: %s",
				    session_path(r->session),
				    sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		int pid = sqlite3_column_int(st, 0), tid = sqlite3_column_int(st, 1);
		int64_t n = sqlite3_column_int64(st, 3);

		if (recon_thread_find(r, pid, tid) >= 0)
			continue;
		t = recon_thread_add(r, pid, tid);
		if (t < 0) {
			err = t;
			break;
		}
		r->threads[t].name = col_strdup(st, 2);
		r->threads[t].wrapped = sqlite3_column_int(st, 4);
		/* the row form is read into memory: room for it at once */
		if (n > 0 && n < ((int64_t)1 << 32) &&
		    chunk_store_rows_form(r->store))
			err = recon_reserve(&r->threads[t], n + 64);
		if (err)
			break;
	}
	sqlite3_finalize(st);
	return err;
}

static int load_events(struct recon *r, char **cause)
{
	const struct chunk_thread *cts;
	struct chunk_iter it;
	size_t nct, c;
	int err = 0, rc = 0;

	cts = chunk_store_threads(r->store, &nct);
	for (c = 0; !err && c < nct; c++) {
		const struct session_event *se;
		struct recon_thread *th;
		int t = recon_thread_find(r, (int)cts[c].pid, (int)cts[c].tid);

		if (t < 0 && (t = recon_thread_add(r, (int)cts[c].pid,
						   (int)cts[c].tid)) < 0)
			return t;
		th = &r->threads[t];
		if (cts[c].count > 0 && th->cap < th->n + cts[c].count &&
		    (err = recon_reserve(th, th->n + cts[c].count)))
			break;
		if ((err = chunk_iter_init(&it, r->store, cts[c].pid,
					   cts[c].tid)))
			break;
		while ((rc = chunk_iter_next(&it, &se)) == 1) {
			struct recon_ev *e;

			if (th->n == th->cap &&
			    (err = recon_reserve(th, th->n + 1)))
				break;
			e = &th->ev[th->n++];
			e->id = se->id;
			e->ts = se->ts_ns;
			e->kind = se->kind;
			e->depth = se->has & SE_DEPTH ? (int16_t)se->depth : -1;
			e->func = (uint32_t)se->func;
			e->match = e->up = -1;
			e->flags = 0;
		}
		chunk_iter_release(&it);
		if (!err && rc < 0)
			err = propel_cause(cause, -EIO,
					   "%s: reading events: corrupt or "
					   "truncated session",
					   session_path(r->session));
	}
	return err;
}

/* Pass 2 for one thread: synthetic entries, match/up/depth, monotone ts. */
static int build_thread(struct recon_thread *th)
{
	int64_t i, k = 0, sp = 0, *stack = NULL, scap = 0;
	int64_t open = 0, base = 0;
	int err = 0;

	/* orphan exits before the first gap are frames a wrapped ring lost */
	for (i = 0; i < th->n && th->ev[i].kind != SK_LOST; i++) {
		if (th->ev[i].kind == SK_ENTRY)
			open++;
		else if (th->ev[i].kind == SK_EXIT) {
			if (open)
				open--;
			else
				k++;
		}
	}
	if (k) {
		int64_t j, d;

		if ((err = recon_reserve(th, th->n + k)))
			return err;
		memmove(th->ev + k, th->ev, th->n * sizeof(*th->ev));
		th->n += k;
		/* orphan exits in order are frames k-1, k-2, ..., 0 */
		open = 0;
		d = k - 1;
		for (j = k; j < th->n && d >= 0; j++) {
			struct recon_ev *e = &th->ev[j];

			if (e->kind == SK_LOST)
				break;
			if (e->kind == SK_ENTRY)
				open++;
			else if (e->kind == SK_EXIT) {
				if (open)
					open--;
				else {
					th->ev[d] = (struct recon_ev){
						.ts = th->ev[k].ts,
						.id = -1,
						.func = e->func,
						.match = -1,
						.up = -1,
						.depth = -1,
						.kind = SK_ENTRY,
						.flags = RECON_F_SYNTH,
					};
					d--;
				}
			}
		}
		th->nsynth = (int)k;
		th->wrapped = 1;
	}
	for (i = 0; i < th->n; i++) {
		struct recon_ev *e = &th->ev[i];
		int16_t stored = e->depth;

		if (i && e->ts < th->ev[i - 1].ts)
			e->ts = th->ev[i - 1].ts;
		if (e->kind == SK_LOST) {
			/* a gap: nothing open before it is matched after it;
			 * what follows sits at the depth the agent gives */
			base = stored >= 0 ? stored : base + sp;
			sp = 0;
			e->depth = (int16_t)base;
			e->up = e->match = -1;
			continue;
		}
		e->up = sp ? (int32_t)stack[sp - 1] : -1;
		if (e->kind == SK_ENTRY) {
			e->depth = (int16_t)(base + sp);
			e->match = -1;
			if (sp == scap) {
				int64_t *ns;

				scap = scap ? scap * 2 : 64;
				ns = realloc(stack, scap * sizeof(*ns));
				if (!ns) {
					free(stack);
					return -ENOMEM;
				}
				stack = ns;
			}
			stack[sp++] = i;
		} else if (e->kind == SK_EXIT && sp) {
			int64_t en = stack[--sp];

			e->match = (int32_t)en;
			th->ev[en].match = (int32_t)i;
			e->depth = (int16_t)(base + sp);
			e->up = sp ? (int32_t)stack[sp - 1] : -1;
		} else if (e->kind == SK_EXIT && base) {
			/* closes a frame opened before a gap */
			base--;
			e->depth = (int16_t)base;
			e->match = -1;
		} else {
			e->depth = (int16_t)(base + sp);
		}
		if ((e->kind == SK_ENTRY || e->kind == SK_EXIT) &&
		    !(e->flags & RECON_F_SYNTH) && stored >= 0 &&
		    stored != e->depth)
			th->depth_fixed++;
	}
	free(stack);
	return 0;
}

/* ---- the chunked form: lazy ---- */

static int64_t ev_ts(const struct recon *r, int t, int64_t i);

#define RECON_UNRES (-2) /* match/up: in another chunk, not looked up yet */
#define RECON_SLOT_BYTES                                                   \
	(CHUNK_EVENTS * (sizeof(struct recon_ev) + sizeof(struct session_event)))
#define RECON_STACK_BYTES                                                  \
	((CHUNK_EVENTS + 1) * (sizeof(int64_t) + sizeof(int32_t)))

struct recon_chunkref {
	size_t ci;	     /* in the store's index */
	int64_t base;	     /* index of its first event in the thread */
	int64_t count, first_seq;
	int64_t lo_ts, hi_ts; /* its events' order times lie in [lo, hi] */
	int32_t depth_min;
	int32_t kinds;	     /* -1 unknown */
};

struct recon_slot {
	int t; /* -1 empty */
	size_t k;
	struct recon_ev *ev;
	struct session_event *se; /* the chunk as stored (raw ts, args) */
	int64_t n;
	int raised; /* order times final (lazy_raise) */
	/* for the searches across chunks: the first / last index whose
	 * depth is <= dlo + x (x = 0 .. dhi - dlo), and the first / last gap
	 * (CHUNK_EVENTS / -1 when none) */
	int32_t dlo, dhi, first_lost, last_lost;
	int32_t *first_le, *last_le;
	size_t cap_le;
	uint64_t used;
};

/* chunk k of thread t holding index i */
static size_t lazy_chunk_of(const struct recon_thread *th, int64_t i)
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

static int lazy_may_hold(const struct recon_chunkref *c, int kind)
{
	return c->kinds < 0 || (c->kinds & (1 << kind));
}

/* order time and the recv raise (happens-before) for chunk k: the first
 * message received in it, in byrecv */
static int64_t lazy_first_recv(const struct recon *r, int t, int64_t i)
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
 * steps: lazy_depths_init (the range, from the conversion loop), one
 * lazy_depths_note per event (in the match/up loop), lazy_depths_done. */
static int lazy_depths_init(struct recon_slot *slot, int32_t lo, int32_t hi)
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

static inline void lazy_depths_note(struct recon_slot *slot, int32_t i,
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

static void lazy_depths_done(struct recon_slot *slot)
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
static struct recon_slot *lazy_slot(struct recon *r, int t, size_t k)
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
		if (lazy_depths_init(slot, 0, 0))
			return NULL;
		for (i = 0; i < c->count; i++)
			lazy_depths_note(slot, (int32_t)i, &slot->ev[i]);
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
	if (lazy_depths_init(slot, dlo, dhi))
		return NULL;
	/* match and up: a stack of earlier events of strictly rising depth
	 * (a gap sits at the bottom, below every depth) */
	stk = r->stack;
	sdepth = (int32_t *)(stk + CHUNK_EVENTS + 1);
	for (i = 0; i < n; i++) {
		struct recon_ev *e = &slot->ev[i];
		int32_t d = e->depth;

		e->match = e->up = RECON_UNRES;
		lazy_depths_note(slot, (int32_t)i, e);
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
	lazy_depths_done(slot);
	slot->t = t;
	slot->k = k;
	slot->used = ++r->tick;
	return slot;
}

/* The raw ts_ns of event i of thread t (0 when unreadable). */
static int64_t lazy_raw_ts(struct recon *r, int t, int64_t i)
{
	const struct recon_thread *th = &r->threads[t];
	size_t k = lazy_chunk_of(th, i);
	struct recon_slot *slot = lazy_slot(r, t, k);

	if (!slot || i - th->ck[k].base >= slot->n)
		return 0;
	return slot->se[i - th->ck[k].base].ts_ns;
}

/* Final order times of a decoded chunk: a recv comes after its send
 * (raised above the send's ts_ns, within the chunk's range).  Needs the
 * senders' chunks decoded, not their order times, so that it does not
 * recurse. */
static void lazy_raise(struct recon *r, struct recon_slot *slot)
{
	const struct recon_chunkref *c = &r->threads[slot->t].ck[slot->k];
	int t = slot->t;
	int64_t m, i;

	slot->raised = 1;
	for (m = lazy_first_recv(r, t, c->base);
	     m < r->nmsgs && r->byrecv[m].rt == t &&
	     r->byrecv[m].ri < c->base + c->count;
	     m++) {
		int64_t want = lazy_raw_ts(r, r->byrecv[m].st, r->byrecv[m].si);

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
static struct recon_ev *lazy_at(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	const struct recon_thread *th = &r->threads[t];
	size_t k = lazy_chunk_of(th, i);
	struct recon_slot *slot = lazy_slot(r, t, k);

	return slot ? &slot->ev[i - th->ck[k].base] : NULL;
}

/* The same, with its final order time. */
static struct recon_ev *lazy_at_ts(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	const struct recon_thread *th = &r->threads[t];
	size_t k = lazy_chunk_of(th, i);
	struct recon_slot *slot = lazy_slot(r, t, k);

	if (!slot)
		return NULL;
	if (!slot->raised) {
		lazy_raise(r, slot);
		if (!(slot = lazy_slot(r, t, k)))
			return NULL;
	}
	return &slot->ev[i - th->ck[k].base];
}

/* The first event of chunks k.. with depth <= d, or a gap: its index,
 * or -1.  A chunk that cannot hold one (its depth range, no gap) is
 * skipped undecoded; a decoded one answers from its depth table. */
static int64_t lazy_find_fwd(struct recon *r, int t, size_t k, int32_t d)
{
	const struct recon_thread *th = &r->threads[t];

	for (; k < th->nck; k++) {
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int32_t j;

		if (!c->count ||
		    (c->depth_min > d && !lazy_may_hold(c, SK_LOST)))
			continue;
		if (!(slot = lazy_slot(r, t, k)))
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
static int64_t lazy_find_back(struct recon *r, int t, size_t k, int32_t d)
{
	const struct recon_thread *th = &r->threads[t];

	for (k++; k-- > 0;) {
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int32_t j;

		if (!c->count ||
		    (c->depth_min > d && !lazy_may_hold(c, SK_LOST)))
			continue;
		if (!(slot = lazy_slot(r, t, k)))
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

static struct recon_ev lazy_get(const struct recon *cr, int t, int64_t i)
{
	struct recon *r = (struct recon *)cr;
	struct recon_ev *e = lazy_at_ts(r, t, i), v;
	int64_t j, match = -1, up = -1;
	size_t k;

	if (!e)
		return (struct recon_ev){ .id = -1, .match = -1, .up = -1,
					  .kind = SK_LOST };
	v = *e;
	if (v.match != RECON_UNRES && v.up != RECON_UNRES)
		return v;
	/* unresolved: the answer is not in i's chunk (lazy_slot's stack
	 * saw no candidate), so the search starts at the next/previous one */
	k = lazy_chunk_of(&r->threads[t], i);
	if (v.match == RECON_UNRES && v.kind == SK_ENTRY) {
		j = lazy_find_fwd(r, t, k + 1, v.depth);
		if (j >= 0) {
			struct recon_ev *x = lazy_at(r, t, j);

			if (x && x->kind == SK_EXIT && x->depth == v.depth)
				match = j;
		}
	} else if (v.match == RECON_UNRES) { /* an exit */
		j = k ? lazy_find_back(r, t, k - 1, v.depth) : -1;
		if (j >= 0) {
			struct recon_ev *x = lazy_at(r, t, j);

			if (x && x->kind == SK_ENTRY && x->depth == v.depth)
				match = j;
		}
	} else {
		match = v.match;
	}
	if (v.up == RECON_UNRES) {
		j = k ? lazy_find_back(r, t, k - 1, v.depth - 1) : -1;
		if (j >= 0) {
			struct recon_ev *x = lazy_at(r, t, j);

			if (x && x->kind == SK_ENTRY && x->depth == v.depth - 1)
				up = j;
		}
	} else {
		up = v.up;
	}
	v.match = (int32_t)match;
	v.up = (int32_t)up;
	if ((e = lazy_at(r, t, i))) { /* remember (the slot may be new) */
		e->match = v.match;
		e->up = v.up;
	}
	return v;
}

/* Thread t's chunks from the store's index, with their order-time range. */
static int lazy_thread(struct recon *r, int t, const struct chunk_thread *ct)
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

static int lazy_load(struct recon *r, char **cause)
{
	const struct chunk_thread *cts;
	size_t nct, c;
	int t, j, err;

	r->lazy = 1;
	r->slots = calloc(RECON_CACHE, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	/* the slots' buffers and lazy_slot's match/up stack (indices, then
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
		if ((err = lazy_thread(r, t, &cts[c])))
			return err;
	}
	(void)cause;
	return 0;
}

/* Session bounds, counts, and whether a thread ends in a fatal signal
 * (its last four events: the last chunk of each thread that may hold a
 * signal is decoded). */
static void lazy_bounds(struct recon *r)
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
		if (ev_ts(r, t, th->n - 1) > r->last_ts)
			r->last_ts = ev_ts(r, t, th->n - 1);
		if (!lazy_may_hold(&th->ck[th->nck - 1], SK_SIGNAL) &&
		    (th->nck < 2 || th->ck[th->nck - 1].count >= 4 ||
		     !lazy_may_hold(&th->ck[th->nck - 2], SK_SIGNAL)))
			continue;
		for (i = th->n - 1; i >= 0 && i >= th->n - 4; i--)
			if (lazy_at(r, t, i) && lazy_at(r, t, i)->kind == SK_SIGNAL)
				signo_fatal = 1;
	}
	if (!r->nthreads || r->first_ts == INT64_MAX)
		r->first_ts = r->last_ts = 0;
	if (signo_fatal && !r->hang)
		r->crashed = 1;
}

/* the order time of (t, i) */
static int64_t ev_ts(const struct recon *r, int t, int64_t i)
{
	const struct recon_ev *e;

	if (!r->lazy)
		return r->threads[t].ev[i].ts;
	e = lazy_at_ts(r, t, i);
	return e ? e->ts : 0;
}

/* first index whose ts is >= ts (strict = 0) or > ts (strict = 1) */
static int64_t ts_bound(const struct recon *r, int t, int64_t ts, int strict)
{
	const struct recon_thread *th = &r->threads[t];
	int64_t lo = 0, hi = th->n;

	if (r->lazy) {
		/* the chunk: the first whose range can reach past ts */
		size_t klo = 0, khi = th->nck;

		while (klo < khi) {
			size_t mid = (klo + khi) / 2;

			if (strict ? th->ck[mid].hi_ts <= ts
				   : th->ck[mid].hi_ts < ts)
				klo = mid + 1;
			else
				khi = mid;
		}
		if (klo >= th->nck)
			return th->n;
		lo = th->ck[klo].base;
		hi = lo + th->ck[klo].count;
	}
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int64_t v = ev_ts(r, t, mid);

		if (strict ? v <= ts : v < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int64_t lower_bound(const struct recon *r, int t, int64_t ts)
{
	return ts_bound(r, t, ts, 0);
}

static int64_t upper_bound(const struct recon *r, int t, int64_t ts)
{
	return ts_bound(r, t, ts, 1);
}

int64_t recon_at_ts(const struct recon *r, int t, int64_t ts_ns)
{
	return upper_bound(r, t, ts_ns) - 1;
}

int recon_locate(const struct recon *r, int64_t id, int *thread,
		 int64_t *idx)
{
	int t;

	if (r->lazy) {
		size_t ci;

		if (chunk_store_find(r->store, id, &ci))
			return -ENOENT;
		for (t = 0; t < r->nthreads; t++) {
			const struct recon_thread *th = &r->threads[t];
			const struct recon_chunkref *c;

			if (!th->nck || ci < th->ck[0].ci ||
			    ci > th->ck[th->nck - 1].ci)
				continue;
			c = &th->ck[ci - th->ck[0].ci];
			if (id - c->first_seq >= c->count)
				return -ENOENT;
			*thread = t;
			*idx = c->base + id - c->first_seq;
			return 0;
		}
		return -ENOENT;
	}
	for (t = 0; t < r->nthreads; t++) {
		const struct recon_thread *th = &r->threads[t];
		int64_t lo = th->nsynth, hi = th->n;

		if (lo >= hi || id < th->ev[lo].id || id > th->ev[hi - 1].id)
			continue;
		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;

			if (th->ev[mid].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < th->n && th->ev[lo].id == id) {
			*thread = t;
			*idx = lo;
			return 0;
		}
	}
	return -ENOENT;
}

static int msg_cmp_send(const void *a, const void *b)
{
	const struct recon_msg *x = a, *y = b;

	if (x->st != y->st)
		return x->st < y->st ? -1 : 1;
	return x->si < y->si ? -1 : x->si > y->si;
}

static int msg_cmp_recv(const void *a, const void *b)
{
	const struct recon_msg *x = a, *y = b;

	if (x->rt != y->rt)
		return x->rt < y->rt ? -1 : 1;
	return x->ri < y->ri ? -1 : x->ri > y->ri;
}

static int load_messages(struct recon *r, char **cause)
{
	sqlite3 *db = session_db(r->session);
	sqlite3_stmt *st;
	int64_t cap = 0;
	int round, changed;

	if (sqlite3_prepare_v2(db, "SELECT send, recv FROM messages", -1, &st,
			       NULL) != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s: %s",
				    session_path(r->session),
				    sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct recon_msg m;

		m.sid = sqlite3_column_int64(st, 0);
		if (recon_locate(r, m.sid, &m.st, &m.si) ||
		    recon_locate(r, sqlite3_column_int64(st, 1), &m.rt, &m.ri))
			continue;
		if (r->nmsgs == cap) {
			struct recon_msg *nm;

			cap = cap ? cap * 2 : 64;
			nm = realloc(r->msgs, cap * sizeof(*nm));
			if (!nm) {
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			r->msgs = nm;
		}
		r->msgs[r->nmsgs++] = m;
	}
	sqlite3_finalize(st);
	/* happens-before: a recv is after its send; raise and propagate
	 * (the chunked form raises as it decodes, lazy_slot) */
	for (round = 0; !r->lazy && round < 8; round++) {
		int64_t i, j;

		changed = 0;
		for (i = 0; i < r->nmsgs; i++) {
			struct recon_msg *m = &r->msgs[i];
			struct recon_thread *rt = &r->threads[m->rt];
			int64_t want = r->threads[m->st].ev[m->si].ts + 1;

			if (rt->ev[m->ri].ts >= want)
				continue;
			for (j = m->ri; j < rt->n && rt->ev[j].ts < want; j++)
				rt->ev[j].ts = want;
			changed = 1;
		}
		if (!changed)
			break;
	}
	if (r->nmsgs) {
		qsort(r->msgs, r->nmsgs, sizeof(*r->msgs), msg_cmp_send);
		r->byrecv = malloc(r->nmsgs * sizeof(*r->byrecv));
		if (!r->byrecv)
			return -ENOMEM;
		memcpy(r->byrecv, r->msgs, r->nmsgs * sizeof(*r->byrecv));
		qsort(r->byrecv, r->nmsgs, sizeof(*r->byrecv), msg_cmp_recv);
	}
	return 0;
}

int recon_load(struct session *s, struct recon **out, char **cause)
{
	struct recon *r;
	int t, err, signo_fatal = 0;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->session = s;
	load_meta(r);
	if ((err = chunk_store_open(s, &r->store, cause)))
		goto fail;
	if ((err = load_funcs(r, cause)) || (err = load_threads(r, cause)))
		goto fail;
	if (!chunk_store_rows_form(r->store)) {
		if ((err = lazy_load(r, cause)) ||
		    (err = load_messages(r, cause)))
			goto fail;
		lazy_bounds(r);
		*out = r;
		return 0;
	}
	if ((err = load_events(r, cause)))
		goto fail;
	r->first_ts = INT64_MAX;
	r->last_ts = INT64_MIN;
	for (t = 0; t < r->nthreads; t++) {
		struct recon_thread *th = &r->threads[t];
		int64_t i;

		if ((err = build_thread(th)))
			goto fail;
		r->nevents += th->n - th->nsynth;
		if (th->n) {
			if (th->ev[0].ts < r->first_ts)
				r->first_ts = th->ev[0].ts;
			if (th->ev[th->n - 1].ts > r->last_ts)
				r->last_ts = th->ev[th->n - 1].ts;
		}
		for (i = th->n - 1; i >= 0 && i >= th->n - 4; i--)
			if (th->ev[i].kind == SK_SIGNAL)
				signo_fatal = 1;
	}
	if ((err = load_messages(r, cause)))
		goto fail;
	for (t = 0; t < r->nthreads; t++) {
		struct recon_thread *th = &r->threads[t];

		if (th->n && th->ev[th->n - 1].ts > r->last_ts)
			r->last_ts = th->ev[th->n - 1].ts;
	}
	if (!r->nthreads || r->first_ts == INT64_MAX)
		r->first_ts = r->last_ts = 0;
	if (signo_fatal && !r->hang)
		r->crashed = 1;
	*out = r;
	return 0;
fail:
	if (err == -ENOMEM)
		propel_cause(cause, err, "out of memory loading %s",
			     session_path(s));
	recon_free(r);
	return err;
}

void recon_free(struct recon *r)
{
	int t;
	uint32_t f;

	if (!r)
		return;
	chunk_store_free(r->store);
	for (t = 0; t < r->nthreads; t++) {
		free(r->threads[t].ev);
		free(r->threads[t].ck);
		free(r->threads[t].name);
	}
	if (r->slots)
		for (t = 0; t < RECON_CACHE; t++) {
			free(r->slots[t].first_le);
			free(r->slots[t].last_le);
		}
	free(r->slots);
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->maplen);
	free(r->threads);
	for (f = 0; f < r->nfuncs; f++) {
		free(r->funcs[f].name);
		free(r->funcs[f].file);
	}
	free(r->funcs);
	free(r->msgs);
	free(r->byrecv);
	free(r);
}

const char *recon_func_name(const struct recon *r, uint32_t func)
{
	if (func < r->nfuncs && r->funcs[func].name)
		return r->funcs[func].name;
	return "?";
}

struct recon_ev recon_get(const struct recon *r, int t, int64_t i)
{
	if (!r->lazy)
		return r->threads[t].ev[i];
	return lazy_get(r, t, i);
}

int64_t recon_match(const struct recon *r, int t, int64_t i)
{
	return recon_get(r, t, i).match;
}

int64_t recon_up(const struct recon *r, int t, int64_t i)
{
	return recon_get(r, t, i).up;
}

int64_t recon_scan(const struct recon *cr, int t, int64_t from, int dir,
		   int kinds, int (*pred)(const struct recon_ev *, void *),
		   void *arg)
{
	struct recon *r = (struct recon *)cr;
	const struct recon_thread *th = &r->threads[t];
	int64_t i = from;

	if (!r->lazy) {
		for (; i >= 0 && i < th->n; i += dir > 0 ? 1 : -1)
			if ((kinds & (1 << th->ev[i].kind)) &&
			    (!pred || pred(&th->ev[i], arg)))
				return i;
		return -1;
	}
	while (i >= 0 && i < th->n) {
		size_t k = lazy_chunk_of(th, i);
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int skip = c->kinds >= 0 && !(c->kinds & kinds);

		if (!skip && (slot = lazy_slot(r, t, k))) {
			for (; i >= c->base && i < c->base + c->count;
			     i += dir > 0 ? 1 : -1) {
				const struct recon_ev *e = &slot->ev[i - c->base];

				if ((kinds & (1 << e->kind)) &&
				    (!pred || pred(e, arg)))
					return i;
			}
			continue;
		}
		i = dir > 0 ? c->base + c->count : c->base - 1;
	}
	return -1;
}

int recon_kinds_from(const struct recon *r, int t, int64_t ts, int dir)
{
	const struct recon_thread *th = &r->threads[t];
	int kinds = 0;
	size_t k;

	if (!r->lazy)
		return -1;
	for (k = 0; k < th->nck; k++) {
		const struct recon_chunkref *c = &th->ck[k];

		if (dir > 0 ? c->hi_ts >= ts : c->lo_ts <= ts) {
			if (c->kinds < 0)
				return -1;
			kinds |= c->kinds;
		}
	}
	return kinds;
}

int64_t recon_frame(const struct recon *r, int t, int64_t idx)
{
	struct recon_ev e = recon_get(r, t, idx);

	if (e.kind == SK_ENTRY)
		return idx;
	if (e.kind == SK_EXIT && e.match >= 0)
		return e.match;
	return e.up;
}

int recon_peer(const struct recon *r, int t, int64_t idx, int *ot,
	       int64_t *oidx)
{
	struct recon_msg key = { .st = t, .si = idx, .rt = t, .ri = idx };
	const struct recon_msg *m;
	int kind;

	if (!r->nmsgs)
		return -ENOENT;
	kind = recon_get(r, t, idx).kind;
	if (kind == SK_SEND) {
		const struct recon_msg *best, *end = r->msgs + r->nmsgs;

		m = bsearch(&key, r->msgs, r->nmsgs, sizeof(*m), msg_cmp_send);
		if (!m)
			return -ENOENT;
		/* a send read by several recvs: the first of them in time
		 * (where its first byte arrived), whatever order bsearch met */
		while (m > r->msgs && !msg_cmp_send(m - 1, &key))
			m--;
		for (best = m; m < end && !msg_cmp_send(m, &key); m++)
			if (recon_get(r, m->rt, m->ri).ts <
			    recon_get(r, best->rt, best->ri).ts)
				best = m;
		*ot = best->rt;
		*oidx = best->ri;
		return 0;
	}
	if (kind == SK_RECV) {
		m = bsearch(&key, r->byrecv, r->nmsgs, sizeof(*m), msg_cmp_recv);
		if (!m)
			return -ENOENT;
		*ot = m->st;
		*oidx = m->si;
		return 0;
	}
	return -ENOENT;
}

/* key order (ts, thread, index) */
static int key_less(int64_t ts1, int t1, int64_t i1, int64_t ts2, int t2,
		    int64_t i2)
{
	if (ts1 != ts2)
		return ts1 < ts2;
	if (t1 != t2)
		return t1 < t2;
	return i1 < i2;
}

int recon_global_next(const struct recon *r, int t, int64_t idx, int *nt,
		      int64_t *nidx)
{
	int64_t ts0 = ev_ts(r, t, idx), best_i = -1, bts = 0;
	int u, best_t = -1;

	for (u = 0; u < r->nthreads; u++) {
		const struct recon_thread *th = &r->threads[u];
		int64_t j, ts;

		if (u == t)
			j = idx + 1;
		else if (u < t)
			j = upper_bound(r, u, ts0);
		else
			j = lower_bound(r, u, ts0);
		if (j >= th->n)
			continue;
		ts = ev_ts(r, u, j);
		if (best_t < 0 || key_less(ts, u, j, bts, best_t, best_i)) {
			best_t = u;
			best_i = j;
			bts = ts;
		}
	}
	if (best_t < 0)
		return -ENOENT;
	*nt = best_t;
	*nidx = best_i;
	return 0;
}

int recon_global_prev(const struct recon *r, int t, int64_t idx, int *nt,
		      int64_t *nidx)
{
	int64_t ts0 = ev_ts(r, t, idx), best_i = -1, bts = 0;
	int u, best_t = -1;

	for (u = 0; u < r->nthreads; u++) {
		int64_t j, ts;

		if (u == t)
			j = idx - 1;
		else if (u < t)
			j = upper_bound(r, u, ts0) - 1;
		else
			j = lower_bound(r, u, ts0) - 1;
		if (j < 0)
			continue;
		ts = ev_ts(r, u, j);
		if (best_t < 0 || key_less(bts, best_t, best_i, ts, u, j)) {
			best_t = u;
			best_i = j;
			bts = ts;
		}
	}
	if (best_t < 0)
		return -ENOENT;
	*nt = best_t;
	*nidx = best_i;
	return 0;
}

int recon_row(const struct recon *r, int64_t id, struct recon_row *row)
{
	struct session_event ev;

	memset(row, 0, sizeof(*row));
	row->site = -1;
	if (id < 0)
		return -ENOENT;
	if (r->lazy) { /* through the decoded chunks */
		int t;
		int64_t i;
		size_t k;
		struct recon_slot *slot;

		if (recon_locate(r, id, &t, &i))
			return -ENOENT;
		k = lazy_chunk_of(&r->threads[t], i);
		slot = lazy_slot((struct recon *)r, t, k);
		i -= r->threads[t].ck[k].base;
		if (!slot || i >= slot->n)
			return -ENOENT;
		ev = slot->se[i];
	} else if (chunk_store_event(r->store, id, &ev, NULL, NULL)) {
		return -ENOENT;
	}
	row->ts_ns = ev.ts_ns;
	row->arg0 = ev.arg[0];
	row->arg1 = ev.arg[1];
	row->arg2 = ev.arg[2];
	if (ev.site > 0)
		row->site = ev.site;
	row->stored_depth = ev.depth;
	return 0;
}

int recon_event_site(const struct recon *r, int t, int64_t idx, char **file,
		     int *line)
{
	struct recon_ev e = recon_get(r, t, idx);
	struct recon_row row;
	int64_t f;

	*file = NULL;
	*line = 0;
	if (e.kind == SK_ENTRY || e.kind == SK_EXIT) {
		if (!recon_row(r, e.id, &row) && row.site >= 0 &&
		    !session_callsite(r->session, row.site, file, line))
			return 0;
		if (e.match >= 0 &&
		    !recon_row(r, recon_get(r, t, e.match).id, &row) &&
		    row.site >= 0 &&
		    !session_callsite(r->session, row.site, file, line))
			return 0;
	}
	f = e.kind == SK_ENTRY || e.kind == SK_EXIT ? idx : recon_frame(r, t, idx);
	if (f < 0)
		return -ENOENT;
	e = recon_get(r, t, f);
	if (e.func < r->nfuncs && r->funcs[e.func].file) {
		*file = strdup(r->funcs[e.func].file);
		*line = r->funcs[e.func].line;
		return *file ? 0 : -ENOMEM;
	}
	return -ENOENT;
}
