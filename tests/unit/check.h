/*
 * tests/unit/check.h - the unit tests' one check: CHECK(name, cond,
 * fmt, ...) prints "PASS name" or "FAIL name: why" (tests/run.sh counts
 * those lines) and counts the failures for main's exit status.
 * CHECKS_EXPECT(n), first in main, declares how many such lines the program
 * prints: tests/run.sh fails a program that prints another number of them
 * (one that crashed or returned early) or declares none.
 */
#ifndef PROPEL_TESTS_UNIT_CHECK_H
#define PROPEL_TESTS_UNIT_CHECK_H

#include <stdio.h>

static int failures;

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
