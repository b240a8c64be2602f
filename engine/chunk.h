/*
 * engine/chunk.h - the events of a session: written as compressed chunks
 * per thread, read back through one reader that replay, reconstruction,
 * the cursor and the TUI share.
 *
 * A chunk holds up to CHUNK_EVENTS consecutive events of one thread.  Its
 * body (codec CHUNK_CODEC_ZSTD1) is a zstd frame of the events encoded
 * one after the other:
 *
 *     byte  kind | has << 4            (share/kinds.h, SE_* bits)
 *     varint zigzag(ts_ns - previous ts_ns)
 *     varint zigzag(depth - previous depth)     when SE_DEPTH
 *     varint func, varint site                  (row ids, 0 = none)
 *     varint zigzag(arg[i])                     for each SE_ARG<i>
 *
 * ("previous" starts at the chunk's first_ts and 0, so every chunk decodes
 * alone).  The index row (engine/session.h, table chunks) keeps the
 * thread, the ts and id ranges, the depth range, the kinds present (a bit
 * per kind), the count and a 64-bit FNV-1a checksum of the body: enough
 * for engine/reconstruct.c to position, and to skip chunks that cannot hold
 * what it looks for, without decoding them.
 *
 * Reading: chunk_store_open() loads the index (a few rows for millions of
 * events); chunk_iter walks one thread's events in order, decoding a
 * chunk at a time into its own buffer; chunk_store_event() finds one event
 * by id through a cache of CHUNK_CACHE decoded chunks; chunk_store_decode()
 * decodes one chunk into the caller's buffer (engine/reconstruct.c keeps
 * its own cache of them).  A chunk whose
 * checksum or decompression fails, or that a truncated file lost, is
 * skipped: one line on stderr names the thread, the ids and the time range
 * lost (once per chunk), and every other chunk reads as usual.
 * A session without chunks (format 1, or hand-written test sessions) is
 * read from its row form through the same interface.
 */
#ifndef PROPEL_ENGINE_CHUNK_H
#define PROPEL_ENGINE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/session.h"

/* Events per chunk: the writer closes a chunk at CHUNK_WRITE_EVENTS (a
 * step of the TUI into a new chunk decodes one: ~0.4 ms at 16K); readers
 * accept up to CHUNK_EVENTS (sessions written with 64K chunks). */
#define CHUNK_EVENTS 65536
#define CHUNK_WRITE_EVENTS 16384
#define CHUNK_CODEC_ZSTD1 1
#define CHUNK_CACHE 4

/* ---- writing ---- */

struct chunk_writer;

/* A writer that numbers events from session_max_seq() + 1.  0 or -ENOMEM. */
int chunk_writer_new(struct session *s, struct chunk_writer **out);
/* Start the events of a thread (the previous thread's are flushed). */
int chunk_writer_thread(struct chunk_writer *w, int64_t pid, int64_t tid);
/* Append one event (ev->id is ignored); returns its id (> 0) or -EIO. */
int64_t chunk_writer_add(struct chunk_writer *w, const struct session_event *ev);
/* Store the pending chunk.  0 or -EIO. */
int chunk_writer_flush(struct chunk_writer *w);
/* The id the next event will get; rewinding to such an id forgets the
 * pending chunk and numbers from there again (the caller deletes what
 * was stored past it: engine/ingest.c's one-walk ingest). */
int64_t chunk_writer_next(const struct chunk_writer *w);
void chunk_writer_rewind(struct chunk_writer *w, int64_t seq);
void chunk_writer_free(struct chunk_writer *w);

/* ---- reading ---- */

struct chunk_store;

struct chunk_thread {
	int64_t pid, tid;
	int64_t count; /* events in its chunks (or rows) */
	int64_t first_ts, last_ts;
	size_t first, n; /* its chunks in the index */
};

int chunk_store_open(struct session *s, struct chunk_store **out,
		     char **cause);
void chunk_store_free(struct chunk_store *cs);

/* Threads that have events, by their first event's ts, then pid, tid
 * (the row form: in the order of their first id). */
const struct chunk_thread *chunk_store_threads(struct chunk_store *cs,
					       size_t *n);
/* Say a damaged chunk in a message kept here (chunk_store_message)
 * instead of on stderr: for a caller that owns the terminal (the TUI). */
void chunk_store_quiet(struct chunk_store *cs, int on);
/* The last damage message and how many there were so far (NULL, 0). */
const char *chunk_store_message(const struct chunk_store *cs,
				uint64_t *count);

/* 0 unless the session has chunks of events and not one of them is
 * readable: then -ENODATA with one line for them all ("the session holds
 * no readable events: ..."), none per chunk.  Decodes chunks until the
 * first good one, kept in the cache.  replay_walk calls it, so replay,
 * export and report refuse such a session alike.  A session without
 * events (a vitals session) passes. */
int chunk_store_check(struct chunk_store *cs, char **cause);
/* The same on a store of its own, for a command that checks before it
 * writes anything (replay's header, export's first bytes). */
int chunk_session_check(struct session *s, char **cause);

/* Events lost to damage so far (skipped chunks). */
int64_t chunk_store_lost(const struct chunk_store *cs);
/* 1 when the events are read from the row form (table events). */
int chunk_store_rows_form(const struct chunk_store *cs);

/* The chunk index, ordered by (pid, tid, first_seq): a thread's chunks
 * are chunk_thread.first .. first + n - 1.  Empty for the row form. */
const struct session_chunk *chunk_store_index(const struct chunk_store *cs,
					      size_t *n);
/* The chunk holding event id: 0 and *ci, or -ENOENT. */
int chunk_store_find(const struct chunk_store *cs, int64_t id, size_t *ci);
/* Decode chunk ci into ev (room for CHUNK_EVENTS events): the count, or
 * -1 when it is damaged (said once on stderr, counted as lost). */
int64_t chunk_store_decode(struct chunk_store *cs, size_t ci,
			   struct session_event *ev);

/* One event by id: 0, -ENOENT (no such id, or in a damaged chunk). */
int chunk_store_event(struct chunk_store *cs, int64_t id,
		      struct session_event *ev, int64_t *pid, int64_t *tid);

struct chunk_iter {
	struct chunk_store *cs;
	int64_t pid, tid;
	size_t ci, cend;		/* next chunk to decode, end */
	struct session_event *buf;	/* the decoded chunk */
	int64_t i, n;
	struct session_rows *rows;	/* row form */
	struct session_event row;
};

/* Walk the events of (pid, tid).  0 or -errno. */
int chunk_iter_init(struct chunk_iter *it, struct chunk_store *cs, int64_t pid,
		    int64_t tid);
/* 1 and *ev (valid until the next call), 0 at the end, -EIO for a row
 * form that cannot be read. */
int chunk_iter_next(struct chunk_iter *it, const struct session_event **ev);
void chunk_iter_release(struct chunk_iter *it);

#endif
