/*
 * engine/vitals-store.c - the vital-sign tables of a session (schema and
 * retention in engine/vitals-store.h).  Written by engine/vitals-collect.c
 * (one transaction per epoch), read by `propel vitals report` and the
 * vitals view.  Prepared statements are cached per store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/vitals-store.h"
#include "engine/vitals-summary.h"
#include "share/hash.h"
#include "share/log.h"

static const char vitals_schema[] =
	"CREATE TABLE IF NOT EXISTS vitals_runs(id INTEGER PRIMARY KEY,"
	" start_ns INTEGER, end_ns INTEGER, source TEXT, epoch_ms INTEGER,"
	" notes TEXT);"
	"CREATE TABLE IF NOT EXISTS vitals_status(run INTEGER, vital TEXT,"
	" state TEXT, why TEXT);"
	"CREATE TABLE IF NOT EXISTS vitals_epochs(id INTEGER PRIMARY KEY,"
	" run INTEGER, seq INTEGER, start_ns INTEGER, end_ns INTEGER,"
	" ncpus INTEGER, bpf_run_ns INTEGER, user_run_ns INTEGER,"
	" memfree_kb INTEGER);"
	"CREATE INDEX IF NOT EXISTS vitals_epochs_time ON vitals_epochs(start_ns);"
	"CREATE TABLE IF NOT EXISTS vitals_totals(epoch INTEGER, vital TEXT,"
	" events INTEGER, weight INTEGER, sampled INTEGER, dropped INTEGER,"
	" tshift INTEGER);"
	"CREATE TABLE IF NOT EXISTS vitals_values(epoch INTEGER, vital TEXT,"
	" pid INTEGER, uid INTEGER, comm TEXT, value INTEGER, count INTEGER,"
	" aux INTEGER, short INTEGER);"
	"CREATE INDEX IF NOT EXISTS vitals_values_epoch ON vitals_values(epoch);"
	"CREATE TABLE IF NOT EXISTS vitals_stacks(id INTEGER PRIMARY KEY,"
	" hash INTEGER, frames TEXT);"
	"CREATE TABLE IF NOT EXISTS vitals_samples(id INTEGER PRIMARY KEY,"
	" epoch INTEGER, ts_ns INTEGER, vital TEXT, pid INTEGER, tid INTEGER,"
	" uid INTEGER, comm TEXT, weight INTEGER, counter INTEGER,"
	" label INTEGER, d0 INTEGER, d1 INTEGER, d2 INTEGER, d3 INTEGER,"
	" kstack INTEGER, ustack INTEGER, n INTEGER);"
	"CREATE INDEX IF NOT EXISTS vitals_samples_epoch ON vitals_samples(epoch);";

/* Added later: a session from before it, opened read-only, has none. */
static const char vitals_schema_summary[] =
	"CREATE TABLE IF NOT EXISTS vitals_summary(id INTEGER PRIMARY KEY,"
	" start_ns INTEGER, end_ns INTEGER, nepochs INTEGER, blob BLOB);"
	"CREATE INDEX IF NOT EXISTS vitals_summary_time ON"
	" vitals_summary(start_ns);";

enum {
	ST_EPOCH,
	ST_TOTAL,
	ST_VALUE,
	ST_STACK_INS,
	ST_STACK_GET,
	ST_STACK_OLD,
	ST_SAMPLE,
	ST_NR,
};

static const char *const vitals_sql[ST_NR] = {
	[ST_EPOCH] = "INSERT INTO vitals_epochs(run,seq,start_ns,end_ns,ncpus,"
		     "bpf_run_ns,user_run_ns,memfree_kb) VALUES(?,?,?,?,?,?,?,?)",
	[ST_TOTAL] = "INSERT INTO vitals_totals VALUES(?,?,?,?,?,?,?)",
	[ST_VALUE] = "INSERT INTO vitals_values(epoch,vital,pid,uid,comm,value,"
		     "count,aux,short) VALUES(?,?,?,?,?,?,?,?,?)",
	/* by hash: the text is stored once, not again in a unique index
	 * (a session from before the hash column keeps that index: a text
	 * already there is then found by ST_STACK_OLD) */
	[ST_STACK_INS] = "INSERT OR IGNORE INTO vitals_stacks(hash,frames)"
			 " VALUES(?,?)",
	[ST_STACK_GET] = "SELECT id, frames FROM vitals_stacks WHERE hash=?",
	[ST_STACK_OLD] = "SELECT id FROM vitals_stacks WHERE frames=?",
	[ST_SAMPLE] = "INSERT INTO vitals_samples(epoch,ts_ns,vital,pid,tid,uid,"
		      "comm,weight,counter,label,d0,d1,d2,d3,kstack,ustack,n)"
		      " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
};

