/*
 * tui/prompt-frame.c - gdb's frame and data commands at the `:` prompt,
 * on the trace: `bt` (one frame a line, innermost first, each with the
 * line it is at: the cursor's for #0, the call's for the callers, in a
 * box over the panes; the message line keeps the one-line summary),
 * `up [N]`, `down [N]` and `frame N` (the cursor moves to that frame's
 * call, at the call line, as reverse-finish does; `down` and `frame 0`
 * come back to where `up` started), `list` (the source lines around the
 * cursor's line, tabs expanded), `print [FIELD]` (what the trace holds
 * of the event at the cursor: kind, function, time, depth, thread, and
 * per kind fd, bytes, peer, signal, address, duration; with record
 * --args the call's args and retval, and `print NAME` an argument of the
 * cursor's frame, by its DWARF name: engine/callvals.h).  `bt` shows the
 * arguments of each frame as gdb does (`#1 fib (n=11) at fib.c:7`).
 *
 * Descriptors listed in cmd_table[] (tui/prompt.c); state in struct tui
 * (fr_*: the frame the cursor was put in).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/callvals.h"
#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/tui.h"

#define FRAME_MAX 256

static struct view *frame_view(struct tui *t)
{
	return &t->views[t->slot[SLOT_TRACE]];
}

/* "file:line" (the base name) of event (th, i), or "??" */
static void frame_where(struct tui *t, int th, int64_t i, int call_site,
			char *buf, int size)
{
	char *file = NULL, *path = NULL;
	const char *base;
	int line = 0, err;

	if (call_site)
		err = recon_event_site(t->r, th, i, &file, &line);
	else
		err = tui_locate(frame_view(t), th, i, &file, &line, &path);
	if (err || !file) {
		snprintf(buf, size, "??");
	} else {
		base = strrchr(file, '/');
		snprintf(buf, size, "%s:%d", base ? base + 1 : file, line);
	}
	free(file);
	free(path);
}

/* the frames at the cursor, innermost first; how many (<= FRAME_MAX) */
static int frame_list(struct tui *t, int64_t *fr)
{
	int n = cursor_backtrace(t->c, fr, FRAME_MAX);

	return n < FRAME_MAX ? n : FRAME_MAX;
}

/* frame k's line: "#k  func () at file:line" */
static void frame_line(struct tui *t, const int64_t *fr, int k, char *buf,
		       int size)
{
	int th = cursor_thread(t->c);
	struct recon_ev e = recon_get(t->r, th, fr[k]);
	char where[256], args[200] = "";

	if (k == 0)
		frame_where(t, th, cursor_index(t->c), cursor_at_call(t->c),
			    where, sizeof(where));
	else
		frame_where(t, th, fr[k - 1], 1, where, sizeof(where));
	callvals_args(t->cv, e.func, e.id, args, sizeof(args)); /* --args */
	snprintf(buf, size, "#%-2d %s (%s) at %s", k,
		 recon_func_name(t->r, e.func), args, where);
}

static int cmd_bt(struct tui *t, int argc, char **argv, char **cause)
{
	int64_t fr[FRAME_MAX];
	int all = cursor_backtrace(t->c, fr, FRAME_MAX), i, len;
	int n = all < FRAME_MAX ? all : FRAME_MAX, th = cursor_thread(t->c);
	size_t plen = 0, cap = 256;
	char buf[512], line[300];
	char *p = malloc(cap);

	len = snprintf(buf, sizeof(buf), "bt: %d frame%s:", all, all == 1 ? "" : "s");
	for (i = 0; i < n && len < (int)sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len, " #%d %s", i,
				recon_func_name(t->r,
						recon_get(t->r, th, fr[i]).func));
	screen_message("%s", buf);
	/* the list: one frame a line */
	for (i = 0; p && i < n; i++) {
		int l;

		frame_line(t, fr, i, line, sizeof(line));
		l = (int)strlen(line);
		if (plen + l + 2 > cap) {
			char *np = realloc(p, cap = 2 * cap + l);

			if (!np)
				break;
			p = np;
		}
		plen += snprintf(p + plen, cap - plen, "%s%s", i ? "\n" : "", line);
	}
	if (!p)
		return 0;
	if (all > n && plen + 64 < cap)
		snprintf(p + plen, cap - plen, "\n(%d more frames, outermost)",
			 all - n);
	if (!n)
		snprintf(p, cap, "no frame: the cursor is outside every call");
	free(t->popup);
	t->popup = p;
	snprintf(t->popup_title, sizeof(t->popup_title), "backtrace of %d:%d",
		 t->r->threads[th].pid, t->r->threads[th].tid);
	return 0;
}

