/*
 * engine/variance.c - `propel report --variance`: a session's flows
 * (analysis/flows.h, the same per-request units --flows prints) as VAIF
 * units for analysis/variance.c, and what `attach --adaptive` traced
 * (engine/variance-store.c), printed as text or JSON:
 *   {"groups": [{"path", "flows", "cv", "p95_ns"}],
 *    "functions": [{"func", "share", "calls", "patched_at_ns"}],
 *    "patched": N, "total": M}
 * A flow's path is its start function and the functions it enters at its
 * outermost two levels, in order (the request's shape, which the
 * controller traces from the start); a function's own time in a flow is
 * the time of its calls entered and left in that flow, minus their traced
 * callees' and the thread's time away in them (waits for a CPU, with
 * --vitals; sends propel held: a loaded host's preemptions gave a clean
 * nginx's ngx_http_handler 29% of a group's variance); a call that sent or received (its own time is the peer's)
 * gets no share, nor does an event loop's readiness wait (epoll_wait,
 * poll, select: analysis/waits.h), which waits for the next request, not
 * for this one, and a flow's time leaves such waits out -- on Debian's
 * redis-server a flow can hold the loop's wait (the reply is written in
 * the next turn's beforeSleep), which gave epoll_wait 89% of a group's
 * variance and the group a cv of 2.4.  Called by tui/cmd-report-variance.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/trace.h"
#include "analysis/variance.h"
#include "analysis/waits.h"
#include "engine/analysis-load.h"
#include "engine/session.h"
#include "engine/variance-store.h"
#include "engine/variance.h"
#include "share/json.h"
#include "share/log.h"

struct vbuild {
	struct variance_unit *u;
	struct variance_own *own; /* grouped by flow (u[i].own) */
	struct { uint32_t flow; struct variance_own o; } *raw;
	size_t nraw, rawcap;
	int64_t *calls;		  /* per interned function name */
	uint8_t *comm;		  /* per name: 1 it sent or received, 2 an
				   * event loop's wait: no share */
};

static int raw_add(struct vbuild *b, uint32_t flow, uint32_t func, int64_t ns)
{
	if (b->nraw == b->rawcap) {
		size_t cap = b->rawcap ? 2 * b->rawcap : 4096;
		void *n = realloc(b->raw, cap * sizeof(*b->raw));

		if (!n)
			return -ENOMEM;
		b->raw = n;
		b->rawcap = cap;
	}
	b->raw[b->nraw].flow = flow;
	b->raw[b->nraw].o.func = func;
	b->raw[b->nraw++].o.ns = ns;
	return 0;
}

/* The path string of each flow, appended name by name. */
static int path_add(char **ps, size_t *plen, const char *nm)
{
	size_t l = strlen(nm), o = *plen;
	char *n;

	/* consecutive repeats once */
	if (o > l && (*ps)[o - l - 1] == ' ' && !strcmp(*ps + o - l, nm))
		return 0;
	if (o == l && !strcmp(*ps, nm))
		return 0;
	n = realloc(*ps, o + l + 2);
	if (!n)
		return -ENOMEM;
	*ps = n;
	if (o)
		n[o++] = ' ';
	memcpy(n + o, nm, l + 1);
	*plen = o + l;
	return 0;
}

