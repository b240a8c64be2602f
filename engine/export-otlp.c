/*
 * engine/export-otlp.c - `propel export --format=otlp`: the session as
 * OTLP/JSON (an ExportTraceServiceRequest: {"resourceSpans": [...]}), what
 * an OpenTelemetry Collector, Jaeger or Tempo take.
 *
 *   resource   one per walked thread (a process's threads repeat its
 *              resource): service.name = the program, process.pid,
 *              process.command, host.name, thread.id
 *   trace      one per flow (engine/flow-map.h, `propel report --flows`):
 *              a call is in the trace of the flow its entry is in; calls
 *              of no flow are in their process's trace.  traceId from the
 *              session's first event time and the flow (or the pid)
 *   span       one per call: name = the function, kind INTERNAL, start/end
 *              in Unix ns.  Its parent is its caller's span when the
 *              caller is in the same trace.  Otherwise (an event loop's
 *              call that began handling a request, a handler entered from
 *              another flow's frame) the caller is a link with
 *              propel.caller = true, and the parent is, across processes,
 *              the span that sent the message whose recv began this
 *              thread's part of the flow, or that forked this process,
 *              when that span is in the same trace -- else none.  A call
 *              that never returned ends at its thread's last event, with
 *              the attribute propel.unfinished = true; an entry rebuilt
 *              from a wrapped ring has propel.rebuilt = true
 *   event      every other event (send, recv, signal, fork, exec, ...) is
 *              an event of the span it happened in, named by its kind,
 *              with propel.fields = its fields as replay's jsonl gives
 *              them (engine/event.c); one outside every call is an event
 *              of the thread's outermost call before it (a process exit
 *              after main returned), or, before the thread's first call,
 *              of that call; only a thread without calls has none
 *   link       a matched recv links the span it happened in to the span the
 *              matching send happened in (any process, any trace), with
 *              propel.channel and propel.bytes
 *
 * IDs are hashes of what the session holds (spanId of pid, tid and the
 * entry's event id), so two exports of a session are identical.  Times
 * are the session's (CLOCK_MONOTONIC) moved to Unix time by the meta
 * key realtime_offset_ns when the session has it, else by created_ns
 * minus the session's last event (the session is written just after it).
 *
 * Two walks after the flow map's: the first notes, for every send and
 * fork, the span it happened in; the second writes, a thread at a time,
 * the spans as their calls end.  Memory: the flow map (the session's
 * communication events), the sends and forks, each thread's open calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/event.h"
#include "engine/export.h"
#include "engine/flow-map.h"
#include "engine/http.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/json.h"
#include "share/hash.h"
#include "share/log.h"

/* FNV-1a of v's bytes, lowest first (the same on any host) */
static uint64_t otlp_mix(uint64_t h, uint64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		b[i] = (unsigned char)v;
	return propel_fnv(h, b, 8);
}

static uint64_t otlp_span_id(int64_t pid, int64_t tid, int64_t entry_id)
{
	uint64_t h = otlp_mix(otlp_mix(otlp_mix(1469598103934665603ull, pid),
				       tid), entry_id);

	return h ? h : 1;
}

/* a send's span (or a fork's, tid = ts = 0 and pid = the child): sorted
 * by (pid, tid, ts) for bsearch */
struct otlp_send {
	int64_t pid, tid, ts;
	uint64_t span, tkey;
};

/* a trace: a flow (OTLP_FLOW | its index), or a process (its pid) */
#define OTLP_FLOW (1ull << 63)

struct otlp_open {
	uint64_t span, parent, tkey;
	size_t name; /* offset in chans: names outlive the walk's (the last
		      * thread's spans end after it) */
	int64_t start;
	int depth, rebuilt;
	size_t link0; /* its links: links[link0..nlinks) while it is on top */
	size_t ev0;   /* its events: evs[ev0..nevs) likewise */
};

/* a non-call event, a span event of the call it happened in */
struct otlp_sevent {
	int64_t ts;
	int kind;
	size_t fields; /* offset in chans: the kind's JSON fields, as text */
};

