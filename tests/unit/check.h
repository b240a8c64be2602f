/*
 * tests/unit/check.h - the unit tests' one check: CHECK(name, cond,
 * fmt, ...) prints "PASS name" or "FAIL name: why" (tests/run.sh counts
 * those lines) and counts the failures for main's exit status.
 */
#ifndef PROPEL_TESTS_UNIT_CHECK_H
#define PROPEL_TESTS_UNIT_CHECK_H

#include <stdio.h>

static int failures;

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
