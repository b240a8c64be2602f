/*
 * tui/tui.c - the TUI core: `propel tui [DB]` (tui/cmd-tui.c) and the live
 * console `propel` / `propel top` (tui/cmd-top.c) both run here.
 *
 * Owns the session, its reconstruction (engine/reconstruct.h) and the
 * cursor (engine/cursor.h); lays out the panes (one struct view each, from
 * the ops tables of tui/view-*.c, all listed in view_table below), routes
 * keys, hands `:` lines to the prompt (tui/prompt.c: the one command
 * table; gdb's frame commands in tui/prompt-frame.c), and draws the status
 * line
 *   pid:tid  function  file:line  event N/M  [fault]   cmd  +2.137 ms  41%
 * where function is the frame the cursor is in (cursor_frame: after `F`,
 * reverse-finish, the caller, at the call line, as gdb names it), and at
 * the right, where it fits, the process's command, the time since the
 * session's first event and the position in the session's time.  The trace pane's title names the
 * cursor's process, thread and host; a move into another process says
 * gdb's "[Switching to process P (cmd) thread T on HOST]".  The event
 * text is tui/tui-text.c's, the search tui/tui-search.c's (`/`, `\`, `>`,
 * `<`), the source lookup tui/tui-where.c's.  F1 is help, F10 quits; the
 * wheel scrolls the pane under the pointer, a click focuses a pane and
 * hands the row to its view (view_ops.click); j/k are Down/Up everywhere.
 * Every exit path goes through screen_fini(), which restores the terminal.
 *
 * Layout: below 160 columns the panes stack (source above trace above
 * threads), the trace taking at least half the rows (12 of 24) and the
 * threads at most a fifth; from 160 columns the trace takes the left
 * half.  The aux slot (source by default) can show any other view (`:view
 * vitals`).  A session that crashed opens at the faulting event with its
 * stack expanded (a failed run of processes that talked: its flows in the
 * aux slot, focused, and the fault's source below the trace); a hang
 * snapshot opens with the threads pane focused and large, one line per
 * thread.
 *
 * Live mode (TUI_LIVE, tui_live_main): no session; the live views (the
 * process view) take the whole screen, each view's tick() runs every
 * TUI_TICK_MS, the status line is the view's own, `/` goes to the view's
 * search(), and `a`/`A` attach through tui_attach(): a capture run
 * (tui/live.h) polled from the loop every TUI_LIVE_POLL_MS, its pane
 * (tui/view-live.c) in place of the process view; `x` stops it and the
 * core reopens in session mode on what it stored (tui_session_open with
 * the best flow selected); `q`, SIGHUP and SIGTERM stop it keeping the
 * session.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine/callvals.h"
#include "engine/chunk.h"
#include "engine/cursor.h"
#include "engine/node-vitals.h"
#include "engine/reconstruct.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/clock.h"
#include "share/log.h"
#include "tui/cmd-vitals.h"
#include "tui/cmd.h"
#include "tui/live.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/tui.h"
#include "tui/view.h"

/* SIGHUP, SIGTERM (the live console's handler; a trace view opened
 * after `x` inherits it): stop, keep the session */
static volatile sig_atomic_t tui_hangup; /* SIGHUP, SIGTERM: stop, keep */

#define TUI_MIN_COLS 40
#define TUI_MIN_ROWS 10
#define TUI_LIVE_POLL_MS 50 /* attached: the run served this often */

/*
 * Every view, once (tmux's cmd_table[] for panes): which mode opens it.
 * The order is the order of `Tab` and of the help's lines.
 */
static const struct tui_view_entry {
	const struct view_ops *ops;
	unsigned modes; /* TUI_SESSION | TUI_LIVE */
} view_table[] = {
	{ &view_trace_ops, TUI_SESSION },
	{ &view_source_ops, TUI_SESSION },
	{ &view_threads_ops, TUI_SESSION },
	{ &view_vitals_ops, TUI_SESSION },
	{ &view_flows_ops, TUI_SESSION },
	{ &view_rootcause_ops, TUI_SESSION },
	{ &view_variance_ops, TUI_SESSION },
	{ &view_procs_ops, TUI_LIVE },
	{ &view_live_ops, TUI_LIVE },
};

static double cpu_s(void);

static struct tui *tui_of(struct view *v)
{
	return v->tui;
}

struct session *view_session(struct view *v)
{
	return tui_of(v)->s;
}

struct recon *tui_recon(struct view *v)
{
	return tui_of(v)->r;
}

struct cursor *tui_cursor(struct view *v)
{
	return tui_of(v)->c;
}

int tui_interleaved(struct view *v)
{
	return tui_of(v)->interleave;
}

int64_t view_cursor_event(struct view *v)
{
	return cursor_event_id(tui_of(v)->c);
}

int64_t view_cursor_ts(struct view *v)
{
	const struct recon_ev *e = cursor_event(tui_of(v)->c);

	return e ? e->ts : 0;
}

void view_cursor_thread(struct view *v, int *pid, int *tid)
{
	struct tui *t = tui_of(v);
	int th = cursor_thread(t->c);

	*pid = *tid = 0;
	if (th < t->r->nthreads) {
		*pid = t->r->threads[th].pid;
		*tid = t->r->threads[th].tid;
	}
}

void view_time_span(struct view *v, int64_t *first_ns, int64_t *last_ns)
{
	*first_ns = tui_of(v)->r->first_ts;
	*last_ns = tui_of(v)->r->last_ts;
}

