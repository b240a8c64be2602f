/*
 * tests/unit/test-lazy.c - the chunked form of engine/reconstruct.c (lazy:
 * a few decoded chunks at a time) against the row form (eager: every
 * event in memory) on the same trace of ~430,000 events: three threads of
 * several chunks each (deep recursion, a shallow loop with signals and a
 * gap, a client whose sends are received by the first thread), written
 * once as rows and once through engine/chunk.c's writer.
 *
 * Checked: recon_load of the chunked session decodes at most two chunks
 * per thread; every event reads the same (kind, id, depth, match, up, ts)
 * both ways; a gap cuts the tree (no frame open before it is matched
 * after it); 4,000 random moves of the cursor (all eight, from random
 * places, chunk boundaries among them) land on the same event with the
 * same result; the global order and recon_at_ts agree; and the same
 * holds for a format-2 file whose index does not say the kinds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/chunk.h"
#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "engine/session.h"

#include "tests/unit/check.h"

struct gev {
	int tid, kind, func, depth;
	long long ts, a0;
};

static struct gev *evs;
static long long nevs, capevs;

struct gth {
	int tid, depth;
	long long ts;
};

static long long add(struct gth *t, int kind, int func, long long a0)
{
	struct gev *e;

	if (nevs == capevs) {
		capevs = capevs ? 2 * capevs : 65536;
		evs = realloc(evs, capevs * sizeof(*evs));
		if (!evs)
			exit(1);
	}
	if (kind == SK_EXIT && t->depth > 0)
		t->depth--;
	t->ts += 10 + (nevs * 7) % 13;
	e = &evs[nevs++];
	*e = (struct gev){ t->tid, kind, func, t->depth, t->ts, a0 };
	if (kind == SK_ENTRY)
		t->depth++;
	return nevs; /* ids are 1-based, in the order written */
}

static void fib(struct gth *t, int k)
{
	add(t, SK_ENTRY, 3, 0);
	if (k > 1) {
		fib(t, k - 1);
		fib(t, k - 2);
	}
	add(t, SK_EXIT, 3, 0);
}

static long long recvs[4096], sends[4096];
static int nmsg;

/* Threads are written one after the other (as ingest does). */
static void make_trace(void)
{
	struct gth a = { 1, 0, 1000 }, b = { 2, 0, 1000 }, c = { 3, 0, 1000 };
	long long k;

	/* 1: main > serve > recv, handle > fib(12) ... ; ~150,000 events */
	add(&a, SK_ENTRY, 1, 0);
	for (k = 1; nevs < 150000; k++) {
		add(&a, SK_ENTRY, 2, 0);
		if (k < 4096 && a.ts < k * 20000 + 500) {
			a.ts = k * 20000 + 500;
			recvs[nmsg++] = add(&a, SK_RECV, 0, 5);
		}
		fib(&a, 5 + (int)(k % 9));
		add(&a, SK_EXIT, 2, 0);
	}
	add(&a, SK_ENTRY, 4, 0);
	add(&a, SK_SIGNAL, 0, 11); /* a crash at the end */
	/* 2: worker, shallow, signals, a gap of 1000 records halfway */
	add(&b, SK_ENTRY, 5, 0);
	add(&b, SK_ENTRY, 6, 0);
	for (k = 0; nevs < 290000; k++) {
		add(&b, SK_ENTRY, 7, 0);
		add(&b, SK_ENTRY, 8, 0);
		if (k % 501 == 0)
			add(&b, SK_SIGNAL, 0, 14);
		add(&b, SK_EXIT, 8, 0);
		if (k == 9000) { /* inside 5 > 6 > 7: the depth went to 2 */
			b.depth = 2;
			add(&b, SK_LOST, 0, 1000);
			add(&b, SK_ENTRY, 8, 0);
			add(&b, SK_EXIT, 8, 0);
			add(&b, SK_EXIT, 6, 0); /* pre-gap frame: no match */
			add(&b, SK_ENTRY, 6, 0);
			continue;
		}
		add(&b, SK_EXIT, 7, 0);
	}
	add(&b, SK_EXIT, 6, 0);
	add(&b, SK_EXIT, 5, 0);
	/* 3: the client: sends the requests thread 1 receives */
	add(&c, SK_ENTRY, 1, 0);
	for (k = 1; nevs < 430000; k++) {
		add(&c, SK_ENTRY, 9, 0);
		if (k <= nmsg) {
			if (c.ts < k * 20000)
				c.ts = k * 20000;
			sends[k - 1] = add(&c, SK_SEND, 0, 4);
		}
		add(&c, SK_ENTRY, 10, 0);
		add(&c, SK_EXIT, 10, 0);
		add(&c, SK_EXIT, 9, 0);
	}
	add(&c, SK_EXIT, 1, 0);
}

