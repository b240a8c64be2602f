/*
 * tui/view-vitals.c - the vitals view (chopstix §4: "vital signs over
 * time") and `propel vitals tui [--live] [DB]`, its stand-alone host.
 *
 * Three screens, one stack deep each (Backspace goes back):
 *   graph    one row per time bucket (an epoch, or several when there are
 *            more epochs than rows): the system total of vital A as a bar
 *            and of vital B as a line point overlaid on it, each scaled to
 *            its own maximum; epochs the rules (analysis/vitals-rules.h,
 *            via cmd_vitals_flags) flagged carry a red `!` on the time
 *            axis, and the selected epoch's flags are listed below.
 *            Tab / 1-9 choose A, Shift-Tab / v chooses B, Up/Down or
 *            Left/Right select an epoch, Enter opens its samples.
 *   samples  the selected epoch's samples, heaviest first; Enter on one
 *   stack    shows its user and kernel stacks.
 * Inside the trace TUI, on a session recorded with `record|attach --vitals`
 * (engine/vitals-trace.h), `t` on a sample, or Enter on its stack, jumps
 * into the trace: the cursor to the sample's thread at the sample's time
 * (samples are CLOCK_REALTIME; meta vitals.mono_to_real_ns moves them onto
 * the trace's clock), the focus to the trace pane (vv_jump).
 *
 * State lives in struct vv (v->priv).  Inside the trace TUI (tui/tui.c)
 * the session comes from view_session(); stand-alone, cmd_vitals_tui opens
 * it and hands it over in v->priv before open() (v->tui is NULL then, and
 * no other accessor of tui/view.h is called).  Live: while a run of the
 * session has no end time (a `vitals record` still writing) or with
 * --live, the history is re-read once a second (vv_refresh).
 * Draws only through tui/screen.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/vitals-rules.h"
#include "engine/session.h"
#include "engine/vitals-store.h"
#include "share/clock.h"
#include "share/log.h"
#include "tui/cmd-vitals.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/view.h"

#define VV_MAXSAMPLES 1000

enum { VV_GRAPH, VV_SAMPLES, VV_STACK };

struct vv_sample {
	uint64_t ts_ns, weight;
	char vital[12], comm[16];
	uint32_t pid, tid;
	char *kstack, *ustack;
};

struct vv {
	struct session *s;
	struct vitals_store *st;
	int standalone, live, force_live;
	struct vitals_hist h;
	struct vitals_rules_flag *fl;
	size_t nfl;
	char names[VR_NR][12]; /* vitals present, VR order */
	int nnames;
	int a, b;       /* index into names */
	int sel;        /* selected epoch */
	int mode;
	int top;        /* first row of the sample list */
	struct vv_sample *sm;
	int nsm, ssel, stop;
	char err[200];
	double last_load;
};

static void vv_free_samples(struct vv *p)
{
	int i;

	for (i = 0; i < p->nsm; i++) {
		free(p->sm[i].kstack);
		free(p->sm[i].ustack);
	}
	free(p->sm);
	p->sm = NULL;
	p->nsm = 0;
}