struct otlp_link {
	uint64_t span, tkey;
	size_t chan; /* offset in struct otlp's chans; OTLP_CALLER: the link
		      * to the caller in another trace */
	int64_t bytes;
};

#define OTLP_CALLER ((size_t)-1)

struct otlp {
	FILE *out;
	const struct export_opts *eo;
	int pass;
	uint64_t seed;
	int64_t unix_off;
	struct session_proc *pv;
	size_t np;
	struct otlp_send *sends, *forks;
	size_t nsends, capsends, nforks, capforks;
	struct flow_map_walk fw;
	/* the thread walked now; the span that began its part of the flow
	 * origin_tkey in another process (0: none) */
	int64_t pid, tid, last_ts;
	uint64_t tkey; /* the walked event's trace */
	uint64_t origin, origin_tkey;
	int have_thread, first_res;
	struct otlp_open *open;
	int nopen, capopen;
	/* pass 2: the last outermost span, written at the thread's next call
	 * or end so that the events after it are its events */
	struct otlp_open pending;
	int64_t pending_end;
	int pending_unfinished, have_pending;
	struct otlp_link *links;
	size_t nlinks, caplinks;
	struct otlp_sevent *evs;
	size_t nevs, capevs;
	char *chans; /* link channels and event fields, one buffer per thread */
	size_t nchans, capchans;
	int first_span;
	unsigned long long spans;
	int err;
	/* --otlp-endpoint: protobuf, posted a request per thread (or per
	 * OTLP_PB_MAX bytes of spans) instead of JSON written to out */
	struct otlp_pb *pb;
	const char *endpoint;
	char **cause;
	unsigned long long posts;
};

static void otlp_pb_resource(struct otlp *o);
static void otlp_pb_span(struct otlp *o, const struct otlp_open *sp,
			 int64_t end, int unfinished);
static void otlp_pb_flush(struct otlp *o);

static void otlp_trace_words(const struct otlp *o, uint64_t tkey,
			     uint64_t *a, uint64_t *b)
{
	*a = otlp_mix(o->seed, tkey);
	*b = otlp_mix(*a ^ 0x9e3779b97f4a7c15ull, tkey);
	if (!*b)
		*b = 1;
}

static void otlp_trace_id(const struct otlp *o, uint64_t tkey, char *hex)
{
	uint64_t a, b;

	otlp_trace_words(o, tkey, &a, &b);
	snprintf(hex, 33, "%016" PRIx64 "%016" PRIx64, a, b);
}

static void otlp_attr_str(FILE *out, const char *key, const char *v, int first)
{
	fprintf(out, "%s{\"key\":\"%s\",\"value\":{\"stringValue\":",
		first ? "" : ",", key);
	json_str(out, v ? v : "");
	fputs("}}", out);
}

static void otlp_attr_int(FILE *out, const char *key, int64_t v, int first)
{
	fprintf(out, "%s{\"key\":\"%s\",\"value\":{\"intValue\":\"%" PRId64
		     "\"}}",
		first ? "" : ",", key, v);
}

