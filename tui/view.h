/*
 * tui/view.h - a pane of the TUI (uftrace's tui_window_ops, tmux's
 * cmd_entry): each view is one file, tui/view-<name>.c, that defines one
 * const struct view_ops.  The TUI core (tui/cmd-tui.c) lists them in one
 * table, lays them out, routes keys to the focused one and redraws.
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
 */
#ifndef PROPEL_TUI_VIEW_H
#define PROPEL_TUI_VIEW_H

#include <stdint.h>

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
};

struct view {
	const struct view_ops *ops;
	struct tui *tui; /* the core; use the accessors below */
	void *priv;      /* the view's own state */
};

/* ---- accessors the core provides (tui/cmd-tui.c) ---- */

/* The open session (engine/session.h; session_db() for queries). */
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

/* Give the focus to the view named `name` (e.g. from a drill-down);
 * 0 or -ENOENT. */
int view_focus(struct view *v, const char *name);

/* The views the core knows, one per file. */
extern const struct view_ops view_trace_ops;
extern const struct view_ops view_source_ops;
extern const struct view_ops view_threads_ops;
extern const struct view_ops view_vitals_ops;

#endif
