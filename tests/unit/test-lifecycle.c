/*
 * tests/unit/test-lifecycle.c - a process's set-up and tear-down
 * (analysis/lifecycle.c) and the flows that leave them out
 * (analysis/flows.c), on hand-built traces of differently shaped
 * programs, each mark computed by hand:
 *   record/server     a server recorded from its start: a constructor
 *                     before main (set-up), two requests, main returns,
 *                     process_exit, a C++ destructor and
 *                     __do_global_dtors_aux (tear-down); nothing else
 *   exit/in-request   a forked worker (its main entered before the
 *                     window) that calls exit() inside a request: the
 *                     exit call is the request's, the atexit handler and
 *                     destructors under it are tear-down; the same with
 *                     process_exit written just before the exit entry
 *   attach            an attached process (no main entry, a call adopted
 *                     at injection): no set-up; main's return (its entry
 *                     before the window) starts the tear-down
 *   exec              a fork child that works, execs, and runs the new
 *                     image's constructor, main and destructor: set-up
 *                     and tear-down are the new image's, the work before
 *                     the exec and the exec event are not
 *   thread            a worker thread (no main) keeps everything; one
 *                     that calls _exit has nothing after it
 *   flows/no-life     the server's two flows hold no set-up or tear-down
 *                     event; main's return stays in the last one
 *   flows/no-start    a client whose constructor sends a hello to its
 *                     server: the hello starts no flow (client rule) and
 *                     is in none, the job does (from main, entered after
 *                     the hello)
 *   suspects/rare     five requests, one taking a rare path, the last
 *                     followed by twelve destructors: the rare one ranks
 *                     first (before the rule, the last did)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/lifecycle.h"
#include "analysis/profiles.h"
#include "analysis/suspects.h"
#include "analysis/trace.h"

#include "tests/unit/check.h"
#include "tests/unit/trace-build.h"

/* The ids of the events marked what, comma-separated, into buf. */
static const char *marked(const struct trace *t, const uint8_t *life,
			  int what, char *buf, size_t n)
{
	size_t i, o = 0;

	buf[0] = 0;
	for (i = 0; i < t->nev && o + 24 < n; i++)
		if (life[i] == what)
			o += (size_t)snprintf(buf + o, n - o, "%s%lld",
					      o ? "," : "",
					      (long long)t->ev[i].id);
	return buf;
}

/* a send or recv on channel chan */
static void chan_ev(struct trace *t, int64_t id, int64_t ts, int kind,
		    const char *chan)
{
	tb_full(t, id, ts, kind, 0, NULL, NULL, 8, trace_intern(t, chan), 0,
		0);
}

static struct trace *server_trace(void)
{
	static const char *C = "tcp:127.0.0.1:40000>127.0.0.1:5000";
	struct trace *t = trace_new();

	tb_thread(t, 1, 1);
	tb_ev(t, 1, 1, TK_ENTRY, 0, "_GLOBAL__sub_I_cache", NULL);
	tb_ev(t, 2, 2, TK_ENTRY, 1, "load_config", "s.cc:3");
	tb_ev(t, 3, 3, TK_EXIT, 1, "load_config", NULL);
	tb_ev(t, 4, 4, TK_EXIT, 0, "_GLOBAL__sub_I_cache", NULL);
	tb_ev(t, 5, 5, TK_ENTRY, 0, "main", NULL);
	chan_ev(t, 6, 10, TK_RECV, C);
	tb_ev(t, 7, 11, TK_ENTRY, 1, "handle", "s.cc:10");
	tb_ev(t, 8, 12, TK_EXIT, 1, "handle", NULL);
	chan_ev(t, 9, 13, TK_SEND, C);
	chan_ev(t, 10, 20, TK_RECV, C);
	tb_ev(t, 11, 21, TK_ENTRY, 1, "handle", "s.cc:10");
	tb_ev(t, 12, 22, TK_ENTRY, 2, "rare", "s.cc:20");
	tb_ev(t, 13, 23, TK_EXIT, 2, "rare", NULL);
	tb_ev(t, 14, 24, TK_EXIT, 1, "handle", NULL);
	chan_ev(t, 15, 25, TK_SEND, C);
	tb_ev(t, 16, 30, TK_EXIT, 0, "main", NULL);
	tb_ev(t, 17, 31, TK_PROCESS_EXIT, 0, NULL, NULL);
	tb_ev(t, 18, 32, TK_ENTRY, 0, "Cache::~Cache", NULL);
	tb_ev(t, 19, 33, TK_ENTRY, 1, "flush", "s.cc:40");
	tb_ev(t, 20, 34, TK_EXIT, 1, "flush", NULL);
	tb_ev(t, 21, 35, TK_EXIT, 0, "Cache::~Cache", NULL);
	tb_ev(t, 22, 36, TK_ENTRY, 0, "__do_global_dtors_aux", NULL);
	tb_ev(t, 23, 37, TK_EXIT, 0, "__do_global_dtors_aux", NULL);
	if (trace_finish(t))
		abort();
	return t;
}

