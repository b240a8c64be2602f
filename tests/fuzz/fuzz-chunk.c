/*
 * tests/fuzz/fuzz-chunk.c - the chunk decoder (engine/chunk.c) and what
 * reads its events: one chunk of one thread is stored in a scratch session,
 * then read back by chunk_iter, chunk_store_event and replay
 * (reconstruction, whose cache is 100 MB made at once, is left to
 * fuzz-session: here it would cost 50 ms a run).
 *
 * Input: a 16-byte head, then the body.
 *   byte 0    mode: 1 the body is the stored (compressed) body as is,
 *             else the event stream, compressed here; 2 a wrong checksum;
 *             4 an unknown codec
 *   byte 1    the index row's kinds
 *   bytes 2-3 count (little-endian)
 *   bytes 4-7 first_seq (little-endian)
 *   bytes 8-15 first_ts (little-endian)
 * The checksum is the body's (as the writer makes it) unless mode & 2, so
 * that what is fuzzed is the decoder, not FNV.
 */
#include <zstd.h>

#include "engine/chunk.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/hash.h"
#include "tests/fuzz/fuzz.h"

static struct session *chunk_s;

static int chunk_count_ev(const struct replay_event *ev, void *arg)
{
	(*(int64_t *)arg)++;
	return 0;
}

static void chunk_read(struct session *s, int64_t first_seq, int64_t count)
{
	struct chunk_store *cs = NULL;
	const struct chunk_thread *th;
	struct replay_filter f = { 0 };
	char *cause = NULL;
	int64_t seen = 0;
	size_t nth;

	if (chunk_store_open(s, &cs, &cause)) {
		free(cause);
		return;
	}
	chunk_store_quiet(cs, 1);
	th = chunk_store_threads(cs, &nth);
	for (size_t i = 0; i < nth; i++) {
		struct chunk_iter it;
		const struct session_event *ev;

		if (chunk_iter_init(&it, cs, th[i].pid, th[i].tid))
			continue;
		while (chunk_iter_next(&it, &ev) > 0)
			seen++;
		chunk_iter_release(&it);
	}
	for (int64_t id = first_seq - 1; id <= first_seq + count;
	     id += count > 8 ? count / 4 : 1) {
		struct session_event ev;
		int64_t pid, tid;

		(void)chunk_store_event(cs, id, &ev, &pid, &tid);
	}
	chunk_store_free(cs);
	replay_walk(s, &f, chunk_count_ev, &seen, &cause);
	free(cause);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_chunk c;
	char path[128], *cause = NULL;
	const uint8_t *body;
	void *z = NULL;
	size_t bn;
	uint16_t count;
	uint32_t seq;
	int64_t ts;

	if (size < 16 || !fuzz_dir())
		return 0;
	if (!chunk_s) {
		snprintf(path, sizeof(path), "%s/chunk.db", fuzz_dir());
		if (session_open(path, SESSION_CREATE, &chunk_s, &cause)) {
			free(cause);
			return 0;
		}
	}
	memcpy(&count, data + 2, 2);
	memcpy(&seq, data + 4, 4);
	memcpy(&ts, data + 8, 8);
	body = data + 16;
	bn = size - 16;
	if (!(data[0] & 1)) {
		size_t cap = ZSTD_compressBound(bn);

		z = malloc(cap ? cap : 1);
		if (!z)
			return 0;
		cap = ZSTD_compress(z, cap, body, bn, 1);
		if (ZSTD_isError(cap)) {
			free(z);
			return 0;
		}
		body = z;
		bn = cap;
	}
	memset(&c, 0, sizeof(c));
	c.pid = 100;
	c.tid = 101;
	c.first_ts = ts;
	/* (the harness's own sum must not overflow: first_ts is the input's) */
	c.last_ts = ts > INT64_MAX - 1000 ? INT64_MAX : ts + 1000;
	c.first_seq = (int64_t)seq + 1;
	c.last_seq = c.first_seq + count - 1;
	c.depth_min = -2;
	c.depth_max = 64;
	c.count = count;
	c.codec = data[0] & 4 ? 2 : CHUNK_CODEC_ZSTD1;
	c.checksum = propel_fnv(PROPEL_FNV_INIT, body, bn) ^ (data[0] & 2);
	c.kinds = data[1];
	if (session_exec(chunk_s, "DELETE FROM chunks; DELETE FROM chunk_data",
			 &cause) == 0 &&
	    session_chunk_put(chunk_s, &c, body, bn) == 0)
		chunk_read(chunk_s, c.first_seq, count);
	free(cause);
	free(z);
	return 0;
}
