/*
 * engine/ingest-fault.c - see engine/ingest-fault.h.
 *
 * The thread works in INGEST_FAULT_STEP pieces and looks at its stop flag
 * between them, with MADV_POPULATE_READ (Linux 5.14; an older kernel's
 * refusal ends the thread: the walk faults the pages as it reads).  Only
 * the spool is mapped ahead: every byte of it was written by the drain.
 * The ring before it may have holes (sub-buffers never reached, on a
 * full /dev/shm too), which a read fault would fill with new tmpfs pages
 * or answer with SIGBUS; the walk reads only the sub-buffers committed.
 * Never a plain read of the mapping here, for the same reason.  The
 * ranges are the caller's mappings, unmapped only after
 * ingest_fault_stop has returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/ingest-fault.h"
#include "engine/ingest-int.h"
#include "share/ring.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#define INGEST_FAULT_STEP (4u << 20)

struct fault_range {
	const char *p;
	size_t len;
};

struct ingest_fault {
	pthread_t th;
	volatile int stop;
	struct fault_range *r;
	size_t n;
};

static void fault_range(struct ingest_fault *f, const char *p, size_t len)
{
	for (size_t at = 0; at < len && !f->stop; at += INGEST_FAULT_STEP) {
		size_t n = len - at < INGEST_FAULT_STEP ? len - at
							: INGEST_FAULT_STEP;

		/* refused (an old kernel, no memory): the walk faults them */
		if (madvise((void *)(uintptr_t)(p + at), n,
			    MADV_POPULATE_READ) < 0 && errno == EINVAL)
			return;
	}
}

static void *fault_main(void *arg)
{
	struct ingest_fault *f = arg;

	for (size_t i = 0; i < f->n && !f->stop; i++)
		fault_range(f, f->r[i].p, f->r[i].len);
	return NULL;
}

struct ingest_fault *ingest_fault_start(const struct ingest_ring *r,
					size_t n)
{
	struct ingest_fault *f = calloc(1, sizeof(*f));
	size_t i;

	if (!f)
		return NULL;
	f->r = calloc(n + 1, sizeof(*f->r));
	if (!f->r)
		goto none;
	for (i = 0; i < n; i++) {
		const struct propel_ring_hdr *h = r[i].h;
		size_t ring = propel_ring_size(h->sub_count, h->sub_recs);
		const char *base = (const char *)h;

		if (r[i].size < INGEST_FAULT_MIN || ring >= r[i].size)
			continue;
		f->r[f->n++] = (struct fault_range){ base + ring,
						     r[i].size - ring };
	}
	if (!f->n || pthread_create(&f->th, NULL, fault_main, f))
		goto none;
	return f;
none:
	free(f->r);
	free(f);
	return NULL;
}

void ingest_fault_stop(struct ingest_fault *f)
{
	if (!f)
		return;
	f->stop = 1;
	pthread_join(f->th, NULL);
	free(f->r);
	free(f);
}
