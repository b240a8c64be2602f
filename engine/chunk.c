/*
 * engine/chunk.c - compressed event chunks (see engine/chunk.h).
 *
 * The writer encodes into a growing buffer and compresses it with zstd
 * when CHUNK_WRITE_EVENTS events are in it (or the thread ends); session.c
 * stores the index row and the body (with the kinds seen, a bit each).
 * A full chunk is compressed by the writer's own thread (chunk_job_run)
 * while the caller encodes the next one, and stored -- by the caller, the
 * only thread that touches the session -- when that next one is handed
 * over or at a flush (chunk_job_store): the same rows in the same order
 * as compressing in line, which the writer falls back to without a thread.
 * The reader sorts the index by
 * (pid, tid, first_seq) for iteration and keeps a second order by
 * first_seq for lookups by id.  Decoding never trusts the body: every
 * varint is bounded by the buffer, the count must match the index.  A
 * damaged chunk is said once, on stderr or (chunk_store_quiet, for the
 * TUI) in a message the caller shows.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "engine/chunk.h"
#include "engine/varint.h"
#include "share/hash.h"
#include "share/log.h"

#define CHUNK_LEVEL 3

/* ---- encoding ---- */

static uint64_t chunk_fnv(const void *p, size_t n)
{
	return propel_fnv(PROPEL_FNV_INIT, p, n);
}

/* ---- writer ---- */

struct chunk_writer {
	struct session *s;
	ZSTD_CCtx *cctx;
	int64_t next_seq;
	int64_t pid, tid;
	struct session_chunk c; /* the pending chunk's index row */
	int64_t prev_ts;
	int32_t prev_depth;
	uint8_t *buf;
	size_t len, cap;
	void *z;
	size_t zcap;
	/* the chunk handed to the thread: JOB_NONE -> JOB_QUEUED
	 * (chunk_job_hand) -> JOB_DONE (chunk_job_run) -> JOB_NONE
	 * (chunk_job_store, or dropped by chunk_writer_rewind) */
	pthread_t th;
	int have_th, stop, cv_made;
	int handed; /* the caller's own note: a chunk is with the thread */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum { JOB_NONE, JOB_QUEUED, JOB_DONE } job;
	ZSTD_CCtx *jcctx;
	struct session_chunk jc;
	uint8_t *jbuf;
	size_t jlen, jzn;
	void *jz;
};

static void *chunk_job_run(void *arg)
{
	struct chunk_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && w->job != JOB_QUEUED)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->mu);
		w->jzn = ZSTD_compress2(w->jcctx, w->jz, w->zcap, w->jbuf,
					w->jlen);
		if (!ZSTD_isError(w->jzn))
			w->jc.checksum = chunk_fnv(w->jz, w->jzn);
		pthread_mutex_lock(&w->mu);
		w->job = JOB_DONE;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Wait for the thread to finish the handed chunk, and take it back. */
static void chunk_job_take(struct chunk_writer *w)
{
	pthread_mutex_lock(&w->mu);
	while (w->job == JOB_QUEUED)
		pthread_cond_wait(&w->cv, &w->mu);
	w->job = JOB_NONE;
	pthread_mutex_unlock(&w->mu);
	w->handed = 0;
}

/* Store the chunk the thread compressed, once it has.  0 or -EIO. */
static int chunk_job_store(struct chunk_writer *w)
{
	if (!w->handed)
		return 0;
	chunk_job_take(w);
	if (ZSTD_isError(w->jzn))
		return -EIO;
	w->jc.codec = CHUNK_CODEC_ZSTD1;
	return session_chunk_put(w->s, &w->jc, w->jz, w->jzn) ? -EIO : 0;
}

/* Compress and store the pending chunk here.  0 or -EIO. */
static int chunk_store_inline(struct chunk_writer *w)
{
	size_t zn = ZSTD_compress2(w->cctx, w->z, w->zcap, w->buf, w->len);

	if (ZSTD_isError(zn))
		return -EIO;
	w->c.codec = CHUNK_CODEC_ZSTD1;
	w->c.checksum = chunk_fnv(w->z, zn);
	if (session_chunk_put(w->s, &w->c, w->z, zn))
		return -EIO;
	return 0;
}

/* The pending chunk is full: to the thread (after storing the one it
 * had), or stored here without one.  0 or -EIO. */
