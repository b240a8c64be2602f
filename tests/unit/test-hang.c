/*
 * tests/unit/test-hang.c - analysis/hang.c on hand-built traces, answers
 * computed by hand (ms = 1e6 ns; precision 10 ms; the session ends at
 * the latest event):
 *   chain/unread     startd 812 wrote 200 bytes on unix:1-2, logd 808 read
 *                    100 and entered pause() at 4 ms; startd entered
 *                    write at 3 ms and the session ends at 12 s: one chain
 *                    startd -> logd, 100 bytes unread since the send at
 *                    2 ms, startd blocked 12.0 s, the head in pause();
 *                    the flow event startd's write (it stopped first)
 *   chain/text       the sentence, word for word
 *   chain/stopped    both threads stopped, by their last event: 812, 808
 *   chain/reply      client 100 asked backend 200 on tcp (answered once
 *                    before in 0.4 us), backend asked redis 300 (answered
 *                    once), redis answered again and backend never read
 *                    it: two chains to the head backend (in read()), the
 *                    client's first (its wait began at 20 ms, redis's 10
 *                    bytes at 22 ms), the flow event the backend's read
 *                    (the member that stopped);
 *                    the text names the wait and the head's call
 *   chain/new-conn   the same, but the client's second request goes on a
 *                    new connection it opened (chan 2; the engine knows
 *                    the client), which the backend read and never
 *                    answered on, and a third request's 50 bytes on
 *                    chan 0 at 30 ms stay unread: the client waits for a
 *                    reply since 20 ms, its chain first (three-tier fcr6:
 *                    no reply wait on a channel never answered on, and
 *                    redis's unread reply came first); with the opener
 *                    not known, the chain through the client is the
 *                    unread bytes at 30 ms, after redis's
 *   chain/inflight   the same with the session ending 2.1 ms after the
 *                    request (within the precision): no chain
 *   chain/killed     the backend crashed (signal 11) on the client's
 *                    second request: the head, killed; the flow event
 *                    its last (the signal)
 *   chain/closed     the backend answered 1.5 s late, nginx had closed:
 *                    80 bytes never read by a running nginx, the backend
 *                    not stuck: no chain
 *   alone/unmatched  a process stopped 5 s in write on pipe:9, which no
 *                    traced process reads: a chain of one, named
 *   alone/idle       a process stopped in read with nobody waiting: in
 *                    the stopped list, in no chain
 *   cycle            A writes to B, B to C, C to A, nobody reads the last
 *                    bytes, B stopped first: one chain, a cycle of three,
 *                    each named once, B its head (last)
 *   nomsg            no messages: a process in write 3 s (its writes that
 *                    returned took 1 ms) is a chain of one; one in write
 *                    1.5 ms at the end (under 2 x 1 ms) is not
 *   empty            an empty trace: no chain, nothing stopped
 *   sendcall         write, __GI___libc_write, sendmsg yes; read, poll no
 *   switched-off     the end of an attach switched redis off at 21 ms, the
 *                    backend at 40, nginx at 45, the session ends at 600
 *                    ms: the backend's request at 21.5 ms, unread by
 *                    redis, is no wait, and nobody stopped (each judged
 *                    to its own recording's end: three-tier's slow run
 *                    ranked such a "hang" first)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hang.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

#define MS 1000000LL
#define PREC (10 * MS)

struct hb {
	struct trace *t;
	struct hang_comm c[64];
	size_t nc;
	int64_t cid[64];
	int64_t coff[64];
	uint32_t cch[64];
	int8_t opened[64]; /* 1: its process opened the channel (known) */
};

static void hb_proc(struct trace *t, int64_t pid, const char *exe)
{
	struct trace_process p = { 0 };

	p.pid = pid;
	p.exe = trace_intern(t, exe);
	if (trace_process_add(t, &p))
		abort();
}

/* a send or recv with its channel and offset (after trace_finish, the
 * comm array is resolved by hb_done) */
static void hb_comm(struct hb *b, int64_t id, int64_t ts, int kind,
		    int64_t bytes, uint32_t chan, int64_t off)
{
	tb_comm(b->t, id, ts, kind, bytes);
	b->cid[b->nc] = id;
	b->cch[b->nc] = chan;
	b->coff[b->nc++] = off;
}

