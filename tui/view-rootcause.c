/*
 * tui/view-rootcause.c - the root-cause pane (`:view rootcause`): the call
 * paths only in the anomalous flow (the fail-stop process's, else the top
 * suspect) or only in its normal flow (the neighbour that set its score
 * among eight or more flows of its kind, else its nearest;
 * analysis/rootcause.h: prefix-pruned, merged, the normal variations
 * last), as `propel report --rootcause` prints them:
 * the anomalous side's paths first, each with its values (when it first
 * ran, from its flow's start; its frames) and apart from them its two
 * ranks (by that time, by length).  Enter moves the cursor to the path's
 * first occurrence, focuses the trace pane and says which flow, side and
 * process it went to.
 *
 * The analysis runs from the first draw on its own thread (tui/bg.h), as
 * the flows pane's does.
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
#include "tui/bg.h"
#include "tui/screen.h"
#include "tui/view.h"

struct rootcause_view {
	int loaded;
	struct tui_bg bg;
	char err[200];
	struct trace *t;
	struct flows *f;
	struct profiles_space sp;
	struct profile *prof;
	struct rootcause rc;
	size_t *order; /* rows: the anomalous side's paths, then the normal */
	size_t anom, normal;
	long sel, top;
};

static void rootcause_view_load(struct session *s, const char *nos,
				void *arg)
{
	struct rootcause_view *rv = arg;
	struct suspects_score *sc = NULL;
	char *cause = NULL;
	const char *why = "cannot analyse the session";
	int err;

	if (!s) {
		snprintf(rv->err, sizeof(rv->err), "%s", nos);
		return;
	}
	err = analysis_load(s, &rv->t, &cause);
	if (!err && !rv->t->nev) {
		err = -ENODATA;
		why = "the session holds no events";
	}
	if (!err)
		err = analysis_flows(s, rv->t, &rv->f);
	if (!err && rv->f->n < 2) {
		err = -ENOENT;
		why = "fewer than two flows: nothing to compare";
	}
	if (!err)
		err = profiles_build(&rv->sp, rv->t, rv->f->of, rv->f->n,
				     &rv->prof);
	if (!err)
		err = (sc = calloc(rv->f->n, sizeof(*sc))) ? 0 : -ENOMEM;
	if (!err) { /* the top suspect, as report ranks them: a process
		     * that stopped first makes its flow the anomaly */
		struct rootcause_failstop fs;

		err = suspects_rank_flows(rv->t, rv->f, rv->prof,
					  PROFILES_COVERAGE, &fs, sc);
	}
	if (!err) {
		for (rv->anom = 0; rv->anom < rv->f->n && sc[rv->anom].rank != 1;
		     rv->anom++)
			;
		/* as `report --rootcause` picks them: the normal flow is the
		 * neighbour that set the anomalous one's score among the
		 * flows of its kind (eight or more: k >= 2), else its
		 * nearest; the flows of its kind tell the normal variations */
		uint32_t *kinds = NULL;
		const struct profile **others =
			calloc(rv->f->n + 1, sizeof(*others));
		size_t k, g = 0, n = 0;

		if (rv->anom < rv->f->n && !flows_kinds(rv->t, rv->f, &kinds))
			for (k = 0; k < rv->f->n; k++)
				if (kinds[k] == kinds[rv->anom]) {
					g++;
					if (others)
						others[n++] = &rv->prof[k];
				}
		if (rv->anom < rv->f->n && kinds &&
		    sc[rv->anom].why == SUSPECTS_KNN && sc[rv->anom].nb_ref == 0 &&
		    sc[rv->anom].nb != rv->anom && suspects_k(g) >= 2)
			rv->normal = sc[rv->anom].nb;
		else
			rv->normal = suspects_nearest(rv->prof, rv->f->n,
						      rv->anom,
						      PROFILES_COVERAGE);
		free(kinds);
		err = rootcause_paths_among(&rv->sp, &rv->prof[rv->anom],
					    &rv->prof[rv->normal], others, n,
					    &rv->rc);
		free(others);
	}
	free(sc);
	if (!err && !(rv->order = calloc(rv->rc.n + 1, sizeof(*rv->order))))
		err = -ENOMEM;
	if (!err) {
		size_t k, n = 0;
		int side;

		for (side = 0; side < 2; side++)
			for (k = 0; k < rv->rc.n; k++)
				if (rv->rc.p[k].side == side)
					rv->order[n++] = k;
	}
	if (err)
		snprintf(rv->err, sizeof(rv->err), "%s", cause ? cause : why);
	free(cause);
}

