/*
 * tests/unit/trace-build.h - hand-built traces for the analysis unit
 * tests (test-flows, test-suspects, test-rootcause): one line per event.
 *
 *   tb_thread(t, pid, tid)
 *   tb_ev(t, id, ts, kind, depth, "func", "site")  entry/exit/other
 *   tb_comm(t, id, ts, kind, bytes)                 send/recv
 *   tb_msg(t, send_id, recv_id)
 * Ids are the session's event ids; tb_find(t, id) gives an event's index;
 * tb_ids(t, of, u, buf, n) the ids of the events whose of[] is u (a flow),
 * sorted, comma-separated.
 */
#ifndef PROPEL_TESTS_UNIT_TRACE_BUILD_H
#define PROPEL_TESTS_UNIT_TRACE_BUILD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace.h"

static void tb_thread(struct trace *t, int64_t pid, int64_t tid)
{
	if (trace_thread_begin(t, pid, tid))
		abort();
}

static void tb_full(struct trace *t, int64_t id, int64_t ts, int kind,
		    int depth, const char *func, const char *site,
		    int64_t bytes, int64_t arg, int has_val, int64_t val)
{
	struct trace_event e;

	memset(&e, 0, sizeof(e));
	e.id = id;
	e.ts_ns = ts;
	e.kind = (uint8_t)kind;
	e.depth = depth;
	e.func = trace_intern(t, func);
	e.site = trace_intern(t, site);
	e.bytes = bytes;
	e.arg = arg;
	e.has_val = (uint8_t)has_val;
	e.val[0] = val;
	if (trace_add(t, &e))
		abort();
}

static __attribute__((unused)) void tb_ev(struct trace *t, int64_t id, int64_t ts, int kind,
		  int depth, const char *func, const char *site)
{
	tb_full(t, id, ts, kind, depth, func, site, 0, 0, 0, 0);
}

static __attribute__((unused)) void tb_comm(struct trace *t, int64_t id, int64_t ts, int kind,
		    int64_t bytes)
{
	tb_full(t, id, ts, kind, 0, NULL, NULL, bytes, 0, 0, 0);
}

static __attribute__((unused)) void tb_msg(struct trace *t, int64_t send, int64_t recv)
{
	if (trace_message(t, send, recv))
		abort();
}

static __attribute__((unused)) uint32_t tb_find(const struct trace *t, int64_t id)
{
	size_t i;

	for (i = 0; i < t->nev; i++)
		if (t->ev[i].id == id)
			return (uint32_t)i;
	abort();
}

static __attribute__((unused)) const char *
tb_ids(const struct trace *t, const uint32_t *of, uint32_t u, char *buf,
       size_t n)
{
	int64_t v[256];
	size_t k = 0, i, j, w = 0;

	for (i = 0; i < t->nev && k < 256; i++)
		if (of[i] == u)
			v[k++] = t->ev[i].id;
	for (i = 1; i < k; i++)
		for (j = i; j > 0 && v[j] < v[j - 1]; j--) {
			int64_t x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	buf[0] = 0;
	for (i = 0; i < k && w + 24 < n; i++)
		w += (size_t)snprintf(buf + w, n - w, "%s%lld", i ? "," : "",
				      (long long)v[i]);
	return buf;
}

#endif
