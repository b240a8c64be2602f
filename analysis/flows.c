/*
 * analysis/flows.c - see analysis/flows.h.
 *
 * Extra (non intra-thread) edges are kept in CSR form: out[] lists each
 * event's extra successors, indeg[] counts its extra predecessors.  The
 * walk from a start is an explicit stack; an event joins the first flow
 * that reaches it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows-start.h"
#include "analysis/flows.h"
#include "analysis/lifecycle.h"
#include "share/log.h"

void flows_directive_release(struct flows_directive *d)
{
	free(d->func[0]);
	free(d->func[1]);
	memset(d, 0, sizeof(*d));
}

/* "FUNC:entry,argN" or "FUNC:exit,ret" (spaces around parts allowed). */
static int flows_side(const char *s, size_t n, struct flows_directive *d,
		      int side)
{
	const char *colon, *comma, *end = s + n;
	char what[16], val[16];
	size_t fl, wl, vl;

	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	colon = memchr(s, ':', (size_t)(end - s));
	if (!colon || colon == s)
		return -EINVAL;
	comma = memchr(colon, ',', (size_t)(end - colon));
	if (!comma)
		return -EINVAL;
	fl = (size_t)(colon - s);
	wl = (size_t)(comma - colon - 1);
	vl = (size_t)(end - comma - 1);
	if (wl >= sizeof(what) || vl >= sizeof(val) || !vl)
		return -EINVAL;
	memcpy(what, colon + 1, wl);
	what[wl] = 0;
	memcpy(val, comma + 1, vl);
	val[vl] = 0;
	if (strcmp(what, "entry") == 0 && strncmp(val, "arg", 3) == 0 &&
	    isdigit((unsigned char)val[3]) && !val[4] && val[3] - '0' <= 5) {
		d->exit[side] = 0;
		d->arg[side] = val[3] - '0';
	} else if (strcmp(what, "exit") == 0 && strcmp(val, "ret") == 0) {
		d->exit[side] = 1;
		d->arg[side] = -1;
	} else {
		return -EINVAL;
	}
	d->func[side] = strndup(s, fl);
	return d->func[side] ? 0 : -ENOMEM;
}

int flows_directive_parse(const char *spec, struct flows_directive *d,
			  char **cause)
{
	const char *arrow = strstr(spec, "->");
	int err;

	memset(d, 0, sizeof(*d));
	if (!arrow)
		goto bad;
	err = flows_side(spec, (size_t)(arrow - spec), d, 0);
	if (!err)
		err = flows_side(arrow + 2, strlen(arrow + 2), d, 1);
	if (err == -ENOMEM) {
		flows_directive_release(d);
		return err;
	}
	if (!err)
		return 0;
bad:
	flows_directive_release(d);
	return propel_cause(cause, -EINVAL,
			    "directive '%s': expected "
			    "FUNC:entry,argN -> FUNC:exit,ret",
			    spec);
}

void flows_free(struct flows *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++)
		free(f->flow[i].pids);
	free(f->flow);
	free(f->of);
	free(f);
}

struct flows_edges {
	size_t *head;	/* head[i] .. head[i + 1]: out[] of event i */
	uint32_t *out;
	uint32_t *indeg;
	/* building: pairs (from, to) */
	uint32_t (*pair)[2];
	size_t npair, cap;
};

static int flows_edge(struct flows_edges *g, uint32_t from, uint32_t to)
{
	if (g->npair == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 256;
		void *n = realloc(g->pair, nc * sizeof(*g->pair));

		if (!n)
			return -ENOMEM;
		g->pair = n;
		g->cap = nc;
	}
	g->pair[g->npair][0] = from;
	g->pair[g->npair][1] = to;
	g->npair++;
	return 0;
}

static int flows_side_is(const struct trace *t, const struct trace_event *e,
			 const struct flows_directive *d, int side)
{
	return e->kind == (d->exit[side] ? TK_EXIT : TK_ENTRY) &&
	       (e->has_val & 1) &&
	       strcmp(trace_str(t, e->func), d->func[side]) == 0;
}

static const struct trace *flows_left_trace;

/* left events by (pid, value, time, index) */
static int flows_left_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct trace_event *x = &flows_left_trace->ev[i];
	const struct trace_event *y = &flows_left_trace->ev[j];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->val[0] != y->val[0])
		return x->val[0] < y->val[0] ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* (pid, value, time) of e against left event l: <0, 0, >0 */
