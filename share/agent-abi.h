/*
 * share/agent-abi.h - what the injector calls in the agent.
 *
 * The agent (build/libpropel-agent.so) is loaded by LD_PRELOAD (record) or
 * by dlopen from a ptrace-hijacked thread (attach).  It exports only these
 * symbols (and, for LD_PRELOAD, __libc_start_main):
 *
 *   int propel_agent_start(const char *session_dir,
 *                          const struct propel_thread_hint *hints,
 *                          uint32_t nhints, uint32_t flags);
 *       Activate: create the process's map file in session_dir, instrument
 *       the functions on every thread's stack (the hints give each stopped
 *       thread's pc and sp; the agent scans the stack from sp for return
 *       addresses; and the system call each was stopped in, whose bytes
 *       the agent cannot count), install the fault handlers.  Returns 0, -EBUSY when
 *       already active, or another -errno (and the agent stays inactive).
 *       Called with every other thread stopped.
 *
 *   int propel_agent_stop(void);
 *       Deactivate: restore every patched byte, stop recording, mark rings
 *       closed.  Returns the number of patch sites restored, or -errno.
 *       Called with every other thread stopped.  The library stays loaded
 *       (threads may still return through its trampolines).
 *
 *   int propel_agent_status(void);   1 if active, 2 if inert (switched
 *       itself off, its code left patched for a stop: agent.c), 0 if not.
 *
 *   int propel_agent_lease(const char *session_dir);
 *       Start the lease thread ("propel-lease") on the coordinator
 *       (PROPEL_COORD_FILE in the session directory), with the other
 *       threads running (it creates a thread: malloc's locks must be
 *       free).  Called before propel_agent_start with the session
 *       directory -- a propel killed during the start then leaves an agent
 *       whose lease already runs -- and again after it with NULL (the
 *       lease of the start's coordinator, if none runs yet).
 *       Returns 1 if the thread runs, 0 if there is no coordinator to
 *       watch, -EAGAIN (with session_dir) when the agent's lock is held
 *       (the call thread was stopped inside it: the start will say
 *       -EAGAIN too), -errno.  When the coordinator has been gone PROPEL_LEASE_MS,
 *       the agent switches itself off as propel_agent_stop does and leaves
 *       its rings (`propel recover` reads them); a stop ends the thread.
 *
 *   propel_agent_return (code, 128 bytes) and int64_t
 *   propel_agent_result[2] (data): where the injector's calls into the
 *       agent return: the pad stores rax in propel_agent_result[0], 1 in
 *       [1] (the injector polls it and takes the thread there), and after
 *       ~0.4 s (1e9 TSC cycles of yields) makes the rt_sigreturn of the
 *       signal frame the injector built below the call
 *       (inject/hijack-ret.c), so that a thread whose propel is killed
 *       during the call (or kept off its CPU that long) goes on as it
 *       was.  The entry points above keep the call thread's errno as they
 *       found it, so a thread that goes on by itself sees its own errno.
 *       Not a function to call.
 *
 * The coordinator (the propel process that owns the session) writes
 * PROPEL_COORD_FILE in the session directory before any agent starts:
 * "<pid> <start time, clock ticks after boot (/proc/PID/stat field 22)>\n".
 * The start time tells the coordinator from a later process given its pid.
 *
 * For record, the environment carries the session instead:
 *   PROPEL_SESSION_DIR=/dev/shm/propel/<session>   (required)
 *   PROPEL_RING_KB=<size of one thread's ring, KiB> (default 4096)
 *   PROPEL_TRACE_LIBC=1                             (trace inside libc too)
 *   PROPEL_KEEP_ALL=1      (rings never overwrite what the drain has not
 *                           copied out: PROPEL_START_KEEP_ALL)
 *   PROPEL_FOLLOW=1        (propagation requests: PROPEL_START_FOLLOW)
 *   PROPEL_TIMING=exact    (every record stamped: PROPEL_START_EXACT_TIME)
 *
 * Mapping directives (analysis/flows.h): the coordinator (or propeld, for
 * the processes it injects) writes PROPEL_VALUES_FILE in the session
 * directory before any agent starts, one line of comma-separated values
 * to record: "FUNC@N" (argument N at FUNC's entry, 0 = the first, in
 * rdi) or "FUNC@ret" (rax at FUNC's exit), e.g. "enqueue@1,dequeue@ret".
 * Every call of such a function takes the slow path; its ENTRY or EXIT
 * record is followed by one ARG with the value, and its map F line has
 * flag 4 (entry value) or 8 (exit value) (share/ring.h).  "*@args"
 * (record|attach --args) names every function: its ENTRY is followed by
 * six ARGs (rdi, rsi, rdx, rcx, r8, r9; after a directive's one), its EXIT
 * by ARG(rax), and its F line has flags 16 and 8.
 */
#ifndef PROPEL_SHARE_AGENT_ABI_H
#define PROPEL_SHARE_AGENT_ABI_H

#include <stdint.h>