void tui_moved(struct tui *t)
{
	int i;

	for (i = 0; i < t->nviews; i++)
		if (t->views[i].ops->moved)
			t->views[i].ops->moved(&t->views[i]);
}

int view_goto_ts(struct view *v, int64_t ts_ns, char **cause)
{
	int err = cursor_goto_ts(tui_of(v)->c, ts_ns, cause);

	if (!err)
		tui_moved(tui_of(v));
	return err;
}

int view_goto_event(struct view *v, int64_t event_id, char **cause)
{
	int err = cursor_goto_event(tui_of(v)->c, event_id, cause);

	if (!err)
		tui_moved(tui_of(v));
	return err;
}

int tui_find_view(struct tui *t, const char *name)
{
	int i;

	for (i = 0; i < t->nviews; i++)
		if (strcmp(t->views[i].ops->name, name) == 0)
			return i;
	return -1;
}

int view_focus(struct view *v, const char *name)
{
	struct tui *t = tui_of(v);
	int i = tui_find_view(t, name), s;

	if (i < 0)
		return -ENOENT;
	for (s = 0; s < NSLOTS; s++)
		if (t->slot[s] == i) {
			t->focus = s;
			return 0;
		}
	t->slot[SLOT_AUX] = i;
	t->focus = SLOT_AUX;
	return 0;
}

/* ---- frames and folding ---- */

int64_t tui_frame(struct view *v, int th, int64_t idx)
{
	struct tui *t = tui_of(v);

	if (th == cursor_thread(t->c) && idx == cursor_index(t->c))
		return cursor_frame(t->c);
	return recon_frame(t->r, th, idx);
}

int tui_folded(struct view *v, int th, int64_t idx)
{
	struct tui *t = tui_of(v);
	int k;

	for (k = t->nfolds; k-- > 0;)
		if (t->folds[k].t == th && t->folds[k].from <= idx &&
		    idx <= t->folds[k].to)
			return t->folds[k].on;
	return 0;
}

void tui_fold(struct view *v, int th, int64_t from, int64_t to, int on)
{
	struct tui *t = tui_of(v);

	if (from == to && tui_folded(v, th, from) == on)
		return;
	if (t->nfolds == t->capfolds) {
		int nc = t->capfolds ? 2 * t->capfolds : 64;
		struct tui_fold_op *n = realloc(t->folds, nc * sizeof(*n));

		if (!n)
			return;
		t->folds = n;
		t->capfolds = nc;
	}
	t->folds[t->nfolds++] = (struct tui_fold_op){ th, on, from, to };
}

/* ---- commands: tui/prompt.c ---- */

/* gdb's "[Switching to ...]" when a move lands in another process */
void tui_moved_from(struct tui *t, int pid0)
{
	const struct recon_thread *th = &t->r->threads[cursor_thread(t->c)];
	const char *host = NULL, *cmd;

	if (th->pid == pid0)
		return;
	cmd = tui_proc_command(t, th->pid, &host);
	screen_message("[Switching to process %d (%s) thread %d%s%s]", th->pid,
		       cmd ? cmd : th->name ? th->name : "?", th->tid,
		       host ? " on " : "", host ? host : "");
}

void tui_do_move(struct tui *t, int m)
{
	char *cause = NULL;
	int pid0 = t->r->threads[cursor_thread(t->c)].pid;

	if (cursor_move(t->c, (enum cursor_move)m, &cause))
		screen_error("%s: %s", cursor_move_name((enum cursor_move)m),
			     cause ? cause : "cannot move");
	else {
		tui_moved(t);
		tui_moved_from(t, pid0);
	}
	free(cause);
}

/* ---- drawing ---- */

static const char tui_help_text[] =
	"propel TUI - gdb's single keys; uppercase steps back\n"
	" s/S step/back (a send: into its recv)  n/N next/back (over calls)\n"
	" f/F finish/back (out of the call)      c/C continue/back (signal)\n"
	" Up/Down j/k line  PgUp/PgDn page  Home/End  (every pane; mouse too)\n"
	" Enter/Space fold the call   +/- unfold/fold all inside   a threads\n"
	" / TEXT search  \\ TEXT search back  > next hit  < previous hit\n"
	" Tab next pane  : gdb's commands (Tab completes names):\n"
	"   step [N] next finish continue reverse-step ... bt up down\n"
	"   frame N break FUNC info breakpoints delete [N] list print\n"
	"   goto +TIME|ID|@NS thread N directory DIR view NAME\n"
	" ?/F1 this help (any key closes)          q/F10 quit\n";

static const char tui_live_help_text[] =
	"propel - the live console: this node's processes, busiest first\n"
	"  Up/Down    select a process   PgUp/PgDn  page   Home/End\n"
	"  / TEXT     show only processes whose line holds TEXT (/ alone:\n"
	"             all again)\n"
	"  a / A      attach to the selected process (A: with --follow):\n"
	"             its flows as they complete, by suspect score\n"
	"  x          (attached) stop: detach, store the session, open it\n"
	"  :          command line (:help, :quit)\n"
	"  ?          this help (any key closes)        q  quit (attached:\n"
	"             detach, the session kept)\n"
	"Dimmed: processes propel may not trace, and why.\n";

