/*
 * engine/run.h - one capture run: the options of `record` and `attach`
 * in one struct, and the run's life, start -> poll... -> stop, with a
 * local backend (this host: the agent preloaded into CMD, or injected
 * into live processes, execs followed by inject/tracer.c, the rings
 * drained by share/drain.c) and a --follow backend (engine/follow.c: one
 * propeld per host, which injects the peers).
 *
 *   run_start:  session directory made (engine/capture.c), drain or
 *               propelds started, --vitals collectors started, the
 *               targets injected or CMD forked       --> RUNNING
 *   run_poll:   RUNNING --(CMD and its traced descendants gone; the
 *               targets gone; --duration reached)--> ENDED (returns 0)
 *   run_stop:   RUNNING|ENDED --every agent switched off (the detach-all
 *               of inject/tracer.h), the drain and the collectors
 *               stopped, the session stored into opts->db with its
 *               --start and directives--> freed
 *
 * Callers: tui/cmd-record.c and tui/cmd-attach.c (a loop of run_poll
 * until it returns 0 or their signal handler sets a flag), and the live
 * console, which calls run_poll from its curses loop with a small ms.
 * Nothing here installs a signal handler: the caller decides when to
 * stop.  Messages go to stderr in one line each ("propel: ..."), as the
 * commands print them; a caller that owns the terminal redirects fd 2.
 */
#ifndef PROPEL_ENGINE_RUN_H
#define PROPEL_ENGINE_RUN_H

#include <stdint.h>
#include <sys/types.h>

#include "engine/directives.h"

enum run_kind {
	RUN_RECORD, /* run CMD with the agent preloaded */
	RUN_ATTACH, /* inject the agent into live processes */
};

struct run_opts {
	enum run_kind kind;
	const char *verb;          /* for messages: "record", "attach" */
	const char *db;            /* session file (PROPEL_SESSION_DEFAULT) */
	int follow;                /* --follow: propeld injects the peers */
	int follow_stdio;          /* --follow-stdio: propel's own stdio too */
	double duration;           /* attach: S seconds after the injection */
	int full;                  /* --mode: 1 full (drained), 0 flight */
	unsigned long ring_kb;     /* --buffer-size KiB (0: the default) */
	int libc;                  /* --libc */
	int exact;                 /* --timing: 1 exact, 0 sampled */
	int budget;                /* the agent's cost budget (attach; --all:
				    * 0; record: --budget or --leaf-insns) */
	unsigned budget_pct;       /* --budget PCT (inject/agent/budget.c) */
	unsigned leaf_insns;       /* --leaf-insns N: the static rule's */
	int budget_given;          /* --budget or --leaf-insns was given */
	int all;                   /* --all */
	int adaptive;              /* --adaptive (inject/agent/adaptive.c) */
	const char *start;         /* --start FUNC, or NULL */
	struct directives dirs;    /* --directive, --directives */
	int vitals;                /* --vitals[=all] */
	const char *vitals_scope;  /* NULL, or "all" */
	pid_t *pids;               /* attach: the targets (malloc'd) */
	int npids;
	int argc;                  /* record: CMD ARG...; attach: the pids */
	char **argv;               /*   as given (kept in the session) */
};

/* The defaults of kind's command (record: full, exact; attach: flight,
 * sampled; db ./propel.db). */
void run_opts_init(struct run_opts *o, enum run_kind kind);
/* Free what the options hold (pids, directives). */
void run_opts_release(struct run_opts *o);

/* --mode is share/drain.h's drain_mode_parse.  --timing exact|sampled:
 * 1, 0; --vitals' scope NULL|all: 0.  -1 when the value is none of
 * those. */
int run_timing_parse(const char *s);
int run_vitals_parse(const char *s);

/* A run's figures so far, for a status line or a progress message. */
struct run_progress {
	int attached;        /* targets injected at run_start (attach) */
	int processes;       /* processes traced (follow: reached, every host) */
	int hosts;           /* hosts reached (1 without --follow) */
	int threads;         /* threads with a ring (hosts sharing this kernel) */
	uint64_t events;     /* records committed (whole sub-buffers: a floor) */
	uint64_t drops;      /* records the agents dropped (full rings) */
	int flows;           /* flows complete: -1, not counted while running */
	double elapsed_s;    /* since run_start returned */
	pid_t child;         /* record: CMD's pid while it runs, else 0 */
	int cmd_done;        /* record: CMD has ended; its wait status: */
	int cmd_status;
	pid_t left_pid;      /* record: after CMD, one traced descendant left */
	double left_s;       /* record: seconds waited for them so far */
};

struct run;

/*
 * Start the run o describes (o is the caller's until run_stop; it is
 * not copied).  A target that cannot be injected is said in one line and
 * the others go on; none at all is an error.  0 with *out, or -errno
 * once the error is said in one line (nothing left to free).
 */
int run_start(struct run_opts *o, struct run **out);

/*
 * Serve the run for up to ms milliseconds (0: do what is due and return
 * at once): follow execs, serve propeld's frames, reap CMD's orphans,
 * add new processes to --vitals, and check whether the run has ended.
 * Fills p (may be NULL).  1 while the run goes on; 0 once it has ended
 * by itself (then call run_stop).
 */
int run_poll(struct run *r, int ms, struct run_progress *p);

/* The processes traced so far on this kernel (--follow: every host that
 * shares it), up to max of them into out: how many.  Reads the session
 * directories (a readdir each). */
int run_pids(const struct run *r, pid_t *out, int max);

/* The figures now, without serving (cheap: cached by run_poll). */
void run_progress(const struct run *r, struct run_progress *p);

/*
 * A snapshot of the run so far (the live console's flows while the run
 * goes): every ring of the session directories this machine can read
 * (--follow: the hosts on this kernel; *other gets how many hosts on
 * another kernel were left out) ingested, up to each ring's last commit,
 * into a new session at db, as `propel recover` reads a dead run's.
 * Reads only: the agents and the run go on.  Slow (symbols, every ring):
 * the console calls it in a child process.  0, or -errno with *cause.
 */
int run_snapshot(const struct run *r, const char *db, int *other,
		 char **cause);

/*
 * Stop: switch every agent off, stop the drain and collectors, store
 * the session in o->db (with --vitals' history, --start, directives),
 * free r.  0, or -errno once said in one line (the session directory is
 * kept and named there); -EAGAIN, the session stored, when an attach's
 * detach left an agent not switched off (a "detach PID" line each: its
 * code may still be patched).  A record's CMD still running is not
 * waited for.
 */
int run_stop(struct run *r);

/* Give up without a session (agents switched off, directory removed). */
void run_abort(struct run *r);

#endif
