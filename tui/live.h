/*
 * tui/live.h - a capture run driven from the live console (tui/live.c):
 * `a` / `A` on the process view start it (tui_attach in tui/tui.c), the
 * core's loop polls it, the live pane (tui/view-live.c) shows its
 * progress and its flows, `x` stops it into a session the TUI opens.
 *
 *   live_start:  run_start(RUN_ATTACH) on one pid, fd 2 into a log file
 *                beside the session file (both named on screen)  --> RUNNING
 *   live_poll:   run_poll(r, 0), and the flows so far: every LIVE_SNAP_S a
 *                child process ingests the rings into a scratch session
 *                (run_snapshot) and ranks its flows (view_flows_rank);
 *                RUNNING --(the targets gone)--> ENDED
 *   live_stop:   RUNNING|ENDED --run_stop: agents detached, session
 *                stored in db--> STOPPED (db named by live_db)
 *   live_free:   stops a run still going (keeps its session), puts fd 2
 *                back; says where the session and the log are
 */
#ifndef PROPEL_TUI_LIVE_H
#define PROPEL_TUI_LIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "engine/run.h"

#define LIVE_SNAP_S 2.0 /* between two snapshots of the flows */

struct tui_live;

/* One flow of the newest snapshot, best rank first. */
struct live_flow {
	int rank;
	double score;
	long nevents;
	double span_ms;
	char pids[64];
	char func[96];
};

/* Attach to pid (follow: --follow) into a new session file in the
 * current directory.  0 and *out, or -errno with *cause (one line: the
 * run's own message when it refused). */
int live_start(int pid, const char *comm, int follow, struct tui_live **out,
	       char **cause);

/* Serve the run (never blocks); 1 while it goes on, 0 once it ended by
 * itself or was stopped. */
int live_poll(struct tui_live *l);

/* Stop the run and store its session.  0, or -errno with *cause. */
int live_stop(struct tui_live *l, char **cause);

/* Stop (keeping the session) if still running, restore fd 2, free l.
 * say: print where the session and the log are on stderr. */
void live_free(struct tui_live *l, int say);

/* What the live pane shows. */
const char *live_db(const struct tui_live *l);
const char *live_log(const struct tui_live *l);
void live_target(const struct tui_live *l, int *pid, const char **comm,
		 int *follow);
int live_running(const struct tui_live *l);
void live_progress(const struct tui_live *l, struct run_progress *p);
/* The processes traced so far on this kernel (up to max): how many. */
int live_pids(const struct tui_live *l, pid_t *out, int max);
/* The newest snapshot's flows (n of them, *events its events, *age_s
 * since it was taken, *took_s what the last one took; *flows NULL and n
 * -1 before the first); *note: a
 * line to say instead (snapshot under way, failed, hosts left out), or
 * NULL. */
int live_flows(const struct tui_live *l, const struct live_flow **flows,
	       uint64_t *events, double *age_s, double *took_s,
	       const char **note);

#endif
