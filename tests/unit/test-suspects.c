/*
 * tests/unit/test-suspects.c - analysis/profiles.c and analysis/suspects.c
 * on hand-built traces, answers computed by hand:
 *   profile/fig1       anomaly-diagnosis Figure 1: g spends 60% in A and
 *                      40% in B, h 75% and 25%: time profiles (0.6, 0.4)
 *                      and (0.75, 0.25), L1 distance 0.3
 *   profile/runq       h of fig1 again, its A 80 and B 45 with waits for a
 *                      CPU of 15 (in A) and 10 (5 in A, 5 in B): the time
 *                      it ran is g's, 60 and 40, distance 0 (another
 *                      thread's wait counts nowhere)
 *   profile/callsite   one function called from two sites: two paths
 *   profile/comm       bytes sent per path, normalized
 *   profile/blocked    a thread whose trace stops inside a call spends the
 *                      rest of the trace there
 *   k                  k = |T|/4 clamped to [1, |T|-1]
 *   knn/unsupervised   six common flows {a,b,c}, an unusual one {a,b,c,d},
 *                      an anomaly {a,x,y,z}: k = 2, scores 0 (x6), 1, 5;
 *                      the anomaly ranks first
 *   knn/two-outliers   Figure 2: two outliers close to each other score
 *                      low with k = 1 (each other's neighbour) and high
 *                      with k = 2 (the distance to the common behaviour)
 *   oneclass/reference eq. 6: with {a,b,c,d} known normal, its score is
 *                      min(d(h,h_k), d(h,n_1)) = 0, the anomaly keeps 5
 *   oneclass/failure   an earlier unrelated failure as reference: its
 *                      generic symptom stops scoring, the specific one
 *                      ranks first
 *   delta/max          eq. 7: the largest component of the delta vector
 *   order/failstop-first  ranks 3,1,5,2,4 with unit 2 holding the
 *                      fail-stop process: 4,2,1,3,5, unit 2 says why
 *   order/steady       one kind {abcs, abd, abd, abd}: the first unit's
 *                      one-time c and s left out and the d every later
 *                      one takes put in (3 paths): it scores 0, not 3; a
 *                      later {abdz} still scores 1 and ranks first
 *   order/steady-cut   {abcs, ab, abd, abd, abd}, the first two cut by
 *                      the window: the complete units vote, d goes into
 *                      the first, it scores 0 and ranks last; the second
 *                      scores 1 (without the cut the first scored > 0)
 *   order/kinds        {abc, abc, abc} and {q} of another kind: q, alone
 *                      in its kind, scores 0 (4 against the others); a
 *                      reference of its kind gives it its distance
 *   order/rank         suspects_rank: the fail-stop unit first, then the
 *                      steady-state k-NN order
 *   cut/flows          suspects_cut on a server (untraced client, a traced
 *                      back end whose recording ends first): five requests;
 *                      the first holds the return of a call entered before
 *                      the window, the fourth talks to the back end after
 *                      its last kept event (unrecorded), the fifth has no
 *                      answer: cut 1,0,0,1,1
 *   cut/began          a server and a back end injected by --follow while
 *                      the first of three requests waits on it (the back
 *                      end's first recv reads request 1's send): cut
 *                      1,0,0; the same back end forked by the server: 0,0,0
 *   profiles/idle      a server's two requests, each answered, then a wait
 *                      in poll (950 ns after the first, to the end after
 *                      the second): the first flow's time is its 10 ns in
 *                      handle, not its loop's wait for the second request
 *                      (10 + 950 before)
 *   profiles/idle-end  the second too: the trace ends in the poll after
 *                      an answer on the channel its request came by (10,
 *                      not 10 + 960 as before)
 *   profiles/owed      the second request passed on to a back end, the
 *                      trace ending in the wait for its reply: 10 + 960
 *   profiles/idle-runs a request's unit on a thread in two runs: answered,
 *                      the loop's poll, a timer's round in no unit, the
 *                      poll again: 10, not 10 + 500 (the second run, begun
 *                      by no recv, counted before)
 *   profiles/answered  the unit's recv on K, its answer on K, another
 *                      client's answer on L, the trace ending in the poll:
 *                      10, not 10 + 950 (the last send, on L, read as a
 *                      reply owed)
 *   cut/rank           {abc} x3, {abcd}, {abcd} and {axyz} cut, k = 1:
 *                      without cuts {axyz} ranks first and the two {abcd}
 *                      score 0; with them the complete {abcd} scores 1
 *                      (the cut one is no neighbour) and ranks first, the
 *                      cut ones last (5 then 0), marked
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/profiles.h"
#include "analysis/suspects.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

/* One process per unit; each unit calls the listed functions (0-time). */
static struct trace *sets(const char *const *spec, size_t n)
{
	struct trace *t = trace_new();
	int64_t id = 1, ts = 0;
	size_t u;

