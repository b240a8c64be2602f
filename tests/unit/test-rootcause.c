/*
 * tests/unit/test-rootcause.c - analysis/rootcause.c on hand-built
 * traces:
 *   paths/fig4         self-propelled Figure 4: main called A (which
 *                      called B and C) and D only in the anomalous flow:
 *                      Δa = {main>A, main>A>B, main>A>C, main>D} (4 raw),
 *                      pruned to {main>A, main>D}, merged to main>[A, D]
 *   paths/normal-side  a path only in the normal flow is in Δn
 *   paths/ranks        two kept paths: the earlier but longer one is first
 *                      by time and second by length
 *   paths/variation    §4.2's normal variations: five flows, the
 *                      anomalous one opened a connection (main>Net>Conn,
 *                      early) as flow 3 did too, and took the fault
 *                      (main>App>Fault, late); the normal one reused a
 *                      connection (main>Net>Reuse, as 2 of the 3 others
 *                      did) and logged (main>Log, as 1 of 3 did): given
 *                      the others, Conn and Log are variations and rank
 *                      last, Fault before them; without, Conn first
 *   paths/callsite     §5.1: the same function reached from another call
 *                      site is a difference (it was not in the prototype)
 *   failstop/blocked   four processes; one stopped 60 s before the others
 *                      inside read, called from wait_for_lock: found, with
 *                      its last function and stack
 *   failstop/precision the same lead under the clock precision: none
 *   failstop/clean     a process that exited 0 early is no failure
 *   failstop/first-live  the same four still running when the recording
 *                      ended (no exit): the one that stopped first is
 *                      found, not the last (every one is a candidate)
 *   failstop/idle      the early one, alive, waits in poll where it
 *                      waited before and came back (its loop's wait for
 *                      work: a daemon between requests): none; waiting
 *                      there for the first time: it is the one
 *   failstop/wrapped   a wrapped ring (rebuilt entries) still gives the
 *                      whole stack of the last function
 *   failstop/detach-order  four busy processes, each with its last event
 *                      1 ms before its own stop, stopped 30 ms apart (the
 *                      end of an attach stops them one after another):
 *                      none; the same with the first stopped silent 2 s
 *                      before its stop: it is the one
 *   failstop/away      the same silent 2 s, all but 1 ms of it waiting for
 *                      a CPU (trace_away: a loaded host): none
 *   window             three identical processes; one changes behaviour
 *                      in the third window: that window is found
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profiles.h"
#include "analysis/rootcause.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

static void path_str(const struct trace *t, uint32_t path, char *buf,
		     size_t n)
{
	const char *fn[32];
	size_t k = trace_path_funcs(t, path, fn, 32), i, w = 0;

	buf[0] = 0;
	for (i = 0; i < k && w + 64 < n; i++)
		w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ">" : "",
				      fn[i]);
}

/* Profiles of pid 1 (anomalous) and pid 2 (normal). */
static void two(struct profiles_space *sp, struct trace *t,
		struct profile **p)
{
	uint32_t *of;
	int64_t *pids;
	size_t n;

	if (trace_finish(t) || profiles_units_by_process(t, &of, &pids, &n) ||
	    n != 2 || profiles_build(sp, t, of, n, p))
		abort();
	free(of);
	free(pids);
}

static void call(struct trace *t, int64_t *id, int64_t *ts, int depth,
		 const char *f, const char *site)
{
	tb_ev(t, (*id)++, (*ts)++, TK_ENTRY, depth, f, site);
}

static void ret(struct trace *t, int64_t *id, int64_t *ts, int depth,
		const char *f)
{
	tb_ev(t, (*id)++, (*ts)++, TK_EXIT, depth, f, NULL);
}

