/*
 * tests/unit/test-flows-start.c - the automatic start events of flows
 * (analysis/flows-start.c, no --start) on hand-built traces, each flow's
 * events computed by hand:
 *   client      a submitter sends two jobs, each from a call of queue_job,
 *               and an end-of-cluster marker over one connection it opened
 *               to a traced server that reads each in its own recv and
 *               answers the jobs: three flows, starting at the two
 *               queue_job entries and at the marker's write; each job's
 *               notice back is in its flow; the rule is "client"
 *   server      a server under attach, its client untraced, keep-alive:
 *               a request, its response, a request read in two recvs, its
 *               response, EOF: two flows, the second recv of the second
 *               request stays in it; the rule is "server"
 *   both        a server (untraced client) that asks a traced back end on
 *               a connection it opened: the server rule wins, each flow
 *               spans the back end's recv and reply
 *   server/traced-client  the server's client traced too (propagation
 *               from its reply), each request read in two recvs (header,
 *               body) of one send: a flow per request, the body's recv in
 *               its header's flow (the rest of a message switches no
 *               flow), a start never taken into the flow of the client's
 *               previous request
 *   server/reply-pipe  a server that hands each request (from a traced
 *               submitter it forked) to a worker over one pipe and reads
 *               the answer on another: the answers' recvs are no requests
 *               of their own, each stays in its request's flow
 *   untraced-receiver  a client whose server is not traced: a message is
 *               the first send or the first after a reply (two sends of
 *               one request are one)
 *   skip        a client that reads its standard input (a pipe from the
 *               operator's shell) first: with the pipe skipped (meta
 *               stdio_chans) it is a client, without it a server
 *   mid         recordings that begin mid-conversation (attach under
 *               load), roles by the listening-port rule (chan-role.h):
 *               a proxy whose first event on a client's connection is
 *               the answer to a request in flight and whose first on its
 *               keep-alive back-end connection is a reply's read is the
 *               server of the first and the client of the second: a flow
 *               per request read, none at the back end's replies; a
 *               client whose first event is a reply's read stays a
 *               client (a flow per message it sends)
 *   roles       the listening side (chan_role_servers): the submitter's
 *               port reused by another process's connection to a third
 *               server (two channels name it, one the schedd's listening
 *               address) stays on the clients' side; a proxy's two
 *               servers; a single connection and a triangle of UDP peers
 *               (no two sides) fall back to the counts
 *   kinds       each flow's start function (flows_kinds)
 *   no-messages a trace without communication, and one whose first
 *               process neither receives nor sends a byte: no automatic
 *               start, one flow per process, rule "none"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/chan-role.h"
#include "analysis/flows-start.h"
#include "analysis/flows.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

/* The ids of flow fl, sorted, comma-separated, into buf. */
static const char *ids(const struct trace *t, const struct flows *f,
		      uint32_t fl, char *buf, size_t n)
{
	return tb_ids(t, f->of, fl, buf, n);
}

/* a send or recv on channel chan */
static void comm(struct trace *t, int64_t id, int64_t ts, int kind,
		 int64_t bytes, const char *chan)
{
	tb_full(t, id, ts, kind, 0, NULL, NULL, bytes, trace_intern(t, chan),
		0, 0);
}

/* a send or recv on channel chan whose peer is the channel's end pe */
static void comm_peer(struct trace *t, int64_t id, int64_t ts, int kind,
		      int64_t bytes, const char *chan, int pe)
{
	struct trace_event e;

	memset(&e, 0, sizeof(e));
	e.id = id;
	e.ts_ns = ts;
	e.kind = (uint8_t)kind;
	e.bytes = bytes;
	e.arg = trace_intern(t, chan);
	e.peer_end = (uint8_t)pe;
	if (trace_add(t, &e))
		abort();
}

static struct trace *client_trace(void)
{
	static const char *C = "tcp:127.0.0.1:40000>127.0.0.1:5000";
	struct trace *t = trace_new();