static int flows_left_key(const struct trace_event *e,
			  const struct trace_event *l)
{
	if (e->pid != l->pid)
		return e->pid < l->pid ? -1 : 1;
	if (e->val[0] != l->val[0])
		return e->val[0] < l->val[0] ? -1 : 1;
	return e->ts_ns < l->ts_ns ? -1 : 0;
}

/* The directive's edges: right event <- latest left one before it (at the
 * same time: the last in trace order), same process and value.  The left
 * events sorted by (pid, value, time), a binary search per right one. */
static int flows_directive_edges(const struct trace *t,
				 const struct flows_directive *d,
				 struct flows_edges *g, size_t *nedges)
{
	uint32_t *left = NULL;
	size_t nl = 0, i;
	int err = 0;

	left = malloc((t->nev + 1) * sizeof(*left));
	if (!left)
		return -ENOMEM;
	for (i = 0; i < t->nev; i++)
		if (flows_side_is(t, &t->ev[i], d, 0))
			left[nl++] = (uint32_t)i;
	flows_left_trace = t;
	qsort(left, nl, sizeof(*left), flows_left_cmp);
	for (i = 0; i < t->nev && !err; i++) {
		const struct trace_event *r = &t->ev[i];
		size_t lo = 0, hi = nl;

		if (!flows_side_is(t, r, d, 1))
			continue;
		while (lo < hi) { /* the first left after (pid, val, ts) */
			size_t mid = (lo + hi) / 2;

			if (flows_left_key(r, &t->ev[left[mid]]) >= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && left[lo - 1] == i)
			lo--; /* not itself (one function on both sides) */
		if (lo > 0 && t->ev[left[lo - 1]].pid == r->pid &&
		    t->ev[left[lo - 1]].val[0] == r->val[0]) {
			err = flows_edge(g, left[lo - 1], (uint32_t)i);
			(*nedges)++;
		}
	}
	free(left);
	return err;
}

static int flows_thread_of_tid(const struct trace *t, int64_t tid,
			       size_t *out)
{
	size_t i;

	for (i = 0; i < t->nth; i++)
		if (t->th[i].tid == tid && t->th[i].n) {
			*out = i;
			return 1;
		}
	return 0;
}

/*
 * The rest of a message: a recv whose first byte is in the send that held
 * the first byte of its thread's previous recv on the same channel, with
 * no send of the thread on the channel between (a message read in several
 * recvs).  It is no new message: the thread does not switch flows there
 * (no edge from the send, so no cut).  Known channels only
 * (trace_event.arg).  One pass: per channel, the thread's last send or
 * recv on it.  cont[i] = 1 for those.  0 or -ENOMEM.
 */
static int flows_continued(const struct trace *t, uint8_t *cont)
{
	size_t nc = t->nstr + 1, i;
	uint32_t *th = malloc(nc * sizeof(*th)), *m = malloc(nc * sizeof(*m));
	uint8_t *kind = calloc(nc, 1);

	if (!th || !m || !kind) {
		free(th);
		free(m);
		free(kind);
		return -ENOMEM;
	}
	memset(th, 0xff, nc * sizeof(*th));
	for (i = 0; i < t->nev; i++) {
		const struct trace_event *e = &t->ev[i];
		size_t c = (size_t)e->arg;

		if ((e->kind != TK_RECV && e->kind != TK_SEND) || e->arg <= 0 ||
		    c >= nc)
			continue;
		cont[i] = e->kind == TK_RECV && e->match != TRACE_NONE &&
			  th[c] == e->thread && kind[c] == TK_RECV &&
			  m[c] == e->match;
		th[c] = e->thread;
		kind[c] = e->kind;
		m[c] = e->match;
	}
	free(th);
	free(m);
	free(kind);
	return 0;
}

static int flows_graph(const struct trace *t, const struct flows_opts *o,
		       struct flows_edges *g, size_t *ndir)
{
	size_t i, k, c;
	uint8_t *cont = calloc(t->nev + 1, 1);
	int err = cont ? flows_continued(t, cont) : -ENOMEM;