static void test_fig4(void)
{
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *p;
	struct rootcause rc;
	int64_t id = 1, ts = 0;
	char s[256] = "";
	int ok;

	tb_thread(t, 1, 1); /* anomalous */
	call(t, &id, &ts, 0, "main", NULL);
	call(t, &id, &ts, 1, "E", "m.c:1");
	ret(t, &id, &ts, 1, "E");
	call(t, &id, &ts, 1, "A", "m.c:2");
	call(t, &id, &ts, 2, "B", "a.c:1");
	ret(t, &id, &ts, 2, "B");
	call(t, &id, &ts, 2, "C", "a.c:2");
	ret(t, &id, &ts, 2, "C");
	ret(t, &id, &ts, 1, "A");
	call(t, &id, &ts, 1, "D", "m.c:3");
	ret(t, &id, &ts, 1, "D");
	ret(t, &id, &ts, 0, "main");
	tb_thread(t, 2, 2); /* normal */
	ts = 0;
	call(t, &id, &ts, 0, "main", NULL);
	call(t, &id, &ts, 1, "E", "m.c:1");
	ret(t, &id, &ts, 1, "E");
	call(t, &id, &ts, 1, "F", "m.c:4");
	ret(t, &id, &ts, 1, "F");
	ret(t, &id, &ts, 0, "main");
	two(&sp, t, &p);
	ok = !rootcause_paths(&sp, &p[0], &p[1], &rc);
	if (ok && rc.n == 2)
		path_str(t, rc.p[0].path, s, sizeof(s));
	CHECK("paths/fig4",
	      ok && rc.delta_raw == 5 && rc.delta_pruned == 3 && rc.n == 2 &&
		      rc.p[0].side == 0 && rc.p[0].nlast == 2 &&
		      !strcmp(trace_str(t, rc.p[0].last[0]), "A") &&
		      !strcmp(trace_str(t, rc.p[0].last[1]), "D") &&
		      !strcmp(s, "main>A"),
	      "raw %zu pruned %zu kept %zu first %s", rc.delta_raw,
	      rc.delta_pruned, rc.n, s);
	if (ok && rc.n == 2)
		path_str(t, rc.p[1].path, s, sizeof(s));
	CHECK("paths/normal-side",
	      ok && rc.n == 2 && rc.p[1].side == 1 && rc.p[1].nlast == 1 &&
		      !strcmp(s, "main>F") && rc.p[0].rank_time == 1 &&
		      rc.p[1].rank_time == 2,
	      "%s", s);
	rootcause_release(&rc);
	profiles_free(p, 2);
	trace_free(t);
	profiles_space_release(&sp);
}

static void test_ranks_callsite(void)
{
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *p;
	struct rootcause rc;
	int64_t id = 1, ts = 0;
	char s0[256] = "", s1[256] = "";
	int ok;

	tb_thread(t, 1, 1);
	call(t, &id, &ts, 0, "main", NULL);
	call(t, &id, &ts, 1, "X", "m.c:1");
	call(t, &id, &ts, 2, "Y", "x.c:1");
	call(t, &id, &ts, 3, "Z", "y.c:1"); /* early, long: only here */
	ret(t, &id, &ts, 3, "Z");
	ret(t, &id, &ts, 2, "Y");
	ret(t, &id, &ts, 1, "X");
	call(t, &id, &ts, 1, "W", "m.c:9"); /* late, short: only here */
	ret(t, &id, &ts, 1, "W");
	ret(t, &id, &ts, 0, "main");
	tb_thread(t, 2, 2);
	ts = 0;
	call(t, &id, &ts, 0, "main", NULL);
	call(t, &id, &ts, 1, "X", "m.c:1");
	call(t, &id, &ts, 2, "Y", "x.c:1");
	ret(t, &id, &ts, 2, "Y");
	ret(t, &id, &ts, 1, "X");
	ret(t, &id, &ts, 0, "main");
	two(&sp, t, &p);
	ok = !rootcause_paths(&sp, &p[0], &p[1], &rc) && rc.n == 2;
	if (ok) {
		path_str(t, rc.p[0].path, s0, sizeof(s0));
		path_str(t, rc.p[1].path, s1, sizeof(s1));
	}
	CHECK("paths/ranks",
	      ok && !strcmp(s0, "main>X>Y>Z") && rc.p[0].rank_time == 1 &&
		      rc.p[0].rank_length == 2 && !strcmp(s1, "main>W") &&
		      rc.p[1].rank_time == 2 && rc.p[1].rank_length == 1 &&
		      rc.p[0].rel_ts == 3,
	      "%zu paths: %s (%zu, %zu), %s", rc.n, s0,
	      ok ? rc.p[0].rank_time : 0, ok ? rc.p[0].rank_length : 0, s1);
	rootcause_release(&rc);
	profiles_free(p, 2);
	trace_free(t);

	/* the paper's SetTransferFiles -> InsertJobExpr -> lookup, from two
	 * call sites of InsertJobExpr */
	t = trace_new();
	id = 1;
	ts = 0;
	tb_thread(t, 1, 1);
	call(t, &id, &ts, 0, "SetTransferFiles", NULL);
	call(t, &id, &ts, 1, "InsertJobExpr", "submit.c:100");
	call(t, &id, &ts, 2, "lookup", "hash.c:7");
	ret(t, &id, &ts, 2, "lookup");
	ret(t, &id, &ts, 1, "InsertJobExpr");
	call(t, &id, &ts, 1, "InsertJobExpr", "submit.c:200");
	call(t, &id, &ts, 2, "lookup", "hash.c:7");
	ret(t, &id, &ts, 2, "lookup");
	ret(t, &id, &ts, 1, "InsertJobExpr");
	ret(t, &id, &ts, 0, "SetTransferFiles");
	tb_thread(t, 2, 2);
	call(t, &id, &ts, 0, "SetTransferFiles", NULL);
	call(t, &id, &ts, 1, "InsertJobExpr", "submit.c:100");
	call(t, &id, &ts, 2, "lookup", "hash.c:7");
	ret(t, &id, &ts, 2, "lookup");
	ret(t, &id, &ts, 1, "InsertJobExpr");
	ret(t, &id, &ts, 0, "SetTransferFiles");
	two(&sp, t, &p);
	ok = !rootcause_paths(&sp, &p[0], &p[1], &rc);
	CHECK("paths/callsite",
	      ok && rc.delta_raw == 2 && rc.n == 1 && rc.p[0].side == 0 &&
		      !strcmp(trace_str(t, rc.p[0].last[0]), "InsertJobExpr") &&
		      rc.p[0].rel_ts == 5,
	      "raw %zu kept %zu", rc.delta_raw, rc.n);
	rootcause_release(&rc);
	profiles_free(p, 2);
	trace_free(t);
	profiles_space_release(&sp);
}