	tb_thread(t, 1, 1); /* the submitter: first traced */
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 1, TK_ENTRY, 1, "read_submit_file", "s.c:1");
	tb_ev(t, 3, 2, TK_ENTRY, 2, "queue_job", "s.c:2");
	tb_ev(t, 4, 3, TK_ENTRY, 3, "build", "s.c:3");
	tb_ev(t, 5, 4, TK_EXIT, 3, "build", NULL);
	tb_ev(t, 6, 5, TK_ENTRY, 3, "write", "s.c:4");
	comm(t, 7, 6, TK_SEND, 100, C);
	tb_ev(t, 8, 7, TK_EXIT, 3, "write", NULL);
	tb_ev(t, 9, 8, TK_EXIT, 2, "queue_job", NULL);
	tb_ev(t, 10, 9, TK_ENTRY, 2, "queue_job", "s.c:2");
	tb_ev(t, 11, 10, TK_ENTRY, 3, "build", "s.c:3");
	tb_ev(t, 12, 11, TK_EXIT, 3, "build", NULL);
	tb_ev(t, 13, 12, TK_ENTRY, 3, "write", "s.c:4");
	comm(t, 14, 13, TK_SEND, 100, C);
	tb_ev(t, 15, 14, TK_EXIT, 3, "write", NULL);
	tb_ev(t, 16, 15, TK_EXIT, 2, "queue_job", NULL);
	tb_ev(t, 17, 16, TK_ENTRY, 2, "write", "s.c:9"); /* the marker */
	comm(t, 18, 17, TK_SEND, 10, C);
	tb_ev(t, 19, 18, TK_EXIT, 2, "write", NULL);
	tb_ev(t, 20, 19, TK_EXIT, 1, "read_submit_file", NULL);
	comm(t, 21, 30, TK_RECV, 8, C); /* notice of job 0 */
	comm(t, 22, 31, TK_RECV, 8, C); /* notice of job 1 */
	tb_ev(t, 23, 32, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 2, 2); /* the scheduler */
	comm(t, 101, 7, TK_RECV, 100, C);
	tb_ev(t, 102, 8, TK_ENTRY, 0, "handle", "d.c:1");
	tb_ev(t, 103, 9, TK_EXIT, 0, "handle", NULL);
	comm(t, 104, 10, TK_SEND, 8, C);
	comm(t, 105, 14, TK_RECV, 100, C);
	tb_ev(t, 106, 15, TK_ENTRY, 0, "handle", "d.c:1");
	tb_ev(t, 107, 16, TK_EXIT, 0, "handle", NULL);
	comm(t, 108, 17, TK_SEND, 8, C);
	comm(t, 109, 18, TK_RECV, 10, C);
	tb_ev(t, 110, 19, TK_ENTRY, 0, "finish", "d.c:2");
	tb_ev(t, 111, 20, TK_EXIT, 0, "finish", NULL);
	tb_msg(t, 7, 101);
	tb_msg(t, 14, 105);
	tb_msg(t, 18, 109);
	tb_msg(t, 104, 21);
	tb_msg(t, 108, 22);
	if (trace_finish(t))
		abort();
	return t;
}

static void test_client(void)
{
	struct trace *t = client_trace();
	struct flows *f = NULL;
	uint32_t *kinds = NULL;
	char a[512], b[512], c[512];
	int ok;

	ok = !flows_build(t, NULL, &f) && f->n == 3 &&
	     f->rule == FLOWS_RULE_CLIENT && !f->per_process;
	CHECK("client/flows",
	      ok && !strcmp(ids(t, f, 0, a, sizeof(a)),
			    "3,4,5,6,7,8,9,21,101,102,103,104") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)),
			      "10,11,12,13,14,15,16,22,23,105,106,107,108") &&
		      !strcmp(ids(t, f, 2, c, sizeof(c)),
			      "17,18,19,20,109,110,111") &&
		      !strcmp(flows_rule_name(f->rule), "client"),
	      "%zu flows, rule %d: [%s] [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b, c);
	CHECK("kinds",
	      f && !flows_kinds(t, f, &kinds) && kinds &&
		      !strcmp(trace_str(t, kinds[0]), "queue_job") &&
		      kinds[1] == kinds[0] &&
		      !strcmp(trace_str(t, kinds[2]), "write"),
	      "kinds %s %s", kinds ? trace_str(t, kinds[0]) : "-",
	      kinds ? trace_str(t, kinds[2]) : "-");
	free(kinds);
	flows_free(f);
	f = NULL;
	{ /* --start keeps precedence */
		struct flows_opts o = { .start_func = "handle" };

		CHECK("client/start-func-first",
		      !flows_build(t, &o, &f) && f->n == 2 &&
			      f->rule == FLOWS_RULE_FUNC,
		      "%zu flows, rule %d", f ? f->n : 0, f ? f->rule : -1);
	}
	flows_free(f);
	trace_free(t);
}

