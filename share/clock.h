/*
 * share/clock.h - the clocks every floor reads: CLOCK_MONOTONIC in ns, ms
 * and seconds, any clock in ns (CLOCK_REALTIME, CLOCK_BOOTTIME, a thread's
 * CPU time), the TSC, and a calibration pair (one TSC value and the clock
 * read between two of them) that dates TSC stamps.
 *
 * All static inline, with no state: the agent includes it in its hot path
 * (no malloc, no locks; inject/agent/hot.c reads its clock by raw syscall
 * and passes that reader to propel_clock_pair), propeld, the engine and
 * the TUI in theirs.  A failing clock_gettime leaves zero (the callers
 * used to start from an uninitialised or zeroed timespec; zero is the
 * defined one).
 *
 * Conversions of TSC stamps to ns (the session's rate, the anchor pair)
 * are engine/ingest.c's: only the engine has the rings' pairs.
 */
#ifndef PROPEL_SHARE_CLOCK_H
#define PROPEL_SHARE_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* clock c in nanoseconds */
static inline uint64_t propel_clock_ns(clockid_t c)
{
	struct timespec ts = { 0, 0 };

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t propel_mono_ns(void)
{
	return propel_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t propel_real_ns(void)
{
	return propel_clock_ns(CLOCK_REALTIME);
}

static inline uint64_t propel_mono_ms(void)
{
	return propel_mono_ns() / 1000000;
}

/* clock c in seconds, for rates and intervals shown to a person */
static inline double propel_clock_s(clockid_t c)
{
	struct timespec ts = { 0, 0 };

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double propel_mono_s(void)
{
	return propel_clock_s(CLOCK_MONOTONIC);
}

/* sleep ms milliseconds, whatever signals arrive meanwhile */
static inline void propel_sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* A test switch: sleep as many milliseconds as the environment variable
 * var says (0 < ms < 60000), as a loaded host would make that step slow. */
static inline void propel_test_delay(const char *var)
{
	const char *v = getenv(var);
	long ms = v ? strtol(v, NULL, 10) : 0;

	if (ms > 0 && ms < 60000)
		propel_sleep_ms(ms);
}

static inline uint64_t propel_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * A calibration pair: the clock read_ns reads, read between two rdtsc,
 * the tsc taken as their middle.  A preemption or a slow clock read
 * between them widens the pair and skews a rate taken from it, so the
 * narrowest of at most tries (at least one) is kept, stopping early at
 * one no wider than tight ticks (0: always all tries).
 */
static inline void propel_clock_pair(uint64_t *tsc, uint64_t *ns, int tries,
				     uint64_t tight, uint64_t (*read_ns)(void))
{
	uint64_t best = ~0ull;
	int i = 0;

	do {
		uint64_t t0 = propel_rdtsc();
		uint64_t n = read_ns();
		uint64_t t1 = propel_rdtsc();

		if (i == 0 || t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + best / 2;
			*ns = n;
		}
	} while (++i < tries && best > tight);
}

#endif
