/*
 * engine/vitals-summary.c - the minutes of vital signs older than the raw
 * window, summarized as chopstix keeps its history (the format and what is
 * kept: engine/vitals-summary.h).  Called by engine/vitals-collect.c after
 * it stored an epoch (vitals_summary_compact) and by engine/vitals-store.c
 * when it loads a window (vitals_summary_load); the rules' view of a loaded
 * history (vitals_hist_flags) is here too, since compaction keeps the
 * samples of what they flag.
 *
 * A blob is zstd of: version byte, number of epochs, then per epoch
 *   id (after the previous one's), start (us after the previous epoch's
 *   end, the first: after the row's start_ns), length (us), ncpus,
 *   bpf_run and user_run (us), a bit mask of the vitals present, and per
 *   vital present events, weight, sampled, dropped, tshift, p50, p90, p99,
 *   ntop and ntop x (pid, comm length + 1 and its bytes the first time
 *   the blob names that pid, else 0; value, count: 0 = the value, else
 *   count + 1; for blkio aux, short)
 * every integer an unsigned LEB128 varint; values, counts and quantiles
 * rounded to 8 significant bits (a relative error under 0.4%: the rules'
 * thresholds do not see it, and it is what makes a minute compress to a
 * few kilobytes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/vitals-summary.h"
#include "share/kinds.h"
#include "share/log.h"

#define PR_DOMAIN "vitals"
#define VS_VERSION 2
#define VS_STR2(x) #x
#define VS_STR(x) VS_STR2(x)

static const char *const vs_names[PROPEL_VITAL_NR] = {
	"cpu", "l2miss", "sched", "block", "blkio", "kmem",
	"umem", "syscall", "signal", "sock", "lock",
};

static int vs_vital(const char *name)
{
	int i;

	for (i = 0; i < PROPEL_VITAL_NR; i++)
		if (!strcmp(vs_names[i], name))
			return i;
	return -1;
}

/* ---- a growing byte buffer of varints -------------------------------- */

struct vs_buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void vs_put_bytes(struct vs_buf *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void vs_put(struct vs_buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n] = v & 0x7f;
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	vs_put_bytes(b, t, n);
}

/* v rounded to its 8 most significant bits. */
static uint64_t vs_round(uint64_t v)
{
	unsigned sh = 0;

	while ((v >> sh) >= 256)
		sh++;
	if (!sh)
		return v;
	v = (v + (1ull << (sh - 1))) >> sh;
	return v << sh;
}

struct vs_rd {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t vs_get(struct vs_rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end && shift < 64) {
		unsigned char c = *r->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
		shift += 7;
	}
	r->bad = 1;
	return 0;
}

/* ---- the rules over a loaded history --------------------------------- */

int vitals_hist_rules_epochs(const struct vitals_hist *h,
			     struct vitals_rules_epoch **out)
{
	struct vitals_rules_epoch *ep = calloc(h->n ? h->n : 1, sizeof(*ep));
	size_t i, j, k;

	if (!ep)
		return -ENOMEM;
	for (i = 0; i < h->n; i++) {
		const struct vitals_hepoch *he = &h->ep[i];
		struct vitals_rules_epoch *e = &ep[i];

		e->start_ns = he->start_ns;
		e->end_ns = he->end_ns;
		e->ncpus = he->ncpus;
		e->procs = calloc(he->nrows ? he->nrows : 1, sizeof(*e->procs));
		if (!e->procs) {
			vitals_rules_epochs_free(ep, h->n);
			return -ENOMEM;
		}
		for (j = 0; j < he->nrows; j++) {
			const struct vitals_hrow *r = &he->rows[j];
			int v = vitals_rules_vital(r->vital);

			if (v < 0)
				continue;
			for (k = 0; k < e->nprocs; k++)
				if (e->procs[k].pid == r->pid)
					break;
			if (k == e->nprocs) {
				e->nprocs++;
				e->procs[k].pid = r->pid;
				snprintf(e->procs[k].comm, sizeof(e->procs[k].comm),
					 "%s", r->comm);
			}
			e->procs[k].v[v] += r->value;
			if (v == VR_BLKIO) {
				e->procs[k].blkio_reqs += r->count;
				e->procs[k].short_io += r->short_io;
			}
		}
	}
	*out = ep;
	return 0;
}

