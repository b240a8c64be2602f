/*
 * engine/chan.h - the channels of one process image: its map file's C lines
 * (written by the agent, inject/agent/comm.c) turned into the strings the
 * session keeps for every send and recv.
 *
 *   C <id> <type> <local addr hex|-> <local port> <peer addr hex|-> <peer port>
 *     <local inode> <peer inode>
 *
 * chan names the channel the same way at both ends (DESIGN.md, "Command
 * line"): tcp:/udp: both endpoints, the lower first ("tcp:10.0.0.1:5000>
 * 10.0.0.2:80"; IPv6 as [addr]:port), pipe:<inode>, unix:<inode>-<inode>
 * for a stream (the lower first), unix:<inode of the receiving socket> for
 * a datagram.  A UNIX stream the agent saw only before the server accepted
 * it has no peer inode: unix:<inode>-? (peer "unix:?"), until
 * engine/match.c names it from the accepting end's events.  dir tells the two directions of a channel apart: 0 when the
 * data flows from the first endpoint of chan, 1 otherwise (pipes and UNIX
 * datagrams have one direction, 0).  peer is the other end as the program
 * sees it ("127.0.0.1:8080", "pipe", "unix:<inode>").
 *
 * Used by engine/ingest.c (one table per process image); engine/match.c
 * pairs the events by (chan, dir).
 */
#ifndef PROPEL_ENGINE_CHAN_H
#define PROPEL_ENGINE_CHAN_H

#include <stdint.h>

struct chan_info {
	char *chan;
	char *peer;
	int send_dir, recv_dir;
	int stream; /* offsets (tcp, pipe, unix stream) */
};

struct chan_table {
	struct chan_info *v; /* by id; chan NULL = no line seen */
	uint32_t n;
};

/* Parse one C line into t: 0, -EINVAL (malformed), -ENOMEM. */
int chan_table_line(struct chan_table *t, const char *line);
/* The channel with that id, or NULL. */
const struct chan_info *chan_table_get(const struct chan_table *t, uint32_t id);
void chan_table_release(struct chan_table *t);

#endif
