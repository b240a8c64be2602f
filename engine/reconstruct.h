/*
 * engine/reconstruct.h - per-thread call trees rebuilt from a session's
 * events (TraceBack §4.3.1), and the global interleaving of all threads and
 * processes by time, ordered by happens-before where matched messages give
 * it (TraceBack §4.3.2, §5).
 *
 * Two forms, one interface (every caller goes through recon_get(),
 * recon_match(), recon_up(): never through th->ev directly):
 *
 *   chunked (format 2, any size): lazy.  recon_load() reads the chunk
 *     index (engine/chunk.h) and the small tables only; a thread's events
 *     are decoded a chunk at a time into a cache of RECON_CACHE decoded
 *     chunks (LRU, 32 bytes an event), so memory does not grow with the
 *     session.  Depth is the stored depth (engine/ingest.c writes the
 *     agent's shadow depth, after its own rebuild of a wrapped ring's lost
 *     entries); match and up follow from it: an entry at depth d ends at
 *     the first later event of depth <= d (its exit if that is an exit of
 *     depth d, else it never returns), and an event's caller is the last
 *     earlier event of depth < its own (an entry, else none).  Both are
 *     found in the chunk first, else by walking the chunk index, where a
 *     chunk whose depth range stays above the target and that holds no gap
 *     is skipped without decoding.
 *   row form (format 1, hand-written test sessions): eager.  One array of
 *     struct recon_ev per thread in th->ev, depth rebuilt by a stack:
 *     entry/exit of a frame have its depth (0 = outermost); any other
 *     event has the depth of its enclosing frame + 1; an entry lost to a
 *     wrapped ring is rebuilt from the exit record as a synthetic entry
 *     (RECON_F_SYNTH, id -1, at the front); where the stored depth of an
 *     entry/exit differed, recon_thread.depth_fixed counts it.
 *
 * In both: a gap (a LOST event: records the agent dropped, share/ring.h)
 * is a barrier -- no frame open before it is matched to an exit after it,
 * and no event after it has a caller before it (its depth, the depth the
 * agent says the thread had after the gap, stays as the indent).  An
 * entry whose exit never came (crash, trace end, a gap) has match -1.
 * ts is the *order* time: ts_ns, raised where needed so that it never
 * decreases within a thread and a matched recv comes after its send (in
 * the chunked form a recv is raised above its send's ts_ns, within its
 * chunk's time range).
 *
 * Callers: engine/cursor.c, tui/ (views, tui.c), tests.
 */
#ifndef PROPEL_ENGINE_RECONSTRUCT_H
#define PROPEL_ENGINE_RECONSTRUCT_H

#include <stddef.h>
#include <stdint.h>

struct session;
struct chunk_store;

#define RECON_F_SYNTH 0x01 /* entry rebuilt from a wrapped ring's exit */
#define RECON_CACHE 16	   /* decoded chunks kept (chunked form) */

struct recon_ev {
	int64_t ts;    /* order time, ns */
	int64_t id;    /* events.id; -1 for a synthetic entry */
	uint32_t func; /* functions.id; 0 when unknown */
	int32_t match; /* entry <-> exit partner index; -1 none
			* (read through recon_get / recon_match) */
	int32_t up;    /* index of the innermost entry enclosing this event
			* (for an entry or exit: its caller's entry); -1 none */
	int16_t depth;
	uint8_t kind; /* enum propel_kind, share/kinds.h */
	uint8_t flags;
};

struct recon_chunkref; /* engine/chunk-cache.h: a chunk of a lazy thread */

struct recon_thread {
	int pid, tid;
	char *name;
	struct recon_ev *ev; /* the row form only (NULL when lazy) */
	int64_t n, cap;      /* events (with synthetic entries) */
	struct recon_chunkref *ck; /* the chunked form: its chunks */
	size_t nck;
	int nsynth;        /* synthetic entries at the front */
	int64_t depth_fixed; /* entries/exits whose stored depth differed */
	int wrapped;       /* ring wrapped (threads.wrapped or orphan exits) */
};

struct recon_func {
	char *name;
	char *file;
	int line;
};

