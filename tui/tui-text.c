/*
 * tui/tui-text.c - the words and numbers the TUI shows for events: one
 * line per event (tui_describe: the trace and threads panes), durations
 * in uftrace's units (tui_dur: "812 ns", "2.137 us", "14.020 ms",
 * "1.250 s"), times from the session's start ("+2.137 ms", the status
 * line's), and back (tui_parse_time: what `:goto` takes, as shown), and
 * a process's command for a pid (the processes table, loaded once by the
 * core: sends and receives name their peer's command), and a source line
 * with its tabs expanded (the source pane, `list`).
 *
 * Called by tui/tui.c, tui/prompt.c and the views (through tui-core.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/callvals.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "tui/tui-core.h"
#include "tui/tui.h"

void tui_dur(int64_t ns, char *buf, int size)
{
	double d = (double)(ns < 0 ? -ns : ns);
	const char *sign = ns < 0 ? "-" : "";

	if (d < 1e3)
		snprintf(buf, size, "%s%lld ns", sign, (long long)d);
	else if (d < 1e6)
		snprintf(buf, size, "%s%.3f us", sign, d / 1e3);
	else if (d < 1e9)
		snprintf(buf, size, "%s%.3f ms", sign, d / 1e6);
	else
		snprintf(buf, size, "%s%.3f s", sign, d / 1e9);
}

void tui_time(struct view *v, int64_t ts, char *buf, int size)
{
	int64_t first, last;

	view_time_span(v, &first, &last);
	buf[0] = '+';
	tui_dur(ts - first, buf + 1, size - 1);
	if (ts < first) /* "+-3 us" reads badly */
		memmove(buf, buf + 1, strlen(buf));
}

int tui_parse_time(const char *text, int64_t *ns, int64_t *half)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		      { "", 1e9 } };
	char *end;
	double d;
	size_t k;
	int digits;

	while (*text == ' ' || *text == '+')
		text++;
	if (!*text || (!isdigit((unsigned char)*text) && *text != '.'))
		return -EINVAL;
	d = strtod(text, &end);
	{
		const char *dot = memchr(text, '.', (size_t)(end - text));

		digits = dot ? (int)(end - dot - 1) : 0;
	}
	while (*end == ' ')
		end++;
	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (strcmp(end, units[k].unit) == 0) {
			double h = units[k].ns / 2;

			*ns = (int64_t)(d * units[k].ns + 0.5);
			for (int j = 0; j < digits; j++)
				h /= 10;
			if (half)
				*half = h < 1 ? 0 : (int64_t)h;
			return 0;
		}
	return -EINVAL;
}

const char *tui_proc_command(struct tui *t, int pid, const char **host)
{
	const struct session_proc *p =
		session_proc_find(t->procs, t->nprocs, pid);

	if (host)
		*host = p && p->host ? p->host : NULL;
	return p && p->command && *p->command ? p->command : NULL;
}

/* a line with its tabs expanded to the next multiple of 8 columns, as an
 * editor shows it (malloc'd) */
char *tui_expand_tabs(const char *line)
{
	size_t tabs = 0, len = 0, c = 0;
	const char *p;
	char *out;

	for (p = line; *p; p++, len++)
		tabs += *p == '\t';
	out = malloc(len + 7 * tabs + 1);
	if (!out)
		return NULL;
	for (p = line; *p; p++)
		if (*p == '\t')
			do
				out[c++] = ' ';
			while (c % 8);
		else
			out[c++] = *p;
	out[c] = 0;
	return out;
}

const char *view_proc_command(struct view *v, int pid)
{
	return tui_proc_command(v->tui, pid, NULL);
}

const char *tui_signame(int signo)
{
	static const char *const n[] = {
		[4] = "SIGILL", [6] = "SIGABRT", [7] = "SIGBUS", [8] = "SIGFPE",
		[9] = "SIGKILL", [11] = "SIGSEGV", [13] = "SIGPIPE",
		[15] = "SIGTERM", [2] = "SIGINT",
	};

	return signo > 0 && signo < 16 && n[signo] ? n[signo] : "signal";
}

void tui_describe(struct view *v, int th, int64_t idx, char *buf, int size)
{
	const struct recon_ev ev = recon_get(v->tui->r, th, idx);

	tui_describe_ev(v, th, idx, &ev, buf, size);
}

