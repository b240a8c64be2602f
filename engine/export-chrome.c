/*
 * engine/export-chrome.c - `propel export --format=chrome`: the session in
 * the Trace Event Format (the JSON that Perfetto, chrome://tracing and
 * speedscope read):
 *
 *   {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...]}
 *
 *   M   process_name ("command" and the host when known), thread_name and
 *       a sort index per thread (its first event), before everything else
 *   X   a leaf call (its exit is the thread's next event), with dur;
 *       calls carry no args (speedscope names a frame by name and args,
 *       so a function stays one frame wherever it is called from); cat
 *       "call", or "call,rebuilt" for an entry rebuilt from a wrapped ring
 *   B/E any other call: B at the entry, E at its exit.  A call whose entry
 *       was rebuilt (a wrapped ring) is a B at the thread's oldest record.
 *       The exit of a call entered before the trace began (attach) has no
 *       B and writes no E; calls an exec or a gap (lost records) cut off
 *       end there; calls that never returned (a crash, exit()) stay open
 *   i   every other event (signal, fork, exec, send, recv, lost, ...),
 *       thread-scoped, named by its kind; its fields (engine/event.c) are
 *       the args
 *   s/f a matched message: an arrow from the send holding the recv's first
 *       byte (s, at the send's time on the sender's thread) to the recv (f,
 *       "bp":"e", bound to the recv's enclosing slice); id = the recv's
 *       event id, so every matched recv is one arrow
 *
 *   i/C vital signs, when the session holds them (propel vitals record,
 *       record --vitals): each sample an instant "vital NAME" on its
 *       thread, each epoch's total per vital a counter on the "kernel
 *       vitals" track (pid 0); their Unix times are moved to the trace's
 *       clock by export_unix_offset (engine/export.h)
 *
 * ts and dur are microseconds (three decimals: nanoseconds), counted from
 * the session's first event so a double holds them exactly.  pid and tid
 * are the traced process's.  The events are written as engine/replay.c
 * walks them, thread after thread, nothing buffered: the memory is the
 * walker's, whatever the session's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/event.h"
#include "engine/export.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "engine/vitals-store.h"
#include "share/json.h"
#include "share/log.h"

struct chrome {
	FILE *out;
	const struct export_opts *o;
	int64_t t0; /* the session's first event */
	int64_t pid_only;
	int64_t vitals_off; /* vital signs are dated in Unix time */
	unsigned long long written;
	/* the thread walked now and the depths of its open B slices */
	int64_t pid, tid;
	int have_thread;
	struct chrome_open {
		int depth;
		const char *name; /* replay's, stable for the walk */
	} *open;
	int nopen, cap;
	int err;
};

