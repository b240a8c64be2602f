/*
 * tests/unit/check.h - the unit tests' one check: CHECK(name, cond,
 * fmt, ...) prints "PASS name" or "FAIL name: why" (tests/run.sh counts
 * those lines) and counts the failures for main's exit status.
 * CHECKS_EXPECT(n), first in main, declares how many such lines the program
 * prints: tests/run.sh fails a program that prints another number of them
 * (one that crashed or returned early) or declares none.
 * CHECK_TMP("name.db") is a path of this run's own for a scratch file,
 * $TMPDIR/propel-test-PID-name.db (suites run side by side, and so do
 * other trees' tests: never a fixed name in /tmp).
 * CHECK_SH(fmt, ...) runs a formatted shell command: system()'s status.
 */
#ifndef PROPEL_TESTS_UNIT_CHECK_H
#define PROPEL_TESTS_UNIT_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures __attribute__((unused)); /* a CHECK counts here */

/* CHECK_TMP(name): one of 8 static buffers, reused in turn */
static inline const char *CHECK_TMP(const char *name)
{
	static char buf[8][256];
	static unsigned turn;
	const char *dir = getenv("TMPDIR");
	char *b = buf[turn++ % 8];

	snprintf(b, sizeof(buf[0]), "%s/propel-test-%d-%s",
		 dir && *dir ? dir : "/tmp", (int)getpid(), name);
	return b;
}

static inline __attribute__((format(printf, 1, 2))) int
CHECK_SH(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

#define CHECKS_EXPECT(n)                                                   \
	do {                                                               \
		printf("CHECKS %d\n", (n));                                \
		fflush(stdout);                                            \
	} while (0)

#define CHECK(name, cond, ...)                                             \
	do {                                                               \
		if (cond)                                                  \
			printf("PASS %s\n", name);                         \
		else {                                                     \
			printf("FAIL %s: ", name);                         \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			failures++;                                        \
		}                                                          \
	} while (0)

#endif