static void test_server(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "loop", NULL);
	comm(t, 2, 1, TK_RECV, 50, K);
	tb_ev(t, 3, 2, TK_ENTRY, 1, "handle", "h.c:1");
	tb_ev(t, 4, 3, TK_EXIT, 1, "handle", NULL);
	comm(t, 5, 4, TK_SEND, 200, K);
	comm(t, 13, 4, TK_RECV, -11, K); /* EAGAIN: no request yet */
	comm(t, 6, 5, TK_RECV, 40, K);
	comm(t, 7, 6, TK_RECV, 10, K); /* the same request's rest */
	tb_ev(t, 8, 7, TK_ENTRY, 1, "handle", "h.c:1");
	tb_ev(t, 9, 8, TK_EXIT, 1, "handle", NULL);
	comm(t, 10, 9, TK_SEND, 200, K);
	comm(t, 11, 10, TK_RECV, 0, K);
	tb_ev(t, 12, 11, TK_EXIT, 0, "loop", NULL);
	if (trace_finish(t))
		abort();
	CHECK("server/keep-alive",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_SERVER &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "2,3,4,5,13") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)),
			      "6,7,8,9,10,11,12"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_traced_client(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1); /* the server, first traced (attach) */
	comm(t, 1, 1, TK_RECV, 20, K);	/* header (the client untraced yet) */
	comm(t, 2, 2, TK_RECV, 80, K);	/* body */
	tb_ev(t, 3, 3, TK_ENTRY, 0, "handle", "h.c:1");
	tb_ev(t, 4, 4, TK_EXIT, 0, "handle", NULL);
	comm(t, 5, 5, TK_SEND, 50, K);
	comm(t, 6, 11, TK_RECV, 20, K); /* header, then body: one send */
	comm(t, 7, 12, TK_RECV, 80, K);
	tb_ev(t, 8, 13, TK_ENTRY, 0, "handle", "h.c:1");
	tb_ev(t, 9, 14, TK_EXIT, 0, "handle", NULL);
	comm(t, 10, 15, TK_SEND, 50, K);
	tb_thread(t, 2, 2); /* the client, traced from its first reply on */
	comm(t, 52, 6, TK_RECV, 50, K);
	tb_ev(t, 53, 7, TK_ENTRY, 0, "request", "c.c:1");
	comm(t, 54, 10, TK_SEND, 100, K);
	comm(t, 55, 16, TK_RECV, 50, K);
	tb_ev(t, 56, 17, TK_EXIT, 0, "request", NULL);
	tb_msg(t, 5, 52);
	tb_msg(t, 54, 6);
	tb_msg(t, 54, 7);
	tb_msg(t, 10, 55);
	if (trace_finish(t))
		abort();
	CHECK("server/traced-client",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_SERVER &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "1,2,3,4,5,52,53,54") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "6,7,8,9,10,55,56"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_reply_pipe(void)
{
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1); /* the server */
	tb_full(t, 11, 0, TK_FORK, 0, NULL, NULL, 0, 100, 0, 0);
	comm(t, 1, 1, TK_RECV, 10, "pipe:7"); /* request 1 */
	comm(t, 2, 2, TK_SEND, 10, "pipe:8"); /* to the worker */
	comm(t, 3, 5, TK_RECV, 10, "pipe:9"); /* its answer */
	tb_ev(t, 4, 6, TK_ENTRY, 0, "done", "f.c:1");
	tb_ev(t, 5, 7, TK_EXIT, 0, "done", NULL);
	comm(t, 6, 10, TK_RECV, 10, "pipe:7");
	comm(t, 7, 11, TK_SEND, 10, "pipe:8");
	comm(t, 8, 14, TK_RECV, 10, "pipe:9");
	tb_ev(t, 9, 15, TK_ENTRY, 0, "done", "f.c:1");
	tb_ev(t, 10, 16, TK_EXIT, 0, "done", NULL);
	tb_thread(t, 100, 100); /* the submitter (forked) */
	comm(t, 101, 0, TK_SEND, 10, "pipe:7");
	comm(t, 102, 9, TK_SEND, 10, "pipe:7");
	tb_thread(t, 200, 200); /* the worker */
	comm(t, 201, 3, TK_RECV, 10, "pipe:8");
	comm(t, 202, 4, TK_SEND, 10, "pipe:9");
	comm(t, 203, 12, TK_RECV, 10, "pipe:8");
	comm(t, 204, 13, TK_SEND, 10, "pipe:9");
	tb_msg(t, 101, 1);
	tb_msg(t, 102, 6);
	tb_msg(t, 2, 201);
	tb_msg(t, 202, 3);
	tb_msg(t, 7, 203);
	tb_msg(t, 204, 8);
	if (trace_finish(t))
		abort();
	CHECK("server/reply-pipe",
	      t->first_pid == 1 && !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_SERVER &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "1,2,3,4,5,201,202") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "6,7,8,9,10,203,204"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_both(void)
{
	static const char *K = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *B = "tcp:10.0.0.1:41000>10.0.0.2:6379";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1); /* the proxy: server of K, client of B */
	tb_ev(t, 1, 0, TK_ENTRY, 0, "loop", NULL);
	comm(t, 2, 1, TK_RECV, 50, K);
	comm(t, 3, 2, TK_SEND, 20, B);
	comm(t, 4, 5, TK_RECV, 20, B);
	comm(t, 5, 6, TK_SEND, 100, K);
	comm(t, 6, 7, TK_RECV, 50, K);
	comm(t, 7, 8, TK_SEND, 20, B);
	comm(t, 8, 11, TK_RECV, 20, B);
	comm(t, 9, 12, TK_SEND, 100, K);
	tb_thread(t, 2, 2); /* the back end */
	comm(t, 201, 3, TK_RECV, 20, B);
	comm(t, 202, 4, TK_SEND, 20, B);
	comm(t, 204, 9, TK_RECV, 20, B);
	comm(t, 205, 10, TK_SEND, 20, B);
	tb_msg(t, 3, 201);
	tb_msg(t, 202, 4);
	tb_msg(t, 7, 204);
	tb_msg(t, 205, 8);
	if (trace_finish(t))
		abort();
	CHECK("both/server-wins",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_SERVER &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "2,3,4,5,201,202") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "6,7,8,9,204,205") &&
		      f->flow[0].npids == 2,
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