	for (u = 0; u < n; u++) {
		const char *s = spec[u];
		char f[2] = { 0, 0 };

		tb_thread(t, (int64_t)u + 1, (int64_t)u + 1);
		tb_ev(t, id++, ts++, TK_ENTRY, 0, "main", NULL);
		for (; *s; s++) {
			f[0] = *s;
			tb_ev(t, id++, ts, TK_ENTRY, 1, f, "x.c:1");
			tb_ev(t, id++, ts++, TK_EXIT, 1, f, NULL);
		}
		tb_ev(t, id++, ts++, TK_EXIT, 0, "main", NULL);
	}
	if (trace_finish(t))
		abort();
	return t;
}

static struct profile *by_process(struct profiles_space *sp,
				  const struct trace *t, size_t *n)
{
	uint32_t *of;
	int64_t *pids;
	struct profile *p;

	if (profiles_units_by_process(t, &of, &pids, n) ||
	    profiles_build(sp, t, of, *n, &p))
		abort();
	free(of);
	free(pids);
	return p;
}

static const struct profiles_entry *entry_of(struct profiles_space *sp,
					     const struct profile *p,
					     const char *key)
{
	size_t i;

	for (i = 0; i < sp->n; i++)
		if (!strcmp(sp->key[i], key))
			return profiles_find(p, (uint32_t)i);
	return NULL;
}

/* A process's thread (begun by the caller) that runs A until a_end, then
 * B until b_end, and exits; event ids id0 + 1 .. id0 + 5 */
