/*
 * engine/flow-map.c - see engine/flow-map.h.  (Flows the client rule
 * starts, analysis/flows-start.h, begin at calls: those are built on every
 * event.)  The map keeps, per thread
 * of the walk, its kept events' ordinals and flows; an event between two
 * kept ones is joined to the earlier by the thread's intra-thread edge,
 * which only a kept event can cut, so it is in the earlier one's flow.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis/flows.h"
#include "engine/analysis-load.h"
#include "engine/flow-map.h"
#include "engine/replay.h"
#include "share/log.h"

struct flow_map_thread {
	int64_t pid, tid;
	size_t first, n; /* its kept events: cut[first .. first + n) */
};

struct flow_map_cut {
	uint32_t ord, flow;
};

struct flow_map {
	struct flow_map_thread *th;
	size_t nth;
	struct flow_map_cut *cut;
	size_t nflows;
	int per_process;
};

static int flow_map_build_fo(struct session *s, const struct flows_opts *fo,
			     struct flow_map **out, char **cause);

int flow_map_build(struct session *s, const struct flows_opts *fo,
		   struct flow_map **out, char **cause)
{
	struct analysis_fo a;
	int err;

	if (fo)
		return flow_map_build_fo(s, fo, out, cause);
	/* the session's own: as report and the TUI number flows */
	err = analysis_flows_opts(s, &a, cause);
	if (!err)
		err = flow_map_build_fo(s, &a.fo, out, cause);
	if (!err && a.fo.start_func && !flow_map_count(*out)) {
		flow_map_free(*out);
		*out = NULL;
		a.fo.start_func = NULL;
		err = flow_map_build_fo(s, &a.fo, out, cause);
	}
	analysis_flows_opts_release(&a);
	return err;
}

static int flow_map_build_fo(struct session *s, const struct flows_opts *fo,
			     struct flow_map **out, char **cause)
{
	struct flows *fl = NULL;
	struct trace *t = NULL;
	struct flow_map *m;
	uint32_t *ord = NULL;
	size_t i;
	int err;

	err = analysis_load_cuts(s, fo, &t, &ord, cause);
	if (err)
		return err;
	err = flows_build(t, fo, &fl);
	if (!err && fl->rule == FLOWS_RULE_CLIENT) {
		/* its starts are calls, which the cuts leave out: every event */
		flows_free(fl);
		fl = NULL;
		trace_free(t);
		free(ord);
		ord = NULL;
		err = analysis_load_ord(s, &t, &ord, cause);
		if (err)
			return err;
		err = flows_build(t, fo, &fl);
	}
	m = err ? NULL : calloc(1, sizeof(*m));
	if (m) {
		m->th = malloc((t->nth + 1) * sizeof(*m->th));
		m->cut = malloc((t->nev + 1) * sizeof(*m->cut));
	}
	if (!m || !m->th || !m->cut) {
		flow_map_free(m);
		flows_free(fl);
		trace_free(t);
		free(ord);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	for (i = 0; i < t->nth; i++)
		m->th[i] = (struct flow_map_thread){ t->th[i].pid, t->th[i].tid,
						     t->th[i].first,
						     t->th[i].n };
	m->nth = t->nth;
	for (i = 0; i < t->nev; i++)
		m->cut[i] = (struct flow_map_cut){ ord[i], fl->of[i] };
	m->nflows = fl->n;
	m->per_process = fl->per_process;
	flows_free(fl);
	trace_free(t);
	free(ord);
	*out = m;
	return 0;
}

void flow_map_free(struct flow_map *m)
{
	if (!m)
		return;
	free(m->th);
	free(m->cut);
	free(m);
}

size_t flow_map_count(const struct flow_map *m)
{
	return m->nflows;
}

int flow_map_per_process(const struct flow_map *m)
{
	return m->per_process;
}

/* the map's thread for (pid, tid): the walk's threads come in the map's
 * order, so the search starts after the last one */
static size_t flow_map_thread(const struct flow_map *m, size_t after,
			      int64_t pid, int64_t tid)
{
	size_t i, k;

	for (k = 0; k < m->nth; k++) {
		i = (after + 1 + k) % m->nth;
		if (m->th[i].pid == pid && m->th[i].tid == tid)
			return i;
	}
	return (size_t)-1;
}

uint32_t flow_map_step(const struct flow_map *m, struct flow_map_walk *w,
		       const struct replay_event *ev)
{
	const struct flow_map_thread *th;

	if (!w->have || ev->pid != w->pid || ev->tid != w->tid) {
		w->th = flow_map_thread(m, w->have ? w->th : (size_t)-1,
					ev->pid, ev->tid);
		w->have = 1;
		w->pid = ev->pid;
		w->tid = ev->tid;
		w->seen = 0;
		w->flow = FLOW_MAP_NONE;
		w->next = w->th == (size_t)-1 ? 0 : m->th[w->th].first;
	}
	if (w->th == (size_t)-1)
		return FLOW_MAP_NONE;
	th = &m->th[w->th];
	if (w->next < th->first + th->n && m->cut[w->next].ord == w->seen)
		w->flow = m->cut[w->next++].flow;
	w->seen++;
	return w->flow;
}
