/*
 * tui/view-trace.c - the trace pane: the cursor thread's events as a
 * collapsible call tree (TraceBack §4.3.1), or all threads interleaved by
 * time (TraceBack §4.3.2; key `a`).
 *
 * Folding is UI state kept by the core (tui_folded / tui_fold: a short
 * list of fold ranges, so folding a call of a million events costs one
 * entry): a folded call shows as one line, and its events (exit included)
 * are skipped by the visible-line walk (trace_vnext / trace_vprev), which
 * costs O(1) per line thanks to the entry<->exit match.  Events are read
 * through recon_get (decoded chunks, engine/reconstruct.h).  When the cursor lands inside a
 * folded call, its folded ancestors open (trace_reveal), so the cursor's
 * line is always visible.  The pane keeps only a top anchor; a frame
 * walks at most one screen of lines from it.
 *
 * Each call line shows its duration at the right (uftrace's column, with
 * units; on the entry and on the exit: the partner's time alone,
 * recon_ts, from the chunk the match already decoded; kept per event).  Indentation stops at a quarter of
 * the width; a deeper line shows its true depth (`⋮41`) where the
 * indentation stops.  The search's hits have their matched text
 * highlighted (tui/tui-search.c); a click moves the cursor to the line.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/tui.h"
#include "tui/view.h"

#define TRACE_MAXROWS 512
#define TRACE_DURW 11 /* the duration column: "  14.020 ms" */
#define TRACE_DURMEMO 1024

struct trace_view {
	int top_t;
	int64_t top; /* first visible line (tree mode) */
	int page;    /* rows last drawn */
	/* the event on each row last drawn (mouse clicks) */
	struct {
		int t;
		int64_t i;
	} row[TRACE_MAXROWS];
	int nrows;
	/* durations already worked out, by event (direct-mapped): a redraw
	 * after a step shows mostly the same lines */
	struct {
		int t;
		int64_t i;
		char text[40]; /* right-aligned, "" none */
	} dur[TRACE_DURMEMO];
};

static int64_t trace_vnext(struct view *v, int t, int64_t i)
{
	struct recon_ev e = recon_get(tui_recon(v), t, i);

	if (e.kind == SK_ENTRY && e.match >= 0 && tui_folded(v, t, i))
		return e.match + 1;
	return i + 1;
}

static int64_t trace_vprev(struct view *v, int t, int64_t i)
{
	int64_t j = i - 1;
	struct recon_ev e;

	if (j < 0)
		return j;
	e = recon_get(tui_recon(v), t, j);
	if (e.kind == SK_EXIT && e.match >= 0 && tui_folded(v, t, e.match))
		j = e.match;
	return j;
}

/* open the folded calls around i, so that its line shows */
static void trace_reveal(struct view *v, int t, int64_t i)
{
	struct recon *rc = tui_recon(v);
	struct recon_ev e = recon_get(rc, t, i);
	int64_t a = e.kind == SK_EXIT && e.match >= 0 ? e.match : e.up;

	if (e.kind == SK_EXIT && a >= 0) {
		tui_fold(v, t, a, a, 0);
		a = recon_up(rc, t, a);
	}
	for (; a >= 0; a = recon_up(rc, t, a))
		tui_fold(v, t, a, a, 0);
}

static int trace_open(struct view *v, char **cause)
{
	struct trace_view *tv = calloc(1, sizeof(*tv));
	int k;

	if (!tv)
		return -12;
	for (k = 0; k < TRACE_DURMEMO; k++)
		tv->dur[k].t = -1;
	v->priv = tv;
	return 0;
}

static void trace_free(struct view *v)
{
	free(v->priv);
}

static int line_attr(const struct recon_ev *e)
{
	switch (e->kind) {
	case SK_SIGNAL:
		return SA_HIGHLIGHT;
	case SK_LOST: /* a gap: records the agent dropped */
		return SC_RED | SA_BOLD;
	case SK_EXIT:
		return SA_DIM;
	case SK_SEND:
	case SK_RECV:
		return SC_YELLOW;
	case SK_ENTRY:
		return e->flags & RECON_F_SYNTH ? SC_MAGENTA : SA_NORMAL;
	}
	return SC_CYAN;
}

/* the duration column's text of the call whose entry or exit (t, i)
 * is ("" for any other line), kept per event */
static const char *call_dur(struct trace_view *tv, struct recon *rc, int t,
			    int64_t i, const struct recon_ev *e)
{
	unsigned k = (unsigned)((uint64_t)i * 2654435761u + (unsigned)t) %
		     TRACE_DURMEMO;
	char d[24];
	int64_t m;

	if ((e->kind != SK_ENTRY && e->kind != SK_EXIT) || e->match < 0)
		return "";
	if (tv->dur[k].t == t && tv->dur[k].i == i)
		return tv->dur[k].text;
	m = recon_ts(rc, t, e->match);
	tui_dur(e->kind == SK_ENTRY ? m - e->ts : e->ts - m, d, sizeof(d));
	snprintf(tv->dur[k].text, sizeof(tv->dur[k].text), "%*s ",
		 TRACE_DURW - 1, d);
	tv->dur[k].t = t;
	tv->dur[k].i = i;
	return tv->dur[k].text;
}

