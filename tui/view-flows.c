/*
 * tui/view-flows.c - the flows pane (`:view flows`): the session's flows
 * ranked by suspect score (analysis/suspects.h, coverage profiles, k =
 * |T|/4), a bar per flow and its processes, the fail-stop process on top
 * when there is one.  Enter opens the selected flow: only its events,
 * across processes, in time order; Enter on one of them moves the cursor
 * there and focuses the trace pane; Backspace goes back to the list.
 * `d` shows the selected flow beside the nearest flow (coverage distance)
 * that starts in the same function: the call paths of either, aligned
 * in tree order, a path only in the left one marked `-` (red), only in
 * the right one `+` (green).
 *
 * A hang (analysis/hang.h, engine/hang-load.c: a process others wait on
 * that stopped) is shown above the list, its first wait-for chain in
 * words, and the flow it hung ranks first, as in `propel report
 * --suspects`.
 *
 * `:flow N` selects the flow ranked N and puts the cursor at its last
 * event (the live console opens a stopped run this way: tui/live.c).
 * view_flows_rank prints the same ranking as text lines, for the live
 * console's snapshots of a run still going (tui/live.c).
 *
 * The analysis starts on the first draw (engine/analysis-load.c reads the
 * whole session), not at open: a TUI that never shows this pane pays
 * nothing.  It runs on a thread of its own (tui/bg.h) while the pane says
 * what it is doing (a 10M-event session takes seconds): the first screen
 * and the other panes do not wait for it.  A `:flow N` waits for it.
 * The same numbers as `propel report
 * --suspects`.
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
#include "engine/hang-load.h"
#include "share/log.h"
#include "tui/bg.h"
#include "tui/screen.h"
#include "tui/view.h"

struct flows_view {
	int loaded;
	struct tui_bg bg; /* the analysis, on its thread */
	char err[200];
	struct trace *t;
	struct flows *f;
	struct profiles_space sp;
	struct profile *prof;
	struct suspects_score *sc;
	size_t *order; /* rank - 1 -> flow */
	struct rootcause_failstop fs;
	struct hang_load hl;
	char hang[1024];	/* the first chain in words, "" none */
	double max;
	int open;      /* 1: the events of flow `flow`; 2: its diff */
	size_t flow;
	/* the diff (open == 2): flow `flow` against `other`, the nearest
	 * flow of the same kind; rows = the call paths of either, in tree
	 * order, side bit 1: in flow, 2: in other */
	size_t other;
	uint32_t *rows;
	uint8_t *side; /* per trace path */
	size_t nrows, only[2];
	long dsel, dtop;
	uint32_t *ev;  /* its events, by time */
	size_t nev;
	long sel, top, esel, etop;
	int row0; /* the list's first row (clicks) */
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

static void flows_view_load(struct session *s, struct flows_view *fv)
{
	char *cause = NULL;
	size_t i;
	int err;

	err = analysis_load(s, &fv->t, &cause);
	if (!err && !fv->t->nev)
		err = -ENODATA;
	if (!err)
		err = analysis_flows(s, fv->t, &fv->f);
	if (!err)
		err = profiles_build(&fv->sp, fv->t, fv->f->of, fv->f->n,
				     &fv->prof);
	if (!err) {
		fv->sc = calloc(fv->f->n + 1, sizeof(*fv->sc));
		fv->order = calloc(fv->f->n + 1, sizeof(*fv->order));
		err = fv->sc && fv->order ? 0 : -ENOMEM;
	}
	if (!err) /* as report --suspects ranks them */
		err = suspects_rank_flows(fv->t, fv->f, fv->prof,
					  PROFILES_COVERAGE, &fv->fs, fv->sc);
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
	/* a hang: its chain above the list, its flow first (above the
	 * fail-stop one), as report --suspects ranks them */
	if (hang_load(s, fv->t, ROOTCAUSE_PRECISION_NS, &fv->hl, &cause) == 0 &&
	    fv->hl.h->nchain) {
		const struct hang_chain *c = &fv->hl.h->chain[0];
		size_t u = suspects_unit_back(fv->t, fv->f->of, fv->f->n,
					      c->flow_ev);

		hang_chain_text(&fv->hl.in, fv->hl.h, c, fv->hang,
				sizeof(fv->hang));
		if (u < fv->f->n) {
			int agree = fv->sc[u].why == SUSPECTS_FAILSTOP;

			suspects_failstop_first(fv->sc, fv->f->n, u);
			if (!agree)
				fv->sc[u].why = SUSPECTS_HANG;
			for (i = 0; i < fv->f->n; i++)
				fv->order[fv->sc[i].rank - 1] = i;
		}
	}
	free(cause);
}