/* Stacks recently stored, by hash: most samples repeat a kernel stack,
 * and a hit costs no query.  Emptied when retention deletes stacks. */
#define VITALS_STACK_CACHE 4096

struct vitals_store {
	struct session *s;
	sqlite3 *db;
	sqlite3_stmt *st[ST_NR];
	struct {
		uint64_t hash;
		int64_t id;
	} stacks[VITALS_STACK_CACHE];
};

static int column_exists(sqlite3 *db, const char *table, const char *col)
{
	char sql[128];
	sqlite3_stmt *q;
	int found = 0;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	while (sqlite3_step(q) == SQLITE_ROW)
		if (!strcmp((const char *)sqlite3_column_text(q, 1), col))
			found = 1;
	sqlite3_finalize(q);
	return found;
}

int vitals_store_new(struct session *s, struct vitals_store **out,
		     char **cause)
{
	struct vitals_store *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return propel_cause(cause, -ENOMEM, "out of memory");
	st->s = s;
	st->db = session_db(s);
	sqlite3_busy_timeout(st->db, 5000);
	err = session_exec(s, vitals_schema, cause);
	if (err) {
		free(st);
		return err;
	}
	/* sessions written before rule 3, before stacks were found by hash,
	 * before samples were folded lack these columns: add them (errors
	 * are ignored: a read-only session is read as it is) */
	if (!column_exists(st->db, "vitals_values", "short"))
		session_exec(s, "ALTER TABLE vitals_values ADD COLUMN short INTEGER",
			     NULL);
	if (!column_exists(st->db, "vitals_stacks", "hash"))
		session_exec(s, "ALTER TABLE vitals_stacks ADD COLUMN hash INTEGER",
			     NULL);
	if (!column_exists(st->db, "vitals_samples", "n"))
		session_exec(s, "ALTER TABLE vitals_samples ADD COLUMN n INTEGER",
			     NULL);
	session_exec(s, "CREATE INDEX IF NOT EXISTS vitals_stacks_hash ON"
			" vitals_stacks(hash)", NULL);
	session_exec(s, vitals_schema_summary, NULL);
	*out = st;
	return 0;
}

void vitals_store_free(struct vitals_store *st)
{
	int i;

	if (!st)
		return;
	for (i = 0; i < ST_NR; i++)
		sqlite3_finalize(st->st[i]);
	free(st);
}

static sqlite3_stmt *stmt(struct vitals_store *st, int which)
{
	if (!st->st[which] &&
	    sqlite3_prepare_v2(st->db, vitals_sql[which], -1, &st->st[which],
			       NULL) != SQLITE_OK)
		return NULL;
	sqlite3_reset(st->st[which]);
	sqlite3_clear_bindings(st->st[which]);
	return st->st[which];
}