static void draw_help(struct tui *t, int cols, int rows)
{
	struct screen_rect r, in;
	const char *p = t->mode == TUI_LIVE ? tui_live_help_text : tui_help_text;
	int y, i;

	r.w = cols < 76 ? cols : 76;
	r.h = rows - 2 < 20 ? rows - 2 : 20;
	r.x = (cols - r.w) / 2;
	r.y = (rows - 2 - r.h) / 2;
	screen_clear(&r);
	screen_box(&r, "help", SC_CYAN);
	/* inside the border: a long line is cut, never drawn over it */
	in = (struct screen_rect){ r.x + 2, r.y + 1, r.w - 3, r.h - 2 };
	y = 0;
	while (*p && y < in.h) {
		const char *nl = strchr(p, '\n');
		char line[128];
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		snprintf(line, sizeof(line), "%.*s", len, p);
		screen_put(&in, y++, 0, SA_NORMAL, line);
		p += len + (nl ? 1 : 0);
	}
	for (i = 0; i < t->nviews && y < in.h; i++)
		if (t->views[i].ops->help)
			screen_printf(&in, y++, 0, SA_DIM, "[%s] %s",
				      t->views[i].ops->name, t->views[i].ops->help);
}

/* a box over the panes (`bt`), until the next key */
static void draw_popup(struct tui *t, int cols, int rows)
{
	struct screen_rect r, in;
	const char *p = t->popup;
	int n = 1, w = screen_strwidth(t->popup_title) + 6, y = 0;

	for (const char *q = p; *q; q++)
		if (*q == '\n')
			n++;
	for (const char *q = p; *q;) {
		const char *nl = strchr(q, '\n');
		int len = nl ? (int)(nl - q) : (int)strlen(q);

		if (len + 4 > w)
			w = len + 4;
		q += len + (nl ? 1 : 0);
	}
	r.w = w < cols ? w : cols;
	r.h = n + 2 < rows - 2 ? n + 2 : rows - 2;
	r.x = (cols - r.w) / 2;
	r.y = (rows - 2 - r.h) / 2;
	screen_clear(&r);
	screen_box(&r, t->popup_title, SC_CYAN);
	in = (struct screen_rect){ r.x + 2, r.y + 1, r.w - 3, r.h - 2 };
	while (*p && y < in.h) {
		const char *nl = strchr(p, '\n');
		char line[256];
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		snprintf(line, sizeof(line), "%.*s", len, p);
		screen_put(&in, y, 0, y == 0 ? SA_BOLD : SA_NORMAL, line);
		y++;
		p += len + (nl ? 1 : 0);
	}
}

static void draw_pane(struct tui *t, int slot, struct screen_rect r)
{
	struct view *v = &t->views[t->slot[slot]];
	struct screen_rect head = { r.x, r.y, r.w, 1 }, body;
	int focused = slot == t->focus;
	char title[128];

	if (t->r && !strcmp(v->ops->name, "trace") && !t->interleave) {
		/* where am I: the process, its thread and host */
		const struct recon_thread *th = &t->r->threads[cursor_thread(t->c)];
		const char *host = NULL, *cmd = tui_proc_command(t, th->pid, &host);

		snprintf(title, sizeof(title), " %s  %s %d  thread %d%s%s%s%s",
			 v->ops->title, cmd ? cmd : th->name ? th->name : "?",
			 th->pid, th->tid,
			 th->name && cmd && strncmp(th->name, cmd, 15) ? " " : "",
			 th->name && cmd && strncmp(th->name, cmd, 15) ? th->name
								      : "",
			 host ? "  on " : "", host ? host : "");
	} else {
		snprintf(title, sizeof(title), " %s%s", v->ops->title,
			 slot == SLOT_TRACE && t->interleave
				 ? " (all threads by time)"
				 : "");
	}
	t->pane[slot] = r;
	screen_clear_row(&head, 0, 0, focused ? SA_REVERSE : SC_CYAN | SA_UNDERLINE);
	screen_put(&head, 0, 0, (focused ? SA_REVERSE : SC_CYAN) | SA_BOLD, title);
	body = (struct screen_rect){ r.x, r.y + 1, r.w, r.h - 1 };
	if (body.h > 0) {
		double c0 = getenv("PROPEL_TUI_BENCH_LOG") ? cpu_s() : 0;

		v->ops->draw(v, &body, focused);
		if (c0)
			fprintf(stderr, "  draw %s %.2f ms\n", v->ops->name,
				(cpu_s() - c0) * 1e3);
	}
}