static int build(struct trace *t, const struct flows *f, struct vbuild *b)
{
	size_t nf = f->n;
	int32_t *mindepth = malloc((nf + 1) * sizeof(*mindepth));
	char **pathstr = calloc(nf + 1, sizeof(*pathstr));
	size_t *plen = calloc(nf + 1, sizeof(*plen));
	size_t *cnt = calloc(nf + 2, sizeof(*cnt));
	int64_t *idle = calloc(nf + 1, sizeof(*idle)); /* readiness waits */
	struct { uint32_t ev; int64_t child; } *stk = NULL;
	size_t stkcap = 0, nstr = t->nstr;
	int err = -ENOMEM;

	b->calls = calloc(nstr + 1, sizeof(*b->calls));
	b->comm = calloc(nstr + 1, 1);
	if (!b->comm || !mindepth || !pathstr || !plen || !cnt || !b->calls ||
	    !idle)
		goto out;
	for (size_t i = 1; i < nstr; i++) /* the loop's wait: no request's */
		b->comm[i] = (uint8_t)(waits_readiness(trace_str(t, (uint32_t)i))
				       ? 2 : 0);
	for (size_t i = 0; i < nf; i++)
		mindepth[i] = INT32_MAX;
	for (size_t i = 0; i < t->nev; i++) {
		uint32_t fl = f->of[i];

		if (t->ev[i].kind == TK_ENTRY && fl != TRACE_NONE &&
		    t->ev[i].depth < mindepth[fl])
			mindepth[fl] = t->ev[i].depth;
	}
	for (size_t th = 0; th < t->nth; th++) {
		size_t d = 0, end = t->th[th].first + t->th[th].n;

		for (size_t i = t->th[th].first; i < end; i++) {
			const struct trace_event *e = &t->ev[i];
			uint32_t fl = f->of[i];

			if (e->kind == TK_ENTRY) {
				if (d == stkcap) {
					size_t cap = stkcap ? 2 * stkcap : 256;
					void *n = realloc(stk, cap * sizeof(*stk));

					if (!n)
						goto out;
					stk = n;
					stkcap = cap;
				}
				stk[d].ev = (uint32_t)i;
				stk[d++].child = 0;
				if (e->func < nstr)
					b->calls[e->func]++;
				if (fl != TRACE_NONE &&
				    e->depth <= mindepth[fl] + 1 &&
				    path_add(&pathstr[fl], &plen[fl],
					     trace_str(t, e->func)) < 0)
					goto out;
			} else if ((e->kind == TK_SEND || e->kind == TK_RECV) &&
				   d) {
				/* a call that sends or receives waits on its
				 * peer: the request's edge, not its work */
				if (!b->comm[t->ev[stk[d - 1].ev].func])
					b->comm[t->ev[stk[d - 1].ev].func] = 1;
			} else if (e->kind == TK_EXIT && d) {
				const struct trace_event *en;
				int64_t incl;

				d--;
				en = &t->ev[stk[d].ev];
				/* less the thread's time away (analysis/trace.h:
				 * waits for a CPU, propel's holds) */
				incl = e->ts_ns - en->ts_ns -
				       trace_away_within(t, th, en->ts_ns,
							 e->ts_ns);
				if (d)
					stk[d - 1].child += incl;
				if (fl != TRACE_NONE && f->of[stk[d].ev] == fl &&
				    en->func < nstr && b->comm[en->func] == 2)
					idle[fl] += incl;
				if (fl != TRACE_NONE && f->of[stk[d].ev] == fl &&
				    raw_add(b, fl, en->func, incl - stk[d].child))
					goto out;
			}
		}
	}
	/* grouped by flow (a counting sort) */
	b->own = malloc((b->nraw + 1) * sizeof(*b->own));
	if (!b->own)
		goto out;
	for (size_t i = 0; i < b->nraw; i++)
		cnt[b->raw[i].flow + 1]++;
	for (size_t i = 0; i < nf; i++)
		cnt[i + 1] += cnt[i];
	for (size_t i = 0; i < nf; i++) {
		b->u[i].own = b->own + cnt[i];
		b->u[i].nown = cnt[i + 1] - cnt[i];
		/* its time less the loop's waits inside it */
		b->u[i].start_ns = f->flow[i].first_ts;
		b->u[i].dur_ns = f->flow[i].last_ts - f->flow[i].first_ts -
				 idle[i];
		if (b->u[i].dur_ns < 0)
			b->u[i].dur_ns = 0;
		b->u[i].path = pathstr[i] ? trace_intern(t, pathstr[i]) : 0;
	}
	for (size_t i = 0; i < b->nraw; i++)
		b->own[cnt[b->raw[i].flow]++] = b->raw[i].o;
	for (size_t i = 0; i < b->nraw; i++)
		if (b->own[i].func < nstr && b->comm[b->own[i].func])
			b->own[i].func = UINT32_MAX; /* no share */
	err = 0;
out:
	for (size_t i = 0; pathstr && i < nf; i++)
		free(pathstr[i]);
	free(pathstr);
	free(plen);
	free(mindepth);
	free(cnt);
	free(idle);
	free(stk);
	return err;
}

static const struct variance_patched *
patched_find(const struct variance_patched *p, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].func, name))
			return &p[i];
	return NULL;
}

const char *variance_timing_note(const struct variance_view *vv)
{
	static char buf[320];

	if (!vv->estimated)
		return NULL;
	snprintf(buf, sizeof(buf),
		 "%lld call records (%.0f%% of the events) were dated between "
		 "two stamps (--timing=sampled): a function that computes long "
		 "without a call shares its time with its neighbours; record "
		 "or attach with --timing=exact (as --adaptive does) for shares "
		 "to trust", (long long)vv->estimated,
		 vv->events ? 100.0 * (double)vv->estimated / (double)vv->events
			    : 0.0);
	return buf;
}

