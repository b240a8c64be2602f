/*
 * tests/unit/test-flows.c - analysis/flows.c on hand-built traces:
 *   fig2/...     self-propelled Figure 2: a Web server serving two
 *              browsers' requests; the server's recvs (default starts) and
 *              the browsers' clicks (--start) each give two flows, with
 *              exactly the events the communication-pair and
 *              message-switch rules put in them
 *   fig3/...     Figure 3: one server process enqueues two requests and
 *              dequeues them later; without a directive the rules put the
 *              first reply in the second flow, with
 *              "enQ:entry,arg0 -> deQ:exit,ret" each reply is in its
 *              request's flow
 *   orphan-replies  a reply from an untraced peer, or from a process no
 *              flow reached, stays in the flow that waited for it
 *   untraced   recvs from an untraced peer still switch flows; a 0-byte
 *              recv (EOF) starts none
 *   fork       a child forked while serving a request is in its flow
 *   fallback   no communication: one flow per process
 *   directive/parse  good and bad directive strings
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

/* The ids of flow fl, sorted, comma-separated, into buf. */
static const char *flow_ids(const struct trace *t, const struct flows *f,
		      uint32_t fl, char *buf, size_t n)
{
	return tb_ids(t, f->of, fl, buf, n);
}

static struct trace *fig2(void)
{
	struct trace *t = trace_new();

	tb_thread(t, 1, 1); /* the Web server, the first traced process */
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 5, TK_ENTRY, 1, "select", "srv.c:10");
	tb_ev(t, 3, 5, TK_EXIT, 1, "select", NULL);
	tb_comm(t, 4, 6, TK_RECV, 20);	/* URL 1 */
	tb_comm(t, 5, 7, TK_SEND, 100); /* page 1 */
	tb_ev(t, 6, 8, TK_ENTRY, 1, "select", "srv.c:10");
	tb_ev(t, 7, 8, TK_EXIT, 1, "select", NULL);
	tb_comm(t, 8, 9, TK_RECV, 20);	 /* URL 2 */
	tb_comm(t, 9, 12, TK_SEND, 100); /* page 2 */
	tb_ev(t, 10, 16, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 10, 10); /* browser 1 */
	tb_ev(t, 101, 1, TK_ENTRY, 0, "click", NULL);
	tb_comm(t, 102, 2, TK_SEND, 20);
	tb_comm(t, 103, 10, TK_RECV, 100);
	tb_ev(t, 104, 11, TK_EXIT, 0, "click", NULL);
	tb_ev(t, 105, 11, TK_ENTRY, 0, "show", NULL);
	tb_ev(t, 106, 12, TK_EXIT, 0, "show", NULL);
	tb_thread(t, 20, 20); /* browser 2 */
	tb_ev(t, 201, 3, TK_ENTRY, 0, "click", NULL);
	tb_comm(t, 202, 4, TK_SEND, 20);
	tb_comm(t, 203, 13, TK_RECV, 100);
	tb_ev(t, 204, 14, TK_EXIT, 0, "click", NULL);
	tb_ev(t, 205, 14, TK_ENTRY, 0, "show", NULL);
	tb_ev(t, 206, 15, TK_EXIT, 0, "show", NULL);
	tb_msg(t, 102, 4);
	tb_msg(t, 202, 8);
	tb_msg(t, 5, 103);
	tb_msg(t, 9, 203);
	if (trace_finish(t))
		abort();
	return t;
}

static void test_fig2(void)
{
	struct trace *t = fig2();
	struct flows_opts o = { 0 };
	struct flows *f = NULL;
	char a[512], b[512];

	CHECK("fig2/first-process", t->first_pid == 1 && t->nrecv_matched == 4,
	      "first %lld, %zu matched", (long long)t->first_pid,
	      t->nrecv_matched);
	CHECK("fig2/default-starts",
	      !flows_build(t, &o, &f) && f->n == 2 && !f->per_process &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)),
			      "4,5,6,7,103,104,105,106") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)),
			      "8,9,10,203,204,205,206") &&
		      f->flow[0].npids == 2 && f->flow[0].pids[0] == 1 &&
		      f->flow[0].pids[1] == 10 && f->flow[1].pids[1] == 20 &&
		      f->flow[0].nevents == 8 && f->flow[0].first_ts == 6 &&
		      f->flow[0].last_ts == 12,
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	f = NULL;
	o.start_func = "click";
	CHECK("fig2/click-starts",
	      !flows_build(t, &o, &f) && f->n == 2 &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)),
			      "4,5,6,7,101,102,103,104,105,106") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)),
			      "8,9,10,201,202,203,204,205,206") &&
		      f->flow[0].start == tb_find(t, 101),
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	trace_free(t);
}

