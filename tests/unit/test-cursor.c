/*
 * tests/unit/test-cursor.c - the cursor's moves on synthetic traces
 * (engine/cursor.c): every forward move undone by its reverse twin,
 * reverse-finish from depth d lands at depth d-1, stepping across a matched
 * send/recv and back, backtrace depth, continue to break and to a signal,
 * and moves on a wrapped thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "tests/fixtures/tui/synth.h"

static int failures;

#define CHECK(name, cond, ...)                                             \
	do {                                                               \
		if (cond)                                                  \
			printf("PASS %s\n", name);                         \
		else {                                                     \
			printf("FAIL %s: ", name);                         \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			failures++;                                        \
		}                                                          \
	} while (0)

/* main thread 1 calls a, which sends to thread 2 and calls b; thread 2
 * receives, handles, and thread 1 faults in c. */
static const char trace[] =
	"1 E main\n"
	"2 T\n"
	"2 E worker\n"
	"1 E a\n"
	"1 E b\n"
	"1 X b\n"
	"1 S\n"           /* line 7: send */
	"1 E b\n"
	"1 E c\n"
	"1 X c\n"
	"1 X b\n"
	"1 X a\n"
	"2 E recv_loop\n"
	"2 R\n"           /* line 14: recv */
	"2 E handle\n"
	"2 X handle\n"
	"2 X recv_loop\n"
	"1 E c\n"
	"1 E d\n"
	"1 G\n"           /* line 20: fault */
	"M 7 14\n";

static int at(struct cursor *c, int64_t id)
{
	return cursor_event_id(c) == id;
}

static void test_undo(struct recon *r, struct cursor *c)
{
	int t, m, bad = 0, tried = 0;
	int64_t i;
	char buf[128] = "";

	for (t = 0; t < r->nthreads; t++) {
		for (i = 0; i < r->threads[t].n; i++) {
			for (m = CURSOR_STEP; m <= CURSOR_CONTINUE; m++) {
				char *cause = NULL;
				int64_t from;
				int ft;

				cursor_goto(c, t, i, NULL);
				from = i;
				ft = t;
				if (cursor_move(c, m, &cause)) {
					free(cause);
					continue;
				}
				tried++;
				if (cursor_move(c, cursor_move_twin(m), NULL) ||
				    cursor_thread(c) != ft ||
				    cursor_index(c) != from) {
					if (!bad++)
						snprintf(buf, sizeof(buf),
							 "%s from t%d/%lld came back to t%d/%lld",
							 cursor_move_name(m), ft,
							 (long long)from,
							 cursor_thread(c),
							 (long long)cursor_index(c));
				}
			}
		}
	}
	CHECK("cursor/undo-every-forward-move", !bad && tried > 40,
	      "%d of %d not undone: %s", bad, tried, buf);

	/* two moves forward, two back */
	bad = 0;
	for (i = 0; i < r->threads[0].n; i++) {
		int64_t seq[4];

		cursor_goto(c, 0, i, NULL);
		seq[0] = cursor_event_id(c);
		if (cursor_move(c, CURSOR_NEXT, NULL) ||
		    cursor_move(c, CURSOR_STEP, NULL))
			continue;
		cursor_move(c, CURSOR_RSTEP, NULL);
		cursor_move(c, CURSOR_RNEXT, NULL);
		seq[1] = cursor_event_id(c);
		bad += seq[0] != seq[1];
	}
	CHECK("cursor/undo-chain", !bad, "%d chains not undone", bad);
}

