/*
 * tui/view-threads.c - the threads pane: one line per thread, saying what
 * it was doing at the cursor's time (TraceBack §4.3.2): its event at or
 * before that time and the function it was in, plus its call depth.  Each
 * line names the thread's process: pid:tid, host and command (the
 * processes of engine/session.h session_processes: after an exec, the
 * program it became; a thread whose name differs from the command adds it
 * in brackets), so every process of a distributed session is listed.  The
 * cursor's thread is marked `*`.  Enter (or Up/Down then Enter) switches the
 * cursor to the selected thread at the same time.  For a hang snapshot
 * this is the opening view: each thread's innermost open call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/view.h"

struct threads_view {
	int sel; /* selected line; -1 = follow the cursor */
	struct session_proc *procs;
	size_t nprocs;
};

static int threads_open(struct view *v, char **cause)
{
	struct threads_view *tv = calloc(1, sizeof(*tv));
	char *why = NULL;

	if (!tv)
		return -12;
	tv->sel = -1;
	v->priv = tv;
	/* without the processes table (an old session) the lines just
	 * lack host and command */
	if (session_processes(view_session(v), &tv->procs, &tv->nprocs, &why))
		tv->nprocs = 0;
	free(why);
	return 0;
}

static void threads_free(struct view *v)
{
	struct threads_view *tv = v->priv;

	session_processes_free(tv->procs, tv->nprocs);
	free(tv);
}

static void threads_draw(struct view *v, const struct screen_rect *r,
			 int focused)
{
	struct threads_view *tv = v->priv;
	struct recon *rc = tui_recon(v);
	struct cursor *c = tui_cursor(v);
	int ct = cursor_thread(c), t, row = 0, first = 0;
	int64_t ts = cursor_event(c)->ts;
	int sel = tv->sel < 0 ? ct : tv->sel;

	if (sel >= r->h)
		first = sel - r->h + 1;
	for (t = first; t < rc->nthreads && row < r->h; t++, row++) {
		const struct recon_thread *th = &rc->threads[t];
		int64_t i = t == ct ? cursor_index(c) : recon_at_ts(rc, t, ts);
		int attr = t == sel && focused ? SA_REVERSE : SA_NORMAL;
		char text[200] = "(not started)";
		const char *fn = "-";
		const struct session_proc *p;
		char who[160];
		int col;

		if (i >= 0 && i < th->n) {
			int64_t f = tui_frame(v, t, i);

			if (f >= 0)
				fn = recon_func_name(rc, recon_get(rc, t, f).func);
			tui_describe(v, t, i, text, sizeof(text));
			if (i == th->n - 1 && t != ct && recon_get(rc, t, i).ts < ts)
				snprintf(text + strlen(text),
					 sizeof(text) - strlen(text), "  (ended)");
		}
		if (attr != SA_NORMAL)
			screen_clear_row(r, row, 0, attr);
		p = session_proc_find(tv->procs, tv->nprocs, th->pid);
		if (p && !p->execd && th->name &&
		    strncmp(th->name, p->command, 15))
			snprintf(who, sizeof(who), "%s %s [%s]",
				 p->host ? p->host : "?", p->command, th->name);
		else if (p)
			snprintf(who, sizeof(who), "%s %s",
				 p->host ? p->host : "?", p->command);
		else
			snprintf(who, sizeof(who), "%s", th->name ? th->name : "");
		col = screen_printf(r, row, 0, attr | (t == ct ? SA_BOLD : 0),
				    "%c%2d %d:%d %s ", t == ct ? '*' : ' ', t + 1,
				    th->pid, th->tid, who);
		col += screen_printf(r, row, col, attr | SC_GREEN, "in %s ", fn);
		screen_put(r, row, col, attr | (i >= 0 && i < th->n &&
						recon_get(rc, t, i).kind == SK_SIGNAL
							? SA_HIGHLIGHT
							: 0),
			   text);
	}
}

static int threads_key(struct view *v, int key)
{
	struct threads_view *tv = v->priv;
	struct recon *rc = tui_recon(v);
	struct cursor *c = tui_cursor(v);
	int sel = tv->sel < 0 ? cursor_thread(c) : tv->sel;

	switch (key) {
	case SCREEN_KEY_UP:
		tv->sel = sel > 0 ? sel - 1 : 0;
		return 1;
	case SCREEN_KEY_DOWN:
		tv->sel = sel + 1 < rc->nthreads ? sel + 1 : sel;
		return 1;
	case SCREEN_KEY_ENTER: {
		char *cause = NULL;

		if (cursor_switch_thread(c, sel + 1, &cause))
			screen_error("%s", cause);
		free(cause);
		tv->sel = -1;
		return 1;
	}
	}
	return 0;
}

static void threads_moved(struct view *v)
{
	((struct threads_view *)v->priv)->sel = -1;
}

const struct view_ops view_threads_ops = {
	.name = "threads",
	.title = "threads at the cursor's time",
	.help = "Up/Down select, Enter switch the cursor to that thread",
	.open = threads_open,
	.free = threads_free,
	.draw = threads_draw,
	.key = threads_key,
	.moved = threads_moved,
};