int vitals_hist_flags(const struct vitals_hist *h,
		      struct vitals_rules_flag **f, size_t *nf)
{
	struct vitals_rules_epoch *ep;
	struct vitals_rules_opts o;
	int i, err;

	*f = NULL;
	*nf = 0;
	err = vitals_hist_rules_epochs(h, &ep);
	if (err)
		return err;
	vitals_rules_defaults(&o);
	o.have_l2 = 0;
	for (i = 0; i < h->nstatus; i++)
		if (strcmp(h->status[i].vital, "l2miss") == 0 &&
		    strcmp(h->status[i].state, "on") == 0)
			o.have_l2 = 1;
	err = vitals_rules_run(ep, h->n, &o, f, nf);
	vitals_rules_epochs_free(ep, h->n);
	return err;
}

/* ---- compaction ---------------------------------------------------------- */

static int64_t vs_int(sqlite3 *db, const char *sql, int64_t a)
{
	sqlite3_stmt *q;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(q, 1, a);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static int vs_exec(sqlite3 *db, const char *sql, int64_t a)
{
	sqlite3_stmt *q;
	const char *tail = sql;
	int rc = SQLITE_OK;

	while (tail && *tail && rc == SQLITE_OK) {
		rc = sqlite3_prepare_v2(db, tail, -1, &q, &tail);
		if (rc != SQLITE_OK || !q)
			break;
		if (sqlite3_bind_parameter_count(q) > 0)
			sqlite3_bind_int64(q, 1, a);
		rc = sqlite3_step(q);
		rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
		sqlite3_finalize(q);
	}
	if (rc != SQLITE_OK)
		pr_dbg("summary: %s", sqlite3_errmsg(db));
	return rc == SQLITE_OK ? 0 : -EIO;
}

static int row_by_value(const void *a, const void *b)
{
	const struct vitals_hrow *x = *(const struct vitals_hrow *const *)a;
	const struct vitals_hrow *y = *(const struct vitals_hrow *const *)b;

	return x->value > y->value ? -1 : x->value < y->value;
}

/* The totals and quantiles of the batch's epochs (ids in [lo, hi]) go
 * into the history's epochs of those ids. */
static void vs_totals(sqlite3 *db, struct vitals_hist *h, size_t n,
		      uint64_t batch_end)
{
	sqlite3_stmt *q;
	size_t i = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT t.epoch, t.vital, t.events, t.weight,"
			       " t.sampled, t.dropped, t.tshift FROM vitals_totals t"
			       " JOIN vitals_epochs e ON e.id = t.epoch"
			       " WHERE e.start_ns < ?1 ORDER BY e.start_ns, e.id",
			       -1, &q, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(q, 1, (int64_t)batch_end);
	while (sqlite3_step(q) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(q, 0);
		int v = vs_vital((const char *)sqlite3_column_text(q, 1));
		struct vitals_htotal *t;

		while (i < n && h->ep[i].id != id)
			i++;
		if (i == n)
			break;
		if (v < 0)
			continue;
		t = &h->ep[i].tot[v];
		t->events = sqlite3_column_int64(q, 2);
		t->weight = sqlite3_column_int64(q, 3);
		t->sampled = sqlite3_column_int64(q, 4);
		t->dropped = sqlite3_column_int64(q, 5);
		t->tshift = sqlite3_column_int(q, 6);
	}
	sqlite3_finalize(q);
	/* p50/p90/p99 of the samples' weights, each counted n times */
	if (sqlite3_prepare_v2(db,
			       "SELECT s.epoch, s.vital, s.weight, coalesce(s.n, 1),"
			       " sum(coalesce(s.n, 1)) OVER (PARTITION BY s.epoch,"
			       " s.vital) FROM vitals_samples s"
			       " JOIN vitals_epochs e ON e.id = s.epoch"
			       " WHERE e.start_ns < ?1"
			       " ORDER BY e.start_ns, s.epoch, s.vital, s.weight",
			       -1, &q, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(q, 1, (int64_t)batch_end);
	{
		int64_t cur = -1;
		int curv = -1;
		uint64_t seen = 0;

		i = 0;
		while (sqlite3_step(q) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(q, 0);
			int v = vs_vital((const char *)sqlite3_column_text(q, 1));
			uint64_t w = sqlite3_column_int64(q, 2);
			uint64_t k = sqlite3_column_int64(q, 3);
			uint64_t tot = sqlite3_column_int64(q, 4);
			static const unsigned pct[3] = { 50, 90, 99 };
			int j;

			if (id != cur || v != curv) {
				cur = id;
				curv = v;
				seen = 0;
				while (i < n && h->ep[i].id != id)
					i++;
			}
			if (i == n)
				break;
			if (v < 0)
				continue;
			for (j = 0; j < 3; j++)
				if (seen * 100 < tot * pct[j] &&
				    (seen + k) * 100 >= tot * pct[j])
					h->ep[i].tot[v].q[j] = w;
			seen += k;
		}
	}
	sqlite3_finalize(q);
}

/* The pids whose comm a blob already holds. */
struct vs_seen {
	uint32_t *pid;
	size_t n, cap;
};

static int vs_seen_add(struct vs_seen *sn, uint32_t pid)
{
	size_t i;

	for (i = 0; i < sn->n; i++)
		if (sn->pid[i] == pid)
			return 0;
	if (sn->n == sn->cap) {
		size_t cap = sn->cap ? 2 * sn->cap : 64;
		uint32_t *np = realloc(sn->pid, cap * sizeof(*np));

		if (!np)
			return 1; /* written again: correct, larger */
		sn->pid = np;
		sn->cap = cap;
	}
	sn->pid[sn->n++] = pid;
	return 1;
}

static void vs_encode_epoch(struct vs_buf *b, const struct vitals_hepoch *e,
			    const struct vitals_hepoch *prev, uint64_t base,
			    struct vs_seen *sn)
{
	const struct vitals_hrow *top[PROPEL_VITAL_NR][VITALS_SUMMARY_TOPK];
	const struct vitals_hrow **byv;
	int ntop[PROPEL_VITAL_NR] = { 0 };
	uint64_t after = prev ? prev->end_ns : base;
	unsigned mask = 0;
	size_t j;
	int v, k;

	byv = malloc((e->nrows ? e->nrows : 1) * sizeof(*byv));
	if (!byv) {
		b->err = -ENOMEM;
		return;
	}
	for (j = 0; j < e->nrows; j++)
		byv[j] = &e->rows[j];
	qsort(byv, e->nrows, sizeof(*byv), row_by_value);
	for (j = 0; j < e->nrows; j++) {
		v = vs_vital(byv[j]->vital);
		if (v >= 0 && ntop[v] < VITALS_SUMMARY_TOPK)
			top[v][ntop[v]++] = byv[j];
	}
	free(byv);
	for (v = 0; v < PROPEL_VITAL_NR; v++)
		if (e->tot[v].events || ntop[v])
			mask |= 1u << v;
	vs_put(b, (uint64_t)(e->id - (prev ? prev->id : 0)));
	vs_put(b, e->start_ns > after ? (e->start_ns - after) / 1000 : 0);
	vs_put(b, (e->end_ns - e->start_ns) / 1000);
	vs_put(b, e->ncpus);
	vs_put(b, e->bpf_run_ns / 1000);
	vs_put(b, e->user_run_ns / 1000);
	vs_put(b, mask);
	for (v = 0; v < PROPEL_VITAL_NR; v++) {
		const struct vitals_htotal *t = &e->tot[v];

		if (!(mask & (1u << v)))
			continue;
		vs_put(b, vs_round(t->events));
		vs_put(b, vs_round(t->weight));
		vs_put(b, vs_round(t->sampled));
		vs_put(b, t->dropped);
		vs_put(b, t->tshift);
		vs_put(b, vs_round(t->q[0]));
		vs_put(b, vs_round(t->q[1]));
		vs_put(b, vs_round(t->q[2]));
		vs_put(b, ntop[v]);
		for (k = 0; k < ntop[v]; k++) {
			const struct vitals_hrow *r = top[v][k];
			uint64_t val = r->value > 0 ? vs_round(r->value + 0.5) : 0;
			uint64_t cnt = vs_round(r->count);

			vs_put(b, r->pid);
			if (vs_seen_add(sn, r->pid)) {
				size_t cl = strnlen(r->comm, sizeof(r->comm));

				vs_put(b, cl + 1);
				vs_put_bytes(b, r->comm, cl);
			} else {
				vs_put(b, 0);
			}
			vs_put(b, vs_round(val));
			vs_put(b, cnt == val ? 0 : cnt + 1);
			if (v == PROPEL_VITAL_BLKIO) {
				vs_put(b, vs_round(r->aux));
				vs_put(b, r->short_io);
			}
		}
	}
}

/* The samples of the batch that are kept (or all of them): of a process a
 * rule flagged in that epoch, alike ones folded over the minute, its
 * VITALS_SUMMARY_KEEP_PID heaviest (weight x n), VITALS_SUMMARY_KEEP in all,
 * a vanished process's (rule 10: death, common and least telling) last. */
static int vs_samples(sqlite3 *db, const struct vitals_hist *h, size_t n,
		      const struct vitals_rules_flag *fl, size_t nfl,
		      int keep_all, uint64_t batch_end)
{
	sqlite3_stmt *q;
	size_t i;
	int err;

	if (keep_all)
		return 0;
	err = vs_exec(db, "CREATE TEMP TABLE IF NOT EXISTS vs_keep(epoch INTEGER,"
			  " pid INTEGER, pri INTEGER); DELETE FROM vs_keep;", 0);
	if (err)
		return err;
	if (sqlite3_prepare_v2(db, "INSERT INTO vs_keep VALUES(?,?,?)", -1, &q,
			       NULL) != SQLITE_OK)
		return -EIO;
	for (i = 0; i < nfl; i++) {
		if (fl[i].epoch >= n || !fl[i].pid)
			continue;
		sqlite3_bind_int64(q, 1, h->ep[fl[i].epoch].id);
		sqlite3_bind_int64(q, 2, fl[i].pid);
		sqlite3_bind_int(q, 3, strcmp(fl[i].rule, "death") ? 0 : 1);
		sqlite3_step(q);
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	return vs_exec(
		db,
		"CREATE TEMP TABLE IF NOT EXISTS vs_batch(id INTEGER PRIMARY KEY);"
		"DELETE FROM vs_batch;"
		"INSERT INTO vs_batch SELECT id FROM vitals_epochs WHERE start_ns < ?1;"
		"DELETE FROM vitals_samples WHERE epoch IN (SELECT id FROM vs_batch)"
		" AND NOT EXISTS (SELECT 1 FROM vs_keep k WHERE k.epoch ="
		" vitals_samples.epoch AND k.pid = vitals_samples.pid);"
		"CREATE TEMP TABLE IF NOT EXISTS vs_fold(id INTEGER PRIMARY KEY,"
		" n INTEGER);"
		"DELETE FROM vs_fold;"
		"INSERT INTO vs_fold SELECT min(id), sum(coalesce(n, 1))"
		" FROM vitals_samples WHERE epoch IN (SELECT id FROM vs_batch)"
		" GROUP BY vital, pid, label, kstack, ustack;"
		"DELETE FROM vitals_samples WHERE epoch IN (SELECT id FROM vs_batch)"
		" AND id NOT IN (SELECT id FROM vs_fold);"
		"UPDATE vitals_samples SET n = (SELECT f.n FROM vs_fold f WHERE"
		" f.id = vitals_samples.id) WHERE id IN (SELECT id FROM vs_fold)"
		" AND (SELECT f.n FROM vs_fold f WHERE f.id = vitals_samples.id) > 1;"
		"DELETE FROM vitals_samples WHERE epoch IN (SELECT id FROM vs_batch)"
		" AND id NOT IN (SELECT id FROM (SELECT s.id, row_number() OVER"
		" (PARTITION BY s.pid ORDER BY s.weight * coalesce(s.n, 1) DESC)"
		" AS rk, (SELECT min(k.pri) FROM vs_keep k WHERE k.pid = s.pid)"
		" AS pri, s.weight * coalesce(s.n, 1) AS w FROM vitals_samples s"
		" WHERE s.epoch IN (SELECT id FROM vs_batch))"
		" WHERE rk <= " VS_STR(VITALS_SUMMARY_KEEP_PID)
		" ORDER BY pri, w DESC LIMIT " VS_STR(VITALS_SUMMARY_KEEP) ");",
		(int64_t)batch_end);
}

/* Summarize the raw epochs that start before batch_end.  0 or -errno. */
static int vs_compact_batch(struct vitals_store *st, uint64_t oldest,
			    uint64_t batch_end, uint64_t limit,
			    int keep_samples)
{
	sqlite3 *db = vitals_store_db(st);
	struct vitals_hist h = { 0 };
	struct vitals_rules_flag *fl = NULL;
	struct vs_buf b = { 0 };
	struct vs_seen seen = { 0 };
	size_t nfl = 0, n, i, m, zcap, zlen;
	uint64_t first = 0, last = 0;
	void *z = NULL;
	sqlite3_stmt *q;
	char *cause = NULL;
	int err;

	/* the raw window for the rules' context; the batch is its start */
	err = vitals_store_load_window(st, 0, oldest, limit, &h, &cause);
	free(cause);
	if (err)
		return err;
	for (i = 0, m = 0; i < h.n; i++) {
		if (h.ep[i].summarized) {
			free(h.ep[i].rows);
			continue;
		}
		h.ep[m++] = h.ep[i];
	}
	h.n = m;
	for (n = 0; n < h.n && h.ep[n].start_ns < batch_end; n++)
		;
	if (!n) {
		vitals_hist_release(&h);
		return 0;
	}
	err = vitals_hist_flags(&h, &fl, &nfl);
	if (err)
		goto out;
	vs_totals(db, &h, n, batch_end);
	first = h.ep[0].start_ns;
	last = h.ep[n - 1].end_ns;
	vs_put(&b, VS_VERSION);
	vs_put(&b, n);
	for (i = 0; i < n; i++)
		vs_encode_epoch(&b, &h.ep[i], i ? &h.ep[i - 1] : NULL, first,
				&seen);
	free(seen.pid);
	err = b.err;
	if (err)
		goto out;
	zcap = ZSTD_compressBound(b.len);
	z = malloc(zcap);
	if (!z) {
		err = -ENOMEM;
		goto out;
	}
	zlen = ZSTD_compress(z, zcap, b.p, b.len, 19);
	if (ZSTD_isError(zlen)) {
		err = -EIO;
		goto out;
	}
	err = vs_exec(db, "BEGIN IMMEDIATE", 0);
	if (err)
		goto out;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO vitals_summary(start_ns,end_ns,nepochs,"
			       "blob) VALUES(?,?,?,?)",
			       -1, &q, NULL) != SQLITE_OK) {
		err = -EIO;
		goto rollback;
	}
	sqlite3_bind_int64(q, 1, (int64_t)first);
	sqlite3_bind_int64(q, 2, (int64_t)last);
	sqlite3_bind_int64(q, 3, (int64_t)n);
	sqlite3_bind_blob(q, 4, z, (int)zlen, SQLITE_STATIC);
	err = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	if (!err)
		err = vs_samples(db, &h, n, fl, nfl, keep_samples, batch_end);
	if (!err)
		err = vs_exec(db,
			      "DELETE FROM vitals_values WHERE epoch IN (SELECT id"
			      " FROM vitals_epochs WHERE start_ns < ?1);"
			      "DELETE FROM vitals_totals WHERE epoch IN (SELECT id"
			      " FROM vitals_epochs WHERE start_ns < ?1);"
			      "DELETE FROM vitals_epochs WHERE start_ns < ?1;",
			      (int64_t)batch_end);
	if (!err && !keep_samples)
		err = vitals_store_gc_stacks(st);
	if (err)
		goto rollback;
	err = vs_exec(db, "COMMIT", 0);
	if (!err)
		goto out;
rollback:
	vs_exec(db, "ROLLBACK", 0);
	vitals_store_forget_stacks(st);
out:
	free(z);
	free(b.p);
	free(fl);
	vitals_hist_release(&h);
	return err;
}

int vitals_summary_compact(struct vitals_store *st, uint64_t now_ns,
			   uint64_t raw_window_ns, int keep_samples,
			   int max_batches)
{
	sqlite3 *db = vitals_store_db(st);
	uint64_t limit = now_ns > raw_window_ns ? now_ns - raw_window_ns : 0;
	int nb, err = 0;

	for (nb = 0; !max_batches || nb < max_batches; nb++) {
		uint64_t oldest = (uint64_t)vs_int(
			db, "SELECT coalesce(min(start_ns), 0) FROM vitals_epochs"
			    " WHERE ?1 = ?1", 0);

		/* a whole minute must be out of the raw window */
		if (!oldest || oldest + VITALS_SUMMARY_BATCH_NS > limit)
			break;
		err = vs_compact_batch(st, oldest,
				       oldest + VITALS_SUMMARY_BATCH_NS, limit,
				       keep_samples);
		if (err)
			break;
	}
	return err;
}

/* ---- reading ------------------------------------------------------------- */

/* The comm a blob gave a pid earlier. */
struct vs_names {
	uint32_t pid;
	char comm[16];
};

static int vs_decode(const unsigned char *p, size_t len, uint64_t base,
		     uint64_t from_ns, uint64_t to_ns, struct vitals_hist *h,
		     size_t *cap)
{
	struct vs_rd r = { p, p + len, 0 };
	struct vs_names *nm = NULL;
	size_t nnm = 0, cnm = 0;
	uint64_t n, i, after = base;
	int64_t id = 0;
	int err = 0;

	if (vs_get(&r) != VS_VERSION)
		return 0; /* another format: not ours to read */
	n = vs_get(&r);
	for (i = 0; i < n && !r.bad && !err; i++) {
		struct vitals_hepoch e = { 0 };
		size_t rcap = 0, k2;
		unsigned mask;
		int v;

		e.summarized = 1;
		id += (int64_t)vs_get(&r);
		e.id = id;
		e.start_ns = after + vs_get(&r) * 1000;
		e.end_ns = e.start_ns + vs_get(&r) * 1000;
		after = e.end_ns;
		e.ncpus = (unsigned)vs_get(&r);
		e.bpf_run_ns = vs_get(&r) * 1000;
		e.user_run_ns = vs_get(&r) * 1000;
		mask = (unsigned)vs_get(&r);
		for (v = 0; v < PROPEL_VITAL_NR && !r.bad && !err; v++) {
			struct vitals_htotal *t = &e.tot[v];
			uint64_t ntop, k;

			if (!(mask & (1u << v)))
				continue;
			t->events = vs_get(&r);
			t->weight = vs_get(&r);
			t->sampled = vs_get(&r);
			t->dropped = vs_get(&r);
			t->tshift = (uint32_t)vs_get(&r);
			t->q[0] = vs_get(&r);
			t->q[1] = vs_get(&r);
			t->q[2] = vs_get(&r);
			ntop = vs_get(&r);
			for (k = 0; k < ntop && !r.bad; k++) {
				struct vitals_hrow *row;
				uint64_t cl, cnt;

				err = vitals_hepoch_add_row(&e, &rcap);
				if (err)
					break;
				row = &e.rows[e.nrows - 1];
				snprintf(row->vital, sizeof(row->vital), "%s",
					 vs_names[v]);
				row->pid = (uint32_t)vs_get(&r);
				cl = vs_get(&r);
				if (cl > sizeof(row->comm) ||
				    cl > (uint64_t)(r.end - r.p) + 1) {
					r.bad = 1;
					break;
				}
				if (cl) {
					memcpy(row->comm, r.p, cl - 1);
					row->comm[cl - 1] = 0;
					r.p += cl - 1;
					if (nnm == cnm) {
						size_t c = cnm ? 2 * cnm : 64;
						struct vs_names *np =
							realloc(nm, c * sizeof(*np));

						if (!np) {
							err = -ENOMEM;
							break;
						}
						nm = np;
						cnm = c;
					}
					nm[nnm].pid = row->pid;
					memcpy(nm[nnm].comm, row->comm, 16);
					nnm++;
				} else {
					for (k2 = nnm; k2 > 0; k2--)
						if (nm[k2 - 1].pid == row->pid)
							break;
					if (k2)
						memcpy(row->comm, nm[k2 - 1].comm, 16);
				}
				row->value = (double)vs_get(&r);
				cnt = vs_get(&r);
				row->count = cnt ? cnt - 1 : (uint64_t)row->value;
				if (v == PROPEL_VITAL_BLKIO) {
					row->aux = vs_get(&r);
					row->short_io = vs_get(&r);
				}
			}
		}
		if (err || r.bad || e.start_ns >= to_ns || e.end_ns <= from_ns) {
			free(e.rows);
			continue;
		}
		err = vitals_hist_add_epoch(h, cap);
		if (err) {
			free(e.rows);
			break;
		}
		h->ep[h->n - 1] = e;
	}
	free(nm);
	return err;
}

int vitals_summary_load(struct vitals_store *st, uint64_t from_ns,
			uint64_t to_ns, struct vitals_hist *h)
{
	sqlite3 *db = vitals_store_db(st);
	sqlite3_stmt *q;
	size_t cap = h->n; /* vitals_hist_add_epoch grows from here */
	void *buf = NULL;
	int err = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT start_ns, blob FROM vitals_summary"
			       " WHERE start_ns < ?2 AND end_ns > ?1"
			       " ORDER BY start_ns",
			       -1, &q, NULL) != SQLITE_OK)
		return 0; /* a session from before the summaries */
	sqlite3_bind_int64(q, 1, (int64_t)from_ns);
	sqlite3_bind_int64(q, 2, (int64_t)to_ns);
	while (!err && sqlite3_step(q) == SQLITE_ROW) {
		const void *z = sqlite3_column_blob(q, 1);
		size_t zlen = sqlite3_column_bytes(q, 1);
		unsigned long long full = z ? ZSTD_getFrameContentSize(z, zlen)
					    : ZSTD_CONTENTSIZE_ERROR;
		size_t got;

		if (full == ZSTD_CONTENTSIZE_ERROR ||
		    full == ZSTD_CONTENTSIZE_UNKNOWN || full > (64u << 20))
			continue;
		buf = malloc(full ? full : 1);
		if (!buf) {
			err = -ENOMEM;
			break;
		}
		got = ZSTD_decompress(buf, full, z, zlen);
		if (!ZSTD_isError(got))
			err = vs_decode(buf, got, sqlite3_column_int64(q, 0),
					from_ns, to_ns, h, &cap);
		free(buf);
	}
	sqlite3_finalize(q);
	return err;
}
