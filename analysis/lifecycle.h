/*
 * analysis/lifecycle.h - a process's set-up and tear-down, the work no
 * request does: the calls before the program's main is entered
 * (constructors, C++ static initialisation, .init_array) and after it
 * returns or the process begins to exit (.fini_array, atexit handlers,
 * __do_global_dtors_aux, C++ static destructors).
 *
 * Why (README.md, "Set-up and tear-down are no request's"): a flow is the
 * work reachable from a start event, a request's arrival
 * (self-propelled §3), and a suspect score compares profiles of requests
 * (anomaly-diagnosis §4.2): the process's own life around main happens
 * once per process whatever it served, so in the flow that happens to
 * come last (or first) it is a difference no request made -- the
 * destructors run after the last request made that flow outrank a rare
 * one.  flows_build (analysis/flows.c) puts no lifecycle event in a flow
 * and starts none there; one flow per process keeps them (that unit is
 * the process, life and all).
 *
 * The rule, per thread, over each process image (from the thread's first
 * event, or from an exec event, to the next exec):
 *   set-up     the events before the image's first entry of main (in the
 *              thread that enters it: a thread whose image started before
 *              the recording -- attach, a fork child -- has none).
 *   tear-down  the events after the exit point, the first of: main's
 *              return (the exit of main that closes its outermost frame;
 *              of any main when its entry is before the window); the
 *              entry of exit, quick_exit, _exit or _Exit (the call is
 *              the request's decision, what runs inside it is not); the
 *              process_exit event the agent writes as main returns or
 *              exit() begins (unless an entry of those follows it
 *              directly: then that entry).
 * Other threads keep their work: a thread a constructor started, and any
 * thread after the process began to exit (a detached worker may still be
 * answering a request).  A stripped program's main is named only from
 * .dynsym, MiniDebugInfo or a debug file: without, its set-up is not
 * told apart (its tear-down is, by process_exit).
 *
 * Cut traces (engine/analysis-load.h keeps only the events that can cut
 * a thread into flows): the rule needs the calls lifecycle_cut_name
 * names and, after each event lifecycle_cut_after holds, the next one;
 * with those kept, the events between kept ones have the earlier one's
 * mark, as they have its flow.
 *
 * Pure: no I/O.
 */
#ifndef PROPEL_ANALYSIS_LIFECYCLE_H
#define PROPEL_ANALYSIS_LIFECYCLE_H

#include <stdint.h>

#include "analysis/trace.h"

enum { LIFECYCLE_WORK, LIFECYCLE_SETUP, LIFECYCLE_TEARDOWN };

/* life[0..t->nev): each event's LIFECYCLE_*.  The number of set-up and
 * tear-down events, or -ENOMEM. */
long lifecycle_mark(const struct trace *t, uint8_t *life);

/* Is func (an interned name of t) one of the calls that end the process
 * (exit, quick_exit, _exit, _Exit)? */
int lifecycle_is_exit_call(const struct trace *t, uint32_t func);

/* main or one of those calls. */
int lifecycle_cut_name(const char *func);
/* An event (kind: share/kinds.h; func of an entry or exit) whose next
 * event in its thread a cut trace keeps: an exec, a process_exit, an
 * exit of main, an entry of an exit call. */
int lifecycle_cut_after(int kind, const char *func);

#endif
