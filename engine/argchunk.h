/*
 * engine/argchunk.h - the argument registers `record|attach --args`
 * recorded, stored compressed: table argchunks holds up to ARGCHUNK_N
 * entries' registers a row, (first, last, n, body), first and last the
 * entry events' ids, body a zstd frame of
 *
 *     varint (id - previous id)                  (previous: first)
 *     varint zigzag(reg[i] - previous reg[i])    for rdi, rsi, rdx, rcx,
 *                                                r8, r9 (previous: 0)
 *
 * per entry, ids ascending.  One row per ARGCHUNK_N entries (or a
 * thread's end) instead of a row per call: a sqlite row per call cost
 * about 500 ns, four times uftrace's whole `record -a` per call.
 * Sessions written before (table argvals, a row per entry) read through
 * the same reader (engine/callvals.c).
 */
#ifndef PROPEL_ENGINE_ARGCHUNK_H
#define PROPEL_ENGINE_ARGCHUNK_H

#include <sqlite3.h>
#include <stdint.h>

#define ARGCHUNK_N 16384

struct argchunk_writer;

/* A writer into db's table argchunks.  0, -ENOMEM or -EIO. */
int argchunk_writer_new(sqlite3 *db, struct argchunk_writer **out);
/* Entry event id's six registers; ids ascending.  0 or -EIO. */
int argchunk_add(struct argchunk_writer *w, int64_t id, const uint64_t *reg);
/* Store what is pending (a thread's end; NULL: nothing).  0 or -EIO. */
int argchunk_flush(struct argchunk_writer *w);
/* Forget the pending entries from id seq on (ingest's undone walk; it
 * deletes the stored rows with first >= seq itself). */
void argchunk_rewind(struct argchunk_writer *w, int64_t seq);
void argchunk_writer_free(struct argchunk_writer *w);

struct argchunk_reader;

/* A reader of db's argchunks, or of its argvals rows when it has no
 * argchunks (an older session).  0 and *out (NULL: neither table has a
 * row: recorded without --args), or -ENOMEM. */
int argchunk_reader_open(sqlite3 *db, struct argchunk_reader **out);
/* Entry event id's registers into reg[6]: 1, or 0 when none were
 * recorded (or its row is damaged). */
int argchunk_get(struct argchunk_reader *r, int64_t id, uint64_t *reg);
void argchunk_reader_free(struct argchunk_reader *r);

#endif
