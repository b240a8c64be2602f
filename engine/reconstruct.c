/*
 * engine/reconstruct.c - rebuilding call trees and the global order from a
 * session (see engine/reconstruct.h for the invariants).
 *
 * The chunked form (lazy): recon_load -> chunk_cache_load; its decoded
 * chunks, and match/up across them, are engine/chunk-cache.c's; this file
 * asks it for an event where r->lazy and reads its slots in recon_scan
 * and recon_row.
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

#include "engine/chunk-cache.h"
#include "engine/chunk.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "share/log.h"

#define PR_DOMAIN "recon"

int recon_thread_add(struct recon *r, int pid, int tid)
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

/* the order time of (t, i) */
static int64_t ev_ts(const struct recon *r, int t, int64_t i)
{
	const struct recon_ev *e;

	if (!r->lazy)
		return r->threads[t].ev[i].ts;
	e = chunk_cache_at_ts(r, t, i);
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
	 * (the chunked form raises as it decodes, chunk_cache_slot) */
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
		if ((err = chunk_cache_load(r, cause)) ||
		    (err = load_messages(r, cause)))
			goto fail;
		chunk_cache_bounds(r);
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
	chunk_cache_free(r);
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
	return chunk_cache_get(r, t, i);
}

int64_t recon_ts(const struct recon *r, int t, int64_t i)
{
	const struct recon_ev *e;

	if (!r->lazy)
		return r->threads[t].ev[i].ts;
	e = chunk_cache_at_ts(r, t, i);
	return e ? e->ts : 0;
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
		size_t k = chunk_cache_chunk_of(th, i);
		const struct recon_chunkref *c = &th->ck[k];
		struct recon_slot *slot;
		int skip = c->kinds >= 0 && !(c->kinds & kinds);

		if (!skip && (slot = chunk_cache_slot(r, t, k))) {
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
		k = chunk_cache_chunk_of(&r->threads[t], i);
		slot = chunk_cache_slot((struct recon *)r, t, k);
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
	row->has = ev.has;
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
