/*
 * tui/tui-search.c - the trace's search: `/TEXT` forward, `\TEXT`
 * backward (vim's `?` is the help here), `>` the next hit and `<` the
 * previous (uftrace's keys: `n`/`N` are gdb's next), with the hit's
 * number among all of them on the message line ("match 3/17").
 *
 * What TEXT matches: a call whose function name holds it (its entry line),
 * or any other event whose line as the trace shows it holds it: "SIGSEGV",
 * "send", "fd=5", a peer's "4242:4243" or command; a pid or tid, whole,
 * also hits the first event of those threads.  The hits are
 * collected once per pattern over every thread (recon_scan: a chunk
 * without entries, or without other events, is skipped undecoded; a
 * function-name test is one table look-up per entry), sorted by thread
 * then index, so `>`/`<` and the count are a binary search.  At most
 * TUI_SEARCH_MAX hits are kept, those of whole threads (then the count
 * says "more than", and a hit past them is found by scanning from the
 * cursor, as recon_scan goes).
 *
 * The trace pane highlights the hits (tui_search_is_hit).  Called by
 * tui/tui.c (keys and the `/` prompt).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/tui.h"

#define OTHER_KINDS (0xffff & ~((1 << SK_ENTRY) | (1 << SK_EXIT)))

static int search_func_pred(const struct recon_ev *e, void *arg)
{
	const uint8_t *fm = arg;

	return fm[e->func];
}

static int search_add(struct tui *t, int th, int64_t i)
{
	struct tui_find *f = &t->find;

	if (f->n == TUI_SEARCH_MAX) {
		f->capped = 1;
		return -1;
	}
	if (f->n == f->cap) {
		int64_t nc = f->cap ? f->cap * 2 : 256;
		struct tui_hit *n = realloc(f->hit, nc * sizeof(*n));

		if (!n)
			return -1;
		f->hit = n;
		f->cap = nc;
	}
	f->hit[f->n++] = (struct tui_hit){ th, i };
	return 0;
}

static int hit_cmp(const void *a, const void *b)
{
	const struct tui_hit *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* every hit of f->pat, by thread then index */
static void search_collect(struct tui *t)
{
	struct recon *r = t->r;
	struct view *v = &t->views[t->slot[SLOT_TRACE]];
	uint8_t *fm = calloc(r->nfuncs + 1, 1);
	int th, anyf = 0;
	uint32_t k;

	t->find.n = 0;
	t->find.capped = 0;
	if (!fm)
		return;
	for (k = 0; k < r->nfuncs; k++)
		if (strstr(recon_func_name(r, k), t->find.pat))
			anyf = fm[k] = 1;
	for (th = 0; th < r->nthreads && !t->find.capped; th++) {
		int64_t i, from = t->find.n;
		char text[256], id[24];

		/* a pid or tid, whole: where that thread begins */
		snprintf(id, sizeof(id), "%d", r->threads[th].pid);
		if (!strcmp(id, t->find.pat) ||
		    (snprintf(id, sizeof(id), "%d", r->threads[th].tid),
		     !strcmp(id, t->find.pat)))
			search_add(t, th, 0);

		for (i = anyf ? recon_scan(r, th, 0, 1, 1 << SK_ENTRY,
					   search_func_pred, fm)
			      : -1;
		     i >= 0;
		     i = recon_scan(r, th, i + 1, 1, 1 << SK_ENTRY,
				    search_func_pred, fm))
			if (search_add(t, th, i))
				break;
		for (i = recon_scan(r, th, 0, 1, OTHER_KINDS, NULL, NULL);
		     i >= 0; i = recon_scan(r, th, i + 1, 1, OTHER_KINDS, NULL, NULL)) {
			tui_describe(v, th, i, text, sizeof(text));
			if (strstr(text, t->find.pat) && search_add(t, th, i))
				break;
		}
		if (t->find.capped) /* its hits would be partial: the kept
				     * ones are the whole of the threads
				     * before it, the rest is scanned */
			t->find.n = from;
		qsort(t->find.hit + from, t->find.n - from, sizeof(*t->find.hit),
		      hit_cmp);
	}
	free(fm);
}

/* index of the first hit after (dir > 0) / before (dir < 0) the cursor,
 * wrapping around; -1 when there is none */
