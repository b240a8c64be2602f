/*
 * engine/reconstruct.h - per-thread call trees rebuilt from a session's
 * events (TraceBack §4.3.1), and the global interleaving of all threads and
 * processes by time, ordered by happens-before where matched messages give
 * it (TraceBack §4.3.2, §5).
 *
 * Memory: one compact array of struct recon_ev per thread (32 bytes an
 * event), filled by one pass over each thread's chunks (engine/chunk.h);
 * everything else (site, args, real ts) is read on demand by id through
 * the chunk reader's cache.
 *
 * Invariants after recon_load():
 *   - each thread's array is well nested: every exit has its entry (an
 *     entry lost to a wrapped ring is rebuilt from the exit record as a
 *     synthetic entry, flags RECON_F_SYNTH, id -1, at the front, so the
 *     oldest surviving events sit at their true depth); an entry whose
 *     exit never came (crash, trace end) has match -1.
 *   - depth is rebuilt, not trusted: entry/exit of a frame have its depth
 *     (0 = outermost); any other event has the depth of its enclosing
 *     frame + 1 (0 when outside every frame), i.e. its indent in the tree.
 *     Where ingest stored a different depth for an entry/exit, the count
 *     is kept in recon_thread.depth_fixed.
 *   - ts is the *order* time: ts_ns, raised where needed so that it never
 *     decreases within a thread and a matched recv comes after its send.
 *
 * Callers: engine/cursor.c, tui/ (views, cmd-tui.c), tests.
 */
#ifndef PROPEL_ENGINE_RECONSTRUCT_H
#define PROPEL_ENGINE_RECONSTRUCT_H

#include <stddef.h>
#include <stdint.h>

struct session;
struct chunk_store;

#define RECON_F_SYNTH 0x01  /* entry rebuilt from a wrapped ring's exit */
#define RECON_F_FOLDED 0x02 /* entry folded in the trace view (UI state) */

struct recon_ev {
	int64_t ts;    /* order time, ns */
	int64_t id;    /* events.id; -1 for a synthetic entry */
	uint32_t func; /* functions.id; 0 when unknown */
	int32_t match; /* entry <-> exit partner index; -1 none */
	int32_t up;    /* index of the innermost entry enclosing this event
			* (for an entry or exit: its caller's entry); -1 none */
	int16_t depth;
	uint8_t kind; /* enum session_kind */
	uint8_t flags;
};

struct recon_thread {
	int pid, tid;
	char *name;
	struct recon_ev *ev;
	int64_t n, cap;
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
	} *msgs, *byrecv;
	int64_t nmsgs;
	int64_t nevents;
	int64_t first_ts, last_ts;
	int crashed; /* meta crashed = 1, or a fatal signal event */
	int hang;    /* meta reason = hang: a snapshot of a hung program */
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

/* "name" for a function id ("?" when unknown; "0x..." never NULL) */
const char *recon_func_name(const struct recon *r, uint32_t func);

/* Entry index of the frame the event at idx is in: itself for an entry,
 * its partner for an exit, else ev[idx].up.  -1 outside every frame. */
int64_t recon_frame(const struct recon_thread *th, int64_t idx);

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
};
int recon_row(const struct recon *r, int64_t id, struct recon_row *row);

#endif