static struct trace *fig3(void)
{
	struct trace *t = trace_new();

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_comm(t, 2, 2, TK_RECV, 8); /* request of client 1 */
	tb_full(t, 3, 3, TK_ENTRY, 1, "enQ", "q.c:1", 0, 0, 1, 0xA);
	tb_ev(t, 4, 3, TK_EXIT, 1, "enQ", NULL);
	tb_comm(t, 5, 5, TK_RECV, 8); /* request of client 2 */
	tb_full(t, 6, 6, TK_ENTRY, 1, "enQ", "q.c:1", 0, 0, 1, 0xB);
	tb_ev(t, 7, 6, TK_EXIT, 1, "enQ", NULL);
	tb_ev(t, 8, 7, TK_ENTRY, 1, "deQ", "q.c:2");
	tb_full(t, 9, 8, TK_EXIT, 1, "deQ", NULL, 0, 0, 1, 0xA);
	tb_comm(t, 10, 9, TK_SEND, 8); /* reply 1 */
	tb_ev(t, 11, 10, TK_ENTRY, 1, "deQ", "q.c:2");
	tb_full(t, 12, 11, TK_EXIT, 1, "deQ", NULL, 0, 0, 1, 0xB);
	tb_comm(t, 13, 12, TK_SEND, 8); /* reply 2 */
	tb_thread(t, 50, 50);
	tb_comm(t, 51, 1, TK_SEND, 8);
	tb_comm(t, 52, 13, TK_RECV, 8);
	tb_thread(t, 60, 60);
	tb_comm(t, 61, 4, TK_SEND, 8);
	tb_comm(t, 62, 14, TK_RECV, 8);
	tb_msg(t, 51, 2);
	tb_msg(t, 61, 5);
	tb_msg(t, 10, 52);
	tb_msg(t, 13, 62);
	if (trace_finish(t))
		abort();
	return t;
}

static void test_fig3(void)
{
	struct trace *t = fig3();
	struct flows_directive d;
	struct flows_opts o = { 0 };
	struct flows *f = NULL;
	char a[512], b[512], *cause = NULL;

	CHECK("fig3/no-directive",
	      !flows_build(t, &o, &f) && f->n == 2 &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)), "2,3,4") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)),
			      "5,6,7,8,9,10,11,12,13,52,62"),
	      "[%s] [%s]", a, b);
	flows_free(f);
	f = NULL;
	if (flows_directive_parse("enQ:entry,arg0 -> deQ:exit,ret", &d,
				  &cause))
		abort();
	o.dir = &d;
	o.ndir = 1;
	CHECK("fig3/directive",
	      !flows_build(t, &o, &f) && f->n == 2 &&
		      f->ndirective_edges == 2 &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)),
			      "2,3,4,9,10,11,52") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)),
			      "5,6,7,8,12,13,62"),
	      "%zu edges: [%s] [%s]", f ? f->ndirective_edges : 0, a, b);
	flows_free(f);
	flows_directive_release(&d);
	trace_free(t);
}

static void test_untraced_fork_fallback(void)
{
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_comm(t, 2, 1, TK_RECV, 10); /* from an untraced client */
	tb_ev(t, 3, 2, TK_ENTRY, 1, "serve", "s.c:1");
	tb_full(t, 4, 3, TK_FORK, 2, NULL, NULL, 0, 70, 0, 0);
	tb_ev(t, 5, 4, TK_EXIT, 1, "serve", NULL);
	tb_comm(t, 6, 5, TK_RECV, 10); /* the next request */
	tb_comm(t, 7, 6, TK_RECV, 0);  /* EOF */
	tb_ev(t, 8, 7, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 70, 70); /* the forked child */
	tb_ev(t, 71, 3, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 72, 4, TK_ENTRY, 1, "helper", "s.c:9");
	if (trace_finish(t))
		abort();
	CHECK("flows/untraced-and-fork",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)), "2,3,4,5,71,72") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)), "6,7,8"),
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	trace_free(t);

	t = trace_new();
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 0, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 2, 9, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 2, 2);
	tb_ev(t, 3, 1, TK_ENTRY, 0, "main", NULL);
	tb_thread(t, 2, 3);
	tb_ev(t, 4, 2, TK_ENTRY, 0, "worker", NULL);
	if (trace_finish(t))
		abort();
	f = NULL;
	CHECK("flows/fallback-per-process",
	      !flows_build(t, NULL, &f) && f->n == 2 && f->per_process &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)), "1,2") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)), "3,4"),
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	trace_free(t);
}

static void test_parse(void)
{
	struct flows_directive d;
	char *cause = NULL;
	int ok;

	ok = !flows_directive_parse(" enQ:entry,arg1->deQ:exit,ret ", &d,
				    &cause) &&
	     !strcmp(d.func[0], "enQ") && !d.exit[0] && d.arg[0] == 1 &&
	     !strcmp(d.func[1], "deQ") && d.exit[1] && d.arg[1] == -1;
	flows_directive_release(&d);
	CHECK("directive/parse", ok, "not parsed");
	ok = flows_directive_parse("enQ:entry,argx -> deQ:exit,ret", &d,
				   &cause) == -EINVAL &&
	     cause && strstr(cause, "FUNC:entry,argN");
	free(cause);
	cause = NULL;
	ok = ok && flows_directive_parse("enQ -> deQ", &d, &cause) == -EINVAL;
	free(cause);
	cause = NULL;
	ok = ok &&
	     flows_directive_parse("enQ:entry,arg0", &d, &cause) == -EINVAL;
	free(cause);
	CHECK("directive/refused", ok, "a bad directive parsed");
}

