/*
 * engine/export-dot.c - `propel export --format=dot`: the communication
 * diagram of a session (the self-propelled paper, §5.1 and Figure 5), in
 * graphviz's dot language.
 *
 *   a node per process (engine/session.h session_processes: one per pid,
 *     its latest image), labelled with its command, pid and how it ended;
 *     nodes grouped in one cluster per host (processes.host)
 *   an edge per (sender, receiver, channel kind) for the matched messages
 *     (engine/match.h match_totals), labelled "KIND: N msgs, B bytes"
 *     (N = matched recvs, B = their bytes); one style per kind
 *   a dashed "fork" edge from a parent to each child in the session
 *   with --calls, the call graph: a dotted cluster per process with a node
 *     per function and an edge per caller and callee labelled with the
 *     number of calls (a dashed edge from the process to the functions its
 *     threads begin in), and a comment "// propel: N calls" at the end
 *   a dotted "wait" edge from a child back to its parent when the parent
 *     returned from a wait-family call (wait, waitpid, wait3, wait4,
 *     waitid) at or after the child ended -- the trace records the call,
 *     not which child it reaped, so a parent that waited once after two
 *     children ended gets both edges
 *
 * Node names are "p<pid>" (events carry no host yet: two hosts' equal
 * pids would merge).  The first line is a comment with the totals, which
 * tests read:
 *   // propel: N processes, H hosts, M message edges (K messages), F forks, W
 * waits Reads the session only; the output is deterministic for a session.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/export.h"
#include "engine/match.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/log.h"

/* one style per channel kind */
static const struct {
	const char *kind, *color, *style;
} dot_kinds[] = {
    {"tcp", "black", "solid"},
    {"udp", "blue", "solid"},
    {"unix", "darkgreen", "solid"},
    {"pipe", "brown", "bold"},
};

/* a string as a dot ID: quoted, " and \ escaped, newlines as \n */
static void dot_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if (*s == '\n') {
			fputs("\\n", out);
			continue;
		}
		fputc(*s, out);
	}
	fputc('"', out);
}

static int dot_is_wait(const char *func)
{
	static const char *const waits[] = {"wait",	"waitpid", "wait3",
					    "wait4",	"waitid",  "__wait4",
					    "__waitpid"};
	size_t i, n;

	if (!func)
		return 0;
	n = strcspn(func, "(@."); /* "waitpid@plt", "wait4.part.0" */
	for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (strlen(waits[i]) == n && strncmp(func, waits[i], n) == 0)
			return 1;
	return 0;
}

/* the latest return from a wait-family call, per walked process */
static int dot_wait_fn(const struct replay_event *ev, void *arg)
{
	int64_t *last = arg;

	if (ev->kind == SK_EXIT && dot_is_wait(ev->func) && ev->ts_ns > *last)
		*last = ev->ts_ns;
	return 0;
}

/* ---- --calls: the call graph of each process ---- */

struct dot_call {
	char *key; /* "pid\0caller\0callee" (caller "" for a thread's root) */
	size_t len;
	uint64_t hash;
	int64_t pid, count;
	const char *caller, *callee; /* into key */
};

struct dot_calls {
	struct dot_call *tab;
	size_t ntab, used;
	/* the thread walked now: its open calls' names (the walk's) */
	int64_t pid, tid;
	int have;
	const char **stack;
	int depth, cap;
	int err;
};

static uint64_t dot_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	return h;
}

static int dot_calls_grow(struct dot_calls *c)
{
	size_t n = c->ntab ? 2 * c->ntab : 256, i, j;
	struct dot_call *t = calloc(n, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < c->ntab; i++) {
		if (!c->tab[i].key)
			continue;
		for (j = c->tab[i].hash & (n - 1); t[j].key; j = (j + 1) & (n - 1))
			;
		t[j] = c->tab[i];
	}
	free(c->tab);
	c->tab = t;
	c->ntab = n;
	return 0;
}

