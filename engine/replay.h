/*
 * engine/replay.h - walking a session's events thread by thread, with what
 * every printer of a trace needs already worked out: the function's display
 * name, the entry's call site, whether an entry is a leaf (its exit is the
 * thread's next event) and the duration of each call.
 *
 * Order: threads by their first event (then pid, tid), each thread's events
 * in time order (events.id order, see engine/session.h).  A pid or tid
 * filter of 0 means any.  With filter.kernel, a thread's off-CPU spans
 * (recorded by --vitals) come among its events by their start: a span
 * that starts at the same ns as an event comes after it.
 *
 * Used by tui/cmd-replay.c (text and jsonl) and reusable by the TUI and the
 * exporters.  Reads only; no allocation per event.
 */
#ifndef PROPEL_ENGINE_REPLAY_H
#define PROPEL_ENGINE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct session;

struct replay_event {
	int64_t id;
	int64_t pid, tid, ts_ns;
	int kind;	  /* enum propel_kind, share/kinds.h */
	int depth;
	const char *func; /* demangled name as ingest stored it ("module+0x..."
			   * when no symbol names it); NULL if none */
	const char *file; /* entry: call site file; signal: the file of its pc;
			   * NULL when unknown */
	int line;
	int has_arg[3];
	int64_t arg[3];
	/*
	 * entry: leaf = 1 when the thread's next event is its exit, then
	 * dur_ns is the call's duration; exit: leaf = 1 for the exit of such an
	 * entry (a text printer skips it), dur_ns = time since the matching
	 * entry, -1 when that entry was rebuilt (overwritten in a wrapped ring)
	 * or is not there.
	 */
	int leaf;
	int64_t dur_ns;
	int rebuilt;	  /* made by ingest: an entry of a lost or open frame
			   * (arg0 = 1), an open frame's exit (arg0 = 2) */
	/*
	 * send/recv (engine/session.h, table comm): chan and peer (NULL when
	 * the agent could not name the channel), the stream offset of the
	 * first byte (has_offset), and for a matched recv the send holding
	 * its first byte (matched, match_*).
	 */
	const char *chan, *peer;
	int has_offset, matched;
	int64_t offset;
	int64_t match_pid, match_tid, match_ts_ns;
	/*
	 * offcpu (filter.kernel): dur_ns is the span's length, reason why
	 * ("sleep", "pipe", ...), op the syscall the thread was in (NULL when
	 * none), runq_ns the part of it spent runnable, fd the descriptor
	 * (-1 when none); depth is the thread's depth then (its innermost
	 * open call's + 1).  ksignal: arg[0] signo, arg[1] si_code, arg[2]
	 * 1 when a handler took it.
	 */
	const char *reason, *op;
	int64_t runq_ns;
	int fd;
	const char *program; /* exec: the new image's executable; NULL: unknown */
	/*
	 * --args (engine/callvals.h): entry and exit: func_id (functions.id)
	 * and the session's values reader cv (NULL: none); a leaf entry:
	 * has_ret, ret = its exit's rax (for one-line printers).
	 */
	int64_t func_id;
	struct callvals *cv;
	int has_ret;
	int64_t ret;
};

struct replay_filter {
	int64_t pid, tid; /* 0 = any */
	/* merge the kernel's events of each thread (tables offcpu and
	 * ksignals: kinds SK_OFFCPU, SK_KSIGNAL) into its events, in time
	 * order; 0 = the trace only */
	int kernel;
};

/* Called per event; a non-zero return stops the walk and is returned. */
typedef int (*replay_fn)(const struct replay_event *ev, void *arg);

/* 0, fn's non-zero value, or -EIO with *cause. */
int replay_walk(struct session *s, const struct replay_filter *f,
		replay_fn fn, void *arg, char **cause);


/*
 * uftrace's "simple" demangling: the name without its parameter list and
 * qualifiers ("ns::W::poke(int) const" -> "ns::W::poke"), into buf.
 */
const char *replay_short_name(const char *name, char *buf, size_t size);

#endif