static void ab_process(struct trace *t, int64_t id0, int64_t a_end,
		       int64_t b_end)
{
	tb_ev(t, id0 + 1, 0, TK_ENTRY, 0, "A", NULL);
	tb_ev(t, id0 + 2, a_end, TK_EXIT, 0, "A", NULL);
	tb_ev(t, id0 + 3, a_end, TK_ENTRY, 0, "B", NULL);
	tb_ev(t, id0 + 4, b_end, TK_EXIT, 0, "B", NULL);
	tb_full(t, id0 + 5, b_end, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
}

static void test_profiles(void)
{
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *p;
	const struct profiles_entry *a, *b, *a2;
	size_t n;
	double d;

	tb_thread(t, 1, 1); /* g */
	ab_process(t, 0, 60, 100);
	tb_thread(t, 2, 2); /* h */
	ab_process(t, 10, 75, 100);
	if (trace_finish(t))
		abort();
	p = by_process(&sp, t, &n);
	a = entry_of(&sp, &p[0], "A@");
	b = entry_of(&sp, &p[0], "B@");
	d = profiles_distance(&p[0], &p[1], PROFILES_TIME);
	CHECK("profile/fig1",
	      n == 2 && a && b && fabs(a->time - 0.6) < 1e-9 &&
		      fabs(b->time - 0.4) < 1e-9 &&
		      fabs(entry_of(&sp, &p[1], "A@")->time - 0.75) < 1e-9 &&
		      fabs(d - 0.3) < 1e-9 &&
		      profiles_distance(&p[0], &p[1], PROFILES_COVERAGE) == 0,
	      "A %g B %g d %g", a ? a->time : -1, b ? b->time : -1, d);
	profiles_free(p, n);
	trace_free(t);

	/* h again, slower only by its waits for a CPU: the same profile */
	t = trace_new();
	tb_thread(t, 1, 1); /* g */
	ab_process(t, 0, 60, 100);
	tb_thread(t, 2, 2); /* h: A 80, B 45, of which 20 and 5 waits */
	ab_process(t, 10, 80, 125);
	if (trace_away_add(t, 2, 2, 75, 85) || trace_away_add(t, 2, 2, 5, 20) ||
	    trace_away_add(t, 1, 7, 0, 50) || trace_finish(t))
		abort();
	p = by_process(&sp, t, &n);
	d = profiles_distance(&p[0], &p[1], PROFILES_TIME);
	CHECK("profile/runq",
	      n == 2 && p[1].total_ns == 100 && p[0].total_ns == 100 &&
		      fabs(entry_of(&sp, &p[1], "A@")->time - 0.6) < 1e-9 &&
		      fabs(d) < 1e-9 && trace_away_within(t, 1, 0, 125) == 25 &&
		      trace_away_within(t, 1, 78, 200) == 7 &&
		      trace_away_within(t, 0, 0, 100) == 0,
	      "h %lld ns, A %g, d %g", (long long)p[1].total_ns,
	      entry_of(&sp, &p[1], "A@") ? entry_of(&sp, &p[1], "A@")->time : -1,
	      d);
	profiles_free(p, n);
	trace_free(t);

	/* call sites and bytes */
	t = trace_new();
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 1, TK_ENTRY, 1, "lookup", "job.c:10");
	tb_comm(t, 3, 2, TK_SEND, 300);
	tb_ev(t, 4, 3, TK_EXIT, 1, "lookup", NULL);
	tb_ev(t, 5, 4, TK_ENTRY, 1, "lookup", "job.c:20");
	tb_comm(t, 6, 5, TK_SEND, 100);
	tb_ev(t, 7, 6, TK_EXIT, 1, "lookup", NULL);
	tb_ev(t, 8, 7, TK_EXIT, 0, "main", NULL);
	tb_full(t, 9, 7, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	if (trace_finish(t))
		abort();
	p = by_process(&sp, t, &n);
	a = entry_of(&sp, &p[0], "main@>lookup@job.c:10");
	a2 = entry_of(&sp, &p[0], "main@>lookup@job.c:20");
	CHECK("profile/callsite", a && a2 && a != a2 && a->cov && a2->cov &&
	      a->first_ts == 1 && a2->first_ts == 4, "paths %p %p",
	      (void *)a, (void *)a2);
	CHECK("profile/comm", a && a2 && fabs(a->comm - 0.75) < 1e-9 &&
	      fabs(a2->comm - 0.25) < 1e-9 && p[0].total_bytes == 400,
	      "%g %g", a ? a->comm : -1, a2 ? a2->comm : -1);
	profiles_free(p, n);
	trace_free(t);

	/* blocked: pid 2 stops in read at 10; the trace ends at 100 */
	t = trace_new();
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 100, TK_EXIT, 0, "main", NULL);
	tb_full(t, 3, 100, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	tb_thread(t, 2, 2);
	tb_ev(t, 11, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 12, 10, TK_ENTRY, 1, "read", "w.c:5");
	if (trace_finish(t))
		abort();
	p = by_process(&sp, t, &n);
	a = entry_of(&sp, &p[1], "main@>read@w.c:5");
	CHECK("profile/blocked", a && fabs(a->time - 0.9) < 1e-9 &&
	      p[1].total_ns == 100, "read %g of %lld", a ? a->time : -1,
	      (long long)p[1].total_ns);
	profiles_free(p, n);
	trace_free(t);
	profiles_space_release(&sp);
}

static void test_knn(void)
{
	static const char *const spec[] = { "abc", "abc", "abc",  "abcd",
					    "abc", "abc", "axyz", "abc" };
	static const char *const pair[] = { "abc", "abc", "abc", "ax",
					    "abc", "axw", "abc", "abc" };
	struct profiles_space sp = { 0 };
	struct suspects_score sc[8];
	struct trace *t = sets(spec, 8), *r;
	struct profile *p, *q;
	size_t n, m, i;
	int ok;

	CHECK("k", suspects_k(8) == 2 && suspects_k(3) == 1 &&
	      suspects_k(1) == 0 && suspects_k(2) == 1 &&
	      suspects_k(100) == 25, "k(8) = %zu", suspects_k(8));
	p = by_process(&sp, t, &n);
	ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 0, sc);
	for (i = 0; i < 8; i++)
		if (i != 3 && i != 6)
			ok = ok && sc[i].score == 0;
	CHECK("knn/unsupervised",
	      ok && sc[3].score == 1 && sc[6].score == 5 && sc[6].rank == 1 &&
		      sc[3].rank == 2 && sc[6].nb_ref == 0,
	      "scores %g %g ranks %zu %zu", sc[3].score, sc[6].score,
	      sc[6].rank, sc[3].rank);
	/* one-class: {a,b,c,d} seen in a known-good run */
	{
		static const char *const good[] = { "abc", "abcd" };

		r = sets(good, 2);
		q = by_process(&sp, r, &m);
		ok = !suspects_score(p, n, q, m, PROFILES_COVERAGE, 0, sc);
		CHECK("oneclass/reference",
		      ok && sc[3].score == 0 && sc[3].nb_ref == 1 &&
			      sc[3].nb == 1 && sc[6].score == 5 &&
			      sc[6].rank == 1,
		      "scores %g %g", sc[3].score, sc[6].score);
		profiles_free(q, m);
		trace_free(r);
	}
	profiles_free(p, n);
	trace_free(t);

	t = sets(pair, 8);
	p = by_process(&sp, t, &n);
	ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 1, sc) &&
	     sc[3].score == 1 && sc[5].score == 1;
	/* k = 2: ax vs abc = 2 (b, c missing, x extra: 3), axw: 4 */
	ok = ok && !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
	     sc[3].score == 3 && sc[5].score == 4 && sc[5].rank == 1 &&
	     sc[3].rank == 2 && sc[0].score == 0;
	CHECK("knn/two-outliers", ok, "scores %g %g", sc[3].score,
	      sc[5].score);
	profiles_free(p, n);
	trace_free(t);

	/* an earlier unrelated failure (generic symptom q) as reference */
	{
		static const char *const run[] = { "abc", "abc", "abc", "abcq",
						   "abc", "abcs", "abc", "abc" };
		static const char *const old[] = { "abcq" };

		t = sets(run, 8);
		r = sets(old, 1);
		p = by_process(&sp, t, &n);
		q = by_process(&sp, r, &m);
		ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
		     sc[3].rank == 1 && sc[3].score == sc[5].score;
		ok = ok &&
		     !suspects_score(p, n, q, m, PROFILES_COVERAGE, 0, sc) &&
		     sc[3].score == 0 && sc[5].score == 1 && sc[5].rank == 1;
		CHECK("oneclass/failure", ok, "generic %g specific %g",
		      sc[3].score, sc[5].score);
		profiles_free(p, n);
		profiles_free(q, m);
		trace_free(t);
		trace_free(r);
	}
	profiles_space_release(&sp);
}