/* A proxy attached to with a request in flight on each side. */
static void test_mid_proxy(void)
{
	static const char *K1 = "tcp:10.0.0.1:80>10.0.0.9:51000";
	static const char *K2 = "tcp:10.0.0.1:80>10.0.0.9:51001";
	static const char *B1 = "tcp:10.0.0.1:41000>10.0.0.2:9000";
	static const char *B2 = "tcp:10.0.0.1:41001>10.0.0.2:9000";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1); /* the proxy: first traced */
	comm_peer(t, 1, 1, TK_RECV, 20, B1, 2); /* the in-flight reply */
	comm_peer(t, 2, 2, TK_SEND, 100, K1, 2); /* its answer */
	comm_peer(t, 3, 3, TK_RECV, 50, K1, 2); /* request 1 */
	comm_peer(t, 4, 4, TK_SEND, 20, B1, 2);
	comm_peer(t, 5, 6, TK_RECV, 20, B1, 2);
	comm_peer(t, 6, 7, TK_SEND, 100, K1, 2);
	comm_peer(t, 7, 8, TK_RECV, 50, K2, 2); /* request 2 */
	comm_peer(t, 8, 9, TK_SEND, 20, B2, 2);
	comm_peer(t, 9, 12, TK_RECV, 20, B2, 2);
	comm_peer(t, 10, 13, TK_SEND, 100, K2, 2);
	tb_thread(t, 2, 2); /* the back end */
	comm_peer(t, 201, 5, TK_RECV, 20, B1, 1);
	comm_peer(t, 202, 5, TK_SEND, 20, B1, 1);
	comm_peer(t, 203, 10, TK_RECV, 20, B2, 1);
	comm_peer(t, 204, 11, TK_SEND, 20, B2, 1);
	tb_msg(t, 4, 201);
	tb_msg(t, 202, 5);
	tb_msg(t, 8, 203);
	tb_msg(t, 204, 9);
	if (trace_finish(t))
		abort();
	CHECK("mid/proxy",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_SERVER &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "3,4,5,6,201,202") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "7,8,9,10,203,204"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

