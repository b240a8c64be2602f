/*
 * tui/view-live.c - the live console's pane while a capture run goes
 * (tui/live.h: `a`/`A` on the process view start it):
 *
 *    session propel-4242-20261127-220000.db  (messages: ...log)
 *    TRACED  PID COMMAND           CPU%  OFF%  SYS/s WAITING
 *           4242 dist-back          37.5  90.6  12.3k sock recvfrom
 *    18 flows complete so far, by suspect score (2 s ago, 5321 events
 *    read in 0.4 s)
 *    RANK    SCORE  EVENTS   SPAN ms  PIDS            START
 *       1    12.50     210      3.20  4242,4250       handle_request
 *
 * The flows are the newest snapshot's (tui/live.c: the rings read into a
 * scratch session every LIVE_SNAP_S, ranked by view_flows_rank, as the
 * flows pane ranks a stored session); before the first one the pane
 * says it is reading, never an empty list as if there were none.
 * The traced processes of this kernel (tui/live.h live_pids), the one
 * attached to first (always on screen: with --follow its busier children
 * and peers had pushed it under "and 1 more"), then the busiest,
 * LIVE_PROCS_SHOWN of them, with the process view's figures (CPU%
 * from /proc over the core's tick, OFF%, SYS/s and WAITING from the
 * kernel's view, engine/node-vitals.h): the vital signs beside the
 * flows.  The status line: `attached to PID (COMMAND)`, events (the larger of
 * the rings' committed count and the last snapshot's), processes
 * reached, drops, flows, and the session file.  `x` (the core: stop, open
 * the session) and `q` (quit, the session kept) are the core's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/node-vitals.h"
#include "share/clock.h"
#include "share/procs.h"
#include "tui/live.h"
#include "tui/screen.h"
#include "tui/view.h"

#define LIVE_PROCS_SHOWN 4 /* traced processes listed above the flows */
#define LIVE_PIDS_MAX 256

struct live_proc {
	struct procs_stat st;
	double t;   /* when st was read */
	double cpu; /* % of one core since the read before; < 0 unknown */
};

struct live_view {
	long sel, top;
	struct live_proc procs[LIVE_PIDS_MAX]; /* busiest first */
	int nprocs;
};

static int live_proc_busier(const void *a, const void *b)
{
	const struct live_proc *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? 1 : -1;
	return x->st.pid - y->st.pid;
}

/* Each tick: the traced processes now, their CPU% since the last tick. */
static void live_view_tick(struct view *v)
{
	struct tui_live *l = view_live(v);
	struct live_view *lv = v->priv;
	struct live_proc next[LIVE_PIDS_MAX];
	pid_t pids[LIVE_PIDS_MAX];
	long hz = sysconf(_SC_CLK_TCK);
	double now = propel_mono_s();
	const char *comm;
	int n, i, j, k = 0, root, follow;

	if (!l)
		return;
	n = live_pids(l, pids, LIVE_PIDS_MAX);
	for (i = 0; i < n; i++) {
		struct live_proc *p = &next[k];

		if (procs_stat_read(pids[i], &p->st))
			continue; /* gone */
		p->t = now;
		p->cpu = -1;
		for (j = 0; j < lv->nprocs; j++)
			if (lv->procs[j].st.pid == p->st.pid &&
			    lv->procs[j].st.starttime == p->st.starttime &&
			    now > lv->procs[j].t)
				p->cpu = 100.0 *
					 (p->st.ticks - lv->procs[j].st.ticks) /
					 (hz > 0 ? hz : 100) /
					 (now - lv->procs[j].t);
		k++;
	}
	qsort(next, k, sizeof(next[0]), live_proc_busier);
	live_target(l, &root, &comm, &follow);
	for (i = 1; i < k; i++)
		if (next[i].st.pid == root) { /* the attached one first */
			struct live_proc r = next[i];

			memmove(&next[1], &next[0], i * sizeof(next[0]));
			next[0] = r;
			break;
		}
	memcpy(lv->procs, next, k * sizeof(next[0]));
	lv->nprocs = k;
}

/* The traced processes' lines from row; the row after them. */
static int live_view_procs(struct view *v, const struct screen_rect *r,
			   int row)
{
	struct live_view *lv = v->priv;
	int i;

	if (!lv->nprocs)
		return row;
	screen_printf(r, row++, 0, SA_BOLD, "%-6s %7s %-15s %6s %5s %6s %s",
		      "TRACED", "PID", "COMMAND", "CPU%", "OFF%", "SYS/s",
		      "WAITING");
	for (i = 0; i < lv->nprocs && i < LIVE_PROCS_SHOWN && row < r->h;
	     i++) {
		const struct live_proc *p = &lv->procs[i];
		char cpu[16], off[16], sys[16];
		struct node_vital nvl;

		node_vitals_get(view_node_vitals(v), p->st.pid, p->st.state,
				&nvl);
		view_procs_figures(p->cpu, p->st.nthreads, &nvl, cpu, off, sys,
				   sizeof(cpu));
		screen_printf(r, row++, 0, SA_NORMAL,
			      "%-6s %7d %-15.15s %s %s %s %s", "", p->st.pid,
			      p->st.comm, cpu, off, sys, nvl.why);
	}
	if (lv->nprocs > LIVE_PROCS_SHOWN && row < r->h)
		screen_printf(r, row++, 0, SA_DIM,
			      "%-6s and %d more traced processes", "",
			      lv->nprocs - LIVE_PROCS_SHOWN);
	return row;
}

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
	row = live_view_procs(v, r, row);
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
	.tick = live_view_tick,
	.status = live_view_status,
};
