/*
 * tui/bg.h - a view's analysis on a thread of its own (tui/bg.c).  A pane
 * that reads the whole session (the flows ranking, the variance groups:
 * seconds on a 10M-event session) starts its work on the first draw and
 * says what it is doing while it runs; the first screen and the other
 * panes never wait for it.  The thread opens its own connection to the
 * session file (the TUI's is not shared across threads), kept open until
 * bg_release, so what the work built may point into it.
 *
 * The view's busy() returns bg_pending(), so the core redraws every
 * TUI_BUSY_MS until the work is done; anything that needs the result
 * right away (a `:` command) calls bg_wait().  The work writes only into
 * its own state, which the view reads once bg_pending() says 0.
 */
#ifndef PROPEL_TUI_BG_H
#define PROPEL_TUI_BG_H

#include <pthread.h>

struct session;

struct tui_bg {
	int started; /* bg_start was called */
	int running; /* the thread runs or is not joined yet */
	int done;    /* (atomic) the work returned */
	int drew;    /* the last draw showed the work under way */
	pthread_t th;
	char *path;
	struct session *own;
	/* the work: with the thread's session (NULL when it could not be
	 * opened: cause says why) */
	void (*fn)(struct session *s, const char *cause, void *arg);
	void *arg;
};

/* Start fn(own session, arg) on a thread, on the file of session s (in
 * line, on s itself, when no thread can be had).  Once per bg. */
void bg_start(struct tui_bg *bg, struct session *s,
	      void (*fn)(struct session *s, const char *cause, void *arg),
	      void *arg);
/* 1 while the work runs; joins the thread once it is done. */
int bg_pending(struct tui_bg *bg);
/* For draw(): 1 while the work runs (draw what it is doing), noted, so
 * that bg_busy asks for the one redraw that shows the result. */
int bg_shown(struct tui_bg *bg);
/* For busy(): 1 while the work runs, and after it until a draw has shown
 * its result (a small session's work can end between the draw that
 * started it and the core's question). */
int bg_busy(struct tui_bg *bg);
/* Wait for the work to be done. */
void bg_wait(struct tui_bg *bg);
/* 0 and the connection closed (what the work built holds no statement
 * of it: release that after), or 1 when the work still runs: the caller
 * must then leave what the work writes to it (the TUI is exiting: the
 * thread is detached and ends with the process). */
int bg_release(struct tui_bg *bg);

#endif