static int chunk_job_hand(struct chunk_writer *w)
{
	uint8_t *b;

	if (!w->have_th) {
		if (chunk_store_inline(w))
			return -EIO;
	} else {
		if (chunk_job_store(w))
			return -EIO;
		b = w->jbuf;
		w->jbuf = w->buf;
		w->buf = b;
		w->jlen = w->len;
		w->jc = w->c;
		w->handed = 1;
		pthread_mutex_lock(&w->mu);
		w->job = JOB_QUEUED;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
	}
	memset(&w->c, 0, sizeof(w->c));
	w->len = 0;
	return 0;
}

int chunk_writer_new(struct session *s, struct chunk_writer **out)
{
	struct chunk_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->s = s;
	w->cctx = ZSTD_createCCtx();
	w->cap = (size_t)CHUNK_WRITE_EVENTS * 64;
	w->buf = malloc(w->cap);
	w->zcap = ZSTD_compressBound(w->cap);
	w->z = malloc(w->zcap);
	w->jcctx = ZSTD_createCCtx();
	w->jbuf = malloc(w->cap);
	w->jz = malloc(w->zcap);
	if (!w->cctx || !w->buf || !w->z || !w->jcctx || !w->jbuf || !w->jz) {
		chunk_writer_free(w);
		return -ENOMEM;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, CHUNK_LEVEL);
	ZSTD_CCtx_setParameter(w->jcctx, ZSTD_c_compressionLevel, CHUNK_LEVEL);
	w->next_seq = session_max_seq(s) + 1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->cv_made = 1;
	w->have_th = pthread_create(&w->th, NULL, chunk_job_run, w) == 0;
	*out = w;
	return 0;
}

void chunk_writer_free(struct chunk_writer *w)
{
	if (!w)
		return;
	if (w->have_th) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
	}
	if (w->cv_made) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
	}
	ZSTD_freeCCtx(w->cctx);
	ZSTD_freeCCtx(w->jcctx);
	free(w->buf);
	free(w->z);
	free(w->jbuf);
	free(w->jz);
	free(w);
}

int chunk_writer_flush(struct chunk_writer *w)
{
	if (chunk_job_store(w))
		return -EIO;
	if (!w->c.count)
		return 0;
	if (chunk_store_inline(w))
		return -EIO;
	memset(&w->c, 0, sizeof(w->c));
	w->len = 0;
	return 0;
}

int64_t chunk_writer_next(const struct chunk_writer *w)
{
	return w->next_seq;
}

void chunk_writer_rewind(struct chunk_writer *w, int64_t seq)
{
	if (w->handed)
		chunk_job_take(w);
	memset(&w->c, 0, sizeof(w->c));
	w->len = 0;
	w->next_seq = seq;
}

int chunk_writer_thread(struct chunk_writer *w, int64_t pid, int64_t tid)
{
	int err = chunk_writer_flush(w);

	w->pid = pid;
	w->tid = tid;
	return err;
}

int64_t chunk_writer_add(struct chunk_writer *w, const struct session_event *ev)
{
	struct session_chunk *c = &w->c;
	uint8_t *p;
	int i;

	if (c->count == CHUNK_WRITE_EVENTS && chunk_job_hand(w))
		return -EIO;
	if (!c->count) {
		c->pid = w->pid;
		c->tid = w->tid;
		c->first_ts = ev->ts_ns;
		c->first_seq = w->next_seq;
		c->depth_min = INT32_MAX;
		c->depth_max = INT32_MIN;
		w->prev_ts = ev->ts_ns;
		w->prev_depth = 0;
	}
	p = w->buf + w->len;
	*p++ = (uint8_t)((ev->kind & 0x0f) | (ev->has & 0x0f) << 4);
	p = put_varint(p, zz(ev->ts_ns - w->prev_ts));
	w->prev_ts = ev->ts_ns;
	if (ev->has & SE_DEPTH) {
		p = put_varint(p, zz((int64_t)ev->depth - w->prev_depth));
		w->prev_depth = ev->depth;
		if (ev->depth < c->depth_min)
			c->depth_min = ev->depth;
		if (ev->depth > c->depth_max)
			c->depth_max = ev->depth;
	}
	p = put_varint(p, (uint64_t)ev->func);
	p = put_varint(p, (uint64_t)ev->site);
	for (i = 0; i < 3; i++)
		if (ev->has & (SE_ARG0 << i))
			p = put_varint(p, zz(ev->arg[i]));
	w->len = (size_t)(p - w->buf);
	c->kinds |= 1 << (ev->kind & 0x0f);
	c->last_ts = ev->ts_ns;
	c->last_seq = w->next_seq;
	c->count++;
	return w->next_seq++;
}

