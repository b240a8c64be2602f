/*
 * tests/unit/test-reconstruct.c - engine/reconstruct.c on synthetic
 * sessions: rebuilt depth equals what ingest stored, a wrapped ring's lost
 * entries are rebuilt so the oldest events sit at their true depth,
 * happens-before raises a recv that precedes its send, and the global
 * order visits every event once in time order, both ways.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine/reconstruct.h"
#include "engine/session.h"
#include "tests/fixtures/tui/synth.h"

#include "tests/unit/check.h"

static struct recon *load(const char *path, const char *text)
{
	struct session *s = synth_session(path, text);
	struct recon *r = NULL;
	char *cause = NULL;

	if (recon_load(s, &r, &cause)) {
		printf("FAIL recon/load: %s\n", cause);
		exit(1);
	}
	return r;
}

static void done(struct recon *r, const char *path)
{
	struct session *s = r->session;

	recon_free(r);
	session_close(s);
	unlink(path);
}

static void test_depth(void)
{
	const char *p = CHECK_TMP("recon-1.db");
	struct recon *r = load(p, "1 E main\n1 E a\n1 E b\n1 X b\n1 S\n1 X a\n"
				  "2 E w\n1 E c\n2 R\n2 X w\n1 X c\n1 G\nM 5 9\n");
	const struct recon_thread *t1 = &r->threads[recon_thread_find(r, 1, 1)];
	int64_t i, bad = 0;

	for (i = 0; i < t1->n; i++) {
		struct recon_row row;

		if (t1->ev[i].kind != SK_ENTRY && t1->ev[i].kind != SK_EXIT)
			continue;
		recon_row(r, t1->ev[i].id, &row);
		bad += row.stored_depth != t1->ev[i].depth;
	}
	CHECK("recon/depth-equals-stored", !bad && !t1->depth_fixed &&
	      r->nthreads == 2 && r->nevents == 12, "bad %lld fixed %lld",
	      (long long)bad, (long long)t1->depth_fixed);
	CHECK("recon/match", t1->ev[1].match == 5 && t1->ev[5].match == 1 &&
	      t1->ev[0].match < 0, "a: %d", t1->ev[1].match);
	CHECK("recon/leaf-depth-is-indent", t1->ev[4].kind == SK_SEND &&
	      t1->ev[4].depth == 2 && t1->ev[4].up == 1, "depth %d",
	      t1->ev[4].depth);
	CHECK("recon/crashed-by-signal", r->crashed, "not crashed");
	CHECK("recon/messages", r->nmsgs == 1, "%lld", (long long)r->nmsgs);
	done(r, p);
}

static void test_wrapped(void)
{
	const char *p = CHECK_TMP("recon-2.db");
	struct recon *r = load(p, "D 1 4\n1 X work\n1 X step\n1 E step\n1 X step\n"
				  "1 X run\n1 X main\n");
	const struct recon_thread *t = &r->threads[0];

	CHECK("recon/wrapped-synth-entries", t->nsynth == 4 && t->wrapped &&
	      t->ev[0].flags & RECON_F_SYNTH && t->ev[0].depth == 0 &&
	      !strcmp(recon_func_name(r, t->ev[0].func), "main") &&
	      !strcmp(recon_func_name(r, t->ev[3].func), "work"),
	      "nsynth %d", t->nsynth);
	CHECK("recon/wrapped-oldest-at-true-depth", t->ev[4].depth == 3 &&
	      t->ev[4].match == 3 && t->ev[5].depth == 2 && !t->depth_fixed,
	      "depth %d fixed %lld", t->ev[4].depth, (long long)t->depth_fixed);
	CHECK("recon/wrapped-nevents-excludes-synth", r->nevents == 6, "%lld",
	      (long long)r->nevents);
	done(r, p);
}

static void test_hb_and_order(void)
{
	const char *p = CHECK_TMP("recon-3.db");
	/* thread 2's clock is behind: its recv (line 6) is stamped before
	 * thread 1's send (line 3) */
	struct recon *r = load(p, "@ 5000\n1 E main\n1 E a\n1 S\n1 X a\n"
				  "@ 1000\n2 E w\n2 R\n2 E h\n2 X h\n2 X w\n"
				  "@ 6000\n1 X main\nM 3 6\n");
	int t1 = recon_thread_find(r, 1, 1), t2 = recon_thread_find(r, 1, 2);
	int t, nt, seen = 0, bad = 0, back = 0;
	int64_t i, ni, ri;
	int pt;

	recon_locate(r, 6, &t, &ri);
	CHECK("recon/happens-before-raises-recv", t == t2 &&
	      r->threads[t2].ev[ri].ts > r->threads[t1].ev[2].ts &&
	      r->threads[t2].ev[ri + 1].ts >= r->threads[t2].ev[ri].ts,
	      "recv ts %lld send ts %lld", (long long)r->threads[t2].ev[ri].ts,
	      (long long)r->threads[t1].ev[2].ts);
	CHECK("recon/peer", !recon_peer(r, t2, ri, &pt, &ni) && pt == t1 &&
	      ni == 2, "no peer");
	/* global order from the earliest event */
	t = r->threads[t1].ev[0].ts <= r->threads[t2].ev[0].ts ? t1 : t2;
	i = 0;
	seen = 1;
	while (!recon_global_next(r, t, i, &nt, &ni)) {
		if (r->threads[nt].ev[ni].ts < r->threads[t].ev[i].ts)
			bad++;
		t = nt;
		i = ni;
		seen++;
	}
	while (!recon_global_prev(r, t, i, &nt, &ni)) {
		t = nt;
		i = ni;
		back++;
	}
	CHECK("recon/global-order", seen == 10 && !bad && back == 9,
	      "seen %d bad %d back %d", seen, bad, back);
	done(r, p);
}

/* a send read by three recvs (two in one thread, one in a process that
 * shares the channel): stepping from the send lands on the first */
static void test_peer_first_recv(void)
{
	const char *p = CHECK_TMP("recon-4.db");
	struct recon *r = load(p, "1 E main\n1 S\n1 X main\n2 E w\n2 R\n"
				  "2 R\n2 X w\n3 E v\n3 R\n3 X v\n"
				  "M 2 9\nM 2 6\nM 2 5\n");
	int t1 = recon_thread_find(r, 1, 1), t2 = recon_thread_find(r, 1, 2);
	int pt = -1, t;
	int64_t pi = -1, ri;

	recon_locate(r, 5, &t, &ri);
	CHECK("recon/peer-of-send-is-first-recv",
	      !recon_peer(r, t1, 1, &pt, &pi) && pt == t2 && t == t2 &&
		      pi == ri,
	      "thread %d index %lld, want %d %lld", pt, (long long)pi, t2,
	      (long long)ri);
	done(r, p);
}

int main(void)
{
	CHECKS_EXPECT(12);
	test_depth();
	test_wrapped();
	test_hb_and_order();
	test_peer_first_recv();
	return failures ? 1 : 0;
}