static void test_delta(void)
{
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *p;
	uint32_t k;
	double v;
	size_t n;

	/* p = (A 0.6, B 0.3, C 0.1), q = (A 0.2, B 0.5, C 0.3) */
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "A", NULL);
	tb_ev(t, 2, 60, TK_EXIT, 0, "A", NULL);
	tb_ev(t, 3, 60, TK_ENTRY, 0, "B", NULL);
	tb_ev(t, 4, 90, TK_EXIT, 0, "B", NULL);
	tb_ev(t, 5, 90, TK_ENTRY, 0, "C", NULL);
	tb_ev(t, 6, 100, TK_EXIT, 0, "C", NULL);
	tb_full(t, 7, 100, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	tb_thread(t, 2, 2);
	tb_ev(t, 11, 0, TK_ENTRY, 0, "A", NULL);
	tb_ev(t, 12, 20, TK_EXIT, 0, "A", NULL);
	tb_ev(t, 13, 20, TK_ENTRY, 0, "B", NULL);
	tb_ev(t, 14, 70, TK_EXIT, 0, "B", NULL);
	tb_ev(t, 15, 70, TK_ENTRY, 0, "C", NULL);
	tb_ev(t, 16, 100, TK_EXIT, 0, "C", NULL);
	tb_full(t, 17, 100, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	if (trace_finish(t))
		abort();
	p = by_process(&sp, t, &n);
	k = profiles_max_delta(&p[0], &p[1], PROFILES_TIME, &v);
	CHECK("delta/max", k != TRACE_NONE && !strcmp(sp.key[k], "A@") &&
	      fabs(v - 0.4) < 1e-9 &&
	      fabs(profiles_distance(&p[0], &p[1], PROFILES_TIME) - 0.8) < 1e-9,
	      "%s %g", k != TRACE_NONE ? sp.key[k] : "-", v);
	profiles_free(p, n);
	trace_free(t);
	profiles_space_release(&sp);
}

static void test_order(void)
{
	static const char *const one[] = { "abcs", "abd", "abd", "abd" };
	static const char *const later[] = { "abcs", "abd", "abd", "abd",
					     "abdz" };
	static const char *const two[] = { "abc", "abc", "abc", "q" };
	static const char *const qref[] = { "qr" };
	static const uint32_t g2[] = { 0, 0, 0, 1 }, gq[] = { 1 };
	struct suspects_score sc[5] = { { .rank = 3 }, { .rank = 1 },
					{ .rank = 5 }, { .rank = 2 },
					{ .rank = 4 } };
	struct profiles_space sp = { 0 };
	struct profile *p, *q, *st;
	struct trace *t, *r;
	size_t n, m, nd;
	int ok;

	suspects_failstop_first(sc, 5, 2);
	CHECK("order/failstop-first",
	      sc[0].rank == 4 && sc[1].rank == 2 && sc[2].rank == 1 &&
		      sc[3].rank == 3 && sc[4].rank == 5 &&
		      sc[2].why == SUSPECTS_FAILSTOP && sc[0].why == SUSPECTS_KNN,
	      "ranks %zu %zu %zu %zu %zu", sc[0].rank, sc[1].rank, sc[2].rank,
	      sc[3].rank, sc[4].rank);

	t = sets(one, 4);
	p = by_process(&sp, t, &n);
	ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
	     sc[0].score == 3;
	ok = ok && !suspects_steady(p, n, NULL, &st, &nd) && nd == 3 &&
	     !suspects_score(st, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
	     sc[0].score == 0 && st[0].n == p[1].n;
	profiles_free(st, n);
	profiles_free(p, n);
	trace_free(t);
	t = sets(later, 5);
	p = by_process(&sp, t, &n);
	ok = ok && !suspects_steady(p, n, NULL, &st, &nd) &&
	     !suspects_score(st, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
	     sc[0].score == 0 && sc[4].score == 1 && sc[4].rank == 1;
	profiles_free(st, n);
	CHECK("order/steady", ok, "dropped %zu, scores %g %g", nd, sc[0].score,
	      sc[4].score);
	ok = !suspects_rank(p, n, NULL, PROFILES_COVERAGE, 2, sc) &&
	     sc[2].rank == 1 && sc[2].why == SUSPECTS_FAILSTOP &&
	     sc[4].rank == 2 && sc[4].score == 1;
	CHECK("order/rank", ok, "ranks %zu %zu", sc[2].rank, sc[4].rank);
	profiles_free(p, n);
	trace_free(t);

	/* the first two units cut (a process reached during the second):
	 * d, which every complete unit entered, is added to the first in
	 * steady state; without the cut, the second's lack of it kept it out */
	{
		static const char *const late[] = { "abcs", "ab", "abd", "abd",
						    "abd" };
		static const uint8_t cut[] = { 1, 1, 0, 0, 0 };
		double s0 = -1;

		t = sets(late, 5);
		p = by_process(&sp, t, &n);
		ok = !suspects_steady(p, n, NULL, &st, &nd) &&
		     !suspects_score_cut(st, n, NULL, NULL, 0, NULL,
					 PROFILES_COVERAGE, cut, sc);
		s0 = sc[0].score;
		profiles_free(st, n);
		ok = ok && s0 > 0 &&
		     !suspects_rank_cut(p, n, NULL, PROFILES_COVERAGE,
					(size_t)-1, cut, sc) &&
		     sc[0].score == 0 && sc[1].score == 1 &&
		     sc[0].rank == 5 && sc[1].rank == 4;
		CHECK("order/steady-cut", ok,
		      "without the cut %g; with it %g (rank %zu), the second "
		      "%g (rank %zu)",
		      s0, sc[0].score, sc[0].rank, sc[1].score, sc[1].rank);
		profiles_free(p, n);
		trace_free(t);
	}

	t = sets(two, 4);
	r = sets(qref, 1);
	p = by_process(&sp, t, &n);
	q = by_process(&sp, r, &m);
	ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 0, sc) &&
	     sc[3].score == 4 && sc[3].rank == 1;
	ok = ok &&
	     !suspects_score_kinds(p, n, g2, NULL, 0, NULL, PROFILES_COVERAGE,
				   sc) &&
	     sc[3].score == 0 && sc[3].nb_ref == -1 && sc[0].score == 0;
	ok = ok &&
	     !suspects_score_kinds(p, n, g2, q, m, gq, PROFILES_COVERAGE,
				   sc) &&
	     sc[3].score == 1 && sc[3].nb_ref == 1 && sc[3].rank == 1;
	CHECK("order/kinds", ok, "q scores %g", sc[3].score);
	profiles_free(p, n);
	profiles_free(q, m);
	trace_free(t);
	trace_free(r);
	profiles_space_release(&sp);
}

/* a send or recv on channel chan */
static void comm(struct trace *t, int64_t id, int64_t ts, int kind,
		 int64_t bytes, const char *chan)
{
	tb_full(t, id, ts, kind, 0, NULL, NULL, bytes, trace_intern(t, chan),
		0, 0);
}

/* Three requests through a back end whose first event is at 33: a
 * peer injected while request 1's send waits (born 0), or a child forked
 * at 5 (born 1). */
static void test_cut_began_one(int born, uint8_t *cut, size_t *nflows)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *B = "tcp:10.0.0.1:41000>10.0.0.2:9000";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	int64_t i;

	tb_thread(t, 1, 1);
	if (born)
		tb_full(t, 900, 5, TK_FORK, 0, NULL, NULL, 0, 2, 0, 0);
	for (i = 0; i < 3; i++) {
		comm(t, 10 * i + 1, 100 * i + 10, TK_RECV, 50, K);
		comm(t, 10 * i + 2, 100 * i + 30, TK_SEND, 20, B);
		comm(t, 10 * i + 3, 100 * i + 50, TK_RECV, 20, B);
		comm(t, 10 * i + 4, 100 * i + 80, TK_SEND, 100, K);
	}
	tb_thread(t, 2, 2);
	tb_ev(t, 99, 33, TK_ENTRY, 0, "serve", "s.c:1"); /* its agent runs */
	for (i = 0; i < 3; i++) {
		comm(t, 100 + 2 * i, 100 * i + 35, TK_RECV, 20, B);
		comm(t, 101 + 2 * i, 100 * i + 40, TK_SEND, 20, B);
		tb_msg(t, 10 * i + 2, 100 + 2 * i);
		tb_msg(t, 101 + 2 * i, 10 * i + 3);
	}
	tb_ev(t, 199, 290, TK_EXIT, 0, "serve", NULL);
	if (trace_finish(t))
		abort();
	*nflows = 0;
	if (!flows_build(t, NULL, &f) && !suspects_cut(t, f, cut))
		*nflows = f->n;
	flows_free(f);
	trace_free(t);
}

static void test_cut_began(void)
{
	uint8_t a[4] = { 9, 9, 9, 9 }, b[4] = { 9, 9, 9, 9 };
	size_t na, nb;

	test_cut_began_one(0, a, &na);
	test_cut_began_one(1, b, &nb);
	CHECK("cut/began", na == 3 && nb == 3 && !memcmp(a, "\1\0\0", 3) &&
	      !memcmp(b, "\0\0\0", 3),
	      "%zu flows: cut %d %d %d; forked: %zu flows: cut %d %d %d", na,
	      a[0], a[1], a[2], nb, b[0], b[1], b[2]);
}

/* A server answers two requests on K; its second answer is its last send
 * before the trace ends in its loop's poll (answer 1), or the second
 * request is passed on to a back end on B and the trace ends in the wait
 * for the reply (answer 0).  The time per flow: *t0, *t1. */
static int test_idle_one(int answer, int64_t *t0, int64_t *t1)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *B = "tcp:10.0.0.1:41000>10.0.0.2:9000";
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct flows *f = NULL;
	struct profile *p = NULL;
	int64_t i;
	size_t n = 0;

	tb_thread(t, 1, 1);
	for (i = 0; i < 2; i++) {
		comm(t, 10 * i + 1, 1000 * i + 10, TK_RECV, 50, K);
		tb_ev(t, 10 * i + 2, 1000 * i + 20, TK_ENTRY, 0, "handle", "h.c:1");
		tb_ev(t, 10 * i + 3, 1000 * i + 30, TK_EXIT, 0, "handle", NULL);
		comm(t, 10 * i + 4, 1000 * i + 40, TK_SEND, 100,
		     i == 1 && !answer ? B : K);
		tb_ev(t, 10 * i + 5, 1000 * i + 50, TK_ENTRY, 0, "poll", "l.c:1");
		if (i == 0)
			tb_ev(t, 6, 1000, TK_EXIT, 0, "poll", NULL);
	}
	tb_thread(t, 2, 2); /* the trace ends at 2010 */
	tb_ev(t, 100, 2010, TK_ENTRY, 0, "other", "o.c:1");
	if (trace_finish(t))
		abort();
	*t0 = *t1 = -1;
	if (!flows_build(t, NULL, &f) &&
	    !profiles_build(&sp, t, f->of, f->n, &p)) {
		n = f->n;
		*t0 = p[0].total_ns;
		*t1 = n > 1 ? p[1].total_ns : -1;
		profiles_free(p, f->n);
	}
	profiles_space_release(&sp);
	flows_free(f);
	trace_free(t);
	return (int)n;
}