/* a time in microseconds from t0, with its nanoseconds */
static void chrome_us(FILE *out, int64_t ns)
{
	if (ns < 0) {
		putc('-', out);
		ns = -ns;
	}
	fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static void chrome_head(struct chrome *c, const char *ph,
			const struct replay_event *ev, int64_t ts)
{
	fprintf(c->out, ",\n{\"ph\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
		",\"ts\":", ph, ev->pid, ev->tid);
	chrome_us(c->out, ts - c->t0);
	c->written++;
}

/* E for every open slice at depth >= d, at ev's time */
static void chrome_close(struct chrome *c, const struct replay_event *ev,
			 int d)
{
	while (c->nopen > 0 && c->open[c->nopen - 1].depth >= d) {
		c->nopen--;
		chrome_head(c, "E", ev, ev->ts_ns);
		/* speedscope pairs an E with its B by name */
		fputs(",\"name\":", c->out);
		json_str(c->out, c->open[c->nopen].name);
		fputs(",\"cat\":\"call\"}", c->out);
	}
}

static int chrome_event(const struct replay_event *ev, void *arg)
{
	struct chrome *c = arg;
	FILE *out = c->out;

	if (!export_keep(c->o, ev)) /* --flow: another flow's event */
		return 0;
	if (!c->have_thread || ev->pid != c->pid || ev->tid != c->tid) {
		c->pid = ev->pid;
		c->tid = ev->tid;
		c->have_thread = 1;
		c->nopen = 0; /* a thread's calls left open stay open */
	}
	switch (ev->kind) {
	case SK_ENTRY:
		/* slices at this depth or deeper ended unseen (exec, longjmp) */
		chrome_close(c, ev, ev->depth);
		if (!(ev->leaf && ev->dur_ns >= 0)) {
			if (c->nopen == c->cap) {
				int nc = c->cap ? 2 * c->cap : 64;
				struct chrome_open *no =
					realloc(c->open, nc * sizeof(*no));

				if (!no)
					return c->err = -ENOMEM;
				c->open = no;
				c->cap = nc;
			}
			c->open[c->nopen].depth = ev->depth;
			c->open[c->nopen++].name = ev->func ? ev->func : "?";
		}
		chrome_head(c, ev->leaf && ev->dur_ns >= 0 ? "X" : "B", ev,
			    ev->ts_ns);
		if (ev->leaf && ev->dur_ns >= 0) {
			fputs(",\"dur\":", out);
			chrome_us(out, ev->dur_ns);
		}
		fputs(",\"name\":", out);
		json_str(out, ev->func ? ev->func : "?");
		/* no args: speedscope makes a frame of name and args, and a
		 * function is one frame wherever it was called from */
		fputs(ev->rebuilt ? ",\"cat\":\"call,rebuilt\"}"
				  : ",\"cat\":\"call\"}", out);
		break;
	case SK_EXIT:
		if (ev->leaf && ev->dur_ns >= 0)
			break; /* its X said it all */
		/* the exit of a call entered before the trace began has no B:
		 * nothing to end */
		if (c->nopen > 0 && c->open[c->nopen - 1].depth >= ev->depth)
			chrome_close(c, ev, ev->depth);
		break;
	case SK_EXEC:
	case SK_LOST:
		/* a new image, or a gap: nothing open before goes on */
		chrome_close(c, ev, 0);
		/* fall through */
	default:
		chrome_head(c, "i", ev, ev->ts_ns);
		fprintf(out, ",\"s\":\"t\",\"name\":\"%s\",\"cat\":\"%s\","
			     "\"args\":{\"kind\":\"%s\"",
			event_kind(ev->kind)->name,
			ev->kind == SK_SEND || ev->kind == SK_RECV ? "message"
								   : "event",
			event_kind(ev->kind)->name);
		event_json_fields(ev, out);
		fputs("}}", out);
		if (ev->kind == SK_RECV && ev->matched &&
		    (!c->pid_only || ev->match_pid == c->pid_only)) {
			struct replay_event snd = *ev;

			snd.pid = ev->match_pid;
			snd.tid = ev->match_tid;
			chrome_head(c, "s", &snd, ev->match_ts_ns);
			fprintf(out, ",\"id\":%" PRId64 ",\"name\":\"message\","
				     "\"cat\":\"message\"}", ev->id);
			chrome_head(c, "f", ev, ev->ts_ns);
			fprintf(out, ",\"bp\":\"e\",\"id\":%" PRId64
				     ",\"name\":\"message\",\"cat\":\"message\"}",
				ev->id);
		}
		break;
	}
	return ferror(out) ? -EIO : 0;
}

/* process and thread names; the session's first event's time in *t0 */
static int chrome_meta(struct chrome *c, struct session *s, char **cause)
{
	struct session_proc *pv = NULL;
	struct session_thread *tv = NULL;
	size_t np = 0, nt = 0, i;
	const char *sep = "";
	int err;

	err = session_processes(s, &pv, &np, cause);
	if (!err)
		err = session_threads(s, &tv, &nt, cause);
	if (err)
		goto out;
	c->t0 = 0;
	for (i = 0; i < nt; i++)
		if (tv[i].first_ns > 0 && (!c->t0 || tv[i].first_ns < c->t0))
			c->t0 = tv[i].first_ns;
	fprintf(c->out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{"
			"\"generator\":\"propel\",\"session\":");
	json_str(c->out, session_path(s));
	fprintf(c->out, ",\"t0_ns\":%" PRId64 "},\n\"traceEvents\":[", c->t0);
	for (i = 0; i < np; i++) {
		if (c->pid_only && pv[i].pid != c->pid_only)
			continue;
		fprintf(c->out, "%s\n{\"ph\":\"M\",\"name\":\"process_name\","
				"\"pid\":%" PRId64 ",\"tid\":%" PRId64
				",\"args\":{\"name\":",
			sep, pv[i].pid, pv[i].pid);
		json_str(c->out, pv[i].command);
		fputs("}}", c->out);
		sep = ",";
		if (pv[i].host) {
			fprintf(c->out, ",\n{\"ph\":\"M\",\"name\":"
					"\"process_labels\",\"pid\":%" PRId64
					",\"tid\":%" PRId64 ",\"args\":{\"labels\":",
				pv[i].pid, pv[i].pid);
			json_str(c->out, pv[i].host);
			fputs("}}", c->out);
		}
	}
	for (i = 0; i < nt; i++) {
		if (c->pid_only && tv[i].pid != c->pid_only)
			continue;
		fprintf(c->out, "%s\n{\"ph\":\"M\",\"name\":\"thread_name\","
				"\"pid\":%" PRId64 ",\"tid\":%" PRId64
				",\"args\":{\"name\":",
			sep, tv[i].pid, tv[i].tid);
		json_str(c->out, tv[i].name ? tv[i].name : "");
		fprintf(c->out, "}},\n{\"ph\":\"M\",\"name\":"
				"\"thread_sort_index\",\"pid\":%" PRId64
				",\"tid\":%" PRId64 ",\"args\":{\"sort_index\":"
				"%zu}}",
			tv[i].pid, tv[i].tid, i);
		sep = ",";
	}
	if (!*sep) /* nothing to name: an empty array still needs a first */
		fputs("\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,"
		      "\"tid\":0,\"args\":{\"name\":\"(no process)\"}}",
		      c->out);
out:
	session_processes_free(pv, np);
	session_threads_free(tv, nt);
	return err;
}

/* ---- vital signs (engine/vitals-store.h), when the session has them ---- */

static int chrome_sample(void *arg, const struct vitals_hsample *vs)
{
	struct chrome *c = arg;
	FILE *out = c->out;
	struct replay_event at = { 0 };
	char vital[32], frame[256];
	size_t n;

	if (c->pid_only && vs->pid != c->pid_only)
		return 0;
	at.pid = vs->pid;
	at.tid = vs->tid ? vs->tid : vs->pid;
	chrome_head(c, "i", &at, (int64_t)vs->ts_ns - c->vitals_off);
	snprintf(vital, sizeof(vital), "vital %s", vs->vital);
	fputs(",\"s\":\"t\",\"cat\":\"vital\",\"name\":", out);
	json_str(out, vital);
	fprintf(out, ",\"args\":{\"vital\":");
	json_str(out, vs->vital);
	fprintf(out, ",\"weight\":%" PRIu64 ",\"comm\":", vs->weight);
	json_str(out, vs->comm);
	if (vs->kstack) { /* the innermost frame: up to the first '\n' */
		n = strcspn(vs->kstack, "\n");
		snprintf(frame, sizeof(frame), "%.*s", (int)n, vs->kstack);
		fputs(",\"kernel_frame\":", out);
		json_str(out, frame);
	}
	if (vs->ustack) {
		n = strcspn(vs->ustack, "\n");
		snprintf(frame, sizeof(frame), "%.*s", (int)n, vs->ustack);
		fputs(",\"user_frame\":", out);
		json_str(out, frame);
	}
	fputs("}}", out);
	return ferror(out) ? -EIO : 0;
}

/*
 * Samples as instants on their thread ("vital NAME", args: weight, comm,
 * the innermost kernel and user frames) and each epoch's total per vital
 * as a counter (C) on the "kernel vitals" track (pid 0).  Nothing when
 * the session holds no vital signs.
 */
static int chrome_vitals(struct chrome *c, struct session *s)
{
	struct vitals_store *st;
	struct vitals_hist h = { 0 };
	char *cause = NULL;
	size_t e, r, k;
	int err;

	if (vitals_store_new(s, &st, &cause)) { /* read-only, no tables */
		free(cause);
		return 0;
	}
	/* beside a trace, its clock; alone, Unix time from t0 = 0 */
	c->vitals_off = c->t0 ? export_unix_offset(s) : 0;
	if (vitals_store_load(st, 0, &h, &cause) || !h.n) {
		free(cause);
		vitals_store_free(st);
		return 0;
	}
	if (!c->pid_only) {
		fputs(",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,"
		      "\"tid\":0,\"args\":{\"name\":\"kernel vitals\"}}",
		      c->out);
		for (e = 0; e < h.n; e++) {
			const struct vitals_hepoch *ep = &h.ep[e];

			for (r = 0; r < ep->nrows; r++) {
				double sum = 0;
				struct replay_event at = { 0 };

				for (k = 0; k < r; k++) /* once per vital */
					if (!strcmp(ep->rows[k].vital,
						    ep->rows[r].vital))
						break;
				if (k < r)
					continue;
				for (k = r; k < ep->nrows; k++)
					if (!strcmp(ep->rows[k].vital,
						    ep->rows[r].vital))
						sum += ep->rows[k].value;
				chrome_head(c, "C", &at,
					    (int64_t)ep->start_ns - c->vitals_off);
				fputs(",\"cat\":\"vital\",\"name\":", c->out);
				json_str(c->out, ep->rows[r].vital);
				fprintf(c->out, ",\"args\":{\"value\":%.6g}}", sum);
			}
		}
	}
	vitals_hist_release(&h);
	err = vitals_store_samples(st, 0, NULL, 0, chrome_sample, c);
	vitals_store_free(st);
	return err;
}

static int chrome_write(struct session *s, const struct export_opts *o,
			FILE *out, char **cause)
{
	struct replay_filter f = { o ? o->pid : 0, 0 };
	struct chrome c = { .out = out, .o = o, .pid_only = f.pid };
	int err;

	err = chrome_meta(&c, s, cause);
	if (err)
		return err;
	err = replay_walk(s, &f, chrome_event, &c, cause);
	free(c.open);
	if (err == -ENOMEM)
		return propel_cause(cause, err, "out of memory");
	if (err == -EIO && cause && !*cause)
		return propel_cause(cause, -EIO, "write error");
	if (err)
		return err;
	if (!(o && o->flow) && chrome_vitals(&c, s))
		return propel_cause(cause, -EIO, "write error");
	fputs("\n]}\n", out);
	return ferror(out) ? propel_cause(cause, -EIO, "write error") : 0;
}

const struct export_format export_chrome_format = {
	.name = "chrome",
	.summary = "the Trace Event Format (JSON) for Perfetto, "
		   "chrome://tracing and speedscope: calls, events, messages "
		   "as flow arrows",
	.takes = EXPORT_PID | EXPORT_FLOW,
	.write = chrome_write,
};
