/*
 * tui/view-variance.c - the variance pane (`:view variance`), what
 * `propel report --variance` prints (engine/variance.h, VAIF's analysis):
 * the problem groups of flows (one path, a CV above the threshold or a
 * slow tail) and below them the functions ranked by the share of their
 * group's variance they explain, with their calls and, in a session of
 * `attach --adaptive`, when the controller first traced them.  Enter on a
 * function moves the cursor to its longest call in the slowest flow of
 * its group that calls it, focuses the trace pane and says which flow it
 * went to: from "what varies" to the request where it did.  A session
 * timed by sampled stamps says so above the list (variance_timing_note).
 *
 * The analysis reads the whole session: it runs on its own thread from
 * the first draw (tui/bg.h), as the flows pane's does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/variance.h"
#include "engine/variance.h"
#include "tui/bg.h"
#include "tui/screen.h"
#include "tui/view.h"

#define VV_GROUPS_SHOWN 3 /* problem groups above the list, at most */

struct variance_pane {
	int loaded;
	struct tui_bg bg;
	struct variance_view vv;
	char err[200];
	long sel, top;
	int row0; /* the list's first row (clicks) */
};

static void vp_work(struct session *s, const char *cause, void *arg)
{
	struct variance_pane *vp = arg;
	char *why = NULL;

	if (!s) {
		snprintf(vp->err, sizeof(vp->err), "%s", cause);
		return;
	}
	if (variance_view_load(s, &vp->vv, &why))
		snprintf(vp->err, sizeof(vp->err), "%s",
			 why ? why : "cannot analyse the session");
	else if (!vp->vv.nf)
		snprintf(vp->err, sizeof(vp->err),
			 "no function explains a group's variance: no group "
			 "of %d flows or more varies (cv > %.2g, std dev "
			 "over %.0f us) or is slow",
			 VARIANCE_MIN_UNITS, VARIANCE_CV,
			 VARIANCE_FLOOR_NS / 1000);
	free(why);
}

static int vp_ready(struct view *v, struct variance_pane *vp)
{
	if (!vp->loaded) {
		vp->loaded = 1;
		bg_start(&vp->bg, view_session(v), vp_work, vp);
	}
	return !bg_shown(&vp->bg);
}

static int vp_open(struct view *v, char **cause)
{
	(void)cause;
	v->priv = calloc(1, sizeof(struct variance_pane));
	return v->priv ? 0 : -ENOMEM;
}

static void vp_free(struct view *v)
{
	struct variance_pane *vp = v->priv;

	if (!vp)
		return;
	if (bg_release(&vp->bg))
		return; /* quitting while it runs: the thread keeps vp */
	variance_view_release(&vp->vv);
	free(vp);
}

