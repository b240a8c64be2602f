/*
 * tui/tui-search.c - the trace's search: `/TEXT` forward, `\TEXT`
 * backward (vim's `?` is the help here), `>` the next hit and `<` the
 * previous (uftrace's keys: `n`/`N` are gdb's next), with the hit's
 * number among all of them on the message line ("match 3/17").
 *
 * What TEXT matches: a call whose function name holds it (its entry line),
 * or any other event whose line as the trace shows it holds it: "SIGSEGV",
 * "send", "fd=5", a peer's "4242:4243" or command.  The hits are
 * collected once per pattern over every thread (recon_scan: a chunk
 * without entries, or without other events, is skipped undecoded; a
 * function-name test is one table look-up per entry), sorted by thread
 * then index, so `>`/`<` and the count are a binary search.  At most
 * TUI_SEARCH_MAX hits are kept (then the count says "more than").
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
		char text[256];

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
		return -1;
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

static void search_go(struct tui *t, int dir)
{
	int64_t k = search_pick(t, dir);
	int th0 = cursor_thread(t->c);
	const struct tui_hit *h;

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
	} else if (*pat && !t->find.n) {
		search_collect(t);
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
	return v->tui->find.n ? v->tui->find.pat : "";
}

int tui_search_is_hit(struct view *v, int th, int64_t idx)
{
	struct tui *t = v->tui;
	struct tui_hit key = { th, idx };

	return t->find.n && bsearch(&key, t->find.hit, t->find.n,
				    sizeof(*t->find.hit), hit_cmp) != NULL;
}
