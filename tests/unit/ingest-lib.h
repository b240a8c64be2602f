/*
 * tests/unit/ingest-lib.h - what the tests of the ingest path share
 * (test-ingest.c, test-symsrc.c): building a fixture and reading its
 * addresses (objdump), writing map and ring files exactly as the agent
 * does (share/ring.h), SQL over a session's rows, running `propel`.
 * Included by one test program each; every helper is static.
 */
#ifndef PROPEL_TESTS_UNIT_INGEST_LIB_H
#define PROPEL_TESTS_UNIT_INGEST_LIB_H

#define LIB static __attribute__((unused))

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/chunk.h"
#include "engine/ingest.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/clock.h"
#include "share/record.h"
#include "share/ring.h"

#define BIAS 0x555555554000ull
#define TSC0 1000000000ull
#define MONO0 5000000000ull
#define TICK 2000ull /* per record: 1 us at 2 GHz */

static int nfail;
static char tmp[256];
static const char *top = ".";

LIB void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("PASS %s\n", name);
		return;
	}
	nfail++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ---- the binaries ---- */

struct bin {
	char path[512];
	struct { char name[128]; uint64_t addr; } fn[64];
	int nfn;
	struct { char caller[128], callee[128]; uint64_t addr; } call[64];
	int ncall;
};

LIB uint64_t bin_fn(const struct bin *b, const char *name)
{
	int i;

	for (i = 0; i < b->nfn; i++)
		if (strcmp(b->fn[i].name, name) == 0)
			return b->fn[i].addr;
	return 0;
}

/* n-th (from 1) call from caller to callee */
LIB uint64_t bin_call(const struct bin *b, const char *caller,
			 const char *callee, int n)
{
	int i;

	for (i = 0; i < b->ncall; i++)
		if (strcmp(b->call[i].caller, caller) == 0 &&
		    strcmp(b->call[i].callee, callee) == 0 && --n == 0)
			return b->call[i].addr;
	return 0;
}

LIB int bin_build(struct bin *b, const char *cc, const char *src,
		     const char *opt, const char *out)
{
	char cmd[2048], line[1024], cur[128] = "";
	FILE *f;

	snprintf(b->path, sizeof(b->path), "%s/%s", tmp, out);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && %s -g %s -fdebug-prefix-map=%s=. -o %s %s 2>&1",
		 top, cc, opt, top, b->path, src);
	if (system(cmd) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn %s", b->path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, t;
		char name[128];

		if (sscanf(line, "%llx <%127[^>]>:", &a, name) == 2) {
			snprintf(cur, sizeof(cur), "%s", name);
			if (b->nfn < 64) {
				snprintf(b->fn[b->nfn].name, 128, "%s", name);
				b->fn[b->nfn++].addr = a;
			}
		} else if (sscanf(line, " %llx:\tcall %llx <%127[^>]>", &a, &t,
				  name) == 3 && b->ncall < 64) {
			snprintf(b->call[b->ncall].caller, 128, "%s", cur);
			snprintf(b->call[b->ncall].callee, 128, "%s", name);
			b->call[b->ncall++].addr = a;
		}
	}
	return pclose(f) == 0 ? 0 : -1;
}

/* line number of the marker in the fixture source */
LIB int marker(const char *src, const char *mark)
{
	char path[512], line[512];
	int n = 0, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, src);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, mark)) {
			found = n;
			break;
		}
	}
	fclose(f);
	return found;
}

/* ---- writing rings as the agent does ---- */

struct tw {
	struct propel_ring_hdr *h;
	size_t size;
	uint32_t pos;	/* next slot in the current sub-buffer */
	uint64_t nrec;	/* records written: the clock */
};

