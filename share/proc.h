/*
 * share/proc.h - reading a small /proc file whole (stat, comm, environ,
 * fdinfo): inject/hijack.c, inject/peer.c, inject/tracer.c,
 * inject/propeld.c.
 */
#ifndef PROPEL_SHARE_PROC_H
#define PROPEL_SHARE_PROC_H

#include <stddef.h>

/* Up to n - 1 bytes of path into buf, NUL-terminated after them (the
 * bytes may hold NULs: environ).  The length read, or -errno (buf ""). */
int propel_read_small(const char *path, char *buf, size_t n);

#endif
