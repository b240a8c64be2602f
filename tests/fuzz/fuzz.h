/*
 * tests/fuzz/fuzz.h - what the fuzz targets (tests/fuzz/fuzz-<name>.c)
 * share: one scratch directory per process, removed at exit, and writing
 * an input into a file there.
 *
 * Each target defines LLVMFuzzerTestOneInput and is built twice: with
 * clang -fsanitize=fuzzer,address,undefined by `make fuzz`
 * (tests/fuzz/fuzz.mk), and with gcc beside tests/fuzz/replay-main.c,
 * which calls it on every file of its corpus (tests/e2e/fuzz-corpus.sh).
 * A target never exits and never prints on stdout; whatever the product
 * says about damage goes to stderr as it would for a user.
 */
#ifndef PROPEL_TESTS_FUZZ_FUZZ_H
#define PROPEL_TESTS_FUZZ_FUZZ_H

#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir_path[64];

static int fuzz_rm_one(const char *p, const struct stat *sb, int flag,
		       struct FTW *f)
{
	remove(p);
	return 0;
}

static void fuzz_dir_rm(void)
{
	if (fuzz_dir_path[0])
		nftw(fuzz_dir_path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The scratch directory (made on the first call; NULL when it cannot be). */
static __attribute__((unused)) const char *fuzz_dir(void)
{
	if (!fuzz_dir_path[0]) {
		const char *t = getenv("TMPDIR");

		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/propel-fuzz.XXXXXX",
			 t && *t && strlen(t) < 32 ? t : "/tmp");
		if (!mkdtemp(fuzz_dir_path)) {
			fuzz_dir_path[0] = 0;
			return NULL;
		}
		atexit(fuzz_dir_rm);
	}
	return fuzz_dir_path;
}

/* dir/name = data (replaced).  0 or -1. */
static __attribute__((unused)) int fuzz_write(const char *path,
					      const void *data, size_t n)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return close(fd);
}

#endif
