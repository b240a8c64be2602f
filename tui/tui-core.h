/*
 * tui/tui-core.h - what the TUI core (tui/tui.c) offers the trace,
 * source and threads views beyond tui/view.h: the reconstruction, the
 * cursor, and source locations.  Views written against view.h alone (e.g.
 * vitals) need none of this.
 */
#ifndef PROPEL_TUI_TUI_CORE_H
#define PROPEL_TUI_TUI_CORE_H

#include <stdint.h>

#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "tui/view.h"

struct recon *tui_recon(struct view *v);
struct cursor *tui_cursor(struct view *v);

/* 1 when the trace pane shows all threads interleaved by time */
int tui_interleaved(struct view *v);

/*
 * Entry index of the frame event (t, idx) is in: the cursor's frame
 * (cursor_frame: the caller's when the cursor sits at a call) when (t, idx)
 * is the cursor's position, else recon_frame().  -1 outside every frame.
 */
int64_t tui_frame(struct view *v, int t, int64_t idx);

/*
 * Source location of event (t, idx): for a signal, the faulting line of its
 * pc (symbolized at ingest with its module's load bias), else what
 * recon_event_site says.
 * *file is malloc'd.  *path (malloc'd, may be NULL) is the file found on
 * disk through the source path (`:directory DIR`), NULL when not found.
 */
int tui_locate(struct view *v, int t, int64_t idx, char **file, int *line,
	       char **path);

/* Disassemble around the event's address when there is no source: lines
 * "addr: mnemonic operands" into out (malloc'd array of malloc'd strings),
 * *cur = index of the line of the address.  Count, or -errno with *cause. */
int tui_disasm(struct view *v, int t, int64_t idx, char ***out, int *cur,
	       char **cause);

/* Folding (UI state, apart from the trace): 1 when the entry at (t, idx)
 * is folded; fold (on = 1) or unfold every entry in [from, to]. */
int tui_folded(struct view *v, int t, int64_t idx);
void tui_fold(struct view *v, int t, int64_t from, int64_t to, int on);

/* one line describing an event for the trace and threads panes
 * (tui/tui-text.c) */
void tui_describe(struct view *v, int t, int64_t idx, char *buf, int size);
/* the same for the event e (recon_get(t, idx)) the caller has already */
void tui_describe_ev(struct view *v, int t, int64_t idx,
		     const struct recon_ev *e, char *buf, int size);
/* a duration in uftrace's units ("2.137 us"); a time as the status line
 * shows it, from the session's first event ("+2.137 ms"); and back (a
 * number with ns, us, ms or s, or seconds alone; a leading '+' allowed):
 * 0 and *ns, or -EINVAL; *half (if not NULL): half the unit of its last
 * digit in ns, the rounding the status line's figure hides ("+2.137 ms":
 * 500) */
void tui_time(struct view *v, int64_t ts, char *buf, int size);
int tui_parse_time(const char *text, int64_t *ns, int64_t *half);
const char *tui_signame(int signo);
/* line with its tabs expanded to 8 columns (malloc'd; NULL: ENOMEM) */
char *tui_expand_tabs(const char *line);

/* the search pattern while it has hits ("" none), and whether the event
 * (t, idx) is one of them (tui/tui-search.c) */
const char *tui_search_pattern(struct view *v);
int tui_search_is_hit(struct view *v, int t, int64_t idx);

#endif
