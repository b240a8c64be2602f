/*
 * tests/unit/test-flow-map.c - engine/flow-map.c gives every event the
 * flow that analysis/flows.c gives it on the whole trace
 * (engine/analysis-load.c), both with the session's own flow options: on
 * a recording of the distributed scenario (tests/apps/dist-all: TCP, a
 * pipe, a UNIX socket, UDP; --start client_request, as its launcher is
 * neither client nor server of the requests), or on the session given as
 * argument (tests/e2e/flows-auto.sh gives it sessions of the automatic
 * client and server rules).  Also over a walk with a pid filter, as the
 * exports' --pid walks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/flows.h"
#include "engine/analysis-load.h"
#include "engine/flow-map.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "check.h"

struct cmp {
	const struct flow_map *m;
	struct flow_map_walk w;
	const struct trace *t;
	const struct flows *fl;
	size_t i, bad, n;
	int64_t pid; /* filter: only this pid's events are in the walk */
	char first[160];
};

static int cmp_event(const struct replay_event *ev, void *arg)
{
	struct cmp *c = arg;
	uint32_t got = flow_map_step(c->m, &c->w, ev), want;

	while (c->i < c->t->nev && c->pid && c->t->ev[c->i].pid != c->pid)
		c->i++;
	if (c->i >= c->t->nev || c->t->ev[c->i].id != ev->id) {
		snprintf(c->first, sizeof(c->first),
			 "walk and trace disagree at event %lld",
			 (long long)ev->id);
		return -EINVAL;
	}
	want = c->fl->of[c->i++];
	c->n++;
	if (got != want && !c->bad++)
		snprintf(c->first, sizeof(c->first),
			 "event %lld (kind %d): flow %d, want %d",
			 (long long)ev->id, ev->kind, (int)got, (int)want);
	return 0;
}

int main(int argc, char **argv)
{
	CHECKS_EXPECT(6);
	char dir[] = "/tmp/test-flow-map.XXXXXX", db[128], cmd[512];
	const char *prop = getenv("PROPEL"), *o = getenv("O");
	struct session *s = NULL;
	struct trace *t = NULL;
	struct flows *fl = NULL;
	struct flow_map *m = NULL;
	struct cmp c;
	char *cause = NULL;
	int err, pass;

	if (argc > 1) {
		snprintf(db, sizeof(db), "%s", argv[1]);
	} else {
		if (!mkdtemp(dir))
			return 1;
		snprintf(db, sizeof(db), "%s/s.db", dir);
		snprintf(cmd, sizeof(cmd),
			 "mkdir -p %s/run && timeout 120 %s record -o %s "
			 "--start client_request -- "
			 "%s/apps/dist-all %s/run -n 6 >%s/out 2>&1",
			 dir, prop ? prop : "build/propel", db, o ? o : "build",
			 dir, dir);
		err = system(cmd);
		CHECK("flow-map/record", err == 0, "%s failed (%d)", cmd, err);
		if (err)
			return 1;
	}
	err = session_open(db, SESSION_READ, &s, &cause);
	CHECK("flow-map/open", !err, "%s", cause ? cause : "");
	if (err)
		return 1;
	err = analysis_load(s, &t, &cause) ||
	      analysis_flows(s, t, &fl) ||
	      flow_map_build(s, NULL, &m, &cause);
	CHECK("flow-map/build", !err, "%s", cause ? cause : "error");
	if (err)
		return 1;
	CHECK("flow-map/count", flow_map_count(m) == fl->n &&
		  flow_map_per_process(m) == fl->per_process && fl->n > 1 &&
		  !fl->per_process,
	      "map %zu flows (per process %d), trace %zu (%d)",
	      flow_map_count(m), flow_map_per_process(m), fl->n,
	      fl->per_process);
	for (pass = 0; pass < 2; pass++) {
		struct replay_filter f = { 0, 0 };

		memset(&c, 0, sizeof(c));
		c.m = m;
		c.t = t;
		c.fl = fl;
		if (pass) /* a process of the middle of the trace */
			f.pid = c.pid = t->ev[t->th[t->nth / 2].first].pid;
		err = replay_walk(s, &f, cmp_event, &c, &cause);
		CHECK(pass ? "flow-map/every-event-pid" : "flow-map/every-event",
		      !err && !c.bad && c.n > 0,
		      "%zu of %zu events differ: %s", c.bad, c.n, c.first);
	}
	flow_map_free(m);
	flows_free(fl);
	trace_free(t);
	session_close(s);
	if (argc <= 1) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return failures != 0;
}