/* Thread 1 of t: a request on K (ids 1-4), 10 ns in handle, answered on K */
static void answered(struct trace *t, const char *K)
{
	tb_thread(t, 1, 1);
	comm(t, 1, 10, TK_RECV, 50, K);
	tb_ev(t, 2, 20, TK_ENTRY, 0, "handle", "h.c:1");
	tb_ev(t, 3, 30, TK_EXIT, 0, "handle", NULL);
	comm(t, 4, 40, TK_SEND, 100, K);
}

/* The time of one unit, the first thread's events of t (but those with
 * ids skip_a and skip_b: in no unit), set by hand as flows_build left
 * them for redis in three-tier; t is freed.  -1 when it fails. */
static int64_t unit0_time(struct trace *t, int64_t skip_a, int64_t skip_b)
{
	struct profiles_space sp = { 0 };
	struct profile *p = NULL;
	uint32_t *of;
	int64_t ns = -1;

	if (trace_finish(t))
		abort();
	of = malloc(t->nev * sizeof(*of));
	for (size_t i = 0; of && i < t->nev; i++)
		of[i] = t->ev[i].thread == t->ev[0].thread &&
				t->ev[i].id != skip_a && t->ev[i].id != skip_b
			? 0
			: TRACE_NONE;
	if (of && !profiles_build(&sp, t, of, 1, &p)) {
		ns = p[0].total_ns;
		profiles_free(p, 1);
	}
	free(of);
	profiles_space_release(&sp);
	trace_free(t);
	return ns;
}