static int rootcause_view_open(struct view *v, char **cause)
{
	struct rootcause_view *rv = calloc(1, sizeof(*rv));

	if (!rv)
		return -ENOMEM;
	v->priv = rv;
	return 0;
}

static void rootcause_view_free(struct view *v)
{
	struct rootcause_view *rv = v->priv;

	if (!rv)
		return;
	if (bg_release(&rv->bg))
		return; /* quitting while it runs: the thread keeps rv */
	rootcause_release(&rv->rc);
	free(rv->order);
	if (rv->f)
		profiles_free(rv->prof, rv->f->n);
	profiles_space_release(&rv->sp);
	flows_free(rv->f);
	trace_free(rv->t);
	free(rv);
}

static void rootcause_view_draw(struct view *v, const struct screen_rect *r,
				int focused)
{
	struct rootcause_view *rv = v->priv;
	int row = 0;
	long i;

	if (!rv->loaded) {
		rv->loaded = 1;
		bg_start(&rv->bg, view_session(v), rootcause_view_load, rv);
	}
	if (bg_shown(&rv->bg)) {
		screen_put(r, 0, 0, SA_DIM, "comparing the top suspect's call "
					    "paths with its nearest flow's: "
					    "reading the session ...");
		return;
	}
	if (rv->err[0]) {
		screen_put(r, 0, 0, SC_RED, rv->err);
		return;
	}
	screen_printf(r, row++, 0, SA_BOLD,
		      "flow %zu (anomalous) vs flow %zu: %zu paths differ, "
		      "%zu pruned, %zu kept",
		      rv->anom + 1, rv->normal + 1, rv->rc.delta_raw,
		      rv->rc.delta_pruned, rv->rc.n);
	/* values first (when the path first ran, from its flow's start;
	 * how many frames deep), then the two ranks (by time, by length) */
	screen_printf(r, row++, 0, SA_BOLD,
		      "FROM START FRAMES   #T  #L SIDE PATH");
	if (rv->sel < rv->top)
		rv->top = rv->sel;
	if (rv->sel >= rv->top + (r->h - row))
		rv->top = rv->sel - (r->h - row) + 1;
	for (i = rv->top; i < (long)rv->rc.n && row < r->h; i++, row++) {
		const struct rootcause_path *p = &rv->rc.p[rv->order[i]];
		char at[32], last[256];
		size_t len;
		int attr = i == rv->sel && focused ? SA_REVERSE : SA_NORMAL;
		const char *fn[64];
		size_t n = trace_path_funcs(p->t, p->path, fn, 64), j;
		int col;

		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		tui_dur(p->rel_ts, at, sizeof(at));
		col = screen_printf(r, row, 0, attr, "%10s %6u ", at,
				    (unsigned)p->len);
		col += screen_printf(r, row, col, attr | SA_DIM, "%4zu %3zu ",
				     p->rank_time, p->rank_length);
		col += screen_printf(r, row, col,
				     attr | SA_BOLD | (p->side ? SC_GREEN : SC_RED),
				     "%-4s ", p->side ? "norm" : "anom");
		/* the last call(s) in bold; the callers before them, the
		 * outermost dropped ("… > ") when they do not fit */
		len = 0;
		last[0] = 0;
		if (p->nlast > 1) {
			len = snprintf(last, sizeof(last), "[");
			for (j = 0; j < p->nlast && len < sizeof(last); j++)
				len += snprintf(last + len, sizeof(last) - len,
						"%s%s", j ? ", " : "",
						trace_str(p->t, p->last[j]));
			if (len < sizeof(last))
				snprintf(last + len, sizeof(last) - len, "]");
		} else {
			snprintf(last, sizeof(last), "%s",
				 trace_str(p->t, p->last[0]));
		}
		for (j = 0; j + 1 < n && j < 64; j++) {
			int room = r->w - col - screen_strwidth(last);
			size_t k, plen = 0;

			/* callers j.. and what they take */
			for (k = j; k + 1 < n && k < 64; k++)
				plen += strlen(fn[k]) + 3;
			if (j && (int)plen + 4 <= room)
				break;
			if (!j && (int)plen <= room)
				break;
		}
		if (j)
			col += screen_put(r, row, col, attr | SA_DIM,
					  "\u2026 > ");
		for (; j + 1 < n && j < 64; j++)
			col += screen_printf(r, row, col, attr, "%s > ", fn[j]);
		screen_put(r, row, col, attr | SA_BOLD, last);
	}
}

