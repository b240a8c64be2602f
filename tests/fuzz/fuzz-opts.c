/*
 * tests/fuzz/fuzz-opts.c - the option parsers reachable as functions: the
 * input is one option's argument, given to each of them (record|attach
 * --buffer-size, --mode, --timing, --vitals; report --profile's kind; the
 * TUI's cursor moves).  The commands' getopt loops call them; the rest of
 * an option's handling is inside each command's exec.
 */
#include "analysis/profiles.h"
#include "engine/capture.h"
#include "engine/cursor.h"
#include "engine/run.h"
#include "share/drain.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long kb = 64;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (capture_buffer_opt("fuzz", s, &kb) == 0 &&
	    (kb < 64 || kb > (1ul << 26)))
		__builtin_trap(); /* accepted out of its range */
	(void)capture_ring_flags(kb);
	(void)drain_mode_parse(s);
	(void)cursor_move_parse(s);
	(void)profiles_kind_parse(s);
	(void)run_timing_parse(s);
	(void)run_vitals_parse(s);
	free(s);
	return 0;
}