/* draws the line of (t, i); returns the index of the next visible line
 * (past a folded call) */
static int64_t draw_line(struct view *v, const struct screen_rect *r, int row,
			 int t, int64_t i, int cur, int focused, int tidcol)
{
	struct trace_view *tv = v->priv;
	struct recon *rc = tui_recon(v);
	const struct recon_thread *th = &rc->threads[t];
	const struct recon_ev ev = recon_get(rc, t, i), *e = &ev;
	char text[256];
	const char *pat = tui_search_pattern(v), *hit;
	int attr = line_attr(e), col = 0, ind = e->depth, maxind;
	struct screen_rect tr = *r; /* the text, left of the durations */
	const char *d = call_dur(tv, rc, t, i, e);
	int64_t next = i + 1;
	int folded = 0;

	if (row < TRACE_MAXROWS) {
		tv->row[row].t = t;
		tv->row[row].i = i;
		tv->nrows = row + 1;
	}
	/* the indentation as if every line had the column (a line
	 * without a duration keeps its text's room) */
	maxind = ((r->w >= 40 ? r->w - TRACE_DURW : r->w) - (tidcol ? 7 : 0)) / 4;
	if (r->w >= 40 && *d)
		tr.w = r->w - TRACE_DURW;
	if (cur)
		attr = e->kind == SK_SIGNAL /* red stays red under the cursor */
			       ? SA_HIGHLIGHT | (focused ? 0 : SA_UNDERLINE)
			       : (focused ? SA_REVERSE : SA_UNDERLINE | SA_BOLD);
	if (cur)
		screen_clear_row(r, row, 0,
				 e->kind == SK_SIGNAL ? SA_HIGHLIGHT
				 : focused	      ? SA_REVERSE
						      : SA_NORMAL);
	if (tidcol)
		col += screen_printf(&tr, row, col, attr | SC_GREEN, "%6d ", th->tid);
	col += screen_put(&tr, row, col, attr, cur ? ">" : " ");
	if (ind > maxind) {
		/* deeper than the indentation shows: its true depth, so no
		 * two depths read as one column */
		char mark[16];
		int mw;

		snprintf(mark, sizeof(mark), "\u22ee%d ", ind);
		mw = screen_strwidth(mark);
		col += screen_printf(&tr, row, col, attr, "%*s",
				     maxind * 2 > mw ? maxind * 2 - mw : 0, "");
		col += screen_put(&tr, row, col,
				  cur ? attr : attr | SC_CYAN | SA_BOLD, mark);
	} else {
		col += screen_printf(&tr, row, col, attr, "%*s", ind * 2, "");
	}
	if (e->kind == SK_ENTRY && e->match >= 0 && (folded = tui_folded(v, t, i)))
		next = e->match + 1;
	if (e->kind == SK_ENTRY && e->match >= 0)
		col += screen_put(&tr, row, col, attr, folded ? "+ " : "- ");
	tui_describe_ev(v, t, i, e, text, sizeof(text));
	screen_put(&tr, row, col, attr, text);
	/* a search hit: the matched text highlighted */
	if (*pat && e->kind != SK_EXIT && (hit = strstr(text, pat)) &&
	    tui_search_is_hit(v, t, i)) {
		char pre[256];

		snprintf(pre, sizeof(pre), "%.*s", (int)(hit - text), text);
		screen_printf(&tr, row, col + screen_strwidth(pre), SA_MATCH,
			      "%.*s", (int)strlen(pat), hit);
	}
	if (*d && tr.w < r->w) /* uftrace's column: the call's duration,
				* on its entry and its exit */
		screen_put(r, row, tr.w, cur ? attr : attr | SC_GRAY, d);
	return next;
}

static void draw_tree(struct view *v, const struct screen_rect *r, int focused)
{
	struct trace_view *tv = v->priv;
	struct recon *rc = tui_recon(v);
	struct cursor *c = tui_cursor(v);
	int t = cursor_thread(c), row, k;
	struct recon_thread *th = &rc->threads[t];
	int64_t ci = cursor_index(c), i;

	trace_reveal(v, t, ci);
	/* is the cursor within one screen from top? */
	if (tv->top_t != t || tv->top > ci || tv->top >= th->n)
		tv->top = -1;
	if (tv->top >= 0) {
		for (i = tv->top, k = 0; i < th->n && k < r->h && i < ci; k++)
			i = trace_vnext(v, t, i);
		if (i != ci || k >= r->h)
			tv->top = -1;
	}
	if (tv->top < 0) {
		/* put the cursor a third of the way down (half for a crash) */
		int back = rc->crashed && recon_get(rc, t, ci).kind == SK_SIGNAL
				   ? r->h * 2 / 3
				   : r->h / 3;

		for (i = ci, k = 0; k < back; k++) {
			int64_t p = trace_vprev(v, t, i);

			if (p < 0)
				break;
			i = p;
		}
		tv->top = i;
		tv->top_t = t;
	}
	for (i = tv->top, row = 0; i < th->n && row < r->h; row++)
		i = draw_line(v, r, row, t, i, i == ci, focused, 0);
	if (row < r->h)
		screen_put(r, row, 1, SA_DIM, "-- end of trace --");
}