static struct hang *hb_done(struct hb *b, struct hang_input *in,
			    const char *const *chan, size_t nchan)
{
	struct hang *h;
	size_t i;

	if (trace_finish(b->t))
		abort();
	for (i = 0; i < b->nc; i++) {
		b->c[i].ev = tb_find(b->t, b->cid[i]);
		b->c[i].chan = b->cch[i];
		b->c[i].offset = b->coff[i];
		/* the engine's guess: none here, unless the test says */
		b->c[i].client = b->opened[i] ? 1 : -1;
	}
	memset(in, 0, sizeof(*in));
	in->t = b->t;
	in->comm = b->c;
	in->ncomm = b->nc;
	in->chan = chan;
	in->nchan = nchan;
	in->precision_ns = PREC;
	if (hang_find(in, &h))
		abort();
	return h;
}

static void test_unread(void)
{
	static const char *const chan[] = { "unix:1-2" };
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;
	char text[512];
	const struct hang_chain *c;

	hb_proc(b.t, 812, "/usr/sbin/startd");
	hb_proc(b.t, 808, "/usr/sbin/logd");
	tb_thread(b.t, 808, 808);
	tb_ev(b.t, 20, 0, TK_ENTRY, 0, "main", "l.c:1");
	hb_comm(&b, 21, 1500000, TK_RECV, 100, 0, 0);
	tb_ev(b.t, 22, 4 * MS, TK_ENTRY, 1, "pause", "l.c:2");
	tb_thread(b.t, 812, 812);
	tb_ev(b.t, 10, 0, TK_ENTRY, 0, "main", "s.c:1");
	hb_comm(&b, 11, 1 * MS, TK_SEND, 100, 0, 0);
	hb_comm(&b, 12, 2 * MS, TK_SEND, 100, 0, 100);
	tb_ev(b.t, 13, 3 * MS, TK_ENTRY, 1, "write", "s.c:2");
	tb_thread(b.t, 900, 900); /* the rest of the system, running */
	tb_ev(b.t, 30, 0, TK_ENTRY, 0, "main", "o.c:1");
	tb_ev(b.t, 31, 12000 * MS, TK_EXIT, 0, "main", NULL);
	tb_msg(b.t, 11, 21);
	h = hb_done(&b, &in, chan, 1);
	c = h->nchain ? &h->chain[0] : NULL;
	CHECK("chain/unread",
	      h->nchain == 1 && c->n == 2 && !c->cycle && c->head_pid == 808 &&
		      c->m[0].pid == 812 && c->m[0].wait == HANG_UNREAD &&
		      c->m[0].blocked_here && c->m[0].unread == 100 &&
		      c->m[0].wait_since_ns == 2 * MS && c->m[0].chan == 0 &&
		      c->m[1].wait == HANG_NONE && c->m[1].state == HANG_STOPPED &&
		      c->m[1].state_ns == 4 * MS &&
		      c->flow_ev == tb_find(b.t, 13),
	      "%zu chains, first of %zu, head %lld", h->nchain, c ? c->n : 0,
	      c ? (long long)c->head_pid : -1LL);
	hang_chain_text(&in, h, &h->chain[0], text, sizeof(text));
	CHECK("chain/text",
	      !strcmp(text, "startd 812 blocked 12.0 s in write to unix:1-2, "
			    "read by logd 808, which is in pause() since "
			    "+0.004 s"),
	      "'%s'", text);
	CHECK("chain/stopped",
	      h->nblocked == 2 && h->blocked[0].pid == 812 &&
		      h->blocked[0].last_ns == 3 * MS &&
		      !strcmp(trace_str(b.t, h->blocked[0].func), "write") &&
		      h->blocked[1].pid == 808,
	      "%zu stopped", h->nblocked);
	hang_free(h);
	trace_free(b.t);
}

/* client 100 -> backend 200 (tcp chan 0), backend -> redis 300 (chan 1);
 * newconn: request 2 on chan 2, which the client opened (opened: the
 * engine knows it), and a request 3 on chan 0 never read */