/* A unit's events on a thread in two runs: a request answered, the loop's
 * poll, a timer's round that no unit holds, the poll again: neither poll
 * is the request's (profiles/idle-runs: the second run, begun by no recv,
 * counted 500 ns before). */
static void test_idle_runs(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	struct trace *t = trace_new();
	int64_t ns;

	answered(t, K);
	tb_ev(t, 5, 50, TK_ENTRY, 0, "poll", "l.c:1");
	tb_ev(t, 6, 400, TK_EXIT, 0, "poll", NULL);
	tb_ev(t, 7, 410, TK_ENTRY, 0, "cron", "l.c:2");
	tb_ev(t, 8, 420, TK_EXIT, 0, "cron", NULL);
	tb_ev(t, 9, 430, TK_ENTRY, 0, "poll", "l.c:1");
	tb_thread(t, 2, 2); /* the trace ends at 930 */
	tb_ev(t, 100, 930, TK_ENTRY, 0, "other", "o.c:1");
	ns = unit0_time(t, 7, 8);
	CHECK("profiles/idle-runs", ns == 10, "time %lld ns (want 10)",
	      (long long)ns);
}

/* A turn of an event loop that answers two clients: the unit's recv on K,
 * its answer on K, then the other client's answer on L (the thread still
 * in the unit), and the trace ends in the loop's poll: answered, so the
 * poll is not the unit's (profiles/answered: the last send, on L, read as
 * a request passed on, its reply owed: 10 + 950 before). */
