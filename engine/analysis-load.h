/*
 * engine/analysis-load.h - a session read into the in-memory trace that
 * analysis/ works on (analysis/trace.h): every event through the reader
 * replay uses (engine/replay.c), the matched pairs of table messages and
 * what table processes knows of each process.  Used by tui/cmd-report.c.
 */
#ifndef PROPEL_ENGINE_ANALYSIS_LOAD_H
#define PROPEL_ENGINE_ANALYSIS_LOAD_H

#include "analysis/trace.h"

struct session;

/* 0 and *out (trace_finish done), or -errno with *cause. */
int analysis_load(struct session *s, struct trace **out, char **cause);

#endif
