/*
 * engine/chunk-cache.h - the chunked form's decoded-chunk cache, for
 * engine/reconstruct.c only (every other caller goes through
 * engine/reconstruct.h's recon_get and friends).
 *
 * A lazy thread's events are its chunks (struct recon_chunkref, in
 * th->ck, from the store's index); chunk_cache_slot() decodes one into
 * one of RECON_CACHE slots (least recently used first out) and resolves
 * match/up within it; chunk_cache_get() finishes those that lie in other
 * chunks.  A slot, and what it points into, is valid until the next call
 * that may decode.
 */
#ifndef PROPEL_ENGINE_CHUNK_CACHE_H
#define PROPEL_ENGINE_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct chunk_thread;
struct recon;
struct recon_ev;
struct recon_thread;
struct session_event;

struct recon_chunkref {
	size_t ci;	     /* in the store's index */
	int64_t base;	     /* index of its first event in the thread */
	int64_t count, first_seq;
	int64_t lo_ts, hi_ts; /* its events' order times lie in [lo, hi] */
	int32_t depth_min;
	int32_t kinds;	     /* -1 unknown */
};
struct recon_slot {
	int t; /* -1 empty */
	size_t k;
	struct recon_ev *ev;
	struct session_event *se; /* the chunk as stored (raw ts, args) */
	int64_t n;
	int raised; /* order times final (lazy_raise) */
	/* for the searches across chunks: the first / last index whose
	 * depth is <= dlo + x (x = 0 .. dhi - dlo), and the first / last gap
	 * (CHUNK_EVENTS / -1 when none) */
	int32_t dlo, dhi, first_lost, last_lost;
	int32_t *first_le, *last_le;
	size_t cap_le;
	uint64_t used;
};


/* The cache and the threads' chunks, from r->store's index (threads not
 * yet in r are added).  0 or -ENOMEM. */
int chunk_cache_load(struct recon *r, char **cause);
/* r's first/last order time, event count, and crashed (a thread ending
 * in a fatal signal). */
void chunk_cache_bounds(struct recon *r);
void chunk_cache_free(struct recon *r);

/* The chunk of th holding index i. */
size_t chunk_cache_chunk_of(const struct recon_thread *th, int64_t i);
/* Chunk k of thread t decoded (NULL when out of memory). */
struct recon_slot *chunk_cache_slot(struct recon *r, int t, size_t k);
/* The event at i with its final order time (NULL when out of memory). */
struct recon_ev *chunk_cache_at_ts(const struct recon *r, int t, int64_t i);
/* The event at i with match and up resolved (recon_get's). */
struct recon_ev chunk_cache_get(const struct recon *r, int t, int64_t i);

/* reconstruct.c's, for chunk_cache_load: a new thread's index. */
int recon_thread_add(struct recon *r, int pid, int tid);

#endif