/* go to frame `level` of the frames at the base position */
static int frame_go(struct tui *t, int level, char **cause)
{
	int64_t fr[FRAME_MAX], i0 = cursor_index(t->c);
	int n, t0 = cursor_thread(t->c), call0 = cursor_at_call(t->c);
	char line[300];

	/* moved since the last frame command: count from the cursor */
	if (cursor_thread(t->c) != t->fr_at_t ||
	    cursor_index(t->c) != t->fr_at_i) {
		t->fr_t = cursor_thread(t->c);
		t->fr_i = cursor_index(t->c);
		t->fr_level = 0;
	}
	cursor_goto(t->c, t->fr_t, t->fr_i, NULL);
	n = frame_list(t, fr);
	if (level < 0 || level >= n) {
		/* back where it was (at a call: reverse-finish from the
		 * entry lands there again) */
		cursor_goto(t->c, t0, i0, NULL);
		if (call0)
			cursor_move(t->c, CURSOR_RFINISH, NULL);
		return propel_cause(cause, -ERANGE,
				    level < 0 ? "bottom (innermost) frame selected; "
						"you cannot go down"
					      : "no frame %d: %d frame%s (bt)",
				    level, n, n == 1 ? "" : "s");
	}
	frame_line(t, fr, level, line, sizeof(line));
	if (level > 0) {
		/* frame k: at the call of frame k-1, in frame k */
		cursor_goto(t->c, t->fr_t, fr[level - 1], NULL);
		cursor_move(t->c, CURSOR_RFINISH, NULL);
	}
	t->fr_level = level;
	t->fr_at_t = cursor_thread(t->c);
	t->fr_at_i = cursor_index(t->c);
	screen_message("%s", line);
	return 0;
}

static int frame_count(int argc, char **argv, int *n, const char *usage,
		       char **cause)
{
	char *end;

	*n = 1;
	if (argc < 2)
		return 0;
	*n = (int)strtol(argv[1], &end, 10);
	if (*end || *n < 0)
		return propel_cause(cause, -EINVAL, "usage: %s", usage);
	return 0;
}

static int frame_level(struct tui *t)
{
	return cursor_thread(t->c) == t->fr_at_t &&
			       cursor_index(t->c) == t->fr_at_i
		       ? t->fr_level
		       : 0;
}

static int cmd_up(struct tui *t, int argc, char **argv, char **cause)
{
	int n, err = frame_count(argc, argv, &n, "up [N]", cause);

	return err ? err : frame_go(t, frame_level(t) + n, cause);
}

static int cmd_down(struct tui *t, int argc, char **argv, char **cause)
{
	int n, err = frame_count(argc, argv, &n, "down [N]", cause);

	return err ? err : frame_go(t, frame_level(t) - n, cause);
}

static int cmd_frame(struct tui *t, int argc, char **argv, char **cause)
{
	int n, err;

	if (argc < 2) { /* gdb: the frame selected */
		n = frame_level(t);
		return frame_go(t, n, cause);
	}
	err = frame_count(argc, argv, &n, "frame N", cause);
	return err ? err : frame_go(t, n, cause);
}

