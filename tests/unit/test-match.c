/*
 * tests/unit/test-match.c - engine/chan.c and engine/match.c: a channel's
 * C lines from its two ends give the same chan and opposite directions;
 * stream recvs match the send whose bytes hold their first byte (also a
 * recv that spans two sends, and none when the sender is missing);
 * datagrams of equal identity pair in order; a recv on an unnamed channel
 * stays unmatched; a UNIX stream whose client never learned its peer
 * ("unix:C-?") takes the accepting end's name and directions, on that
 * host only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/chan.h"
#include "engine/match.h"
#include "engine/session.h"

#include "tests/unit/check.h"

static void test_chan(void)
{
	struct chan_table a = { 0 }, b = { 0 }, u = { 0 };
	const struct chan_info *x, *y;
	int ea, eb;

	/* 127.0.0.1:5000 (client) and 127.0.0.1:80 (server), each end's view */
	ea = chan_table_line(&a, "C 0 tcp 7f000001 5000 7f000001 80 0 0");
	eb = chan_table_line(&b, "C 3 tcp 7f000001 80 7f000001 5000 0 0");
	x = chan_table_get(&a, 0);
	y = chan_table_get(&b, 3);
	CHECK("chan/tcp-same-both-ends",
	      !ea && !eb && x && y && !strcmp(x->chan, y->chan) &&
		      !strcmp(x->chan, "tcp:127.0.0.1:80>127.0.0.1:5000"),
	      "%s / %s", x ? x->chan : "-", y ? y->chan : "-");
	CHECK("chan/tcp-directions",
	      x && y && x->send_dir == y->recv_dir &&
		      x->recv_dir == y->send_dir && x->send_dir != x->recv_dir &&
		      !strcmp(x->peer, "127.0.0.1:80") && x->stream,
	      "x %d/%d y %d/%d", x ? x->send_dir : -1, x ? x->recv_dir : -1,
	      y ? y->send_dir : -1, y ? y->recv_dir : -1);
	chan_table_line(&u, "C 0 unix - 0 - 0 42 17");
	chan_table_line(&u, "C 1 unix - 0 - 0 17 42");
	chan_table_line(&u, "C 2 pipe - 0 - 0 99 99");
	chan_table_line(&u, "C 3 udp 00000000000000000000000000000001 53 "
			    "00000000000000000000000000000001 4000 0 0");
	x = chan_table_get(&u, 0);
	y = chan_table_get(&u, 1);
	CHECK("chan/unix-pair", x && y && !strcmp(x->chan, "unix:17-42") &&
	      !strcmp(y->chan, x->chan) && x->send_dir == y->recv_dir,
	      "%s", x ? x->chan : "-");
	x = chan_table_get(&u, 2);
	CHECK("chan/pipe", x && !strcmp(x->chan, "pipe:99") &&
	      !strcmp(x->peer, "pipe"), "%s", x ? x->chan : "-");
	chan_table_line(&u, "C 4 unix - 0 - 0 42 0");
	x = chan_table_get(&u, 4);
	CHECK("chan/unix-pending", x && !strcmp(x->chan, "unix:42-?") &&
	      !strcmp(x->peer, "unix:?") && x->stream, "%s",
	      x ? x->chan : "-");
	x = chan_table_get(&u, 3);
	CHECK("chan/udp6", x && !strcmp(x->chan, "udp:[::1]:53>[::1]:4000") &&
	      !x->stream, "%s", x ? x->chan : "-");
	CHECK("chan/bad-lines",
	      chan_table_line(&u, "C 9 tcp 7f00 1 7f000001 2 0 0") == -EINVAL &&
		      chan_table_line(&u, "C 9 sctp - 0 - 0 1 2") == -EINVAL &&
		      chan_table_line(&u, "C x") == -EINVAL &&
		      !chan_table_get(&u, 9),
	      "accepted a bad line");
	chan_table_release(&a);
	chan_table_release(&b);
	chan_table_release(&u);
}

struct row {
	int64_t event, pid;
	int kind;
	const char *chan;
	int dir;
	int64_t off; /* -1: datagram */
	int64_t bytes, hash, ts;
};

