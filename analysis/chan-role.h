/*
 * analysis/chan-role.h - who opened a channel: the listening-port rule,
 * the one definition of a TCP (or UDP) channel's requester that the
 * automatic flow starts (analysis/flows-start.c) and the wait-for chains
 * (analysis/hang.c, through engine/hang-load.c) share.  Pure: no I/O.
 *
 * A channel "tcp:E1>E2" (engine/chan.h: both endpoints, named the same at
 * both ends) joins a listening address, which every connection accepted
 * there names, and the connecting end's ephemeral port.  An address is one
 * or the other for the whole session, so the ends of all channels split
 * in two sides, each channel joining one end of each (the graph of ends
 * is bipartite): the listening side is the one with fewer ends (a server
 * accepts many connections; an ephemeral port that Linux reuses for a
 * connection to another server still sits on the clients' side: counting
 * each end's channels alone took it for a listening port -- the submitter
 * of the batch system, its port reused by a shadow's connection to the
 * startd, became the schedd's client-of-record, and the schedd's last
 * notice read as a request the submitter never answered: a "hang" ranked
 * over the shadow's crash).  Where the sides are as many, or a channel
 * joins two ends of one side (an address reused both ways, UDP peers), a
 * channel's server end is the end more other channels share; none more:
 * unknown.  An event whose peer (the other end as its program sees it) is
 * the server end was made by the client, the end that opened the channel.
 * With the role unknown (a single connection, pipes, UNIX sockets)
 * callers fall back to the first speaker -- which a recording that begins
 * mid-conversation (attach under load) misreads.
 *
 * The engine names each event's peer end (chan_role_peer_end, from table
 * comm's peer: engine/analysis-load.c into trace_event.peer_end,
 * engine/hang-load.c into hang_comm.client).
 */
#ifndef PROPEL_ANALYSIS_CHAN_ROLE_H
#define PROPEL_ANALYSIS_CHAN_ROLE_H

#include <stddef.h>
#include <stdint.h>

/* 1 or 2: the end of chan ("tcp:E1>E2", "udp:E1>E2") that peer names;
 * 0 when chan has no such ends or peer is neither. */
int chan_role_peer_end(const char *chan, const char *peer);

/*
 * srv[i] (i < n) = the server end of chan[i]: 1 or 2, the end on the
 * listening side (else the end more other channels share); 0 unknown
 * (not tcp/udp, NULL, or neither).
 * chan[] holds distinct names (other strings are ignored).  0 or -ENOMEM.
 */
int chan_role_servers(const char *const *chan, size_t n, uint8_t *srv);

/* 1: the event with this peer end was made by the channel's client (its
 * peer is the server end srv), 0: by its server, -1: unknown. */
static inline int chan_role_client(uint8_t srv, int peer_end)
{
	if (!srv || peer_end <= 0)
		return -1;
	return peer_end == srv;
}

#endif
