/*
 * analysis/hang.h - hangs: processes that stopped making progress while
 * their peers wait on them, and the wait-for chains across processes
 * that lead to them (anomaly-diagnosis §2 "deadlock, livelock and
 * starvation", §4.1 "indefinite blocking in system calls", §5.2: a
 * scored blocked writing to a socket whose reader had stopped reading).
 *
 * Called by engine/hang-load.c (which reads the channels of a session's
 * sends and recvs), printed by tui/cmd-report.c (`report --hang`, and the
 * head ranked first by `report --suspects`), drawn by tui/view-flows.c.
 * Pure: no I/O.
 *
 * What a trace says at its end, per thread: its last event, and the
 * innermost call open at it (an entry without exit: the call it is in).
 * A thread *stopped* when it is inside a call and has no event in the
 * last floor_ns of its process's recording: the clock precision, or 1/20
 * of the session when longer.  A process's recording ends at the
 * session's end, or where its tracing was switched off (trace_process
 * stop_ns: each agent is switched off in turn, one after another, 0.7 s
 * apart on a loaded machine, which must not read as a stop: redis
 * switched off first, its clients' later requests unread).  The list of stopped threads is by the time
 * of their last event, earliest first.
 *
 * Wait-for edges, from the channels the engine matched (each send and
 * recv with its channel and stream offset): on a channel C where process
 * A spoke last (its latest event on C is a send) and B, the other traced
 * process on C (the reader of A's latest send when it was matched), has
 * not sent on C since:
 *   unread  B has not read all A sent (A's sent end offset beyond B's
 *           received end; without offsets: A's latest send unmatched):
 *           A's bytes wait on B since the send holding the first unread
 *           byte -- a writer blocked on a full buffer, or bytes queued;
 *   reply   B read it all and has answered on C before (a request/reply
 *           channel), A being the client of C (hang_comm.client; unknown:
 *           the one that spoke first on it), or B never answered on C and
 *           A is known to have opened it (a client's first request on a
 *           new connection): A waits for B's answer since its first send
 *           after B's last one.
 * A wait is an edge A -> B when B stopped making progress (a thread of it
 * stopped, or it crashed or exited) or A's own thread is stuck in the wait
 * (stopped in a write with bytes unread, or after its request) -- bytes a
 * running reader never read are most often a channel it closed -- and
 * when it has lasted (to the end of B's recording) more
 * than floor_ns and more than twice the longest wait of the
 * same kind between the same two programs that did end (a reply that
 * came, bytes that were read: the system's own measure of "slow") -- so
 * a request in flight when a busy session ends is not a hang.
 * A process with several edges follows its oldest.
 *
 * Chains: from each process no edge leads to (a tail), along the edges
 * to the head, the process that waits on nobody; a walk that comes back
 * to a process already on it is a cycle (a deadlock: each process named
 * once, the head is the member that stopped first).  A thread stopped in
 * a send-family call (write, send, sendmsg, ...: a blocking write only
 * waits for a reader) longer than floor_ns and twice the longest
 * call of that function that returned, with no edge out (its peer not
 * traced, its channel not named), is a chain of one.  Chains are ordered
 * by the time their oldest wait began (for a chain of one: its call's
 * entry), earliest first; chain 0's head is the one `--suspects` ranks
 * first, and hang_chain.flow_ev the event whose flow hung: where the
 * member that stopped first stopped (the call it is in, or its last
 * event when it crashed or exited), else the send that began the oldest
 * wait (every member still running).
 */
#ifndef PROPEL_ANALYSIS_HANG_H
#define PROPEL_ANALYSIS_HANG_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace.h"

/* One send or recv whose channel the engine knows. */
struct hang_comm {
	uint32_t ev;	 /* index in trace->ev (a TK_SEND or TK_RECV) */
	uint32_t chan;	 /* index in hang_input.chan */
	int64_t offset;	 /* stream offset of its first byte, -1 none */
	int8_t client;	 /* 1: its process opened the channel (its peer is
			  * the end many channels share: a listening port),
			  * 0: accepted it, -1: unknown */
};

