/*
 * inject/agent/sort.c - the agent's sort (ag_sort, agent.h): symbols and
 * FDEs by address, relocations by GOT slot, jump-table targets, at every
 * injection.  No malloc (it runs while other threads of the program are
 * stopped, maybe inside malloc), so not libc's qsort.  A fork child that
 * execs is injected again: this is on the path of every followed exec.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "inject/agent/agent.h"

/* Elements are structs of 8-byte fields (symbols, relocations, FDEs):
 * swapped a word at a time, a byte at a time only for the rest. */
static void swap_bytes(uint8_t *a, uint8_t *b, size_t n)
{
	for (; n >= 8; n -= 8, a += 8, b += 8) {
		uint64_t x, y;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(a, &y, 8);
		memcpy(b, &x, 8);
	}
	while (n--) {
		uint8_t t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

/* Move b[root] down the heap b[0..end) to where it belongs. */
static void sift_down(uint8_t *b, size_t root, size_t end, size_t size,
		      int (*cmp)(const void *, const void *))
{
	size_t child;

	for (; (child = 2 * root + 1) < end; root = child) {
		if (child + 1 < end &&
		    cmp(b + child * size, b + (child + 1) * size) < 0)
			child++;
		if (cmp(b + root * size, b + child * size) >= 0)
			break;
		swap_bytes(b + root * size, b + child * size, size);
	}
}

/* Heapsort of b[0..n): the fallback of ag_sort past its depth. */
static void heap_sort(uint8_t *b, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	size_t i, end;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(b, i, n, size, cmp);
	for (end = n - 1; end > 0; end--) {
		swap_bytes(b, b + end * size, size);
		sift_down(b, 0, end, size, cmp);
	}
}

/* a before b: by their leading keys, cmp only where those are equal (an
 * indirect call costs as much as the rest of a comparison here) */
static inline int key_less(const uint8_t *a, const uint8_t *b,
			   int (*cmp)(const void *, const void *))
{
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	if (x != y)
		return x < y;
	return cmp(a, b) < 0;
}

/*
 * Sort n elements of `size` bytes that begin with a uint64_t key, the
 * first thing cmp orders by (symbols and FDEs by address, relocations by
 * GOT slot).  Quicksort (the pivot the median of three elements at
 * pseudo-random places: sorted, reversed and organ-pipe input split
 * evenly), insertion sort below 16, heapsort past 2 log2 n levels.
 */
void ag_sort(void *base, size_t n, size_t size,
	     int (*cmp)(const void *, const void *))
{
	uint8_t *b = base;
	uint64_t seed = n * 0x9e3779b97f4a7c15ull;
	int depth = 0;
	size_t k;

	for (k = n; k > 1; k >>= 1)
		depth += 2;
	while (n > 16) {
		size_t p[3], m, i, j;

		if (depth-- == 0) {
			heap_sort(b, n, size, cmp);
			return;
		}
		for (i = 0; i < 3; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			p[i] = (size_t)(seed >> 33) % n;
		}
		if (key_less(b + p[0] * size, b + p[1] * size, cmp))
			m = key_less(b + p[1] * size, b + p[2] * size, cmp) ? p[1]
			    : key_less(b + p[0] * size, b + p[2] * size, cmp) ? p[2]
									      : p[0];
		else
			m = key_less(b + p[0] * size, b + p[2] * size, cmp) ? p[0]
			    : key_less(b + p[1] * size, b + p[2] * size, cmp) ? p[2]
									      : p[1];
		if (m)
			swap_bytes(b, b + m * size, size);
		/* the pivot stays at b[0] while the rest is split around it */
		i = 0;
		j = n;
		for (;;) {
			do
				i++;
			while (i < n && key_less(b + i * size, b, cmp));
			do
				j--;
			while (key_less(b, b + j * size, cmp));
			if (i >= j)
				break;
			swap_bytes(b + i * size, b + j * size, size);
		}
		swap_bytes(b, b + j * size, size);
		/* the smaller side by recursion, the larger by the loop */
		if (j < n - j - 1) {
			ag_sort(b, j, size, cmp);
			b += (j + 1) * size;
			n -= j + 1;
		} else {
			ag_sort(b + (j + 1) * size, n - j - 1, size, cmp);
			n = j;
		}
	}
	for (k = 1; k < n; k++)
		for (size_t j = k;
		     j > 0 && key_less(b + j * size, b + (j - 1) * size, cmp); j--)
			swap_bytes(b + j * size, b + (j - 1) * size, size);
}
