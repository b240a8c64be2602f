/*
 * share/proc.c - reading a small /proc file whole, /proc/PID/stat's state
 * and flags and start time, /proc/PID/maps (share/proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "share/clock.h"
#include "share/proc.h"

int propel_read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	buf[0] = 0;
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	if (r < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return (int)r;
	buf[r] = 0;
	return (int)r;
}

int propel_boot_id(char *buf, size_t n)
{
	int r = propel_read_small("/proc/sys/kernel/random/boot_id", buf, n);

	if (r > 0 && buf[r - 1] == '\n')
		buf[--r] = 0;
	return r;
}

int propel_proc_stat(int pid, char *state, unsigned long *flags)
{
	char path[64], buf[1024], *p;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (propel_read_small(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	p = strrchr(buf, ')');
	if (!p || !p[1])
		return -ESRCH;
	p += 2;
	*state = *p;
	/* fields after state: ppid pgrp session tty tpgid flags */
	for (i = 0; i < 6 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	*flags = p ? strtoul(p, NULL, 10) : 0;
	return 0;
}

long propel_proc_syscall(int pid)
{
	char path[64], buf[256], *end;
	long nr;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	n = propel_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* "230 0x0 ...", "-1 SP PC" (not in a call), or "running" */
	nr = strtol(buf, &end, 10);
	if (end == buf || nr < 0)
		return -1;
	return nr;
}

int propel_maps_each(int pid, int (*fn)(const struct propel_map *m, void *arg),
		     void *arg)
{
	char mp[64], line[PATH_MAX + 128];
	FILE *f;
	int r = 0;

	snprintf(mp, sizeof(mp), "/proc/%d/maps", pid);
	f = fopen(mp, "re");
	if (!f)
		return -ESRCH;
	while (!r && fgets(line, sizeof(line), f)) {
		struct propel_map m = { 0 };
		int pos = 0;
		char *p, *del;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &m.lo, &m.hi,
			   m.perms, &m.off, &pos) < 4 || !pos)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = 0;
		del = strstr(p, " (deleted)");
		if (del && !del[10]) {
			*del = 0;
			m.deleted = 1;
		}
		m.path = p;
		r = fn(&m, arg);
	}
	fclose(f);
	return r;
}

int propel_proc_sees(int pid, const char *path)
{
	char there[4200];
	struct stat a, b;

	if (stat(path, &a) < 0)
		return -errno;
	snprintf(there, sizeof(there), "/proc/%d/root%s", pid, path);
	if (stat(there, &b) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

unsigned long long propel_proc_start(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	    p[1] == ' ' && p[2] != 'Z' && p[2] != 'X')
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			      "%*u %*d %*d %*d %*d %*d %*d %llu", &start);
	fclose(f);
	return start;
}

int propel_proc_younger(int pid, unsigned ms)
{
	unsigned long long start = propel_proc_start(pid);

	if (!start)
		return 0;
	return propel_clock_ns(CLOCK_BOOTTIME) / 1000000 <
	       start * 1000 / (uint64_t)sysconf(_SC_CLK_TCK) + ms;
}
