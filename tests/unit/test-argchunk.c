/*
 * tests/unit/test-argchunk.c - the --args registers' compressed rows
 * (engine/argchunk.c): what is written reads back exactly across rows
 * (full 64-bit values, differences of either sign, ids with gaps), an id
 * without registers reads none, a rewind forgets the pending entries, a
 * damaged body reads none instead of garbage, and a session of the
 * earlier form (table argvals, a row per entry) reads through the same
 * reader.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

#include "engine/argchunk.h"
#include "tests/unit/check.h"

#define N (ARGCHUNK_N * 2 + 123)

static uint64_t reg_of(int64_t id, int k)
{
	uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ull + (uint64_t)k;

	return k == 0 ? (uint64_t)(id % 40)     /* a small int (fib's n) */
	       : k == 1 ? 0x7ffd5a400000ull + (uint64_t)id * 8 /* a pointer */
			: x ^ (x >> 29);        /* anything */
}

static sqlite3 *db_new(void)
{
	sqlite3 *db;

	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return NULL;
	sqlite3_exec(db, "CREATE TABLE argchunks(first INTEGER PRIMARY KEY,"
			 " last INTEGER NOT NULL, n INTEGER NOT NULL,"
			 " body BLOB NOT NULL);"
			 "CREATE TABLE argvals(event INTEGER PRIMARY KEY,"
			 " a0, a1, a2, a3, a4, a5);", NULL, NULL, NULL);
	return db;
}

/* every id of 1..N*3 step 3 reads back its registers; ids between none */
static int read_all(struct argchunk_reader *r, int64_t *bad)
{
	uint64_t reg[6];

	for (int64_t id = 1; id <= 3 * N; id++) {
		int got = argchunk_get(r, id, reg), want = id % 3 == 1;

		if (got != want) {
			*bad = id;
			return 0;
		}
		for (int k = 0; got && k < 6; k++)
			if (reg[k] != reg_of(id, k)) {
				*bad = id;
				return 0;
			}
	}
	return 1;
}

int main(void)
{
	struct argchunk_writer *w = NULL;
	struct argchunk_reader *r = NULL;
	sqlite3 *db = db_new();
	uint64_t reg[6];
	int64_t bad = 0, rows = 0;
	sqlite3_stmt *st;
	char sql[160];
	int ok;

	CHECKS_EXPECT(7);
	CHECK("writer", db && argchunk_writer_new(db, &w) == 0, "no writer");
	if (!w)
		return 1;
	for (int64_t id = 1; id <= 3 * N; id += 3) {
		for (int k = 0; k < 6; k++)
			reg[k] = reg_of(id, k);
		argchunk_add(w, id, reg);
	}
	/* a walk undone: entries past 3N+1 forgotten before the flush */
	for (int64_t id = 3 * N + 1; id <= 3 * N + 30; id++)
		argchunk_add(w, id, reg);
	argchunk_rewind(w, 3 * N + 1);
	argchunk_flush(w);
	argchunk_writer_free(w);
	sqlite3_prepare_v2(db, "SELECT count(*) FROM argchunks", -1, &st, NULL);
	if (sqlite3_step(st) == SQLITE_ROW)
		rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	CHECK("rows", rows == 3, "%lld rows for %d entries, want 3",
	      (long long)rows, N);

	ok = argchunk_reader_open(db, &r) == 0 && r && read_all(r, &bad);
	CHECK("roundtrip", ok, "id %lld read wrong", (long long)bad);
	CHECK("rewound", !argchunk_get(r, 3 * N + 2, reg),
	      "an entry rewound away reads back");
	argchunk_reader_free(r);
	r = NULL;

	/* damage the middle row's body: its ids read none, the others read */
	snprintf(sql, sizeof(sql), "UPDATE argchunks SET body = substr(body,"
		 " 1, length(body) / 2) WHERE first = %d", 1 + 3 * ARGCHUNK_N);
	sqlite3_exec(db, sql, NULL, NULL, NULL);
	argchunk_reader_open(db, &r);
	ok = r && !argchunk_get(r, 1 + 3 * (ARGCHUNK_N + 5), reg) &&
	     argchunk_get(r, 1, reg) && reg[1] == reg_of(1, 1) &&
	     argchunk_get(r, 1 + 3 * (N - 1), reg) &&
	     reg[2] == reg_of(1 + 3 * (N - 1), 2);
	CHECK("damaged", ok, "a damaged row read, or spoiled the others");
	argchunk_reader_free(r);
	r = NULL;

	/* an older session: argvals rows, no argchunks */
	sqlite3_exec(db, "DELETE FROM argchunks;"
			 "INSERT INTO argvals VALUES(7, 30, -1, 3, 4, 5, 6);",
		     NULL, NULL, NULL);
	argchunk_reader_open(db, &r);
	ok = r && argchunk_get(r, 7, reg) && reg[0] == 30 &&
	     reg[1] == UINT64_MAX && reg[5] == 6 && !argchunk_get(r, 8, reg);
	CHECK("argvals", ok, "an older session's rows did not read");
	argchunk_reader_free(r);
	r = NULL;

	sqlite3_exec(db, "DELETE FROM argvals", NULL, NULL, NULL);
	CHECK("none", argchunk_reader_open(db, &r) == 0 && !r &&
			      !argchunk_get(r, 7, reg),
	      "a session without --args has a reader");
	sqlite3_close(db);
	return failures != 0;
}
