/*
 * tui/view-flows.c - the flows pane (`:view flows`): the session's flows
 * ranked by suspect score (analysis/suspects.h, coverage profiles, k =
 * |T|/4), a bar per flow and its processes, the fail-stop process on top
 * when there is one.  Enter opens the selected flow: only its events,
 * across processes, in time order; Enter on one of them moves the cursor
 * there and focuses the trace pane; Backspace goes back to the list.
 *
 * The analysis runs on the first draw (engine/analysis-load.c reads the
 * whole session), not at open: a TUI that never shows this pane pays
 * nothing.  The same numbers as `propel report --suspects`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/profiles.h"
#include "analysis/rootcause.h"
#include "analysis/suspects.h"
#include "analysis/trace.h"
#include "engine/analysis-load.h"
#include "tui/screen.h"
#include "tui/view.h"

struct flows_view {
	int loaded;
	char err[200];
	struct trace *t;
	struct flows *f;
	struct profiles_space sp;
	struct profile *prof;
	struct suspects_score *sc;
	size_t *order; /* rank - 1 -> flow */
	struct rootcause_failstop fs;
	double max;
	int open;      /* 1: the events of flow `flow` */
	size_t flow;
	uint32_t *ev;  /* its events, by time */
	size_t nev;
	long sel, top, esel, etop;
};

static const struct trace *flows_view_sort_trace;
static uint32_t flows_view_sort_start;

/* The flow's start first: a blocking recv of another process is dated at
 * its call's entry, which can come before the message that starts the
 * flow was even sent; then by time, then by event id. */
