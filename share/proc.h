/*
 * share/proc.h - reading a small /proc file whole (stat, comm, environ,
 * fdinfo), /proc/PID/stat's state and flags, and the mappings of
 * /proc/PID/maps, a process's start time, the kernel's boot id:
 * inject/hijack*.c, inject/inject.c, inject/peer.c, engine/capture.c,
 * engine/transport.c, inject/tracer.c, inject/propeld.c.
 */
#ifndef PROPEL_SHARE_PROC_H
#define PROPEL_SHARE_PROC_H

#include <stddef.h>

/* Up to n - 1 bytes of path into buf, NUL-terminated after them (the
 * bytes may hold NULs: environ).  The length read, or -errno (buf ""). */
int propel_read_small(const char *path, char *buf, size_t n);

/* This boot's id (/proc/sys/kernel/random/boot_id, its newline cut) into
 * buf: two hosts that show the same one are one kernel, with one
 * CLOCK_MONOTONIC.  The length, or -errno (buf ""). */
int propel_boot_id(char *buf, size_t n);

#define PROPEL_PF_KTHREAD 0x00200000u /* /proc/PID/stat flags: a kernel thread */

/* State letter and flags (field 9) from /proc/PID/stat; 0, or -ESRCH if
 * it cannot be read. */
int propel_proc_stat(int pid, char *state, unsigned long *flags);

/* The system call pid's main thread is blocked in (/proc/PID/syscall):
 * its number; -1 when it is in none (running, or stopped in a fault);
 * -errno when it cannot be read (gone; another user's without
 * CAP_SYS_PTRACE: -EACCES/-EPERM). */
long propel_proc_syscall(int pid);

/* One line of /proc/PID/maps. */
struct propel_map {
	unsigned long long lo, hi, off;
	char perms[8];
	const char *path; /* the file, a [name], or "" (anonymous) */
	int deleted;      /* the file was " (deleted)" (cut from path) */
};

/* fn for each mapping of pid, in address order, until it returns nonzero:
 * that value; 0 after the last; -ESRCH if the maps cannot be read. */
int propel_maps_each(int pid, int (*fn)(const struct propel_map *m, void *arg),
		     void *arg);

/* 1 when pid sees path (/proc/PID/root + path) as the same file as this
 * process does (device and inode), 0 when it sees another file or none
 * (a mount namespace or root of its own), -errno when it cannot be told
 * (path missing here, /proc/PID/root not readable). */
int propel_proc_sees(int pid, const char *path);

/* Start time of pid (clock ticks after boot, /proc/PID/stat field 22), 0
 * if it is gone or a zombie. */
unsigned long long propel_proc_start(int pid);
/* 1 if pid started (forked) less than ms ago. */
int propel_proc_younger(int pid, unsigned ms);

#endif
