/*
 * analysis/flows-start.h - the start events of flows when nobody named
 * them (no --start): chosen from the traffic of the first traced process
 * P, as README.md ("propel report", automatic starts) documents.  Called
 * by analysis/flows.c (flows_build); pure.
 *
 * Roles.  On each channel (trace_event.arg of a send or recv: the
 * interned chan string, 0 = unknown) P is the client when its first
 * event there is a send (it spoke first: it opened the connection), the
 * server when it is a recv.  Channels listed in flows_opts.skip_chan (the
 * operator's terminal and pipes: propel's own stdio) play no role.
 *
 *   server   each recv of P (>= 1 byte) on a channel it serves that
 *            begins a request: one whose first byte a traced send holds
 *            (the message-switch rule: a recv of a traced message is a
 *            new message), or, from an untraced peer, the first recv of
 *            the channel or the first after P sent on it (request,
 *            response, request: keep-alive); a recv on an unknown channel
 *            begins one.  A request after P answered on its channel is a
 *            root (is_start 2): no earlier flow takes it in, though the
 *            traced client that sent it continues from P's answer; the
 *            others (1), like --start's, join an earlier flow that
 *            reaches them (a reply on a pipe of its own)
 *   client   each message P writes on a channel it opened: a send whose
 *            first byte begins a recv of the traced receiver (messages
 *            separated by the message-switch rule on the server side);
 *            with no receiver traced on that channel, the first send or
 *            the first after P received on it.  The start is the call
 *            that produced the message: the outermost frame open at the
 *            send that was entered after the thread's previous message
 *            and returned before its next one (queue_job for a submitter
 *            that sends each job from queue_job); the send itself when no
 *            frame is so.  Messages to traced receivers take precedence
 *            over the others.
 *
 * A process that serves requests is a server whatever it also sends
 * (its sends to a back end are part of the requests): server first, then
 * client; neither: no starts (flows.c falls back to one flow per
 * process).
 */
#ifndef PROPEL_ANALYSIS_FLOWS_START_H
#define PROPEL_ANALYSIS_FLOWS_START_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

enum flows_rule {
	FLOWS_RULE_NONE,	/* no starts: one flow per process */
	FLOWS_RULE_FUNC,	/* each call of --start FUNC */
	FLOWS_RULE_SERVER,	/* each request P receives */
	FLOWS_RULE_CLIENT,	/* each message P sends */
};

/* "none", "start-func", "server", "client" */
const char *flows_rule_name(int rule);

/*
 * Mark the automatic start events in is_start[0..t->nev) (zeroed by the
 * caller; 2 for a root, else 1); skip: interned chan indices to ignore (nskip of them).  The
 * rule used, or FLOWS_RULE_NONE; *nstart counts the marks.  0 or -ENOMEM.
 */
int flows_start_auto(const struct trace *t, const uint32_t *skip,
		     size_t nskip, uint8_t *is_start, size_t *nstart,
		     int *rule);

/* Event indices v[0..n) in time order (then by event id). */
void flows_start_order(const struct trace *t, uint32_t *v, size_t n);

#endif
