/*
 * engine/cursor.c - moves over a reconstructed trace (semantics in
 * engine/cursor.h).  The cursor reads events only through recon_get()
 * (engine/reconstruct.h), so on a chunked session a move decodes at most
 * the few chunks it touches.  Every move is O(depth) or a binary search,
 * except continue, which scans each thread from the cursor's time for the
 * next stop (recon_scan: without breakpoints, chunks that hold no signal
 * are skipped undecoded).
 *
 * The move record: a small stack of (from, to, move) pushed by every
 * successful forward move and popped by its reverse twin made at `to`.
 * Any other move or jump clears it.
 *
 * A position is (thread, index, call).  call = 1 only on an entry, where
 * reverse-finish lands: the moment of the call, seen from the caller, so
 * the cursor's frame (cursor_frame) is the caller's and the location is the
 * entry's call site.  From there step enters the call (call = 0, same
 * index), reverse-step and reverse-next go to the event before it, finish
 * finishes the caller, reverse-finish goes out once more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cursor.h"
#include "engine/session.h"
#include "share/log.h"

#define CURSOR_HISTORY 256

struct cursor_rec {
	int ft, tt;
	int64_t fi, ti;
	int fc, tc; /* the call flag at each end */
	enum cursor_move m;
};

struct cursor {
	struct recon *r;
	int t;
	int64_t i;
	int call; /* 1: before the entry at i, in its caller at the call line */
	uint8_t *brk; /* per function id: 1 = break here */
	int nbrk;
	struct cursor_rec hist[CURSOR_HISTORY];
	int nhist;
	struct recon_ev cur; /* the event at (t, i) */
};

static const struct {
	const char *name;
	const char *alias[4];
} move_names[CURSOR_NMOVES] = {
	[CURSOR_STEP] = { "step", { "s" } },
	[CURSOR_NEXT] = { "next", { "n" } },
	[CURSOR_FINISH] = { "finish", { "fin", "f" } },
	[CURSOR_CONTINUE] = { "continue", { "c", "cont" } },
	[CURSOR_RSTEP] = { "reverse-step", { "rs", "S" } },
	[CURSOR_RNEXT] = { "reverse-next", { "rn", "N" } },
	[CURSOR_RFINISH] = { "reverse-finish", { "rf", "F" } },
	[CURSOR_RCONTINUE] = { "reverse-continue", { "rc", "C" } },
};

const char *cursor_move_name(enum cursor_move m)
{
	return m < CURSOR_NMOVES ? move_names[m].name : "?";
}

int cursor_move_parse(const char *name)
{
	int m, a;

	for (m = 0; m < CURSOR_NMOVES; m++) {
		if (strcmp(name, move_names[m].name) == 0)
			return m;
		for (a = 0; a < 4 && move_names[m].alias[a]; a++)
			if (strcmp(name, move_names[m].alias[a]) == 0)
				return m;
	}
	return -1;
}

enum cursor_move cursor_move_twin(enum cursor_move m)
{
	return m < CURSOR_RSTEP ? m + CURSOR_RSTEP : m - CURSOR_RSTEP;
}

struct cursor *cursor_new(struct recon *r)
{
	struct cursor *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->r = r;
	c->brk = calloc(r->nfuncs ? r->nfuncs : 1, 1);
	if (!c->brk) {
		free(c);
		return NULL;
	}
	cursor_home(c);
	return c;
}

void cursor_free(struct cursor *c)
{
	if (!c)
		return;
	free(c->brk);
	free(c);
}

struct recon *cursor_recon(struct cursor *c)
{
	return c->r;
}

int cursor_thread(const struct cursor *c)
{
	return c->t;
}

int64_t cursor_index(const struct cursor *c)
{
	return c->i;
}

const struct recon_ev *cursor_event(const struct cursor *c)
{
	if (c->t < 0 || c->t >= c->r->nthreads || !c->r->threads[c->t].n)
		return NULL;
	((struct cursor *)c)->cur = recon_get(c->r, c->t, c->i);
	return &c->cur;
}

int64_t cursor_event_id(const struct cursor *c)
{
	const struct recon_ev *e = cursor_event(c);

	return e ? e->id : -1;
}

int cursor_at_call(const struct cursor *c)
{
	return c->call;
}

int64_t cursor_frame(const struct cursor *c)
{
	const struct recon_ev *e = cursor_event(c);

	if (!e)
		return -1;
	return c->call ? e->up : recon_frame(c->r, c->t, c->i);
}

static int is_fatal_signal(const struct recon *r, int t, int64_t i)
{
	return i >= r->threads[t].n - 4 && recon_get(r, t, i).kind == SK_SIGNAL;
}

