/*
 * engine/argchunk.c - --args registers in compressed rows (see
 * engine/argchunk.h).  The reader keeps the last row it decoded: the TUI
 * and replay ask for the entries of one thread in order, so one row
 * serves thousands of lookups.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/argchunk.h"
#include "engine/varint.h"

#define ARGCHUNK_LEVEL 1
#define ARGCHUNK_REC_MAX (7 * VARINT_MAX) /* one entry's bytes, at most */

struct argchunk_writer {
	sqlite3_stmt *ins;
	ZSTD_CCtx *cctx;
	int64_t id[ARGCHUNK_N];
	uint64_t reg[ARGCHUNK_N][6];
	size_t n;
	uint8_t buf[ARGCHUNK_N * ARGCHUNK_REC_MAX];
	uint8_t *z;
	size_t zcap;
};

int argchunk_writer_new(sqlite3 *db, struct argchunk_writer **out)
{
	struct argchunk_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->zcap = ZSTD_compressBound(sizeof(w->buf));
	w->z = malloc(w->zcap);
	w->cctx = ZSTD_createCCtx();
	if (!w->z || !w->cctx) {
		argchunk_writer_free(w);
		return -ENOMEM;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
			       ARGCHUNK_LEVEL);
	if (sqlite3_prepare_v2(db, "INSERT INTO argchunks(first,last,n,body)"
				   " VALUES(?,?,?,?)", -1, &w->ins,
			       NULL) != SQLITE_OK) {
		argchunk_writer_free(w);
		return -EIO;
	}
	*out = w;
	return 0;
}