static void test_idle_answered(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *L = "tcp:10.0.0.1:80>10.0.0.9:51002";
	struct trace *t = trace_new();
	int64_t ns;

	answered(t, K);
	comm(t, 5, 45, TK_SEND, 100, L);
	tb_ev(t, 6, 50, TK_ENTRY, 0, "poll", "l.c:1");
	tb_thread(t, 2, 2); /* the trace ends at 1000 */
	tb_ev(t, 100, 1000, TK_ENTRY, 0, "other", "o.c:1");
	ns = unit0_time(t, 0, 0);
	CHECK("profiles/answered", ns == 10, "time %lld ns (want 10)",
	      (long long)ns);
}

/* The wait of a server's loop after its answer is no flow's time, also
 * when the trace ends in it (profiles/idle-end: the old rule counted it,
 * and an idle redis's 10 ms ranked its flow over three-tier's slow
 * ones); a wait for a reply owed is (profiles/owed). */
static void test_idle_end(void)
{
	int64_t a0, a1, b0, b1;
	int na = test_idle_one(1, &a0, &a1), nb = test_idle_one(0, &b0, &b1);

	CHECK("profiles/idle", na == 2 && a0 == 10, "%d flows, time %lld ns",
	      na, (long long)a0);
	CHECK("profiles/idle-end", na == 2 && a1 == 10,
	      "%d flows, time %lld and %lld ns", na, (long long)a0,
	      (long long)a1);
	CHECK("profiles/owed", nb == 2 && b0 == 10 && b1 == 10 + 960,
	      "%d flows, time %lld and %lld ns", nb, (long long)b0,
	      (long long)b1);
}