static void print(const struct variance_view *vv, int json)
{
	if (json) {
		printf("{\"groups\": [");
		for (size_t i = 0; i < vv->ng; i++) {
			printf("%s{\"path\": ", i ? ", " : "");
			json_str(stdout, vv->g[i].path);
			printf(", \"flows\": %zu, \"cv\": %.4f, \"p95_ns\": %lld, "
			       "\"problem\": %s}",
			       vv->g[i].flows, vv->g[i].cv,
			       (long long)vv->g[i].p95_ns,
			       vv->g[i].problem ? "true" : "false");
		}
		printf("], \"functions\": [");
		for (size_t i = 0; i < vv->nf; i++) {
			printf("%s{\"func\": ", i ? ", " : "");
			json_str(stdout, vv->f[i].func);
			printf(", \"share\": %.4f, \"calls\": %lld, "
			       "\"patched_at_ns\": ",
			       vv->f[i].share, (long long)vv->f[i].calls);
			if (vv->f[i].patched_at_ns >= 0)
				printf("%lld", (long long)vv->f[i].patched_at_ns);
			else
				printf("null");
			printf(", \"group\": %zu}", vv->f[i].group);
		}
		printf("], \"patched\": %zu, \"total\": %lld, "
		       "\"estimated_records\": %lld}\n", vv->patched,
		       (long long)vv->total, (long long)vv->estimated);
		return;
	}
	printf("groups (flows of one path; a problem: cv > %.2g and a std "
	       "dev over %.0f us, or mean above the 95th percentile of all, "
	       "at least %d flows)\n",
	       VARIANCE_CV, VARIANCE_FLOOR_NS / 1000, VARIANCE_MIN_UNITS);
	for (size_t i = 0; i < vv->ng; i++) /* a long path cut (JSON: whole) */
		printf("  %c %3zu  %6zu flows  cv %.3f  p95 %.3f ms  %.160s%s\n",
		       vv->g[i].problem ? '!' : ' ', i, vv->g[i].flows,
		       vv->g[i].cv, vv->g[i].p95_ns / 1e6, vv->g[i].path,
		       strlen(vv->g[i].path) > 160 ? " ..." : "");
	printf("functions by their share of a problem group's variance "
	       "(under %.2g: noise)\n", VARIANCE_NOISE);
	for (size_t i = 0; i < vv->nf && i < 20; i++) {
		const struct variance_view_func *f = &vv->f[i];

		printf("  %5.1f%%  %-32s %8lld calls  group %zu", f->share * 100,
		       f->func, (long long)f->calls, f->group);
		if (f->patched_at_ns >= 0)
			printf("  traced after %.1f s", f->patched_at_ns / 1e9);
		printf("%s\n", f->share < VARIANCE_NOISE ? "  (noise)" : "");
	}
	if (vv->total)
		printf("traced: %zu of %lld functions (%.1f%%)\n", vv->patched,
		       (long long)vv->total, 100.0 * vv->patched / vv->total);
	if (vv->estimated)
		printf("timing: %s\n", variance_timing_note(vv));
}

int variance_report(const char *db, int json, char **cause)
{
	struct session *s = NULL;
	struct variance_view vv;
	int err;

	memset(&vv, 0, sizeof(vv));
	err = session_open(db, SESSION_READ, &s, cause);
	if (!err)
		err = variance_view_load(s, &vv, cause);
	if (!err)
		print(&vv, json);
	variance_view_release(&vv);
	session_close(s);
	return err;
}

/* ---- the same, kept for a browser (tui/view-variance.c) ---- */

struct variance_view_priv {
	struct trace *t;
	struct flows *f;
	struct vbuild b;
	struct variance v;
};

void variance_view_release(struct variance_view *vv)
{
	struct variance_view_priv *p = vv->priv;

	if (p) {
		variance_release(&p->v);
		free(p->b.u);
		free(p->b.own);
		free(p->b.raw);
		free(p->b.calls);
		free(p->b.comm);
		if (p->f)
			flows_free(p->f);
		if (p->t)
			trace_free(p->t);
		free(p);
	}
	free(vv->g);
	free(vv->f);
	memset(vv, 0, sizeof(*vv));
}

/* Per function of t, when the controller began to trace it, in the
 * trace's time (its first call recorded), 0 for one traced from the
 * start or never by the controller; NULL: none traced late (or ENOMEM). */
static int64_t *traced_since(const struct trace *t,
			     const struct variance_patched *pt, size_t np)
{
	int64_t *from = NULL, *first;
	size_t late = 0;

	for (size_t i = 0; i < np; i++)
		late += pt[i].at_ns > 0;
	if (!late || !(first = calloc(t->nstr + 1, sizeof(*first))))
		return NULL;
	for (size_t i = 0; i < t->nev; i++) {
		const struct trace_event *e = &t->ev[i];

		if (e->kind == TK_ENTRY && e->func < t->nstr &&
		    (!first[e->func] || e->ts_ns < first[e->func]))
			first[e->func] = e->ts_ns;
	}
	from = calloc(t->nstr + 1, sizeof(*from));
	for (uint32_t f = 1; from && f < t->nstr; f++) {
		const struct variance_patched *q =
			patched_find(pt, np, trace_str(t, f));

		if (q && q->at_ns > 0)
			from[f] = first[f];
	}
	free(first);
	return from;
}