/* ---- reader ---- */

struct chunk_cached {
	size_t ci; /* index in cs->idx; SIZE_MAX = empty */
	struct session_event *ev;
	int64_t n;
	uint64_t used;
};

struct chunk_store {
	struct session *s;
	struct session_chunk *idx; /* by (pid, tid, first_seq) */
	size_t n;
	size_t *byseq;		   /* indexes into idx, by first_seq */
	struct chunk_thread *threads;
	size_t nthreads;
	int rows;		   /* the row form */
	int partial;		   /* the index could not be read to its end */
	uint8_t *reported;	   /* per chunk: its loss was said */
	int64_t lost;
	ZSTD_DCtx *dctx;
	void *zbuf;		   /* a body being read */
	int quiet;		   /* damage said in msg, not on stderr */
	int probe;		   /* chunk_store_check: damage not said */
	const char *probe_why;	   /* the first damage it met */
	char msg[512];
	uint64_t nmsg;
	struct chunk_cached cache[CHUNK_CACHE];
	uint64_t tick;
};

static int chunk_idx_cmp(const void *a, const void *b)
{
	const struct session_chunk *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->first_seq < y->first_seq ? -1 : x->first_seq > y->first_seq;
}

static const struct session_chunk *chunk_seq_base;

static int chunk_seq_cmp(const void *a, const void *b)
{
	int64_t x = chunk_seq_base[*(const size_t *)a].first_seq;
	int64_t y = chunk_seq_base[*(const size_t *)b].first_seq;

	return x < y ? -1 : x > y;
}