static void tui_status(struct tui *t, char *buf, int size)
{
	int th = cursor_thread(t->c);
	const struct recon_thread *thr = &t->r->threads[th];
	int64_t i = cursor_index(t->c), f = cursor_frame(t->c);
	struct recon_ev e = recon_get(t->r, th, i);
	char *file = NULL, *path = NULL;
	const char *base;
	int line = 0;
	char where[256] = "??", at[48];
	int pct = t->r->last_ts > t->r->first_ts
			  ? (int)((e.ts - t->r->first_ts) * 100 /
				  (t->r->last_ts - t->r->first_ts))
			  : 100;

	if (!tui_locate(&t->views[0], th, i, &file, &line, &path)) {
		base = strrchr(file, '/');
		snprintf(where, sizeof(where), "%s:%d", base ? base + 1 : file,
			 line);
	}
	snprintf(buf, size, " %d:%d  %s  %s  event %lld/%lld%s%s", thr->pid,
		 thr->tid,
		 f >= 0 ? recon_func_name(t->r, recon_get(t->r, th, f).func)
			: "-",
		 where, (long long)(i + 1 - thr->nsynth),
		 (long long)(thr->n - thr->nsynth),
		 e.kind == SK_SIGNAL ? "  [fault]"
		 : e.kind == SK_LOST ? "  [gap]"
				     : "",
		 cursor_break_count(t->c) ? "  [break]" : "");
	/* at the right, where it fits: the time since the session's start
	 * and the position in the session's time ("+2.137 ms  41%") */
	{
		int cols, rows, lw = screen_strwidth(buf), rw;
		size_t len = strlen(buf);
		char right[128];

		const char *cmd = tui_proc_command(t, thr->pid, NULL);

		screen_size(&cols, &rows);
		tui_time(&t->views[0], e.ts, at, sizeof(at));
		/* the process's command first, when there is room */
		snprintf(right, sizeof(right), "%.40s  %s  %3d%% ",
			 cmd ? cmd : "", at, pct);
		rw = screen_strwidth(right);
		if (!cmd || lw + 2 + rw > cols) {
			snprintf(right, sizeof(right), "%s  %3d%% ", at, pct);
			rw = screen_strwidth(right);
		}
		if (lw + 2 + rw > cols) {
			snprintf(right, sizeof(right), "%3d%% ", pct);
			rw = screen_strwidth(right);
		}
		if (lw + 2 + rw <= cols && len + (cols - lw) < (size_t)size)
			snprintf(buf + len, size - len, "%*s%s", cols - lw - rw,
				 "", right);
	}
	free(file);
	free(path);
}

static void tui_draw(struct tui *t)
{
	int cols, rows, ch, tr, trh, thh;
	char status[512];

	screen_size(&cols, &rows);
	screen_begin_frame();
	if (cols < TUI_MIN_COLS || rows < TUI_MIN_ROWS) {
		struct screen_rect r = { 0, 0, cols, rows };

		screen_printf(&r, 0, 0, SA_BOLD, "terminal too small: %dx%d", cols,
			      rows);
		screen_printf(&r, 1, 0, SA_NORMAL, "propel needs at least %dx%d",
			      TUI_MIN_COLS, TUI_MIN_ROWS);
		screen_end_frame();
		return;
	}
	ch = rows - 2; /* content rows above status and message */
	if (t->mode == TUI_LIVE) {
		struct view *v = &t->views[t->slot[0]];

		draw_pane(t, 0, (struct screen_rect){ 0, 0, cols, ch });
		if (t->help)
			draw_help(t, cols, rows);
		status[0] = 0;
		if (v->ops->status)
			v->ops->status(v, status, sizeof(status));
		screen_status(status);
		screen_end_frame();
		return;
	}
	thh = t->r->nthreads + 1;
	if (strcmp(t->views[t->slot[SLOT_THREADS]].ops->name, "threads"))
		thh = ch / 4 > 3 ? ch / 4 : 3; /* another view below */
	if (t->r->hang)
		thh = thh > ch / 2 ? thh : ch / 2;
	if (thh > ch / 3 && !t->r->hang)
		thh = ch / 3;
	if (thh < 2)
		thh = 2;
	if (cols >= 160) {
		int lw = cols / 2;

		draw_pane(t, SLOT_TRACE, (struct screen_rect){ 0, 0, lw, ch });
		tr = ch - thh;
		draw_pane(t, SLOT_AUX,
			  (struct screen_rect){ lw + 1, 0, cols - lw - 1, tr });
		draw_pane(t, SLOT_THREADS,
			  (struct screen_rect){ lw + 1, tr, cols - lw - 1, thh });
		{
			struct screen_rect sep = { lw, 0, 1, ch };

			screen_vline(&sep, 0, 0, ch, SC_CYAN);
		}
	} else {
		int srch;

		/* the trace gets at least half the rows (12 of 24), the
		 * threads at most a fifth; the source the rest (a hang: the
		 * threads half, as it opens on them) */
		if (!t->r->hang && thh > ch / 5 &&
		    !strcmp(t->views[t->slot[SLOT_THREADS]].ops->name, "threads"))
			thh = ch / 5 < 2 ? 2 : ch / 5;
		trh = t->r->hang ? (ch - thh) * 3 / 5 : ch / 2 + 1;
		srch = ch - thh - trh;
		if (srch < 3) {
			trh = ch - thh;
			srch = 0;
		}
		if (srch)
			draw_pane(t, SLOT_AUX, (struct screen_rect){ 0, 0, cols, srch });
		draw_pane(t, SLOT_TRACE, (struct screen_rect){ 0, srch, cols, trh });
		draw_pane(t, SLOT_THREADS,
			  (struct screen_rect){ 0, srch + trh, cols, thh });
	}
	if (t->popup)
		draw_popup(t, cols, rows);
	if (t->help)
		draw_help(t, cols, rows);
	tui_status(t, status, sizeof(status));
	screen_status(status);
	/* a damaged chunk met while drawing: said on the message line */
	{
		uint64_t n;
		const char *msg = chunk_store_message(t->r->store, &n);

		if (n != t->damage_seen) {
			t->damage_seen = n;
			screen_error("%s", msg + (strncmp(msg, "propel: ", 8)
							  ? 0
							  : 8));
		}
	}
	screen_end_frame();
}

/* ---- main loop ---- */

/* the view of the pane under the pointer (its slot in *slot), or NULL */
static struct view *tui_pane_at(struct tui *t, int *slot)
{
	int x, y, s;

