/*
 * engine/ingest-warm.h - the symbol work of an ingest done while the
 * traced program runs.
 *
 * The names and lines ingest_map (engine/ingest-map.c) looks up cost most
 * when a module's debug information is first read (libc's compressed
 * .debug_* sections: tens of ms per propel process), and the map files
 * that name the addresses are written at the agent's start.  A warm-up
 * thread, started with the drain, follows the session directory's map
 * files as they grow and makes the same lookups into a struct symbols
 * (a cache: engine/symbols.h); at the end of the run the ingest is given
 * that struct and finds them made.  Nothing it computes is stored by it:
 * the ingest still asks for every name, so a line the thread did not see
 * (written after its last round) is looked up then, as before.
 *
 * The thread runs at a lower priority than the drain and the program
 * (nice +10 where allowed).  ingest_warm_stop joins it (a lookup under
 * way is finished, none is begun after) and hands over the symbols.
 */
#ifndef PROPEL_ENGINE_INGEST_WARM_H
#define PROPEL_ENGINE_INGEST_WARM_H

struct ingest_warm;
struct symbols;

/* Start following dir's *.map files.  0, or -errno (nothing started). */
int ingest_warm_start(const char *dir, struct ingest_warm **out);

/* Stop the thread; the symbols it made (the caller frees them with
 * symbols_free), NULL when w is NULL or none were made. */
struct symbols *ingest_warm_stop(struct ingest_warm *w);

/* One round, synchronously (for tests): the lines of dir's map files not
 * read yet.  Returns how many lines were read. */
int ingest_warm_round(struct ingest_warm *w);

/* A warm-up without a thread, for ingest_warm_round (tests). */
struct ingest_warm *ingest_warm_new(const char *dir);

#endif