static void vp_draw(struct view *v, const struct screen_rect *r, int focused)
{
	struct variance_pane *vp = v->priv;
	const struct variance_view *vv = &vp->vv;
	int row = 0, shown = 0;
	long i;

	if (!vp_ready(v, vp)) {
		screen_put(r, 0, 0, SA_DIM, "grouping the flows by path and "
					    "their variance: reading the "
					    "session ...");
		return;
	}
	if (vp->err[0]) {
		screen_put(r, 0, 0, SC_RED, vp->err);
		return;
	}
	for (size_t g = 0; g < vv->ng && shown < VV_GROUPS_SHOWN &&
			   row < r->h - 2; g++) {
		char p95[32];

		if (!vv->g[g].problem)
			continue;
		tui_dur(vv->g[g].p95_ns, p95, sizeof(p95));
		screen_printf(r, row++, 0, SC_RED | SA_BOLD,
			      "group %zu: %zu flows, cv %.2f, p95 %s: %s", g,
			      vv->g[g].flows, vv->g[g].cv, p95, vv->g[g].path);
		shown++;
	}
	if (vv->estimated && r->w > 8) { /* on up to three rows */
		const char *note = variance_timing_note(vv);
		size_t len = strlen(note), at = 0, w = (size_t)r->w;

		for (int k = 0; k < 3 && at < len && row < r->h - 2;
		     k++, at += w)
			screen_printf(r, row++, 0, SC_YELLOW, "%.*s", (int)w,
				      note + at);
	}
	if (vv->total)
		screen_printf(r, row++, 0, SA_DIM,
			      "attach --adaptive traced %zu of %" PRId64
			      " functions (%.1f%%)", vv->patched, vv->total,
			      100.0 * (double)vv->patched / (double)vv->total);
	screen_printf(r, row++, 0, SA_BOLD, " SHARE  %-32s %9s GROUP  TRACED",
		      "FUNCTION", "CALLS");
	vp->row0 = row;
	if (vp->sel < vp->top)
		vp->top = vp->sel;
	if (vp->sel >= vp->top + (r->h - row))
		vp->top = vp->sel - (r->h - row) + 1;
	if (vp->top < 0)
		vp->top = 0;
	for (i = vp->top; i < (long)vv->nf && row < r->h; i++, row++) {
		const struct variance_view_func *f = &vv->f[i];
		int attr = i == vp->sel && focused ? SA_REVERSE : SA_NORMAL;
		int col;

		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		if (f->share < VARIANCE_NOISE)
			attr |= SA_DIM;
		col = screen_printf(r, row, 0, attr | (i == 0 && f->share >=
							  VARIANCE_NOISE
						      ? SC_RED
						      : 0),
				    "%5.1f%%  %-32.32s", f->share * 100,
				    f->func);
		col += screen_printf(r, row, col, attr, " %9" PRId64 " %5zu",
				     f->calls, f->group);
		if (f->patched_at_ns >= 0)
			col += screen_printf(r, row, col, attr, "  after %.1f s",
					     f->patched_at_ns / 1e9);
		if (f->share < VARIANCE_NOISE)
			screen_put(r, row, col, attr, "  (noise)");
	}
}

/* Enter: the function's longest call in the slowest flow of its group */
static int vp_enter(struct view *v, struct variance_pane *vp)
{
	const struct variance_view_func *f;
	int64_t ev, dur;
	size_t flow;
	char *cause = NULL, d[32];

	if (vp->sel < 0 || vp->sel >= (long)vp->vv.nf)
		return 1;
	f = &vp->vv.f[vp->sel];
	if (variance_view_slow(&vp->vv, (size_t)vp->sel, &ev, &flow, &dur)) {
		screen_error("%s: no call of it in a flow of group %zu",
			     f->func, f->group);
		return 1;
	}
	if (view_goto_event(v, ev, &cause)) {
		screen_error("%s", cause ? cause : "cannot go there");
		free(cause);
		return 1;
	}
	view_focus(v, "trace");
	tui_dur(dur, d, sizeof(d));
	screen_message("%s in flow %zu, the slowest of group %zu that calls "
		       "it (%s)", f->func, flow, f->group, d);
	return 1;
}

static int vp_key(struct view *v, int key)
{
	struct variance_pane *vp = v->priv;
	long n;

	if (!vp->loaded || bg_pending(&vp->bg) || vp->err[0])
		return 0;
	n = (long)vp->vv.nf;
	if (view_list_key(key, &vp->sel, n))
		return 1;
	switch (key) {
	case SCREEN_KEY_ENTER:
		return vp_enter(v, vp);
	}
	return 0;
}

static void vp_click(struct view *v, int row)
{
	struct variance_pane *vp = v->priv;
	long i;

	if (!vp->loaded || bg_pending(&vp->bg) || vp->err[0] || row < vp->row0)
		return;
	i = vp->top + row - vp->row0;
	if (i < (long)vp->vv.nf)
		vp->sel = i;
}

static int vp_busy(struct view *v)
{
	struct variance_pane *vp = v->priv;

	return bg_busy(&vp->bg);
}

const struct view_ops view_variance_ops = {
	.name = "variance",
	.title = "functions by their share of a group's latency variance",
	.help = "Enter the function's longest call in the slowest flow of its "
		"group",
	.open = vp_open,
	.free = vp_free,
	.draw = vp_draw,
	.key = vp_key,
	.click = vp_click,
	.busy = vp_busy,
};
