/*
 * analysis/flows.h - flows (self-propelled §3): the events of a trace
 * split into the activities that served one request each.
 *
 * The PDG has an edge from each event to the next of its thread, from a
 * send to each recv it matched (communication-pair rule), from a fork to
 * the child's first event, from a thread's creator to the thread's first
 * event, and from a directive's first event to its second.  An
 * intra-thread edge into a node with another predecessor is removed
 * (message-switch rule: a process changes flow only on a recv).  A recv
 * whose sender was not traced has one predecessor, its thread's previous
 * event, and stays in that event's flow (deg+ = 1, §3.1): a reply from a
 * peer the agent missed is still part of the request that waited for it.
 * So does a recv whose sender no flow reached (a process injected by
 * propagation in the middle of its work), once every start is walked.
 * The rest of a message (a recv whose first byte is in the send that
 * held the first byte of its thread's previous recv on the channel) has
 * no edge from that send: reading one message in several recvs switches
 * no flow.  Start events are cut points as well.
 * Flow i is every event reachable from start event i and not yet in an
 * earlier flow; starts are taken in time order, and a start already
 * reached by an earlier flow (a reply coming back) belongs to that flow,
 * but for a root (flows-start.h: a server's request after it answered on
 * the channel), which no other flow enters.
 *
 * A process's set-up and tear-down (analysis/lifecycle.h: before main,
 * after it returns or exit begins) is in no flow and starts none, unless
 * one flow per process.
 *
 * Starts: each entry of a named function (--start); else chosen from the
 * traffic of the first traced process (trace->first_pid) by
 * analysis/flows-start.h: each request it receives (server) or each
 * message it sends (client); flows->rule says which.  A trace without
 * any, or without communication at all, falls back to one flow per
 * process (flows->per_process = 1, rule FLOWS_RULE_NONE).
 *
 * Directives (§3.2): "FUNC:entry,argN -> FUNC:exit,ret" (either side may
 * be entry,argN or exit,ret).  An event named by the left side and one
 * named by the right side, in the same process, with the same recorded
 * value (trace_event.val[0], has_val bit 0), get an edge from the latest
 * such left event before the right one.  The edges go in before the rule
 * removes intra-thread edges, as the paper does.
 */
#ifndef PROPEL_ANALYSIS_FLOWS_H
#define PROPEL_ANALYSIS_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/flows-start.h"
#include "analysis/trace.h"

struct flows_directive {
	char *func[2];	/* left, right */
	int exit[2];	/* 0: entry, 1: exit */
	int arg[2];	/* argN, or -1 for ret */
};

/* Parse "A:entry,arg0 -> B:exit,ret".  0, or -EINVAL with *cause. */
int flows_directive_parse(const char *spec, struct flows_directive *d,
			  char **cause);
void flows_directive_release(struct flows_directive *d);

struct flows_opts {
	const char *start_func; /* NULL: automatic (flows-start.h) */
	const struct flows_directive *dir;
	size_t ndir;
	int per_process;	/* one flow per process, whatever the trace */
	/* automatic starts: channels (chan strings) that begin no request,
	 * the operator's stdio (meta stdio_chans) */
	const char *const *skip_chan;
	size_t nskip;
};

struct flows_flow {
	uint32_t start;		/* event index */
	size_t nevents;
	int64_t first_ts, last_ts;
	int64_t *pids;		/* sorted, distinct */
	size_t npids;
};

struct flows {
	uint32_t *of;		/* per event: flow index, TRACE_NONE: none */
	struct flows_flow *flow;
	size_t n;
	int per_process;	/* fell back (or asked) to per-process flows */
	int rule;		/* enum flows_rule (analysis/flows-start.h) */
	size_t ndirective_edges;
};

/* The function flow i's start event is in (interned in t; an entry's
 * own, else its innermost open frame's), 0 unknown. */
uint32_t flows_start_func(const struct trace *t, const struct flows *f,
			  size_t i);
/* Each flow's kind of request for the suspect scores (suspects.h): its
 * start function, (*group)[i] (malloc'd; NULL for one flow per process:
 * processes are compared all together).  0 or -ENOMEM. */
int flows_kinds(const struct trace *t, const struct flows *f,
		uint32_t **group);

/* 0, -ENOMEM. */
int flows_build(const struct trace *t, const struct flows_opts *o,
		struct flows **out);
void flows_free(struct flows *f);

#endif
