/*
 * tui/view.h - a pane of the TUI (uftrace's tui_window_ops, tmux's
 * cmd_entry): each view is one file, tui/view-<name>.c, that defines one
 * const struct view_ops.  The TUI core (tui/tui.c) lists them in one
 * table (view_table: each view and the modes it opens in), lays them out,
 * routes keys to the focused one and redraws.
 *
 * A view draws only through tui/screen.h and reads the session through
 * the accessors below (plain engine types: no curses, no cursor internals),
 * so a view can be written against these two headers alone.
 *
 * Lifecycle, all called by the TUI core:
 *   open(v, cause)      once, after the session is loaded; v->priv is the
 *                       view's own state.  Non-zero = the view is left out
 *                       (its cause is shown on the message line).
 *   draw(v, r, focused) every frame, into rectangle r (never smaller than
 *                       1x1); must not block, and must be cheap (< ~10 ms):
 *                       query only what is visible.
 *   key(v, key)         the focused view gets each key first; returns 1 if
 *                       it used the key, 0 to let the core handle it.
 *   command(v, argc, argv, cause)   optional: `:` commands the core does not
 *                       know go to the focused view, then to every view;
 *                       returns 1 used, 0 not mine, <0 error with *cause.
 *   moved(v)            optional: the cursor moved (step, goto, thread).
 *   free(v)             once, at exit.
 * Optional, for the live views (the core's live mode, tui/tui.h):
 *   tick(v)             TUI_FIRST_TICK_MS after the first screen, then
 *                       every TUI_TICK_MS (1 s): refresh what is shown.
 *   status(v, buf, n)   the status line, when the focused view has one.
 *   search(v, text)     `/ TEXT` while the view is focused (text "" =
 *                       clear); without it `/` searches the trace.
 *   click(v, row)       optional: a mouse click on row (of the rectangle
 *                       last drawn); the core has focused the view.
 *   busy(v)             optional: 1 while the view works in the
 *                       background (a long analysis on its own thread):
 *                       the core redraws every TUI_BUSY_MS until it is 0.
 */
#ifndef PROPEL_TUI_VIEW_H
#define PROPEL_TUI_VIEW_H

#include <stdint.h>
#include <stdio.h>

#include "tui/screen.h"

struct session;
struct view;
struct tui;

struct view_ops {
	const char *name;  /* "trace", "source", "threads", "vitals", ... */
	const char *title; /* shown in the pane's frame */
	const char *help;  /* lines "key  what it does\n...", shown by `?` */
	int (*open)(struct view *v, char **cause);
	void (*free)(struct view *v);
	void (*draw)(struct view *v, const struct screen_rect *r, int focused);
	int (*key)(struct view *v, int key);
	int (*command)(struct view *v, int argc, char **argv, char **cause);
	void (*moved)(struct view *v);
	void (*tick)(struct view *v);
	void (*status)(struct view *v, char *buf, int size);
	void (*search)(struct view *v, const char *text);
	void (*click)(struct view *v, int row);
	int (*busy)(struct view *v);
};

#define TUI_BUSY_MS 100

struct view {
	const struct view_ops *ops;
	struct tui *tui; /* the core; use the accessors below */
	void *priv;      /* the view's own state */
};

/* ---- accessors the core provides (tui/tui.c) ---- */

/* The open session (engine/session.h; session_db() for queries); NULL in
 * the live console.  Accessors of the cursor below: a session only. */
struct session *view_session(struct view *v);

/* The cursor: the event it sits on (events.id; <0 for an event rebuilt
 * from a wrapped ring), its time, and its thread. */
int64_t view_cursor_event(struct view *v);
int64_t view_cursor_ts(struct view *v);
void view_cursor_thread(struct view *v, int *pid, int *tid);

/* The session's time span [first, last] over all events, in ns. */
void view_time_span(struct view *v, int64_t *first_ns, int64_t *last_ns);

/* Move the cursor: to the last event at or before ts_ns (in the current
 * thread if it has one there, else in any thread), or to an event id.
 * 0, or -errno with *cause ("no event at that time"). */
int view_goto_ts(struct view *v, int64_t ts_ns, char **cause);
int view_goto_event(struct view *v, int64_t event_id, char **cause);

/* A list's moving keys (Up, Down, PgUp, PgDn: 10 rows, Home, End) on
 * *sel among n rows: 1 when key was one of them, 0 otherwise. */
int view_list_key(int key, long *sel, long n);

/* Give the focus to the view named `name` (e.g. from a drill-down);
 * 0 or -ENOENT. */
int view_focus(struct view *v, const char *name);

/* Attach to pid from the live console (`a`; `A`: follow = 1, as
 * --follow): the core's tui_attach() (tui/tui.c).  0, or -errno with
 * *cause, one line for the message line. */
int view_attach(struct view *v, int pid, const char *comm, int follow,
		char **cause);

/* The live console's capture run (tui/live.h), NULL when not attached. */
struct tui_live *view_live(struct view *v);

/* The live console's kernel view of each process (engine/node-vitals.h),
 * NULL outside the live console. */
struct node_vitals;
struct node_vitals *view_node_vitals(struct view *v);

/* The process view's figures of one process (tui/view-procs.c), shared
 * with the live pane's traced processes: CPU% (pcpu, < 0 unknown), OFF%
 * (its threads' time off the CPU) and SYS/s, each n bytes, "-" for what
 * is not known (yet). */
struct node_vital;
void view_procs_figures(double pcpu, int nthreads,
			const struct node_vital *nvl, char *cpu, char *off,
			char *sys, size_t n);
/* The command of process pid in the session (NULL when unknown); a
 * duration in uftrace's units ("2.137 us"): tui/tui-text.c. */
const char *view_proc_command(struct view *v, int pid);
void tui_dur(int64_t ns, char *buf, int size);

/* The views the core knows, one per file (the core's view_table). */
extern const struct view_ops view_trace_ops;
extern const struct view_ops view_source_ops;
extern const struct view_ops view_threads_ops;
extern const struct view_ops view_vitals_ops;
extern const struct view_ops view_flows_ops;
extern const struct view_ops view_rootcause_ops;
extern const struct view_ops view_variance_ops;
extern const struct view_ops view_procs_ops;
extern const struct view_ops view_live_ops;

/* The session holds vital signs (tui/view-vitals.c): a session of vital
 * signs only opens in that view (`propel vitals tui`). */
int view_vitals_present(struct session *s);

/* The flows of session s ranked by suspect score, as the flows pane
 * shows them, in text to out (tui/view-flows.c; the live console's
 * snapshots, tui/live.c): a line "flows N EVENTS", then one per flow,
 * best rank first: "RANK SCORE NEVENTS SPAN_MS PID,PID... FUNC".
 * 0, or -errno with *cause. */
int view_flows_rank(struct session *s, FILE *out, char **cause);

#endif