static void flows_view_work(struct session *s, const char *cause, void *arg)
{
	struct flows_view *fv = arg;

	if (s)
		flows_view_load(s, fv);
	else
		snprintf(fv->err, sizeof(fv->err), "%s", cause);
}

static void flows_view_start(struct view *v, struct flows_view *fv)
{
	fv->loaded = 1;
	bg_start(&fv->bg, view_session(v), flows_view_work, fv);
}

static int flows_view_pending(struct flows_view *fv)
{
	return bg_pending(&fv->bg);
}

static int flows_view_busy(struct view *v)
{
	struct flows_view *fv = v->priv;

	return bg_busy(&fv->bg);
}

static int flows_view_open(struct view *v, char **cause)
{
	struct flows_view *fv = calloc(1, sizeof(*fv));

	if (!fv)
		return -ENOMEM;
	v->priv = fv;
	return 0;
}

static void flows_view_release(struct flows_view *fv)
{
	free(fv->ev);
	free(fv->rows);
	free(fv->side);
	free(fv->sc);
	free(fv->order);
	hang_load_release(&fv->hl);
	if (fv->f)
		profiles_free(fv->prof, fv->f->n);
	profiles_space_release(&fv->sp);
	flows_free(fv->f);
	trace_free(fv->t);
}

static void flows_view_free(struct view *v)
{
	struct flows_view *fv = v->priv;

	if (!fv)
		return;
	if (bg_release(&fv->bg))
		return; /* quitting while it runs: the thread keeps fv */
	flows_view_release(fv);
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

/* the flow's processes by command, its starting one first, a command
 * run by several processes once with their count: "front → back ×3" */
static void flows_view_procs(struct view *v, const struct trace *t,
			     const struct flows_flow *fl, char *buf, size_t n)
{
	const char *name[16];
	int count[16], nn = 0, i;
	size_t p, len = 0;
	int64_t first = t->ev[fl->start].pid;

	for (p = 0; p <= fl->npids; p++) {
		/* the start's process, then the others by pid */
		int64_t pid = p == 0 ? first : fl->pids[p - 1];
		const char *c;

		if (p && pid == first)
			continue;
		c = view_proc_command(v, (int)pid);
		if (!c)
			c = "?";
		for (i = 0; i < nn && strcmp(name[i], c); i++)
			;
		if (i == nn) {
			if (nn == 16)
				continue;
			name[nn] = c;
			count[nn++] = 0;
		}
		count[i]++;
	}
	buf[0] = 0;
	for (i = 0; i < nn && len < n; i++) {
		len += snprintf(buf + len, n - len, "%s%s", i ? " \u2192 " : "",
				name[i]);
		if (count[i] > 1 && len < n)
			len += snprintf(buf + len, n - len, " \u00d7%d", count[i]);
	}
}

static void flows_view_draw_list(struct view *v, struct flows_view *fv,
				 const struct screen_rect *r, int focused)
{
	const struct trace *t = fv->t;
	int row = 0, h;
	long i;

	if (fv->hang[0] && r->w > 8) { /* the chain, on up to three rows */
		size_t len = strlen(fv->hang), at = 0, w = (size_t)r->w - 6;
		int k;

		for (k = 0; k < 3 && at < len; k++, at += w)
			screen_printf(r, row++, 0, SC_RED | SA_BOLD, "%s%.*s",
				      k ? "      " : "hang: ", (int)w,
				      fv->hang + at);
	}
	if (fv->fs.found)
		screen_printf(r, row++, 0, SC_RED | SA_BOLD,
			      "fail-stop: pid %" PRId64 " stopped first, in %s",
			      fv->fs.pid,
			      fv->fs.last_func ? trace_str(t, fv->fs.last_func)
					       : "?");
	screen_printf(r, row++, 0, SA_BOLD,
		      "RANK FLOW    SCORE %-16s  DURATION PROCESSES  (%zu "
		      "flows%s)",
		      "", fv->f->n, fv->f->per_process ? ", per process" : "");
	h = r->h - row;
	fv->row0 = row;
	flows_view_scroll(fv->sel, &fv->top, h);
	for (i = fv->top; i < (long)fv->f->n && row < r->h; i++, row++) {
		size_t u = fv->order[i];
		const struct flows_flow *fl = &fv->f->flow[u];
		int attr = i == fv->sel && focused ? SA_REVERSE : SA_NORMAL;
		int bar = fv->max > 0 ? (int)(16 * fv->sc[u].score / fv->max + 0.5)
				      : 0;
		char bars[16 * 3 + 1], dur[32], procs[256];
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
		/* how long it ran, and who: "dist-front → dist-back ×3" */
		tui_dur(fl->last_ts - fl->first_ts, dur, sizeof(dur));
		col += screen_printf(r, row, col, attr, "%10s ", dur);
		flows_view_procs(v, t, fl, procs, sizeof(procs));
		col += screen_put(r, row, col, attr, procs);
		for (p = 0; p < fl->npids; p++)
			col += screen_printf(r, row, col, attr | SA_DIM, "%s%" PRId64,
					     p ? "," : " (", fl->pids[p]);
		if (fl->npids)
			screen_put(r, row, col, attr | SA_DIM, ")");
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

static void flows_view_draw_diff(struct flows_view *fv,
				 const struct screen_rect *r, int focused);

static void flows_view_draw(struct view *v, const struct screen_rect *r,
			    int focused)
{
	struct flows_view *fv = v->priv;

	if (!fv->loaded)
		flows_view_start(v, fv);
	if (bg_shown(&fv->bg)) {
		screen_put(r, 0, 0, SA_DIM, "ranking the flows by suspect "
					    "score: reading the session ...");
		return;
	}
	if (fv->err[0]) {
		screen_put(r, 0, 0, SC_RED, fv->err);
		return;
	}
	if (fv->open == 2)
		flows_view_draw_diff(fv, r, focused);
	else if (fv->open)
		flows_view_draw_events(fv, r, focused);
	else
		flows_view_draw_list(v, fv, r, focused);
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

/* The flow's kind: what its start event is in (a function). */
static uint32_t flows_view_kind(const struct trace *t, uint32_t start)
{
	const struct trace_event *e = &t->ev[start];

	if (e->kind == TK_ENTRY)
		return e->func;
	return e->path ? t->path[e->path].func : 0;
}

static const struct trace *flows_view_diff_trace;

/* tree (pre-)order of two call paths: by function name then call site,
 * frame by frame from the outermost; a prefix first */
static int flows_view_path_cmp(const void *a, const void *b)
{
	const struct trace *t = flows_view_diff_trace;
	uint32_t pa = *(const uint32_t *)a, pb = *(const uint32_t *)b;
	uint32_t ca[64], cb[64];
	int na = 0, nb = 0, i, c;

	for (; pa && na < 64; pa = t->path[pa].parent)
		ca[na++] = pa;
	for (; pb && nb < 64; pb = t->path[pb].parent)
		cb[nb++] = pb;
	for (i = 1; i <= na && i <= nb; i++) {
		const struct trace_path *x = &t->path[ca[na - i]];
		const struct trace_path *y = &t->path[cb[nb - i]];

		if (ca[na - i] == cb[nb - i])
			continue;
		c = strcmp(trace_str(t, x->func), trace_str(t, y->func));
		if (c)
			return c;
		c = strcmp(trace_str(t, x->site), trace_str(t, y->site));
		if (c)
			return c;
		return ca[na - i] < cb[nb - i] ? -1 : 1;
	}
	return na - nb;
}

/*
 * `d` on the list: the selected flow against the nearest flow (coverage
 * distance) whose start is in the same function, call path by call path
 * in tree order, side by side.
 */
static int flows_view_diff(struct flows_view *fv)
{
	const struct trace *t = fv->t;
	size_t a = fv->order[fv->sel], j, i, best = (size_t)-1;
	uint32_t kind = flows_view_kind(t, fv->f->flow[a].start), p;
	double bd = -1;

	for (j = 0; j < fv->f->n; j++) {
		double d;

		if (j == a || flows_view_kind(t, fv->f->flow[j].start) != kind)
			continue;
		d = profiles_distance(&fv->prof[a], &fv->prof[j],
				      PROFILES_COVERAGE);
		if (bd < 0 || d < bd) {
			bd = d;
			best = j;
		}
	}
	if (best == (size_t)-1) {
		screen_error("flow %zu: no other flow starts in %s", a + 1,
			     trace_str(t, kind));
		return 1;
	}
	free(fv->rows);
	free(fv->side);
	fv->side = calloc(t->npath + 1, 1);
	fv->rows = malloc((t->npath + 1) * sizeof(*fv->rows));
	if (!fv->side || !fv->rows) {
		screen_error("out of memory");
		return 1;
	}
	for (i = 0; i < t->nev; i++) {
		uint8_t bit = fv->f->of[i] == a ? 1 : fv->f->of[i] == best ? 2 : 0;

		if (bit && t->ev[i].kind == TK_ENTRY)
			for (p = t->ev[i].path; p && !(fv->side[p] & bit);
			     p = t->path[p].parent)
				fv->side[p] |= bit; /* with its callers */
	}
	fv->nrows = fv->only[0] = fv->only[1] = 0;
	for (p = 1; p < t->npath; p++)
		if (fv->side[p]) {
			fv->rows[fv->nrows++] = p;
			if (fv->side[p] != 3)
				fv->only[fv->side[p] - 1]++;
		}
	flows_view_diff_trace = t;
	qsort(fv->rows, fv->nrows, sizeof(*fv->rows), flows_view_path_cmp);
	fv->flow = a;
	fv->other = best;
	fv->open = 2;
	fv->dsel = fv->dtop = 0;
	return 1;
}

static void flows_view_draw_diff(struct flows_view *fv,
				 const struct screen_rect *r, int focused)
{
	const struct trace *t = fv->t;
	int row = 0, half = r->w / 2;
	long i;

	screen_printf(r, row++, 0, SA_BOLD,
		      "flow %zu | flow %zu (nearest, same start): %zu paths "
		      "only left, %zu only right",
		      fv->flow + 1, fv->other + 1, fv->only[0], fv->only[1]);
	flows_view_scroll(fv->dsel, &fv->dtop, r->h - row);
	for (i = fv->dtop; i < (long)fv->nrows && row < r->h; i++, row++) {
		uint32_t p = fv->rows[i];
		int attr = i == fv->dsel && focused ? SA_REVERSE : SA_NORMAL;
		int d = (int)t->path[p].len - 1, side = fv->side[p];
		const char *fn = trace_str(t, t->path[p].func);

		if (d > 24)
			d = 24;
		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		if (side & 1)
			screen_printf(r, row, 0,
				      attr | (side == 1 ? SC_RED | SA_BOLD : 0),
				      "%c%*s%s", side == 1 ? '-' : ' ', d, "",
				      fn);
		if (side & 2)
			screen_printf(r, row, half,
				      attr | (side == 2 ? SC_GREEN | SA_BOLD : 0),
				      "%c%*s%s", side == 2 ? '+' : '|', d, "",
				      fn);
		else
			screen_put(r, row, half, attr, "|");
	}
}

static int flows_view_key(struct view *v, int key)
{
	struct flows_view *fv = v->priv;
	long *sel, n;

	if (!fv->loaded || flows_view_pending(fv) || fv->err[0] || !fv->f)
		return 0;
	sel = fv->open == 2 ? &fv->dsel : fv->open ? &fv->esel : &fv->sel;
	n = fv->open == 2 ? (long)fv->nrows
	    : fv->open	  ? (long)fv->nev
			  : (long)fv->f->n;
	if (view_list_key(key, sel, n))
		return 1;
	switch (key) {
	case SCREEN_KEY_ENTER:
		return fv->open == 2 ? 1 : flows_view_enter(v, fv);
	case 'd':
		return fv->open || !fv->f->n ? 0 : flows_view_diff(fv);
	case SCREEN_KEY_BACKSPACE:
		if (!fv->open)
			return 0;
		fv->open = 0;
		return 1;
	}
	return 0;
}

/* The flow at rank (1 = the most suspicious): selected in the list, the
 * cursor at its last event (by time). */
static int flows_view_select(struct view *v, struct flows_view *fv,
			     long rank, char **cause)
{
	size_t u, i, last = (size_t)-1;

	if (!fv->loaded)
		flows_view_start(v, fv);
	bg_wait(&fv->bg);
	if (fv->err[0])
		return propel_cause(cause, -ENODATA, "%s", fv->err);
	if (rank < 1 || rank > (long)fv->f->n)
		return propel_cause(cause, -EINVAL, "flow rank %ld: there are "
				    "%zu flows", rank, fv->f->n);
	fv->open = 0;
	fv->sel = rank - 1;
	u = fv->order[fv->sel];
	for (i = 0; i < fv->t->nev; i++)
		if (fv->f->of[i] == u &&
		    (last == (size_t)-1 ||
		     fv->t->ev[i].ts_ns >= fv->t->ev[last].ts_ns))
			last = i;
	if (last == (size_t)-1)
		return propel_cause(cause, -ENOENT, "flow %zu has no events",
				    u + 1);
	return view_goto_event(v, fv->t->ev[last].id, cause);
}

/* `:flow N`: the flow ranked N selected, the cursor at its end. */
static int flows_view_command(struct view *v, int argc, char **argv,
			      char **cause)
{
	char *end;
	long n;
	int err;

	if (strcmp(argv[0], "flow"))
		return 0;
	n = argc > 1 ? strtol(argv[1], &end, 10) : 1;
	if (argc > 2 || (argc > 1 && (*end || end == argv[1])))
		return propel_cause(cause, -EINVAL, "usage: flow [RANK]");
	err = flows_view_select(v, v->priv, n, cause);
	return err ? err : 1;
}

int view_flows_rank(struct session *s, FILE *out, char **cause)
{
	struct flows_view fv;
	const char *fn;
	size_t i, p;

	memset(&fv, 0, sizeof(fv));
	fv.loaded = 1;
	flows_view_load(s, &fv);
	if (fv.err[0]) {
		flows_view_release(&fv);
		return propel_cause(cause, -ENODATA, "%s", fv.err);
	}
	fprintf(out, "flows %zu %zu\n", fv.f->n, fv.t->nev);
	for (i = 0; i < fv.f->n; i++) {
		size_t u = fv.order[i];
		const struct flows_flow *fl = &fv.f->flow[u];

		fprintf(out, "%zu %.2f %zu %.3f ", fv.sc[u].rank,
			fv.sc[u].score, fl->nevents,
			(double)(fl->last_ts - fl->first_ts) / 1e6);
		for (p = 0; p < fl->npids && p < 8; p++)
			fprintf(out, "%s%" PRId64, p ? "," : "", fl->pids[p]);
		fn = trace_str(fv.t, flows_view_kind(fv.t, fl->start));
		fprintf(out, " %s\n", fn && *fn ? fn : "?");
	}
	flows_view_release(&fv);
	return 0;
}

/* a click on the ranked list selects that flow (Enter opens it) */
static void flows_view_click(struct view *v, int row)
{
	struct flows_view *fv = v->priv;
	long i;

	if (!fv->loaded || flows_view_pending(fv) || fv->err[0] || fv->open ||
	    row < fv->row0)
		return;
	i = fv->top + row - fv->row0;
	if (i < (long)fv->f->n)
		fv->sel = i;
}

const struct view_ops view_flows_ops = {
	.name = "flows",
	.title = "flows by suspect score",
	.help = "Enter open a flow / go to an event, d beside its nearest, "
		"Bksp back",
	.open = flows_view_open,
	.free = flows_view_free,
	.draw = flows_view_draw,
	.key = flows_view_key,
	.command = flows_view_command,
	.click = flows_view_click,
	.busy = flows_view_busy,
};