/* `list`: the lines around the cursor's line, as gdb prints them */
static int cmd_list(struct tui *t, int argc, char **argv, char **cause)
{
	char *file = NULL, *path = NULL, *text = NULL, *l = NULL;
	int line = 0, k = 0, first, err;
	size_t cap = 0, len = 0, tcap = 0;
	ssize_t n;
	FILE *f;

	err = tui_locate(frame_view(t), cursor_thread(t->c),
			 cursor_index(t->c), &file, &line, &path);
	if (err || !file) {
		free(file);
		return propel_cause(cause, -ENOENT,
				    "list: no source line for this event");
	}
	if (!path || !(f = fopen(path, "r"))) {
		err = propel_cause(cause, -ENOENT,
				   "list: source not found: %s:%d (:directory "
				   "DIR adds a place to look)",
				   file, line);
		free(file);
		free(path);
		return err;
	}
	first = line > 5 ? line - 5 : 1;
	while ((n = getline(&l, &cap, f)) >= 0 && ++k < first + 11) {
		char *exp;
		int c;

		if (k < first)
			continue;
		if (n && l[n - 1] == '\n')
			l[n - 1] = 0;
		if (!(exp = tui_expand_tabs(l)))
			break;
		c = (int)strlen(exp);
		if (len + c + 16 > tcap) {
			char *nt = realloc(text, tcap = 2 * tcap + c + 64);

			if (!nt) {
				free(exp);
				break;
			}
			text = nt;
		}
		len += snprintf(text + len, tcap - len, "%s%5d%s%s", len ? "\n" : "",
				k, k == line ? ">" : " ", exp);
		free(exp);
	}
	free(l);
	fclose(f);
	if (text) {
		free(t->popup);
		t->popup = text;
		snprintf(t->popup_title, sizeof(t->popup_title), "%s:%d",
			 strrchr(path, '/') ? strrchr(path, '/') + 1 : path, line);
	}
	free(file);
	free(path);
	return 0;
}

/* `print [FIELD]`: the event at the cursor as the trace holds it */
/* `print NAME`: the argument NAME of the frame (th, i) is in, as
 * record --args recorded it.  0 with its value in buf, or -ENOENT. */
static int print_arg(struct tui *t, int th, int64_t i, const char *name,
		     char *buf, size_t size)
{
	int64_t f = recon_frame(t->r, th, i);
	struct recon_ev e;
	char all[400], *p, *tok, *save = NULL;
	size_t n = strlen(name);

	if (f < 0)
		return -ENOENT;
	e = recon_get(t->r, th, f);
	if (!callvals_args(t->cv, e.func, e.id, all, sizeof(all)))
		return -ENOENT;
	for (p = all; (tok = strtok_r(p, ",", &save)); p = NULL) {
		while (*tok == ' ')
			tok++;
		if (!strncmp(tok, name, n) && tok[n] == '=') {
			snprintf(buf, size, "%s", tok + n + 1);
			return 0;
		}
	}
	return -ENOENT;
}