struct hang_input {
	const struct trace *t;
	const struct hang_comm *comm;
	size_t ncomm;
	const char *const *chan; /* channel names ("unix:1-2", "tcp:a>b") */
	size_t nchan;
	int64_t precision_ns;
};

enum hang_wait {
	HANG_NONE = 0,	 /* the head: waits on nobody traced */
	HANG_UNREAD,	 /* its bytes on chan are not read by the next */
	HANG_REPLY,	 /* it waits for the next's answer on chan */
	HANG_BLOCKED,	 /* a chain of one: stopped in a send-family call */
};

/* A thread that stopped inside a call. */
struct hang_thread {
	int64_t pid, tid;
	uint32_t func;	   /* the innermost open call (interned in t) */
	uint32_t entry;	   /* its entry event (index in t->ev) */
	int64_t since_ns;  /* that entry's time */
	int64_t last_ns;   /* the thread's last event */
};

/* How a process ended, or is at the session's end. */
enum hang_state {
	HANG_RUNNING = 0, /* events until near the end */
	HANG_STOPPED,	  /* a thread stopped in a call (thread) */
	HANG_EXITED,	  /* exited (status) */
	HANG_KILLED,	  /* killed by signal (status = signo) */
};

struct hang_member {
	int64_t pid;
	uint32_t name;	   /* interned program name (exe basename), 0 none */
	enum hang_state state;
	int status;
	int64_t state_ns;  /* STOPPED: the call's entry; EXITED/KILLED: the
			    * last event; RUNNING: the last event */
	size_t thread;	   /* STOPPED: index in hang.blocked */
	/* its wait on the next member (the head: HANG_NONE, unless the
	 * chain is a cycle, whose last member waits on the first) */
	enum hang_wait wait;
	uint32_t chan;	   /* index in hang_input.chan, UINT32_MAX none */
	uint32_t wait_ev;  /* the send the wait began with (or the stopped
			    * call's entry for HANG_BLOCKED) */
	int64_t wait_since_ns;
	int64_t unread;	   /* HANG_UNREAD: bytes sent and not read, -1
			    * unknown (no offsets) */
	int blocked_here;  /* its stopped thread is the one that waits
			    * (blocked in the call of this wait) */
	uint32_t stop_ev;  /* where it stopped: STOPPED its call's entry,
			    * EXITED/KILLED its last event; else TRACE_NONE */
	int64_t stop_ns;
};

struct hang_chain {
	struct hang_member *m; /* from the first waiter to the head */
	size_t n;
	int cycle;
	int64_t head_pid;
	int64_t since_ns;      /* the oldest wait's beginning */
	uint32_t flow_ev;      /* the event whose flow hung (above) */
};

struct hang {
	struct hang_thread *blocked; /* by last_ns */
	size_t nblocked;
	struct hang_chain *chain;    /* by since_ns */
	size_t nchain;
	int64_t start_ns, end_ns;    /* the session's first and last event */
	int64_t floor_ns;	     /* the shortest stop or wait counted */
	size_t nedges;
};

/* 0 and *out, or -ENOMEM.  A trace without messages gives chains only
 * from threads stopped in a send-family call. */
int hang_find(const struct hang_input *in, struct hang **out);
void hang_free(struct hang *h);

/* Whether a function name is a send-family call (write, send, ...,
 * glibc's internal aliases too). */
int hang_is_send_call(const char *name);

/*
 * One chain in a sentence, e.g. "startd 812 blocked 11.9 s in write to
 * unix:1-2, read by logd 808, which is in poll() since +3.250 s", into
 * buf (truncated to len).  The buffer.
 */
char *hang_chain_text(const struct hang_input *in, const struct hang *h,
		      const struct hang_chain *c, char *buf, size_t len);


#endif