static void sql(sqlite3 *db, const char *q)
{
	char *msg = NULL;

	if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK) {
		printf("FAIL lazy/sql: %s: %s\n", q, msg);
		exit(1);
	}
}

static void common_rows(sqlite3 *db)
{
	static const char *const fn[] = { "", "main", "serve", "fib",
					  "lookup", "worker", "loop", "step",
					  "leaf", "request", "parse" };
	char q[256];
	int i;

	for (i = 1; i <= 10; i++) {
		snprintf(q, sizeof(q),
			 "INSERT INTO functions(id,proc,name,file,line) "
			 "VALUES(%d,1,'%s','lazy.c',%d)", i, fn[i], i * 10);
		sql(db, q);
	}
	for (i = 1; i <= 3; i++) {
		snprintf(q, sizeof(q),
			 "INSERT INTO threads(proc,pid,tid,name,first_ns,"
			 "last_ns,nevents,wrapped) VALUES(1,100,%d,'t%d',"
			 "1000,0,0,0)", i, i);
		sql(db, q);
	}
	for (i = 0; i < nmsg; i++) {
		snprintf(q, sizeof(q), "INSERT INTO messages VALUES(%lld,%lld,"
				       "'tcp')", sends[i], recvs[i]);
		sql(db, q);
	}
}

static struct session *write_rows(const char *path)
{
	struct session *s;
	sqlite3_stmt *st;
	char *cause = NULL;
	long long i;

	unlink(path);
	if (session_open(path, SESSION_CREATE, &s, &cause)) {
		printf("FAIL lazy/create: %s\n", cause);
		exit(1);
	}
	sql(session_db(s), "BEGIN");
	sqlite3_prepare_v2(session_db(s),
			   "INSERT INTO events(id,pid,tid,ts_ns,kind,depth,func,"
			   "arg0) VALUES(?,100,?,?,?,?,?,?)", -1, &st, NULL);
	for (i = 0; i < nevs; i++) {
		sqlite3_bind_int64(st, 1, i + 1);
		sqlite3_bind_int(st, 2, evs[i].tid);
		sqlite3_bind_int64(st, 3, evs[i].ts);
		sqlite3_bind_int(st, 4, evs[i].kind);
		sqlite3_bind_int(st, 5, evs[i].depth);
		if (evs[i].func)
			sqlite3_bind_int(st, 6, evs[i].func);
		else
			sqlite3_bind_null(st, 6);
		sqlite3_bind_int64(st, 7, evs[i].a0);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	common_rows(session_db(s));
	sql(session_db(s), "COMMIT");
	session_close(s);
	if (session_open(path, SESSION_READ, &s, &cause)) {
		printf("FAIL lazy/open: %s\n", cause);
		exit(1);
	}
	return s;
}

static struct session *write_chunks(const char *path)
{
	struct chunk_writer *w;
	struct session *s;
	char *cause = NULL;
	long long i;
	int tid = 0;