static int cmd_print(struct tui *t, int argc, char **argv, char **cause)
{
	static int history;
	int th = cursor_thread(t->c);
	int64_t i = cursor_index(t->c);
	const struct recon_thread *thr = &t->r->threads[th];
	struct recon_ev e = recon_get(t->r, th, i);
	struct recon_row row = { 0 };
	char at[48], dur[48] = "", fields[16][96];
	const char *names[16];
	int nf = 0, k;

	if (e.id >= 0)
		recon_row(t->r, e.id, &row);
	tui_time(frame_view(t), e.ts, at, sizeof(at));
#define FIELD(n, ...) \
	(names[nf] = n, snprintf(fields[nf], sizeof(fields[0]), __VA_ARGS__), nf++)
	FIELD("kind", "%s", session_kind_name(e.kind) ? session_kind_name(e.kind)
						      : "?");
	if (e.kind == SK_ENTRY || e.kind == SK_EXIT)
		FIELD("func", "%s", recon_func_name(t->r, e.func));
	FIELD("time", "%s", at);
	FIELD("ts_ns", "%lld", (long long)(row.ts_ns ? row.ts_ns : e.ts));
	FIELD("id", "%lld", (long long)e.id);
	FIELD("thread", "%d:%d", thr->pid, thr->tid);
	FIELD("depth", "%d", e.depth);
	if ((e.kind == SK_ENTRY || e.kind == SK_EXIT) && e.match >= 0) {
		struct recon_ev m = recon_get(t->r, th, e.match);

		tui_dur(e.kind == SK_ENTRY ? m.ts - e.ts : e.ts - m.ts, dur,
			sizeof(dur));
		FIELD("duration", "%s", dur);
	}
	if ((e.kind == SK_ENTRY || e.kind == SK_EXIT) &&
	    callvals_has(t->cv, e.func)) { /* record --args */
		struct recon_ev en = e.kind == SK_ENTRY || e.match < 0
					     ? e
					     : recon_get(t->r, th, e.match);
		struct recon_row xr;
		int64_t x = e.kind == SK_EXIT ? i : e.match;
		char v[64];

		if (callvals_args(t->cv, en.func, en.id, fields[nf],
				  sizeof(fields[0])))
			names[nf++] = "args";
		if (x >= 0 &&
		    !recon_row(t->r, recon_get(t->r, th, x).id, &xr) &&
		    (xr.has & SE_ARG2) &&
		    callvals_ret(t->cv, e.func, xr.arg2, v, sizeof(v)))
			FIELD("retval", "%s", v);
	}
	if (e.kind == SK_SEND || e.kind == SK_RECV) {
		int ot;
		int64_t oi;

		FIELD("fd", "%lld", (long long)row.arg0);
		FIELD("bytes", "%lld", (long long)row.arg1);
		if (!recon_peer(t->r, th, i, &ot, &oi))
			FIELD("peer", "%d:%d", t->r->threads[ot].pid,
			      t->r->threads[ot].tid);
	}
	if (e.kind == SK_SIGNAL) {
		FIELD("signo", "%lld (%s)", (long long)row.arg0,
		      tui_signame((int)row.arg0));
		FIELD("addr", "0x%llx", (unsigned long long)row.arg1);
	}
#undef FIELD
	if (argc >= 2) {
		for (k = 0; k < nf && strcmp(names[k], argv[1]); k++)
			;
		if (k == nf && !print_arg(t, th, i, argv[1], fields[0],
					  sizeof(fields[0]))) {
			screen_message("$%d = %s", ++history, fields[0]);
			return 0;
		}
		if (k == nf) {
			char have[512];
			int len = 0, j;

			for (j = 0; j < nf; j++)
				len += snprintf(have + len, sizeof(have) - len,
						"%s%s", j ? " " : "", names[j]);
			return propel_cause(cause, -ENOENT,
					    "print: no \"%s\" in this event "
					    "or its frame's arguments (it "
					    "has: %s%s)",
					    argv[1], have,
					    t->cv && callvals_has(t->cv, e.func)
						    ? ""
						    : "; record --args for "
						      "argument values");
		}
		screen_message("$%d = %s", ++history, fields[k]);
		return 0;
	}
	{
		char buf[600];
		int len = snprintf(buf, sizeof(buf), "$%d = {", ++history);

		for (k = 0; k < nf && len < (int)sizeof(buf); k++)
			len += snprintf(buf + len, sizeof(buf) - len, "%s%s = %s",
					k ? ", " : "", names[k], fields[k]);
		if (len < (int)sizeof(buf))
			snprintf(buf + len, sizeof(buf) - len, "}");
		screen_message("%s", buf);
		/* and one field a line, in a box (the message line is
		 * one row) */
		len = 0;
		for (k = 0; k < nf && len < (int)sizeof(buf); k++)
			len += snprintf(buf + len, sizeof(buf) - len, "%s%-8s = %s",
					k ? "\n" : "", names[k], fields[k]);
		free(t->popup);
		t->popup = strdup(buf);
		snprintf(t->popup_title, sizeof(t->popup_title), "print $%d",
			 history);
	}
	return 0;
}

const struct propel_cmd cmd_bt_entry = {
	"bt", "backtrace", "", "the frames the cursor is in, one a line",
	NULL, cmd_bt, CMD_SESSION,
};
const struct propel_cmd cmd_up_entry = {
	"up", NULL, "[N]", "the cursor to the call N frames out (gdb's up)",
	NULL, cmd_up, CMD_SESSION,
};
const struct propel_cmd cmd_down_entry = {
	"down", NULL, "[N]", "back N frames in, towards where `up` started",
	NULL, cmd_down, CMD_SESSION,
};
const struct propel_cmd cmd_frame_entry = {
	"frame", NULL, "[N]", "the cursor to frame N's call (bt's numbers)",
	NULL, cmd_frame, CMD_SESSION,
};
const struct propel_cmd cmd_list_entry = {
	"list", "l", "", "the source lines around the cursor's line",
	NULL, cmd_list, CMD_SESSION,
};
const struct propel_cmd cmd_print_entry = {
	"print", "p", "[FIELD|ARG]", "what the trace holds of the event (an argument: --args)",
	NULL, cmd_print, CMD_SESSION,
};
