/*
 * engine/ingest-fault.h - the rings' pages mapped ahead of the ingest's
 * walk, on another core.
 *
 * A drained ring's file is its spool: every record of the run (fib(31):
 * ~100 MB).  Mapping it with MAP_POPULATE made the ingest wait for all
 * its page-table entries before the first record was read; the walk and
 * the mapping are independent, so a thread makes the spool's entries
 * (MADV_POPULATE_READ, a few MB at a time, in the order
 * propel_ring_walk reads) while the ingest walks what is made.  A page the thread has not reached yet is faulted
 * in by the walk itself, as any mapping's: the thread only saves time.
 *
 * Called by engine/ingest.c around its walks; ingest_fault_stop joins the
 * thread, before the rings are unmapped.
 */
#ifndef PROPEL_ENGINE_INGEST_FAULT_H
#define PROPEL_ENGINE_INGEST_FAULT_H

#include <stddef.h>

struct ingest_ring;
struct ingest_fault;

/* Below this size a ring's file is mapped with MAP_POPULATE at once. */
#define INGEST_FAULT_MIN (16u << 20)

/* Start mapping ahead the spools of the rings of r[0..n) whose files
 * are INGEST_FAULT_MIN or more, in that order; NULL when there is none
 * (or no thread). */
struct ingest_fault *ingest_fault_start(const struct ingest_ring *r,
					size_t n);

/* Stop and join (NULL: nothing). */
void ingest_fault_stop(struct ingest_fault *f);

#endif
