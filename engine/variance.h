/*
 * engine/variance.h - `propel report --variance` (variance.c): a
 * session's flows grouped by path, their CV and tail, and the functions
 * ranked by the share of a problem group's variance they explain, beside
 * what `attach --adaptive` traced.  Called by tui/cmd-report.c, and by
 * the TUI's variance pane (tui/view-variance.c) through variance_view.
 */
#ifndef PROPEL_ENGINE_VARIANCE_H
#define PROPEL_ENGINE_VARIANCE_H

/* Print db's report to stdout, text or JSON: 0, or -errno with *cause. */
int variance_report(const char *db, int json, char **cause);

struct session;

/* The same analysis, kept for a browser (plain rows, names as text). */
struct variance_view_group {
	const char *path;
	size_t flows;
	double cv;
	int64_t p95_ns;
	int problem;
};

struct variance_view_func {
	const char *func;
	double share;	       /* of its group's variance */
	int64_t calls;
	size_t group;	       /* index in g */
	int64_t patched_at_ns; /* attach --adaptive first traced it; -1 */
};

struct variance_view_priv;

struct variance_view {
	struct variance_view_group *g;
	size_t ng;
	struct variance_view_func *f; /* by share, the largest first */
	size_t nf;
	size_t patched; /* attach --adaptive: functions it ever traced */
	int64_t total;	/* of the traced modules' functions; 0 unknown */
	/* call records dated between two stamps (--timing=sampled): a
	 * function that computes long without a call shares its time with
	 * its neighbours', so its share is not to be trusted */
	int64_t estimated, events;
	struct variance_view_priv *priv;
};

/* 0 and *out (release it in any case), or -errno with *cause. */
int variance_view_load(struct session *s, struct variance_view *out,
		       char **cause);
/* Where f[fi] made its group slow: among the group's flows holding a
 * call of it, the slowest; its longest call there: its entry event's id, the flow's number (report --flows)
 * and its duration.  0, or -ENOENT. */
int variance_view_slow(const struct variance_view *vv, size_t fi,
		       int64_t *event, size_t *flow, int64_t *dur_ns);
void variance_view_release(struct variance_view *vv);
/* One line on how far the times can be trusted (NULL: every record has
 * its own stamp), for the report and the pane (a static buffer). */
const char *variance_timing_note(const struct variance_view *vv);

#endif