	screen_mouse(&x, &y);
	for (s = 0; s < (t->mode == TUI_LIVE ? 1 : NSLOTS); s++) {
		const struct screen_rect *r = &t->pane[s];

		if (r->w <= 0 || x < r->x || x >= r->x + r->w || y < r->y ||
		    y >= r->y + r->h)
			continue;
		if (slot)
			*slot = s;
		return &t->views[t->slot[s]];
	}
	return NULL;
}

/* a click: the pane under it takes the focus; its view gets the row */
static void tui_click(struct tui *t)
{
	int x, y, slot;
	struct view *v = tui_pane_at(t, &slot);

	if (!v)
		return;
	screen_mouse(&x, &y);
	t->focus = slot;
	if (y > t->pane[slot].y && v->ops->click)
		v->ops->click(v, y - t->pane[slot].y - 1);
}

static int tui_key(struct tui *t, int key)
{
	struct view *v = &t->views[t->slot[t->focus]];
	char *line = NULL;

	if (screen_prompt_active()) {
		if (screen_prompt_key(key, &line)) {
			/* search[0]: 1 = the `/` prompt, 2 = `\` */
			int dir = t->search[0] == '\x02' ? -1 : 1;

			if (line && t->search[0] && v->ops->search) {
				t->search[0] = 0;
				v->ops->search(v, line);
			} else if (line && t->search[0] && !t->r) {
				t->search[0] = 0; /* live: a pane without search */
				screen_error("/: the %s pane has no search",
					     v->ops->name);
			} else if (line && t->search[0]) {
				t->search[0] = 0;
				tui_search_start(t, line, dir);
			} else if (line) {
				prompt_run(t, line);
			} else if (t->search[0]) {
				t->search[0] = 0;
			}
			free(line);
		}
		return 0;
	}
	if (t->popup) { /* a box (bt) goes with any key, which still acts
			 * (Esc only closes it) */
		free(t->popup);
		t->popup = NULL;
		if (key == SCREEN_KEY_ESC)
			return 0;
	}
	if (t->help) {
		t->help = 0;
		if (key != 'q' && key != SCREEN_KEY_F0 + 10)
			return 0;
	}
	if (key == SCREEN_KEY_RESIZE || key == SCREEN_KEY_NONE)
		return 0;
	/* the same movement keys in every pane: vi's j/k are Down/Up; the
	 * wheel moves three lines of the focused pane; a click focuses the
	 * pane under it and, in a list, picks the line */
	if (key == 'j' || key == 'k')
		key = key == 'j' ? SCREEN_KEY_DOWN : SCREEN_KEY_UP;
	if (key == SCREEN_KEY_WHEEL_UP || key == SCREEN_KEY_WHEEL_DOWN) {
		/* three lines of the pane under the pointer */
		struct view *w = tui_pane_at(t, NULL);
		int k;

		for (k = 0; k < 3 && w && w->ops->key; k++)
			w->ops->key(w, key == SCREEN_KEY_WHEEL_UP ? SCREEN_KEY_UP
								   : SCREEN_KEY_DOWN);
		return 0;
	}
	if (key == SCREEN_KEY_CLICK) {
		tui_click(t);
		return 0;
	}
	if (v->ops->key && v->ops->key(v, key)) {
		return 0;
	}
	if (t->c)
		switch (key) {
		case 's': tui_do_move(t, CURSOR_STEP); return 0;
		case 'S': tui_do_move(t, CURSOR_RSTEP); return 0;
		case 'n': tui_do_move(t, CURSOR_NEXT); return 0;
		case 'N': tui_do_move(t, CURSOR_RNEXT); return 0;
		case 'f': tui_do_move(t, CURSOR_FINISH); return 0;
		case 'F': tui_do_move(t, CURSOR_RFINISH); return 0;
		case 'c': tui_do_move(t, CURSOR_CONTINUE); return 0;
		case 'C': tui_do_move(t, CURSOR_RCONTINUE); return 0;
		case 'a': cmd_interleave_exec(t, 0, NULL, NULL); return 0;
		case SCREEN_KEY_TAB: t->focus = (t->focus + 1) % NSLOTS; return 0;
		case SCREEN_KEY_BTAB:
			t->focus = (t->focus + NSLOTS - 1) % NSLOTS;
			return 0;
		}
	if (t->c)
		switch (key) {
		case '\\':
			t->search[0] = '\x02';
			t->search[1] = 0;
			screen_prompt_begin("\\");
			return 0;
		case '>': tui_search_next(t, 1); return 0;
		case '<': tui_search_next(t, -1); return 0;
		}
	switch (key) {
	case ':': screen_prompt_begin(":"); break;
	case '/':
		t->search[0] = '\x01';
		t->search[1] = 0;
		screen_prompt_begin("/");
		break;
	case '?':
	case SCREEN_KEY_F0 + 1: t->help = 1; break;
	case 'q':
	case SCREEN_KEY_F0 + 10: t->quit = 1; break;
	case 'L' & 0x1f: break;
	default:
		if (key < 128 && key > 32)
			screen_message("key '%c' does nothing here (? for help)", key);
	}
	return 0;
}

static void tui_add_view(struct tui *t, const struct view_ops *ops)
{
	struct view *v;
	char *cause = NULL;

	if (t->nviews == TUI_MAXVIEWS)
		return;
	v = &t->views[t->nviews];
	v->ops = ops;
	v->tui = t;
	v->priv = NULL;
	if (ops->open && ops->open(v, &cause)) {
		screen_error("%s view: %s", ops->name, cause ? cause : "failed");
		free(cause);
		return;
	}
	t->nviews++;
}

