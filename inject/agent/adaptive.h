/*
 * inject/agent/adaptive.h - variance-driven instrumentation (adaptive.c,
 * `propel attach --adaptive`): which direct calls are patched, decided
 * from the latency variance of the program's requests.  Included by
 * budget.c (the call-site rule) and agent.c (start, the lease tick).
 */
#ifndef PROPEL_AGENT_ADAPTIVE_H
#define PROPEL_AGENT_ADAPTIVE_H

#include <stdint.h>

struct ag_func;

/* At a session's start (ag_lock held): PROPEL_START_ADAPTIVE turns it on. */
void adaptive_start(uint32_t flags);
/* 1 under --adaptive */
int adaptive_on(void);
/* At attach (ag_lock held), each thread's stack: adaptive_stack, then
 * adaptive_frame with each frame's pc, outermost first. */
void adaptive_stack(void);
void adaptive_frame(uint64_t pc);
/* A direct call from owner to f is about to be patched (ag_lock held): 1
 * to leave it alone (f is below the instrumented frontier). */
int adaptive_skip_call(struct ag_func *owner, struct ag_func *f);
/* The lease thread, every BUDGET_TICK_MS (returns at once when off). */
void adaptive_tick(void);

#endif
