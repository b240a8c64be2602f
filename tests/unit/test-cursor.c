/*
 * tests/unit/test-cursor.c - the cursor's moves on synthetic traces
 * (engine/cursor.c): every forward move undone by its reverse twin (also
 * from a call), reverse-finish lands in the caller at the call (the frame
 * one level out, named by cursor_frame), stepping across a matched
 * send/recv and back, backtrace depth, continue to break and to a signal,
 * and moves on a wrapped thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "engine/session.h"
#include "tests/fixtures/tui/synth.h"

#include "tests/unit/check.h"

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

static const char *frame_name(struct recon *r, struct cursor *c)
{
	int64_t f = cursor_frame(c);

	return f < 0 ? "-"
		     : recon_func_name(r, r->threads[cursor_thread(c)].ev[f].func);
}

/* gdb's reverse-finish: from anywhere in frame F, to the call of F seen
 * from F's caller (at F's entry, "at the call"): the cursor's frame goes
 * exactly one level out; in the outermost frame it does not move. */
static void test_rfinish(struct recon *r, struct cursor *c)
{
	int t, bad = 0, n = 0, nerr = 0;
	int64_t i;
	char buf[160] = "", *cause = NULL;

	for (t = 0; t < r->nthreads; t++) {
		const struct recon_thread *th = &r->threads[t];

		for (i = 0; i < th->n; i++) {
			int64_t f = recon_frame(r, t, i);
			int err;

			cursor_goto(c, t, i, NULL);
			err = cursor_move(c, CURSOR_RFINISH, NULL);
			if (f < 0 || th->ev[f].up < 0) {
				nerr++;
				if ((err != -ERANGE || cursor_index(c) != i ||
				     cursor_at_call(c)) && !bad++)
					snprintf(buf, sizeof(buf),
						 "t%d/%lld: outermost, err %d", t,
						 (long long)i, err);
				continue;
			}
			n++;
			if ((err || cursor_index(c) != f || !cursor_at_call(c) ||
			     cursor_frame(c) != th->ev[f].up ||
			     th->ev[cursor_frame(c)].depth != th->ev[f].depth - 1) &&
			    !bad++)
				snprintf(buf, sizeof(buf),
					 "t%d/%lld: frame %lld -> at %lld call %d "
					 "frame %lld",
					 t, (long long)i, (long long)f,
					 (long long)cursor_index(c),
					 cursor_at_call(c), (long long)cursor_frame(c));
		}
	}
	CHECK("cursor/reverse-finish-one-frame-out", !bad && n > 10 && nerr > 2,
	      "%d bad (%d moved, %d outermost): %s", bad, n, nerr, buf);

	/* one press from the fault in d lands in the caller c at the call
	 * of d (the entry of d, at the call): the frame named is c */
	cursor_goto_event(c, 20, NULL);
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/reverse-finish-lands-in-caller-at-call",
	      at(c, 19) && cursor_at_call(c) && !strcmp(frame_name(r, c), "c"),
	      "at %lld call %d frame %s", (long long)cursor_event_id(c),
	      cursor_at_call(c), frame_name(r, c));
	{
		int64_t fr[8];
		int nb = cursor_backtrace(c, fr, 8);

		CHECK("cursor/bt-at-call-starts-at-caller",
		      nb == 2 && fr[0] == cursor_frame(c), "%d frames", nb);
	}
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/reverse-finish-again-to-the-caller",
	      at(c, 18) && cursor_at_call(c) && !strcmp(frame_name(r, c), "main"),
	      "at %lld frame %s", (long long)cursor_event_id(c), frame_name(r, c));
	CHECK("cursor/reverse-finish-outermost",
	      cursor_move(c, CURSOR_RFINISH, &cause) == -ERANGE && at(c, 18) &&
		      cursor_at_call(c) && cause && strstr(cause, "outermost"),
	      "moved to %lld", (long long)cursor_event_id(c));
	free(cause);
	/* at the call: step enters it, reverse-step goes before it */
	cursor_goto_event(c, 20, NULL);
	cursor_move(c, CURSOR_RFINISH, NULL);
	cursor_move(c, CURSOR_STEP, NULL);
	CHECK("cursor/step-at-call-enters-it",
	      at(c, 19) && !cursor_at_call(c) && !strcmp(frame_name(r, c), "d"),
	      "at %lld call %d frame %s", (long long)cursor_event_id(c),
	      cursor_at_call(c), frame_name(r, c));
	cursor_goto_event(c, 20, NULL);
	cursor_move(c, CURSOR_RFINISH, NULL);
	cursor_move(c, CURSOR_RSTEP, NULL);
	CHECK("cursor/reverse-step-at-call-goes-before-it",
	      at(c, 18) && !cursor_at_call(c), "at %lld",
	      (long long)cursor_event_id(c));
	/* at the call of c in b: finish finishes b, and comes back */
	cursor_goto_event(c, 10, NULL); /* exit c */
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/reverse-finish-from-exit", at(c, 9) && cursor_at_call(c) &&
	      !strcmp(frame_name(r, c), "b"), "at %lld frame %s",
	      (long long)cursor_event_id(c), frame_name(r, c));
	cursor_move(c, CURSOR_FINISH, NULL);
	CHECK("cursor/finish-at-call-finishes-caller", at(c, 11), "at %lld",
	      (long long)cursor_event_id(c));
	cursor_move(c, CURSOR_RFINISH, NULL);
	CHECK("cursor/finish-at-call-undone", at(c, 9) && cursor_at_call(c),
	      "at %lld call %d", (long long)cursor_event_id(c),
	      cursor_at_call(c));

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