static struct hang *reply_trace_on(struct hb *b, struct hang_input *in,
				   int64_t end, int newconn, int opened)
{
	static const char *const chan[] = { "tcp:a>b", "tcp:b>c", "tcp:a>b2" };
	uint32_t c2 = newconn ? 2 : 0;
	int64_t o2 = newconn ? 0 : 50;

	b->t = trace_new();
	b->nc = 0;
	memset(b->opened, 0, sizeof(b->opened));
	hb_proc(b->t, 100, "/usr/sbin/nginx");
	hb_proc(b->t, 200, "/opt/backend");
	hb_proc(b->t, 300, "/usr/bin/redis-server");
	tb_thread(b->t, 100, 100);
	tb_ev(b->t, 100, 0, TK_ENTRY, 0, "main", "n.c:1");
	hb_comm(b, 101, 10 * MS, TK_SEND, 50, 0, 0);	 /* request 1 */
	hb_comm(b, 102, 11 * MS, TK_RECV, 80, 0, 0);	 /* answer 1 */
	hb_comm(b, 103, 20 * MS, TK_SEND, 50, c2, o2);	 /* request 2 */
	b->opened[b->nc - 1] = newconn && opened;
	if (newconn)
		hb_comm(b, 106, 30 * MS, TK_SEND, 50, 0, 50); /* request 3 */
	tb_ev(b->t, 104, end, TK_ENTRY, 1, "epoll_wait", "n.c:2");
	tb_thread(b->t, 200, 200);
	tb_ev(b->t, 200, 0, TK_ENTRY, 0, "main", "b.c:1");
	hb_comm(b, 201, 10 * MS + 100, TK_RECV, 50, 0, 0);
	hb_comm(b, 202, 10 * MS + 200, TK_SEND, 10, 1, 0);  /* ask redis */
	hb_comm(b, 203, 10 * MS + 300, TK_RECV, 10, 1, 0);
	hb_comm(b, 204, 10 * MS + 400, TK_SEND, 80, 0, 0);  /* answer 1 */
	hb_comm(b, 205, 20 * MS + 100, TK_RECV, 50, c2, o2);
	hb_comm(b, 206, 21 * MS, TK_SEND, 10, 1, 10);	 /* ask again */
	tb_ev(b->t, 207, 21 * MS + 100, TK_ENTRY, 1, "read", "b.c:2");
	tb_thread(b->t, 300, 300);
	tb_ev(b->t, 300, 0, TK_ENTRY, 0, "main", "r.c:1");
	hb_comm(b, 301, 10 * MS + 250, TK_RECV, 10, 1, 0);
	hb_comm(b, 302, 10 * MS + 260, TK_SEND, 10, 1, 0);
	hb_comm(b, 303, 21 * MS + 500, TK_RECV, 10, 1, 10);
	hb_comm(b, 304, 22 * MS, TK_SEND, 10, 1, 10);  /* never read */
	tb_ev(b->t, 305, 22 * MS + 100, TK_ENTRY, 1, "epoll_wait", "r.c:2");
	tb_msg(b->t, 101, 201);
	tb_msg(b->t, 202, 301);
	tb_msg(b->t, 302, 203);
	tb_msg(b->t, 204, 102);
	tb_msg(b->t, 103, 205);
	tb_msg(b->t, 206, 303);
	return hb_done(b, in, chan, 3);
}

static struct hang *reply_trace(struct hb *b, struct hang_input *in,
				int64_t end)
{
	return reply_trace_on(b, in, end, 0, 0);
}

