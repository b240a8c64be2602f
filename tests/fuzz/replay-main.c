/*
 * tests/fuzz/replay-main.c - a fuzz target's corpus, replayed without
 * libFuzzer: main() calls LLVMFuzzerTestOneInput once per file named on
 * the command line (built with the normal gcc build beside each target;
 * run by tests/e2e/fuzz-corpus.sh).  Exits 0 when every input returned,
 * 2 when a file cannot be read; a crash is the process's own signal.
 * Prints each file's name on stderr before it runs, so the last one named
 * is the one that crashed or hung.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_one(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 2;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? 2 * cap : 65536);

			if (!nb) {
				fclose(f);
				free(buf);
				return 2;
			}
			buf = nb;
			cap = cap ? 2 * cap : 65536;
		}
		size_t r = fread(buf + n, 1, cap - n, f);

		if (!r)
			break;
		n += r;
	}
	fclose(f);
	/* an exact copy: ASan's bounds then sit at the input's end */
	uint8_t *in = malloc(n ? n : 1);

	if (!in) {
		free(buf);
		return 2;
	}
	memcpy(in, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(in, n);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	int ret = 0;

	for (int i = 1; i < argc; i++) {
		fprintf(stderr, "replay: %s\n", argv[i]);
		if (replay_one(argv[i]))
			ret = 2;
	}
	return ret;
}
