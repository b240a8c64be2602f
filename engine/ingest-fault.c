/*
 * engine/ingest-fault.c - see engine/ingest-fault.h.
 *
 * The thread works in INGEST_FAULT_STEP pieces and looks at its stop flag
 * between them; MADV_POPULATE_READ (Linux 5.14) is asked first, and
 * where it is refused (an older kernel) a read of a byte per page does
 * the same.  The ranges are the caller's mappings, unmapped only after
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
	static int no_madv;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t at = 0; at < len && !f->stop; at += INGEST_FAULT_STEP) {
		size_t n = len - at < INGEST_FAULT_STEP ? len - at
							: INGEST_FAULT_STEP;
		volatile const char *q = p + at;

		if (!no_madv &&
		    madvise((void *)(uintptr_t)q, n, MADV_POPULATE_READ) == 0)
			continue;
		if (errno == EINVAL)
			no_madv = 1;
		for (size_t k = 0; k < n; k += pg)
			(void)q[k];
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
	f->r = calloc(2 * n + 1, sizeof(*f->r));
	if (!f->r)
		goto none;
	for (i = 0; i < n; i++) {
		const struct propel_ring_hdr *h = r[i].h;
		size_t ring = propel_ring_size(h->sub_count, h->sub_recs);
		const char *base = (const char *)h;

		if (r[i].size < INGEST_FAULT_MIN || ring > r[i].size)
			continue;
		/* the walk's order: the spool after the ring, then the ring */
		f->r[f->n++] = (struct fault_range){ base + ring,
						     r[i].size - ring };
		f->r[f->n++] = (struct fault_range){ base, ring };
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
