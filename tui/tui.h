/*
 * tui/tui.h - the TUI core (tui/tui.c) as its two neighbours see it: the
 * commands that open it (tui/cmd-tui.c: a stored session; tui/cmd-top.c:
 * the live console on this node's processes) and the `:` prompt
 * (tui/prompt.c), whose commands act on the core's state.  Views never
 * include this header: they see the core through tui/view.h (and the
 * trace views through tui/tui-core.h).
 *
 * The core runs in one of two modes, chosen when it opens:
 *   TUI_SESSION  a stored session: trace, source, threads, flows, ...;
 *                the cursor steps through it (tui_session_main)
 *   TUI_LIVE     this node now: the process view (tui/view-procs.c),
 *                refreshed every TUI_TICK_MS (tui_live_main)
 * The views of each mode are listed in one table (view_table in tui.c).
 */
#ifndef PROPEL_TUI_TUI_H
#define PROPEL_TUI_TUI_H

#include <stdint.h>

#include "tui/view.h"

struct session_proc;

#define TUI_MAXVIEWS 8
#define TUI_TICK_MS 1000 /* live mode: the views' tick (refresh) period */
#define TUI_FIRST_TICK_MS 250 /* ... and the first, soon after the first
			       * screen (a rate needs two samples) */

enum tui_mode { TUI_SESSION = 1, TUI_LIVE = 2 };

enum { SLOT_AUX, SLOT_TRACE, SLOT_THREADS, NSLOTS };

struct tui {
	enum tui_mode mode;
	struct session *s;  /* TUI_SESSION only (NULL when live) */
	struct recon *r;    /* TUI_SESSION only */
	struct cursor *c;   /* TUI_SESSION only */
	struct callvals *cv; /* --args' values (engine/callvals.h); NULL none */
	struct view views[TUI_MAXVIEWS];
	int nviews;
	int slot[NSLOTS]; /* index into views; live mode: slot[0] only */
	int focus;        /* slot */
	int interleave;
	int help;
	int quit;
	char srcpath[1024];
	char search[128];
	int bench; /* PROPEL_TUI_BENCH=N: timings to stderr; N>1: N random
		    * moves with redraws, then quit (tests/bench-tui.sh);
		    * PROPEL_TUI_BENCH_LOG=1 adds a line per move and per
		    * pane drawn (CPU time, chunks decoded) */
	/* folding, newest last: the latest op that covers an entry says
	 * whether it is folded (none: unfolded) */
	struct tui_fold_op {
		int t, on;
		int64_t from, to;
	} *folds;
	int nfolds, capfolds;
	uint64_t damage_seen; /* chunk_store_message count shown */
	struct tui_live *live; /* TUI_LIVE: the capture run, once attached */
	struct node_vitals *nodev; /* TUI_LIVE: the kernel's view of each
				    * process (engine/node-vitals.h) */
	/* the session's processes (commands, hosts), for names */
	struct session_proc *procs;
	size_t nprocs;
	/* the search (tui/tui-search.c): its pattern and every hit, by
	 * thread then index (at most TUI_SEARCH_MAX; capped says more) */
	struct tui_find {
		char pat[128];
		struct tui_hit {
			int t;
			int64_t i;
		} *hit;
		int64_t n, cap;
		int capped;
	} find;
	/* frame commands (tui/prompt.c): the position `up`, `down` and
	 * `frame N` count from, the level shown, and where that left the
	 * cursor (a move elsewhere starts again from the cursor) */
	int fr_t, fr_level, fr_at_t;
	int64_t fr_i, fr_at_i;
	/* a box over the panes until the next key (`bt`): title and text */
	char popup_title[64];
	char *popup;
	/* where the panes were drawn (mouse clicks) */
	struct screen_rect pane[NSLOTS];
};

#define TUI_SEARCH_MAX 1000000

/* tui/tui-search.c: `/`, `\` (backward), `>` and `<` (next, previous).
 * Set the pattern and go to its first hit from the cursor in direction
 * dir (1 forward, -1 backward); "" repeats the last pattern. */
void tui_search_start(struct tui *t, const char *pat, int dir);
void tui_search_next(struct tui *t, int dir);
void tui_search_free(struct tui *t);

/* tui/tui-text.c: the command of pid (NULL when unknown), its host */
const char *tui_proc_command(struct tui *t, int pid, const char **host);

/* `propel tui [DB]`: the TUI on the session at path; the exit status. */
int tui_session_main(const char *path);
/* The same, opened as the live console opens a run it stopped: the most
 * suspicious flow selected and the cursor at its end (a crash: at the
 * fault, as always). */
int tui_session_open(const char *path, int best_flow);

/* `propel` (on a terminal) and `propel top`: the live console; exit status. */
int tui_live_main(void);

/* ---- for tui/prompt.c ---- */

/* Run one `:` line (tokenized in place): a command of cmd_table
 * (tui/prompt.c), a cursor move, or a view's command; errors go to the
 * message line. */
void prompt_run(struct tui *t, char *line);

/* Tab at the prompt completes commands, views and function names of t
 * (NULL: none); the core calls it once the screen is up. */
void prompt_attach(struct tui *t);

/* `:interleave`, also the trace's key `a` (tui/prompt.c) */
int cmd_interleave_exec(struct tui *t, int argc, char **argv, char **cause);

/* Index of the view named name, or -1. */
int tui_find_view(struct tui *t, const char *name);
/* Tell every view the cursor moved. */
void tui_moved(struct tui *t);
/* After a move from process pid0: gdb's "[Switching to process ...]" on
 * the message line when the cursor is in another process now. */
void tui_moved_from(struct tui *t, int pid0);
/* A cursor move, its failure on the message line. */
void tui_do_move(struct tui *t, int move);

/*
 * Attach from the console (keys `a` and `A` of tui/view-procs.c): start a
 * capture run on pid (follow: propagate to its peers, `--follow`) through
 * tui/live.h, and show the live pane.  0, or -errno with *cause (one line
 * for the status line).
 */
int tui_attach(struct tui *t, int pid, const char *comm, int follow,
	       char **cause);

#endif