/* A client attached to while a reply was on its way. */
static void test_mid_client(void)
{
	static const char *C1 = "tcp:10.0.0.1:41000>10.0.0.2:9000";
	static const char *C2 = "tcp:10.0.0.1:41001>10.0.0.2:9000";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1);
	comm_peer(t, 1, 1, TK_RECV, 20, C1, 2); /* the in-flight reply */
	comm_peer(t, 2, 2, TK_SEND, 20, C1, 2);
	comm_peer(t, 3, 3, TK_RECV, 20, C1, 2);
	comm_peer(t, 4, 4, TK_SEND, 20, C2, 2);
	comm_peer(t, 5, 5, TK_RECV, 20, C2, 2);
	if (trace_finish(t))
		abort();
	CHECK("mid/client",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_CLIENT &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "2,3") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "4,5"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_untraced_receiver(void)
{
	static const char *H = "tcp:10.0.0.1:52000>10.0.0.7:80";
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "get", NULL);
	comm(t, 2, 1, TK_SEND, 10, H);
	comm(t, 3, 2, TK_RECV, 100, H);
	tb_ev(t, 4, 3, TK_EXIT, 0, "get", NULL);
	tb_ev(t, 5, 4, TK_ENTRY, 0, "get", NULL);
	comm(t, 6, 5, TK_SEND, 5, H);
	comm(t, 7, 6, TK_SEND, 5, H); /* the same request's body */
	comm(t, 8, 7, TK_RECV, 100, H);
	tb_ev(t, 9, 8, TK_EXIT, 0, "get", NULL);
	if (trace_finish(t))
		abort();
	CHECK("client/untraced-receiver",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      f->rule == FLOWS_RULE_CLIENT &&
		      !strcmp(ids(t, f, 0, a, sizeof(a)), "1,2,3,4") &&
		      !strcmp(ids(t, f, 1, b, sizeof(b)), "5,6,7,8,9"),
	      "%zu flows, rule %d: [%s] [%s]", f ? f->n : 0,
	      f ? f->rule : -1, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_skip(void)
{
	static const char *const skip[] = { "pipe:9" };
	static const char *T = "tcp:127.0.0.1:40000>127.0.0.1:5000";
	struct flows_opts o = { .skip_chan = skip, .nskip = 1 };
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256];
	int ok;

	tb_thread(t, 1, 1);
	comm(t, 1, 0, TK_RECV, 5, "pipe:9"); /* its stdin */
	tb_ev(t, 2, 1, TK_ENTRY, 0, "req", NULL);
	comm(t, 3, 2, TK_SEND, 10, T);
	tb_ev(t, 4, 3, TK_EXIT, 0, "req", NULL);
	tb_thread(t, 2, 2);
	comm(t, 101, 2, TK_RECV, 10, T);
	tb_msg(t, 3, 101);
	if (trace_finish(t))
		abort();
	ok = !flows_build(t, &o, &f) && f->n == 1 &&
	     f->rule == FLOWS_RULE_CLIENT &&
	     !strcmp(ids(t, f, 0, a, sizeof(a)), "2,3,4,101");
	flows_free(f);
	f = NULL;
	ok = ok && !flows_build(t, NULL, &f) && f->n == 1 &&
	     f->rule == FLOWS_RULE_SERVER &&
	     !strcmp(ids(t, f, 0, a, sizeof(a)), "1,2,3,4,101");
	CHECK("skip/stdio", ok, "[%s]", a);
	flows_free(f);
	trace_free(t);
}