/* The entry event of path p at its first occurrence, in its flow. */
static int64_t rootcause_view_event(const struct rootcause_view *rv,
				    const struct rootcause_path *p)
{
	uint32_t fl = (uint32_t)(p->side ? rv->normal : rv->anom);
	size_t i;

	for (i = 0; i < rv->t->nev; i++) {
		const struct trace_event *e = &rv->t->ev[i];

		if (e->kind == TK_ENTRY && e->path == p->path &&
		    e->ts_ns == p->first_ts && rv->f->of[i] == fl)
			return e->id;
	}
	return -1;
}

static int rootcause_view_key(struct view *v, int key)
{
	struct rootcause_view *rv = v->priv;
	char *cause = NULL;
	const struct rootcause_path *p;
	int64_t id;
	long n;

	if (!rv->loaded || bg_pending(&rv->bg) || rv->err[0])
		return 0;
	n = (long)rv->rc.n;
	if (view_list_key(key, &rv->sel, n))
		return 1;
	switch (key) {
	case SCREEN_KEY_ENTER:
		if (rv->sel >= n)
			return 1;
		p = &rv->rc.p[rv->order[rv->sel]];
		id = rootcause_view_event(rv, p);
		if (id < 0) {
			screen_error("no event for that path");
		} else if (view_goto_event(v, id, &cause)) {
			screen_error("%s", cause ? cause : "cannot go there");
		} else {
			int pid, tid;
			const char *cmd;

			view_focus(v, "trace");
			view_cursor_thread(v, &pid, &tid);
			cmd = view_proc_command(v, pid);
			/* where Enter went: the flow, its side, the process */
			screen_message("flow %zu (%s), process %d (%s) thread "
				       "%d: the path's first call",
				       (p->side ? rv->normal : rv->anom) + 1,
				       p->side ? "normal" : "anomalous", pid,
				       cmd ? cmd : "?", tid);
		}
		free(cause);
		return 1;
	}
	return 0;
}

static int rootcause_view_busy(struct view *v)
{
	struct rootcause_view *rv = v->priv;

	return bg_busy(&rv->bg);
}

/* a click on a path's row selects it (Enter goes there) */
static void rootcause_view_click(struct view *v, int row)
{
	struct rootcause_view *rv = v->priv;
	long i = rv->top + row - 2; /* below the two heading rows */

	if (rv->loaded && !bg_pending(&rv->bg) && !rv->err[0] && row >= 2 &&
	    i < (long)rv->rc.n)
		rv->sel = i;
}

const struct view_ops view_rootcause_ops = {
	.name = "rootcause",
	.title = "root-cause paths (anomalous first; #T #L: ranks by time, by length)",
	.help = "Enter goes to the path's first call (says where)",
	.open = rootcause_view_open,
	.free = rootcause_view_free,
	.draw = rootcause_view_draw,
	.key = rootcause_view_key,
	.click = rootcause_view_click,
	.busy = rootcause_view_busy,
};
