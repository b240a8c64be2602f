/*
 * engine/flow-map.h - the flow (analysis/flows.h, as `propel report
 * --flows` numbers them, from 0 here) of every event of a session, in the
 * memory its messages take rather than its calls: the flows are built on
 * the events that can cut a thread (engine/analysis-load.h,
 * analysis_load_cuts), and every other event has the flow of the latest
 * such event of its thread.
 *
 * Used by the exports: --flow N (engine/export.c) and the OTLP export's
 * trace per flow (engine/export-otlp.c).  A walker follows a replay_walk
 * (engine/replay.h), any filter, any number of passes.
 */
#ifndef PROPEL_ENGINE_FLOW_MAP_H
#define PROPEL_ENGINE_FLOW_MAP_H

#include <stddef.h>
#include <stdint.h>

struct session;
struct replay_event;
struct flows_opts;

#define FLOW_MAP_NONE ((uint32_t)-1) /* an event of no flow */

struct flow_map;

/* fo NULL: the session's own options (engine/analysis-load.h,
 * analysis_flows_opts).  0 and *out, or -errno with *cause (one line). */
int flow_map_build(struct session *s, const struct flows_opts *fo,
		   struct flow_map **out, char **cause);
void flow_map_free(struct flow_map *m);

size_t flow_map_count(const struct flow_map *m);
/* The session fell back to one flow per process (no messages). */
int flow_map_per_process(const struct flow_map *m);

/* Follows a replay_walk: zero it, then flow_map_step on every event the
 * walk gives, in its order. */
struct flow_map_walk {
	int have;
	int64_t pid, tid;
	size_t th;	/* the walked thread in the map, (size_t)-1 unknown */
	size_t next;	/* its next kept event */
	uint32_t seen;	/* its events so far */
	uint32_t flow;	/* the last event's flow */
};

/* The flow of ev, the walk's next event. */
uint32_t flow_map_step(const struct flow_map *m, struct flow_map_walk *w,
		       const struct replay_event *ev);

#endif
