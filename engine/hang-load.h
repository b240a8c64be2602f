/*
 * engine/hang-load.h - a session's hangs (analysis/hang.h): the channel
 * and stream offset of every send and recv (table comm) joined to the
 * in-memory trace engine/analysis-load.c read, then hang_find.  Used by
 * tui/cmd-report.c (`report --hang`, `--suspects`) and tui/view-flows.c.
 */
#ifndef PROPEL_ENGINE_HANG_LOAD_H
#define PROPEL_ENGINE_HANG_LOAD_H

#include <stdint.h>

#include "analysis/hang.h"
#include "analysis/trace.h"

struct session;

struct hang_load {
	struct hang_input in; /* in.chan: chan below */
	struct hang_comm *comm;
	char **chan;
	struct hang *h;
};

/* 0 and *out filled (release it in any case), or -errno with *cause. */
int hang_load(struct session *s, const struct trace *t, int64_t precision_ns,
	      struct hang_load *out, char **cause);
void hang_load_release(struct hang_load *l);

#endif