/* threads by their first event (then pid, tid), as replay prints them */
static int chunk_thread_cmp(const void *a, const void *b)
{
	const struct chunk_thread *x = a, *y = b;

	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int chunk_store_rows(struct chunk_store *cs)
{
	int64_t *pairs;
	size_t n, i;
	int err;

	cs->rows = 1;
	err = session_rows_threads(cs->s, &pairs, &n);
	if (err)
		return err;
	cs->threads = calloc(n ? n : 1, sizeof(*cs->threads));
	if (!cs->threads) {
		free(pairs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		cs->threads[i].pid = pairs[2 * i];
		cs->threads[i].tid = pairs[2 * i + 1];
	}
	cs->nthreads = n;
	free(pairs);
	return 0;
}

int chunk_store_open(struct session *s, struct chunk_store **out, char **cause)
{
	struct chunk_store *cs = calloc(1, sizeof(*cs));
	size_t i, j;
	int err, k;

	*out = NULL;
	if (!cs)
		return -ENOMEM;
	cs->s = s;
	for (k = 0; k < CHUNK_CACHE; k++)
		cs->cache[k].ci = SIZE_MAX;
	err = session_chunk_index(s, &cs->idx, &cs->n, &cs->partial);
	if (err) {
		err = propel_cause(cause, err == -ENOMEM ? -ENOMEM : -EINVAL,
				   "%s: cannot read the chunk index (corrupt "
				   "or truncated session)",
				   session_path(s));
		goto fail;
	}
	if (cs->partial && !cs->n) {
		err = propel_cause(cause, -EINVAL,
				   "%s: session file is truncated: not one "
				   "chunk of events is left",
				   session_path(s));
		goto fail;
	}
	if (cs->partial && session_warn_once(s, SESSION_WARN_INDEX))
		fprintf(stderr,
			"propel: %s: the chunk index is cut short (truncated "
			"file?): %zu chunks readable, the events after them "
			"are lost\n",
			session_path(s), cs->n);
	if (!cs->n && !cs->partial && session_rows_any(s)) {
		err = chunk_store_rows(cs);
		if (err) {
			err = propel_cause(cause, -EINVAL,
					   "%s: session file is corrupt or "
					   "truncated",
					   session_path(s));
			goto fail;
		}
		*out = cs;
		return 0;
	}
	if (cs->n) /* (idx is NULL in a session without events) */
		qsort(cs->idx, cs->n, sizeof(*cs->idx), chunk_idx_cmp);
	cs->byseq = malloc((cs->n ? cs->n : 1) * sizeof(*cs->byseq));
	cs->reported = calloc(cs->n ? cs->n : 1, 1);
	cs->threads = calloc(cs->n ? cs->n : 1, sizeof(*cs->threads));
	cs->dctx = ZSTD_createDCtx();
	if (!cs->byseq || !cs->reported || !cs->threads || !cs->dctx) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < cs->n; i++)
		cs->byseq[i] = i;
	chunk_seq_base = cs->idx;
	qsort(cs->byseq, cs->n, sizeof(*cs->byseq), chunk_seq_cmp);
	for (i = 0; i < cs->n; i = j) {
		struct chunk_thread *t = &cs->threads[cs->nthreads++];

		t->pid = cs->idx[i].pid;
		t->tid = cs->idx[i].tid;
		t->first = i;
		t->first_ts = cs->idx[i].first_ts;
		t->last_ts = cs->idx[i].last_ts;
		for (j = i; j < cs->n && cs->idx[j].pid == t->pid &&
			    cs->idx[j].tid == t->tid;
		     j++) {
			t->count += cs->idx[j].count;
			if (cs->idx[j].first_ts < t->first_ts)
				t->first_ts = cs->idx[j].first_ts;
			if (cs->idx[j].last_ts > t->last_ts)
				t->last_ts = cs->idx[j].last_ts;
		}
		t->n = j - i;
	}
	qsort(cs->threads, cs->nthreads, sizeof(*cs->threads),
	      chunk_thread_cmp);
	*out = cs;
	return 0;
fail:
	chunk_store_free(cs);
	if (err == -ENOMEM)
		propel_cause(cause, err, "%s: out of memory", session_path(s));
	return err;
}

void chunk_store_free(struct chunk_store *cs)
{
	int k;

	if (!cs)
		return;
	for (k = 0; k < CHUNK_CACHE; k++)
		free(cs->cache[k].ev);
	ZSTD_freeDCtx(cs->dctx);
	if (cs->zbuf)
		munmap(cs->zbuf, (size_t)CHUNK_EVENTS * 64);
	free(cs->idx);
	free(cs->byseq);
	free(cs->threads);
	free(cs->reported);
	free(cs);
}

const struct chunk_thread *chunk_store_threads(struct chunk_store *cs,
					       size_t *n)
{
	*n = cs->nthreads;
	return cs->threads;
}

int64_t chunk_store_lost(const struct chunk_store *cs)
{
	return cs->lost;
}

int chunk_store_rows_form(const struct chunk_store *cs)
{
	return cs->rows;
}

static void chunk_lost(struct chunk_store *cs, size_t ci, const char *why)
{
	const struct session_chunk *c = &cs->idx[ci];

	if (cs->probe) { /* chunk_store_check: said by its caller */
		cs->probe_why = why;
		return;
	}
	if (cs->reported[ci])
		return;
	cs->reported[ci] = 1;
	cs->lost += c->count;
	snprintf(cs->msg, sizeof(cs->msg),
		 "propel: %s: thread %" PRId64 "/%" PRId64 ": %" PRId64
		 " events lost (ids %" PRId64 "..%" PRId64 ", ts_ns %" PRId64
		 "..%" PRId64 "): chunk %s; the other chunks are read",
		 session_path(cs->s), c->pid, c->tid, c->count, c->first_seq,
		 c->last_seq, c->first_ts, c->last_ts, why);
	cs->nmsg++;
	if (!cs->quiet && session_warn_once(cs->s, c->id))
		fprintf(stderr, "%s\n", cs->msg);
}

void chunk_store_quiet(struct chunk_store *cs, int on)
{
	cs->quiet = on;
}

const char *chunk_store_message(const struct chunk_store *cs,
				uint64_t *count)
{
	*count = cs->nmsg;
	return cs->nmsg ? cs->msg : NULL;
}

/* Decode chunk ci into ev (room for CHUNK_EVENTS).  Returns the count,
 * or -1 when the chunk is damaged (said once on stderr). */
static int64_t chunk_decode(struct chunk_store *cs, size_t ci,
			    struct session_event *ev)
{
	const struct session_chunk *c = &cs->idx[ci];
	const uint8_t *p, *end;
	unsigned long long raw;
	void *body;
	size_t size, rn;
	int64_t i, ts, depth;
	int err;

	if (c->count <= 0 || c->count > CHUNK_EVENTS ||
	    c->first_seq > INT64_MAX - CHUNK_EVENTS ||
	    c->codec != CHUNK_CODEC_ZSTD1) {
		chunk_lost(cs, ci, "index row is damaged");
		return -1;
	}
	err = session_chunk_body(cs->s, c->id, &body, &size);
	if (err) {
		chunk_lost(cs, ci, err == -ENOENT ? "body is missing"
						  : "body is unreadable "
						    "(corrupt or truncated "
						    "file)");
		return -1;
	}
	if ((int64_t)size != c->size || chunk_fnv(body, size) != c->checksum) {
		free(body);
		chunk_lost(cs, ci, "checksum mismatch");
		return -1;
	}
	raw = ZSTD_getFrameContentSize(body, size);
	if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN ||
	    raw > (unsigned long long)CHUNK_EVENTS * 64) {
		free(body);
		chunk_lost(cs, ci, "cannot be decompressed");
		return -1;
	}
	if (!cs->zbuf) {
		/* populated at once: page by page it costs far more */
		cs->zbuf = mmap(NULL, (size_t)CHUNK_EVENTS * 64,
				PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
				0);
		if (cs->zbuf == MAP_FAILED) {
			cs->zbuf = NULL;
			free(body);
			return -1;
		}
	}
	rn = ZSTD_decompressDCtx(cs->dctx, cs->zbuf, (size_t)CHUNK_EVENTS * 64,
				 body, size);
	free(body);
	if (ZSTD_isError(rn)) {
		chunk_lost(cs, ci, "cannot be decompressed");
		return -1;
	}
	p = cs->zbuf;
	end = p + rn;
	ts = c->first_ts;
	depth = 0;
	for (i = 0; i < c->count; i++) {
		struct session_event *e = &ev[i];
		uint64_t v;
		int k;

		if (p >= end)
			goto bad;
		e->kind = *p & 0x0f;
		e->has = *p++ >> 4;
		/* a time or depth out of range is a body the writer did not
		 * make (it encodes differences of int64 times, int32 depths) */
		if (get_varint(&p, end, &v) ||
		    __builtin_add_overflow(ts, unzz(v), &ts))
			goto bad;
		e->ts_ns = ts;
		e->id = c->first_seq + i;
		if (e->has & SE_DEPTH) {
			/* (and within the index row's range: the writer
			 * keeps it, the readers position by it) */
			if (get_varint(&p, end, &v) ||
			    __builtin_add_overflow(depth, unzz(v), &depth) ||
			    depth < c->depth_min || depth > c->depth_max)
				goto bad;
			e->depth = (int32_t)depth;
		} else {
			e->depth = 0;
		}
		if (get_varint(&p, end, &v))
			goto bad;
		e->func = (int64_t)v;
		if (get_varint(&p, end, &v))
			goto bad;
		e->site = (int64_t)v;
		for (k = 0; k < 3; k++) {
			e->arg[k] = 0;
			if (e->has & (SE_ARG0 << k)) {
				if (get_varint(&p, end, &v))
					goto bad;
				e->arg[k] = unzz(v);
			}
		}
	}
	if (p != end)
		goto bad;
	return c->count;
bad:
	chunk_lost(cs, ci, "does not decode");
	return -1;
}