static void otlp_span(struct otlp *o, const struct otlp_open *sp,
		      int64_t end, int unfinished)
{
	FILE *out = o->out;
	char trace[33], ltrace[33];
	size_t i;
	int first = 1;

	otlp_trace_id(o, sp->tkey, trace);
	fprintf(out, "%s\n{\"traceId\":\"%s\",\"spanId\":\"%016" PRIx64 "\"",
		o->first_span ? "" : ",", trace, sp->span);
	o->first_span = 0;
	if (sp->parent)
		fprintf(out, ",\"parentSpanId\":\"%016" PRIx64 "\"", sp->parent);
	fputs(",\"name\":", out);
	json_str(out, o->chans + sp->name);
	fprintf(out, ",\"kind\":1,\"startTimeUnixNano\":\"%" PRId64
		     "\",\"endTimeUnixNano\":\"%" PRId64 "\"",
		sp->start + o->unix_off, end + o->unix_off);
	if (unfinished || sp->rebuilt) {
		fputs(",\"attributes\":[", out);
		if (unfinished) {
			fputs("{\"key\":\"propel.unfinished\",\"value\":"
			      "{\"boolValue\":true}}", out);
			first = 0;
		}
		if (sp->rebuilt)
			fprintf(out, "%s{\"key\":\"propel.rebuilt\",\"value\":"
				     "{\"boolValue\":true}}", first ? "" : ",");
		putc(']', out);
	}
	if (sp->ev0 < o->nevs) {
		fputs(",\"events\":[", out);
		for (i = sp->ev0; i < o->nevs; i++) {
			const struct otlp_sevent *e = &o->evs[i];

			fprintf(out, "%s{\"timeUnixNano\":\"%" PRId64
				     "\",\"name\":\"%s\",\"attributes\":[",
				i > sp->ev0 ? "," : "", e->ts + o->unix_off,
				event_kind(e->kind)->name);
			otlp_attr_str(out, "propel.fields", o->chans + e->fields,
				      1);
			fputs("]}", out);
		}
		putc(']', out);
	}
	if (sp->link0 < o->nlinks) {
		fputs(",\"links\":[", out);
		for (i = sp->link0; i < o->nlinks; i++) {
			const struct otlp_link *l = &o->links[i];

			otlp_trace_id(o, l->tkey, ltrace);
			fprintf(out, "%s{\"traceId\":\"%s\",\"spanId\":\"%016"
				     PRIx64 "\",\"attributes\":[",
				i > sp->link0 ? "," : "", ltrace, l->span);
			if (l->chan == OTLP_CALLER) {
				fputs("{\"key\":\"propel.caller\",\"value\":"
				      "{\"boolValue\":true}}]}", out);
				continue;
			}
			otlp_attr_str(out, "propel.channel", o->chans + l->chan, 1);
			otlp_attr_int(out, "propel.bytes", l->bytes, 0);
			fputs("]}", out);
		}
		putc(']', out);
	}
	fputs(",\"status\":{}}", out);
	o->spans++;
}

/* end the spans open at depth >= d (at end; unfinished ones at the
 * thread's last event) */
static void otlp_write_span(struct otlp *o, const struct otlp_open *sp,
			    int64_t end, int unfinished)
{
	if (o->pass == 2 && o->pb)
		otlp_pb_span(o, sp, end, unfinished);
	else if (o->pass == 2)
		otlp_span(o, sp, end, unfinished);
	o->nlinks = sp->link0;
	o->nevs = sp->ev0;
	o->nchans = sp->name; /* its strings and its callees' */
}

/* write the thread's last outermost span, held for the events after it */
static void otlp_flush_pending(struct otlp *o)
{
	if (!o->have_pending)
		return;
	o->have_pending = 0;
	otlp_write_span(o, &o->pending, o->pending_end, o->pending_unfinished);
}

static void otlp_close(struct otlp *o, int d, int64_t end, int unfinished)
{
	while (o->nopen > 0 && o->open[o->nopen - 1].depth >= d) {
		struct otlp_open *sp = &o->open[--o->nopen];

		if (o->nopen == 0 && o->pass == 2) {
			/* an outermost call: events until the thread's next
			 * call are its own (a process exit after main) */
			o->pending = *sp;
			o->pending_end = end;
			o->pending_unfinished = unfinished;
			o->have_pending = 1;
			continue;
		}
		otlp_write_span(o, sp, end, unfinished);
	}
}

/* the walked thread's resource attributes */
struct otlp_attr {
	const char *key, *s; /* s NULL: an int */
	int64_t i;
};

