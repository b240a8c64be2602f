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
 *
 * A session recorded with --vitals (engine/offcpu-store.h) adds what the
 * kernel did: the pane's first row is a strip for the cursor's thread -- the
 * call at the cursor (the call whose entry or exit it is on, else the one it
 * is in) split into on-CPU and off-CPU time, with the reason of the span
 * that holds most of it ("nap() 60 ms: on-CPU 40 us, off-CPU 60 ms: sleep
 * in clock_nanosleep"; with several reasons, each one's time, the largest
 * first, and the run queue's last whatever its size: a wait for a CPU is
 * the machine's load, not what the code waited on, and on a loaded host it
 * pushed the program's own reasons off an 80-column line) -- and a thread
 * that is off the CPU at the cursor's time says so on its line ("off-CPU 38 ms:
 * blocked in sock write").  Both are worked out when the cursor moves, not per
 * frame.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/offcpu-store.h"
#include "engine/session.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/view.h"

struct threads_view {
	int sel; /* selected line; -1 = follow the cursor */
	int first, first_row, page; /* thread on the first list row, that row */
	struct session_proc *procs;
	size_t nprocs;
	int kernel; /* the session has off-CPU spans (--vitals) */
	/* the strip and the per-thread kernel lines, for the cursor at
	 * (strip_t, strip_idx, strip_ts) */
	int strip_t;
	int64_t strip_idx, strip_ts;
	char strip[200];
	char (*koff)[120]; /* per thread: "" or its span at strip_ts */
};

/* The off-CPU time of [t0, t1] by reason, largest first ("pipe 64 ms,
 * sleep 61 ms") into buf; returns how many reasons. */
static int threads_reasons(const struct offcpu_row *rows, size_t n, int64_t t0,
			   int64_t t1, char *buf, size_t size)
{
	struct {
		const char *reason;
		int64_t ns;
	} by[16];
	int nby = 0, i, j, m;
	size_t k, len = 0;
	char d[24];

	for (k = 0; k < n; k++) {
		int64_t a = rows[k].ts_ns > t0 ? rows[k].ts_ns : t0;
		int64_t b = rows[k].ts_ns + rows[k].dur_ns < t1
				? rows[k].ts_ns + rows[k].dur_ns
				: t1;

		if (b <= a)
			continue;
		for (i = 0; i < nby && strcmp(by[i].reason, rows[k].reason);
		     i++)
			;
		if (i == nby) {
			if (nby == 16)
				continue;
			by[nby].reason = rows[k].reason;
			by[nby++].ns = 0;
		}
		by[i].ns += b - a;
	}
	buf[0] = 0;
	for (i = 0; i < nby; i++) { /* by time; the run queue last */
		for (m = i, j = i + 1; j < nby; j++) {
			int rq_j = !strcmp(by[j].reason, "runqueue");
			int rq_m = !strcmp(by[m].reason, "runqueue");

			if (rq_j != rq_m ? rq_m : by[j].ns > by[m].ns)
				m = j;
		}
		if (m != i) {
			__typeof__(by[0]) tmp = by[i];

			by[i] = by[m];
			by[m] = tmp;
		}
		offcpu_store_dur(by[i].ns, d, sizeof(d));
		len +=
		    snprintf(buf + len, len < size ? size - len : 0, "%s%s %s",
			     i ? ", " : "",
			     !strcmp(by[i].reason, "io")	 ? "I/O"
			     : !strcmp(by[i].reason, "runqueue") ? "run queue"
								 : by[i].reason,
			     d);
		if (len >= size)
			break;
	}
	return nby;
}

/* The strip's text for the call at the cursor (see the note at the top). */
static void threads_strip(struct view *v, struct threads_view *tv, int t,
			  int64_t idx)
{
	struct recon *rc = tui_recon(v);
	const struct recon_thread *th = &rc->threads[t];
	struct offcpu_row *rows = NULL;
	int64_t e = -1, x, t0, t1, off;
	struct recon_ev ev;
	char on_s[24], off_s[24], dur_s[24], why[160];
	size_t n = 0;
	int main;

	tv->strip[0] = 0;
	if (idx < 0 || idx >= th->n)
		return;
	ev = recon_get(rc, t, idx);
	if (ev.kind == SK_ENTRY)
		e = idx;
	else if (ev.kind == SK_EXIT)
		e = recon_match(rc, t, idx);
	else
		e = recon_frame(rc, t, idx);
	x = e >= 0 ? recon_match(rc, t, e) : -1;
	if (e < 0 || x < 0) {
		snprintf(tv->strip, sizeof(tv->strip),
			 "(not in a finished call)");
		return;
	}
	t0 = recon_get(rc, t, e).ts;
	t1 = recon_get(rc, t, x).ts;
	if (offcpu_store_range(view_session(v), th->pid, th->tid, t0, t1, &rows,
			       &n))
		return;
	off = offcpu_store_split(rows, n, t0, t1, &main);
	if (off > t1 - t0)
		off = t1 - t0;
	offcpu_store_dur(t1 - t0, dur_s, sizeof(dur_s));
	offcpu_store_dur(t1 - t0 - off, on_s, sizeof(on_s));
	offcpu_store_dur(off, off_s, sizeof(off_s));
	if (main < 0) {
		snprintf(tv->strip, sizeof(tv->strip),
			 "%s() %s: on-CPU (no off-CPU span >= 1 ms)",
			 recon_func_name(rc, recon_get(rc, t, e).func), dur_s);
	} else if (threads_reasons(rows, n, t0, t1, why, sizeof(why)) > 1) {
		/* a call that left the CPU for several reasons (a caller of
		 * the calls that did): the time of each, largest first */
		snprintf(tv->strip, sizeof(tv->strip),
			 "%s() %s: on-CPU %s, off-CPU %s: %s",
			 recon_func_name(rc, recon_get(rc, t, e).func), dur_s,
			 on_s, off_s, why);
	} else {
		snprintf(tv->strip, sizeof(tv->strip),
			 "%s() %s: on-CPU %s, off-CPU %s: %s",
			 recon_func_name(rc, recon_get(rc, t, e).func), dur_s,
			 on_s, off_s,
			 offcpu_store_why(&rows[main], why, sizeof(why)));
	}
	free(rows);
}

/* Per thread: the span it is in at ts, in words ("" when on a CPU); for
 * the cursor's thread (ct, on its event idx) the longest span between that
 * event and its next one -- what the kernel does to it right after. */
static void threads_koff(struct view *v, struct threads_view *tv, int64_t ts,
			 int ct, int64_t idx)
{
	struct recon *rc = tui_recon(v);
	int t;

	for (t = 0; t < rc->nthreads; t++) {
		struct offcpu_row *rows = NULL;
		int64_t t1 = ts;
		size_t n = 0, k, best = 0;

		tv->koff[t][0] = 0;
		if (t == ct && idx >= 0 && idx + 1 < rc->threads[t].n)
			t1 = recon_get(rc, t, idx + 1).ts;
		if (offcpu_store_range(view_session(v), rc->threads[t].pid,
				       rc->threads[t].tid, ts, t1, &rows, &n) ||
		    !n) {
			free(rows);
			continue;
		}
		for (k = 1; k < n; k++)
			if (rows[k].dur_ns > rows[best].dur_ns)
				best = k;
		offcpu_store_text(&rows[best], tv->koff[t],
				  sizeof(tv->koff[t]));
		free(rows);
	}
}

static void threads_kernel_update(struct view *v, struct threads_view *tv)
{
	struct cursor *c = tui_cursor(v);
	int t = cursor_thread(c);
	int64_t idx = cursor_index(c), ts = cursor_event(c)->ts;

	if (t == tv->strip_t && idx == tv->strip_idx && ts == tv->strip_ts)
		return;
	tv->strip_t = t;
	tv->strip_idx = idx;
	tv->strip_ts = ts;
	threads_strip(v, tv, t, idx);
	threads_koff(v, tv, ts, t, idx);
}

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
	tv->kernel = offcpu_store_present(view_session(v));
	tv->strip_t = -1;
	if (tv->kernel) {
		tv->koff = calloc(tui_recon(v)->nthreads + 1, sizeof(*tv->koff));
		if (!tv->koff)
			tv->kernel = 0;
	}
	return 0;
}