LIB void tw_open(struct tw *w, const char *dir, uint32_t pid,
		    const char *nonce, uint32_t tid, uint32_t subs,
		    uint32_t recs)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%u.%s.%u.ring", dir, pid, nonce, tid);
	memset(w, 0, sizeof(*w));
	w->size = propel_ring_size(subs, recs);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, w->size) < 0) {
		perror(path);
		exit(1);
	}
	w->h = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	memcpy(w->h->magic, PROPEL_RING_MAGIC, 8);
	w->h->version = PROPEL_RING_VERSION;
	w->h->hdr_size = PROPEL_RING_HDR_SIZE;
	w->h->pid = pid;
	w->h->tid = tid;
	w->h->nonce = 42;
	w->h->sub_count = subs;
	w->h->sub_recs = recs;
	w->h->tsc0 = TSC0;
	w->h->mono0_ns = MONO0;
	/* the pair a later commit would store; spans 1 s at 2 GHz */
	w->h->tsc_last = TSC0 + 2000000000ull;
	w->h->mono_last_ns = MONO0 + 1000000000ull;
	snprintf(w->h->comm, sizeof(w->h->comm), "t%u", tid);
}

/* The next sub-buffer begins now (share/ring.h); it is not zeroed. */
LIB void tw_begin_next(struct tw *w)
{
	w->h->sub_tsc[(w->h->commits + 1) % w->h->sub_count] =
		TSC0 + TICK * w->nrec;
}

LIB void tw_put(struct tw *w, unsigned type, uint32_t a, uint32_t b)
{
	struct propel_rec *r = propel_ring_sub(w->h, w->h->commits) + w->pos;

	r->a = a;
	r->b = b;
	__atomic_store_n(&r->w0, propel_rec_w0(TSC0 + TICK * w->nrec++, type),
			 __ATOMIC_RELEASE);
	if (++w->pos == w->h->sub_recs) {
		tw_begin_next(w);
		__atomic_add_fetch(&w->h->commits, 1, __ATOMIC_RELEASE);
		w->pos = 0;
	}
}

/* A record stamped at the k-th tick, not its own: sampled time, where
 * the call records between two stamps carry the earlier one */
LIB void tw_put_at(struct tw *w, unsigned type, uint32_t a, uint32_t b,
		   uint64_t k)
{
	uint64_t n = w->nrec;

	w->nrec = k;
	tw_put(w, type, a, b);
	w->nrec = n + 1;
}

LIB void tw_arg(struct tw *w, uint64_t v)
{
	tw_put(w, PROPEL_REC_ARG, (uint32_t)v, (uint32_t)(v >> 32));
}

LIB void tw_close(struct tw *w)
{
	munmap(w->h, w->size);
}