static int64_t ev_ts(const struct recon *r, int t, int64_t i)
{
	return recon_get(r, t, i).ts;
}

void cursor_home(struct cursor *c)
{
	struct recon *r = c->r;
	int t, best_t = -1;
	int64_t best_i = -1, i;

	c->t = 0;
	c->i = 0;
	c->call = 0;
	c->nhist = 0;
	while (c->t < r->nthreads && !r->threads[c->t].n)
		c->t++;
	if (c->t == r->nthreads) {
		c->t = 0;
		return;
	}
	if (r->hang) { /* the snapshot's moment: the latest event */
		int64_t best = ev_ts(r, c->t, r->threads[c->t].n - 1);

		for (t = 0; t < r->nthreads; t++)
			if (r->threads[t].n &&
			    ev_ts(r, t, r->threads[t].n - 1) >= best) {
				c->t = t;
				c->i = r->threads[t].n - 1;
				best = ev_ts(r, t, c->i);
			}
		return;
	}
	if (!r->crashed)
		return;
	for (t = 0; t < r->nthreads; t++) {
		struct recon_thread *th = &r->threads[t];

		for (i = th->n - 1; i >= 0 && i >= th->n - 4; i--) {
			if (!is_fatal_signal(r, t, i))
				continue;
			if (best_t < 0 ||
			    ev_ts(r, t, i) < ev_ts(r, best_t, best_i)) {
				best_t = t;
				best_i = i;
			}
			break;
		}
	}
	if (best_t >= 0) {
		c->t = best_t;
		c->i = best_i;
	}
}

static void set_pos(struct cursor *c, int t, int64_t i, int call,
		    enum cursor_move m, int record)
{
	if (record) {
		if (c->nhist == CURSOR_HISTORY) {
			memmove(c->hist, c->hist + 1,
				(CURSOR_HISTORY - 1) * sizeof(c->hist[0]));
			c->nhist--;
		}
		c->hist[c->nhist++] = (struct cursor_rec){
			.ft = c->t, .fi = c->i, .fc = c->call,
			.tt = t, .ti = i, .tc = call, .m = m
		};
	} else {
		c->nhist = 0;
	}
	c->t = t;
	c->i = i;
	c->call = call;
}

static int is_stop(const struct cursor *c, const struct recon_ev *e)
{
	if (e->kind == SK_SIGNAL)
		return 1;
	return e->kind == SK_ENTRY && c->nbrk && e->func < c->r->nfuncs &&
	       c->brk[e->func];
}

static int stop_pred(const struct recon_ev *e, void *arg)
{
	return is_stop(arg, e);
}

/* The first stop at or after j (dir > 0), at or before j (dir < 0). */
static int64_t next_stop(const struct cursor *c, int t, int64_t j, int dir)
{
	int kinds = 1 << SK_SIGNAL | (c->nbrk ? 1 << SK_ENTRY : 0);

	return recon_scan(c->r, t, j, dir, kinds, stop_pred, (void *)c);
}

/* continue: earliest stop after (or latest before) the cursor's key. */
static int find_stop(const struct cursor *c, int forward, int *ot,
		     int64_t *oi)
{
	const struct recon *r = c->r;
	int64_t ts0 = ev_ts(r, c->t, c->i), bts = 0;
	int u, bt = -1;
	int64_t bi = -1;

	for (u = 0; u < r->nthreads; u++) {
		int64_t j, ts;
		int kinds = 1 << SK_SIGNAL | (c->nbrk ? 1 << SK_ENTRY : 0);

		if (!r->threads[u].n)
			continue;
		/* a thread with no stop on that side of the cursor's time
		 * (says the chunk index) is not looked into */
		if (u != c->t &&
		    !(recon_kinds_from(r, u, ts0, forward ? 1 : -1) & kinds))
			continue;
		if (forward) {
			if (u == c->t) /* before a call: the call itself counts */
				j = c->i + (c->call ? 0 : 1);
			else if (u < c->t)
				j = recon_at_ts(r, u, ts0) + 1;
			else
				j = recon_at_ts(r, u, ts0 - 1) + 1;
			j = next_stop(c, u, j, 1);
			if (j < 0)
				continue;
			ts = ev_ts(r, u, j);
			if (bt < 0 || ts < bts) {
				bt = u;
				bi = j;
				bts = ts;
			}
		} else {
			if (u == c->t)
				j = c->i - 1;
			else if (u < c->t)
				j = recon_at_ts(r, u, ts0);
			else
				j = recon_at_ts(r, u, ts0 - 1);
			if (j < 0)
				continue;
			j = next_stop(c, u, j, -1);
			if (j < 0)
				continue;
			ts = ev_ts(r, u, j);
			if (bt < 0 || ts > bts) {
				bt = u;
				bi = j;
				bts = ts;
			}
		}
	}
	if (bt < 0)
		return -ENOENT;
	*ot = bt;
	*oi = bi;
	return 0;
}