static void draw_interleaved(struct view *v, const struct screen_rect *r,
			     int focused)
{
	struct recon *rc = tui_recon(v);
	struct cursor *c = tui_cursor(v);
	int t = cursor_thread(c), nt, row, k;
	int64_t i = cursor_index(c), ni;

	for (k = 0; k < r->h / 3 && !recon_global_prev(rc, t, i, &nt, &ni); k++) {
		t = nt;
		i = ni;
	}
	for (row = 0; row < r->h; row++) {
		draw_line(v, r, row, t, i, t == cursor_thread(c) && i == cursor_index(c),
			  focused, 1);
		if (recon_global_next(rc, t, i, &nt, &ni))
			break;
		t = nt;
		i = ni;
	}
}

static void trace_draw(struct view *v, const struct screen_rect *r, int focused)
{
	struct trace_view *tv = v->priv;

	tv->page = r->h;
	tv->nrows = 0;
	if (tui_interleaved(v))
		draw_interleaved(v, r, focused);
	else
		draw_tree(v, r, focused);
}

static int move_line(struct view *v, int dir, int count)
{
	struct recon *rc = tui_recon(v);
	struct cursor *c = tui_cursor(v);
	int t = cursor_thread(c), nt;
	int64_t i = cursor_index(c), ni;
	const struct recon_thread *th = &rc->threads[t];

	while (count-- > 0) {
		if (tui_interleaved(v)) {
			if ((dir > 0 ? recon_global_next : recon_global_prev)(
				    rc, t, i, &nt, &ni))
				break;
			t = nt;
			i = ni;
			continue;
		}
		ni = dir > 0 ? trace_vnext(v, t, i) : trace_vprev(v, t, i);
		if (ni < 0 || ni >= th->n)
			break;
		i = ni;
	}
	if (t != cursor_thread(c) || i != cursor_index(c))
		cursor_goto(c, t, i, NULL);
	return 1;
}

static int trace_key(struct view *v, int key)
{
	struct trace_view *tv = v->priv;
	struct cursor *c = tui_cursor(v);
	struct recon *rc = tui_recon(v);
	int t = cursor_thread(c);
	struct recon_thread *th = &rc->threads[t];
	int64_t i = cursor_index(c);
	struct recon_ev e = recon_get(rc, t, i);

	switch (key) {
	case SCREEN_KEY_UP: case 'k': return move_line(v, -1, 1);
	case SCREEN_KEY_DOWN: case 'j': return move_line(v, 1, 1);
	case SCREEN_KEY_PGUP: return move_line(v, -1, tv->page ? tv->page - 1 : 10);
	case SCREEN_KEY_PGDN: return move_line(v, 1, tv->page ? tv->page - 1 : 10);
	case SCREEN_KEY_HOME:
		cursor_goto(c, t, 0, NULL);
		return 1;
	case SCREEN_KEY_END:
		cursor_goto(c, t, th->n - 1, NULL);
		return 1;
	case SCREEN_KEY_ENTER:
	case ' ':
		if (e.kind == SK_EXIT && e.match >= 0) {
			i = e.match;
			cursor_goto(c, t, i, NULL);
			e = recon_get(rc, t, i);
		}
		if (e.kind != SK_ENTRY || e.match < 0) {
			screen_message("nothing to fold here (not a call that "
				       "returned)");
			return 1;
		}
		tui_fold(v, t, i, i, !tui_folded(v, t, i));
		return 1;
	case '+':
	case '-': {
		int64_t f = e.kind == SK_ENTRY ? i : recon_frame(rc, t, i), m;

		if (f < 0) {
			screen_message("no call here to %s", key == '+' ? "unfold"
									: "fold");
			return 1;
		}
		/* a call that never returned (crash) spans to the end */
		m = recon_match(rc, t, f);
		if (f + 1 <= (m >= 0 ? m : th->n - 1))
			tui_fold(v, t, f + 1, m >= 0 ? m : th->n - 1,
				 key == '-');
		tui_fold(v, t, f, f, 0);
		cursor_goto(c, t, f, NULL);
		return 1;
	}
	}
	return 0;
}

static void trace_click(struct view *v, int row)
{
	struct trace_view *tv = v->priv;

	if (row >= 0 && row < tv->nrows) {
		cursor_goto(tui_cursor(v), tv->row[row].t, tv->row[row].i, NULL);
		tui_moved(v->tui);
	}
}

const struct view_ops view_trace_ops = {
	.name = "trace",
	.title = "trace",
	.help = "the cursor's thread as a call tree (a: all threads by time)",
	.open = trace_open,
	.free = trace_free,
	.draw = trace_draw,
	.key = trace_key,
	.click = trace_click,
};
