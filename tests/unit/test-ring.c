/*
 * tests/unit/test-ring.c - reading a ring file (share/ring.c) the way the
 * agent and the drain leave it (share/ring.h): a ring that wrapped, whose
 * sub-buffer being written still holds the lap before's records (nothing
 * is zeroed), and a drained ring whose spool, at the end of the file,
 * holds the sub-buffers copied out.  Prints PASS/FAIL lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "share/ring.h"

#define TSC0 1000000000ull
#define SUBS 4
#define RECS 8

static int nfail;

static void check(int ok, const char *name, const char *why)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ",
	       ok ? "" : why);
	nfail += !ok;
}

/* A ring written as the agent writes it; `spooled` sub-buffers of it are
 * copied after it as the drain does.  n records, tsc TSC0 + i. */
static char *ring_write(uint64_t n, uint64_t spooled, size_t *size)
{
	size_t ring = propel_ring_size(SUBS, RECS), sb = RECS * 16;
	char *f = calloc(1, ring + spooled * sb);
	struct propel_ring_hdr *h = (struct propel_ring_hdr *)f;

	memcpy(h->magic, PROPEL_RING_MAGIC, 8);
	h->version = PROPEL_RING_VERSION;
	h->hdr_size = PROPEL_RING_HDR_SIZE;
	h->sub_count = SUBS;
	h->sub_recs = RECS;
	h->sub_tsc[0] = TSC0;
	for (uint64_t i = 0; i < n; i++) {
		struct propel_rec *r;

		if (i && i % RECS == 0) { /* the agent's ring_advance */
			h->sub_tsc[(h->commits + 1) % SUBS] = TSC0 + i;
			h->commits++;
		}
		r = propel_ring_sub(h, h->commits) + i % RECS;
		r->a = (uint32_t)i;
		r->w0 = propel_rec_w0(TSC0 + i, PROPEL_REC_ENTRY);
		if (i / RECS < spooled) /* the drain's copy, as it was */
			memcpy(f + ring + (i / RECS) * sb + (i % RECS) * 16, r,
			       16);
	}
	*size = ring + spooled * sb;
	return f;
}

struct seen {
	uint64_t n, next, bad;
};

static int count(const struct propel_rec *r, void *arg)
{
	struct seen *s = arg;

	if (r->a != s->next)
		s->bad++;
	s->next = r->a + 1;
	s->n++;
	return 0;
}

int main(void)
{
	/* how many PASS/FAIL lines follow (tests/run.sh holds us to it) */
	printf("CHECKS 3\n");
	fflush(stdout);
	char why[200];
	struct seen s;
	size_t size;
	char *f;

	/* five sub-buffers and three records: the newest three sub-buffers'
	 * worth and the three, oldest first, none of the lap before */
	f = ring_write(5 * RECS + 3, 0, &size);
	memset(&s, 0, sizeof(s));
	s.next = 2 * RECS;
	propel_ring_walk((struct propel_ring_hdr *)f, size, count, &s);
	snprintf(why, sizeof(why), "%llu records (want 27), %llu out of order",
		 (unsigned long long)s.n, (unsigned long long)s.bad);
	check(s.n == 3 * RECS + 3 && !s.bad, "ring-walk-stale-lap", why);
	free(f);

	/* drained: the spool holds the first five sub-buffers, the ring the
	 * rest; every record once, in order */
	f = ring_write(7 * RECS + 5, 5, &size);
	memset(&s, 0, sizeof(s));
	propel_ring_walk((struct propel_ring_hdr *)f, size, count, &s);
	snprintf(why, sizeof(why), "%llu records (want 61), %llu out of order",
		 (unsigned long long)s.n, (unsigned long long)s.bad);
	check(s.n == 7 * RECS + 5 && !s.bad, "ring-walk-spool", why);
	free(f);

	/* a spool cut inside its last sub-buffer (the drain killed while
	 * writing): that one is read from the ring */
	f = ring_write(7 * RECS + 5, 5, &size);
	memset(&s, 0, sizeof(s));
	propel_ring_walk((struct propel_ring_hdr *)f, size - 40, count, &s);
	snprintf(why, sizeof(why), "%llu records (want 61), %llu out of order",
		 (unsigned long long)s.n, (unsigned long long)s.bad);
	check(s.n == 7 * RECS + 5 && !s.bad, "ring-walk-spool-cut", why);
	free(f);
	return nfail ? 1 : 0;
}