/* The structural target of a move, without the record; *ocall is the
 * call flag of the target (0 unless set). */
static int target(struct cursor *c, enum cursor_move m, int *ot, int64_t *oi,
		  int *ocall, char **cause)
{
	struct recon *r = c->r;
	struct recon_thread *th = &r->threads[c->t];
	const struct recon_ev ev = recon_get(r, c->t, c->i), *e = &ev;
	int64_t f;
	struct recon_ev fe;

	*ot = c->t;
	*ocall = 0;
	switch (m) {
	case CURSOR_STEP:
		if (c->call) { /* into the call */
			*oi = c->i;
			return 0;
		}
		if (e->kind == SK_SEND && !recon_peer(r, c->t, c->i, ot, oi))
			return 0;
		/* fall through */
	case CURSOR_NEXT:
		if (m == CURSOR_NEXT && e->kind == SK_ENTRY && e->match >= 0) {
			*oi = e->match;
			return 0;
		}
		if (m == CURSOR_NEXT && e->kind == SK_ENTRY)
			return propel_cause(cause, -ERANGE,
					    "the call never returns (end of "
					    "trace)");
		if (c->i + 1 >= th->n)
			return propel_cause(cause, -ERANGE, "end of trace");
		*oi = c->i + 1;
		return 0;
	case CURSOR_FINISH:
		f = cursor_frame(c);
		if (!c->call && e->kind == SK_EXIT && f >= 0)
			f = recon_up(r, c->t, f);
		if (f < 0)
			return propel_cause(cause, -ERANGE,
					    "\"finish\" not meaningful in the "
					    "outermost frame");
		fe = recon_get(r, c->t, f);
		if (fe.match < 0)
			return propel_cause(cause, -ERANGE,
					    "%s never returns (end of trace)",
					    recon_func_name(r, fe.func));
		*oi = fe.match;
		return 0;
	case CURSOR_CONTINUE:
	case CURSOR_RCONTINUE:
		if (!find_stop(c, m == CURSOR_CONTINUE, ot, oi))
			return 0;
		*ot = c->t;
		*oi = m == CURSOR_CONTINUE ? th->n - 1 : 0;
		if (*oi == c->i && (m == CURSOR_RCONTINUE || !c->call))
			return propel_cause(cause, -ERANGE, "%s of trace",
					    m == CURSOR_CONTINUE ? "end"
								 : "start");
		return 0;
	case CURSOR_RSTEP:
		if (e->kind == SK_RECV && !recon_peer(r, c->t, c->i, ot, oi))
			return 0;
		/* fall through */
	case CURSOR_RNEXT:
		if (m == CURSOR_RNEXT && e->kind == SK_EXIT && e->match >= 0) {
			*oi = e->match;
			return 0;
		}
		if (c->i == 0)
			return propel_cause(cause, -ERANGE, "start of trace");
		*oi = c->i - 1;
		return 0;
	case CURSOR_RFINISH:
		/* gdb: back to the call of the frame the cursor is in, seen
		 * from its caller (whose frame the cursor is then in) */
		f = cursor_frame(c);
		if (f < 0 || recon_up(r, c->t, f) < 0)
			return propel_cause(cause, -ERANGE,
					    "\"reverse-finish\" not meaningful "
					    "in the outermost frame");
		*oi = f;
		*ocall = 1;
		return 0;
	default:
		return propel_cause(cause, -EINVAL, "unknown move");
	}
}

int cursor_move(struct cursor *c, enum cursor_move m, char **cause)
{
	int t, err, call;
	int64_t i;

	if (!cursor_event(c))
		return propel_cause(cause, -ERANGE, "the trace is empty");
	if (m >= CURSOR_RSTEP && c->nhist) {
		struct cursor_rec *h = &c->hist[c->nhist - 1];

		if (h->tt == c->t && h->ti == c->i && h->tc == c->call &&
		    cursor_move_twin(h->m) == m) {
			c->t = h->ft;
			c->i = h->fi;
			c->call = h->fc;
			c->nhist--;
			return 0;
		}
	}
	err = target(c, m, &t, &i, &call, cause);
	if (err)
		return err;
	set_pos(c, t, i, call, m, m < CURSOR_RSTEP);
	return 0;
}

