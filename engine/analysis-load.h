/*
 * engine/analysis-load.h - a session read into the in-memory trace that
 * analysis/ works on (analysis/trace.h): every event through the reader
 * replay uses (engine/replay.c), the matched pairs of table messages and
 * what table processes knows of each process.  Used by tui/cmd-report.c.
 */
#ifndef PROPEL_ENGINE_ANALYSIS_LOAD_H
#define PROPEL_ENGINE_ANALYSIS_LOAD_H

#include <sys/types.h>

#include "analysis/flows.h"
#include "analysis/trace.h"
#include "engine/directives.h"

struct session;

/* 0 and *out (trace_finish done), or -errno with *cause. */
int analysis_load(struct session *s, struct trace **out, char **cause);
/* analysis_load also dropping the functions of also (pid 0 marks,
 * engine/untraced.h untraced_marks_names): sessions compared with each
 * other, each loaded with every one's. */
struct untraced_marks;
int analysis_load_also(struct session *s, const struct untraced_marks *also,
		       struct trace **out, char **cause);

/*
 * Only the events that can cut a thread into flows (analysis/flows.h):
 * every event but the calls, each thread's first event, and the calls
 * fo's start function or directives name -- flows_build on this trace
 * gives every event the flow of the latest kept event of its thread.
 * (*ord)[i] is kept event i's ordinal in its thread as replay_walk gives
 * it (malloc'd).  A session of millions of calls loads in the memory its
 * messages take.  0, or -errno with *cause.
 */
struct flows_opts;
int analysis_load_cuts(struct session *s, const struct flows_opts *fo,
		       struct trace **out, uint32_t **ord, char **cause);

/* analysis_load_cuts keeping every event (the calls too): for the client
 * rule's starts (analysis/flows-start.h), which are calls.  */
int analysis_load_ord(struct session *s, struct trace **out, uint32_t **ord,
		      char **cause);

/*
 * The function whose calls begin flows (analysis/flows.h, --start), as
 * given at trace time (`propel record|attach --start FUNC`) and kept in
 * the session's meta (key flow_start): malloc'd, NULL when none.  The
 * report and the TUI's flows use it unless told otherwise.
 */
char *analysis_flow_start(struct session *s);
/*
 * The flows options a session was recorded with: its flow start and its
 * mapping directives (meta flow_start, directives: engine/directives.h),
 * for flows_build (a->fo).  0, or -errno with *cause; release in any case.
 */
/* The channels of propel's own stdio the session was recorded beside
 * (meta stdio_chans: "pipe:INO ..."), which begin no flow
 * (flows_opts.skip_chan): record and attach keep them unless
 * --follow-stdio (stdio 0); and attach's targets (meta attach_pids), the
 * first of which is the trace's first process (trace->first_pid, set by
 * the loader).  0 or -errno with *cause. */
#define ANALYSIS_MAXSKIP 8
struct analysis_skip {
	char *buf;
	char *chan[ANALYSIS_MAXSKIP];
	size_t n;
};
int analysis_keep_origin(const char *db, const pid_t *pids, int npids,
			 int stdio, char **cause);
int analysis_stdio_chans(struct session *s, struct analysis_skip *k);
void analysis_skip_release(struct analysis_skip *k);

struct analysis_fo {
	struct flows_opts fo;
	char *start;
	struct directives ds;
	struct analysis_skip skip;
};
int analysis_flows_opts(struct session *s, struct analysis_fo *a,
			char **cause);
void analysis_flows_opts_release(struct analysis_fo *a);

/* flows_build with the session's flow start (the default starts when it
 * has none, or no call of it) and directives.  0, -ENOMEM, or -EINVAL
 * (directives that do not parse). */
struct flows;
int analysis_flows(struct session *s, const struct trace *t,
		   struct flows **out);
/* Keep FUNC as the session DB's flow start.  0, or -errno with *cause. */
int analysis_keep_flow_start(const char *db, const char *func, char **cause);

#endif
