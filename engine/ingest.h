/*
 * engine/ingest.h - from a session directory of ring and map files (written
 * by the agent, formats in share/ring.h and share/record.h) into the session
 * store (engine/session.h).
 *
 * ingest_dir() reads every <pid>.<nonce>.map and <pid>.<nonce>.<tid>.ring in
 * the directory, symbolizes functions and call sites (engine/symbols.h),
 * converts TSC to CLOCK_MONOTONIC ns, rebuilds the call depth of every
 * thread (including the frames whose entries a wrapped ring overwrote) and
 * inserts processes, threads, functions, callsites and event chunks in one
 * transaction.  Damaged input is skipped and counted, never fatal: the
 * caller prints ingest_warning() when it returns non-zero.
 *
 * Called by `propel record` / `propel attach` (and the tests) once the
 * traced processes are done or detached.
 */
#ifndef PROPEL_ENGINE_INGEST_H
#define PROPEL_ENGINE_INGEST_H

#include <stddef.h>
#include <stdint.h>

struct session;
struct symbols;

struct ingest_stats {
	uint64_t processes;	  /* process images (map files) */
	uint64_t threads;	  /* rings read */
	uint64_t events;	  /* events stored (engine/chunk.h) */
	uint64_t functions;
	uint64_t callsites;
	uint64_t wrapped;	  /* threads whose oldest records were overwritten */
	uint64_t rebuilt_frames;  /* entries rebuilt for overwritten frames */
	uint64_t lost_records;	  /* sum of LOST records' counts */
	uint64_t rings_nospace;	  /* rings cut short by a full /dev/shm */
	uint64_t estimated;	  /* call records dated between two stamps
				   * (--timing=sampled), not by their own */
	/* damage, tolerated */
	uint64_t rings_truncated; /* file shorter than its header says */
	uint64_t rings_corrupt;	  /* bad magic or header */
	uint64_t rings_unbegun;	  /* all zeros: made, never begun (not damage) */
	uint64_t rings_newer;	  /* written by a newer propel: skipped */
	uint64_t unknown_records; /* unknown type, stray ARG, or a LOST whose
				   * depth change exceeds what it dropped */
	uint64_t killed;	  /* process images with no E line */
	uint64_t orphan_rings;	  /* ring with no map file */
	uint64_t bad_map_lines;
	uint64_t agent_warnings;  /* W lines: the agent reported a problem */
	char agent_warning[256];  /* the first of them, with its pid */
	double tsc_hz;
	int tsc_measured;	  /* 1: rate measured here, not from the rings */
	double seconds;		  /* wall time of ingest_dir */
};

/*
 * Read dir into s.  Returns 0 (damage counted in *st), or -errno with
 * *cause when the directory cannot be read or the store refuses a write
 * (then nothing of dir is kept).
 */
int ingest_dir(struct session *s, const char *dir, struct ingest_stats *st,
	       char **cause);

/*
 * The same for the directory of another host (propel's --follow,
 * engine/follow.c): its processes get host as their host, and offset_ns
 * is added to every time (that host's CLOCK_MONOTONIC to the
 * coordinator's).  Call it once per host into the same session: each call
 * matches the whole session again, so messages between hosts pair up.
 */
int ingest_dir_host(struct session *s, const char *dir, const char *host,
		    int64_t offset_ns, struct ingest_stats *st, char **cause);

/*
 * ingest_dir with the symbols cache sy (engine/symbols.h), which it uses
 * and leaves to the caller: one warmed while the run went
 * (engine/ingest-warm.h) has the lookups of its map files made.
 */
int ingest_dir_symbols(struct session *s, const char *dir,
		       struct symbols *sy, struct ingest_stats *st,
		       char **cause);

/*
 * One line (no newline) describing the damage counted in st, into buf.
 * Returns 1 when there is something to warn about, 0 (and buf = "") if not.
 */
int ingest_warning(const struct ingest_stats *st, char *buf, size_t size);

/*
 * Write the recording's meta: command (argv joined, shell-quoted where
 * needed), host (uname nodename), created_ns (CLOCK_REALTIME).  0 or -EIO.
 */
int ingest_write_meta(struct session *s, int argc, char *const *argv);

/*
 * Did the traced program crash?  1 if some process image ended without a
 * clean exit and one of its threads' last event is a signal (then *signo,
 * *pid get that signal and process), 0 if not, -errno on a store error.
 * Also stored by ingest_dir as meta "crashed".
 */
int ingest_crashed(struct session *s, int *signo, int *pid);

#endif
