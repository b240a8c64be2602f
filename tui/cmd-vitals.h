/*
 * tui/cmd-vitals.h - what `propel vitals` (tui/cmd-vitals.c) shares with its
 * view (tui/view-vitals.c): turning a stored history into the epochs the
 * rules (analysis/vitals-rules.h) read, running them, and the `tui` verb.
 */
#ifndef PROPEL_TUI_CMD_VITALS_H
#define PROPEL_TUI_CMD_VITALS_H

#include <stddef.h>

#include "analysis/vitals-rules.h"
#include "engine/vitals-store.h"

/* Epochs for the rules from a loaded history; 0 or -ENOMEM. */
int cmd_vitals_rules_epochs(const struct vitals_hist *h,
			    struct vitals_rules_epoch **out);
/* Run the rules over a history; *f is malloc'd.  0 or -ENOMEM. */
int cmd_vitals_flags(const struct vitals_hist *h, struct vitals_rules_flag **f,
		     size_t *nf);
/* `propel vitals tui [--live] [DB]` (tui/view-vitals.c). */
int cmd_vitals_tui(int argc, char **argv);

/*
 * record|attach --vitals[=all] (engine/vitals-trace.h): check the option's
 * value (NULL or "all"; else one line and -EINVAL), start the collectors
 * beside the trace of db and say in one line what runs and what does not.
 * *vt is NULL when nothing could run; the trace records either way.
 */
struct vitals_trace;
int cmd_vitals_trace_begin(const char *what, const char *arg, const char *db,
			   int follow, struct vitals_trace **vt);
/* --follow: add the processes traced so far on every host that shares
 * this kernel (this one, network namespaces: engine/follow.h
 * follow_each_host); a host on another kernel is said once, in one line
 * (what: "record", "attach"), and not covered. */
struct follow;
void cmd_vitals_trace_follow(const char *what, struct vitals_trace *vt,
			     const struct follow *fl);
/* After capture_end: store into db (one line on failure), free vt. */
void cmd_vitals_trace_end(const char *what, struct vitals_trace *vt,
			  const char *db);

#endif
