/*
 * analysis/chan-role.h - who opened a channel: the listening-port rule,
 * the one definition of a TCP (or UDP) channel's requester that the
 * automatic flow starts (analysis/flows-start.c) and the wait-for chains
 * (analysis/hang.c, through engine/hang-load.c) share.  Pure: no I/O.
 *
 * A channel "tcp:E1>E2" (engine/chan.h: both endpoints, named the same at
 * both ends) has a server end when other channels share it and not the
 * other: a listening address, which every connection accepted there
 * names, while the connecting end is an ephemeral port of its own.  An
 * event whose peer (the other end as its program sees it) is the server
 * end was made by the client, the end that opened the channel.  With no
 * end shared more than the other (a single connection, pipes, UNIX
 * sockets) the role is unknown, and callers fall back to the first
 * speaker -- which a recording that begins mid-conversation (attach
 * under load) misreads.
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
 * srv[i] (i < n) = the server end of chan[i]: 1 or 2, the end more other
 * channels share; 0 unknown (not tcp/udp, NULL, or neither shared more).
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