/* a run without an end time: `vitals record` is still writing */
static int vv_running(struct vv *p)
{
	sqlite3_stmt *q;
	int n = 0;

	if (sqlite3_prepare_v2(session_db(p->s),
			       "SELECT count(*) FROM vitals_runs WHERE end_ns IS "
			       "NULL OR end_ns = 0",
			       -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return n > 0;
}

/* The session holds vital signs (also asked by tui/tui.c, which opens
 * a session without trace events in this view). */
int view_vitals_present(struct session *s)
{
	sqlite3_stmt *q;
	int n = 0;

	if (sqlite3_prepare_v2(session_db(s),
			       "SELECT count(*) FROM sqlite_master WHERE "
			       "name = 'vitals_epochs'",
			       -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return n > 0;
}

/* (Re)load the history and the rules' flags; keeps the selection. */
static int vv_load(struct vv *p, char **cause)
{
	int was_last = p->h.n == 0 || p->sel == (int)p->h.n - 1;
	char a[12] = "", b[12] = "";
	int seen[VR_NR] = { 0 }, i, err;
	size_t e, j;

	if (p->nnames) {
		snprintf(a, sizeof(a), "%s", p->names[p->a]);
		snprintf(b, sizeof(b), "%s", p->names[p->b]);
	}
	vitals_hist_release(&p->h);
	free(p->fl);
	p->fl = NULL;
	p->nfl = 0;
	p->last_load = propel_mono_s();
	if (!p->st)
		return 0;
	err = vitals_store_load(p->st, 0, &p->h, cause);
	if (err)
		return err;
	err = cmd_vitals_flags(&p->h, &p->fl, &p->nfl);
	if (err)
		return propel_cause(cause, err, "running the rules");
	for (e = 0; e < p->h.n; e++)
		for (j = 0; j < p->h.ep[e].nrows; j++) {
			int v = vitals_rules_vital(p->h.ep[e].rows[j].vital);

			if (v >= 0)
				seen[v] = 1;
		}
	p->nnames = 0;
	p->a = 0;
	p->b = -1;
	for (i = 0; i < VR_NR; i++)
		if (seen[i]) {
			snprintf(p->names[p->nnames], sizeof(p->names[0]), "%s",
				 vitals_rules_name(i));
			if (a[0] && !strcmp(a, p->names[p->nnames]))
				p->a = p->nnames;
			if (b[0] && !strcmp(b, p->names[p->nnames]))
				p->b = p->nnames;
			if (!b[0] && p->b < 0 && i == VR_SCHED)
				p->b = p->nnames;
			p->nnames++;
		}
	if (p->b < 0)
		p->b = p->nnames > 1 ? 1 : 0;
	if (was_last && p->h.n && p->live)
		p->sel = (int)p->h.n - 1;
	if (p->sel >= (int)p->h.n)
		p->sel = p->h.n ? (int)p->h.n - 1 : 0;
	return 0;
}

static double vv_total(const struct vitals_hepoch *e, const char *vital)
{
	double sum = 0;
	size_t j;

	for (j = 0; j < e->nrows; j++)
		if (!strcmp(e->rows[j].vital, vital))
			sum += e->rows[j].value;
	return sum;
}

static int vv_flagged(const struct vv *p, size_t epoch, const char **rule)
{
	size_t i;

	for (i = 0; i < p->nfl; i++)
		if (p->fl[i].epoch == epoch) {
			if (rule)
				*rule = p->fl[i].rule;
			return 1;
		}
	return 0;
}

static int vv_open(struct view *v, char **cause)
{
	struct vv *p = v->priv;

	if (!p) { /* inside the trace TUI */
		p = calloc(1, sizeof(*p));
		if (!p)
			return propel_cause(cause, -ENOMEM, "out of memory");
		p->s = view_session(v);
		v->priv = p;
	}
	if (p->s && view_vitals_present(p->s)) {
		char *c = NULL;

		if (vitals_store_new(p->s, &p->st, &c) || vv_load(p, &c))
			snprintf(p->err, sizeof(p->err), "%s",
				 c ? c : "cannot read the vitals");
		free(c);
	}
	p->live = p->force_live || (p->st && vv_running(p));
	return 0;
}

static void vv_release(struct vv *p)
{
	vv_free_samples(p);
	vitals_hist_release(&p->h);
	free(p->fl);
	vitals_store_free(p->st);
	p->fl = NULL;
	p->st = NULL;
}

static void vv_free(struct view *v)
{
	struct vv *p = v->priv;

	if (!p)
		return;
	vv_release(p);
	if (!p->standalone)
		free(p);
	v->priv = NULL;
}

/* called by the host once per idle second */
static void vv_refresh(struct vv *p)
{
	char *cause = NULL;

	if (!p->live || !p->st || propel_mono_s() - p->last_load < 0.9)
		return;
	p->live = p->force_live || vv_running(p);
	if (vv_load(p, &cause))
		snprintf(p->err, sizeof(p->err), "%s", cause ? cause : "reload");
	free(cause);
}

/* ---- graph ---- */

static void vv_fmt(char *buf, int size, double x)
{
	if (x >= 1e9)
		snprintf(buf, size, "%.1fG", x / 1e9);
	else if (x >= 1e6)
		snprintf(buf, size, "%.1fM", x / 1e6);
	else if (x >= 1e4)
		snprintf(buf, size, "%.1fk", x / 1e3);
	else
		snprintf(buf, size, "%.0f", x);
}

static void vv_draw_graph(struct vv *p, const struct screen_rect *r)
{
	int rows = r->h - 3, gcol = 26, gw = r->w - gcol - 1, per, nb, i, y;
	const char *na = p->names[p->a], *nb_ = p->names[p->b];
	double maxa = 0, maxb = 0, *va, *vb;
	uint64_t t0 = p->h.ep[0].start_ns;
	size_t k;

	if (rows < 2)
		rows = 2;
	if (gw < 4)
		gw = 4;
	screen_printf(r, 0, 0, SA_BOLD, "%zu epochs of %u ms via %s%s", p->h.n,
		      p->h.epoch_ms, p->h.source, p->live ? "  [live]" : "");
	screen_printf(r, 1, 0, SA_NORMAL, "  time  !");
	screen_printf(r, 1, 10, SC_GREEN | SA_BOLD, "%-7.7s", na);
	screen_printf(r, 1, 18, SC_YELLOW | SA_BOLD, "%-7.7s", nb_);
	screen_printf(r, 1, gcol, SA_DIM, "\u2588 %s  \u25c6 %s (each to its max)",
		      na, nb_);
	/* buckets: as many epochs per row as needed to fit */
	per = ((int)p->h.n + rows - 2) / (rows - 1);
	if (per < 1)
		per = 1;
	nb = ((int)p->h.n + per - 1) / per;
	va = calloc(nb, sizeof(double));
	vb = calloc(nb, sizeof(double));
	if (!va || !vb)
		goto out;
	for (k = 0; k < p->h.n; k++) {
		va[k / per] += vv_total(&p->h.ep[k], na);
		vb[k / per] += vv_total(&p->h.ep[k], nb_);
	}
	for (i = 0; i < nb; i++) {
		if (va[i] > maxa)
			maxa = va[i];
		if (vb[i] > maxb)
			maxb = vb[i];
	}
	for (i = 0, y = 2; i < nb && y < r->h - 1; i++, y++) {
		int sel = p->sel / per == i, flag = 0, j, wa, wb;
		const char *rule = NULL;
		char sa[16], sb[16];

		for (j = i * per; j < (i + 1) * per && j < (int)p->h.n; j++)
			flag |= vv_flagged(p, j, rule ? NULL : &rule);
		vv_fmt(sa, sizeof(sa), va[i]);
		vv_fmt(sb, sizeof(sb), vb[i]);
		if (sel)
			screen_clear_row(r, y, 0, SA_REVERSE);
		screen_printf(r, y, 0, sel ? SA_REVERSE : SA_NORMAL, "%5.1fs",
			      (p->h.ep[i * per].start_ns - t0) / 1e9);
		if (flag)
			screen_put(r, y, 7, SC_RED | SA_BOLD | (sel ? SA_REVERSE : 0),
				   "!");
		screen_printf(r, y, 10, sel ? SA_REVERSE : SC_GREEN, "%-7s", sa);
		screen_printf(r, y, 18, sel ? SA_REVERSE : SC_YELLOW, "%-7s", sb);
		wa = maxa > 0 ? (int)(va[i] / maxa * gw + 0.5) : 0;
		wb = maxb > 0 ? (int)(vb[i] / maxb * (gw - 1) + 0.5) : 0;
		for (j = 0; j < wa; j++)
			screen_put(r, y, gcol + j, SC_GREEN, "\u2588");
		screen_put(r, y, gcol + wb, SC_YELLOW | SA_BOLD, "\u25c6");
		if (flag && rule && gw - wa > (int)strlen(rule) + 2 &&
		    gcol + wa + 1 + (int)strlen(rule) < gcol + wb - 1)
			screen_put(r, y, gcol + wa + 1, SC_RED, rule);
	}
	/* the selected epoch's flags */
	for (k = 0; k < p->nfl && y < r->h; k++) {
		if (p->fl[k].epoch != (size_t)p->sel)
			continue;
		screen_printf(r, y++, 0, SC_RED, "! %s pid %u %s: %s",
			      p->fl[k].rule, p->fl[k].pid, p->fl[k].comm,
			      p->fl[k].why);
	}
	if (y < r->h)
		screen_printf(r, y, 0, SA_DIM,
			      "epoch %d/%zu  Enter: samples  Tab/1-9: %s  "
			      "S-Tab/v: %s",
			      p->sel + 1, p->h.n, na, nb_);
out:
	free(va);
	free(vb);
}

/* ---- samples and stacks ---- */

static int vv_collect(void *arg, const struct vitals_hsample *s)
{
	struct vv *p = arg;
	struct vv_sample *n, *d;

	if (p->nsm >= VV_MAXSAMPLES)
		return 1;
	n = realloc(p->sm, (p->nsm + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->sm = n;
	d = &n[p->nsm++];
	memset(d, 0, sizeof(*d));
	d->ts_ns = s->ts_ns;
	d->weight = s->weight;
	snprintf(d->vital, sizeof(d->vital), "%s", s->vital);
	snprintf(d->comm, sizeof(d->comm), "%s", s->comm);
	d->pid = s->pid;
	d->tid = s->tid;
	d->kstack = s->kstack ? strdup(s->kstack) : NULL;
	d->ustack = s->ustack ? strdup(s->ustack) : NULL;
	return 0;
}

static const char *vv_first_frame(const char *frames, char *buf, int size)
{
	const char *e;

	if (!frames)
		return "";
	e = strchr(frames, '\n');
	snprintf(buf, size, "%.*s", e ? (int)(e - frames) : (int)strlen(frames),
		 frames);
	return buf;
}

static void vv_draw_samples(struct vv *p, const struct screen_rect *r)
{
	int y, i, rows = r->h - 2;
	char f[128];

	screen_printf(r, 0, 0, SA_BOLD,
		      "epoch %d: %d sample%s by weight  (Enter: stacks, "
		      "Backspace: back)",
		      p->sel + 1, p->nsm, p->nsm == 1 ? "" : "s");
	screen_printf(r, 1, 0, SA_UNDERLINE, "%-8s %-7s %-7s %-16s %-9s %s",
		      "vital", "pid", "tid", "comm", "weight", "top frame");
	if (!p->nsm) {
		screen_put(r, 2, 0, SA_DIM, "no samples in this epoch");
		return;
	}
	if (rows < 1)
		rows = 1;
	if (p->ssel < p->top)
		p->top = p->ssel;
	if (p->ssel >= p->top + rows)
		p->top = p->ssel - rows + 1;
	for (i = p->top, y = 2; i < p->nsm && y < r->h; i++, y++) {
		const struct vv_sample *s = &p->sm[i];
		int a = i == p->ssel ? SA_REVERSE : SA_NORMAL;

		if (a)
			screen_clear_row(r, y, 0, a);
		screen_printf(r, y, 0, a, "%-8s %-7u %-7u %-16s %-9" PRIu64 " %s",
			      s->vital, s->pid, s->tid, s->comm, s->weight,
			      vv_first_frame(s->ustack ? s->ustack : s->kstack, f,
					     sizeof(f)));
	}
}

static int vv_draw_frames(const struct screen_rect *r, int y, const char *what,
			  const char *frames, int attr)
{
	const char *p = frames;
	int n = 0;

	screen_printf(r, y++, 0, SA_BOLD, "%s stack", what);
	if (!p || !*p) {
		screen_put(r, y++, 2, SA_DIM, "(none)");
		return y;
	}
	while (p && *p && y < r->h) {
		const char *e = strchr(p, '\n');

		screen_printf(r, y++, 2, attr, "#%-2d %.*s", n++,
			      e ? (int)(e - p) : (int)strlen(p), p);
		p = e ? e + 1 : NULL;
	}
	return y;
}

static void vv_draw_stack(struct vv *p, const struct screen_rect *r)
{
	const struct vv_sample *s = &p->sm[p->ssel];
	int y;

	screen_printf(r, 0, 0, SA_BOLD,
		      "sample %s pid %u tid %u %s weight %" PRIu64
		      "  (Backspace: back)",
		      s->vital, s->pid, s->tid, s->comm, s->weight);
	y = vv_draw_frames(r, 1, "user", s->ustack, SC_CYAN);
	if (y < r->h)
		vv_draw_frames(r, y, "kernel", s->kstack, SC_MAGENTA);
}

static void vv_draw(struct view *v, const struct screen_rect *r, int focused)
{
	struct vv *p = v->priv;

	vv_refresh(p);
	if (p->err[0]) {
		screen_printf(r, 0, 0, SC_RED, "vitals: %s", p->err);
		return;
	}
	if (!p->h.n) {
		screen_put(r, 0, 0, SA_DIM,
			   p->live ? "vitals: waiting for the first epoch..."
				   : "no vital signs in this session (propel "
				     "vitals record -o DB)");
		return;
	}
	if (p->mode == VV_STACK && p->ssel < p->nsm)
		vv_draw_stack(p, r);
	else if (p->mode != VV_GRAPH)
		vv_draw_samples(p, r);
	else
		vv_draw_graph(p, r);
}

/* The sample under the selection into the trace, at its time on its
 * thread (see the note at the top). */
static int vv_jump(struct view *v, struct vv *p)
{
	const struct vv_sample *sm;
	struct recon *rc;
	char *cause = NULL, *val;
	int64_t m2r, ts, idx, id;
	int t;

	if (p->standalone || !v->tui || p->ssel >= p->nsm)
		return 0;
	sm = &p->sm[p->ssel];
	val = session_meta_get(p->s, "vitals.mono_to_real_ns");
	if (!val) {
		screen_message("no trace beside these vitals (record --vitals)");
		return 1;
	}
	m2r = strtoll(val, NULL, 10);
	free(val);
	rc = tui_recon(v);
	t = recon_thread_find(rc, (int)sm->pid, (int)sm->tid);
	if (t < 0) {
		screen_message("thread %u:%u is not in the trace", sm->pid,
			       sm->tid);
		return 1;
	}
	ts = (int64_t)sm->ts_ns - m2r;
	/* the thread's event at or before that time; its first when the
	 * sample is older (a thread's first wait on the run queue comes
	 * before the agent sees it start) */
	idx = recon_at_ts(rc, t, ts);
	if (idx < 0)
		idx = 0;
	id = recon_get(rc, t, idx).id;
	if (id >= 0 ? view_goto_event(v, id, &cause)
		    : cursor_switch_thread(tui_cursor(v), t + 1, &cause) ||
			      view_goto_ts(v, ts, &cause)) {
		screen_message("%s", cause ? cause : "cannot go there");
		free(cause);
		return 1;
	}
	view_focus(v, "trace");
	screen_message("%s sample of %u:%u", sm->vital, sm->pid, sm->tid);
	return 1;
}

static int vv_key(struct view *v, int key)
{
	struct vv *p = v->priv;

	if (!p->h.n)
		return 0;
	if (p->mode == VV_GRAPH) {
		switch (key) {
		case SCREEN_KEY_LEFT:
		case SCREEN_KEY_UP:
			if (p->sel > 0)
				p->sel--;
			return 1;
		case SCREEN_KEY_RIGHT:
		case SCREEN_KEY_DOWN:
			if (p->sel + 1 < (int)p->h.n)
				p->sel++;
			return 1;
		case SCREEN_KEY_HOME:
			p->sel = 0;
			return 1;
		case SCREEN_KEY_END:
			p->sel = (int)p->h.n - 1;
			return 1;
		case SCREEN_KEY_TAB:
			if (!p->standalone)
				return 0; /* Tab moves between the panes */
			p->a = p->nnames ? (p->a + 1) % p->nnames : 0;
			return 1;
		case SCREEN_KEY_BTAB:
			if (!p->standalone)
				return 0;
			/* fallthrough */
		case 'v':
			p->b = p->nnames ? (p->b + 1) % p->nnames : 0;
			return 1;
		case SCREEN_KEY_ENTER:
		case '\n':
		case '\r':
			vv_free_samples(p);
			vitals_store_samples(p->st, p->h.ep[p->sel].id, NULL, 1,
					     vv_collect, p);
			p->ssel = p->top = 0;
			p->mode = VV_SAMPLES;
			if (!p->nsm)
				screen_message("no samples in epoch %d", p->sel + 1);
			return 1;
		}
		if (key >= '1' && key <= '9') {
			if (key - '1' < p->nnames)
				p->a = key - '1';
			return 1;
		}
		return 0;
	}
	switch (key) {
	case SCREEN_KEY_BACKSPACE:
	case 0x7f:
	case 8:
	case SCREEN_KEY_ESC:
		p->mode = p->mode == VV_STACK ? VV_SAMPLES : VV_GRAPH;
		return 1;
	case 't':
		return vv_jump(v, p);
	case SCREEN_KEY_ENTER:
	case '\n':
	case '\r':
		if (p->mode == VV_STACK)
			return vv_jump(v, p);
		break;
	}
	if (p->mode == VV_SAMPLES) {
		switch (key) {
		case SCREEN_KEY_UP:
			if (p->ssel > 0)
				p->ssel--;
			return 1;
		case SCREEN_KEY_DOWN:
			if (p->ssel + 1 < p->nsm)
				p->ssel++;
			return 1;
		case SCREEN_KEY_PGUP:
			p->ssel = p->ssel > 10 ? p->ssel - 10 : 0;
			return 1;
		case SCREEN_KEY_PGDN:
			p->ssel = p->ssel + 10 < p->nsm ? p->ssel + 10
							 : (p->nsm ? p->nsm - 1 : 0);
			return 1;
		case SCREEN_KEY_ENTER:
		case '\n':
		case '\r':
			if (p->nsm)
				p->mode = VV_STACK;
			return 1;
		}
	}
	return 0;
}

const struct view_ops view_vitals_ops = {
	.name = "vitals",
	.title = "vitals",
	.help = "Left/Right epoch, Enter samples, t to the trace, 1-9/v "
		"vitals",
	.open = vv_open,
	.free = vv_free,
	.draw = vv_draw,
	.key = vv_key,
};

/* ---- `propel vitals tui [--live] [DB]` ---- */

int cmd_vitals_tui(int argc, char **argv)
{
	const char *path = PROPEL_SESSION_DEFAULT;
	struct vv p;
	struct view v = { &view_vitals_ops, NULL, &p };
	char *cause = NULL;
	int err, i, quit = 0;

	memset(&p, 0, sizeof(p));
	p.standalone = 1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--live"))
			p.force_live = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: propel vitals tui [--live] [DB]\n"
			       "  browse vital signs: %s; q quits\n"
			       "  --live  re-read new epochs every second (also "
			       "while a `vitals record` is running)\n",
			       view_vitals_ops.help);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			propel_report("vitals tui", 0, "unknown option (see --help)");
			return 2;
		} else
			path = argv[i];
	}
	if (access(path, F_OK) != 0) {
		propel_report("vitals tui", -errno, path);
		return 1;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		propel_report("vitals tui", 0,
			      "not a terminal (use `propel vitals report`)");
		return 1;
	}
	err = session_open(path, SESSION_READ, &p.s, &cause);
	if (err)
		goto out;
	if (!view_vitals_present(p.s)) {
		err = propel_cause(&cause, -ENOENT,
				   "%s: no vital signs in this session", path);
		goto out;
	}
	err = screen_init(&cause);
	if (err)
		goto out;
	vv_open(&v, &cause);
	screen_message("? keys: %s; q quits", view_vitals_ops.help);
	while (!quit) {
		int cols, rows, key;
		struct screen_rect r;
		char status[256];

		screen_size(&cols, &rows);
		r = (struct screen_rect){ 0, 0, cols, rows - 2 };
		screen_begin_frame();
		vv_draw(&v, &r, 1);
		snprintf(status, sizeof(status), " vitals  %s  epoch %d/%zu%s",
			 path, p.h.n ? p.sel + 1 : 0, p.h.n,
			 p.live ? "  [live]" : "");
		screen_status(status);
		screen_end_frame();
		key = screen_getkey(p.live ? 1000 : -1);
		if (key == SCREEN_KEY_HANGUP)
			break;
		if (key == SCREEN_KEY_NONE || key == SCREEN_KEY_RESIZE)
			continue;
		if (vv_key(&v, key))
			continue;
		if (key == 'q' || key == ('C' & 0x1f))
			quit = 1;
		else if (key == '?')
			screen_message("%s; q quits", view_vitals_ops.help);
	}
	screen_fini();
out:
	vv_release(&p);
	if (p.s)
		session_close(p.s);
	if (err) {
		propel_report("vitals tui", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}
