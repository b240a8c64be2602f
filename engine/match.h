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

/*
 * The matched messages of a session summed per (sending pid, receiving
 * pid, channel kind): count = matched recvs (rows of messages), bytes =
 * their bytes; kind is the chan's prefix ("tcp", "udp", "unix", "pipe").
 * Ordered by (from, to, kind).  For the communication diagram
 * (engine/export-dot.c) and anything else that draws who talked to whom.
 */
struct match_total {
	int64_t from_pid, to_pid;
	char kind[8];
	int64_t count, bytes;
};
/* 0 and *out (malloc'd, *n rows; NULL when none), or -EIO/-ENOMEM with
 * *cause. */
int match_totals(struct session *s, struct match_total **out, size_t *n,
		 char **cause);

#endif