/* One flow of paths/variation: main > Net > net, main > App > app, and
 * main > Log > Line when log. */
static void var_flow(struct trace *t, int64_t pid, int64_t *id,
		     const char *net, const char *app, int log)
{
	int64_t ts = 0;

	tb_thread(t, pid, pid);
	call(t, id, &ts, 0, "main", NULL);
	call(t, id, &ts, 1, "Net", "m.c:1");
	call(t, id, &ts, 2, net, "n.c:1");
	ret(t, id, &ts, 2, net);
	ret(t, id, &ts, 1, "Net");
	call(t, id, &ts, 1, "App", "m.c:2");
	call(t, id, &ts, 2, app, "a.c:1");
	ret(t, id, &ts, 2, app);
	ret(t, id, &ts, 1, "App");
	if (log) {
		call(t, id, &ts, 1, "Log", "m.c:3");
		call(t, id, &ts, 2, "Line", "l.c:1");
		ret(t, id, &ts, 2, "Line");
		ret(t, id, &ts, 1, "Log");
	}
	ret(t, id, &ts, 0, "main");
}

static void test_variation(void)
{
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *p = NULL;
	const struct profile *others[5];
	struct rootcause rc, rc0;
	uint32_t *of;
	int64_t *pids, id = 1;
	size_t n, i, a = 9, nm = 9;
	const struct rootcause_path *conn = NULL, *fault = NULL, *logp = NULL,
				    *reuse = NULL, *conn0 = NULL;
	int ok;

	var_flow(t, 1, &id, "Conn", "Fault", 0); /* anomalous */
	var_flow(t, 2, &id, "Reuse", "Work", 1); /* normal */
	var_flow(t, 3, &id, "Conn", "Work", 0);
	var_flow(t, 4, &id, "Reuse", "Work", 1);
	var_flow(t, 5, &id, "Reuse", "Work", 0);
	if (trace_finish(t) || profiles_units_by_process(t, &of, &pids, &n) ||
	    n != 5 || profiles_build(&sp, t, of, n, &p))
		abort();
	for (i = 0; i < n; i++) {
		others[i] = &p[i];
		if (pids[i] == 1)
			a = i;
		if (pids[i] == 2)
			nm = i;
	}
	if (a == 9 || nm == 9)
		abort();
	ok = !rootcause_paths_among(&sp, &p[a], &p[nm], others, n, &rc) &&
	     !rootcause_paths(&sp, &p[a], &p[nm], &rc0);
	for (i = 0; ok && i < rc.n; i++) {
		const char *last = trace_str(t, rc.p[i].last[0]);

		if (!strcmp(last, "Conn"))
			conn = &rc.p[i];
		else if (!strcmp(last, "Fault"))
			fault = &rc.p[i];
		else if (!strcmp(last, "Log"))
			logp = &rc.p[i];
		else if (!strcmp(last, "Reuse"))
			reuse = &rc.p[i];
	}
	for (i = 0; ok && i < rc0.n; i++)
		if (!strcmp(trace_str(t, rc0.p[i].last[0]), "Conn"))
			conn0 = &rc0.p[i];
	CHECK("paths/variation",
	      ok && rc.n == 5 && conn && fault && logp && reuse && conn0 &&
		      conn->variation && conn->seen == 1 && logp->variation &&
		      logp->seen == 1 && !fault->variation && fault->seen == 0 &&
		      !reuse->variation && reuse->seen == 2 &&
		      fault->rank_time < conn->rank_time &&
		      fault->rank_time < logp->rank_time &&
		      fault->rank_length < conn->rank_length &&
		      conn->rank_time >= 4 && logp->rank_time >= 4 &&
		      conn0->rank_time == 1 && !conn0->variation,
	      "%zu paths; conn %d/%zu t%zu, fault t%zu, log %d t%zu, "
	      "without others conn t%zu",
	      rc.n, conn ? conn->variation : -1, conn ? conn->seen : 0,
	      conn ? conn->rank_time : 0, fault ? fault->rank_time : 0,
	      logp ? logp->variation : -1, logp ? logp->rank_time : 0,
	      conn0 ? conn0->rank_time : 0);
	rootcause_release(&rc);
	rootcause_release(&rc0);
	free(of);
	free(pids);
	profiles_free(p, n);
	trace_free(t);
	profiles_space_release(&sp);
}

