/*
 * engine/node-vitals.h - the kernel's view of this node's processes for
 * the live console (tui/view-procs.c, one line a process; tui/view-live.c,
 * the traced processes beside their flows): syscalls per second and what
 * each process waits for when it is off the CPU.
 *
 *   node_vitals_start  a thread polls two BPF collectors over every
 *                      process: the off-CPU tracer (kmod/offcpu.h, each
 *                      span of at least 1 ms with its reason) and the
 *                      vital-sign collector with only its syscall counter
 *                      on (kmod/vitals-collector.h, 1 s epochs).  Where BPF
 *                      is refused it starts nothing and says why: the
 *                      reasons then come from /proc alone.
 *   node_vitals_get    one process's figures of the last full second.
 *   node_vitals_stop   joins the thread, closes the collectors.
 *
 * The reason of a process is the one that held most of its off-CPU time
 * among the spans that ended in the last second (each span counted up to
 * one second): "sock recvfrom", "child wait4", "runq".  A process whose
 * threads are all asleep in one long wait ends no span; its reason is the
 * system call its main thread is in now (/proc/PID/syscall), "in
 * epoll_wait" -- the same source gdb's and ps's WCHAN use, and the only
 * one without BPF.  Nothing here prints or exits.
 */
#ifndef PROPEL_ENGINE_NODE_VITALS_H
#define PROPEL_ENGINE_NODE_VITALS_H

#include <stddef.h>

struct node_vitals;

/* Always 0 with *out (-ENOMEM when out of memory); the collectors load
 * in the thread: node_vitals_missing says "BPF loading" until then. */
int node_vitals_start(struct node_vitals **out);
/* NULL is a no-op. */
void node_vitals_stop(struct node_vitals *nv);

/* NULL when BPF collects; else why not, in a few words ("not root",
 * "BPF refused: ..."). */
const char *node_vitals_missing(struct node_vitals *nv);

struct node_vital {
	double syscalls_s; /* over the last epoch; < 0 unknown (no BPF) */
	char why[32];      /* the main reason off the CPU, "" unknown */
};

/* The figures of tgid (state: /proc/PID/stat's, 'S' 'D' ... used for the
 * /proc reason of a sleeper; 0 for none, e.g. a kernel thread).  nv may be NULL (the /proc reason only). */
void node_vitals_get(struct node_vitals *nv, int tgid, char state,
		     struct node_vital *out);

#endif