/* --args (engine/callvals.h): the arguments of the call whose entry or
 * exit (th, idx) is into args (an entry: "n=30"), its return value into
 * ret (" = 832040"); both empty when the session has none for it. */
static void tui_call_values(struct tui *t, int th, int64_t idx,
			    const struct recon_ev *e, char *args, size_t na,
			    char *ret, size_t nr)
{
	struct recon_row row;
	int64_t x = e->kind == SK_EXIT ? idx : e->match;
	char v[64];

	if (na)
		*args = 0;
	*ret = 0;
	if (!callvals_has(t->cv, e->func))
		return;
	if (na && e->kind == SK_ENTRY)
		callvals_args(t->cv, e->func, e->id, args, na);
	if (x >= 0 && !recon_row(t->r, recon_get(t->r, th, x).id, &row) &&
	    (row.has & SE_ARG2) &&
	    callvals_ret(t->cv, e->func, row.arg2, v, sizeof(v)))
		snprintf(ret, nr, " = %s", v);
}

void tui_describe_ev(struct view *v, int th, int64_t idx,
		     const struct recon_ev *e, char *buf, int size)
{
	struct tui *t = v->tui;
	const char *fn = recon_func_name(t->r, e->func);
	struct recon_row row;

	char args[200], ret[72];

	switch (e->kind) {
	case SK_ENTRY: /* with --args: fib(n=30) = 832040 { */
		tui_call_values(t, th, idx, e, args, sizeof(args), ret,
				sizeof(ret));
		if (e->match >= 0 && tui_folded(v, th, idx))
			snprintf(buf, size, "%s(%s)%s { ... }  %lld events%s",
				 fn, args, ret, (long long)(e->match - idx + 1),
				 e->flags & RECON_F_SYNTH ? "   (entry lost: ring "
							    "wrapped)"
							  : "");
		else
			snprintf(buf, size, "%s(%s)%s {%s", fn, args, ret,
				 e->flags & RECON_F_SYNTH ? "   (entry lost: ring "
							    "wrapped)"
							  : "");
		return;
	case SK_EXIT:
		tui_call_values(t, th, idx, e, NULL, 0, ret, sizeof(ret));
		snprintf(buf, size, "}%s /* %s */", ret, fn);
		return;
	}
	recon_row(t->r, e->id, &row);
	switch (e->kind) {
	case SK_SIGNAL:
		snprintf(buf, size, "*** %s (signal %lld) addr 0x%llx ***",
			 tui_signame((int)row.arg0), (long long)row.arg0,
			 (unsigned long long)row.arg1);
		break;
	case SK_SEND:
	case SK_RECV: {
		int ot;
		int64_t oi;

		if (!recon_peer(t->r, th, idx, &ot, &oi)) {
			const char *cmd = tui_proc_command(
				t, t->r->threads[ot].pid, NULL);

			/* the peer by pid:tid and by its command */
			snprintf(buf, size, "%s fd=%lld %lld bytes %s %d:%d%s%s%s",
				 e->kind == SK_SEND ? "send" : "recv",
				 (long long)row.arg0, (long long)row.arg1,
				 e->kind == SK_SEND ? "->" : "<-",
				 t->r->threads[ot].pid, t->r->threads[ot].tid,
				 cmd ? " (" : "", cmd ? cmd : "", cmd ? ")" : "");
		} else {
			snprintf(buf, size, "%s fd=%lld %lld bytes",
				 e->kind == SK_SEND ? "send" : "recv",
				 (long long)row.arg0, (long long)row.arg1);
		}
		break;
	}
	case SK_FORK:
		snprintf(buf, size, "fork -> pid %lld", (long long)row.arg0);
		break;
	case SK_PROCESS_EXIT:
		snprintf(buf, size, "process exit (status %lld)",
			 (long long)row.arg0);
		break;
	case SK_LOST:
		if (e->id < 0) /* engine/reconstruct.c: a damaged chunk */
			snprintf(buf, size, "~~~ gap: a damaged chunk (events "
					    "unreadable) ~~~");
		else
			snprintf(buf, size,
				 "~~~ gap: %lld records lost (the drain fell "
				 "behind) ~~~",
				 (long long)row.arg0);
		break;
	default:
		snprintf(buf, size, "%s",
			 session_kind_name(e->kind) ? session_kind_name(e->kind)
						    : "?");
	}
}