static double now_s(void)
{
	return propel_mono_s();
}

/* CPU time of this thread: what a step costs without the machine's other
 * work (the bench runs beside builds on shared cores) */
static double cpu_s(void)
{
	return propel_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* processes talked: a matched message between two of them (the threads
 * of one program talking among themselves are still one program's run) */
int view_list_key(int key, long *sel, long n)
{
	switch (key) {
	case SCREEN_KEY_UP:
		*sel = *sel > 0 ? *sel - 1 : 0;
		return 1;
	case SCREEN_KEY_DOWN:
		*sel = *sel + 1 < n ? *sel + 1 : *sel;
		return 1;
	case SCREEN_KEY_PGUP:
		*sel = *sel > 10 ? *sel - 10 : 0;
		return 1;
	case SCREEN_KEY_PGDN:
		*sel = *sel + 10 < n ? *sel + 10 : (n ? n - 1 : 0);
		return 1;
	case SCREEN_KEY_HOME:
		*sel = 0;
		return 1;
	case SCREEN_KEY_END:
		*sel = n ? n - 1 : 0;
		return 1;
	}
	return 0;
}

/* 1 while a view works in the background: the loop redraws until done */
static int tui_busy(struct tui *t)
{
	int i;

	for (i = 0; i < t->nviews; i++)
		if (t->views[i].ops->busy && t->views[i].ops->busy(&t->views[i]))
			return 1;
	return 0;
}

static int tui_talked(const struct recon *r)
{
	int64_t i;

	for (i = 0; i < r->nmsgs; i++)
		if (r->threads[r->msgs[i].st].pid !=
		    r->threads[r->msgs[i].rt].pid)
			return 1;
	return 0;
}

int tui_session_main(const char *path)
{
	return tui_session_open(path, 0);
}

/* The live console's stop: the flows pane focused on the most suspicious
 * flow, the cursor at its end (tui/view-flows.c `:flow 1`). */
static void tui_best_flow(struct tui *t, const char *path)
{
	int i = tui_find_view(t, "flows");
	char *argv[] = { "flow", "1", NULL }, *cause = NULL;
	struct view *v;

	if (i < 0 || view_focus(&t->views[i], "flows"))
		return;
	v = &t->views[i];
	if (v->ops->command(v, 2, argv, &cause) < 0) {
		screen_error("flows: %s", cause ? cause : "none");
		t->focus = SLOT_TRACE;
	} else {
		screen_message("session %s: the most suspicious flow, the "
			       "cursor at its end (S/N/F step back, Tab)",
			       path);
	}
	free(cause);
}

int tui_session_open(const char *path, int best_flow)
{
	const char *env;
	struct tui t;
	char *cause = NULL;
	int err, i, vitals_only = 0, failed = 0;
	double t0 = now_s(), t_first = 0, t_open = 0, t_load = 0, t_end = 0;
	size_t k;

	memset(&t, 0, sizeof(t));
	t.mode = TUI_SESSION;
	env = getenv("PROPEL_SOURCE_PATH");
	snprintf(t.srcpath, sizeof(t.srcpath), "%s%s.", env ? env : "",
		 env ? ":" : "");
	t.bench = getenv("PROPEL_TUI_BENCH") ? atoi(getenv("PROPEL_TUI_BENCH")) : 0;
	if (getenv("PROPEL_TUI_BENCH") && !t.bench)
		t.bench = 1;
	/* refuse a non-terminal before the (possibly long) load */
	if (session_check_path(path, &cause)) {
		propel_report("tui", 0, cause);
		free(cause);
		return 1;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		propel_report("tui", 0,
			      "not a terminal (the TUI needs a tty on stdin and "
			      "stdout; use `propel replay` for text)");
		return 1;
	}
	err = session_open(path, SESSION_READ, &t.s, &cause);
	t_open = now_s();
	if (!err)
		err = recon_load(t.s, &t.r, &cause);
	if (!err && callvals_open(t.s, &t.cv))
		err = propel_cause(&cause, -ENOMEM, "out of memory");
	t_load = now_s();
	if (!err && !(t.c = cursor_new(t.r)))
		err = propel_cause(&cause, -ENOMEM, "out of memory");
	if (!err && !t.r->nevents)
		err = propel_cause(&cause, -ENOENT,
				   session_truncated(t.s)
					   ? "%s: truncated, no events left"
					   : "%s: the session has no events",
				   path);
	if (err && t.s && view_vitals_present(t.s)) {
		free(cause);
		cause = NULL;
		err = 0;
		vitals_only = 1;
	}
	if (err || vitals_only)
		goto out;
	/* the commands and hosts, for names (an old session has none) */
	{
		char *why = NULL;

		if (session_processes(t.s, &t.procs, &t.nprocs, &why))
			t.nprocs = 0;
		free(why);
	}
	err = screen_init(&cause);
	if (err)
		goto out;
	/* from here on the terminal is the screen's */
	prompt_attach(&t);
	chunk_store_quiet(t.r->store, 1);
	for (k = 0; k < sizeof(view_table) / sizeof(view_table[0]); k++)
		if (view_table[k].modes & TUI_SESSION)
			tui_add_view(&t, view_table[k].ops);
	t.slot[SLOT_TRACE] = tui_find_view(&t, "trace");
	t.slot[SLOT_AUX] = tui_find_view(&t, "source");
	t.slot[SLOT_THREADS] = tui_find_view(&t, "threads");
	if (t.slot[SLOT_TRACE] < 0 || t.slot[SLOT_AUX] < 0 ||
	    t.slot[SLOT_THREADS] < 0) {
		screen_fini();
		err = propel_cause(&cause, -EIO, "cannot open the panes");
		goto out;
	}
	t.focus = t.r->hang ? SLOT_THREADS : SLOT_TRACE;
	/* a failed run of processes that talked: the suspects first (the
	 * trace cursor still at the fault) */
	failed = t.r->crashed && tui_talked(t.r) && !t.r->hang &&
		 view_focus(&t.views[t.slot[SLOT_TRACE]], "flows") == 0;
	/* ... and the source of the fault stays in sight, below the trace
	 * (the threads are a `:view threads` away) */
	if (failed && tui_find_view(&t, "source") >= 0)
		t.slot[SLOT_THREADS] = tui_find_view(&t, "source");
	tui_moved(&t);
	if (failed)
		/* (fits 80 columns) */
		screen_message("the run failed: flows ranked by suspect score; "
			       "Enter opens, Tab: trace");
	else if (t.r->crashed && cursor_event(t.c)->kind == SK_SIGNAL)
		screen_message("the program crashed here: %s (? for help)",
			       "stack expanded");
	else if (t.r->hang)
		screen_message("hang snapshot: one line per thread (Tab to the "
			       "trace)");
	else if (best_flow)
		tui_best_flow(&t, path);
	else
		screen_message("? for help, q to quit");
	if (t.bench > 1) {
		/* PROPEL_TUI_BENCH=N: N random moves, each with a full redraw */
		double worst = 0, sum = 0, worst_cpu = 0, c0;
		double *steps = calloc(t.bench, sizeof(*steps));
		int k, m, worst_m = 0;
		int64_t d0, worst_d = 0, end_from, end_to, end_n;

		tui_draw(&t);
		t_first = now_s();
		/* End: the last event of the cursor's thread, from its first,
		 * pressed in the trace pane (a failed run opens focused on its
		 * flows, whose list takes Home and End) */
		view_focus(&t.views[t.slot[SLOT_TRACE]], "trace");
		tui_key(&t, SCREEN_KEY_HOME);
		tui_draw(&t);
		end_from = cursor_index(t.c);
		t_end = now_s();
		tui_key(&t, SCREEN_KEY_END);
		tui_draw(&t);
		t_end = now_s() - t_end;
		end_to = cursor_index(t.c);
		end_n = t.r->threads[cursor_thread(t.c)].n;
		srand(12345);
		for (k = 0; k < t.bench; k++) {
			int th = rand() % t.r->nthreads;
			double s0;

			if (t.r->threads[th].n)
				cursor_goto(t.c, th,
					    (int64_t)(((double)rand() / RAND_MAX) *
						      (t.r->threads[th].n - 1)),
					    NULL);
			tui_draw(&t);
			s0 = now_s();
			c0 = cpu_s();
			d0 = t.r->decodes;
			m = rand() % CURSOR_NMOVES;
			tui_do_move(&t, (enum cursor_move)m);
			tui_draw(&t);
			s0 = now_s() - s0;
			c0 = cpu_s() - c0;
			if (c0 > worst_cpu)
				worst_cpu = c0;
			if (getenv("PROPEL_TUI_BENCH_LOG"))
				fprintf(stderr, "step %d %s cpu_ms=%.2f wall_ms=%.2f decoded=%lld thread=%d\n",
					k, cursor_move_name((enum cursor_move)m), c0 * 1e3, s0 * 1e3,
					(long long)(t.r->decodes - d0), cursor_thread(t.c));
			if (steps)
				steps[k] = s0;
			sum += s0;
			if (s0 > worst) {
				worst = s0;
				worst_m = m;
				worst_d = t.r->decodes - d0;
			}
		}
		screen_fini();
		if (steps)
			qsort(steps, t.bench, sizeof(*steps), dbl_cmp);
		fprintf(stderr, "propel-tui-bench: steps=%d worst_step_ms=%.2f "
				"p99_step_ms=%.2f mean_step_ms=%.3f "
				"worst_step_cpu_ms=%.2f end_ms=%.2f "
				"end_events=%lld..%lld/%lld "
				"chunks_decoded=%lld (worst: %s, %lld decoded)\n",
			t.bench, worst * 1e3,
			steps ? steps[t.bench * 99 / 100] * 1e3 : 0,
			sum / t.bench * 1e3, worst_cpu * 1e3, t_end * 1e3,
			(long long)end_from + 1, (long long)end_to + 1,
			(long long)end_n,
			(long long)t.r->decodes,
			cursor_move_name((enum cursor_move)worst_m),
			(long long)worst_d);
		free(steps);
		t.quit = 1;
	}
	while (!t.quit) {
		int key;

		tui_draw(&t);
		if (!t_first)
			t_first = now_s();
		key = screen_getkey(tui_busy(&t) ? TUI_BUSY_MS : -1);
		if (key == SCREEN_KEY_HANGUP || tui_hangup)
			break;
		if (key != SCREEN_KEY_NONE)
			tui_key(&t, key);
	}
	screen_fini();
	if (t.bench) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "propel-tui-bench: first_screen_s=%.3f (open %.3f, "
				"load %.3f, draw %.3f) events=%lld maxrss_kb=%ld\n",
			t_first - t0, t_open - t0, t_load - t_open, t_first - t_load,
			(long long)t.r->nevents, ru.ru_maxrss);
	}
out:
	prompt_attach(NULL);
	for (i = 0; i < t.nviews; i++)
		if (t.views[i].ops->free)
			t.views[i].ops->free(&t.views[i]);
	cursor_free(t.c);
	callvals_free(t.cv);
	recon_free(t.r);
	session_close(t.s);
	free(t.folds);
	free(t.popup);
	tui_search_free(&t);
	session_processes_free(t.procs, t.nprocs);
	if (err) {
		propel_report("tui", err, cause);
		free(cause);
		return 1;
	}
	if (vitals_only)
		return cmd_vitals_tui(2, (char *[]){ "tui", (char *)path, NULL });
	return 0;
}