struct recon {
	struct session *session;
	struct chunk_store *store; /* the events (engine/chunk.h) */
	struct recon_thread *threads;
	int nthreads;
	struct recon_func *funcs; /* indexed by functions.id */
	uint32_t nfuncs;
	/* matched messages as (thread, index) pairs, sorted by send side and
	 * (in byrecv) by recv side, for binary search */
	struct recon_msg {
		int st, rt;
		int64_t si, ri;
		int64_t sid; /* the send's event id */
	} *msgs, *byrecv;
	int64_t nmsgs;
	int64_t nevents;
	int64_t first_ts, last_ts;
	int crashed; /* meta crashed = 1, or a fatal signal event */
	int hang;    /* meta reason = hang: a snapshot of a hung program */
	int lazy;    /* chunked form: events decoded on demand */
	struct recon_slot *slots; /* the decoded chunks (RECON_CACHE) */
	uint64_t tick;
	int64_t *stack; /* chunk_cache_slot's */
	void *map;	/* the slots' buffers and the stack */
	size_t maplen;
	int64_t decodes; /* chunks decoded so far (tests, bench) */
};

/* Load a session's events.  0, or -errno with *cause. */
int recon_load(struct session *s, struct recon **out, char **cause);
void recon_free(struct recon *r);

/* thread index for (pid, tid), or -1 */
int recon_thread_find(const struct recon *r, int pid, int tid);
/* (thread, index) of an event id; 0 or -ENOENT */
int recon_locate(const struct recon *r, int64_t id, int *thread,
		 int64_t *idx);
/* Last index in thread t with ts <= ts_ns; -1 if all are later. */
int64_t recon_at_ts(const struct recon *r, int t, int64_t ts_ns);

/* The event at index i (0 <= i < n) of thread t, with match and up
 * resolved.  By value: a later call may evict the chunk it came from. */
struct recon_ev recon_get(const struct recon *r, int t, int64_t i);
/* Its order time alone: no match or caller looked up (the trace pane's
 * call durations). */
int64_t recon_ts(const struct recon *r, int t, int64_t i);
/* Its entry <-> exit partner, its caller's entry (-1 for none). */
int64_t recon_match(const struct recon *r, int t, int64_t i);
int64_t recon_up(const struct recon *r, int t, int64_t i);
/* The first index >= from (dir > 0) or <= from (dir < 0) in thread t
 * whose event has a kind in kinds (bits 1 << kind) and for which pred
 * (NULL: any) says 1; chunks without such a kind are skipped undecoded.
 * -1 when there is none. */
int64_t recon_scan(const struct recon *r, int t, int64_t from, int dir,
		   int kinds, int (*pred)(const struct recon_ev *, void *),
		   void *arg);

/* The kinds (bits 1 << kind) thread t may have at or after ts (dir > 0),
 * at or before it (dir < 0), from the chunk index alone; -1 when not
 * known (the row form, an early format-2 file). */
int recon_kinds_from(const struct recon *r, int t, int64_t ts, int dir);

/* "name" for a function id ("?" when unknown; "0x..." never NULL) */
const char *recon_func_name(const struct recon *r, uint32_t func);

/* Entry index of the frame the event at idx is in: itself for an entry,
 * its partner for an exit, else ev[idx].up.  -1 outside every frame. */
int64_t recon_frame(const struct recon *r, int t, int64_t idx);

/* The other end of a matched send or recv at (t, idx); 0 or -ENOENT. */
int recon_peer(const struct recon *r, int t, int64_t idx, int *ot,
	       int64_t *oidx);

/*
 * Global order: the event after / before (t, idx) over all threads, by
 * (ts, thread, index).  0, or -ENOENT at either end.
 */
int recon_global_next(const struct recon *r, int t, int64_t idx, int *nt,
		      int64_t *nidx);
int recon_global_prev(const struct recon *r, int t, int64_t idx, int *nt,
		      int64_t *nidx);

/* Source location of an event: the call site for an entry or exit (the
 * line in the caller), the function's declaration otherwise; for a signal
 * with a pc, the caller may do better with symbols.  0 or -ENOENT;
 * *file is malloc'd. */
int recon_event_site(const struct recon *r, int t, int64_t idx, char **file,
		     int *line);

/* Fetch the raw row of an event (real ts_ns and args). 0 or -ENOENT. */
struct recon_row {
	int64_t ts_ns, arg0, arg1, arg2;
	int64_t site;
	int stored_depth;
	int has; /* SE_ARG0.. (engine/session.h): which args were stored */
};
int recon_row(const struct recon *r, int64_t id, struct recon_row *row);

#endif