static void threads_free(struct view *v)
{
	struct threads_view *tv = v->priv;

	session_processes_free(tv->procs, tv->nprocs);
	free(tv->koff);
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
	int sel = tv->sel < 0 ? ct : tv->sel, h = r->h;

	tv->page = r->h;

	if (tv->kernel && r->h > 1) {
		/* the kernel strip, then the threads */
		threads_kernel_update(v, tv);
		screen_put(r, 0, 0, SC_YELLOW, tv->strip);
		row = 1;
		h = r->h - 1;
	}
	if (h > 2) { /* what the columns are */
		screen_put(r, row++, 0, SA_BOLD | SA_DIM,
			   "  # PID:TID HOST COMMAND [THREAD]  in FUNCTION  "
			   "EVENT AT THE CURSOR'S TIME");
		h--;
	}
	tv->first_row = row;
	if (sel >= h)
		first = sel - h + 1;
	tv->first = first;
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
		if (tv->kernel && tv->koff[t][0]) {
			/* off the CPU at the cursor's time: why, not the
			 * event before */
			screen_put(r, row, col, attr | SC_YELLOW, tv->koff[t]);
			continue;
		}
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
	int page = tv->page > 1 ? tv->page - 1 : 1;

	switch (key) {
	case SCREEN_KEY_UP:
		tv->sel = sel > 0 ? sel - 1 : 0;
		return 1;
	case SCREEN_KEY_DOWN:
		tv->sel = sel + 1 < rc->nthreads ? sel + 1 : sel;
		return 1;
	case SCREEN_KEY_PGUP:
		tv->sel = sel > page ? sel - page : 0;
		return 1;
	case SCREEN_KEY_PGDN:
		tv->sel = sel + page < rc->nthreads ? sel + page : rc->nthreads - 1;
		return 1;
	case SCREEN_KEY_HOME:
		tv->sel = 0;
		return 1;
	case SCREEN_KEY_END:
		tv->sel = rc->nthreads - 1;
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

/* a click selects the thread of that line (Enter switches to it) */
static void threads_click(struct view *v, int row)
{
	struct threads_view *tv = v->priv;
	int t = tv->first + row - tv->first_row;

	if (row >= tv->first_row && t < tui_recon(v)->nthreads)
		tv->sel = t;
}

static void threads_moved(struct view *v)
{
	((struct threads_view *)v->priv)->sel = -1;
}

const struct view_ops view_threads_ops = {
	.name = "threads",
	.title = "threads at the cursor's time",
	.help = "Enter (or a click, then Enter) switches to that thread",
	.open = threads_open,
	.free = threads_free,
	.draw = threads_draw,
	.key = threads_key,
	.moved = threads_moved,
	.click = threads_click,
};