int variance_view_load(struct session *s, struct variance_view *out,
		       char **cause)
{
	struct variance_view_priv *p = calloc(1, sizeof(*p));
	struct variance_patched *pt = NULL;
	size_t np = 0;
	int64_t total = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (!p)
		return -ENOMEM;
	out->priv = p;
	err = analysis_load(s, &p->t, cause);
	if (!err && (err = analysis_flows(s, p->t, &p->f)))
		propel_cause(cause, err, "flows");
	if (!err) {
		err = variance_store_load(session_db(s), &pt, &np, &total);
		if (err == -ENOENT)
			err = 0; /* not --adaptive: no patched_at */
	}
	if (!err && !(p->b.u = calloc(p->f->n + 1, sizeof(*p->b.u))))
		err = -ENOMEM;
	if (!err)
		err = build(p->t, p->f, &p->b);
	if (!err) {
		int64_t *from = traced_since(p->t, pt, np);

		err = variance_analyze(p->b.u, p->f->n, (uint32_t)p->t->nstr,
				       from, &p->v);
		free(from);
	}
	if (!err) {
		out->g = calloc(p->v.ng + 1, sizeof(*out->g));
		out->f = calloc(p->v.nf + 1, sizeof(*out->f));
		if (!out->g || !out->f)
			err = -ENOMEM;
	}
	for (size_t i = 0; !err && i < p->v.ng; i++)
		out->g[i] = (struct variance_view_group){
			.path = trace_str(p->t, p->v.g[i].path),
			.flows = p->v.g[i].n,
			.cv = p->v.g[i].cv,
			.p95_ns = p->v.g[i].p95_ns,
			.problem = p->v.g[i].problem,
		};
	for (size_t i = 0; !err && i < p->v.nf; i++) {
		const char *nm = trace_str(p->t, p->v.f[i].func);
		const struct variance_patched *q = patched_find(pt, np, nm);

		out->f[i] = (struct variance_view_func){
			.func = nm,
			.share = p->v.f[i].share,
			.calls = p->b.calls[p->v.f[i].func],
			.group = p->v.f[i].group,
			.patched_at_ns = q ? q->at_ns : -1,
		};
	}
	if (!err) {
		char *est = session_meta_get(s, "estimated_records");

		out->ng = p->v.ng;
		out->nf = p->v.nf;
		out->patched = np;
		out->total = total;
		out->estimated = est ? strtoll(est, NULL, 10) : 0;
		out->events = (int64_t)p->t->nev;
		free(est);
	}
	variance_patched_free(pt, np);
	if (err == -ENOMEM)
		propel_cause(cause, err, "out of memory");
	return err;
}

int variance_view_slow(const struct variance_view *vv, size_t fi,
		       int64_t *event, size_t *flow, int64_t *dur_ns)
{
	const struct variance_view_priv *p = vv->priv;
	const struct trace *t;
	uint32_t func, path;
	size_t best = SIZE_MAX, i, k;
	int64_t own = -1;

	if (!p || fi >= vv->nf)
		return -ENOENT;
	t = p->t;
	func = p->v.f[fi].func;
	path = p->v.g[p->v.f[fi].group].path;
	for (i = 0; i < p->f->n; i++) { /* the slowest flow that calls it */
		const struct variance_unit *u = &p->b.u[i];

		if (u->path != path ||
		    (best != SIZE_MAX && u->dur_ns <= p->b.u[best].dur_ns))
			continue;
		for (k = 0; k < u->nown && u->own[k].func != func; k++)
			;
		if (k < u->nown)
			best = i;
	}
	if (best == SIZE_MAX)
		return -ENOENT;
	/* its longest call in that flow (each thread's stack of entries
	 * pairs an exit with its entry) */
	*event = 0;
	for (size_t th = 0; th < t->nth; th++) {
		size_t end = t->th[th].first + t->th[th].n, d = 0, cap = 0;
		size_t *stk = NULL;

		for (i = t->th[th].first; i < end; i++) {
			const struct trace_event *e = &t->ev[i];

			if (e->kind == TK_ENTRY) {
				if (d == cap) {
					size_t nc = cap ? 2 * cap : 64;
					size_t *n = realloc(stk, nc * sizeof(*n));

					if (!n)
						break;
					stk = n;
					cap = nc;
				}
				stk[d++] = i;
			} else if (e->kind == TK_EXIT && d) {
				const struct trace_event *en = &t->ev[stk[--d]];

				if (en->func == func && p->f->of[stk[d]] == best &&
				    e->ts_ns - en->ts_ns > own) {
					own = e->ts_ns - en->ts_ns;
					*event = en->id;
				}
			}
		}
		free(stk);
	}
	if (!*event)
		return -ENOENT;
	*flow = best + 1;
	*dur_ns = p->b.u[best].dur_ns;
	return 0;
}
