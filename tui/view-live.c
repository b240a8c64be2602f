/*
 * tui/view-live.c - the live console's pane while a capture run goes
 * (tui/live.h: `a`/`A` on the process view start it):
 *
 *    session propel-4242-20261127-220000.db  (messages: ...log)
 *    18 flows complete so far, by suspect score (2 s ago, 5321 events
 *    read in 0.4 s)
 *    RANK    SCORE  EVENTS   SPAN ms  PIDS            START
 *       1    12.50     210      3.20  4242,4250       handle_request
 *
 * The flows are the newest snapshot's (tui/live.c: the rings read into a
 * scratch session every LIVE_SNAP_S, ranked by view_flows_rank, as the
 * flows pane ranks a stored session); before the first one the pane
 * says it is reading, never an empty list as if there were none.
 * The status line: `attached to PID (COMMAND)`, events (the larger of
 * the rings' committed count and the last snapshot's), processes
 * reached, drops, flows, and the session file.  `x` (the core: stop, open
 * the session) and `q` (quit, the session kept) are the core's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/live.h"
#include "tui/screen.h"
#include "tui/view.h"

struct live_view {
	long sel, top;
};

static int live_view_open(struct view *v, char **cause)
{
	(void)cause;
	v->priv = calloc(1, sizeof(struct live_view));
	return v->priv ? 0 : -1;
}

static void live_view_free(struct view *v)
{
	free(v->priv);
}

static void live_view_draw(struct view *v, const struct screen_rect *r,
			   int focused)
{
	struct tui_live *l = view_live(v);
	struct live_view *lv = v->priv;
	const struct live_flow *f;
	const char *note;
	uint64_t events;
	double age, took;
	int n, row = 0, h;
	long i;

	if (!l)
		return;
	n = live_flows(l, &f, &events, &age, &took, &note);
	screen_printf(r, row++, 0, SA_NORMAL, "session %s  (messages: %s)",
		      live_db(l), live_log(l));
	if (!live_running(l))
		screen_put(r, row++, 0, SC_YELLOW | SA_BOLD,
			   "the run has ended (the targets are gone): x opens "
			   "the session, q quits");
	if (note)
		screen_put(r, row++, 0, SC_RED, note);
	if (n < 0) {
		screen_put(r, row, 0, SA_DIM,
			   "reading the rings for the flows so far (the first "
			   "snapshot comes a second after the attach)...");
		return;
	}
	screen_printf(r, row++, 0, SA_NORMAL,
		      "%d flows complete so far, by suspect score (%.0f s ago, "
		      "%" PRIu64 " events read in %.1f s)",
		      n, age, events, took);
	if (!n) {
		screen_put(r, row, 0, SA_DIM,
			   "no flow complete yet: the next snapshot will tell");
		return;
	}
	screen_printf(r, row++, 0, SA_BOLD, "%4s %8s %7s %9s  %-15s %s", "RANK",
		      "SCORE", "EVENTS", "SPAN ms", "PIDS", "START");
	h = r->h - row;
	if (lv->sel >= n)
		lv->sel = n - 1;
	if (lv->sel < lv->top)
		lv->top = lv->sel;
	if (h > 0 && lv->sel >= lv->top + h)
		lv->top = lv->sel - h + 1;
	for (i = lv->top; i < n && row < r->h; i++, row++) {
		int attr = i == lv->sel && focused ? SA_REVERSE : SA_NORMAL;

		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		screen_printf(r, row, 0, attr | (f[i].rank == 1 ? SC_RED : 0),
			      "%4d %8.2f %7ld %9.2f  %-15s %s", f[i].rank,
			      f[i].score, f[i].nevents, f[i].span_ms, f[i].pids,
			      f[i].func);
	}
}

static int live_view_key(struct view *v, int key)
{
	struct live_view *lv = v->priv;

	switch (key) {
	case SCREEN_KEY_UP:
		lv->sel = lv->sel > 0 ? lv->sel - 1 : 0;
		return 1;
	case SCREEN_KEY_DOWN:
		lv->sel++; /* bounded at the next draw */
		return 1;
	case SCREEN_KEY_HOME:
		lv->sel = 0;
		return 1;
	}
	return 0;
}

static void live_view_status(struct view *v, char *buf, int size)
{
	struct tui_live *l = view_live(v);
	const struct live_flow *f;
	const char *comm, *note;
	struct run_progress p;
	uint64_t events;
	double age, took;
	int pid, follow, n;
	char flows[32];

	if (!l) {
		snprintf(buf, size, " not attached");
		return;
	}
	live_target(l, &pid, &comm, &follow);
	live_progress(l, &p);
	n = live_flows(l, &f, &events, &age, &took, &note);
	/* the rings' committed sub-buffers are a floor that stays 0 under
	 * light load; the snapshot counted every event it read */
	if (events > p.events)
		p.events = events;
	if (n < 0)
		snprintf(flows, sizeof(flows), "flows: reading");
	else
		snprintf(flows, sizeof(flows), "%d flows", n);
	snprintf(buf, size,
		 " %s %d (%s)%s %" PRIu64 " events %d procs %" PRIu64
		 " drops %s  %s",
		 live_running(l) ? "attached to" : "ended:", pid, comm,
		 follow ? " follow" : "", p.events, p.processes, p.drops, flows,
		 live_db(l));
}

const struct view_ops view_live_ops = {
	.name = "live",
	.title = "attached: flows as they complete",
	.help = "x stop the run and open its session, q quit (the session "
		"is kept), Up/Down select",
	.open = live_view_open,
	.free = live_view_free,
	.draw = live_view_draw,
	.key = live_view_key,
	.status = live_view_status,
};