static int64_t search_pick(struct tui *t, int dir)
{
	struct tui_hit cur = { cursor_thread(t->c), cursor_index(t->c) };
	int64_t lo = 0, hi = t->find.n;

	if (!t->find.n)
		return t->find.capped ? 0 : -1;
	/* lo = the first hit > cur */
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;

		if (hit_cmp(&t->find.hit[mid], &cur) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (dir > 0)
		return lo < t->find.n ? lo : 0;
	/* the last hit < cur */
	lo--;
	if (lo >= 0 && !hit_cmp(&t->find.hit[lo], &cur))
		lo--;
	return lo >= 0 ? lo : t->find.n - 1;
}

/* the first hit of thread th from index i in direction dir, scanning
 * (the list is capped), or -1 */
static int64_t search_scan_thread(struct tui *t, const uint8_t *fm, int th,
				  int64_t i, int dir)
{
	struct recon *r = t->r;
	struct view *v = &t->views[t->slot[SLOT_TRACE]];
	int64_t e = recon_scan(r, th, i, dir, 1 << SK_ENTRY, search_func_pred,
			       (void *)fm), o;
	char text[256];

	for (o = recon_scan(r, th, i, dir, OTHER_KINDS, NULL, NULL); o >= 0;
	     o = recon_scan(r, th, o + dir, dir, OTHER_KINDS, NULL, NULL)) {
		if (e >= 0 && (dir > 0 ? o > e : o < e))
			break; /* the entry comes first */
		tui_describe(v, th, o, text, sizeof(text));
		if (strstr(text, t->find.pat))
			return o;
	}
	return e;
}

/* past the kept hits: the next hit by scanning from the cursor, over
 * the threads in turn (wrapping); 0 and *th, *idx, or -1 */
static int search_scan(struct tui *t, int dir, int *th, int64_t *idx)
{
	struct recon *r = t->r;
	uint8_t *fm = calloc(r->nfuncs + 1, 1);
	int th0 = cursor_thread(t->c), k;
	uint32_t f;

	if (!fm)
		return -1;
	for (f = 0; f < r->nfuncs; f++)
		fm[f] = strstr(recon_func_name(r, f), t->find.pat) != NULL;
	for (k = 0; k <= r->nthreads; k++) {
		int tt = ((th0 + (dir > 0 ? k : -k)) % r->nthreads + r->nthreads) %
			 r->nthreads;
		int64_t from = k ? (dir > 0 ? 0 : r->threads[tt].n - 1)
				 : cursor_index(t->c) + dir;
		int64_t i = from >= 0 && from < r->threads[tt].n
				    ? search_scan_thread(t, fm, tt, from, dir)
				    : -1;

		if (i >= 0) {
			free(fm);
			*th = tt;
			*idx = i;
			return 0;
		}
	}
	free(fm);
	return -1;
}

/* the hit search_pick chose (k) wrapped around, or is the last kept one
 * going back, while more hits than kept exist: the real next one may lie
 * past the kept ones */
static int search_past_kept(const struct tui *t, int64_t k,
			    const struct tui_hit *cur, int dir)
{
	if (!t->find.capped)
		return 0;
	if (!t->find.n)
		return 1;
	if (dir > 0)
		return hit_cmp(&t->find.hit[k], cur) <= 0;
	return k == t->find.n - 1 || hit_cmp(&t->find.hit[k], cur) >= 0;
}

static void search_go(struct tui *t, int dir)
{
	int64_t k = search_pick(t, dir);
	int th0 = cursor_thread(t->c);
	const struct tui_hit *h;
	struct tui_hit cur = { th0, cursor_index(t->c) };

	/* more hits than kept, and the next one is past the kept ones (or
	 * wraps): scan for it */
	if (search_past_kept(t, k, &cur, dir)) {
		struct tui_hit s;

		if (search_scan(t, dir, &s.t, &s.i)) {
			screen_error("not found: %s", t->find.pat);
			return;
		}
		cursor_goto(t->c, s.t, s.i, NULL);
		tui_moved(t);
		screen_message("match (of more than %d): %s  (> next, < "
			       "previous)",
			       TUI_SEARCH_MAX, t->find.pat);
		return;
	}

	if (k < 0) {
		screen_error("not found: %s", t->find.pat);
		return;
	}
	h = &t->find.hit[k];
	cursor_goto(t->c, h->t, h->i, NULL);
	tui_moved(t);
	screen_message("match %lld/%s%lld: %s%s  (> next, < previous)",
		       (long long)k + 1, t->find.capped ? "more than " : "",
		       (long long)t->find.n, t->find.pat,
		       h->t != th0 ? "  (another thread)" : "");
}

void tui_search_start(struct tui *t, const char *pat, int dir)
{
	if (*pat && strcmp(pat, t->find.pat)) {
		snprintf(t->find.pat, sizeof(t->find.pat), "%s", pat);
		search_collect(t);
	} else if (*pat && !t->find.n && !t->find.capped) {
		search_collect(t); /* the session cannot change: again */
	}
	if (!t->find.pat[0]) {
		screen_error("no search yet: / TEXT searches forward, \\ TEXT "
			     "backward");
		return;
	}
	search_go(t, dir);
}

void tui_search_next(struct tui *t, int dir)
{
	tui_search_start(t, "", dir);
}

void tui_search_free(struct tui *t)
{
	free(t->find.hit);
	memset(&t->find, 0, sizeof(t->find));
}

const char *tui_search_pattern(struct view *v)
{
	return v->tui->find.n || v->tui->find.capped ? v->tui->find.pat : "";
}

int tui_search_is_hit(struct view *v, int th, int64_t idx)
{
	struct tui *t = v->tui;
	struct tui_hit key = { th, idx };

	/* past the kept hits every line that shows the text is one */
	if (t->find.capped &&
	    (!t->find.n || hit_cmp(&key, &t->find.hit[t->find.n - 1]) > 0))
		return 1;
	return t->find.n && bsearch(&key, t->find.hit, t->find.n,
				    sizeof(*t->find.hit), hit_cmp) != NULL;
}
