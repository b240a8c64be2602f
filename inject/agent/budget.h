/*
 * inject/agent/budget.h - the agent's cost budget (budget.c): which calls
 * are left untraced, and when.  Included by patch.c (the static rule at a
 * direct call site) and agent.c (start, the lease thread's tick).
 */
#ifndef PROPEL_AGENT_BUDGET_H
#define PROPEL_AGENT_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#define BUDGET_TICK_MS 500 /* the dynamic rule decides this often */

/* At a session's start (ag_lock held): PROPEL_START_BUDGET in flags turns
 * it on, with the session directory's PROPEL_BUDGET_FILE. */
void budget_start(const char *dir, uint32_t flags);
/* A direct call from owner to f is about to be patched (ag_lock held): 1
 * to leave it alone (f untraced: the static rule, or decided earlier). */
int budget_skip_call(struct ag_func *owner, struct ag_func *f);
/* The lease thread, every BUDGET_TICK_MS (returns at once when off). */
void budget_tick(void);
/* len bytes at addr of our own memory through /proc/self/mem: 0, or -1
 * (never a fault) */
int ag_mem_read(uint64_t addr, void *buf, size_t len);

#endif
