/*
 * engine/callvals.h - the argument and return values `record|attach
 * --args` recorded (uftrace's -a), as text: "n=30", "832040".
 *
 * The agent records the six integer argument registers at each traced
 * call's entry and rax at its exit (share/agent-abi.h); ingest keeps the
 * registers by the entry's id (engine/argchunk.h), rax as the exit's arg2,
 * and what DWARF declares of each function in table params
 * (engine/symbols.h: symbols_params).  This file reads a register as its
 * argument: by the declared name and type (a pointer in hex, an int
 * sign-extended from its size), or, without DWARF, as "rdi=..".."r9=..".
 * A floating argument (in an xmm register) or a small struct by value
 * reads "?": their registers are not recorded or not known.
 *
 * Callers: engine/replay.c (replay --format=jsonl/text: "args", "retval")
 * and the TUI's trace lines (tui/tui-text.c).
 */
#ifndef PROPEL_ENGINE_CALLVALS_H
#define PROPEL_ENGINE_CALLVALS_H

#include <stdint.h>
#include <stdio.h>

struct session;
struct callvals;

/* The session's --args tables, or an empty reader (a session recorded
 * without --args: every lookup says none).  0 or -ENOMEM. */
int callvals_open(struct session *s, struct callvals **out);
void callvals_free(struct callvals *cv);

/* 1 when func (functions.id) was recorded with --args. */
int callvals_has(const struct callvals *cv, int64_t func);

/* An entry's arguments as "n=30, s=0x7ffd5a40" into buf (empty: none
 * declared).  1 when the entry event has recorded values, else 0. */
int callvals_args(struct callvals *cv, int64_t func, int64_t event,
		  char *buf, size_t size);
/* func's return value rax as text; 0 when it has none to show (void, a
 * floating or struct return, or not recorded with --args). */
int callvals_ret(const struct callvals *cv, int64_t func, int64_t rax,
		 char *buf, size_t size);

/* JSON members for replay: ,"args":{"n":30,"s":"0x7ffd5a40"} of an
 * entry, ,"retval":832040 of an exit (nothing when not recorded). */
void callvals_json_args(struct callvals *cv, int64_t func, int64_t event,
			FILE *out);
void callvals_json_ret(const struct callvals *cv, int64_t func, int64_t rax,
		       FILE *out);

#endif