#define S 1000000000LL

/* Four processes ending at 100 s, 100 s, 100 s and lead s earlier; the
 * early one blocked in main > wait_for_lock > read.  The three end with a
 * clean exit, or (live) are still in their main loop at 100 s. */
static struct trace *four_of(int64_t lead, int clean_early, int live)
{
	struct trace *t = trace_new();
	int64_t pid;

	for (pid = 1; pid <= 3; pid++) {
		tb_thread(t, pid, pid);
		tb_ev(t, pid * 10, 0, TK_ENTRY, 0, "main", NULL);
		if (live) {
			tb_ev(t, pid * 10 + 1, 100 * S, TK_ENTRY, 1, "poll",
			      "w.c:3");
			continue;
		}
		tb_ev(t, pid * 10 + 1, 100 * S, TK_EXIT, 0, "main", NULL);
		tb_full(t, pid * 10 + 2, 100 * S, TK_PROCESS_EXIT, 0, NULL,
			NULL, 0, 0, 0, 0);
	}
	tb_thread(t, 4, 4);
	tb_ev(t, 40, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 41, 1, TK_ENTRY, 1, "wait_for_lock", "w.c:1");
	tb_ev(t, 42, 100 * S - lead, TK_ENTRY, 2, "read", "w.c:2");
	if (clean_early) {
		tb_ev(t, 43, 100 * S - lead, TK_EXIT, 2, "read", NULL);
		tb_ev(t, 44, 100 * S - lead, TK_EXIT, 1, "wait_for_lock", NULL);
		tb_ev(t, 45, 100 * S - lead, TK_EXIT, 0, "main", NULL);
		tb_full(t, 46, 100 * S - lead, TK_PROCESS_EXIT, 0, NULL, NULL,
			0, 0, 0, 0);
	}
	if (trace_finish(t))
		abort();
	return t;
}

static struct trace *four(int64_t lead, int clean_early)
{
	return four_of(lead, clean_early, 0);
}

