/*
 * share/kinds.c - the names of share/kinds.h's vital signs, the one table
 * the collector (kmod/vitals.c: --disable lists, its log), the rules
 * (analysis/vitals-rules.c) and the session's vitals tables (which store
 * a vital by name) all read.  Pure: no I/O.
 */
#include <string.h>

#include "share/kinds.h"

static const char *const propel_vital_names[PROPEL_VITAL_NR] = {
	[PROPEL_VITAL_CPU] = "cpu",	    [PROPEL_VITAL_L2MISS] = "l2miss",
	[PROPEL_VITAL_SCHED] = "sched",	    [PROPEL_VITAL_BLOCK] = "block",
	[PROPEL_VITAL_BLKIO] = "blkio",	    [PROPEL_VITAL_KMEM] = "kmem",
	[PROPEL_VITAL_UMEM] = "umem",	    [PROPEL_VITAL_SYSCALL] = "syscall",
	[PROPEL_VITAL_SIGNAL] = "signal",   [PROPEL_VITAL_SOCK] = "sock",
	[PROPEL_VITAL_LOCK] = "lock",
};

const char *propel_vital_name(int vital)
{
	return vital >= 0 && vital < PROPEL_VITAL_NR ? propel_vital_names[vital]
						     : "?";
}

int propel_vital_lookup(const char *name)
{
	for (int i = 0; i < PROPEL_VITAL_NR; i++)
		if (strcmp(name, propel_vital_names[i]) == 0)
			return i;
	return -1;
}
