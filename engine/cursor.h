/*
 * engine/cursor.h - the position in a reconstructed trace and the moves
 * the TUI and the command line share (gdb's names and their reverse twins).
 *
 * The cursor sits on one event: (thread index, index in that thread's
 * array) of a struct recon; on an entry it may sit *at the call* (before
 * the entry, in the caller, at the call line: where reverse-finish lands,
 * as in gdb).  Moves, with F = the frame the cursor is in (cursor_frame():
 * the event's frame, recon_frame(), or at a call the caller's):
 *   step      the next event of the thread; at a send whose recv is known,
 *             the recv in the receiving thread (a logical thread, TraceBack
 *             §5.1); at a call, into it (its entry).
 *   next      at an entry: its exit (steps over the call); else the next
 *             event of the thread.
 *   finish    the exit of F (at an exit: of the caller's frame).
 *   continue  the next event, in global time order over all threads, that
 *             is a signal or an entry of a `break` function; else the last
 *             event of the thread.
 *   reverse-step      the previous event; at a matched recv, its send.
 *   reverse-next      at an exit: its entry; else the previous event.
 *   reverse-finish    the call of F, seen from F's caller: at F's entry,
 *                     at the call; the cursor's frame goes one level out
 *                     (the caller is named, the location is the call line).
 *   reverse-continue  the previous stop in global time order; else the
 *                     first event of the thread.
 * Every forward move is recorded; its reverse twin, made from where the
 * forward move landed, returns exactly to where it started (the record
 * disambiguates where two paths meet, e.g. next from the last event of a
 * call and next over that call both reach its exit).  Any other move
 * forgets the record.
 *
 * Errors: 0, or -ERANGE with *cause ("end of trace", "outermost frame")
 * when a move cannot go anywhere; the cursor then stays put.
 */
#ifndef PROPEL_ENGINE_CURSOR_H
#define PROPEL_ENGINE_CURSOR_H

#include <stdint.h>

#include "engine/reconstruct.h"

enum cursor_move {
	CURSOR_STEP,
	CURSOR_NEXT,
	CURSOR_FINISH,
	CURSOR_CONTINUE,
	CURSOR_RSTEP,
	CURSOR_RNEXT,
	CURSOR_RFINISH,
	CURSOR_RCONTINUE,
	CURSOR_NMOVES
};

struct cursor;

struct cursor *cursor_new(struct recon *r);
void cursor_free(struct cursor *c);
struct recon *cursor_recon(struct cursor *c);

/* gdb's name of a move ("reverse-step") and back; -1 for an unknown name.
 * Accepts gdb's abbreviations (s, n, fin, c, rs, rn, rc, ...). */
const char *cursor_move_name(enum cursor_move m);
int cursor_move_parse(const char *name);
/* The reverse twin of a move. */
enum cursor_move cursor_move_twin(enum cursor_move m);

int cursor_move(struct cursor *c, enum cursor_move m, char **cause);

/* Where the cursor is. */
int cursor_thread(const struct cursor *c);
int64_t cursor_index(const struct cursor *c);
const struct recon_ev *cursor_event(const struct cursor *c);
int64_t cursor_event_id(const struct cursor *c);
/* 1 when the cursor sits at the call of the entry it is on. */
int cursor_at_call(const struct cursor *c);
/* Entry index of the frame the cursor is in (the caller's at a call);
 * -1 outside every frame. */
int64_t cursor_frame(const struct cursor *c);

/* Jumps (forget the move record). */
int cursor_goto(struct cursor *c, int thread, int64_t idx, char **cause);
int cursor_goto_event(struct cursor *c, int64_t id, char **cause);
/* Last event at or before ts in the current thread (else in any thread). */
int cursor_goto_ts(struct cursor *c, int64_t ts_ns, char **cause);
/* A time typed to a precision ("+2.137 ms" is [2.1365, 2.1375) ms): the
 * first event in [lo, hi), in the current thread if it has one there, else
 * the earliest of any thread's; without one, cursor_goto_ts(hi - 1). */
int cursor_goto_ts_range(struct cursor *c, int64_t lo, int64_t hi,
			 char **cause);
/* Switch to thread N (1-based as listed, or a tid), at the cursor's time. */
int cursor_switch_thread(struct cursor *c, long n, char **cause);

/* Where a session opens: the faulting event of a crash, the latest event
 * of a hang snapshot, else the first event of the first thread. */
void cursor_home(struct cursor *c);

/* Breakpoints by function name (exact), for continue. */
int cursor_break_add(struct cursor *c, const char *func, char **cause);
void cursor_break_clear(struct cursor *c);
int cursor_break_count(const struct cursor *c);

/*
 * Backtrace at the cursor (from cursor_frame): entry indices of the frames,
 * innermost first, at most max; returns how many there are in all (may
 * exceed max).
 */
int cursor_backtrace(const struct cursor *c, int64_t *frames, int max);

#endif