static int step_done(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	sqlite3_reset(q);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int vitals_store_begin(struct vitals_store *st)
{
	return session_exec(st->s, "BEGIN IMMEDIATE", NULL);
}

int vitals_store_commit(struct vitals_store *st)
{
	return session_exec(st->s, "COMMIT", NULL);
}

int vitals_store_run_begin(struct vitals_store *st, const char *source,
			   unsigned epoch_ms, const char *notes,
			   int64_t *run_id)
{
	sqlite3_stmt *q;
	int err;

	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO vitals_runs(start_ns,source,epoch_ms,"
			       "notes) VALUES(strftime('%s','now')*1000000000,?,?,?)",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, source, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(q, 2, epoch_ms);
	sqlite3_bind_text(q, 3, notes, -1, SQLITE_TRANSIENT);
	err = step_done(q);
	sqlite3_finalize(q);
	if (!err)
		*run_id = sqlite3_last_insert_rowid(st->db);
	return err;
}

int vitals_store_status(struct vitals_store *st, int64_t run, const char *vital,
			const char *state, const char *why)
{
	sqlite3_stmt *q;
	int err;

	if (sqlite3_prepare_v2(st->db, "INSERT INTO vitals_status VALUES(?,?,?,?)",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(q, 1, run);
	sqlite3_bind_text(q, 2, vital, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 3, state, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 4, why, -1, SQLITE_TRANSIENT);
	err = step_done(q);
	sqlite3_finalize(q);
	return err;
}

int vitals_store_run_end(struct vitals_store *st, int64_t run)
{
	char sql[160];

	snprintf(sql, sizeof(sql),
		 "UPDATE vitals_runs SET end_ns=strftime('%%s','now')*1000000000"
		 " WHERE id=%lld",
		 (long long)run);
	return session_exec(st->s, sql, NULL);
}

int64_t vitals_store_epoch(struct vitals_store *st,
			   const struct vitals_store_epoch *e)
{
	sqlite3_stmt *q = stmt(st, ST_EPOCH);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, e->run);
	sqlite3_bind_int64(q, 2, e->seq);
	sqlite3_bind_int64(q, 3, (int64_t)e->start_ns);
	sqlite3_bind_int64(q, 4, (int64_t)e->end_ns);
	sqlite3_bind_int(q, 5, e->ncpus);
	sqlite3_bind_int64(q, 6, (int64_t)e->bpf_run_ns);
	sqlite3_bind_int64(q, 7, (int64_t)e->user_run_ns);
	sqlite3_bind_int64(q, 8, (int64_t)e->memfree_kb);
	if (step_done(q))
		return -EIO;
	return sqlite3_last_insert_rowid(st->db);
}

int vitals_store_total(struct vitals_store *st, int64_t epoch,
		       const char *vital, uint64_t events, uint64_t weight,
		       uint64_t sampled, uint64_t dropped, unsigned tshift)
{
	sqlite3_stmt *q = stmt(st, ST_TOTAL);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, epoch);
	sqlite3_bind_text(q, 2, vital, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (int64_t)events);
	sqlite3_bind_int64(q, 4, (int64_t)weight);
	sqlite3_bind_int64(q, 5, (int64_t)sampled);
	sqlite3_bind_int64(q, 6, (int64_t)dropped);
	sqlite3_bind_int(q, 7, tshift);
	return step_done(q);
}

int vitals_store_value(struct vitals_store *st, int64_t epoch,
		       uint64_t start_ns, const char *vital, uint32_t pid,
		       uint32_t uid, const char *comm, uint64_t value,
		       uint64_t count, uint64_t aux, uint64_t short_io)
{
	sqlite3_stmt *q = stmt(st, ST_VALUE);

	(void)start_ns; /* the scales are summed on read */
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, epoch);
	sqlite3_bind_text(q, 2, vital, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, pid);
	sqlite3_bind_int64(q, 4, uid);
	sqlite3_bind_text(q, 5, comm, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 6, (int64_t)value);
	sqlite3_bind_int64(q, 7, (int64_t)count);
	sqlite3_bind_int64(q, 8, (int64_t)aux);
	sqlite3_bind_int64(q, 9, (int64_t)short_io);
	return step_done(q);
}

/* The id of a stored stack, stored now if it is new; 0 on error. */
static int64_t stack_id(struct vitals_store *st, const char *frames)
{
	size_t len;
	uint64_t h;
	sqlite3_stmt *q;
	int64_t id = 0;
	unsigned slot;

	if (!frames || !*frames)
		return 0;
	len = strlen(frames);
	h = propel_fnv(PROPEL_FNV_INIT, frames, len) >> 1; /* an int64 >= 0 */
	slot = (unsigned)(h % VITALS_STACK_CACHE);
	if (st->stacks[slot].hash == h && st->stacks[slot].id)
		return st->stacks[slot].id;
	q = stmt(st, ST_STACK_GET);
	if (!q)
		return 0;
	sqlite3_bind_int64(q, 1, (int64_t)h);
	while (!id && sqlite3_step(q) == SQLITE_ROW) {
		const char *f = (const char *)sqlite3_column_text(q, 1);

		if (f && strcmp(f, frames) == 0)
			id = sqlite3_column_int64(q, 0);
	}
	sqlite3_reset(q);
	if (!id) {
		q = stmt(st, ST_STACK_INS);
		if (!q)
			return 0;
		sqlite3_bind_int64(q, 1, (int64_t)h);
		sqlite3_bind_text(q, 2, frames, (int)len, SQLITE_STATIC);
		if (step_done(q))
			return 0;
		if (sqlite3_changes(st->db) > 0) {
			id = sqlite3_last_insert_rowid(st->db);
		} else { /* an old session's unique text */
			q = stmt(st, ST_STACK_OLD);
			if (!q)
				return 0;
			sqlite3_bind_text(q, 1, frames, (int)len, SQLITE_STATIC);
			if (sqlite3_step(q) == SQLITE_ROW)
				id = sqlite3_column_int64(q, 0);
			sqlite3_reset(q);
		}
	}
	st->stacks[slot].hash = h;
	st->stacks[slot].id = id;
	return id;
}

int vitals_store_sample(struct vitals_store *st, int64_t epoch,
			const struct vitals_store_sample *s)
{
	int64_t k = stack_id(st, s->kstack), u = stack_id(st, s->ustack);
	sqlite3_stmt *q = stmt(st, ST_SAMPLE);
	int i;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, epoch);
	sqlite3_bind_int64(q, 2, (int64_t)s->ts_ns);
	sqlite3_bind_text(q, 3, s->vital, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, s->pid);
	sqlite3_bind_int64(q, 5, s->tid);
	sqlite3_bind_int64(q, 6, s->uid);
	sqlite3_bind_text(q, 7, s->comm, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 8, (int64_t)s->weight);
	sqlite3_bind_int64(q, 9, (int64_t)s->counter);
	sqlite3_bind_int64(q, 10, (int64_t)s->label);
	for (i = 0; i < 4; i++)
		sqlite3_bind_int64(q, 11 + i, (int64_t)s->d[i]);
	if (k)
		sqlite3_bind_int64(q, 15, k);
	if (u)
		sqlite3_bind_int64(q, 16, u);
	if (s->n > 1)
		sqlite3_bind_int64(q, 17, s->n);
	return step_done(q);
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

uint64_t vitals_store_used_bytes(struct vitals_store *st)
{
	int64_t pages = query_int(st->db, "PRAGMA page_count");
	int64_t freep = query_int(st->db, "PRAGMA freelist_count");
	int64_t psize = query_int(st->db, "PRAGMA page_size");

	return (uint64_t)((pages - freep) * psize);
}

int vitals_store_limit(struct vitals_store *st, uint64_t bytes)
{
	int64_t psize = query_int(st->db, "PRAGMA page_size");
	char sql[96];

	if (psize <= 0)
		return -EIO;
	snprintf(sql, sizeof(sql), "PRAGMA max_page_count=%llu",
		 (unsigned long long)(bytes / (uint64_t)psize));
	query_int(st->db, sql); /* returns the limit in force */
	return 0;
}

sqlite3 *vitals_store_db(struct vitals_store *st)
{
	return st->db;
}

void vitals_store_forget_stacks(struct vitals_store *st)
{
	memset(st->stacks, 0, sizeof(st->stacks));
}

int vitals_store_gc_stacks(struct vitals_store *st)
{
	vitals_store_forget_stacks(st); /* ids may be gone */
	return session_exec(st->s,
			    "DELETE FROM vitals_stacks WHERE id NOT IN"
			    " (SELECT kstack FROM vitals_samples WHERE kstack"
			    " IS NOT NULL UNION SELECT ustack FROM"
			    " vitals_samples WHERE ustack IS NOT NULL)",
			    NULL);
}

/* Delete the oldest tenth of the summaries and the samples kept with
 * them (their epochs are gone from vitals_epochs).  1: deleted some. */
static int retain_summaries(struct vitals_store *st)
{
	int64_t n = query_int(st->db, "SELECT count(*) FROM vitals_summary");
	int64_t cut;
	char sql[512];

	if (n <= 0)
		return 0;
	snprintf(sql, sizeof(sql),
		 "SELECT end_ns FROM vitals_summary ORDER BY start_ns"
		 " LIMIT 1 OFFSET %lld",
		 (long long)(n / 10 > 0 ? n / 10 - 1 : 0));
	cut = query_int(st->db, sql);
	snprintf(sql, sizeof(sql),
		 "DELETE FROM vitals_summary WHERE end_ns <= %lld;"
		 "DELETE FROM vitals_samples WHERE ts_ns < %lld AND epoch NOT IN"
		 " (SELECT id FROM vitals_epochs);",
		 (long long)cut, (long long)cut);
	if (session_exec(st->s, sql, NULL))
		return 0;
	vitals_store_gc_stacks(st);
	return 1;
}

int vitals_store_retain(struct vitals_store *st, uint64_t budget)
{
	int rounds = 0;

	while (budget && vitals_store_used_bytes(st) > budget && rounds++ < 64) {
		int64_t n, cut, nsamples;
		char sql[512];
		int err;

		/* the oldest history first: the summaries, a ring by size */
		if (retain_summaries(st))
			continue;
		n = query_int(st->db, "SELECT count(*) FROM vitals_epochs");
		nsamples = query_int(st->db, "SELECT count(*) FROM vitals_samples");
		if (n <= 1 && nsamples == 0)
			break;
		cut = query_int(st->db, "SELECT min(id) FROM vitals_epochs") +
		      (n / 10 > 0 ? n / 10 : 1);
		if (nsamples > 0) {
			/* samples first: they are most of the bytes */
			int64_t scut = query_int(
				st->db, "SELECT min(epoch) FROM vitals_samples");

			snprintf(sql, sizeof(sql),
				 "DELETE FROM vitals_samples WHERE epoch <= %lld;",
				 (long long)(scut + (n / 10 > 0 ? n / 10 : 1)));
		} else {
			snprintf(sql, sizeof(sql),
				 "DELETE FROM vitals_values WHERE epoch < %lld;"
				 "DELETE FROM vitals_totals WHERE epoch < %lld;"
				 "DELETE FROM vitals_epochs WHERE id < %lld;",
				 (long long)cut, (long long)cut, (long long)cut);
		}
		err = session_exec(st->s, sql, NULL);
		if (!err && nsamples > 0)
			err = vitals_store_gc_stacks(st);
		if (err)
			return err;
		vitals_store_forget_stacks(st);
	}
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

static void copy_text(char *dst, size_t n, const unsigned char *src)
{
	snprintf(dst, n, "%s", src ? (const char *)src : "");
}

static int table_exists(sqlite3 *db)
{
	return query_int(db, "SELECT count(*) FROM sqlite_master WHERE"
			     " name='vitals_epochs'") > 0;
}

int vitals_hist_add_epoch(struct vitals_hist *h, size_t *cap)
{
	if (h->n == *cap) {
		struct vitals_hepoch *n;

		*cap = *cap ? 2 * *cap : 64;
		n = realloc(h->ep, *cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		h->ep = n;
	}
	memset(&h->ep[h->n], 0, sizeof(h->ep[0]));
	h->n++;
	return 0;
}

int vitals_hepoch_add_row(struct vitals_hepoch *e, size_t *cap)
{
	if (e->nrows == *cap) {
		struct vitals_hrow *n;

		*cap = *cap ? 2 * *cap : 16;
		n = realloc(e->rows, *cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		e->rows = n;
	}
	memset(&e->rows[e->nrows], 0, sizeof(e->rows[0]));
	e->nrows++;
	return 0;
}

static int epoch_cmp(const void *a, const void *b)
{
	const struct vitals_hepoch *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int hrow_cmp(const void *a, const void *b)
{
	const struct vitals_hrow *x = a, *y = b;
	int c = strcmp(x->vital, y->vital);

	if (c)
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Sum the epochs of h (in time order) into buckets of scale seconds: one
 * row per vital and process, the totals summed.  0 or -ENOMEM. */
static int hist_rescale(struct vitals_hist *h, unsigned scale)
{
	uint64_t w = (uint64_t)scale * 1000000000ull;
	size_t i = 0, j, k, n = 0, m;
	struct vitals_hepoch *out;

	if (!h->n)
		return 0;
	out = calloc(h->n, sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (i < h->n) {
		uint64_t b = h->ep[i].start_ns / w * w;
		struct vitals_hepoch *o = &out[n++];
		size_t nr = 0, v;

		for (j = i; j < h->n && h->ep[j].start_ns / w * w == b; j++)
			nr += h->ep[j].nrows;
		o->start_ns = b;
		o->end_ns = b + w;
		o->rows = malloc((nr ? nr : 1) * sizeof(*o->rows));
		if (!o->rows) {
			for (k = 0; k < n; k++)
				free(out[k].rows);
			free(out);
			return -ENOMEM;
		}
		for (k = i; k < j; k++) {
			const struct vitals_hepoch *e = &h->ep[k];

			memcpy(o->rows + o->nrows, e->rows,
			       e->nrows * sizeof(*e->rows));
			o->nrows += e->nrows;
			if (e->ncpus > o->ncpus)
				o->ncpus = e->ncpus;
			o->bpf_run_ns += e->bpf_run_ns;
			o->user_run_ns += e->user_run_ns;
			o->summarized |= e->summarized;
			for (v = 0; v < PROPEL_VITAL_NR; v++) {
				o->tot[v].events += e->tot[v].events;
				o->tot[v].weight += e->tot[v].weight;
				o->tot[v].sampled += e->tot[v].sampled;
				o->tot[v].dropped += e->tot[v].dropped;
			}
		}
		qsort(o->rows, o->nrows, sizeof(*o->rows), hrow_cmp);
		for (k = 0, m = 0; k < o->nrows; k++) {
			struct vitals_hrow *r = &o->rows[k];

			if (m && !hrow_cmp(&o->rows[m - 1], r)) {
				o->rows[m - 1].value += r->value;
				o->rows[m - 1].count += r->count;
				o->rows[m - 1].aux += r->aux;
				o->rows[m - 1].short_io += r->short_io;
			} else {
				o->rows[m++] = *r;
				o->rows[m - 1].uid = 0;
			}
		}
		o->nrows = m;
		i = j;
	}
	for (i = 0; i < h->n; i++)
		free(h->ep[i].rows);
	free(h->ep);
	h->ep = out;
	h->n = n;
	return 0;
}

int vitals_store_load(struct vitals_store *st, unsigned scale,
		      struct vitals_hist *h, char **cause)
{
	return vitals_store_load_window(st, scale, 0, UINT64_MAX >> 1, h,
					cause);
}

int vitals_store_load_window(struct vitals_store *st, unsigned scale,
			     uint64_t from_ns, uint64_t to_ns,
			     struct vitals_hist *h, char **cause)
{
	sqlite3_stmt *q;
	size_t cap = 0, rcap = 0;
	int err = 0, rc;
	int64_t last_key = -1;
	unsigned ncpus = 1;

	memset(h, 0, sizeof(*h));
	if (!table_exists(st->db))
		return 0;
	/* run info and statuses: the latest run */
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, source, epoch_ms, notes FROM vitals_runs"
			       " ORDER BY id DESC LIMIT 1",
			       -1, &q, NULL) == SQLITE_OK) {
		int64_t run = -1;

		if (sqlite3_step(q) == SQLITE_ROW) {
			run = sqlite3_column_int64(q, 0);
			copy_text(h->source, sizeof(h->source),
				  sqlite3_column_text(q, 1));
			h->epoch_ms = sqlite3_column_int(q, 2);
			copy_text(h->notes, sizeof(h->notes),
				  sqlite3_column_text(q, 3));
		}
		sqlite3_finalize(q);
		if (run >= 0 &&
		    sqlite3_prepare_v2(st->db,
				       "SELECT vital, state, why FROM vitals_status"
				       " WHERE run=? ORDER BY rowid",
				       -1, &q, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(q, 1, run);
			while (sqlite3_step(q) == SQLITE_ROW && h->nstatus < 16) {
				copy_text(h->status[h->nstatus].vital, 12,
					  sqlite3_column_text(q, 0));
				copy_text(h->status[h->nstatus].state, 12,
					  sqlite3_column_text(q, 1));
				copy_text(h->status[h->nstatus].why, 200,
					  sqlite3_column_text(q, 2));
				h->nstatus++;
			}
			sqlite3_finalize(q);
		}
	}
	ncpus = (unsigned)query_int(st->db, "SELECT max(ncpus) FROM vitals_epochs");
	if (!ncpus)
		ncpus = 1;
	rc = sqlite3_prepare_v2(
		st->db,
		"SELECT e.id, e.start_ns, e.end_ns, e.ncpus, e.bpf_run_ns,"
		" e.user_run_ns, v.vital, v.pid, v.uid, v.comm, v.value,"
		" v.count, v.aux, v.short FROM vitals_epochs e"
		" LEFT JOIN vitals_values v ON v.epoch = e.id"
		" WHERE e.start_ns < ?2 AND e.end_ns > ?1"
		" ORDER BY e.start_ns, e.id",
		-1, &q, NULL);
	if (rc != SQLITE_OK)
		return propel_cause(cause, -EIO, "reading vitals: %s",
				    sqlite3_errmsg(st->db));
	sqlite3_bind_int64(q, 1, (int64_t)from_ns);
	sqlite3_bind_int64(q, 2, (int64_t)to_ns);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t key = sqlite3_column_int64(q, 0);
		struct vitals_hepoch *e;
		struct vitals_hrow *r;

		if (key != last_key) {
			err = vitals_hist_add_epoch(h, &cap);
			if (err)
				break;
			rcap = 0;
			last_key = key;
			e = &h->ep[h->n - 1];
			e->id = key;
			e->start_ns = sqlite3_column_int64(q, 1);
			e->end_ns = sqlite3_column_int64(q, 2);
			e->ncpus = (unsigned)sqlite3_column_int(q, 3);
			e->bpf_run_ns = sqlite3_column_int64(q, 4);
			e->user_run_ns = sqlite3_column_int64(q, 5);
		}
		e = &h->ep[h->n - 1];
		if (sqlite3_column_type(q, 6) == SQLITE_NULL)
			continue;
		err = vitals_hepoch_add_row(e, &rcap);
		if (err)
			break;
		r = &e->rows[e->nrows - 1];
		copy_text(r->vital, sizeof(r->vital), sqlite3_column_text(q, 6));
		r->pid = sqlite3_column_int64(q, 7);
		r->uid = sqlite3_column_int64(q, 8);
		copy_text(r->comm, sizeof(r->comm), sqlite3_column_text(q, 9));
		r->value = sqlite3_column_double(q, 10);
		r->count = sqlite3_column_int64(q, 11);
		r->aux = sqlite3_column_int64(q, 12);
		r->short_io = sqlite3_column_int64(q, 13);
	}
	sqlite3_finalize(q);
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	/* the minutes older than the raw window, then time order */
	if (!err && (err = vitals_summary_load(st, from_ns, to_ns, h)) == 0) {
		size_t i;

		for (i = 0; i < h->n; i++)
			if (!h->ep[i].ncpus)
				h->ep[i].ncpus = ncpus;
		qsort(h->ep, h->n, sizeof(h->ep[0]), epoch_cmp);
		if (scale)
			err = hist_rescale(h, scale);
	}
	if (err) {
		vitals_hist_release(h);
		return propel_cause(cause, err, "reading vitals: %s",
				    err == -ENOMEM ? "out of memory"
						   : sqlite3_errmsg(st->db));
	}
	return 0;
}

void vitals_hist_release(struct vitals_hist *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->ep[i].rows);
	free(h->ep);
	h->ep = NULL;
	h->n = 0;
}

int vitals_store_samples(struct vitals_store *st, int64_t epoch,
			 const char *vital, int by_weight,
			 int (*cb)(void *arg, const struct vitals_hsample *s),
			 void *arg)
{
	return vitals_store_samples_window(st, epoch, vital, by_weight, 0,
					   UINT64_MAX >> 1, cb, arg);
}

int vitals_store_samples_window(struct vitals_store *st, int64_t epoch,
				const char *vital, int by_weight,
				uint64_t from_ns, uint64_t to_ns,
				int (*cb)(void *arg,
					  const struct vitals_hsample *s),
				void *arg)
{
	char sql[1024];
	sqlite3_stmt *q;
	int rc, ret = 0, i;

	if (!table_exists(st->db))
		return 0;
	snprintf(sql, sizeof(sql),
		 "SELECT s.id, s.epoch, s.ts_ns, coalesce(e.start_ns, s.ts_ns),"
		 " s.weight, s.vital,"
		 " s.comm, s.pid, s.tid, s.uid, s.d0, s.d1, s.d2, s.d3,"
		 " k.frames, u.frames, s.n FROM vitals_samples s"
		 " LEFT JOIN vitals_epochs e ON e.id = s.epoch"
		 " LEFT JOIN vitals_stacks k ON k.id = s.kstack"
		 " LEFT JOIN vitals_stacks u ON u.id = s.ustack"
		 " WHERE (?1 <= 0 OR s.epoch = ?1) AND (?2 IS NULL OR s.vital = ?2)"
		 " AND s.ts_ns >= ?3 AND s.ts_ns < ?4"
		 " ORDER BY %s",
		 by_weight ? "s.weight DESC, s.id" : "s.ts_ns, s.id");
	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(q, 1, epoch);
	if (vital)
		sqlite3_bind_text(q, 2, vital, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 3, (int64_t)from_ns);
	sqlite3_bind_int64(q, 4, (int64_t)to_ns);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct vitals_hsample s = { 0 };

		s.id = sqlite3_column_int64(q, 0);
		s.epoch = sqlite3_column_int64(q, 1);
		s.ts_ns = sqlite3_column_int64(q, 2);
		s.epoch_start_ns = sqlite3_column_int64(q, 3);
		s.weight = sqlite3_column_int64(q, 4);
		copy_text(s.vital, sizeof(s.vital), sqlite3_column_text(q, 5));
		copy_text(s.comm, sizeof(s.comm), sqlite3_column_text(q, 6));
		s.pid = sqlite3_column_int64(q, 7);
		s.tid = sqlite3_column_int64(q, 8);
		s.uid = sqlite3_column_int64(q, 9);
		for (i = 0; i < 4; i++)
			s.d[i] = sqlite3_column_int64(q, 10 + i);
		s.kstack = (const char *)sqlite3_column_text(q, 14);
		s.ustack = (const char *)sqlite3_column_text(q, 15);
		s.n = sqlite3_column_type(q, 16) == SQLITE_NULL
			      ? 1
			      : (uint64_t)sqlite3_column_int64(q, 16);
		ret = cb(arg, &s);
		if (ret)
			break;
	}
	sqlite3_finalize(q);
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		return -EIO;
	return ret;
}

int vitals_store_span(struct vitals_store *st, uint64_t *first_ns,
		      uint64_t *last_ns)
{
	int64_t a, b, c, d;

	*first_ns = *last_ns = 0;
	if (!table_exists(st->db))
		return 0;
	a = query_int(st->db, "SELECT coalesce(min(start_ns), 0) FROM vitals_epochs");
	b = query_int(st->db, "SELECT coalesce(max(end_ns), 0) FROM vitals_epochs");
	c = query_int(st->db, "SELECT coalesce(min(start_ns), 0) FROM vitals_summary");
	d = query_int(st->db, "SELECT coalesce(max(end_ns), 0) FROM vitals_summary");
	/* (query_int gives 0 where an old session has no such table) */
	*first_ns = (uint64_t)(a && c ? (a < c ? a : c) : a ? a : c);
	*last_ns = (uint64_t)(b > d ? b : d);
	return 0;
}