static void test_failstop(void)
{
	struct rootcause_failstop fs;
	struct trace *t = four(60 * S, 0);
	char s[256] = "";

	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	if (fs.found)
		path_str(t, fs.stack, s, sizeof(s));
	CHECK("failstop/blocked",
	      fs.found && fs.pid == 4 && fs.tid == 4 &&
		      fs.ts_ns == 40 * S &&
		      !strcmp(trace_str(t, fs.last_func), "read") &&
		      !strcmp(s, "main>wait_for_lock>read") &&
		      fs.mean_ns == 85.0 * S && fs.nproc == 4,
	      "found %d pid %lld %s mean %g", fs.found, (long long)fs.pid, s,
	      fs.mean_ns);
	trace_free(t);
	/* 4 ms lead: mean - ts = 3 ms, under a 10 ms precision */
	t = four(4000000, 0);
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	CHECK("failstop/precision", !fs.found, "found pid %lld",
	      (long long)fs.pid);
	rootcause_failstop(t, 1000000, ROOTCAUSE_Z, &fs);
	CHECK("failstop/precision-1ms", fs.found && fs.pid == 4,
	      "not found with 1 ms");
	trace_free(t);
	t = four(60 * S, 1);
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	CHECK("failstop/clean", !fs.found, "found pid %lld", (long long)fs.pid);
	trace_free(t);
	t = four_of(60 * S, 0, 1);
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	CHECK("failstop/first-live",
	      fs.found && fs.pid == 4 && fs.ts_ns == 40 * S && fs.nproc == 4,
	      "found %d pid %lld at %lld of %zu", fs.found, (long long)fs.pid,
	      (long long)fs.ts_ns, (size_t)fs.nproc);
	trace_free(t);

	/* idle: the early one waits in poll (live) where it waited before */
	{
		int answered;

		for (answered = 1; answered >= 0; answered--) {
			int64_t pid;

			t = trace_new();
			for (pid = 1; pid <= 3; pid++) {
				tb_thread(t, pid, pid);
				tb_ev(t, pid * 10, 0, TK_ENTRY, 0, "main", NULL);
				tb_ev(t, pid * 10 + 1, 100 * S, TK_ENTRY, 1,
				      "poll", "w.c:3");
			}
			tb_thread(t, 4, 4);
			tb_ev(t, 40, 0, TK_ENTRY, 0, "main", NULL);
			tb_comm(t, 41, 30 * S, TK_RECV, 8);
			if (answered) { /* its loop's wait, before */
				tb_ev(t, 43, 30 * S + 1, TK_ENTRY, 1, "poll",
				      "w.c:4");
				tb_ev(t, 44, 40 * S - 1, TK_EXIT, 1, "poll",
				      NULL);
			}
			tb_ev(t, 45, 40 * S, TK_ENTRY, 1, "poll", "w.c:4");
			if (trace_finish(t))
				abort();
			rootcause_failstop(t, ROOTCAUSE_PRECISION_NS,
					   ROOTCAUSE_Z, &fs);
			if (answered)
				s[0] = !fs.found;
			else
				s[1] = fs.found && fs.pid == 4;
			trace_free(t);
		}
		CHECK("failstop/idle", s[0] && s[1],
		      "idle daemon reported %d, pending one found %d", !s[0],
		      s[1]);
	}

	/* a wrapped ring: the oldest records are gone, the agent rebuilt the
	 * open frames (main, loop) as entries at the oldest time */
	t = trace_new();
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 100 * S, TK_EXIT, 0, "main", NULL);
	tb_full(t, 3, 100 * S, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	tb_thread(t, 2, 2);
	tb_ev(t, 4, 100 * S, TK_EXIT, 0, "main", NULL);
	tb_full(t, 5, 100 * S, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0, 0);
	tb_thread(t, 3, 3);
	tb_full(t, 10, 5 * S, TK_ENTRY, 0, "main", NULL, 0, 0, 0, 0);
	t->ev[t->nev - 1].rebuilt = 1;
	tb_full(t, 11, 5 * S, TK_ENTRY, 1, "freeze_sending", "s.c:3", 0, 0,
		0, 0);
	t->ev[t->nev - 1].rebuilt = 1;
	{
		int i;

		for (i = 0; i < 50; i++) { /* the ring full of these */
			tb_ev(t, 12 + 2 * i, 5 * S + i, TK_ENTRY, 2,
			      "isSendStable", "s.c:4");
			tb_ev(t, 13 + 2 * i, 5 * S + i, TK_EXIT, 2,
			      "isSendStable", NULL);
		}
	}
	tb_ev(t, 200, 6 * S, TK_ENTRY, 2, "score_panic", "s.c:9");
	if (trace_finish(t))
		abort();
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	if (fs.found)
		path_str(t, fs.stack, s, sizeof(s));
	CHECK("failstop/wrapped",
	      fs.found && fs.pid == 3 &&
		      !strcmp(trace_str(t, fs.last_func), "score_panic") &&
		      !strcmp(s, "main>freeze_sending>score_panic"),
	      "found %d %s", fs.found, s);
	trace_free(t);
}