	for (i = 0; i < t->nev && !err; i++) {
		const struct trace_event *e = &t->ev[i];

		if (e->kind == TK_RECV && e->match != TRACE_NONE && !cont[i])
			err = flows_edge(g, e->match, (uint32_t)i);
		else if (e->kind == TK_FORK && flows_thread_of_tid(t, e->arg, &k))
			err = flows_edge(g, (uint32_t)i,
					 (uint32_t)t->th[k].first);
	}
	/* a new thread: from its creator's last event before it */
	for (k = 0; k < t->nth && !err; k++) {
		const struct trace_thread *th = &t->th[k];
		const struct trace_event *f;
		size_t p;

		if (!th->n || th->tid == th->pid)
			continue;
		f = &t->ev[th->first];
		for (p = 0; p < t->nth; p++) {
			const struct trace_thread *pt = &t->th[p];
			size_t lo = 0, hi = pt->n;

			if (p == k || pt->pid != th->pid ||
			    (f->kind == TK_THREAD_START ? pt->tid != f->arg
							 : pt->tid != th->pid))
				continue;
			while (lo < hi) { /* first event after f */
				size_t mid = (lo + hi) / 2;

				if (t->ev[pt->first + mid].ts_ns <= f->ts_ns)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > 0)
				err = flows_edge(g, (uint32_t)(pt->first + lo - 1),
						 (uint32_t)th->first);
			break;
		}
	}
	free(cont);
	for (i = 0; i < o->ndir && !err; i++)
		err = flows_directive_edges(t, &o->dir[i], g, ndir);
	if (err)
		return err;
	g->head = calloc(t->nev + 1, sizeof(*g->head));
	g->indeg = calloc(t->nev + 1, sizeof(*g->indeg));
	g->out = malloc((g->npair + 1) * sizeof(*g->out));
	if (!g->head || !g->indeg || !g->out)
		return -ENOMEM;
	for (c = 0; c < g->npair; c++) {
		g->head[g->pair[c][0] + 1]++;
		g->indeg[g->pair[c][1]]++;
	}
	for (i = 0; i < t->nev; i++)
		g->head[i + 1] += g->head[i];
	{
		size_t *fill = malloc((t->nev + 1) * sizeof(*fill));

		if (!fill)
			return -ENOMEM;
		memcpy(fill, g->head, (t->nev + 1) * sizeof(*fill));
		for (c = 0; c < g->npair; c++)
			g->out[fill[g->pair[c][0]]++] = g->pair[c][1];
		free(fill);
	}
	return 0;
}

static int flows_is_func_start(const struct trace *t,
			       const struct flows_opts *o,
			       const struct trace_event *e)
{
	return e->kind == TK_ENTRY &&
	       strcmp(trace_str(t, e->func), o->start_func) == 0;
}

/* The skipped channels' string indices (those the trace holds). */
static uint32_t *flows_skip(const struct trace *t, const struct flows_opts *o,
			    size_t *n)
{
	uint32_t *v = malloc((o->nskip + 1) * sizeof(*v));
	size_t i, k;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < o->nskip; i++)
		for (k = 1; k < t->nstr; k++)
			if (o->skip_chan[i] && !strcmp(t->str[k], o->skip_chan[i])) {
				v[(*n)++] = (uint32_t)k;
				break;
			}
	return v;
}

static int flows_i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Counts, times and pids of each flow from of[]. */
static int flows_summarize(const struct trace *t, struct flows *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		f->flow[i].first_ts = INT64_MAX;
		f->flow[i].last_ts = INT64_MIN;
	}
	for (i = 0; i < t->nev; i++) {
		struct flows_flow *fl;
		const struct trace_event *e = &t->ev[i];
		size_t p;

		if (f->of[i] == TRACE_NONE)
			continue;
		fl = &f->flow[f->of[i]];
		fl->nevents++;
		if (e->ts_ns < fl->first_ts)
			fl->first_ts = e->ts_ns;
		if (e->ts_ns > fl->last_ts)
			fl->last_ts = e->ts_ns;
		for (p = 0; p < fl->npids && fl->pids[p] != e->pid; p++)
			;
		if (p == fl->npids) {
			int64_t *n = realloc(fl->pids,
					     (fl->npids + 1) * sizeof(*n));

			if (!n)
				return -ENOMEM;
			fl->pids = n;
			fl->pids[fl->npids++] = e->pid;
		}
	}
	for (i = 0; i < f->n; i++)
		qsort(f->flow[i].pids, f->flow[i].npids, sizeof(int64_t),
		      flows_i64_cmp);
	return 0;
}