static int64_t matched_send(struct session *s, int64_t recv)
{
	sqlite3_stmt *st;
	int64_t r = 0;

	sqlite3_prepare_v2(session_db(s), "SELECT send FROM messages WHERE recv=?",
			   -1, &st, NULL);
	sqlite3_bind_int64(st, 1, recv);
	if (sqlite3_step(st) == SQLITE_ROW)
		r = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return r;
}

static void test_match(void)
{
	const char *p = CHECK_TMP("match.db");
	static const struct row rows[] = {
		/* tcp, dir 0: sends at 0 (100 bytes), 100 (50), 150 (10) */
		{ 1, 10, SK_SEND, "tcp:a>b", 0, 0, 100, 0, 1 },
		{ 2, 10, SK_SEND, "tcp:a>b", 0, 100, 50, 0, 2 },
		{ 3, 10, SK_SEND, "tcp:a>b", 0, 150, 10, 0, 3 },
		{ 4, 20, SK_RECV, "tcp:a>b", 0, 0, 60, 0, 4 },   /* -> 1 */
		{ 5, 20, SK_RECV, "tcp:a>b", 0, 60, 60, 0, 5 },  /* spans 1,2 -> 1 */
		{ 6, 20, SK_RECV, "tcp:a>b", 0, 120, 40, 0, 6 }, /* -> 2 */
		{ 7, 20, SK_RECV, "tcp:a>b", 0, 160, 5, 0, 7 },  /* none */
		/* the other direction has no sends: none */
		{ 8, 10, SK_RECV, "tcp:a>b", 1, 0, 10, 0, 8 },
		/* udp: two identical datagrams and one other, in order */
		{ 9, 10, SK_SEND, "udp:a>b", 0, -1, 8, 77, 10 },
		{ 10, 10, SK_SEND, "udp:a>b", 0, -1, 8, 55, 11 },
		{ 11, 10, SK_SEND, "udp:a>b", 0, -1, 8, 77, 12 },
		{ 12, 20, SK_RECV, "udp:a>b", 0, -1, 8, 77, 13 }, /* -> 9 */
		{ 13, 20, SK_RECV, "udp:a>b", 0, -1, 8, 77, 15 }, /* -> 11 */
		{ 14, 20, SK_RECV, "udp:a>b", 0, -1, 8, 55, 14 }, /* -> 10 */
		{ 15, 20, SK_RECV, "udp:a>b", 0, -1, 9, 55, 16 }, /* none */
		{ 16, 20, SK_RECV, NULL, 0, 0, 8, 0, 17 },        /* none */
	};
	static const int64_t want[][2] = {
		{ 4, 1 }, { 5, 1 }, { 6, 2 }, { 7, 0 }, { 8, 0 },
		{ 12, 9 }, { 13, 11 }, { 14, 10 }, { 15, 0 }, { 16, 0 },
	};
	struct match_stats ms;
	struct session *s = NULL;
	char *cause = NULL;
	sqlite3_stmt *st;
	size_t i;
	int bad = 0, err;

	unlink(p);
	if (session_open(p, SESSION_CREATE, &s, &cause)) {
		printf("FAIL match/session: %s\n", cause);
		failures++;
		return;
	}
	sqlite3_prepare_v2(session_db(s),
			   "INSERT INTO comm(event,pid,tid,ts_ns,kind,fd,bytes,"
			   "chan,dir,peer,offset,hash) VALUES(?,?,?,?,?,3,?,?,?,"
			   "'x',?,?)",
			   -1, &st, NULL);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		sqlite3_bind_int64(st, 1, r->event);
		sqlite3_bind_int64(st, 2, r->pid);
		sqlite3_bind_int64(st, 3, r->pid);
		sqlite3_bind_int64(st, 4, r->ts);
		sqlite3_bind_int(st, 5, r->kind);
		sqlite3_bind_int64(st, 6, r->bytes);
		if (r->chan)
			sqlite3_bind_text(st, 7, r->chan, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 7);
		sqlite3_bind_int(st, 8, r->dir);
		if (r->off >= 0) {
			sqlite3_bind_int64(st, 9, r->off);
			sqlite3_bind_null(st, 10);
		} else {
			sqlite3_bind_null(st, 9);
			sqlite3_bind_int64(st, 10, r->hash);
		}
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	err = match_session(s, &ms, &cause);
	CHECK("match/runs", !err && ms.sends == 6 && ms.recvs == 9 &&
	      ms.matched == 6, "err %d sends %llu recvs %llu matched %llu",
	      err, (unsigned long long)ms.sends, (unsigned long long)ms.recvs,
	      (unsigned long long)ms.matched);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int64_t got = matched_send(s, want[i][0]);

		if (got != want[i][1]) {
			printf("  recv %lld: send %lld, want %lld\n",
			       (long long)want[i][0], (long long)got,
			       (long long)want[i][1]);
			bad++;
		}
	}
	CHECK("match/pairs", !bad, "%d wrong", bad);
	/* again: the same pairs, not twice as many */
	match_session(s, &ms, &cause);
	sqlite3_prepare_v2(session_db(s), "SELECT count(*) FROM messages", -1,
			   &st, NULL);
	sqlite3_step(st);
	CHECK("match/idempotent", sqlite3_column_int(st, 0) == 6, "%d rows",
	      sqlite3_column_int(st, 0));
	sqlite3_finalize(st);
	session_close(s);
	unlink(p);
}

