/*
 * analysis/rootcause.c - see analysis/rootcause.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rootcause.h"
#include "analysis/suspects.h"
#include "analysis/waits.h"

/*
 * Idle: a process still alive when the trace ends (no exit, no signal)
 * whose thread's last event is inside a wait for input (analysis/waits.h:
 * a readiness wait, an accept, a read or receive, a wait for a child or a
 * signal) that it has waited in before, by the same call path, and come back
 * from: its loop's wait for work, a daemon between requests when the
 * recording ended, not a stop.  A wait it never came back from before
 * (a worker stuck in a read inside its handler) still counts, as does
 * one blocked in a write, a lock or a sleep.
 */
static int rootcause_idle(const struct trace *t, size_t thread)
{
	const struct trace_thread *th = &t->th[thread];
	const struct trace_event *last = &t->ev[th->first + th->n - 1];
	const struct trace_process *p;
	uint32_t open = last->kind == TK_ENTRY ? last->path : last->after;
	const char *fn;
	size_t i;

	p = trace_process_get(t, th->pid);
	if ((p && (p->exited || p->signal)) || !open)
		return 0;
	for (i = th->first; i < th->first + th->n; i++)
		if (t->ev[i].kind == TK_SIGNAL ||
		    t->ev[i].kind == TK_PROCESS_EXIT)
			return 0;
	fn = trace_str(t, t->path[open].func);
	if (!waits_input(fn))
		return 0;
	for (i = th->first; i + 1 < th->first + th->n; i++) /* came back */
		if (t->ev[i].kind == TK_EXIT && t->ev[i].path == open)
			return 1;
	return 0;
}

void rootcause_failstop(const struct trace *t, int64_t precision_ns, double z,
			struct rootcause_failstop *out)
{
	struct rf_proc {
		int64_t pid, last_ts;
		int64_t at; /* last_ts on the common end (below) */
		size_t thread; /* the thread to report */
		int clean, signalled;
	} *pr;
	size_t np = 0, i, k, n, nlive = 0, cand = (size_t)-1;
	double sum = 0, sq = 0, mean, sd;
	int64_t end = 0;

