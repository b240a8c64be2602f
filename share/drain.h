/*
 * share/drain.h - the drain: a thread that copies the committed
 * sub-buffers of every keep_all ring in a session directory to the ring
 * file's spool while the traced program runs (share/ring.h has the
 * protocol), so that `record` keeps every call however long it runs.
 * It never makes the program wait: when it falls behind, the agent drops
 * records and counts them (LOST records, share/record.h).  Runs in the
 * coordinator (engine/run.c) and in propeld (inject/propeld.c); libc and
 * pthreads only.
 */
#ifndef PROPEL_SHARE_DRAIN_H
#define PROPEL_SHARE_DRAIN_H

#include <stdint.h>

struct drain;

struct drain_stats {
	uint64_t subs;    /* sub-buffers copied */
	uint64_t bytes;   /* their bytes */
	uint32_t rings;   /* rings seen */
	uint32_t failed;  /* rings the drain could not write (disk full...) */
};

/* --mode=full|flight: 1, 0, or -1 when it is neither. */
int drain_mode_parse(const char *s);
/* After a drained recording: one line on stderr when a ring could not be
 * drained (verb: "record", "attach"); dropped records are ingest's to
 * report (ingest_warning). */
void drain_report(const char *verb, const struct drain_stats *st);

/* Start draining dir (a session directory); 0 or -errno with *cause. */
int drain_start(const char *dir, struct drain **out, char **cause);
/* Copy what is committed one last time, stop the thread, free; stats may
 * be NULL. */
void drain_stop(struct drain *d, struct drain_stats *stats);
/* One round of the drain's thread, in the caller's, on dir: every
 * keep_all ring's committed sub-buffers to its spool (tests/fuzz).
 * 0 or -ENOMEM; stats may be NULL. */
int drain_once(const char *dir, struct drain_stats *stats);

#endif