static void test_rfinish(struct recon *r, struct cursor *c)
{
	int t, bad = 0, n = 0;
	int64_t i;
	char buf[128] = "";

	for (t = 0; t < r->nthreads; t++) {
		for (i = 0; i < r->threads[t].n; i++) {
			int d = r->threads[t].ev[i].depth;

			if (d < 1)
				continue;
			cursor_goto(c, t, i, NULL);
			if (cursor_move(c, CURSOR_RFINISH, NULL)) {
				bad++;
				continue;
			}
			n++;
			if (cursor_event(c)->depth != d - 1 && !bad++)
				snprintf(buf, sizeof(buf),
					 "from t%d/%lld depth %d to depth %d", t,
					 (long long)i, d, cursor_event(c)->depth);
		}
	}
	CHECK("cursor/reverse-finish-lands-at-d-1", !bad && n > 10, "%d bad: %s",
	      bad, buf);
	/* gdb's meaning: from inside c (at the fault), back to the call of c */
	cursor_goto_event(c, 20, NULL);
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/reverse-finish-to-the-call", at(c, 19), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/reverse-finish-again-to-the-caller", at(c, 18), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_goto_event(c, 5, NULL); /* entry b, depth 2 */
	cursor_move(c, CURSOR_FINISH, NULL);
	CHECK("cursor/finish-to-the-exit", at(c, 6), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_FINISH, NULL); /* at exit b: finish a */
	CHECK("cursor/finish-from-exit-finishes-caller", at(c, 12), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_goto_event(c, 1, NULL);
	CHECK("cursor/finish-outermost-never-returns",
	      cursor_move(c, CURSOR_FINISH, NULL) == -ERANGE && at(c, 1), "moved");
}

static void test_send_recv(struct recon *r, struct cursor *c)
{
	char *cause = NULL;
	int pid, tid;

	cursor_goto_event(c, 7, NULL);
	cursor_move(c, CURSOR_STEP, NULL);
	tid = r->threads[cursor_thread(c)].tid;
	CHECK("cursor/step-at-send-enters-receiver", at(c, 14) && tid == 2,
	      "at %lld tid %d", (long long)cursor_event_id(c), tid);
	cursor_move(c, CURSOR_RSTEP, NULL);
	CHECK("cursor/reverse-step-at-recv-comes-back", at(c, 7), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_NEXT, NULL);
	CHECK("cursor/next-at-send-stays", at(c, 8), "at %lld",
	      (long long)cursor_event_id(c));
	/* from a fresh position at the recv, reverse-step follows the
	 * logical thread back to the send */
	cursor_goto_event(c, 14, NULL);
	cursor_move(c, CURSOR_RSTEP, &cause);
	CHECK("cursor/reverse-step-at-recv-fresh", at(c, 7), "at %lld",
	      (long long)cursor_event_id(c));
	(void)pid;
	free(cause);
}

static void test_bt(struct recon *r, struct cursor *c)
{
	int t, bad = 0, n = 0;
	int64_t i, fr[64];
	struct recon_row row;

	for (t = 0; t < r->nthreads; t++)
		for (i = 0; i < r->threads[t].n; i++) {
			const struct recon_ev *e = &r->threads[t].ev[i];

			if (e->kind != SK_ENTRY && e->kind != SK_EXIT)
				continue;
			cursor_goto(c, t, i, NULL);
			recon_row(r, e->id, &row);
			n++;
			if (cursor_backtrace(c, fr, 64) != row.stored_depth + 1)
				bad++;
		}
	CHECK("cursor/bt-matches-stored-depth", !bad && n >= 16, "%d of %d", bad, n);
	cursor_goto_event(c, 20, NULL);
	n = cursor_backtrace(c, fr, 64);
	CHECK("cursor/bt-at-fault", n == 3 &&
	      !strcmp(recon_func_name(r, r->threads[cursor_thread(c)].ev[fr[0]].func), "d") &&
	      !strcmp(recon_func_name(r, r->threads[cursor_thread(c)].ev[fr[2]].func), "main"),
	      "%d frames", n);
}

static void test_continue(struct recon *r, struct cursor *c)
{
	char *cause = NULL;

	cursor_home(c);
	CHECK("cursor/home-at-fault", at(c, 20), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_goto_event(c, 1, NULL);
	cursor_move(c, CURSOR_CONTINUE, NULL);
	CHECK("cursor/continue-to-signal", at(c, 20), "at %lld",
	      (long long)cursor_event_id(c));
	CHECK("cursor/break-unknown", cursor_break_add(c, "nosuch", &cause) == -ENOENT &&
	      cause, "no error");
	free(cause);
	cursor_break_add(c, "handle", NULL);
	cursor_goto_event(c, 1, NULL);
	cursor_move(c, CURSOR_CONTINUE, NULL);
	CHECK("cursor/continue-to-break-other-thread", at(c, 15), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_CONTINUE, NULL);
	CHECK("cursor/continue-then-signal", at(c, 20), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_RCONTINUE, NULL);
	CHECK("cursor/reverse-continue", at(c, 15), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_break_clear(c);
	CHECK("cursor/switch-thread", !cursor_switch_thread(c, 1, NULL) &&
	      r->threads[cursor_thread(c)].tid == 1 &&
	      cursor_event(c)->ts <= r->threads[1].ev[0].ts + 1000, "no");
	CHECK("cursor/switch-thread-by-tid", !cursor_switch_thread(c, 2, NULL) &&
	      r->threads[cursor_thread(c)].tid == 2, "no");
	CHECK("cursor/move-names", cursor_move_parse("reverse-finish") == CURSOR_RFINISH &&
	      cursor_move_parse("rs") == CURSOR_RSTEP && cursor_move_parse("x") < 0, "no");
}

static void test_wrapped(void)
{
	static const char wrapped[] =
		"D 1 3\n"
		"1 X work\n"
		"1 X step\n"
		"1 E step\n"
		"1 E work\n"
		"1 X work\n"
		"1 X step\n"
		"1 X run\n"
		"1 G\n";
	struct session *s = synth_session("/tmp/propel-test-cursor-w.db", wrapped);
	struct recon *r = NULL;
	struct cursor *c;
	int64_t fr[16];

	recon_load(s, &r, NULL);
	c = cursor_new(r);
	cursor_goto_event(c, 1, NULL);
	CHECK("cursor/wrapped-bt", cursor_backtrace(c, fr, 16) == 3 &&
	      cursor_event(c)->depth == 2, "bt %d depth %d",
	      cursor_backtrace(c, fr, 16), cursor_event(c)->depth);
	cursor_move(c, CURSOR_RNEXT, NULL);
	CHECK("cursor/wrapped-reverse-next-to-rebuilt-entry",
	      cursor_event(c)->flags & RECON_F_SYNTH, "not synthetic");
	cursor_free(c);
	recon_free(r);
	session_close(s);
	unlink("/tmp/propel-test-cursor-w.db");
}

int main(void)
{
	const char *path = "/tmp/propel-test-cursor.db";
	struct session *s = synth_session(path, trace);
	struct recon *r = NULL;
	struct cursor *c;
	char *cause = NULL;

	if (recon_load(s, &r, &cause)) {
		printf("FAIL cursor/load: %s\n", cause);
		return 1;
	}
	c = cursor_new(r);
	test_undo(r, c);
	test_rfinish(r, c);
	test_send_recv(r, c);
	test_bt(r, c);
	test_continue(r, c);
	test_wrapped();
	cursor_free(c);
	recon_free(r);
	session_close(s);
	unlink(path);
	return failures ? 1 : 0;
}