static void test_reply(void)
{
	struct hb b;
	struct hang_input in;
	struct hang *h = reply_trace(&b, &in, 5000 * MS);
	const struct hang_chain *c = h->nchain == 2 ? h->chain : NULL;
	char text[512];

	hang_chain_text(&in, h, &h->chain[0], text, sizeof(text));
	CHECK("chain/reply",
	      c && c[0].n == 2 && c[0].m[0].pid == 100 &&
		      c[0].m[0].wait == HANG_REPLY && !c[0].m[0].blocked_here &&
		      c[0].m[0].wait_since_ns == 20 * MS &&
		      c[0].head_pid == 200 && c[0].m[1].state == HANG_STOPPED &&
		      c[0].flow_ev == tb_find(b.t, 207) && c[1].n == 2 &&
		      c[1].m[0].pid == 300 && c[1].m[0].wait == HANG_UNREAD &&
		      c[1].m[0].unread == 10 && c[1].head_pid == 200 &&
		      c[1].since_ns == 22 * MS &&
		      !strcmp(text, "nginx 100 waits 5.0 s for a reply on "
				    "tcp:a>b from backend 200, which is in "
				    "read() since +0.021 s"),
	      "%zu chains: %s", h->nchain, text);
	hang_free(h);
	trace_free(b.t);
	h = reply_trace(&b, &in, 21 * MS + 500000);
	CHECK("chain/inflight", h->nchain == 0 && h->nedges == 0,
	      "%zu chains, %zu edges", h->nchain, h->nedges);
	hang_free(h);
	trace_free(b.t);

	memset(&b, 0, sizeof(b));
	h = reply_trace_on(&b, &in, 5000 * MS, 1, 1);
	c = h->nchain == 2 ? h->chain : NULL;
	{
		struct hb b2;
		struct hang *h2;
		const struct hang_chain *c2;

		memset(&b2, 0, sizeof(b2));
		h2 = reply_trace_on(&b2, &in, 5000 * MS, 1, 0);
		c2 = h2->nchain == 2 ? h2->chain : NULL;
		CHECK("chain/new-conn",
		      c && c[0].n == 2 && c[0].m[0].pid == 100 &&
			      c[0].m[0].wait == HANG_REPLY &&
			      c[0].m[0].chan == 2 &&
			      c[0].m[0].wait_since_ns == 20 * MS &&
			      c[0].head_pid == 200 && c[1].m[0].pid == 300 &&
			      c2 && c2[0].m[0].pid == 300 &&
			      c2[1].m[0].pid == 100 &&
			      c2[1].m[0].wait == HANG_UNREAD &&
			      c2[1].m[0].wait_since_ns == 30 * MS,
		      "opener known: %zu chains, first %lld; not known: %zu "
		      "chains, first %lld",
		      h->nchain, c ? (long long)c[0].m[0].pid : -1LL,
		      h2->nchain, c2 ? (long long)c2[0].m[0].pid : -1LL);
		hang_free(h2);
		trace_free(b2.t);
	}
	hang_free(h);
	trace_free(b.t);
}

/* the client's second request reaches a backend that crashes on it */
static void test_killed(void)
{
	static const char *const chan[] = { "tcp:a>b" };
	struct hb b = { .t = trace_new() };
	struct trace_process p = { 0 };
	struct hang_input in;
	struct hang *h;
	char text[512] = "-";

	hb_proc(b.t, 100, "/usr/sbin/nginx");
	p.pid = 200;
	p.exe = trace_intern(b.t, "/opt/backend");
	p.signal = 11;
	if (trace_process_add(b.t, &p))
		abort();
	tb_thread(b.t, 100, 100);
	tb_ev(b.t, 100, 0, TK_ENTRY, 0, "main", "n.c:1");
	hb_comm(&b, 101, 10 * MS, TK_SEND, 50, 0, 0);
	hb_comm(&b, 102, 11 * MS, TK_RECV, 80, 0, 0);
	hb_comm(&b, 103, 20 * MS, TK_SEND, 50, 0, 50);
	tb_ev(b.t, 104, 3000 * MS, TK_ENTRY, 1, "epoll_wait", "n.c:2");
	tb_thread(b.t, 200, 200);
	tb_ev(b.t, 200, 0, TK_ENTRY, 0, "main", "b.c:1");
	hb_comm(&b, 201, 10 * MS + 100, TK_RECV, 50, 0, 0);
	hb_comm(&b, 202, 10 * MS + 400, TK_SEND, 80, 0, 0);
	hb_comm(&b, 203, 20 * MS + 100, TK_RECV, 50, 0, 50);
	tb_ev(b.t, 204, 21 * MS, TK_ENTRY, 1, "store", "b.c:2");
	tb_full(b.t, 205, 21 * MS + 10, TK_SIGNAL, 1, NULL, NULL, 0, 11, 0, 0);
	tb_msg(b.t, 101, 201);
	tb_msg(b.t, 202, 102);
	tb_msg(b.t, 103, 203);
	h = hb_done(&b, &in, chan, 1);
	if (h->nchain)
		hang_chain_text(&in, h, &h->chain[0], text, sizeof(text));
	CHECK("chain/killed",
	      h->nchain == 1 && h->chain[0].head_pid == 200 &&
		      h->chain[0].m[1].state == HANG_KILLED &&
		      h->chain[0].m[1].status == 11 &&
		      h->chain[0].flow_ev == tb_find(b.t, 205) &&
		      !strcmp(text, "nginx 100 waits 3.0 s for a reply on tcp:a>b "
				    "from backend 200, which was killed by "
				    "signal 11 at +0.021 s"),
	      "%zu chains: %s", h->nchain, text);
	hang_free(h);
	trace_free(b.t);
}