/*
 * Process 1 serves two requests, each from a call of serve (--start
 * serve); for the first it asks process 2, whose agent came by
 * propagation in the middle of its work (no recv of it: its trace starts
 * at 100), and gets a reply (recv 4), then a reply from a peer not traced
 * at all (recv 6).  Both replies stay in the first request's flow, and
 * what follows them; process 2's events belong to no flow.
 */
static void test_orphan_replies(void)
{
	struct flows_opts o = { .start_func = "serve" };
	struct trace *t = trace_new();
	struct flows *f = NULL;
	char a[256], b[256];

	tb_thread(t, 1, 1);
	tb_ev(t, 2, 1, TK_ENTRY, 0, "serve", NULL);
	tb_comm(t, 3, 2, TK_SEND, 10);
	tb_comm(t, 4, 5, TK_RECV, 10);
	tb_ev(t, 5, 6, TK_ENTRY, 1, "use_reply", NULL);
	tb_comm(t, 6, 7, TK_RECV, 10);
	tb_ev(t, 7, 8, TK_ENTRY, 2, "use_other", NULL);
	tb_ev(t, 9, 9, TK_ENTRY, 0, "serve", NULL);
	tb_ev(t, 10, 10, TK_ENTRY, 1, "work", NULL);
	tb_thread(t, 2, 2);
	tb_ev(t, 100, 3, TK_ENTRY, 0, "handle", NULL);
	tb_comm(t, 101, 4, TK_SEND, 10);
	tb_msg(t, 101, 4);
	if (trace_finish(t))
		abort();
	CHECK("flows/orphan-replies",
	      !flows_build(t, &o, &f) && f->n == 2 &&
		      !strcmp(flow_ids(t, f, 0, a, sizeof(a)), "2,3,4,5,6,7") &&
		      !strcmp(flow_ids(t, f, 1, b, sizeof(b)), "9,10"),
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	trace_free(t);
}

/*
 * Many values: N requests each enQ their number, a worker deQs them in
 * another order after all of them (plus a value enQed twice: the later
 * one wins).  Every deQ exit joins its request's flow.
 */
static void test_directive_many(void)
{
	enum { N = 3000 };
	struct trace *t = trace_new();
	struct flows_directive d;
	struct flows_opts o = { 0 };
	struct flows *f = NULL;
	char *cause = NULL;
	int64_t id = 1, ts = 1, k, bad = -1;
	size_t i, right = 0;

	tb_thread(t, 1, 1);
	tb_ev(t, id++, ts++, TK_ENTRY, 0, "main", NULL);
	for (k = 0; k < N; k++) {
		tb_comm(t, id++, ts++, TK_RECV, 8);
		/* request N-1 enqueues 5 again: 5's deQ is its */
		tb_full(t, id++, ts++, TK_ENTRY, 1, "enQ", "q.c:1", 0, 0, 1,
			k == N - 1 ? 5 : k);
		tb_ev(t, id++, ts++, TK_EXIT, 1, "enQ", NULL);
	}
	tb_thread(t, 1, 2);
	for (k = 0; k < N - 1; k++) {
		tb_ev(t, id++, ts++, TK_ENTRY, 0, "deQ", "q.c:2");
		tb_full(t, id++, ts++, TK_EXIT, 0, "deQ", NULL, 0, 0, 1,
			(k * 7919) % (N - 1));
	}
	if (trace_finish(t) || flows_directive_parse(
				       "enQ:entry,arg1 -> deQ:exit,ret", &d,
				       &cause))
		abort();
	o.dir = &d;
	o.ndir = 1;
	if (flows_build(t, &o, &f))
		abort();
	for (i = 0; i < t->nev; i++) {
		const struct trace_event *e = &t->ev[i];
		int64_t v = e->val[0];

		if (e->kind != TK_EXIT || !(e->has_val & 1))
			continue;
		right++;
		if (f->of[i] != (uint32_t)(v == 5 ? N - 1 : v) && bad < 0)
			bad = v;
	}
	CHECK("directive/many",
	      f->n == N && f->ndirective_edges == N - 1 && right == N - 1 &&
		      bad < 0,
	      "%zu flows, %zu edges, value %lld in another flow", f->n,
	      f->ndirective_edges, (long long)bad);
	flows_free(f);
	flows_directive_release(&d);
	trace_free(t);
}

int main(void)
{
	CHECKS_EXPECT(11);
	test_fig2();
	test_orphan_replies();
	test_fig3();
	test_directive_many();
	test_untraced_fork_fallback();
	test_parse();
	return failures ? 1 : 0;
}