/* A client (pid 10, inode 42) that wrote before its server (pid 20,
 * inode 17) accepted; pid 30, on another host, has an inode 42 too. */
static void test_unix_pending(void)
{
	const char *p = CHECK_TMP("match-unix.db");
	static const struct {
		int64_t event, pid;
		int kind;
		const char *chan, *peer;
		int dir;
		int64_t bytes;
	} rows[] = {
		{ 1, 10, SK_SEND, "unix:42-?", "unix:?", 0, 100 },
		{ 2, 10, SK_RECV, "unix:42-?", "unix:?", 1, 20 },
		{ 3, 20, SK_RECV, "unix:17-42", "unix:42", 1, 100 },
		{ 4, 20, SK_SEND, "unix:17-42", "unix:42", 0, 20 },
		{ 5, 30, SK_SEND, "unix:42-?", "unix:?", 0, 100 },
	};
	struct session *s = NULL;
	char *cause = NULL, got[200] = "";
	sqlite3_stmt *st;
	size_t i;
	int err;

	unlink(p);
	if (session_open(p, SESSION_CREATE, &s, &cause)) {
		printf("FAIL match/unix-pending: %s\n", cause);
		failures++;
		return;
	}
	session_exec(s, "INSERT INTO processes(pid, host) VALUES(10, 'a'),"
			" (20, 'a'), (30, 'b')", &cause);
	sqlite3_prepare_v2(session_db(s),
			   "INSERT INTO comm(event,pid,tid,ts_ns,kind,fd,bytes,"
			   "chan,dir,peer,offset) VALUES(?,?,?,?,?,3,?,?,?,?,0)",
			   -1, &st, NULL);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sqlite3_bind_int64(st, 1, rows[i].event);
		sqlite3_bind_int64(st, 2, rows[i].pid);
		sqlite3_bind_int64(st, 3, rows[i].pid);
		sqlite3_bind_int64(st, 4, rows[i].event);
		sqlite3_bind_int(st, 5, rows[i].kind);
		sqlite3_bind_int64(st, 6, rows[i].bytes);
		sqlite3_bind_text(st, 7, rows[i].chan, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 8, rows[i].dir);
		sqlite3_bind_text(st, 9, rows[i].peer, -1, SQLITE_STATIC);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	err = match_session(s, NULL, &cause);
	sqlite3_prepare_v2(session_db(s),
			   "SELECT group_concat(event || ' ' || chan || ' ' ||"
			   " dir || ' ' || peer, ', ') FROM"
			   " (SELECT * FROM comm ORDER BY event)",
			   -1, &st, NULL);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(got, sizeof(got), "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	CHECK("match/unix-pending",
	      !err && !strcmp(got, "1 unix:17-42 1 unix:17, "
				   "2 unix:17-42 0 unix:17, "
				   "3 unix:17-42 1 unix:42, "
				   "4 unix:17-42 0 unix:42, "
				   "5 unix:42-? 0 unix:?") &&
		      matched_send(s, 3) == 1 && matched_send(s, 2) == 4,
	      "err %d: %s; recv 3 <- %lld, recv 2 <- %lld", err, got,
	      (long long)matched_send(s, 3), (long long)matched_send(s, 2));
	session_close(s);
	unlink(p);
}

int main(void)
{
	CHECKS_EXPECT(11);
	test_chan();
	test_match();
	test_unix_pending();
	return failures ? 1 : 0;
}