/* the backend answered after nginx had given up and closed: bytes a
 * running reader never reads, the writer not stuck -- no hang */
static void test_closed(void)
{
	static const char *const chan[] = { "tcp:a>b" };
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;

	hb_proc(b.t, 100, "/usr/sbin/nginx");
	hb_proc(b.t, 200, "/opt/backend");
	tb_thread(b.t, 100, 100);
	tb_ev(b.t, 100, 0, TK_ENTRY, 0, "main", "n.c:1");
	hb_comm(&b, 101, 10 * MS, TK_SEND, 50, 0, 0);
	tb_ev(b.t, 102, 11 * MS, TK_ENTRY, 1, "close", "n.c:3");
	tb_ev(b.t, 103, 11 * MS + 10, TK_EXIT, 1, "close", NULL);
	tb_ev(b.t, 104, 3000 * MS, TK_ENTRY, 1, "epoll_wait", "n.c:2");
	tb_thread(b.t, 200, 200);
	tb_ev(b.t, 200, 0, TK_ENTRY, 0, "main", "b.c:1");
	hb_comm(&b, 201, 10 * MS + 100, TK_RECV, 50, 0, 0);
	hb_comm(&b, 202, 1500 * MS, TK_SEND, 80, 0, 0);
	tb_ev(b.t, 203, 3000 * MS, TK_ENTRY, 1, "poll", "b.c:2");
	tb_msg(b.t, 101, 201);
	h = hb_done(&b, &in, chan, 1);
	CHECK("chain/closed", h->nchain == 0 && h->nedges == 0,
	      "%zu chains, %zu edges", h->nchain, h->nedges);
	hang_free(h);
	trace_free(b.t);
}

static void test_alone(void)
{
	static const char *const chan[] = { "pipe:9" };
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;
	char text[512];

	hb_proc(b.t, 500, "/bin/producer");
	hb_proc(b.t, 600, "/bin/idle");
	tb_thread(b.t, 500, 500);
	tb_ev(b.t, 1, 0, TK_ENTRY, 0, "main", "p.c:1");
	hb_comm(&b, 2, 1 * MS, TK_SEND, 4096, 0, 0);
	tb_ev(b.t, 3, 2 * MS, TK_ENTRY, 1, "write", "p.c:2");
	tb_thread(b.t, 600, 600);
	tb_ev(b.t, 10, 0, TK_ENTRY, 0, "main", "i.c:1");
	tb_ev(b.t, 11, 1 * MS, TK_ENTRY, 1, "read", "i.c:2");
	tb_thread(b.t, 700, 700);
	tb_ev(b.t, 20, 0, TK_ENTRY, 0, "main", "o.c:1");
	tb_ev(b.t, 21, 5002 * MS, TK_EXIT, 0, "main", NULL);
	h = hb_done(&b, &in, chan, 1);
	if (h->nchain)
		hang_chain_text(&in, h, &h->chain[0], text, sizeof(text));
	else
		strcpy(text, "-");
	CHECK("alone/unmatched",
	      h->nchain == 1 && h->chain[0].n == 1 &&
		      h->chain[0].head_pid == 500 &&
		      h->chain[0].m[0].wait == HANG_BLOCKED &&
		      h->chain[0].m[0].chan == 0 &&
		      h->chain[0].flow_ev == tb_find(b.t, 3) &&
		      !strcmp(text, "producer 500 blocked 5.0 s in write (its "
				    "last write: pipe:9; no traced reader)"),
	      "%zu chains: %s", h->nchain, text);
	CHECK("alone/idle",
	      h->nblocked == 2 && h->blocked[0].pid == 600 &&
		      h->blocked[1].pid == 500,
	      "%zu stopped", h->nblocked);
	hang_free(h);
	trace_free(b.t);
}