static struct trace *detached_away(int64_t silent, int64_t away)
{
	struct trace *t = trace_new();
	int64_t pid;

	for (pid = 1; pid <= 4; pid++) {
		int64_t stop = 100 * S + (pid - 1) * 30000000LL;
		struct trace_process p = { .pid = pid, .stop_ns = stop };

		tb_thread(t, pid, pid);
		tb_ev(t, pid * 10, 0, TK_ENTRY, 0, "main", NULL);
		tb_ev(t, pid * 10 + 1, stop - (pid == 1 ? silent : 1000000),
		      TK_ENTRY, 1, "render", "w.c:4");
		if (trace_process_add(t, &p))
			abort();
		/* its silence, all of it waiting for a CPU */
		if (pid == 1 && away && trace_away_add(t, 1, 1, stop - silent,
							stop - silent + away))
			abort();
	}
	if (trace_finish(t))
		abort();
	return t;
}

static struct trace *detached(int64_t silent)
{
	return detached_away(silent, 0);
}

static void test_failstop_detach(void)
{
	struct rootcause_failstop fs;
	struct trace *t = detached(1000000);
	int none;

	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	none = !fs.found;
	trace_free(t);
	t = detached(2 * S);
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	CHECK("failstop/detach-order", none && fs.found && fs.pid == 1,
	      "busy, stopped in turn: %s; silent 2 s: found %d pid %lld",
	      none ? "none" : "found", fs.found, (long long)fs.pid);
	trace_free(t);
	t = detached_away(2 * S, 2 * S - 1000000);
	rootcause_failstop(t, ROOTCAUSE_PRECISION_NS, ROOTCAUSE_Z, &fs);
	CHECK("failstop/away", !fs.found,
	      "silent 2 s waiting for a CPU: found %d pid %lld", fs.found,
	      (long long)fs.pid);
	trace_free(t);
}

static void test_window(void)
{
	struct trace *t = trace_new();
	int64_t pid, w, id = 1, start = -1, end = -1;
	int err;

	/* 5 windows of 100 ns; in each, every process runs A then B; pid 3
	 * runs C instead of B from window 2 (0-based) */
	for (pid = 1; pid <= 3; pid++) {
		tb_thread(t, pid, pid);
		for (w = 0; w < 5; w++) {
			const char *second = pid == 3 && w >= 2 ? "C" : "B";

			tb_ev(t, id++, w * 100, TK_ENTRY, 0, "A", NULL);
			tb_ev(t, id++, w * 100 + 50, TK_EXIT, 0, "A", NULL);
			tb_ev(t, id++, w * 100 + 50, TK_ENTRY, 0, second, NULL);
			tb_ev(t, id++, w * 100 + 99, TK_EXIT, 0, second, NULL);
		}
		tb_full(t, id++, 499, TK_PROCESS_EXIT, 0, NULL, NULL, 0, 0, 0,
			0);
	}
	if (trace_finish(t))
		abort();
	err = rootcause_window(t, 3, 100, &start, &end);
	CHECK("window", !err && start == 200 && end == 300,
	      "err %d window %lld..%lld", err, (long long)start,
	      (long long)end);
	err = rootcause_window(t, 1, 100, &start, &end);
	CHECK("window/never", err == -ENOENT, "err %d window %lld", err,
	      (long long)start);
	trace_free(t);
}

int main(void)
{
	CHECKS_EXPECT(16);
	test_fig4();
	test_ranks_callsite();
	test_variation();
	test_failstop();
	test_failstop_detach();
	test_window();
	return failures ? 1 : 0;
}
