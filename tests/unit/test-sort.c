/*
 * tests/unit/test-sort.c - the agent's sort (inject/agent/sort.c) against
 * libc's qsort with the same comparator, on the shapes it meets: symbols
 * of 32 bytes whose addresses repeat (aliases, ordered among themselves
 * by the comparator's later fields), 16-byte FDEs, 8-byte words; random,
 * already sorted, reversed, all equal, few distinct keys, and every
 * length from 0 to 40 (the insertion-sort cut and around it).  Also
 * checked: the comparator is called only for equal keys, and an
 * organ-pipe of 100,000 that works against median-of-three stays under
 * 4 n log2 n comparisons; the heapsort fallback on its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/agent/sort.c"

#include "tests/unit/check.h"

struct sym {
	uint64_t addr;
	uint64_t size;
	uint64_t rank;
	uint64_t tag; /* not compared: tells equal elements apart */
};

static long ncmp, ncmp_tie;

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	ncmp++;
	if (x->addr == y->addr)
		ncmp_tie++;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	ncmp++;
	return x < y ? -1 : x > y;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* the same multiset, in the same order up to elements equal under cmp */
static int same_order(const struct sym *a, const struct sym *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sym_cmp(&a[i], &b[i]) != 0)
			return 0;
	return 1;
}

enum shape { RANDOM, SORTED, REVERSED, EQUAL, FEWKEYS, NSHAPES };
static const char *const shape_name[] = { "random", "sorted", "reversed",
					  "equal", "fewkeys" };

static void fill(struct sym *v, size_t n, enum shape s)
{
	for (size_t i = 0; i < n; i++) {
		v[i].tag = i;
		v[i].size = rnd() % 3;
		v[i].rank = rnd() % 4;
		switch (s) {
		case RANDOM: v[i].addr = rnd() % (n + 1) * 16; break;
		case SORTED: v[i].addr = i * 16; break;
		case REVERSED: v[i].addr = (n - i) * 16; break;
		case EQUAL: v[i].addr = 4096; break;
		default: v[i].addr = rnd() % 3 * 16; break;
		}
	}
}

int main(void)
{
	CHECKS_EXPECT(23);
	static struct sym a[4096], b[4096];
	char name[96];
	int bad = 0;

	/* every length around the insertion-sort cut, every shape */
	for (int s = 0; s < NSHAPES; s++) {
		for (size_t n = 0; n <= 40 && !bad; n++)
			for (int rep = 0; rep < 20 && !bad; rep++) {
				fill(a, n, s);
				memcpy(b, a, n * sizeof(*a));
				ag_sort(a, n, sizeof(*a), sym_cmp);
				qsort(b, n, sizeof(*b), sym_cmp);
				if (!same_order(a, b, n))
					bad = 1;
			}
		snprintf(name, sizeof(name), "sort/small-%s", shape_name[s]);
		CHECK(name, !bad, "a length of 0..40 sorted differently from qsort");
		bad = 0;
	}
	/* larger, and the comparator reached only for equal keys */
	for (int s = 0; s < NSHAPES; s++) {
		size_t n = 4096;
		long calls;

		fill(a, n, s);
		memcpy(b, a, n * sizeof(*a));
		ncmp = ncmp_tie = 0;
		ag_sort(a, n, sizeof(*a), sym_cmp);
		calls = ncmp;
		qsort(b, n, sizeof(*b), sym_cmp);
		snprintf(name, sizeof(name), "sort/4096-%s", shape_name[s]);
		CHECK(name, same_order(a, b, n), "differs from qsort");
		ncmp = ncmp_tie = 0;
		fill(a, n, s);
		ag_sort(a, n, sizeof(*a), sym_cmp);
		snprintf(name, sizeof(name), "sort/4096-%s-ties-only", shape_name[s]);
		CHECK(name, ncmp == ncmp_tie, "%ld of %ld comparator calls had unequal keys (%ld in all before)",
		      ncmp - ncmp_tie, ncmp, calls);
	}
	/* 16-byte elements (FDEs) and words */
	{
		static uint64_t w[10000], x[10000];
		static struct { uint64_t lo, hi; } f[3000], g[3000];

		for (int i = 0; i < 10000; i++)
			w[i] = x[i] = rnd() % 5000;
		ag_sort(w, 10000, sizeof(*w), u64_cmp);
		qsort(x, 10000, sizeof(*x), u64_cmp);
		CHECK("sort/words", memcmp(w, x, sizeof(w)) == 0, "differs from qsort");
		for (int i = 0; i < 3000; i++) {
			f[i].lo = rnd() % 100000;
			f[i].hi = f[i].lo + 16;
		}
		memcpy(g, f, sizeof(f));
		ag_sort(f, 3000, sizeof(*f), u64_cmp);
		qsort(g, 3000, sizeof(*g), u64_cmp);
		CHECK("sort/fdes", memcmp(f, g, sizeof(f)) == 0, "differs from qsort");
	}
	/* the heapsort ag_sort falls back on past its depth */
	for (int s = 0; s < NSHAPES; s++) {
		size_t n = 3000;

		fill(a, n, s);
		memcpy(b, a, n * sizeof(*a));
		heap_sort((uint8_t *)a, n, sizeof(*a), sym_cmp);
		qsort(b, n, sizeof(*b), sym_cmp);
		snprintf(name, sizeof(name), "sort/heap-%s", shape_name[s]);
		CHECK(name, same_order(a, b, n), "differs from qsort");
	}
	/* an organ-pipe pushes median-of-three towards its worst case; with
	 * every key equal each comparison is a comparator call, counted: it
	 * must stay near n log n (the heapsort fallback bounds it), far
	 * from the n^2 / 4 of a degenerate quicksort */
	{
		size_t n = 100000;
		struct sym *v = calloc(n, sizeof(*v));
		long bound = 0;
		int sorted = 1;

		for (size_t i = 0; i < n; i++) {
			v[i].addr = 4096;
			v[i].rank = i < n / 2 ? 2 * i : 2 * (n - i) + 1;
		}
		for (size_t k = n; k > 1; k >>= 1)
			bound += 4 * (long)n;
		ncmp = 0;
		ag_sort(v, n, sizeof(*v), sym_cmp);
		for (size_t i = 1; i < n; i++)
			sorted &= v[i - 1].rank <= v[i].rank;
		CHECK("sort/organ-pipe", sorted && ncmp < bound,
		      "sorted %d, %ld comparisons (bound 4 n log2 n = %ld)", sorted, ncmp, bound);
		free(v);
	}
	return failures != 0;
}