/* One flow per process, in order of the process's first event. */
static int flows_per_process(const struct trace *t, struct flows *f)
{
	size_t i, k;

	f->per_process = 1;
	for (k = 0; k < t->nth; k++) {
		const struct trace_thread *th = &t->th[k];
		size_t j;

		if (!th->n)
			continue;
		for (j = 0; j < f->n; j++)
			if (t->ev[f->flow[j].start].pid == th->pid)
				break;
		if (j == f->n) {
			struct flows_flow *n = realloc(
				f->flow, (f->n + 1) * sizeof(*n));

			if (!n)
				return -ENOMEM;
			f->flow = n;
			memset(&f->flow[f->n], 0, sizeof(f->flow[f->n]));
			f->flow[f->n++].start = (uint32_t)th->first;
		} else if (t->ev[th->first].ts_ns <
			   t->ev[f->flow[j].start].ts_ns) {
			f->flow[j].start = (uint32_t)th->first;
		}
	}
	/* order by start time */
	for (i = 1; i < f->n; i++)
		for (k = i; k > 0 && t->ev[f->flow[k].start].ts_ns <
					     t->ev[f->flow[k - 1].start].ts_ns;
		     k--) {
			struct flows_flow tmp = f->flow[k];

			f->flow[k] = f->flow[k - 1];
			f->flow[k - 1] = tmp;
		}
	for (i = 0; i < t->nev; i++)
		for (k = 0; k < f->n; k++)
			if (t->ev[f->flow[k].start].pid == t->ev[i].pid) {
				f->of[i] = (uint32_t)k;
				break;
			}
	return 0;
}

/* of[] of a set-up or tear-down event while the flows are walked */
#define FLOWS_LIFE (TRACE_NONE - 1)

/* Everything reachable from stack[0..sp) joins flow id.  A root start
 * (is_start 2, analysis/flows-start.h) no other flow enters. */
static void flows_walk(const struct trace *t, const uint8_t *is_start,
		       const struct flows_edges *g, struct flows *f,
		       uint32_t *stack, size_t sp, uint32_t id)
{
	while (sp) {
		uint32_t x = stack[--sp], y;
		const struct trace_thread *th = &t->th[t->ev[x].thread];
		size_t c;

		/* the intra-thread edge, unless the rules cut it */
		y = x + 1;
		if (y < th->first + th->n && !g->indeg[y] &&
		    !is_start[y] && f->of[y] == TRACE_NONE) {
			f->of[y] = id;
			stack[sp++] = y;
		}
		for (c = g->head[x]; c < g->head[x + 1]; c++) {
			y = g->out[c];
			if (f->of[y] == TRACE_NONE && is_start[y] != 2) {
				f->of[y] = id;
				stack[sp++] = y;
			}
		}
	}
}

/*
 * A recv whose only other predecessor is a send no flow reached (its
 * process was traced from the middle of its work: propagation injected
 * it as the message came) is as if from an untraced sender: it stays in
 * its thread's flow, and what follows with it.  Until nothing changes.
 */
static void flows_orphans(const struct trace *t, const uint8_t *is_start,
			  const struct flows_edges *g, struct flows *f,
			  uint32_t *stack)
{
	int changed;
	size_t k, y;

	do {
		changed = 0;
		for (k = 0; k < t->nth; k++) {
			const struct trace_thread *th = &t->th[k];

			for (y = th->first + 1; y < th->first + th->n; y++) {
				const struct trace_event *e = &t->ev[y];

				if (f->of[y] != TRACE_NONE ||
				    f->of[y - 1] >= f->n /* none, lifecycle */ ||
				    e->kind != TK_RECV || e->match == TRACE_NONE ||
				    g->indeg[y] != 1 ||
				    f->of[e->match] < f->n ||
				    is_start[y])
					continue;
				f->of[y] = f->of[y - 1];
				stack[0] = (uint32_t)y;
				flows_walk(t, is_start, g, f, stack, 1, f->of[y]);
				changed = 1;
			}
		}
	} while (changed);
}