int chunk_store_check(struct chunk_store *cs, char **cause)
{
	struct chunk_cached *slot = &cs->cache[0];
	const char *why = NULL;
	int64_t events = 0;
	size_t i;

	if (cs->rows || !cs->n) /* no events is no damage (a vitals
				 * session); report refuses it itself */
		return 0;
	for (i = 0; i < CHUNK_CACHE; i++)
		if (cs->cache[i].ci != SIZE_MAX)
			return 0; /* one decoded already */
	if (!slot->ev && !(slot->ev = malloc(CHUNK_EVENTS * sizeof(*slot->ev))))
		return propel_cause(cause, -ENOMEM, "%s: out of memory",
				    session_path(cs->s));
	/* the first readable chunk ends it (kept in the cache): a damaged
	 * session is read whole only when nothing of it is readable */
	cs->probe = 1;
	for (i = 0; i < cs->n; i++) {
		cs->probe_why = NULL;
		slot->n = chunk_decode(cs, cs->byseq[i], slot->ev);
		if (slot->n >= 0) {
			slot->ci = cs->byseq[i];
			slot->used = ++cs->tick;
			break;
		}
		if (!why)
			why = cs->probe_why;
		events += cs->idx[cs->byseq[i]].count;
	}
	cs->probe = 0;
	if (i < cs->n)
		return 0;
	if (!why) /* out of memory for a body */
		return propel_cause(cause, -ENOMEM, "%s: out of memory",
				    session_path(cs->s));
	if (cs->n == 1)
		return propel_cause(cause, -ENODATA,
				    "%s: the session holds no readable events: "
				    "its one chunk (%" PRId64 " events) is "
				    "damaged: chunk %s",
				    session_path(cs->s), events, why);
	return propel_cause(cause, -ENODATA,
			    "%s: the session holds no readable events: all %zu "
			    "chunks (%" PRId64 " events) are damaged, the "
			    "first: chunk %s",
			    session_path(cs->s), cs->n, events, why);
}