static int otlp_resource_attrs(const struct otlp *o, struct otlp_attr *a)
{
	const struct session_proc *p = session_proc_find(o->pv, o->np, o->pid);

	a[0] = (struct otlp_attr){ "service.name", p ? p->command : "?", 0 };
	a[1] = (struct otlp_attr){ "process.pid", NULL, o->pid };
	a[2] = (struct otlp_attr){ "process.command", p ? p->command : "?", 0 };
	a[3] = (struct otlp_attr){ "process.executable.path",
				   p && p->exe ? p->exe : "", 0 };
	a[4] = (struct otlp_attr){ "host.name", p && p->host ? p->host : "",
				   0 };
	a[5] = (struct otlp_attr){ "thread.id", NULL, o->tid };
	return 6;
}

static void otlp_resource(struct otlp *o)
{
	struct otlp_attr a[8];
	FILE *out = o->out;
	int i, n = otlp_resource_attrs(o, a);

	if (o->pb) {
		otlp_pb_resource(o);
		return;
	}
	fprintf(out, "%s\n{\"resource\":{\"attributes\":[",
		o->first_res ? "" : "]}]},");
	o->first_res = 0;
	for (i = 0; i < n; i++)
		if (a[i].s)
			otlp_attr_str(out, a[i].key, a[i].s, i == 0);
		else
			otlp_attr_int(out, a[i].key, a[i].i, i == 0);
	fputs("]},\"scopeSpans\":[{\"scope\":{\"name\":\"propel\"},"
	      "\"spans\":[", out);
	o->first_span = 1;
}

/* ---- protobuf (--otlp-endpoint), field numbers of opentelemetry-proto's
 * collector/trace/v1 ExportTraceServiceRequest and trace/v1, common/v1 ---- */

#define OTLP_PB_MAX (4u << 20) /* spans per request, bytes */

struct pb {
	uint8_t *p;
	size_t n, cap;
	int err;
};

struct otlp_pb {
	struct pb res;	 /* the thread's Resource message */
	struct pb spans; /* ScopeSpans content: the scope, then spans */
	struct pb tmp, tmp2;
	unsigned long long nspans;
};

static void pb_raw(struct pb *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->n + n > b->cap) {
		size_t nc = (b->n + n) * 2 + 256;
		uint8_t *np = realloc(b->p, nc);

		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t t[10];
	int n = 0;

	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(b, t, (size_t)n);
}

static void pb_bytes(struct pb *b, int field, const void *d, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, d, n);
}