	memset(out, 0, sizeof(*out));
	pr = calloc(t->nth + 1, sizeof(*pr));
	if (!pr)
		return;
	for (k = 0; k < t->nth; k++) {
		const struct trace_thread *th = &t->th[k];
		const struct trace_event *last;
		int sig = 0, clean = 0;

		if (!th->n)
			continue;
		last = &t->ev[th->first + th->n - 1];
		for (i = th->first; i < th->first + th->n; i++) {
			if (t->ev[i].kind == TK_SIGNAL)
				sig = 1;
			if (t->ev[i].kind == TK_PROCESS_EXIT && t->ev[i].arg == 0)
				clean = 1;
		}
		for (i = 0; i < np && pr[i].pid != th->pid; i++)
			;
		if (i == np) {
			pr[np].pid = th->pid;
			pr[np].last_ts = last->ts_ns;
			pr[np].thread = k;
			np++;
		} else if ((sig && !pr[i].signalled) ||
			   (sig == pr[i].signalled &&
			    last->ts_ns > pr[i].last_ts)) {
			pr[i].thread = k;
		}
		if (last->ts_ns > pr[i].last_ts)
			pr[i].last_ts = last->ts_ns;
		pr[i].signalled |= sig;
		pr[i].clean |= clean;
	}
	for (i = 0; i < np; i++) {
		const struct trace_process *p = trace_process_get(t, pr[i].pid);

		if (p) /* what the session saw of its end wins */
			pr[i].clean = p->exited && p->status == 0 && !p->signal;
		if (pr[i].signalled)
			pr[i].clean = 0;
		nlive += !pr[i].clean;
		if (p && p->stop_ns > end)
			end = p->stop_ns;
	}
	/* a process whose tracing was switched off (the end of an attach
	 * stops them one after another, tens of ms apart under load) is
	 * judged by its silence before its own stop: its last event moved by
	 * the time it was stopped before the last one (three-tier: a busy
	 * nginx stopped first was a fail-stop beside the backends); and its
	 * silence does not count the time it was away (analysis/trace.h: it
	 * waited for a CPU, 80 ms in a write on a loaded host, or propel held
	 * it), which moves its last event later by that much */
	for (i = 0; i < np; i++) {
		const struct trace_process *p = trace_process_get(t, pr[i].pid);
		int64_t own = t->end_ts;

		pr[i].at = pr[i].last_ts;
		if (p && p->stop_ns > 0 && !p->exited && !p->signal &&
		    p->stop_ns >= pr[i].last_ts) {
			pr[i].at += end - p->stop_ns;
			own = p->stop_ns;
		}
		if (!pr[i].clean && !pr[i].signalled)
			pr[i].at += trace_away_within(t, pr[i].thread,
						      pr[i].last_ts, own);
	}
	/* the population: processes that did not end cleanly (daemons still
	 * running, crashed, killed), when two or more; a helper's clean exit
	 * dates its end, not the system's */
	for (i = 0, n = 0; i < np; i++)
		if (nlive < 2 || !pr[i].clean) {
			sum += (double)pr[i].at;
			n++;
		}
	out->nproc = n;
	if (n < 2) {
		free(pr);
		return;
	}
	mean = sum / (double)n;
	for (i = 0; i < np; i++)
		if (nlive < 2 || !pr[i].clean)
			sq += ((double)pr[i].at - mean) *
			      ((double)pr[i].at - mean);
	sd = sqrt(sq / (double)n);
	out->mean_ns = mean;
	out->sd_ns = sd;
	for (i = 0; i < np; i++)
		if (!pr[i].clean && !rootcause_idle(t, pr[i].thread) &&
		    (cand == (size_t)-1 || pr[i].at < pr[cand].at))
			cand = i;
	if (cand != (size_t)-1 &&
	    mean - (double)pr[cand].at > (double)precision_ns &&
	    mean - (double)pr[cand].at >= z * sd) {
		const struct trace_thread *th = &t->th[pr[cand].thread];
		const struct trace_event *last = &t->ev[th->first + th->n - 1];
		size_t j;

		out->found = 1;
		out->pid = pr[cand].pid;
		out->tid = th->tid;
		out->ts_ns = pr[cand].last_ts;
		out->stack = last->after;
		if (last->kind == TK_EXIT)
			out->stack = last->after;
		out->last_func = out->stack ? t->path[out->stack].func : 0;
		/* no frame open: the function of the last call seen */
		for (j = th->first + th->n; !out->last_func && j-- > th->first;)
			if (t->ev[j].kind == TK_ENTRY || t->ev[j].kind == TK_EXIT)
				out->last_func = t->ev[j].func;
	}
	free(pr);
}

uint32_t rootcause_failstop_event(const struct trace *t,
				  const struct rootcause_failstop *fs)
{
	size_t k;

	if (!fs->found)
		return TRACE_NONE;
	for (k = 0; k < t->nth; k++)
		if (t->th[k].pid == fs->pid && t->th[k].tid == fs->tid &&
		    t->th[k].n)
			return (uint32_t)(t->th[k].first + t->th[k].n - 1);
	return TRACE_NONE;
}

void rootcause_release(struct rootcause *rc)
{
	size_t i;

	for (i = 0; i < rc->n; i++)
		free(rc->p[i].last);
	free(rc->p);
	memset(rc, 0, sizeof(*rc));
}

struct rc_item {
	int side;
	uint32_t k, parentk;
	const struct profiles_entry *e;
	const struct profile *from;
	int keep;
	int variation;
	size_t seen;
};