#define PROPEL_AGENT_START_SYM "propel_agent_start"
#define PROPEL_AGENT_STOP_SYM "propel_agent_stop"
#define PROPEL_AGENT_STATUS_SYM "propel_agent_status"
#define PROPEL_AGENT_LEASE_SYM "propel_agent_lease"
#define PROPEL_AGENT_RETURN_SYM "propel_agent_return"
#define PROPEL_AGENT_RESULT_SYM "propel_agent_result"
#define PROPEL_COORD_FILE "coordinator"
#define PROPEL_LEASE_MS 2000 /* coordinator gone this long: the agent stops */
#define PROPEL_SHM_ROOT "/dev/shm/propel"
#define PROPEL_VALUES_FILE "values"

struct propel_thread_hint {
	uint64_t tid;
	uint64_t pc;
	uint64_t sp;
	/* the system call it was stopped in (to be restarted, or done and
	 * not yet back in user code), or -1; its arguments (rdi, rsi, rdx,
	 * r10, r8, r9) */
	int64_t sys;
	uint64_t sys_arg[6];
};

#define PROPEL_START_TRACE_LIBC 1u
/* the coordinator drains the rings (share/ring.h, PROPEL_RING_KEEP_ALL):
 * a full ring drops new records, counted, instead of overwriting */
#define PROPEL_START_KEEP_ALL 2u
/* --follow: at its first send on a channel the agent asks that the peer
 * be traced (a <pid>.<tid>.<chan>.peer file, inject/tracer.h) and waits
 * for the answer at most PROPEL_PROPAGATE_MS */
#define PROPEL_START_FOLLOW 4u
#define PROPEL_PROPAGATE_MS 1000
/* ... or at most this, once the tracer has taken the request (renamed it
 * <...>.peer.taken) and is injecting the peer */
#define PROPEL_PROPAGATE_TAKEN_MS 5000
/* ... or not at all once the session's end began: the tracer makes this
 * file in the directory before it switches the agents off one after
 * another (tracer_detach_all), and answers no request after it (an
 * agent waiting for an answer then held a backend's reply 1 s, past its
 * own switch-off: a fail-stop in the diagnosis) */
#define PROPEL_STOPPING_FILE "stopping"
/* attach: before an exec the agent asks the coordinator to follow it (a
 * <pid>.<tid>.exec file, inject/tracer.h) and waits for the answer at most
 * this, or until the lease sees the coordinator end or the session's end
 * begins.  Its answer is a PTRACE_SEIZE, quick once the coordinator runs;
 * beside a loaded J=2 test run it took up to 224 ms in 500 execs, and the
 * 500 ms this bound used to be lost a child 1 run in ~100 */
#define PROPEL_EXEC_HANDOFF_MS 2000
/* --timing=exact: every record stamped with its own rdtsc; without it a
 * thread stamps one call record in PROPEL_STAMP_EVERY (and every other
 * record: communication, signals, calls into untraced code that may
 * block), the ones between carry the last stamp and ingest dates them
 * between the two (share/record.h) */
#define PROPEL_START_EXACT_TIME 8u
#define PROPEL_STAMP_EVERY 64
/* the cost budget (inject/agent/budget.c; attach's default, --all turns it
 * off): short leaves and short frequent calls are left untraced, each
 * decision a B line of the map.  Its parameters are PROPEL_BUDGET_FILE in
 * the session directory, "PCT LEAF_INSNS" (the budget, % of each thread's
 * time; the static rule's threshold, 0 = none); absent: the defaults. */
#define PROPEL_START_BUDGET 16u
#define PROPEL_BUDGET_FILE "budget"
#define BUDGET_PCT_DEFAULT 5
#define BUDGET_LEAF_DEFAULT 200
/* --adaptive: variance-driven instrumentation (inject/agent/adaptive.c):
 * direct calls are patched only near each request's root, then one level
 * deeper where the requests' latency varies (VAIF) */
#define PROPEL_START_ADAPTIVE 32u
/* set by the injector (inject/inject.c) when the target shares its pid
 * namespace: the coordinator named in the session directory is visible
 * there, so a coordinator found gone means propel (or propeld's lease
 * keeper) ended; the agent refuses to start rather than start without a
 * lease and stay on for ever.  Without it (a target in a pid namespace of
 * its own) a coordinator not found is only invisible: the agent starts,
 * with no lease, and says so. */
#define PROPEL_START_NEED_LEASE 64u
/* record (the agent started by the environment, its rings drained): a
 * thread whose ring is full waits for the drain, PROPEL_DRAIN_WAIT_MS at
 * most each time (then drops as before), instead of dropping at once --
 * the program was started to be recorded whole, and a loaded host's
 * drain falls behind for moments (fib(31) lost 4.6M of 8.7M records at
 * load 10).  An attached process never waits for its trace. */
#define PROPEL_DRAIN_WAIT_MS 2000

/* bits 8..31 of flags: ring size per thread in units of 64 KiB (0: default) */
#define PROPEL_START_RING_SHIFT 8

#endif
