/*
 * engine/event.h - one const descriptor per event kind (enum
 * propel_kind, share/kinds.h): its name and how its fields are written as JSON.  Every
 * writer of events -- `propel replay --format=jsonl`, the exporters'
 * arguments (engine/export-*.c) -- goes through it instead of a switch of
 * its own, so a field added to a kind appears everywhere at once.
 *
 * The JSON fields of each kind (README.md, "replay"):
 *   entry, exit   func, depth; an entry's file, line (its call site)
 *   signal        signo, addr; file, line of the pc
 *   send, recv    fd, bytes; peer, chan, offset, match {pid, tid, ts_ns}
 *                 when known
 *   fork          child; vfork: true
 *   process_exit  status
 *   lost          count
 *   offcpu        dur_ns, reason; syscall, fd when known; runq_ns
 *   ksignal       signo, code (si_code), handled
 *                 (these two only when the walk asks for the kernel's)
 */
#ifndef PROPEL_ENGINE_EVENT_H
#define PROPEL_ENGINE_EVENT_H

#include <stdio.h>

struct replay_event;

struct event_kind {
	const char *name; /* session_kind_name's */
	/* the kind's own fields, each written as ,"key":value */
	void (*json)(const struct replay_event *ev, FILE *out);
};

/* The descriptor of kind; one with name "unknown" and no fields for a
 * kind this version does not know. */
const struct event_kind *event_kind(int kind);

/* ,"key":value for each of ev's kind's fields (nothing for some kinds). */
void event_json_fields(const struct replay_event *ev, FILE *out);

#endif
