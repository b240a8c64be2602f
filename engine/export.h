/*
 * engine/export.h - `propel export`: a session written in a format other
 * tools read.  One const descriptor per format (tmux's cmd_entry), listed
 * in one table in engine/export.c; each format is its own file,
 * engine/export-<name>.c, and reads the session only through the engine's
 * queries (engine/session.h, engine/match.h, engine/replay.h).
 *
 *   dot      the communication diagram (engine/export-dot.c): processes
 *            grouped by host, edges for messages, forks and waits (the
 *            self-propelled paper's Figure 5), for graphviz
 *   chrome   the Trace Event Format (engine/export-chrome.c): calls,
 *            events and messages as flows, for Perfetto, chrome://tracing
 *            and speedscope
 *   folded   folded stacks (engine/export-folded.c), for flamegraph.pl,
 *            inferno and speedscope
 *   otlp     OTLP/JSON (engine/export-otlp.c): a span per call, messages
 *            as links, for an OpenTelemetry Collector, Jaeger, Tempo
 *
 * A new format adds a file and a line in the table.  tui/cmd-export.c parses the options, opens the output and
 * calls export_session(); it knows no format.
 */
#ifndef PROPEL_ENGINE_EXPORT_H
#define PROPEL_ENGINE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

struct session;
struct flow_map;
struct flow_map_walk;

/* What an export is asked for besides the format (tui/cmd-export.c). */
struct export_opts {
	int64_t pid;   /* --pid P: only P's threads; 0 = every process */
	int counts;    /* --counts: folded weights are calls, not time */
	int merged;    /* --merged: folded stacks of all processes as one */
	const char *endpoint; /* --otlp-endpoint URL: post, do not write */
	int calls;     /* --calls: dot adds the call graph */
	int flow;      /* --flow N: only the events of flow N (report's
			* numbering, from 1); 0 = all */
	/* set by export_session for --flow and for a format that wants
	 * flows: every event's flow (engine/flow-map.h); with --flow the
	 * formats ask export_keep(), which follows the walk with *walk */
	struct flow_map *map;
	struct flow_map_walk *walk;
};

/* the options a format takes (export_format.takes) */
enum {
	EXPORT_PID = 1,
	EXPORT_COUNTS = 2,
	EXPORT_MERGED = 4,
	EXPORT_ENDPOINT = 8,
	EXPORT_CALLS = 16,
	EXPORT_FLOW = 32,
};

struct export_format {
	const char *name;    /* --format=NAME */
	const char *summary; /* one line for --help */
	unsigned takes;      /* EXPORT_*: the others are refused */
	int flows;	     /* wants export_opts.map whatever the options */
	/* Write the whole session to out: 0, or -errno with *cause (one
	 * line, without "propel: "). */
	int (*write)(struct session *s, const struct export_opts *o,
		     FILE *out, char **cause);
};

extern const struct export_format export_dot_format;
extern const struct export_format export_chrome_format;
extern const struct export_format export_folded_format;
extern const struct export_format export_otlp_format;

/* The format called name, or NULL. */
const struct export_format *export_find(const char *name);
/* The known formats' names, "a, b, c" (a static string). */
const char *export_names(void);

/* Export s in format name to out: 0, -EINVAL for an unknown format, or
 * the format's error; *cause says why. */
int export_session(struct session *s, const char *name,
		   const struct export_opts *o, FILE *out, char **cause);

/*
 * What to add to the session's event times (CLOCK_MONOTONIC) to get Unix
 * time: the meta key realtime_offset_ns when the session has it, else
 * created_ns minus its last event (it is written just after), 0 for a
 * session without events.
 */
int64_t export_unix_offset(struct session *s);

/* 1 when ev, the walk's next event, is exported (no --flow, or it is
 * in the flow).  Called on every event of a walk, in its order. */
struct replay_event;
int export_keep(const struct export_opts *o, const struct replay_event *ev);

#endif