static void test_cut(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *B = "tcp:10.0.0.1:41000>10.0.0.2:9000";
	static const char *const six[] = { "abc", "abc", "abc", "abcd", "abcd",
					   "axyz" };
	static const uint8_t cut6[] = { 0, 0, 0, 0, 1, 1 };
	struct suspects_score sc[6];
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct flows *f = NULL;
	struct profile *p;
	uint8_t cut[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
	size_t n;
	int ok;

	tb_thread(t, 1, 1); /* the server: first traced */
	comm(t, 1, 10, TK_RECV, 50, K); /* request 1 */
	tb_ev(t, 2, 20, TK_ENTRY, 1, "handle", "h.c:1");
	comm(t, 3, 30, TK_SEND, 20, B);
	comm(t, 4, 50, TK_RECV, 20, B);
	tb_ev(t, 5, 60, TK_EXIT, 1, "handle", NULL);
	tb_ev(t, 6, 70, TK_EXIT, 0, "loop", NULL); /* entered before */
	comm(t, 7, 80, TK_SEND, 100, K);
	comm(t, 8, 100, TK_RECV, 50, K); /* request 2 */
	tb_ev(t, 9, 110, TK_ENTRY, 1, "handle", "h.c:1");
	comm(t, 10, 120, TK_SEND, 20, B);
	comm(t, 11, 140, TK_RECV, 20, B);
	tb_ev(t, 12, 150, TK_EXIT, 1, "handle", NULL);
	comm(t, 13, 160, TK_SEND, 100, K);
	comm(t, 14, 200, TK_RECV, 50, K); /* request 3 */
	tb_ev(t, 15, 210, TK_ENTRY, 1, "handle", "h.c:1");
	comm(t, 16, 220, TK_SEND, 20, B);
	comm(t, 17, 240, TK_RECV, 20, B);
	tb_ev(t, 18, 250, TK_EXIT, 1, "handle", NULL);
	comm(t, 19, 260, TK_SEND, 100, K);
	comm(t, 20, 300, TK_RECV, 50, K); /* request 4: back end gone */
	tb_ev(t, 21, 310, TK_ENTRY, 1, "handle", "h.c:1");
	comm(t, 22, 320, TK_SEND, 20, B);
	comm(t, 23, 340, TK_RECV, 20, B);
	tb_ev(t, 24, 350, TK_EXIT, 1, "handle", NULL);
	comm(t, 25, 360, TK_SEND, 100, K);
	comm(t, 26, 400, TK_RECV, 50, K); /* request 5: no answer */
	tb_ev(t, 27, 410, TK_ENTRY, 1, "handle", "h.c:1");
	tb_thread(t, 2, 2); /* the back end, recorded until 230 */
	comm(t, 101, 35, TK_RECV, 20, B);
	comm(t, 102, 40, TK_SEND, 20, B);
	comm(t, 103, 125, TK_RECV, 20, B);
	comm(t, 104, 130, TK_SEND, 20, B);
	comm(t, 105, 225, TK_RECV, 20, B);
	comm(t, 106, 230, TK_SEND, 20, B);
	tb_msg(t, 3, 101);
	tb_msg(t, 102, 4);
	tb_msg(t, 10, 103);
	tb_msg(t, 104, 11);
	tb_msg(t, 16, 105);
	tb_msg(t, 106, 17);
	if (trace_finish(t))
		abort();
	ok = !flows_build(t, NULL, &f) && f->n == 5 &&
	     f->rule == FLOWS_RULE_SERVER && !suspects_cut(t, f, cut) &&
	     !memcmp(cut, "\1\0\0\1\1", 5);
	CHECK("cut/flows", ok, "%zu flows: cut %d %d %d %d %d (%d)",
	      f ? f->n : 0, cut[0], cut[1], cut[2], cut[3], cut[4], cut[5]);
	flows_free(f);
	trace_free(t);

	t = sets(six, 6);
	p = by_process(&sp, t, &n);
	ok = !suspects_score(p, n, NULL, 0, PROFILES_COVERAGE, 1, sc) &&
	     sc[5].rank == 1 && sc[3].score == 0 && sc[4].score == 0;
	ok = ok &&
	     !suspects_score_cut(p, n, NULL, NULL, 0, NULL, PROFILES_COVERAGE,
				 cut6, sc) &&
	     sc[3].score == 1 && sc[3].rank == 1 && !sc[3].cut &&
	     sc[5].rank == 5 && sc[4].rank == 6 && sc[4].cut && sc[5].cut &&
	     sc[0].rank == 2;
	CHECK("cut/rank", ok, "ranks %zu %zu %zu, score %g", sc[3].rank,
	      sc[4].rank, sc[5].rank, sc[3].score);
	profiles_free(p, n);
	trace_free(t);
	profiles_space_release(&sp);
}

int main(void)
{
	CHECKS_EXPECT(24);
	test_profiles();
	test_knn();
	test_delta();
	test_order();
	test_cut();
	test_cut_began();
	test_idle_end();
	test_idle_runs();
	test_idle_answered();
	return failures ? 1 : 0;
}