int chunk_session_check(struct session *s, char **cause)
{
	struct chunk_store *cs;
	int err = chunk_store_open(s, &cs, cause);

	if (!err)
		err = chunk_store_check(cs, cause);
	chunk_store_free(cs);
	return err;
}

const struct session_chunk *chunk_store_index(const struct chunk_store *cs,
					      size_t *n)
{
	*n = cs->rows ? 0 : cs->n;
	return cs->idx;
}

int64_t chunk_store_decode(struct chunk_store *cs, size_t ci,
			   struct session_event *ev)
{
	if (cs->rows || ci >= cs->n)
		return -1;
	return chunk_decode(cs, ci, ev);
}

int chunk_store_find(const struct chunk_store *cs, int64_t id, size_t *ci)
{
	size_t lo = 0, hi = cs->n;

	if (cs->rows || id <= 0 || !cs->n)
		return -ENOENT;
	/* the last chunk with first_seq <= id */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (cs->idx[cs->byseq[mid]].first_seq <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || id > cs->idx[cs->byseq[lo - 1]].last_seq)
		return -ENOENT;
	*ci = cs->byseq[lo - 1];
	return 0;
}

int chunk_store_event(struct chunk_store *cs, int64_t id,
		      struct session_event *ev, int64_t *pid, int64_t *tid)
{
	struct chunk_cached *slot = NULL;
	size_t ci;
	int k;

	if (cs->rows)
		return session_rows_get(cs->s, id, ev, pid, tid);
	if (chunk_store_find(cs, id, &ci))
		return -ENOENT;
	for (k = 0; k < CHUNK_CACHE; k++)
		if (cs->cache[k].ci == ci) {
			slot = &cs->cache[k];
			break;
		}
	if (!slot) {
		slot = &cs->cache[0];
		for (k = 1; k < CHUNK_CACHE; k++)
			if (cs->cache[k].used < slot->used)
				slot = &cs->cache[k];
		if (!slot->ev &&
		    !(slot->ev = malloc(CHUNK_EVENTS * sizeof(*slot->ev))))
			return -ENOMEM;
		slot->ci = SIZE_MAX;
		slot->n = chunk_decode(cs, ci, slot->ev);
		if (slot->n < 0)
			return -ENOENT;
		slot->ci = ci;
	}
	slot->used = ++cs->tick;
	if (id - cs->idx[ci].first_seq >= slot->n)
		return -ENOENT;
	*ev = slot->ev[id - cs->idx[ci].first_seq];
	if (pid)
		*pid = cs->idx[ci].pid;
	if (tid)
		*tid = cs->idx[ci].tid;
	return 0;
}

int chunk_iter_init(struct chunk_iter *it, struct chunk_store *cs, int64_t pid,
		    int64_t tid)
{
	size_t i;

	memset(it, 0, sizeof(*it));
	it->cs = cs;
	it->pid = pid;
	it->tid = tid;
	if (cs->rows)
		return session_rows_open(cs->s, pid, tid, &it->rows);
	for (i = 0; i < cs->nthreads; i++)
		if (cs->threads[i].pid == pid && cs->threads[i].tid == tid) {
			it->ci = cs->threads[i].first;
			it->cend = it->ci + cs->threads[i].n;
			break;
		}
	return 0;
}

int chunk_iter_next(struct chunk_iter *it, const struct session_event **ev)
{
	int rc;

	if (it->rows) {
		rc = session_rows_next(it->rows, &it->row);
		if (rc == 1)
			*ev = &it->row;
		return rc;
	}
	while (it->i >= it->n) {
		if (it->ci >= it->cend)
			return 0;
		if (!it->buf &&
		    !(it->buf = malloc(CHUNK_EVENTS * sizeof(*it->buf))))
			return -ENOMEM;
		it->i = 0;
		it->n = chunk_decode(it->cs, it->ci++, it->buf);
		if (it->n < 0)
			it->n = 0;
	}
	*ev = &it->buf[it->i++];
	return 1;
}

void chunk_iter_release(struct chunk_iter *it)
{
	free(it->buf);
	session_rows_close(it->rows);
	it->buf = NULL;
	it->rows = NULL;
}