/* every forward move made at a call is undone by its twin, back to the
 * call (not to the entry at the same index) */
static void test_undo_at_call(struct recon *r, struct cursor *c)
{
	int t, m, bad = 0, tried = 0;
	int64_t i;
	char buf[128] = "";

	for (t = 0; t < r->nthreads; t++) {
		const struct recon_thread *th = &r->threads[t];

		for (i = 0; i < th->n; i++) {
			if (th->ev[i].kind != SK_ENTRY || th->ev[i].up < 0)
				continue;
			for (m = CURSOR_STEP; m <= CURSOR_CONTINUE; m++) {
				cursor_goto(c, t, i, NULL);
				if (cursor_move(c, CURSOR_RFINISH, NULL) ||
				    !cursor_at_call(c) ||
				    cursor_move(c, m, NULL))
					continue;
				tried++;
				if (cursor_move(c, cursor_move_twin(m), NULL) ||
				    cursor_thread(c) != t || cursor_index(c) != i ||
				    !cursor_at_call(c)) {
					if (!bad++)
						snprintf(buf, sizeof(buf),
							 "%s from the call at t%d/%lld: "
							 "t%d/%lld call %d",
							 cursor_move_name(m), t,
							 (long long)i, cursor_thread(c),
							 (long long)cursor_index(c),
							 cursor_at_call(c));
				}
			}
		}
	}
	CHECK("cursor/undo-every-forward-move-at-call", !bad && tried > 20,
	      "%d of %d not undone: %s", bad, tried, buf);
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

/* A time typed as shown, to a precision: the first event in [lo, hi).
 * Line L is at 1000 + 10 L ns; thread 1 holds lines 1, 4-12, 18-20. */
static void test_goto_range(struct cursor *c)
{
	cursor_goto_event(c, 1, NULL);
	/* "1.06" typed for line 6's 1060, read as [1055, 1065): the last
	 * event at or before 1055 is line 5's, the one shown is line 6's */
	cursor_goto_ts_range(c, 1055, 1065, NULL);
	CHECK("cursor/goto-range-first-within", at(c, 6), "at %lld",
	      (long long)cursor_event_id(c));
	/* none of thread 1's there: thread 2's line 2 (1020) */
	cursor_goto_event(c, 1, NULL);
	cursor_goto_ts_range(c, 1018, 1025, NULL);
	CHECK("cursor/goto-range-other-thread", at(c, 2), "at %lld",
	      (long long)cursor_event_id(c));
	/* none at all in the range: the last at or before it */
	cursor_goto_event(c, 1, NULL);
	cursor_goto_ts_range(c, 1011, 1019, NULL);
	CHECK("cursor/goto-range-none-before", at(c, 1), "at %lld",
	      (long long)cursor_event_id(c));
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
	/* at the call of a break function, continue stops at its entry */
	cursor_break_add(c, "c", NULL);
	cursor_goto_event(c, 10, NULL);
	cursor_move(c, CURSOR_RFINISH, NULL);
	cursor_move(c, CURSOR_CONTINUE, NULL);
	CHECK("cursor/continue-at-call-stops-at-its-entry",
	      at(c, 9) && !cursor_at_call(c), "at %lld call %d",
	      (long long)cursor_event_id(c), cursor_at_call(c));
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
	const char *path = CHECK_TMP("cursor-w.db");
	struct session *s = synth_session(path, wrapped);
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
	unlink(path);
}

int main(void)
{
	CHECKS_EXPECT(37);
	const char *path = CHECK_TMP("cursor.db");
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
	test_undo_at_call(r, c);
	test_send_recv(r, c);
	test_bt(r, c);
	test_continue(r, c);
	test_goto_range(c);
	test_wrapped();
	cursor_free(c);
	recon_free(r);
	session_close(s);
	unlink(path);
	return failures ? 1 : 0;
}