static void dot_calls_add(struct dot_calls *c, int64_t pid, const char *caller,
			  const char *callee)
{
	char buf[1200];
	int n = snprintf(buf, sizeof(buf), "%" PRId64 "%c%s%c%s", pid, 0,
			 caller, 0, callee);
	size_t len = n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1, j;
	uint64_t h = dot_hash(buf, len);
	struct dot_call *e;

	if (4 * (c->used + 1) > 3 * c->ntab && (c->err = dot_calls_grow(c)))
		return;
	for (j = h & (c->ntab - 1); c->tab[j].key; j = (j + 1) & (c->ntab - 1))
		if (c->tab[j].hash == h && c->tab[j].len == len &&
		    memcmp(c->tab[j].key, buf, len) == 0) {
			c->tab[j].count++;
			return;
		}
	e = &c->tab[j];
	e->key = malloc(len + 1);
	if (!e->key) {
		c->err = -ENOMEM;
		return;
	}
	memcpy(e->key, buf, len);
	e->key[len] = 0;
	e->len = len;
	e->hash = h;
	e->pid = pid;
	e->count = 1;
	e->caller = e->key + strlen(e->key) + 1;
	e->callee = e->caller + strlen(e->caller) + 1;
	c->used++;
}

static int dot_calls_fn(const struct replay_event *ev, void *arg)
{
	struct dot_calls *c = arg;

	if (!c->have || ev->pid != c->pid || ev->tid != c->tid) {
		c->pid = ev->pid;
		c->tid = ev->tid;
		c->have = 1;
		c->depth = 0;
	}
	if (ev->kind == SK_EXEC || ev->kind == SK_LOST)
		c->depth = 0;
	if (ev->kind != SK_ENTRY)
		return 0;
	if (ev->depth + 1 > c->cap) {
		int nc = ev->depth + 64;
		const char **ns = realloc(c->stack, nc * sizeof(*ns));

		if (!ns)
			return c->err = -ENOMEM;
		for (int i = c->cap; i < nc; i++)
			ns[i] = NULL;
		c->stack = ns;
		c->cap = nc;
	}
	/* the caller is the call open one depth up, if the trace has it */
	dot_calls_add(c, ev->pid,
		      ev->depth > 0 && ev->depth <= c->depth &&
				      c->stack[ev->depth - 1]
			      ? c->stack[ev->depth - 1]
			      : "",
		      ev->func ? ev->func : "?");
	c->stack[ev->depth] = ev->func ? ev->func : "?";
	c->depth = ev->depth + 1;
	return c->err;
}

static void dot_calls_node(FILE *out, int64_t pid, const char *fn)
{
	char id[64];

	snprintf(id, sizeof(id), "c%" PRId64 "_%016" PRIx64, pid,
		 dot_hash(fn, strlen(fn)));
	dot_str(out, id);
}

/* a cluster per process: a node per function, an edge per caller and
 * callee labelled with the number of calls; the process's box points at
 * the functions its threads begin in */