int cursor_goto(struct cursor *c, int thread, int64_t idx, char **cause)
{
	if (thread < 0 || thread >= c->r->nthreads || idx < 0 ||
	    idx >= c->r->threads[thread].n)
		return propel_cause(cause, -ERANGE, "no such event");
	set_pos(c, thread, idx, 0, CURSOR_STEP, 0);
	return 0;
}

int cursor_goto_event(struct cursor *c, int64_t id, char **cause)
{
	int t;
	int64_t i;

	if (recon_locate(c->r, id, &t, &i))
		return propel_cause(cause, -ENOENT, "no event %lld",
				    (long long)id);
	return cursor_goto(c, t, i, cause);
}

int cursor_goto_ts(struct cursor *c, int64_t ts_ns, char **cause)
{
	int t, bt = -1;
	int64_t i, bi = -1;

	if (c->t < c->r->nthreads && c->r->threads[c->t].n) {
		i = recon_at_ts(c->r, c->t, ts_ns);
		if (i >= 0)
			return cursor_goto(c, c->t, i, cause);
	}
	for (t = 0; t < c->r->nthreads; t++) {
		i = recon_at_ts(c->r, t, ts_ns);
		if (i < 0)
			continue;
		if (bt < 0 || ev_ts(c->r, t, i) > ev_ts(c->r, bt, bi)) {
			bt = t;
			bi = i;
		}
	}
	if (bt < 0)
		return propel_cause(cause, -ENOENT, "no event at or before that "
						    "time");
	return cursor_goto(c, bt, bi, cause);
}

/* thread t's first event at lo or after, if before hi; else -1 */
static int64_t first_within(const struct recon *r, int t, int64_t lo,
			    int64_t hi)
{
	int64_t i;

	if (!r->threads[t].n)
		return -1;
	i = recon_at_ts(r, t, lo - 1);
	i = i < 0 ? 0 : i + 1;
	return i < r->threads[t].n && ev_ts(r, t, i) >= lo && ev_ts(r, t, i) < hi
		       ? i
		       : -1;
}

int cursor_goto_ts_range(struct cursor *c, int64_t lo, int64_t hi,
			 char **cause)
{
	int t, bt = -1;
	int64_t i, bi = -1;

	if (c->t < c->r->nthreads && (i = first_within(c->r, c->t, lo, hi)) >= 0)
		return cursor_goto(c, c->t, i, cause);
	for (t = 0; t < c->r->nthreads; t++) {
		i = first_within(c->r, t, lo, hi);
		if (i >= 0 && (bt < 0 || ev_ts(c->r, t, i) < ev_ts(c->r, bt, bi))) {
			bt = t;
			bi = i;
		}
	}
	if (bt >= 0)
		return cursor_goto(c, bt, bi, cause);
	return cursor_goto_ts(c, hi - 1, cause);
}

int cursor_switch_thread(struct cursor *c, long n, char **cause)
{
	struct recon *r = c->r;
	int t = -1, k;
	int64_t i, ts;

	if (n >= 1 && n <= r->nthreads)
		t = (int)n - 1;
	else
		for (k = 0; k < r->nthreads; k++)
			if (r->threads[k].tid == n)
				t = k;
	if (t < 0 || !r->threads[t].n)
		return propel_cause(cause, -ENOENT, "no thread %ld", n);
	ts = cursor_event(c) ? cursor_event(c)->ts : r->first_ts;
	i = recon_at_ts(r, t, ts);
	return cursor_goto(c, t, i < 0 ? 0 : i, cause);
}

int cursor_break_add(struct cursor *c, const char *func, char **cause)
{
	uint32_t f;
	int found = 0;

	for (f = 0; f < c->r->nfuncs; f++) {
		if (c->r->funcs[f].name && strcmp(c->r->funcs[f].name, func) == 0) {
			if (!c->brk[f])
				c->nbrk++;
			c->brk[f] = 1;
			found = 1;
		}
	}
	if (!found)
		return propel_cause(cause, -ENOENT,
				    "function \"%s\" not in the trace", func);
	return 0;
}

void cursor_break_clear(struct cursor *c)
{
	memset(c->brk, 0, c->r->nfuncs ? c->r->nfuncs : 1);
	c->nbrk = 0;
}

int cursor_break_count(const struct cursor *c)
{
	return c->nbrk;
}

int cursor_backtrace(const struct cursor *c, int64_t *frames, int max)
{
	int64_t f;
	int n = 0;

	if (!cursor_event(c))
		return 0;
	for (f = cursor_frame(c); f >= 0; f = recon_up(c->r, c->t, f)) {
		if (n < max)
			frames[n] = f;
		n++;
	}
	return n;
}