static void test_server(void)
{
	struct trace *t = server_trace();
	uint8_t *life = calloc(t->nev + 1, 1);
	char a[256], b[256];
	long n = lifecycle_mark(t, life);

	CHECK("record/server", n == 11 &&
		      !strcmp(marked(t, life, LIFECYCLE_SETUP, a, sizeof(a)),
			      "1,2,3,4") &&
		      !strcmp(marked(t, life, LIFECYCLE_TEARDOWN, b, sizeof(b)),
			      "17,18,19,20,21,22,23"),
	      "%ld marked: set-up [%s] tear-down [%s]", n, a, b);
	free(life);
	trace_free(t);
}

static void worker_exit(struct trace *t, int64_t pid, int pe)
{
	tb_thread(t, pid, pid);
	tb_ev(t, pid + 1, 1, TK_RECV, 0, NULL, NULL);
	tb_ev(t, pid + 2, 2, TK_ENTRY, 1, "work", "w.c:5");
	tb_ev(t, pid + 3, 3, TK_EXIT, 1, "work", NULL);
	if (pe)
		tb_ev(t, pid + 4, 4, TK_PROCESS_EXIT, 1, NULL, NULL);
	tb_ev(t, pid + 5, 5, TK_ENTRY, 1, "exit", "w.c:9");
	if (!pe)
		tb_ev(t, pid + 4, 6, TK_PROCESS_EXIT, 1, NULL, NULL);
	tb_ev(t, pid + 6, 7, TK_ENTRY, 2, "on_exit_log", NULL);
	tb_ev(t, pid + 7, 8, TK_EXIT, 2, "on_exit_log", NULL);
	tb_ev(t, pid + 8, 9, TK_ENTRY, 2, "__do_global_dtors_aux", NULL);
	tb_ev(t, pid + 9, 10, TK_EXIT, 2, "__do_global_dtors_aux", NULL);
}

static void test_exit(void)
{
	struct trace *t = trace_new();
	uint8_t *life;
	char a[256], b[256];
	long n;

	worker_exit(t, 100, 0);
	worker_exit(t, 200, 1);
	if (trace_finish(t))
		abort();
	life = calloc(t->nev + 1, 1);
	n = lifecycle_mark(t, life);
	CHECK("exit/in-request", n == 9 &&
		      !strcmp(marked(t, life, LIFECYCLE_SETUP, a, sizeof(a)), "") &&
		      !strcmp(marked(t, life, LIFECYCLE_TEARDOWN, b, sizeof(b)),
			      "104,106,107,108,109,206,207,208,209"),
	      "%ld marked: set-up [%s] tear-down [%s]", n, a, b);
	free(life);
	trace_free(t);
}