/* A -> B -> C -> A, each blocked in write with bytes the next never read */
static void test_cycle(void)
{
	static const char *const chan[] = { "unix:1-2", "unix:3-4", "unix:5-6" };
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;
	const struct hang_chain *c;
	char text[600];
	int64_t pid;
	int seen[4] = { 0 };
	size_t i;

	hb_proc(b.t, 1, "/bin/a");
	hb_proc(b.t, 2, "/bin/b");
	hb_proc(b.t, 3, "/bin/c");
	for (pid = 1; pid <= 3; pid++) {
		uint32_t out = (uint32_t)(pid - 1), in_ch = (uint32_t)((pid + 1) % 3);
		int64_t stop = pid == 2 ? 3 * MS : 5 * MS; /* B first */

		tb_thread(b.t, pid, pid);
		tb_ev(b.t, pid * 100, 0, TK_ENTRY, 0, "main", "x.c:1");
		hb_comm(&b, pid * 100 + 1, 1 * MS, TK_RECV, 10, in_ch, 0);
		hb_comm(&b, pid * 100 + 2, 2 * MS, TK_SEND, 10, out, 0);
		hb_comm(&b, pid * 100 + 3, stop - MS / 2, TK_SEND, 10, out, 10);
		tb_ev(b.t, pid * 100 + 4, stop, TK_ENTRY, 1, "write", "x.c:2");
	}
	tb_thread(b.t, 9, 9);
	tb_ev(b.t, 900, 0, TK_ENTRY, 0, "main", "o.c:1");
	tb_ev(b.t, 901, 2000 * MS, TK_EXIT, 0, "main", NULL);
	/* the first 10 bytes of each were read (by the next one's recv) */
	tb_msg(b.t, 102, 201);
	tb_msg(b.t, 202, 301);
	tb_msg(b.t, 302, 101);
	h = hb_done(&b, &in, chan, 3);
	c = h->nchain == 1 ? &h->chain[0] : NULL;
	for (i = 0; c && i < c->n; i++)
		if (c->m[i].pid >= 1 && c->m[i].pid <= 3)
			seen[c->m[i].pid]++;
	if (c)
		hang_chain_text(&in, h, c, text, sizeof(text));
	CHECK("cycle",
	      c && c->cycle && c->n == 3 && seen[1] == 1 && seen[2] == 1 &&
		      seen[3] == 1 && c->head_pid == 2 && c->m[2].pid == 2 &&
		      c->m[0].pid == 3 && c->m[2].wait == HANG_UNREAD &&
		      strstr(text, "read by c 3 again (a cycle: deadlock)"),
	      "%zu chains: %s", h->nchain, c ? text : "-");
	hang_free(h);
	trace_free(b.t);
}

static void test_nomsg(void)
{
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;
	char text[300] = "-";

	hb_proc(b.t, 40, "/bin/writer");
	hb_proc(b.t, 41, "/bin/quick");
	tb_thread(b.t, 40, 40);
	tb_ev(b.t, 1, 0, TK_ENTRY, 0, "main", "w.c:1");
	tb_ev(b.t, 2, 1 * MS, TK_ENTRY, 1, "write", "w.c:2");
	tb_ev(b.t, 3, 2 * MS, TK_EXIT, 1, "write", NULL);
	tb_ev(b.t, 4, 3 * MS, TK_ENTRY, 1, "write", "w.c:2");
	tb_thread(b.t, 41, 41); /* in write 1.5 ms at the end: not a hang */
	tb_ev(b.t, 10, 0, TK_ENTRY, 0, "main", "q.c:1");
	tb_ev(b.t, 11, 1 * MS, TK_ENTRY, 1, "write", "q.c:2");
	tb_ev(b.t, 12, 2 * MS, TK_EXIT, 1, "write", NULL);
	tb_ev(b.t, 13, 3001 * MS + 500000, TK_ENTRY, 1, "write", "q.c:2");
	tb_thread(b.t, 42, 42);
	tb_ev(b.t, 20, 0, TK_ENTRY, 0, "main", "o.c:1");
	tb_ev(b.t, 21, 3003 * MS, TK_EXIT, 0, "main", NULL);
	h = hb_done(&b, &in, NULL, 0);
	if (h->nchain)
		hang_chain_text(&in, h, &h->chain[0], text, sizeof(text));
	CHECK("nomsg",
	      h->nchain == 1 && h->nedges == 0 && h->chain[0].head_pid == 40 &&
		      !strcmp(text, "writer 40 blocked 3.0 s in write (no "
				    "channel named)"),
	      "%zu chains: %s", h->nchain, text);
	hang_free(h);
	trace_free(b.t);

	b.t = trace_new();
	b.nc = 0;
	h = hb_done(&b, &in, NULL, 0);
	CHECK("empty", h->nchain == 0 && h->nblocked == 0, "%zu chains",
	      h->nchain);
	hang_free(h);
	trace_free(b.t);
}