static void pb_str(struct pb *b, int field, const char *s)
{
	pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

static void pb_msg(struct pb *b, int field, const struct pb *m)
{
	if (m->err)
		b->err = m->err;
	pb_bytes(b, field, m->p, m->n);
}

static void pb_fixed64(struct pb *b, int field, uint64_t v)
{
	uint8_t t[8];
	int i;

	for (i = 0; i < 8; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	pb_varint(b, (uint64_t)field << 3 | 1);
	pb_raw(b, t, 8);
}

static void pb_uint(struct pb *b, int field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

/* KeyValue{1: key, 2: AnyValue{1: string | 2: bool | 3: int}} as field
 * `field` of b; kind 's', 'b' or 'i' */
static void pb_attr(struct pb *b, int field, const char *key, int kind,
		    const char *sv, int64_t iv)
{
	struct pb kv = { 0 }, any = { 0 };

	if (kind == 's')
		pb_str(&any, 1, sv);
	else
		pb_uint(&any, kind == 'b' ? 2 : 3, (uint64_t)iv);
	pb_str(&kv, 1, key);
	pb_msg(&kv, 2, &any);
	pb_msg(b, field, &kv);
	free(any.p);
	free(kv.p);
}

static void pb_id(struct pb *b, int field, uint64_t a, uint64_t c, int n)
{
	uint8_t t[16];
	int i;

	for (i = 0; i < 8; i++) {
		t[i] = (uint8_t)(a >> (56 - 8 * i));
		t[8 + i] = (uint8_t)(c >> (56 - 8 * i));
	}
	pb_bytes(b, field, t, (size_t)n);
}

static void otlp_pb_resource(struct otlp *o)
{
	struct otlp_pb *pb = o->pb;
	struct otlp_attr a[8];
	struct pb scope = { 0 };
	int i, n = otlp_resource_attrs(o, a);

	pb->res.n = 0;
	for (i = 0; i < n; i++)
		pb_attr(&pb->res, 1, a[i].key, a[i].s ? 's' : 'i', a[i].s,
			a[i].i);
	pb->spans.n = 0;
	pb_str(&scope, 1, "propel");
	pb_msg(&pb->spans, 1, &scope);
	free(scope.p);
	pb->nspans = 0;
}

/* post what the thread's request holds (a resource and its spans) */
static void otlp_pb_flush(struct otlp *o)
{
	struct otlp_pb *pb = o->pb;
	struct pb rs = { 0 }, req = { 0 };
	int err;

	if (!pb->nspans || o->err)
		return;
	pb_msg(&rs, 1, &pb->res);
	pb_msg(&rs, 2, &pb->spans);
	pb_msg(&req, 1, &rs);
	err = req.err ? req.err
		      : http_post(o->endpoint, "application/x-protobuf", req.p,
				  req.n, 30000, o->cause);
	free(rs.p);
	free(req.p);
	if (err) {
		o->err = err;
		return;
	}
	o->posts++;
	otlp_pb_resource(o); /* the next request starts with the resource */
}

static void otlp_pb_span(struct otlp *o, const struct otlp_open *sp,
			 int64_t end, int unfinished)
{
	struct otlp_pb *pb = o->pb;
	struct pb *b = &pb->tmp, *e = &pb->tmp2;
	uint64_t ta, tb;
	size_t i;

	b->n = 0;
	otlp_trace_words(o, sp->tkey, &ta, &tb);
	pb_id(b, 1, ta, tb, 16);
	pb_id(b, 2, sp->span, 0, 8);
	if (sp->parent)
		pb_id(b, 4, sp->parent, 0, 8);
	pb_str(b, 5, o->chans + sp->name);
	pb_uint(b, 6, 1); /* SPAN_KIND_INTERNAL */
	pb_fixed64(b, 7, (uint64_t)(sp->start + o->unix_off));
	pb_fixed64(b, 8, (uint64_t)(end + o->unix_off));
	if (unfinished)
		pb_attr(b, 9, "propel.unfinished", 'b', NULL, 1);
	if (sp->rebuilt)
		pb_attr(b, 9, "propel.rebuilt", 'b', NULL, 1);
	for (i = sp->ev0; i < o->nevs; i++) {
		const struct otlp_sevent *ev = &o->evs[i];

		e->n = 0;
		pb_fixed64(e, 1, (uint64_t)(ev->ts + o->unix_off));
		pb_str(e, 2, event_kind(ev->kind)->name);
		pb_attr(e, 3, "propel.fields", 's', o->chans + ev->fields, 0);
		pb_msg(b, 11, e);
	}
	for (i = sp->link0; i < o->nlinks; i++) {
		const struct otlp_link *l = &o->links[i];
		uint64_t la, lb;

		e->n = 0;
		otlp_trace_words(o, l->tkey, &la, &lb);
		pb_id(e, 1, la, lb, 16);
		pb_id(e, 2, l->span, 0, 8);
		if (l->chan == OTLP_CALLER) {
			pb_attr(e, 4, "propel.caller", 'b', NULL, 1);
		} else {
			pb_attr(e, 4, "propel.channel", 's',
				o->chans + l->chan, 0);
			pb_attr(e, 4, "propel.bytes", 'i', NULL, l->bytes);
		}
		pb_msg(b, 13, e);
	}
	pb_bytes(b, 15, "", 0); /* status: unset, as the JSON's {} */
	pb_msg(&pb->spans, 2, b);
	if (pb->spans.err || b->err) {
		o->err = -ENOMEM;
		return;
	}
	pb->nspans++;
	o->spans++;
	if (pb->spans.n >= OTLP_PB_MAX)
		otlp_pb_flush(o);
}

static void otlp_thread_end(struct otlp *o)
{
	if (o->have_thread)
		otlp_close(o, 0, o->last_ts, 1);
	otlp_flush_pending(o);
	if (o->have_thread && o->pass == 2 && o->pb)
		otlp_pb_flush(o);
	o->nlinks = 0;
	o->nevs = 0;
	o->nchans = 0;
}

static int send_cmp(const void *a, const void *b)
{
	const struct otlp_send *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

#define GROW(arr, n, cap, err)                                              \
	do {                                                                \
		if ((n) == (cap)) {                                         \
			size_t nc_ = (cap) ? 2 * (cap) : 64;                \
			void *na_ = realloc((arr), nc_ * sizeof(*(arr)));   \
			if (!na_) {                                         \
				(err) = -ENOMEM;                            \
				break;                                      \
			}                                                   \
			(arr) = na_;                                        \
			(cap) = nc_;                                        \
		}                                                           \
	} while (0)

/* keep n bytes of p in the thread's string buffer; its offset, or -1 */
static int64_t otlp_keep(struct otlp *o, const char *p, size_t n)
{
	size_t at = o->nchans;

	if (o->nchans + n + 1 > o->capchans) {
		size_t nc = (o->nchans + n + 1) * 2;
		char *nb = realloc(o->chans, nc);

		if (!nb)
			return -1;
		o->chans = nb;
		o->capchans = nc;
	}
	memcpy(o->chans + at, p, n);
	o->chans[at + n] = 0;
	o->nchans += n + 1;
	return (int64_t)at;
}

/* a non-call event, in the span it happened in */
static int otlp_note(struct otlp *o, const struct replay_event *ev)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m;
	int64_t at;

	if (o->pass != 2)
		return 0;
	m = open_memstream(&text, &len);
	if (!m)
		return -ENOMEM;
	putc('{', m);
	event_json_fields(ev, m);
	putc('}', m);
	if (fclose(m) != 0) {
		free(text);
		return -ENOMEM;
	}
	if (len >= 2 && text[1] == ',') /* {,"a":1} -> {"a":1} */
		memmove(text + 1, text + 2, len - 1), len--;
	at = otlp_keep(o, text, len);
	free(text);
	if (at < 0)
		return -ENOMEM;
	GROW(o->evs, o->nevs, o->capevs, o->err);
	if (o->err)
		return o->err;
	o->evs[o->nevs++] = (struct otlp_sevent){ ev->ts_ns, ev->kind,
						  (size_t)at };
	return 0;
}

/* the span a send or fork (key) happened in, NULL when unknown */
static const struct otlp_send *otlp_find(const struct otlp_send *v, size_t n,
					 int64_t pid, int64_t tid, int64_t ts)
{
	struct otlp_send key = { pid, tid, ts, 0, 0 };

	return n ? bsearch(&key, v, n, sizeof(*v), send_cmp) : NULL;
}

/* pass 1: the span of a send or a fork */
static int otlp_note_span(struct otlp *o, struct otlp_send **v, size_t *n,
			  size_t *cap, struct otlp_send what)
{
	if (o->nopen == 0)
		return 0;
	GROW(*v, *n, *cap, o->err);
	if (o->err)
		return o->err;
	what.span = o->open[o->nopen - 1].span;
	what.tkey = o->open[o->nopen - 1].tkey;
	(*v)[(*n)++] = what;
	return 0;
}

static int otlp_link(struct otlp *o, uint64_t span, uint64_t tkey, size_t chan,
		     int64_t bytes)
{
	GROW(o->links, o->nlinks, o->caplinks, o->err);
	if (o->err)
		return o->err;
	o->links[o->nlinks++] = (struct otlp_link){ span, tkey, chan, bytes };
	return 0;
}

static int otlp_entry(struct otlp *o, const struct replay_event *ev)
{
	const struct otlp_open *caller;
	struct otlp_open *sp;
	int64_t at;

	otlp_close(o, ev->depth, ev->ts_ns, 0); /* ended unseen */
	if (o->nopen == 0)
		otlp_flush_pending(o);
	if (o->nopen == o->capopen) {
		int nc = o->capopen ? 2 * o->capopen : 64;
		struct otlp_open *na = realloc(o->open, nc * sizeof(*na));

		if (!na)
			return o->err = -ENOMEM;
		o->open = na;
		o->capopen = nc;
	}
	caller = o->nopen > 0 ? &o->open[o->nopen - 1] : NULL;
	sp = &o->open[o->nopen];
	sp->span = otlp_span_id(ev->pid, ev->tid, ev->id);
	sp->tkey = o->tkey;
	if (caller && caller->tkey == sp->tkey)
		sp->parent = caller->span;
	else if (o->origin && o->origin_tkey == sp->tkey)
		sp->parent = o->origin;
	else
		sp->parent = 0;
	at = otlp_keep(o, ev->func ? ev->func : "?",
		       strlen(ev->func ? ev->func : "?"));
	if (at < 0)
		return o->err = -ENOMEM;
	sp->name = (size_t)at;
	sp->start = ev->ts_ns;
	sp->depth = ev->depth;
	sp->rebuilt = ev->rebuilt;
	/* an outermost call also takes the events before it that no call
	 * holds (a thread's start) */
	sp->link0 = o->nopen ? o->nlinks : 0;
	sp->ev0 = o->nopen ? o->nevs : 0;
	o->nopen++;
	if (caller && caller->tkey != sp->tkey && o->pass == 2)
		return otlp_link(o, caller->span, caller->tkey, OTLP_CALLER, 0);
	return 0;
}

/* pass 2: a recv links its span to the send's; a recv of a message from
 * a span of its own trace makes that span the parent of the calls of
 * this part of the flow that have none in the thread */
static int otlp_recv(struct otlp *o, const struct replay_event *ev)
{
	const struct otlp_send *s = NULL;
	const char *chan = ev->chan ? ev->chan : "";
	int64_t at;

	if (ev->matched)
		s = otlp_find(o->sends, o->nsends, ev->match_pid,
			      ev->match_tid, ev->match_ts_ns);
	if (s && s->tkey == o->tkey && s->tid != ev->tid) {
		o->origin = s->span;
		o->origin_tkey = s->tkey;
	} else if (ev->arg[1] > 0) { /* a message: the thread's part ends */
		o->origin = 0;
	}
	if (!s)
		return 0;
	at = otlp_keep(o, chan, strlen(chan));
	if (at < 0)
		return o->err = -ENOMEM;
	return otlp_link(o, s->span, s->tkey, (size_t)at, ev->arg[1]);
}

static int otlp_event(const struct replay_event *ev, void *arg)
{
	struct otlp *o = arg;
	uint32_t flow = flow_map_step(o->eo->map, &o->fw, ev);

	if (!export_keep(o->eo, ev)) /* --flow: another flow's event */
		return 0;
	o->tkey = flow == FLOW_MAP_NONE ? (uint64_t)ev->pid : OTLP_FLOW | flow;
	if (!o->have_thread || ev->pid != o->pid || ev->tid != o->tid) {
		const struct otlp_send *f;

		otlp_thread_end(o);
		o->pid = ev->pid;
		o->tid = ev->tid;
		o->have_thread = 1;
		f = ev->tid == ev->pid ? otlp_find(o->forks, o->nforks, ev->pid,
						   0, 0)
				       : NULL;
		o->origin = f ? f->span : 0;
		o->origin_tkey = f ? f->tkey : 0;
		if (o->pass == 2)
			otlp_resource(o);
	}
	o->last_ts = ev->ts_ns;
	if (ev->kind != SK_ENTRY && ev->kind != SK_EXIT &&
	    (o->err = otlp_note(o, ev)))
		return o->err;
	switch (ev->kind) {
	case SK_ENTRY:
		if (otlp_entry(o, ev))
			return o->err;
		break;
	case SK_EXIT:
		otlp_close(o, ev->depth, ev->ts_ns, 0);
		break;
	case SK_EXEC:
	case SK_LOST:
		otlp_close(o, 0, ev->ts_ns, 1);
		break;
	case SK_SEND:
		if (o->pass == 1 &&
		    otlp_note_span(o, &o->sends, &o->nsends, &o->capsends,
				   (struct otlp_send){ ev->pid, ev->tid,
						       ev->ts_ns, 0, 0 }))
			return o->err;
		break;
	case SK_FORK:
		if (o->pass == 1 && ev->arg[0] > 0 &&
		    otlp_note_span(o, &o->forks, &o->nforks, &o->capforks,
				   (struct otlp_send){ ev->arg[0], 0, 0, 0,
						       0 }))
			return o->err;
		break;
	case SK_RECV:
		if (o->pass == 2 && otlp_recv(o, ev))
			return o->err;
		break;
	}
	return o->err ? o->err : ferror(o->out) ? -EIO : 0;
}

static int otlp_write(struct session *s, const struct export_opts *eo,
		      FILE *out, char **cause)
{
	struct replay_filter all = { 0, 0 }, f = { eo ? eo->pid : 0, 0 };
	struct session_thread *tv = NULL;
	struct otlp o = { .out = out, .eo = eo, .first_res = 1,
			  .cause = cause };
	struct otlp_pb pb = { 0 };
	int64_t t0 = 0;
	size_t nt = 0, i;
	int err;

	err = session_processes(s, &o.pv, &o.np, cause);
	if (!err)
		err = session_threads(s, &tv, &nt, cause);
	if (err)
		goto out;
	for (i = 0; i < nt; i++)
		if (tv[i].first_ns > 0 && (!t0 || tv[i].first_ns < t0))
			t0 = tv[i].first_ns;
	session_threads_free(tv, nt);
	o.seed = otlp_mix(1469598103934665603ull, (uint64_t)t0);
	o.unix_off = export_unix_offset(s);
	/* pass 1: the span of every send, in any process */
	o.pass = 1;
	err = replay_walk(s, &all, otlp_event, &o, cause);
	otlp_thread_end(&o);
	if (err)
		goto out;
	/* (none: a NULL array, which qsort may not be given) */
	if (o.nsends > 1)
		qsort(o.sends, o.nsends, sizeof(*o.sends), send_cmp);
	if (o.nforks > 1)
		qsort(o.forks, o.nforks, sizeof(*o.forks), send_cmp);
	/* pass 2: write, or post */
	o.pass = 2;
	o.have_thread = 0;
	o.nopen = 0;
	if (eo && eo->endpoint) {
		o.pb = &pb;
		o.endpoint = eo->endpoint;
	} else {
		fputs("{\"resourceSpans\":[", out);
	}
	err = replay_walk(s, &f, otlp_event, &o, cause);
	if (!err) {
		otlp_thread_end(&o);
		err = o.err;
	}
	if (err)
		goto out;
	if (o.pb)
		fprintf(out, "posted %llu spans in %llu requests to %s\n",
			o.spans, o.posts, o.endpoint);
	else
		fputs(o.first_res ? "]}\n" : "]}]}\n]}\n", out);
	if (ferror(out))
		err = -EIO;
out:
	if (err == -ENOMEM)
		propel_cause(cause, err, "out of memory");
	else if (err == -EIO && cause && !*cause)
		propel_cause(cause, err, "write error");
	free(o.sends);
	free(o.forks);
	free(o.open);
	free(o.links);
	free(o.evs);
	free(o.chans);
	free(pb.res.p);
	free(pb.spans.p);
	free(pb.tmp.p);
	free(pb.tmp2.p);
	session_processes_free(o.pv, o.np);
	return err;
}

const struct export_format export_otlp_format = {
	.name = "otlp",
	.summary = "OTLP/JSON (resourceSpans) for an OpenTelemetry Collector, "
		   "Jaeger or Tempo: a trace per flow, a span per call, "
		   "messages as links",
	.takes = EXPORT_PID | EXPORT_ENDPOINT | EXPORT_FLOW,
	.flows = 1,
	.write = otlp_write,
};