static int dot_calls_write(struct session *s, FILE *out,
			   const struct session_proc *pv, size_t np,
			   int64_t *ncalls, char **cause)
{
	struct replay_filter all = {0, 0};
	struct dot_calls c = {0};
	size_t i, j, k;
	int err;

	if (dot_calls_grow(&c))
		return propel_cause(cause, -ENOMEM, "out of memory");
	err = replay_walk(s, &all, dot_calls_fn, &c, cause);
	free(c.stack);
	if (err == -ENOMEM)
		propel_cause(cause, err, "out of memory");
	for (i = 0; !err && i < np; i++) {
		int any = 0;

		for (j = 0; j < c.ntab; j++) {
			const struct dot_call *e = &c.tab[j];

			if (!e->key || e->pid != pv[i].pid)
				continue;
			if (!any++) {
				char lab[300];

				snprintf(lab, sizeof(lab),
					 "calls of %s (pid %" PRId64 ")",
					 pv[i].command, pv[i].pid);
				fprintf(out, "\tsubgraph \"cluster_calls_%" PRId64
					     "\" {\n\t\tlabel=", pv[i].pid);
				dot_str(out, lab);
				fprintf(out, ";\n\t\tstyle=dotted;\n");
			}
			/* each function once, at the first edge into it */
			for (k = 0; k < j; k++)
				if (c.tab[k].key && c.tab[k].pid == e->pid &&
				    strcmp(c.tab[k].callee, e->callee) == 0)
					break;
			if (k < j)
				continue;
			fputs("\t\t", out);
			dot_calls_node(out, e->pid, e->callee);
			fputs(" [shape=ellipse, label=", out);
			dot_str(out, e->callee);
			fputs("];\n", out);
		}
		if (any)
			fputs("\t}\n", out);
	}
	for (j = 0; !err && j < c.ntab; j++) {
		const struct dot_call *e = &c.tab[j];

		if (!e->key)
			continue;
		*ncalls += e->count;
		fputs("\t", out);
		if (*e->caller)
			dot_calls_node(out, e->pid, e->caller);
		else
			fprintf(out, "\"p%" PRId64 "\"", e->pid);
		fputs(" -> ", out);
		dot_calls_node(out, e->pid, e->callee);
		fprintf(out, " [label=\"%" PRId64 "\"%s];\n", e->count,
			*e->caller ? "" : ", style=dashed");
	}
	for (j = 0; j < c.ntab; j++)
		free(c.tab[j].key);
	free(c.tab);
	return err;
}