static void test_no_messages(void)
{
	struct trace *t = trace_new();
	struct flows *f = NULL;
	uint8_t st[8] = { 0 };
	size_t n = 9;
	int rule = -1, ok;

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 1, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 2, 2);
	tb_ev(t, 3, 1, TK_ENTRY, 0, "main", NULL);
	if (trace_finish(t))
		abort();
	ok = !flows_start_auto(t, NULL, 0, st, &n, &rule) && n == 0 &&
	     rule == FLOWS_RULE_NONE && !flows_build(t, NULL, &f) &&
	     f->n == 2 && f->per_process && f->rule == FLOWS_RULE_NONE;
	flows_free(f);
	f = NULL;
	trace_free(t);
	/* the first process only reads EOF; another one talks */
	t = trace_new();
	tb_thread(t, 1, 1);
	comm(t, 1, 0, TK_RECV, 0, "pipe:4");
	tb_thread(t, 2, 2);
	comm(t, 2, 1, TK_SEND, 10, "pipe:5");
	if (trace_finish(t))
		abort();
	ok = ok && !flows_build(t, NULL, &f) && f->n == 2 && f->per_process &&
	     f->rule == FLOWS_RULE_NONE;
	CHECK("no-messages", ok, "%zu flows, rule %d", f ? f->n : 0,
	      f ? f->rule : -1);
	flows_free(f);
	trace_free(t);
}

static void test_roles(void)
{
	/* schedd listens on :38273, the submitter connects from :41180;
	 * a shadow's later connection to the startd (:9000) got :41180
	 * again; the schedd's own claims come from :5001, :5002 */
	static const char *const reuse[] = {
		"tcp:127.0.0.1:38273>127.0.0.1:41180",
		"tcp:127.0.0.1:41180>127.0.0.1:9000",
		"tcp:127.0.0.1:5001>127.0.0.1:9000",
		"tcp:127.0.0.1:9000>127.0.0.1:5002",
		"unix:12-13",
	};
	/* wrk -> nginx :80, nginx -> redis :6379, two connections each */
	static const char *const proxy[] = {
		"tcp:10.0.0.1:80>10.0.0.2:40001",
		"tcp:10.0.0.2:40002>10.0.0.1:80",
		"tcp:10.0.0.1:50001>10.0.0.3:6379",
		"tcp:10.0.0.3:6379>10.0.0.1:50002",
	};
	/* one connection; UDP peers in a triangle, one end shared more */
	static const char *const other[] = {
		"tcp:1.1.1.1:1>1.1.1.2:2",
		"udp:2.2.2.1:53>2.2.2.2:53",
		"udp:2.2.2.2:53>2.2.2.3:53",
		"udp:2.2.2.3:53>2.2.2.1:53",
		"udp:2.2.2.1:53>2.2.2.4:7",
	};
	uint8_t s[5];

	CHECK("roles/reused-port",
	      !chan_role_servers(reuse, 5, s) && s[0] == 1 && s[1] == 2 &&
		      s[2] == 2 && s[3] == 1 && s[4] == 0,
	      "%d %d %d %d %d", s[0], s[1], s[2], s[3], s[4]);
	CHECK("roles/proxy",
	      !chan_role_servers(proxy, 4, s) && s[0] == 1 && s[1] == 2 &&
		      s[2] == 2 && s[3] == 1,
	      "%d %d %d %d", s[0], s[1], s[2], s[3]);
	CHECK("roles/fallback",
	      !chan_role_servers(other, 5, s) && s[0] == 0 && s[1] == 1 &&
		      s[2] == 0 && s[3] == 2 && s[4] == 1,
	      "%d %d %d %d %d", s[0], s[1], s[2], s[3], s[4]);
}

int main(void)
{
	CHECKS_EXPECT(15);
	test_client();
	test_server();
	test_traced_client();
	test_reply_pipe();
	test_both();
	test_mid_proxy();
	test_mid_client();
	test_untraced_receiver();
	test_skip();
	test_roles();
	test_no_messages();
	return failures ? 1 : 0;
}