static int flows_view_ev_cmp(const void *a, const void *b)
{
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct trace_event *x = &flows_view_sort_trace->ev[ia];
	const struct trace_event *y = &flows_view_sort_trace->ev[ib];

	if (ia == flows_view_sort_start || ib == flows_view_sort_start)
		return ia == ib ? 0 : ia == flows_view_sort_start ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void flows_view_load(struct view *v, struct flows_view *fv)
{
	char *cause = NULL;
	size_t i;
	int err;

	fv->loaded = 1;
	err = analysis_load(view_session(v), &fv->t, &cause);
	if (!err && !fv->t->nev)
		err = -ENODATA;
	if (!err)
		err = analysis_flows(view_session(v), fv->t, &fv->f);
	if (!err)
		err = profiles_build(&fv->sp, fv->t, fv->f->of, fv->f->n,
				     &fv->prof);
	if (!err) {
		fv->sc = calloc(fv->f->n + 1, sizeof(*fv->sc));
		fv->order = calloc(fv->f->n + 1, sizeof(*fv->order));
		err = fv->sc && fv->order ? 0 : -ENOMEM;
	}
	if (!err)
		err = suspects_score(fv->prof, fv->f->n, NULL, 0,
				     PROFILES_COVERAGE, 0, fv->sc);
	if (err) {
		snprintf(fv->err, sizeof(fv->err), "%s",
			 cause ? cause
			       : err == -ENODATA ? "the session holds no events"
						 : "cannot analyse the session");
		free(cause);
		return;
	}
	for (i = 0; i < fv->f->n; i++) {
		fv->order[fv->sc[i].rank - 1] = i;
		if (fv->sc[i].score > fv->max)
			fv->max = fv->sc[i].score;
	}
	rootcause_failstop(fv->t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fv->fs);
}

static int flows_view_open(struct view *v, char **cause)
{
	struct flows_view *fv = calloc(1, sizeof(*fv));

	if (!fv)
		return -ENOMEM;
	v->priv = fv;
	return 0;
}

static void flows_view_free(struct view *v)
{
	struct flows_view *fv = v->priv;

	if (!fv)
		return;
	free(fv->ev);
	free(fv->sc);
	free(fv->order);
	if (fv->f)
		profiles_free(fv->prof, fv->f->n);
	profiles_space_release(&fv->sp);
	flows_free(fv->f);
	trace_free(fv->t);
	free(fv);
}

/* keep sel visible in h rows from top */
static void flows_view_scroll(long sel, long *top, int h)
{
	if (sel < *top)
		*top = sel;
	if (h > 0 && sel >= *top + h)
		*top = sel - h + 1;
}

static void flows_view_draw_list(struct flows_view *fv,
				 const struct screen_rect *r, int focused)
{
	const struct trace *t = fv->t;
	int row = 0, h;
	long i;

	if (fv->fs.found)
		screen_printf(r, row++, 0, SC_RED | SA_BOLD,
			      "fail-stop: pid %" PRId64 " stopped first, in %s",
			      fv->fs.pid,
			      fv->fs.last_func ? trace_str(t, fv->fs.last_func)
					       : "?");
	screen_printf(r, row++, 0, SA_BOLD,
		      "RANK FLOW    SCORE %-16s PIDS  (%zu flows%s)", "",
		      fv->f->n, fv->f->per_process ? ", per process" : "");
	h = r->h - row;
	flows_view_scroll(fv->sel, &fv->top, h);
	for (i = fv->top; i < (long)fv->f->n && row < r->h; i++, row++) {
		size_t u = fv->order[i];
		const struct flows_flow *fl = &fv->f->flow[u];
		int attr = i == fv->sel && focused ? SA_REVERSE : SA_NORMAL;
		int bar = fv->max > 0 ? (int)(16 * fv->sc[u].score / fv->max + 0.5)
				      : 0;
		char bars[16 * 3 + 1];
		int col, b;
		size_t p;

		for (b = 0; b < bar; b++)
			memcpy(bars + 3 * b, "\xe2\x96\x88", 3); /* U+2588 */
		bars[3 * bar] = 0;
		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		col = screen_printf(r, row, 0, attr, "%4zu %4zu %8.2f ",
				    fv->sc[u].rank, u + 1, fv->sc[u].score);
		screen_put(r, row, col, attr | (fv->sc[u].rank == 1 && bar
							? SC_RED
							: SC_YELLOW),
			   bars);
		col += 17;
		for (p = 0; p < fl->npids; p++)
			col += screen_printf(r, row, col, attr, "%s%" PRId64,
					     p ? "," : "", fl->pids[p]);
	}
}

static void flows_view_describe(const struct trace *t,
				const struct trace_event *e, char *buf,
				size_t n)
{
	switch (e->kind) {
	case TK_ENTRY:
		snprintf(buf, n, "%*s%s() {", 2 * (e->depth > 0 ? e->depth : 0),
			 "", trace_str(t, e->func));
		break;
	case TK_EXIT:
		snprintf(buf, n, "%*s} %s", 2 * (e->depth > 0 ? e->depth : 0),
			 "", trace_str(t, e->func));
		break;
	case TK_SEND:
	case TK_RECV:
		snprintf(buf, n, "%*s%s %" PRId64 " bytes",
			 2 * (e->depth > 0 ? e->depth : 0), "",
			 e->kind == TK_SEND ? "send" : "recv", e->bytes);
		break;
	case TK_SIGNAL:
		snprintf(buf, n, "signal %" PRId64, e->arg);
		break;
	case TK_FORK:
		snprintf(buf, n, "fork: child %" PRId64, e->arg);
		break;
	default:
		snprintf(buf, n, "event kind %d", e->kind);
	}
}

static void flows_view_draw_events(struct flows_view *fv,
				   const struct screen_rect *r, int focused)
{
	const struct trace *t = fv->t;
	const struct flows_flow *fl = &fv->f->flow[fv->flow];
	int row = 0;
	long i;

	screen_printf(r, row++, 0, SA_BOLD,
		      "flow %zu: %zu events  (Enter: go there, Backspace: "
		      "back)",
		      fv->flow + 1, fl->nevents);
	flows_view_scroll(fv->esel, &fv->etop, r->h - row);
	for (i = fv->etop; i < (long)fv->nev && row < r->h; i++, row++) {
		const struct trace_event *e = &t->ev[fv->ev[i]];
		int attr = i == fv->esel && focused ? SA_REVERSE : SA_NORMAL;
		char text[256];

		flows_view_describe(t, e, text, sizeof(text));
		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		screen_printf(r, row, 0,
			      attr | (e->kind == TK_SEND || e->kind == TK_RECV
					      ? SC_CYAN
					      : 0),
			      "%6" PRId64 " %+9.3fms %s", e->pid,
			      (double)(e->ts_ns - fl->first_ts) / 1e6, text);
	}
}

static void flows_view_draw(struct view *v, const struct screen_rect *r,
			    int focused)
{
	struct flows_view *fv = v->priv;

	if (!fv->loaded)
		flows_view_load(v, fv);
	if (fv->err[0]) {
		screen_put(r, 0, 0, SC_RED, fv->err);
		return;
	}
	if (fv->open)
		flows_view_draw_events(fv, r, focused);
	else
		flows_view_draw_list(fv, r, focused);
}

static int flows_view_enter(struct view *v, struct flows_view *fv)
{
	char *cause = NULL;
	size_t i;

	if (fv->open) {
		if (fv->esel < 0 || fv->esel >= (long)fv->nev)
			return 1;
		if (view_goto_event(v, fv->t->ev[fv->ev[fv->esel]].id, &cause))
			screen_error("%s", cause ? cause : "cannot go there");
		else
			view_focus(v, "trace");
		free(cause);
		return 1;
	}
	if (!fv->f->n)
		return 1;
	fv->flow = fv->order[fv->sel];
	free(fv->ev);
	fv->ev = malloc((fv->f->flow[fv->flow].nevents + 1) * sizeof(*fv->ev));
	if (!fv->ev) {
		screen_error("out of memory");
		return 1;
	}
	fv->nev = 0;
	for (i = 0; i < fv->t->nev; i++)
		if (fv->f->of[i] == fv->flow)
			fv->ev[fv->nev++] = (uint32_t)i;
	flows_view_sort_trace = fv->t;
	flows_view_sort_start = fv->f->flow[fv->flow].start;
	qsort(fv->ev, fv->nev, sizeof(*fv->ev), flows_view_ev_cmp);
	fv->open = 1;
	fv->esel = fv->etop = 0;
	return 1;
}

static int flows_view_key(struct view *v, int key)
{
	struct flows_view *fv = v->priv;
	long *sel, n;

	if (!fv->loaded || fv->err[0] || !fv->f)
		return 0;
	sel = fv->open ? &fv->esel : &fv->sel;
	n = fv->open ? (long)fv->nev : (long)fv->f->n;
	switch (key) {
	case SCREEN_KEY_UP:
		*sel = *sel > 0 ? *sel - 1 : 0;
		return 1;
	case SCREEN_KEY_DOWN:
		*sel = *sel + 1 < n ? *sel + 1 : *sel;
		return 1;
	case SCREEN_KEY_PGUP:
		*sel = *sel > 10 ? *sel - 10 : 0;
		return 1;
	case SCREEN_KEY_PGDN:
		*sel = *sel + 10 < n ? *sel + 10 : (n ? n - 1 : 0);
		return 1;
	case SCREEN_KEY_HOME:
		*sel = 0;
		return 1;
	case SCREEN_KEY_END:
		*sel = n ? n - 1 : 0;
		return 1;
	case SCREEN_KEY_ENTER:
		return flows_view_enter(v, fv);
	case SCREEN_KEY_BACKSPACE:
		if (!fv->open)
			return 0;
		fv->open = 0;
		return 1;
	}
	return 0;
}

const struct view_ops view_flows_ops = {
	.name = "flows",
	.title = "flows by suspect score",
	.help = "Up/Down select, Enter open the flow's events / go to the "
		"event, Backspace back",
	.open = flows_view_open,
	.free = flows_view_free,
	.draw = flows_view_draw,
	.key = flows_view_key,
};
