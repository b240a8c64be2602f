/*
 * share/ring.c - reading ring files (see share/ring.h for the layout and the
 * commit protocol).  The writer side lives in the agent, which cannot call
 * into anything but libc; this side is used by the engine and the tests.
 */
#include <errno.h>
#include <string.h>

#include "share/ring.h"

int propel_ring_check(const struct propel_ring_hdr *h, size_t file_size,
		      const char **why)
{
	const char *w = NULL;

	if (file_size < PROPEL_RING_HDR_SIZE)
		w = "file shorter than its header";
	else if (memcmp(h->magic, PROPEL_RING_MAGIC, 8) != 0)
		w = "not a propel ring (bad magic)";
	else if (h->version > PROPEL_RING_VERSION)
		w = "ring written by a newer propel";
	else if (h->hdr_size != PROPEL_RING_HDR_SIZE || h->sub_count == 0 ||
		 h->sub_recs == 0 || h->sub_count > (1u << 16) ||
		 h->sub_recs > (1u << 26) ||
		 (h->version >= 2 && h->sub_count > PROPEL_RING_SUB_MAX))
		w = "corrupt ring header";
	else if (propel_ring_size(h->sub_count, h->sub_recs) > file_size)
		w = "ring file truncated";
	if (w) {
		if (why)
			*why = w;
		return h && file_size >= 12 && h->version > PROPEL_RING_VERSION
			       ? -EPROTO
			       : -EINVAL;
	}
	return 0;
}

/* The sub-buffer being written (last): its records end at the first empty
 * one, or (version 2) the first one older than the sub-buffer itself. */
static int walk_sub(const struct propel_ring_hdr *h, uint64_t k,
		    propel_ring_fn fn, void *arg, int last)
{
	const struct propel_rec *r =
		propel_ring_sub((struct propel_ring_hdr *)h, k);
	uint64_t begun = 0;
	uint32_t i;
	int ret;

	if (last && h->version >= 2)
		begun = propel_rec_tsc60(h->sub_tsc[k % h->sub_count]);
	for (i = 0; i < h->sub_recs; i++) {
		if (r[i].w0 == 0 || (r[i].w0 >> 4) < begun) {
			if (last)
				return 0;
			continue;
		}
		ret = fn(&r[i], arg);
		if (ret)
			return ret;
	}
	return 0;
}

int propel_ring_walk(const struct propel_ring_hdr *h, size_t file_size,
		     propel_ring_fn fn, void *arg)
{
	return propel_ring_walk_from(h, file_size, 0, fn, arg);
}

int propel_ring_walk_from(const struct propel_ring_hdr *h, size_t file_size,
			  uint64_t from, propel_ring_fn fn, void *arg)
{
	uint64_t commits = __atomic_load_n(&h->commits, __ATOMIC_ACQUIRE);
	uint64_t n = h->sub_count, k, first, spooled = 0;
	size_t ring = propel_ring_size(h->sub_count, h->sub_recs);
	int ret;

	if (propel_ring_check(h, file_size, NULL))
		return -EINVAL;
	/* the spool: whole sub-buffers 0, 1, ... copied out by the drain (a
	 * partly written last one is still in the ring) */
	if (h->version >= 2 && file_size > ring) {
		const char *sp = (const char *)h + ring;
		size_t sb = propel_ring_sub_bytes(h);

		spooled = (file_size - ring) / sb;
		for (k = from; k < spooled; k++) {
			const struct propel_rec *r =
				(const struct propel_rec *)(sp + k * sb);

			for (uint32_t i = 0; i < h->sub_recs; i++) {
				if (r[i].w0 == 0)
					continue;
				ret = fn(&r[i], arg);
				if (ret)
					return ret;
			}
		}
	}
	/* The sub-buffer being written is commits % n; the n-1 before it are
	 * full once the ring has wrapped. */
	first = commits >= n - 1 ? commits - (n - 1) : 0;
	if (first < spooled)
		first = spooled;
	if (spooled > commits)
		return 0; /* a spool longer than the ring's commits: not ours */
	for (k = first; k < commits; k++) {
		/* A full sub-buffer of a version 1 ring may begin with empty
		 * slots when a kill landed between zeroing and committing. */
		ret = walk_sub(h, k, fn, arg, 0);
		if (ret)
			return ret;
	}
	return walk_sub(h, commits, fn, arg, 1);
}
