/*
 * engine/ingest-live.h - the session stored while `record` runs.
 *
 * In --mode full the drain (share/drain.h) copies each thread's committed
 * sub-buffers to its ring file's spool as the program runs; what is
 * copied will not change.  A thread started with the drain stores it as
 * it comes, into a session file inside the session directory: the map
 * files' lines (processes, functions, call sites symbolized: the work
 * engine/ingest-warm.h did), then the first drained ring's spool, walked
 * in one (engine/ingest.c's "one walk": pass 3) as far as the drain has
 * copied, sub-buffer by sub-buffer.  When the run ends ingest_live_end
 * reads on from there -- the lines and rings that came since, the ring's
 * tail -- with the same code and in the same transaction, so only the
 * tail is left to wait for.  What the session holds is what ingest_dir
 * makes of the directory; the TSC rate is the one measured when the
 * thread began (a 50 ms measure, as ingest_dir's when the rings' own
 * pairs are too close), and ids follow the order things were stored.
 *
 * A walk whose depth turns out to go below its start is undone and
 * walked again at the end (ingest_spec_undo), as ever.  A thread that
 * meets an error stops storing, and an end that fails drops what it
 * stored: the caller then ingests the directory as before, into its own
 * file (with the symbols made so far).  Nothing is begun where the
 * directory's file system has less than 256 MB free (the spools come
 * first).
 * Nothing of the raw trace is changed: propel killed mid-run leaves the
 * directory for `propel recover`, which ignores the session file in it.
 * The thread runs at propel's priority: behind the drain (nice -10), and
 * beside the program, whose idle second core it is meant to use.
 * PROPEL_NO_LIVE_INGEST=1 in record's environment stores the session
 * after the run only, as before (tests/e2e/drain-live.sh compares them).
 */
#ifndef PROPEL_ENGINE_INGEST_LIVE_H
#define PROPEL_ENGINE_INGEST_LIVE_H

struct ingest_live;
struct ingest_stats;
struct session;
struct symbols;

/* The session file a live ingest writes, in the session directory. */
#define INGEST_LIVE_DB "live.db"

/* Start storing dir while the run goes.  0, or -errno (nothing started). */
int ingest_live_start(const char *dir, struct ingest_live **out);

/*
 * The run has ended and the drain has made its last copy: stop the
 * thread and store the rest.  0: the session is complete in dir's
 * INGEST_LIVE_DB, open as *s (the caller closes it), st filled.
 * -EAGAIN: nothing kept (never begun, given up, or the end failed):
 * the caller ingests dir as before, with *sy (the symbols made so far,
 * the caller's to free).  Frees lv in every case.
 */
int ingest_live_end(struct ingest_live *lv, struct session **s,
		    struct ingest_stats *st, struct symbols **sy,
		    char **cause);

/* Stop and drop everything (the run failed); NULL is fine. */
void ingest_live_abort(struct ingest_live *lv);

#endif