static int rc_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int rc_group_cmp(const void *a, const void *b)
{
	const struct rc_item *x = a, *y = b;

	if (x->side != y->side)
		return x->side - y->side;
	if (x->parentk != y->parentk)
		return x->parentk < y->parentk ? -1 : 1;
	if (x->e->first_ts != y->e->first_ts)
		return x->e->first_ts < y->e->first_ts ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

static int rc_time_cmp(const void *a, const void *b)
{
	const struct rootcause_path *x = *(struct rootcause_path *const *)a;
	const struct rootcause_path *y = *(struct rootcause_path *const *)b;

	if (x->variation != y->variation)
		return x->variation - y->variation;
	if (x->rel_ts != y->rel_ts)
		return x->rel_ts < y->rel_ts ? -1 : 1;
	if (x->side != y->side)
		return x->side - y->side;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int rc_len_cmp(const void *a, const void *b)
{
	const struct rootcause_path *x = *(struct rootcause_path *const *)a;
	const struct rootcause_path *y = *(struct rootcause_path *const *)b;

	if (x->variation != y->variation)
		return x->variation - y->variation;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return rc_time_cmp(a, b);
}

static int rc_path_cmp(const void *a, const void *b)
{
	const struct rootcause_path *x = a, *y = b;

	return x->rank_time < y->rank_time ? -1 : x->rank_time > y->rank_time;
}

/* Δ of one side: entries of p covered and absent from q. */
static int rc_delta(const struct profile *p, const struct profile *q, int side,
		    struct rc_item **items, size_t *n, size_t *cap)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct profiles_entry *o;

		if (!p->e[i].cov)
			continue;
		o = profiles_find(q, p->e[i].k);
		if (o && o->cov)
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			struct rc_item *m = realloc(*items, nc * sizeof(*m));

			if (!m)
				return -ENOMEM;
			*items = m;
			*cap = nc;
		}
		memset(&(*items)[*n], 0, sizeof(**items));
		(*items)[*n].side = side;
		(*items)[*n].k = p->e[i].k;
		(*items)[*n].e = &p->e[i];
		(*items)[*n].from = p;
		(*items)[*n].keep = 1;
		(*n)++;
	}
	return 0;
}

/* How many of the others (a and nm left out) took path k; *among: how
 * many others there are. */
static size_t rc_seen(uint32_t k, const struct profile *a,
		      const struct profile *nm,
		      const struct profile *const *others, size_t nothers,
		      size_t *among)
{
	size_t i, seen = 0;

	*among = 0;
	for (i = 0; i < nothers; i++) {
		const struct profiles_entry *o;

		if (others[i] == a || others[i] == nm)
			continue;
		(*among)++;
		o = profiles_find(others[i], k);
		seen += o && o->cov;
	}
	return seen;
}

int rootcause_paths(struct profiles_space *sp, const struct profile *a,
		    const struct profile *nm, struct rootcause *out)
{
	return rootcause_paths_among(sp, a, nm, NULL, 0, out);
}

int rootcause_paths_among(struct profiles_space *sp, const struct profile *a,
			  const struct profile *nm,
			  const struct profile *const *others, size_t nothers,
			  struct rootcause *out)
{
	struct rc_item *it = NULL;
	struct rootcause_path **order = NULL;
	uint32_t *set[2] = { NULL, NULL };
	size_t n = 0, cap = 0, nset[2] = { 0, 0 }, i, j;
	int err;