int flows_build(const struct trace *t, const struct flows_opts *o,
		struct flows **out)
{
	static const struct flows_opts none;
	struct flows_edges g = { 0 };
	struct flows *f;
	uint32_t *starts = NULL, *stack = NULL, *skip = NULL;
	uint8_t *is_start = NULL, *life = NULL;
	size_t nstart = 0, nskip = 0, i, s;
	int err = 0, comm = 0;

	if (!o)
		o = &none;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->of = malloc((t->nev + 1) * sizeof(*f->of));
	is_start = calloc(t->nev + 1, 1);
	life = malloc(t->nev + 1);
	starts = malloc((t->nev + 1) * sizeof(*starts));
	skip = flows_skip(t, o, &nskip);
	if (!f->of || !is_start || !life || !starts || !skip ||
	    lifecycle_mark(t, life) < 0) {
		err = -ENOMEM;
		goto out;
	}
	memset(f->of, 0xff, (t->nev + 1) * sizeof(*f->of));
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].kind == TK_SEND || t->ev[i].kind == TK_RECV)
			comm = 1;
	if (o->start_func) {
		f->rule = FLOWS_RULE_FUNC;
		for (i = 0; i < t->nev; i++)
			if (flows_is_func_start(t, o, &t->ev[i]))
				is_start[i] = 1;
	} else if (comm && !o->per_process) {
		err = flows_start_auto(t, skip, nskip, is_start, &nstart,
				       &f->rule);
		if (err)
			goto out;
	}
	nstart = 0;
	for (i = 0; i < t->nev; i++)
		if (is_start[i] && !life[i]) /* no request starts in set-up */
			starts[nstart++] = (uint32_t)i;
	if (o->per_process || (!o->start_func && (!comm || !nstart))) {
		f->rule = FLOWS_RULE_NONE;
		err = flows_per_process(t, f);
		if (!err)
			err = flows_summarize(t, f);
		goto out;
	}
	err = flows_graph(t, o, &g, &f->ndirective_edges);
	if (err)
		goto out;
	/* set-up and tear-down (analysis/lifecycle.h) join no flow: no walk
	 * enters them, and no flow goes on through them */
	for (i = 0; i < t->nev; i++)
		if (life[i])
			f->of[i] = FLOWS_LIFE;
	flows_start_order(t, starts, nstart);
	stack = malloc((t->nev + 1) * sizeof(*stack));
	if (!stack) {
		err = -ENOMEM;
		goto out;
	}
	for (s = 0; s < nstart; s++) {
		size_t sp = 0;
		uint32_t id;

		if (f->of[starts[s]] != TRACE_NONE)
			continue; /* reached by an earlier flow: a reply */
		if (f->n % 64 == 0) {
			struct flows_flow *n = realloc(
				f->flow, (f->n + 64) * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				goto out;
			}
			f->flow = n;
		}
		id = (uint32_t)f->n++;
		memset(&f->flow[id], 0, sizeof(f->flow[id]));
		f->flow[id].start = starts[s];
		f->of[starts[s]] = id;
		stack[sp++] = starts[s];
		flows_walk(t, is_start, &g, f, stack, sp, id);
	}
	flows_orphans(t, is_start, &g, f, stack);
	for (i = 0; i < t->nev; i++)
		if (f->of[i] == FLOWS_LIFE)
			f->of[i] = TRACE_NONE;
	err = flows_summarize(t, f);
out:
	free(starts);
	free(stack);
	free(skip);
	free(is_start);
	free(life);
	free(g.head);
	free(g.out);
	free(g.indeg);
	free(g.pair);
	if (err) {
		flows_free(f);
		return err;
	}
	*out = f;
	return 0;
}

uint32_t flows_start_func(const struct trace *t, const struct flows *f,
			  size_t i)
{
	const struct trace_event *e = &t->ev[f->flow[i].start];

	if (e->kind == TK_ENTRY || e->kind == TK_EXIT)
		return e->func;
	return e->path ? t->path[e->path].func : 0;
}

int flows_kinds(const struct trace *t, const struct flows *f,
		uint32_t **group)
{
	size_t i;

	*group = NULL;
	if (f->per_process)
		return 0;
	*group = malloc((f->n + 1) * sizeof(**group));
	if (!*group)
		return -ENOMEM;
	for (i = 0; i < f->n; i++)
		(*group)[i] = flows_start_func(t, f, i);
	return 0;
}
