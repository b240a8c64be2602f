/*
 * engine/event.c - see engine/event.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include "engine/callvals.h"
#include "engine/event.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/json.h"

static void event_where(const struct replay_event *ev, FILE *out)
{
	if (!ev->file)
		return;
	fputs(",\"file\":", out);
	json_str(out, ev->file);
	fprintf(out, ",\"line\":%d", ev->line);
}

static void event_call(const struct replay_event *ev, FILE *out)
{
	fputs(",\"func\":", out);
	json_str(out, ev->func ? ev->func : "?");
	fprintf(out, ",\"depth\":%d", ev->depth);
	if (ev->kind == SK_ENTRY)
		event_where(ev, out); /* the call site */
	if (ev->rebuilt) /* its entry record was lost: ingest made it */
		fputs(",\"rebuilt\":true", out);
	if (ev->has_arg[2] && /* the value a mapping directive names */
	    (ev->kind == SK_ENTRY || !callvals_has(ev->cv, ev->func_id)))
		fprintf(out, ",\"value\":%" PRId64, ev->arg[2]);
	if (ev->kind == SK_ENTRY) /* --args */
		callvals_json_args(ev->cv, ev->func_id, ev->id, out);
	else if (ev->has_arg[2])
		callvals_json_ret(ev->cv, ev->func_id, ev->arg[2], out);
}

static void event_signal(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"signo\":%" PRId64 ",\"addr\":%" PRIu64, ev->arg[0],
		(uint64_t)ev->arg[1]);
	event_where(ev, out); /* where it struck */
}

static void event_comm(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"fd\":%" PRId64 ",\"bytes\":%" PRId64, ev->arg[0],
		ev->arg[1]);
	if (ev->peer) {
		fputs(",\"peer\":", out);
		json_str(out, ev->peer);
	}
	if (ev->chan) {
		fputs(",\"chan\":", out);
		json_str(out, ev->chan);
	}
	if (ev->has_offset)
		fprintf(out, ",\"offset\":%" PRId64, ev->offset);
	if (ev->matched)
		fprintf(out,
			",\"match\":{\"pid\":%" PRId64 ",\"tid\":%" PRId64
			",\"ts_ns\":%" PRId64 "}",
			ev->match_pid, ev->match_tid, ev->match_ts_ns);
}

static void event_fork(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"child\":%" PRId64, ev->arg[0]);
	if (ev->has_arg[1] && ev->arg[1] == 1)
		fputs(",\"vfork\":true", out);
}

static void event_process_exit(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"status\":%" PRId64, ev->arg[0]);
}

static void event_lost(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"count\":%" PRId64, ev->arg[0]);
}

static void event_offcpu(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"dur_ns\":%" PRId64 ",\"reason\":", ev->dur_ns);
	json_str(out, ev->reason ? ev->reason : "other");
	if (ev->op) {
		fputs(",\"syscall\":", out);
		json_str(out, ev->op);
	}
	if (ev->fd >= 0)
		fprintf(out, ",\"fd\":%d", ev->fd);
	fprintf(out, ",\"runq_ns\":%" PRId64, ev->runq_ns);
}

static void event_ksignal(const struct replay_event *ev, FILE *out)
{
	fprintf(out, ",\"signo\":%" PRId64 ",\"code\":%" PRId64 ",\"handled\":%s",
		ev->arg[0], ev->arg[1], ev->arg[2] ? "true" : "false");
}

static void event_exec(const struct replay_event *ev, FILE *out)
{
	if (ev->program) {
		fputs(",\"program\":", out);
		json_str(out, ev->program);
	}
}

static void event_none(const struct replay_event *ev, FILE *out)
{
	(void)ev;
	(void)out;
}

static const struct event_kind event_kinds[] = {
	[SK_ENTRY] = { "entry", event_call },
	[SK_EXIT] = { "exit", event_call },
	[SK_SIGNAL] = { "signal", event_signal },
	[SK_THREAD_START] = { "thread_start", event_none },
	[SK_THREAD_EXIT] = { "thread_exit", event_none },
	[SK_FORK] = { "fork", event_fork },
	[SK_EXEC] = { "exec", event_exec },
	[SK_PROCESS_EXIT] = { "process_exit", event_process_exit },
	[SK_SEND] = { "send", event_comm },
	[SK_RECV] = { "recv", event_comm },
	[SK_LOST] = { "lost", event_lost },
	[SK_OFFCPU] = { "offcpu", event_offcpu },
	[SK_KSIGNAL] = { "ksignal", event_ksignal },
};

/* The table is indexed by share/kinds.h's enum and reaches its last
 * kind: one added there without a name here fails the build. */
_Static_assert(sizeof(event_kinds) / sizeof(event_kinds[0]) ==
		       PROPEL_KIND_COUNT,
	       "one name per event kind");

static const struct event_kind event_unknown = { "unknown", event_none };

const struct event_kind *event_kind(int kind)
{
	if (kind < 0 || (size_t)kind >= sizeof(event_kinds) /
						 sizeof(event_kinds[0]) ||
	    !event_kinds[kind].name)
		return &event_unknown;
	return &event_kinds[kind];
}

const char *session_kind_name(int kind)
{
	const struct event_kind *k = event_kind(kind);

	return k == &event_unknown ? NULL : k->name;
}

void event_json_fields(const struct replay_event *ev, FILE *out)
{
	event_kind(ev->kind)->json(ev, out);
}
