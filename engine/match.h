/*
 * engine/match.h - pairing every recv with the send that holds its first
 * byte, across the processes of a session (the communication-pair edges
 * of the flows, the `match` of `propel replay`).
 *
 * Reads the comm table (engine/session.h, written by engine/ingest.c) and
 * rewrites the messages table:
 *   streams (tcp, pipe, unix stream): by chan, dir and offset ranges: the
 *       send of the same channel and direction with offset <= the recv's
 *       offset < offset + bytes;
 *   datagrams (udp, unix datagram): by chan, dir, length and content hash,
 *       the k-th recv of an identity with the k-th send of it in time
 *       order (a datagram lost in between shifts duplicates of identical
 *       content: documented limit).
 * A recv whose sender was not traced (or whose channel the agent could not
 * name) stays unmatched.  Called by ingest_dir inside its transaction.
 */
#ifndef PROPEL_ENGINE_MATCH_H
#define PROPEL_ENGINE_MATCH_H

#include <stdint.h>

struct session;

struct match_stats {
	uint64_t sends, recvs, matched;
};

/* 0, or -errno with *cause. */
int match_session(struct session *s, struct match_stats *st, char **cause);

#endif