/* ---- the live console ---- */


static void tui_on_hangup(int sig)
{
	(void)sig;
	tui_hangup = 1;
}

int tui_attach(struct tui *t, int pid, const char *comm, int follow,
	       char **cause)
{
	int pid0, f0, err, i;
	const char *c0;

	if (t->live) {
		live_target(t->live, &pid0, &c0, &f0);
		return propel_cause(cause, -EBUSY,
				    "already attached to %d (%s): x stops it",
				    pid0, c0);
	}
	err = live_start(pid, comm, follow, &t->live, cause);
	if (err)
		return err;
	i = tui_find_view(t, "live");
	if (i >= 0)
		t->slot[0] = i;
	screen_message("attached%s: session %s, messages in %s (x stop, q "
		       "quit)",
		       follow ? " with --follow" : "", live_db(t->live),
		       live_log(t->live));
	return 0;
}

int view_attach(struct view *v, int pid, const char *comm, int follow,
		char **cause)
{
	return tui_attach(tui_of(v), pid, comm, follow, cause);
}

struct tui_live *view_live(struct view *v)
{
	return tui_of(v)->live;
}

struct node_vitals *view_node_vitals(struct view *v)
{
	return tui_of(v)->nodev;
}

/* `x`: stop the run; 1 when its session is stored (then the caller opens
 * it), 0 when the stop failed (said on the message line). */