	memset(out, 0, sizeof(*out));
	err = rc_delta(a, nm, 0, &it, &n, &cap);
	if (!err)
		err = rc_delta(nm, a, 1, &it, &n, &cap);
	if (err)
		goto out;
	out->delta_raw = n;
	set[0] = malloc((n + 1) * sizeof(uint32_t));
	set[1] = malloc((n + 1) * sizeof(uint32_t));
	if (!set[0] || !set[1]) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		set[it[i].side][nset[it[i].side]++] = it[i].k;
	qsort(set[0], nset[0], sizeof(uint32_t), rc_u32_cmp);
	qsort(set[1], nset[1], sizeof(uint32_t), rc_u32_cmp);
	/* prefix pruning: a path whose proper prefix is in the same Δ */
	for (i = 0; i < n; i++) {
		const struct trace *t = it[i].from->t;
		uint32_t p = t->path[it[i].e->path].parent;

		it[i].parentk = p ? profiles_space_index(sp, t, p) : TRACE_NONE;
		if (p && it[i].parentk == TRACE_NONE) {
			err = -ENOMEM;
			goto out;
		}
		for (; p; p = t->path[p].parent) {
			uint32_t pk = profiles_space_index(sp, t, p);

			if (pk == TRACE_NONE) {
				err = -ENOMEM;
				goto out;
			}
			if (bsearch(&pk, set[it[i].side], nset[it[i].side],
				    sizeof(uint32_t), rc_u32_cmp)) {
				it[i].keep = 0;
				break;
			}
		}
	}
	for (i = 0, j = 0; i < n; i++)
		if (it[i].keep)
			it[j++] = it[i];
	n = j;
	out->delta_pruned = n;
	/* normal variations: Δa taken by another flow, Δn by few */
	for (i = 0; nothers && i < n; i++) {
		size_t among;

		it[i].seen = rc_seen(it[i].k, a, nm, others, nothers, &among);
		it[i].variation = among && (it[i].side == 0
						    ? it[i].seen > 0
						    : 2 * it[i].seen < among);
	}
	/* merging: same side, same parent */
	qsort(it, n, sizeof(*it), rc_group_cmp);
	out->p = calloc(n + 1, sizeof(*out->p));
	if (!out->p) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i = j) {
		struct rootcause_path *rp = &out->p[out->n++];
		const struct trace *t = it[i].from->t;

		for (j = i + 1; j < n && it[j].side == it[i].side &&
				it[j].parentk == it[i].parentk;
		     j++)
			;
		rp->side = it[i].side;
		rp->t = t;
		rp->path = it[i].e->path;
		rp->len = t->path[rp->path].len;
		rp->first_ts = it[i].e->first_ts;
		rp->rel_ts = rp->first_ts - it[i].from->first_ts;
		rp->last = malloc((j - i) * sizeof(*rp->last));
		if (!rp->last) {
			err = -ENOMEM;
			goto out;
		}
		rp->variation = 1;
		for (rp->nlast = 0; rp->nlast < j - i; rp->nlast++) {
			const struct rc_item *m = &it[i + rp->nlast];

			rp->last[rp->nlast] = t->path[m->e->path].func;
			rp->variation &= m->variation;
			if (m->seen > rp->seen)
				rp->seen = m->seen;
		}
	}
	order = malloc((out->n + 1) * sizeof(*order));
	if (!order) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < out->n; i++)
		order[i] = &out->p[i];
	qsort(order, out->n, sizeof(*order), rc_len_cmp);
	for (i = 0; i < out->n; i++)
		order[i]->rank_length = i + 1;
	qsort(order, out->n, sizeof(*order), rc_time_cmp);
	for (i = 0; i < out->n; i++)
		order[i]->rank_time = i + 1;
	qsort(out->p, out->n, sizeof(*out->p), rc_path_cmp);
out:
	free(order);
	free(set[0]);
	free(set[1]);
	free(it);
	if (err)
		rootcause_release(out);
	return err;
}

int rootcause_window(const struct trace *t, int64_t pid, int64_t window_ns,
		     int64_t *start, int64_t *end)
{
	struct profiles_space sp = { 0 };
	struct suspects_score *sc = NULL;
	uint32_t *of = NULL;
	int64_t *pids = NULL, t0 = INT64_MAX, w;
	size_t np = 0, i, a = 0;
	int err;

	if (window_ns <= 0)
		return -EINVAL;
	err = profiles_units_by_process(t, &of, &pids, &np);
	if (err)
		return err;
	for (i = 0; i < np && pids[i] != pid; i++)
		;
	a = i;
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].ts_ns < t0)
			t0 = t->ev[i].ts_ns;
	err = -ENOENT;
	sc = calloc(np + 1, sizeof(*sc));
	if (a == np || !sc)
		goto out;
	for (w = t0; w <= t->end_ts; w += window_ns) {
		struct profile *p = NULL;
		int e2;

		e2 = profiles_build_window(&sp, t, of, np, w, w + window_ns, &p);
		if (!e2)
			e2 = suspects_score(p, np, NULL, 0, PROFILES_TIME, 0, sc);
		profiles_free(p, np);
		if (e2) {
			err = e2;
			break;
		}
		if (sc[a].rank == 1 && sc[a].score > 0) {
			*start = w;
			*end = w + window_ns;
			err = 0;
			break;
		}
	}
out:
	profiles_space_release(&sp);
	free(sc);
	free(of);
	free(pids);
	return err;
}