	unlink(path);
	if (session_open(path, SESSION_CREATE, &s, &cause)) {
		printf("FAIL lazy/create: %s\n", cause);
		exit(1);
	}
	sql(session_db(s), "BEGIN");
	if (chunk_writer_new(s, &w))
		exit(1);
	for (i = 0; i < nevs; i++) {
		struct session_event e = { 0 };

		if (evs[i].tid != tid) {
			tid = evs[i].tid;
			chunk_writer_thread(w, 100, tid);
		}
		e.ts_ns = evs[i].ts;
		e.kind = (uint8_t)evs[i].kind;
		e.depth = evs[i].depth;
		e.func = evs[i].func;
		e.arg[0] = evs[i].a0;
		e.has = SE_DEPTH | SE_ARG0;
		if (chunk_writer_add(w, &e) != i + 1) {
			printf("FAIL lazy/ids: event %lld\n", i + 1);
			exit(1);
		}
	}
	chunk_writer_flush(w);
	chunk_writer_free(w);
	common_rows(session_db(s));
	sql(session_db(s), "COMMIT");
	session_close(s);
	if (session_open(path, SESSION_READ, &s, &cause)) {
		printf("FAIL lazy/open: %s\n", cause);
		exit(1);
	}
	return s;
}

static int same_ev(struct recon_ev a, struct recon_ev b)
{
	return a.kind == b.kind && a.id == b.id && a.depth == b.depth &&
	       a.match == b.match && a.up == b.up && a.ts == b.ts &&
	       a.func == b.func;
}

/* every event of every thread, lr against er: how many differ (the first
 * one described in buf) */
static long long compare_events(struct recon *er, struct recon *lr, char *buf,
				size_t size)
{
	long long bad = 0, i;
	int t;

	for (t = 0; t < 3; t++) {
		if (lr->threads[t].n != er->threads[t].n ||
		    lr->threads[t].tid != er->threads[t].tid) {
			bad++;
			continue;
		}
		for (i = lr->threads[t].n; i-- > 0;) {
			struct recon_ev a = recon_get(er, t, i);
			struct recon_ev b = recon_get(lr, t, i);

			if (!same_ev(a, b) && !bad++)
				snprintf(buf, size,
					 "t%d/%lld: kind %d/%d depth %d/%d "
					 "match %d/%d up %d/%d ts %lld/%lld",
					 t, i, a.kind, b.kind, a.depth,
					 b.depth, a.match, b.match, a.up,
					 b.up, (long long)a.ts,
					 (long long)b.ts);
		}
	}
	return bad;
}

int main(void)
{
	CHECKS_EXPECT(10);
	const char *pr = CHECK_TMP("lazy-rows.db");
	const char *pc = CHECK_TMP("lazy-chunks.db");
	struct session *sr, *sc;
	struct recon *er = NULL, *lr = NULL;
	struct cursor *ec, *lc;
	char *cause = NULL, buf[200] = "";
	long long bad = 0, gapcut = 0, nbound = 0, i;
	int t, k, chunks_min = 1 << 30;
	const struct chunk_thread *cts;
	size_t ncts;

	make_trace();
	sr = write_rows(pr);
	sc = write_chunks(pc);
	if (recon_load(sr, &er, &cause) || recon_load(sc, &lr, &cause)) {
		printf("FAIL lazy/load: %s\n", cause);
		return 1;
	}
	cts = chunk_store_threads(lr->store, &ncts);
	for (i = 0; i < (long long)ncts; i++)
		if ((int)cts[i].n < chunks_min)
			chunks_min = (int)cts[i].n;
	CHECK("lazy/form", lr->lazy && !er->lazy && chunks_min >= 2 &&
	      lr->nthreads == 3 && er->nthreads == 3,
	      "lazy %d eager %d, fewest chunks of a thread %d", lr->lazy,
	      er->lazy, chunks_min);
	CHECK("lazy/open-decodes-little", lr->decodes <= 2 * lr->nthreads,
	      "%lld chunks decoded at load", (long long)lr->decodes);
	CHECK("lazy/counts", lr->nevents == er->nevents &&
	      lr->nevents == nevs && lr->crashed == er->crashed &&
	      lr->crashed && lr->nmsgs == er->nmsgs && lr->nmsgs == nmsg &&
	      lr->first_ts == er->first_ts && lr->last_ts == er->last_ts,
	      "events %lld/%lld crashed %d/%d msgs %lld/%lld",
	      (long long)lr->nevents, (long long)er->nevents, lr->crashed,
	      er->crashed, (long long)lr->nmsgs, (long long)er->nmsgs);

	/* every event, from the end backward, so that most lookups cross
	 * into chunks not decoded yet */
	bad = compare_events(er, lr, buf, sizeof(buf));
	CHECK("lazy/events-equal", !bad, "%lld differ, first %s", bad, buf);

	/* recon_ts (the time alone, no match or caller looked up; the trace
	 * pane's durations) is recon_get's time, in both forms; asked first,
	 * from the end backward, in a cache that has moved on */
	bad = 0;
	for (t = 0; t < lr->nthreads; t++)
		for (i = lr->threads[t].n; i-- > 0;) {
			int64_t ts = recon_ts(lr, t, i);

			if ((ts != recon_get(lr, t, i).ts ||
			     recon_ts(er, t, i) != recon_get(er, t, i).ts) &&
			    !bad++)
				snprintf(buf, sizeof(buf), "t%d/%lld: %lld vs %lld",
					 t, i, (long long)ts,
					 (long long)recon_get(lr, t, i).ts);
		}
	CHECK("lazy/ts-alone", !bad, "%lld differ, first %s", bad, buf);

	/* the gap: the frames open before it have no exit after it */
	t = recon_thread_find(lr, 100, 2);
	for (i = 0; t >= 0 && i < lr->threads[t].n; i++) {
		struct recon_ev e = recon_get(lr, t, i);

		if (e.kind != SK_LOST)
			continue;
		gapcut = recon_match(lr, t, 0) < 0 && recon_match(lr, t, 1) < 0 &&
			 recon_up(lr, t, i + 1) < 0 &&
			 recon_match(lr, t, i + 3) < 0 &&
			 recon_get(lr, t, i + 3).kind == SK_EXIT &&
			 recon_match(lr, t, i + 1) == i + 2;
		break;
	}
	CHECK("lazy/gap-is-a-barrier", gapcut, "gap at %lld", i);

	/* cursor moves from random places (a third of them at chunk
	 * boundaries) */
	ec = cursor_new(er);
	lc = cursor_new(lr);
	bad = 0;
	CHECK("lazy/home", cursor_thread(ec) == cursor_thread(lc) &&
	      cursor_index(ec) == cursor_index(lc) &&
	      cursor_event(lc)->kind == SK_SIGNAL,
	      "eager %d/%lld lazy %d/%lld", cursor_thread(ec),
	      (long long)cursor_index(ec), cursor_thread(lc),
	      (long long)cursor_index(lc));
	srand(7);
	for (k = 0; k < 4000; k++) {
		int m = rand() % CURSOR_NMOVES, e1, e2;
		int64_t n, at;

		t = rand() % 3;
		n = lr->threads[t].n;
		if (k % 3 == 0) {
			at = (rand() % (n / CHUNK_EVENTS + 1)) * CHUNK_EVENTS +
			     rand() % 3 - 1;
			nbound++;
		} else {
			at = (int64_t)((double)rand() / RAND_MAX * (n - 1));
		}
		if (at < 0)
			at = 0;
		if (at >= n)
			at = n - 1;
		cursor_goto(ec, t, at, NULL);
		cursor_goto(lc, t, at, NULL);
		if (k % 2) { /* and a forward move first, so twins apply */
			cursor_move(ec, m % CURSOR_RSTEP, NULL);
			cursor_move(lc, m % CURSOR_RSTEP, NULL);
		}
		e1 = cursor_move(ec, m, NULL);
		e2 = cursor_move(lc, m, NULL);
		if ((e1 != e2 || cursor_thread(ec) != cursor_thread(lc) ||
		     cursor_index(ec) != cursor_index(lc) ||
		     cursor_at_call(ec) != cursor_at_call(lc) ||
		     cursor_frame(ec) != cursor_frame(lc)) &&
		    !bad++)
			snprintf(buf, sizeof(buf),
				 "%s from t%d/%lld: eager %d t%d/%lld, lazy %d "
				 "t%d/%lld", cursor_move_name(m), t,
				 (long long)at, e1, cursor_thread(ec),
				 (long long)cursor_index(ec), e2,
				 cursor_thread(lc),
				 (long long)cursor_index(lc));
	}
	CHECK("lazy/moves-equal", !bad, "%lld of 4000 differ (%lld at chunk "
	      "boundaries), first %s", bad, nbound, buf);

	/* global order and time lookup */
	bad = 0;
	for (k = 0; k < 2000; k++) {
		int nt1, nt2, r1, r2;
		int64_t ni1, ni2, at, ts;

		t = rand() % 3;
		at = rand() % lr->threads[t].n;
		r1 = recon_global_next(er, t, at, &nt1, &ni1);
		r2 = recon_global_next(lr, t, at, &nt2, &ni2);
		if (r1 != r2 || (!r1 && (nt1 != nt2 || ni1 != ni2)))
			bad++;
		r1 = recon_global_prev(er, t, at, &nt1, &ni1);
		r2 = recon_global_prev(lr, t, at, &nt2, &ni2);
		if (r1 != r2 || (!r1 && (nt1 != nt2 || ni1 != ni2)))
			bad++;
		ts = er->first_ts + rand() % (er->last_ts - er->first_ts + 1);
		if (recon_at_ts(er, t, ts) != recon_at_ts(lr, t, ts))
			bad++;
	}
	CHECK("lazy/global-order-equal", !bad, "%lld differ", bad);
	cursor_free(ec);
	cursor_free(lc);
	recon_free(lr);
	session_close(sc);

	/* a format-2 file from before the index kept the kinds: nothing is
	 * skipped by kind, the answers are the same */
	{
		sqlite3 *db;

		if (sqlite3_open(pc, &db) != SQLITE_OK)
			return 1;
		sql(db, "UPDATE chunks SET kinds = NULL");
		sqlite3_close(db);
		if (session_open(pc, SESSION_READ, &sc, &cause) ||
		    recon_load(sc, &lr, &cause)) {
			printf("FAIL lazy/load-unknown-kinds: %s\n", cause);
			return 1;
		}
		buf[0] = 0;
		bad = compare_events(er, lr, buf, sizeof(buf));
		CHECK("lazy/unknown-kinds-equal", !bad && lr->crashed,
		      "%lld differ, first %s", bad, buf);
		recon_free(lr);
		session_close(sc);
	}
	recon_free(er);
	session_close(sr);
	unlink(pr);
	unlink(pc);
	free(evs);
	return failures ? 1 : 0;
}