static void hb_proc_stop(struct trace *t, int64_t pid, const char *exe,
			 int64_t stop)
{
	struct trace_process p = { 0 };

	p.pid = pid;
	p.exe = trace_intern(t, exe);
	p.stop_ns = stop;
	if (trace_process_add(t, &p))
		abort();
}

static void test_switched_off(void)
{
	static const char *const chan[] = { "tcp:a>b", "tcp:b>c" };
	struct hb b = { .t = trace_new() };
	struct hang_input in;
	struct hang *h;

	hb_proc_stop(b.t, 100, "/usr/sbin/nginx", 45 * MS);
	hb_proc_stop(b.t, 200, "/opt/backend", 40 * MS);
	hb_proc_stop(b.t, 300, "/usr/bin/redis-server", 21 * MS);
	tb_thread(b.t, 100, 100);
	tb_ev(b.t, 100, 0, TK_ENTRY, 0, "main", "n.c:1");
	hb_comm(&b, 101, 10 * MS, TK_SEND, 50, 0, 0);
	hb_comm(&b, 102, 11 * MS, TK_RECV, 80, 0, 0);
	hb_comm(&b, 103, 20 * MS, TK_SEND, 50, 0, 50);
	tb_ev(b.t, 104, 20 * MS + 100000, TK_ENTRY, 1, "epoll_wait", "n.c:2");
	tb_thread(b.t, 200, 200);
	tb_ev(b.t, 200, 0, TK_ENTRY, 0, "main", "b.c:1");
	hb_comm(&b, 201, 10 * MS + 100, TK_RECV, 50, 0, 0);
	hb_comm(&b, 202, 10 * MS + 200, TK_SEND, 10, 1, 0);
	hb_comm(&b, 203, 10 * MS + 300, TK_RECV, 10, 1, 0);
	hb_comm(&b, 204, 10 * MS + 400, TK_SEND, 80, 0, 0);
	hb_comm(&b, 205, 20 * MS + 100000, TK_RECV, 50, 0, 50);
	hb_comm(&b, 206, 21 * MS + 500000, TK_SEND, 10, 1, 10);
	tb_ev(b.t, 207, 21 * MS + 600000, TK_ENTRY, 1, "read", "b.c:2");
	tb_thread(b.t, 300, 300);
	tb_ev(b.t, 300, 0, TK_ENTRY, 0, "main", "r.c:1");
	hb_comm(&b, 301, 10 * MS + 250, TK_RECV, 10, 1, 0);
	hb_comm(&b, 302, 10 * MS + 260, TK_SEND, 10, 1, 0);
	tb_ev(b.t, 303, 10 * MS + 300000, TK_ENTRY, 1, "epoll_wait", "r.c:2");
	tb_thread(b.t, 900, 900); /* the rest of the system, running */
	tb_ev(b.t, 900, 0, TK_ENTRY, 0, "main", "o.c:1");
	tb_ev(b.t, 901, 600 * MS, TK_EXIT, 0, "main", NULL);
	tb_msg(b.t, 101, 201);
	tb_msg(b.t, 202, 301);
	tb_msg(b.t, 302, 203);
	tb_msg(b.t, 204, 102);
	tb_msg(b.t, 103, 205);
	h = hb_done(&b, &in, chan, 2);
	CHECK("switched-off", h->nchain == 0 && h->nedges == 0 && h->nblocked == 0,
	      "%zu chains, %zu edges, %zu stopped (first pid %lld)", h->nchain,
	      h->nedges, h->nblocked,
	      h->nblocked ? (long long)h->blocked[0].pid : -1LL);
	hang_free(h);
	trace_free(b.t);
}

int main(void)
{
	CHECKS_EXPECT(15);
	test_unread();
	test_reply();
	test_killed();
	test_closed();
	test_alone();
	test_cycle();
	test_nomsg();
	test_switched_off();
	CHECK("sendcall",
	      hang_is_send_call("write") &&
		      hang_is_send_call("__GI___libc_write") &&
		      hang_is_send_call("sendmsg") && !hang_is_send_call("read") &&
		      !hang_is_send_call("poll") && !hang_is_send_call(NULL),
	      "wrong");
	return failures ? 1 : 0;
}