static int tui_live_stop(struct tui *t)
{
	char *cause = NULL;

	screen_message("stopping: detaching the agents, storing %s ...",
		       live_db(t->live));
	tui_draw(t);
	if (live_stop(t->live, &cause)) {
		screen_error("%s", cause ? cause : "the stop failed");
		free(cause);
		return 0;
	}
	return 1;
}

int tui_live_main(void)
{
	struct tui t;
	struct sigaction sa;
	char *cause = NULL, db[256] = "";
	double next;
	size_t k;
	int err, i, stopped = 0, ret = 0;

	memset(&t, 0, sizeof(t));
	t.mode = TUI_LIVE;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		propel_report("top", 0,
			      "not a terminal (the live console needs a tty on "
			      "stdin and stdout)");
		return 1;
	}
	/* before curses, which takes SIGTERM for itself when it is free:
	 * a hang-up (a dropped ssh) or a kill stops a run keeping its
	 * session, as `q` does */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tui_on_hangup;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = screen_init(&cause);
	if (err) {
		propel_report("top", err, cause);
		free(cause);
		return 1;
	}
	node_vitals_start(&t.nodev); /* loads in its thread */
	prompt_attach(&t);
	for (k = 0; k < sizeof(view_table) / sizeof(view_table[0]); k++)
		if (view_table[k].modes & TUI_LIVE)
			tui_add_view(&t, view_table[k].ops);
	if (!t.nviews) {
		node_vitals_stop(t.nodev);
		screen_fini();
		propel_report("top", -EIO, "cannot open the process view");
		return 1;
	}
	t.slot[0] = 0;
	t.focus = 0;
	screen_message("? for help, / filter, a attach, q quit");
	next = now_s() + TUI_FIRST_TICK_MS / 1e3;
	while (!t.quit && !tui_hangup) {
		double wait;
		int key;

		tui_draw(&t);
		wait = next - now_s();
		if (t.live && wait > TUI_LIVE_POLL_MS / 1e3)
			wait = TUI_LIVE_POLL_MS / 1e3;
		key = screen_getkey(wait > 0 ? (int)(wait * 1e3) + 1 : 0);
		if (key == SCREEN_KEY_HANGUP)
			tui_hangup = 1;
		if (tui_hangup)
			break;
		if (t.live)
			live_poll(t.live);
		if (now_s() >= next) {
			for (i = 0; i < t.nviews; i++)
				if (t.views[i].ops->tick)
					t.views[i].ops->tick(&t.views[i]);
			next = now_s() + TUI_TICK_MS / 1e3;
		}
		if (t.live && key == 'x' && !screen_prompt_active() &&
		    !t.help) {
			if ((stopped = tui_live_stop(&t)))
				break;
			continue;
		}
		if (key != SCREEN_KEY_NONE)
			tui_key(&t, key);
	}
	screen_fini();
	prompt_attach(NULL);
	for (i = 0; i < t.nviews; i++)
		if (t.views[i].ops->free)
			t.views[i].ops->free(&t.views[i]);
	node_vitals_stop(t.nodev);
	if (stopped) {
		/* the session it stored, in today's trace view; the log
		 * keeps fd 2 until that TUI is done too */
		snprintf(db, sizeof(db), "%s", live_db(t.live));
		ret = tui_session_open(db, 1);
	}
	live_free(t.live, !tui_hangup);
	return ret;
}