static int dot_write(struct session *s, const struct export_opts *o,
		     FILE *out, char **cause)
{
	struct session_proc *pv = NULL;
	struct match_total *mv = NULL;
	size_t np = 0, nm = 0, i, j, h;
	const char **hosts = NULL;
	size_t nh = 0;
	int64_t *waited = NULL, nmsgs = 0;
	int nforks = 0, nwaits = 0, err;
	char *cmd;

	err = session_processes(s, &pv, &np, cause);
	if (!err)
		err = match_totals(s, &mv, &nm, cause);
	if (err)
		goto out;
	hosts = calloc(np + 1, sizeof(*hosts));
	waited = calloc(np + 1, sizeof(*waited));
	if (!hosts || !waited) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	/* the hosts, in order of their first process */
	for (i = 0; i < np; i++) {
		const char *host = pv[i].host ? pv[i].host : "?";

		for (h = 0; h < nh && strcmp(hosts[h], host); h++)
			;
		if (h == nh)
			hosts[nh++] = host;
	}
	/* the parents' last wait: only processes that have a child here */
	for (i = 0; i < np; i++) {
		struct replay_filter f = {pv[i].pid, 0};

		waited[i] = INT64_MIN;
		for (j = 0; j < np; j++)
			if (j != i && pv[j].ppid == pv[i].pid)
				break;
		if (j == np)
			continue;
		err = replay_walk(s, &f, dot_wait_fn, &waited[i], cause);
		if (err)
			goto out;
	}
	for (i = 0; i < nm; i++)
		nmsgs += mv[i].count;
	for (i = 0; i < np; i++) {
		const struct session_proc *pp =
		    session_proc_find(pv, np, pv[i].ppid);

		if (!pp || pp == &pv[i])
			continue;
		nforks++;
		if (pv[i].end_ns && waited[pp - pv] >= pv[i].end_ns)
			nwaits++;
	}

	fprintf(out,
		"// propel: %zu processes, %zu hosts, %zu message edges "
		"(%" PRId64 " messages), %d forks, %d waits\n",
		np, nh, nm, nmsgs, nforks, nwaits);
	fprintf(out, "// the communication diagram of ");
	fputs(session_path(s), out);
	cmd = session_meta_get(s, "command");
	if (cmd)
		fprintf(out, " (%s)", cmd);
	free(cmd);
	fprintf(out,
		"; render: dot -Tsvg\n"
		"digraph propel {\n"
		"\tgraph [fontname=\"Helvetica\", fontsize=11];\n"
		"\tnode [shape=box, style=rounded, fontname=\"Helvetica\", "
		"fontsize=10];\n"
		"\tedge [fontname=\"Helvetica\", fontsize=9];\n");
	for (h = 0; h < nh; h++) {
		char label[300];

		fprintf(out, "\tsubgraph \"cluster_%zu\" {\n\t\tlabel=", h);
		snprintf(label, sizeof(label), "host %s", hosts[h]);
		dot_str(out, label);
		fprintf(out, ";\n\t\tstyle=dashed;\n");
		for (i = 0; i < np; i++) {
			char end[64], lab[512];

			if (strcmp(pv[i].host ? pv[i].host : "?", hosts[h]))
				continue;
			if (pv[i].signal)
				snprintf(end, sizeof(end), "signal %" PRId64,
					 pv[i].signal);
			else if (pv[i].has_status)
				snprintf(end, sizeof(end), "exit %" PRId64,
					 pv[i].exit_status);
			else
				snprintf(end, sizeof(end), "no exit seen");
			snprintf(lab, sizeof(lab), "%s\npid %" PRId64 "%s\n%s",
				 pv[i].command, pv[i].pid,
				 pv[i].execd ? " (exec)" : "", end);
			fprintf(out, "\t\t\"p%" PRId64 "\" [label=", pv[i].pid);
			dot_str(out, lab);
			fprintf(out, "%s];\n",
				pv[i].signal ? ", color=red, fontcolor=red"
					     : "");
		}
		fprintf(out, "\t}\n");
	}
	for (i = 0; i < nm; i++) {
		const char *color = "gray30", *style = "solid";
		char lab[128];

		for (j = 0; j < sizeof(dot_kinds) / sizeof(dot_kinds[0]); j++)
			if (strcmp(dot_kinds[j].kind, mv[i].kind) == 0) {
				color = dot_kinds[j].color;
				style = dot_kinds[j].style;
			}
		snprintf(lab, sizeof(lab),
			 "%s: %" PRId64 " msgs, %" PRId64 " bytes", mv[i].kind,
			 mv[i].count, mv[i].bytes);
		fprintf(out, "\t\"p%" PRId64 "\" -> \"p%" PRId64 "\" [label=",
			mv[i].from_pid, mv[i].to_pid);
		dot_str(out, lab);
		fprintf(out, ", color=%s, fontcolor=%s, style=%s];\n", color,
			color, style);
	}
	for (i = 0; i < np; i++) {
		const struct session_proc *pp =
		    session_proc_find(pv, np, pv[i].ppid);

		if (!pp || pp == &pv[i])
			continue;
		fprintf(out,
			"\t\"p%" PRId64 "\" -> \"p%" PRId64 "\" "
			"[label=\"fork\", style=dashed, color=gray50, "
			"fontcolor=gray50];\n",
			pp->pid, pv[i].pid);
		if (pv[i].end_ns && waited[pp - pv] >= pv[i].end_ns)
			fprintf(out,
				"\t\"p%" PRId64 "\" -> \"p%" PRId64 "\" "
				"[label=\"wait\", style=dotted, "
				"color=gray50, fontcolor=gray50];\n",
				pv[i].pid, pp->pid);
	}
	if (o && o->calls) {
		int64_t ncalls = 0;

		err = dot_calls_write(s, out, pv, np, &ncalls, cause);
		if (err)
			goto out;
		fprintf(out, "\t// propel: %" PRId64 " calls\n", ncalls);
	}
	fprintf(out, "}\n");
	if (ferror(out))
		err = propel_cause(cause, -EIO, "write error");
out:
	free(hosts);
	free(waited);
	free(mv);
	session_processes_free(pv, np);
	return err;
}

const struct export_format export_dot_format = {
    .name = "dot",
    .takes = EXPORT_CALLS,
    .summary = "the communication diagram for graphviz: processes by host, "
	       "edges for messages, forks, waits",
    .write = dot_write,
};
