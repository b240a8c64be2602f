/*
 * share/procs.h - this node's processes as top sees them: the pids in
 * /proc, each one's /proc/PID/stat figures (state, parent, flags, CPU
 * ticks, threads, start time), owner and command line, and what this
 * process may do to them (CAP_SYS_PTRACE, Yama's ptrace_scope, BPF).
 * The live console's process view (tui/view-procs.c) calls it once a
 * second; one pass costs a readdir and three small reads per process.
 * libc only; nothing here exits or prints.
 */
#ifndef PROPEL_SHARE_PROCS_H
#define PROPEL_SHARE_PROCS_H

#include <stddef.h>

/* /proc/PID/stat, the fields top uses */
struct procs_stat {
	int pid, ppid, nthreads;
	char state;                   /* R S D Z T ... */
	char comm[32];                /* the kernel's 15-byte name */
	unsigned long flags;          /* PF_*: PROPEL_PF_KTHREAD (share/proc.h) */
	unsigned long long ticks;     /* utime + stime, in sysconf(_SC_CLK_TCK) */
	unsigned long long starttime; /* ticks after boot: tells a reused pid */
};

/* The pids of /proc in *pids (malloc'd, ascending): their count, or
 * -errno. */
int procs_pids(int **pids);

/* /proc/PID/stat into *st: 0, or -errno (-ENOENT: gone). */
int procs_stat_read(int pid, struct procs_stat *st);

/* Owner (real uid) of pid, or -errno. */
int procs_uid(int pid);

/* /proc/PID/cmdline with its NULs as spaces into buf (n bytes, "" for a
 * kernel thread or a zombie): its length, or -errno. */
int procs_cmdline(int pid, char *buf, size_t n);

/* 1 when this process has capability cap (CAP_*) in its effective set. */
int procs_have_cap(int cap);

/* Yama's ptrace_scope (0-3), 0 when Yama is not there. */
int procs_ptrace_scope(void);

/* Whether this process could load BPF programs (root with CAP_BPF or
 * CAP_SYS_ADMIN, no lockdown=confidentiality): 1, or 0 with *why set to a
 * short reason ("not root", "no CAP_BPF", "kernel lockdown"). */
int procs_bpf_allowed(const char **why);

#endif