static void test_attach_exec_thread(void)
{
	struct trace *t = trace_new();
	uint8_t *life;
	char a[256], b[256];

	/* attached: a call adopted at injection returns first */
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 1, TK_EXIT, 2, "epoll_wait", NULL);
	tb_ev(t, 2, 2, TK_ENTRY, 1, "serve", "a.c:3");
	tb_ev(t, 3, 3, TK_EXIT, 1, "serve", NULL);
	tb_ev(t, 4, 4, TK_EXIT, 0, "main", NULL);
	tb_ev(t, 5, 5, TK_ENTRY, 0, "fini_logs", NULL);
	tb_ev(t, 6, 6, TK_EXIT, 0, "fini_logs", NULL);
	/* a fork child: work, exec, a new image */
	tb_thread(t, 2, 2);
	tb_ev(t, 11, 1, TK_ENTRY, 1, "prepare", "c.c:1");
	tb_ev(t, 12, 2, TK_EXIT, 1, "prepare", NULL);
	tb_ev(t, 13, 3, TK_EXEC, 1, NULL, NULL);
	tb_ev(t, 14, 4, TK_ENTRY, 0, "init_tables", NULL);
	tb_ev(t, 15, 5, TK_EXIT, 0, "init_tables", NULL);
	tb_ev(t, 16, 6, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 17, 7, TK_ENTRY, 1, "run", "m.c:2");
	tb_ev(t, 18, 8, TK_EXIT, 1, "run", NULL);
	tb_ev(t, 19, 9, TK_EXIT, 0, "main", NULL);
	tb_ev(t, 20, 10, TK_ENTRY, 0, "free_tables", NULL);
	tb_ev(t, 21, 11, TK_EXIT, 0, "free_tables", NULL);
	/* worker threads: one keeps all, one ends in _exit */
	tb_thread(t, 1, 3);
	tb_ev(t, 31, 1, TK_THREAD_START, 0, NULL, NULL);
	tb_ev(t, 32, 2, TK_ENTRY, 0, "worker", NULL);
	tb_ev(t, 33, 3, TK_EXIT, 0, "worker", NULL);
	tb_ev(t, 34, 4, TK_THREAD_EXIT, 0, NULL, NULL);
	tb_thread(t, 1, 4);
	tb_ev(t, 41, 1, TK_ENTRY, 0, "watchdog", NULL);
	tb_ev(t, 42, 2, TK_ENTRY, 1, "_exit", "w.c:7");
	tb_ev(t, 43, 3, TK_PROCESS_EXIT, 1, NULL, NULL);
	if (trace_finish(t))
		abort();
	life = calloc(t->nev + 1, 1);
	lifecycle_mark(t, life);
	CHECK("attach", life[tb_find(t, 1)] == 0 && life[tb_find(t, 4)] == 0 &&
		      life[tb_find(t, 5)] == LIFECYCLE_TEARDOWN &&
		      life[tb_find(t, 6)] == LIFECYCLE_TEARDOWN,
	      "marks %d %d %d %d", life[tb_find(t, 1)], life[tb_find(t, 4)],
	      life[tb_find(t, 5)], life[tb_find(t, 6)]);
	CHECK("exec",
	      !strcmp(marked(t, life, LIFECYCLE_SETUP, a, sizeof(a)), "14,15") &&
		      life[tb_find(t, 11)] == 0 && life[tb_find(t, 13)] == 0 &&
		      life[tb_find(t, 19)] == 0 &&
		      life[tb_find(t, 20)] == LIFECYCLE_TEARDOWN &&
		      life[tb_find(t, 21)] == LIFECYCLE_TEARDOWN,
	      "set-up [%s]", a);
	CHECK("thread",
	      !strcmp(marked(t, life, LIFECYCLE_TEARDOWN, b, sizeof(b)),
		      "5,6,20,21,43") &&
		      !life[tb_find(t, 32)] && !life[tb_find(t, 42)],
	      "tear-down [%s]", b);
	free(life);
	trace_free(t);
}

