/*
 * engine/reconstruct.c - rebuilding call trees and the global order from a
 * session (see engine/reconstruct.h for the invariants).
 *
 * recon_load() is three passes:
 *   1. one scan of `events` in id order (= per-thread time order), appending
 *      (ts, id, kind, func, stored depth) to each thread's array;
 *   2. per thread: count the exits that have no entry (a wrapped ring lost
 *      them), put one synthetic entry per lost frame at the front (outermost
 *      first, named from the exit record), then walk with a stack to set
 *      match, up and the rebuilt depth, and make ts non-decreasing;
 *   3. messages: locate both ends, raise a recv's order time above its send
 *      (happens-before) and re-propagate, then sort for lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		if (n > 0 && n < ((int64_t)1 << 32))
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
	int64_t open = 0;
	int err = 0;

	for (i = 0; i < th->n; i++) {
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
		e->up = sp ? (int32_t)stack[sp - 1] : -1;
		if (e->kind == SK_ENTRY) {
			e->depth = (int16_t)sp;
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
			e->depth = (int16_t)sp;
			e->up = sp ? (int32_t)stack[sp - 1] : -1;
		} else {
			e->depth = (int16_t)sp;
		}
		if ((e->kind == SK_ENTRY || e->kind == SK_EXIT) &&
		    !(e->flags & RECON_F_SYNTH) && stored >= 0 &&
		    stored != e->depth)
			th->depth_fixed++;
	}
	free(stack);
	return 0;
}

static int64_t lower_bound(const struct recon_thread *th, int64_t ts)
{
	int64_t lo = 0, hi = th->n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (th->ev[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int64_t upper_bound(const struct recon_thread *th, int64_t ts)
{
	int64_t lo = 0, hi = th->n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (th->ev[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int64_t recon_at_ts(const struct recon *r, int t, int64_t ts_ns)
{
	return upper_bound(&r->threads[t], ts_ns) - 1;
}

int recon_locate(const struct recon *r, int64_t id, int *thread,
		 int64_t *idx)
{
	int t;

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

		if (recon_locate(r, sqlite3_column_int64(st, 0), &m.st, &m.si) ||
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
	/* happens-before: a recv is after its send; raise and propagate. */
	for (round = 0; round < 8; round++) {
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
	if ((err = load_funcs(r, cause)) || (err = load_threads(r, cause)) ||
	    (err = load_events(r, cause)))
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
		free(r->threads[t].name);
	}
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

int64_t recon_frame(const struct recon_thread *th, int64_t idx)
{
	const struct recon_ev *e = &th->ev[idx];

	if (e->kind == SK_ENTRY)
		return idx;
	if (e->kind == SK_EXIT && e->match >= 0)
		return e->match;
	return e->up;
}

int recon_peer(const struct recon *r, int t, int64_t idx, int *ot,
	       int64_t *oidx)
{
	struct recon_msg key = { .st = t, .si = idx, .rt = t, .ri = idx };
	const struct recon_msg *m;
	int kind = r->threads[t].ev[idx].kind;

	if (!r->nmsgs)
		return -ENOENT;
	if (kind == SK_SEND) {
		m = bsearch(&key, r->msgs, r->nmsgs, sizeof(*m), msg_cmp_send);
		if (!m)
			return -ENOENT;
		*ot = m->rt;
		*oidx = m->ri;
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
	int64_t ts0 = r->threads[t].ev[idx].ts, best_i = -1, bts = 0;
	int u, best_t = -1;

	for (u = 0; u < r->nthreads; u++) {
		const struct recon_thread *th = &r->threads[u];
		int64_t j;

		if (u == t)
			j = idx + 1;
		else if (u < t)
			j = upper_bound(th, ts0);
		else
			j = lower_bound(th, ts0);
		if (j >= th->n)
			continue;
		if (best_t < 0 || key_less(th->ev[j].ts, u, j, bts, best_t, best_i)) {
			best_t = u;
			best_i = j;
			bts = th->ev[j].ts;
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
	int64_t ts0 = r->threads[t].ev[idx].ts, best_i = -1, bts = 0;
	int u, best_t = -1;

	for (u = 0; u < r->nthreads; u++) {
		const struct recon_thread *th = &r->threads[u];
		int64_t j;

		if (u == t)
			j = idx - 1;
		else if (u < t)
			j = upper_bound(th, ts0) - 1;
		else
			j = lower_bound(th, ts0) - 1;
		if (j < 0)
			continue;
		if (best_t < 0 || key_less(bts, best_t, best_i, th->ev[j].ts, u, j)) {
			best_t = u;
			best_i = j;
			bts = th->ev[j].ts;
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
	if (id < 0 || chunk_store_event(r->store, id, &ev, NULL, NULL))
		return -ENOENT;
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
	const struct recon_thread *th = &r->threads[t];
	const struct recon_ev *e = &th->ev[idx];
	struct recon_row row;
	int64_t f;

	*file = NULL;
	*line = 0;
	if (e->kind == SK_ENTRY || e->kind == SK_EXIT) {
		if (!recon_row(r, e->id, &row) && row.site >= 0 &&
		    !session_callsite(r->session, row.site, file, line))
			return 0;
		if (e->match >= 0 &&
		    !recon_row(r, th->ev[e->match].id, &row) && row.site >= 0 &&
		    !session_callsite(r->session, row.site, file, line))
			return 0;
	}
	f = e->kind == SK_ENTRY || e->kind == SK_EXIT ? idx : recon_frame(th, idx);
	if (f < 0)
		return -ENOENT;
	e = &th->ev[f];
	if (e->func < r->nfuncs && r->funcs[e->func].file) {
		*file = strdup(r->funcs[e->func].file);
		*line = r->funcs[e->func].line;
		return *file ? 0 : -ENOMEM;
	}
	return -ENOENT;
}