LIB void map_write(const char *dir, uint32_t pid, const char *nonce,
		      const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u.%s.map", dir, pid, nonce);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

/* ---- sql helpers ---- */

static char qbuf[8192];

/*
 * The checks below are SQL over rows: the session's chunks are decoded,
 * through the one reader (engine/chunk.h), into a TEMP table `events`
 * (which hides the empty row-form table), once per session.
 */
static struct session *q_rows_of;

LIB void q_rows(struct session *s)
{
	sqlite3 *db = session_db(s);
	const struct chunk_thread *th;
	struct chunk_store *cs;
	struct chunk_iter it;
	sqlite3_stmt *ins;
	size_t n, t;

	if (q_rows_of == s)
		return;
	q_rows_of = s;
	sqlite3_exec(db, "DROP TABLE IF EXISTS temp.events;"
			 "CREATE TEMP TABLE events(id INTEGER PRIMARY KEY,"
			 " pid, tid, ts_ns, kind, depth, func, site, arg0, arg1,"
			 " arg2)", NULL, NULL, NULL);
	if (chunk_store_open(s, &cs, NULL))
		return;
	sqlite3_prepare_v2(db, "INSERT INTO temp.events VALUES(?,?,?,?,?,?,?,"
			       "?,?,?,?)", -1, &ins, NULL);
	th = chunk_store_threads(cs, &n);
	for (t = 0; t < n; t++) {
		const struct session_event *e;
		int i;

		chunk_iter_init(&it, cs, th[t].pid, th[t].tid);
		while (chunk_iter_next(&it, &e) == 1) {
			sqlite3_bind_int64(ins, 1, e->id);
			sqlite3_bind_int64(ins, 2, th[t].pid);
			sqlite3_bind_int64(ins, 3, th[t].tid);
			sqlite3_bind_int64(ins, 4, e->ts_ns);
			sqlite3_bind_int(ins, 5, e->kind);
			sqlite3_bind_int(ins, 6, e->depth);
			if (e->func)
				sqlite3_bind_int64(ins, 7, e->func);
			else
				sqlite3_bind_null(ins, 7);
			if (e->site)
				sqlite3_bind_int64(ins, 8, e->site);
			else
				sqlite3_bind_null(ins, 8);
			for (i = 0; i < 3; i++)
				if (e->has & (SE_ARG0 << i))
					sqlite3_bind_int64(ins, 9 + i, e->arg[i]);
				else
					sqlite3_bind_null(ins, 9 + i);
			sqlite3_step(ins);
			sqlite3_reset(ins);
		}
		chunk_iter_release(&it);
	}
	sqlite3_finalize(ins);
	chunk_store_free(cs);
}

LIB void q_close(struct session *s)
{
	q_rows_of = NULL;
	session_close(s);
}

LIB const char *q(struct session *s, const char *fmt, ...)
{
	sqlite3_stmt *st;
	char sql[1024];
	size_t n = 0;
	va_list ap;
	int i;

	q_rows(s);
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	qbuf[0] = 0;
	if (sqlite3_prepare_v2(session_db(s), sql, -1, &st, NULL) != SQLITE_OK)
		return sqlite3_errmsg(session_db(s));
	while (sqlite3_step(st) == SQLITE_ROW && n < sizeof(qbuf) - 256) {
		for (i = 0; i < sqlite3_column_count(st); i++) {
			const char *v = (const char *)sqlite3_column_text(st, i);

			n += snprintf(qbuf + n, sizeof(qbuf) - n, "%s%s",
				      i ? "|" : "", v ? v : "NULL");
		}
		n += snprintf(qbuf + n, sizeof(qbuf) - n, ";");
	}
	sqlite3_finalize(st);
	return qbuf;
}

#define CHECK_Q(name, want, s, ...)                                       \
	do {                                                              \
		const char *got_ = q(s, __VA_ARGS__);                     \
		check(strcmp(got_, want) == 0, name, "got '%s', want '%s'", \
		      got_, want);                                        \
	} while (0)

/* run propel, capture stdout (and stderr) */
LIB int run(const char *args, char *out, size_t size)
{
	const char *propel = getenv("PROPEL");
	char cmd[2048];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1",
		 propel ? propel : "build/propel", args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < size - 1 && fgets(out + n, size - n, f))
		n += strlen(out + n);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

LIB void check_text(const char *name, const char *got, const char *want)
{
	if (strcmp(got, want) == 0) {
		printf("PASS %s\n", name);
		return;
	}
	nfail++;
	printf("FAIL %s: output differs\n--- want\n%s--- got\n%s---\n", name,
	       want, got);
}

/* Point top at the tree (PROPEL_TOP or the current directory) and make
 * the test's scratch directory /tmp/propel-NAME.XXXXXX in tmp; 0 or -1. */
LIB int lib_init(const char *name)
{
	if (getenv("PROPEL_TOP"))
		top = getenv("PROPEL_TOP");
	else if (getcwd(tmp, sizeof(tmp)))
		top = strdup(tmp);
	snprintf(tmp, sizeof(tmp), "/tmp/propel-%s.XXXXXX", name);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

/* Remove the scratch directory when every check passed. */
LIB void lib_done(void)
{
	char cmd[300];

	if (nfail)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd)) {
		/* leave it */
	}
}

#endif