static void test_flows(void)
{
	struct trace *t = server_trace();
	struct flows *f = NULL;
	char a[256], b[256];

	CHECK("flows/no-life",
	      !flows_build(t, NULL, &f) && f->n == 2 &&
		      !strcmp(tb_ids(t, f->of, 0, a, sizeof(a)), "6,7,8,9") &&
		      !strcmp(tb_ids(t, f->of, 1, b, sizeof(b)),
			      "10,11,12,13,14,15,16"),
	      "%zu flows: [%s] [%s]", f ? f->n : 0, a, b);
	flows_free(f);
	trace_free(t);

	/* a client whose constructor says hello to its server */
	t = trace_new();
	tb_thread(t, 1, 1);
	tb_ev(t, 1, 1, TK_ENTRY, 0, "register_client", NULL);
	chan_ev(t, 2, 2, TK_SEND, "unix:hello");
	tb_ev(t, 3, 3, TK_EXIT, 0, "register_client", NULL);
	tb_ev(t, 4, 4, TK_ENTRY, 0, "main", NULL);
	tb_ev(t, 5, 5, TK_ENTRY, 1, "submit", "c.c:4");
	chan_ev(t, 6, 6, TK_SEND, "unix:hello");
	tb_ev(t, 7, 7, TK_EXIT, 1, "submit", NULL);
	chan_ev(t, 8, 9, TK_RECV, "unix:hello");
	tb_ev(t, 9, 10, TK_EXIT, 0, "main", NULL);
	tb_thread(t, 9, 9);
	chan_ev(t, 91, 3, TK_RECV, "unix:hello");
	chan_ev(t, 92, 7, TK_RECV, "unix:hello");
	tb_ev(t, 93, 8, TK_ENTRY, 0, "do_job", NULL);
	chan_ev(t, 94, 8, TK_SEND, "unix:hello");
	tb_ev(t, 95, 8, TK_EXIT, 0, "do_job", NULL);
	tb_msg(t, 2, 91);
	tb_msg(t, 6, 92);
	tb_msg(t, 94, 8);
	if (trace_finish(t))
		abort();
	CHECK("flows/no-start",
	      !flows_build(t, NULL, &f) && f->n == 1 &&
		      f->rule == FLOWS_RULE_CLIENT &&
		      !strcmp(tb_ids(t, f->of, 0, a, sizeof(a)),
			      "4,5,6,7,8,9,92,93,94,95"),
	      "%zu flows, rule %d: [%s]", f ? f->n : 0, f ? f->rule : -1, a);
	flows_free(f);
	trace_free(t);
}

static void test_rare(void)
{
	static const char *C = "tcp:10.0.0.1:4000>10.0.0.2:80";
	static const char *dtor[12] = {
		"A::~A", "B::~B", "C::~C", "D::~D", "E::~E", "F::~F",
		"G::~G", "H::~H", "I::~I", "J::~J", "K::~K", "L::~L"
	};
	struct profiles_space sp = { 0 };
	struct trace *t = trace_new();
	struct profile *prof = NULL;
	struct suspects_score sc[8];
	struct flows *f = NULL;
	uint32_t *group = NULL;
	int64_t id = 1, ts = 1;
	int r, ok;

	tb_thread(t, 1, 1);
	tb_ev(t, id++, ts++, TK_ENTRY, 0, "main", NULL);
	for (r = 0; r < 5; r++) {
		chan_ev(t, id++, ts++, TK_RECV, C);
		tb_ev(t, id++, ts++, TK_ENTRY, 1, "handle", "h.c:1");
		tb_ev(t, id++, ts++, TK_ENTRY, 2, r == 2 ? "quota" : "compute",
		      r == 2 ? "h.c:3" : "h.c:2");
		tb_ev(t, id++, ts++, TK_EXIT, 2, r == 2 ? "quota" : "compute",
		      NULL);
		tb_ev(t, id++, ts++, TK_EXIT, 1, "handle", NULL);
		chan_ev(t, id++, ts++, TK_SEND, C);
	}
	tb_ev(t, id++, ts++, TK_EXIT, 0, "main", NULL);
	tb_ev(t, id++, ts++, TK_PROCESS_EXIT, 0, NULL, NULL);
	for (r = 0; r < 12; r++) {
		tb_ev(t, id++, ts++, TK_ENTRY, 0, dtor[r], NULL);
		tb_ev(t, id++, ts++, TK_EXIT, 0, dtor[r], NULL);
	}
	if (trace_finish(t))
		abort();
	ok = !flows_build(t, NULL, &f) && f->n == 5 &&
	     !flows_kinds(t, f, &group) &&
	     !profiles_build(&sp, t, f->of, f->n, &prof) &&
	     !suspects_rank(prof, f->n, group, PROFILES_COVERAGE, (size_t)-1,
			    sc);
	CHECK("suspects/rare", ok && sc[2].rank == 1 && sc[4].rank != 1 &&
				       sc[4].score == 0.0,
	      "ok %d, rare flow rank %zu score %.1f, last flow rank %zu score "
	      "%.1f", ok, ok ? sc[2].rank : 0, ok ? sc[2].score : 0,
	      ok ? sc[4].rank : 0, ok ? sc[4].score : 0);
	if (prof)
		profiles_free(prof, f->n);
	profiles_space_release(&sp);
	free(group);
	flows_free(f);
	trace_free(t);
}

int main(void)
{
	CHECKS_EXPECT(8);
	test_server();
	test_exit();
	test_attach_exec_thread();
	test_flows();
	test_rare();
	return failures ? 1 : 0;
}
