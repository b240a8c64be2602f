/*
 * tests/fuzz/fuzz-ring.c - the ring record decoder: a session directory of
 * one process image (its map file) and one thread's ring file, as a dead
 * or hostile agent may leave them, drained once (share/drain.c: the
 * spool), ingested into a scratch session (share/ring.c's walk,
 * engine/ingest.c's records and map lines, engine/ingest-map.c) and
 * replayed.
 *
 * Input: a 2-byte length L (little-endian), L bytes of map file text,
 * then the ring file (header, sub-buffers, spool).
 */
#include <sys/stat.h>

#include "share/drain.h"
#include "engine/ingest.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "tests/fuzz/fuzz.h"

static int ring_count_ev(const struct replay_event *ev, void *arg)
{
	(*(int64_t *)arg)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[128], map[192], ring[192], db[128], warn[512];
	struct replay_filter f = { 0 };
	struct ingest_stats st;
	struct session *s = NULL;
	char *cause = NULL;
	int64_t seen = 0;
	int signo, pid;
	uint16_t ml;

	if (size < 2 || !fuzz_dir())
		return 0;
	memcpy(&ml, data, 2);
	if (ml > size - 2)
		ml = (uint16_t)(size - 2);
	snprintf(dir, sizeof(dir), "%s/ring", fuzz_dir());
	snprintf(map, sizeof(map), "%s/100.1a.map", dir);
	snprintf(ring, sizeof(ring), "%s/100.1a.100.ring", dir);
	snprintf(db, sizeof(db), "%s/ring.db", fuzz_dir());
	mkdir(dir, 0700);
	if (fuzz_write(map, data + 2, ml) ||
	    fuzz_write(ring, data + 2 + ml, size - 2 - ml))
		return 0;
	drain_once(dir, NULL);
	if (session_open(db, SESSION_CREATE, &s, &cause))
		goto out;
	if (ingest_dir(s, dir, &st, &cause) == 0) {
		ingest_warning(&st, warn, sizeof(warn));
		ingest_crashed(s, &signo, &pid);
		replay_walk(s, &f, ring_count_ev, &seen, &cause);
	}
out:
	free(cause);
	session_close(s);
	return 0;
}