int argchunk_flush(struct argchunk_writer *w)
{
	uint64_t prev[6] = { 0 };
	int64_t prev_id;
	uint8_t *p = w->buf;
	size_t zn;
	int rc;

	if (!w || !w->n)
		return 0;
	prev_id = w->id[0];
	for (size_t i = 0; i < w->n; i++) {
		p = put_varint(p, (uint64_t)(w->id[i] - prev_id));
		prev_id = w->id[i];
		for (int k = 0; k < 6; k++) {
			p = put_varint(p, zz((int64_t)(w->reg[i][k] - prev[k])));
			prev[k] = w->reg[i][k];
		}
	}
	zn = ZSTD_compress2(w->cctx, w->z, w->zcap, w->buf,
			    (size_t)(p - w->buf));
	if (ZSTD_isError(zn))
		return -EIO;
	sqlite3_bind_int64(w->ins, 1, w->id[0]);
	sqlite3_bind_int64(w->ins, 2, w->id[w->n - 1]);
	sqlite3_bind_int64(w->ins, 3, (int64_t)w->n);
	sqlite3_bind_blob(w->ins, 4, w->z, (int)zn, SQLITE_STATIC);
	rc = sqlite3_step(w->ins);
	sqlite3_reset(w->ins);
	sqlite3_clear_bindings(w->ins);
	w->n = 0;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int argchunk_add(struct argchunk_writer *w, int64_t id, const uint64_t *reg)
{
	if (w->n && id <= w->id[w->n - 1])
		return -EIO; /* ids must ascend: a caller's bug */
	w->id[w->n] = id;
	memcpy(w->reg[w->n], reg, sizeof(w->reg[0]));
	if (++w->n == ARGCHUNK_N)
		return argchunk_flush(w);
	return 0;
}

void argchunk_rewind(struct argchunk_writer *w, int64_t seq)
{
	while (w && w->n && w->id[w->n - 1] >= seq)
		w->n--;
}

void argchunk_writer_free(struct argchunk_writer *w)
{
	if (!w)
		return;
	sqlite3_finalize(w->ins);
	ZSTD_freeCCtx(w->cctx);
	free(w->z);
	free(w);
}

/* ---- reading ---- */

struct argchunk_reader {
	sqlite3_stmt *st;  /* the row holding an id (argchunks) */
	sqlite3_stmt *old; /* an entry's row (argvals): an older session */
	ZSTD_DCtx *dctx;
	int64_t first, last; /* of the row decoded; last < first: none */
	size_t n;
	int64_t id[ARGCHUNK_N];
	uint64_t reg[ARGCHUNK_N][6];
	uint8_t buf[ARGCHUNK_N * ARGCHUNK_REC_MAX];
};

static int argchunk_any(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int any;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0; /* no such table (an older session) */
	any = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return any;
}

int argchunk_reader_open(sqlite3 *db, struct argchunk_reader **out)
{
	struct argchunk_reader *r;
	const char *sql;
	int rows;

	*out = NULL;
	if ((rows = argchunk_any(db, "SELECT 1 FROM argchunks LIMIT 1")))
		sql = "SELECT first, last, n, body FROM argchunks"
		      " WHERE first <= ? ORDER BY first DESC LIMIT 1";
	else if (argchunk_any(db, "SELECT 1 FROM argvals LIMIT 1"))
		sql = "SELECT a0, a1, a2, a3, a4, a5 FROM argvals"
		      " WHERE event = ?";
	else
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->last = -1;
	if (sqlite3_prepare_v2(db, sql, -1, rows ? &r->st : &r->old,
			       NULL) != SQLITE_OK ||
	    (r->st && !(r->dctx = ZSTD_createDCtx()))) {
		argchunk_reader_free(r);
		return 0; /* (unreadable: as without --args) */
	}
	*out = r;
	return 0;
}

/* Decode a row's body; 0, or -1 when it is damaged. */
static int argchunk_decode(struct argchunk_reader *r, int64_t first,
			   int64_t n, const void *body, size_t size)
{
	uint64_t prev[6] = { 0 }, v;
	int64_t id = first;
	const uint8_t *p = r->buf, *end;
	size_t len;

	if (n <= 0 || n > ARGCHUNK_N)
		return -1;
	len = ZSTD_decompressDCtx(r->dctx, r->buf, sizeof(r->buf), body, size);
	if (ZSTD_isError(len))
		return -1;
	end = r->buf + len;
	for (int64_t i = 0; i < n; i++) {
		if (get_varint(&p, end, &v))
			return -1;
		id += (int64_t)v;
		r->id[i] = id;
		for (int k = 0; k < 6; k++) {
			if (get_varint(&p, end, &v))
				return -1;
			prev[k] += (uint64_t)unzz(v);
			r->reg[i][k] = prev[k];
		}
	}
	r->n = (size_t)n;
	return p == end ? 0 : -1;
}

static int argchunk_load(struct argchunk_reader *r, int64_t id)
{
	int ok = 0;

	r->first = 0; /* nothing cached until a row decodes whole */
	r->last = -1;
	sqlite3_reset(r->st);
	sqlite3_bind_int64(r->st, 1, id);
	if (sqlite3_step(r->st) == SQLITE_ROW) {
		int64_t first = sqlite3_column_int64(r->st, 0);
		int64_t last = sqlite3_column_int64(r->st, 1);
		int64_t n = sqlite3_column_int64(r->st, 2);
		const void *body = sqlite3_column_blob(r->st, 3);
		int size = sqlite3_column_bytes(r->st, 3);

		if (id <= last && body &&
		    argchunk_decode(r, first, n, body, (size_t)size) == 0) {
			r->first = first;
			r->last = last;
			ok = 1;
		}
	}
	sqlite3_reset(r->st);
	return ok;
}

int argchunk_get(struct argchunk_reader *r, int64_t id, uint64_t *reg)
{
	size_t lo = 0, hi;
	int ok;

	if (!r || id <= 0)
		return 0;
	if (r->old) {
		sqlite3_reset(r->old);
		sqlite3_bind_int64(r->old, 1, id);
		ok = sqlite3_step(r->old) == SQLITE_ROW;
		for (int i = 0; ok && i < 6; i++)
			reg[i] = (uint64_t)sqlite3_column_int64(r->old, i);
		sqlite3_reset(r->old);
		return ok;
	}
	if ((id < r->first || id > r->last) && !argchunk_load(r, id))
		return 0;
	hi = r->n;
	while (lo < hi) { /* the first id >= the one asked for */
		size_t mid = lo + (hi - lo) / 2;

		if (r->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->n || r->id[lo] != id)
		return 0;
	memcpy(reg, r->reg[lo], sizeof(r->reg[0]));
	return 1;
}

void argchunk_reader_free(struct argchunk_reader *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->st);
	sqlite3_finalize(r->old);
	ZSTD_freeDCtx(r->dctx);
	free(r);
}
