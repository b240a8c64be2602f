/*
 * inject/peer-stdio.c - see inject/peer-stdio.h.  The file is one line:
 * "PID INO0 KIND0 INO1 KIND1 INO2 KIND2" (0 and "-" for an fd that is no
 * pipe or socket).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject/peer-stdio.h"
#include "share/log.h"
#include "share/proc.h"

void peer_stdio_self(struct peer_stdio *st)
{
	struct stat sb;
	int fd;

	memset(st, 0, sizeof(*st));
	st->coord = getpid();
	for (fd = 0; fd < 3; fd++) {
		snprintf(st->kind[fd], sizeof(st->kind[fd]), "-");
		if (fstat(fd, &sb) < 0)
			continue;
		if (S_ISFIFO(sb.st_mode))
			snprintf(st->kind[fd], sizeof(st->kind[fd]), "pipe");
		else if (S_ISSOCK(sb.st_mode))
			snprintf(st->kind[fd], sizeof(st->kind[fd]), "socket");
		else
			continue;
		st->ino[fd] = (uint64_t)sb.st_ino;
	}
}

int peer_stdio_write(const char *dir, const struct peer_stdio *st,
		     char **cause)
{
	char path[700];
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, PEER_STDIO_FILE);
	f = fopen(path, "we");
	if (!f)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	bad = fprintf(f, "%d %llu %s %llu %s %llu %s\n", (int)st->coord,
		      (unsigned long long)st->ino[0], st->kind[0],
		      (unsigned long long)st->ino[1], st->kind[1],
		      (unsigned long long)st->ino[2], st->kind[2]) < 0;
	bad |= fclose(f) != 0;
	if (bad)
		return propel_cause(cause, -EIO, "%s: cannot write", path);
	chmod(path, 0644);
	return 0;
}

void peer_stdio_read(const char *dir, struct peer_stdio *st)
{
	char path[700], buf[256];
	unsigned long long i0, i1, i2;
	int pid;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/%s", dir, PEER_STDIO_FILE);
	if (propel_read_small(path, buf, sizeof(buf)) <= 0)
		return;
	if (sscanf(buf, "%d %llu %7s %llu %7s %llu %7s", &pid, &i0,
		   st->kind[0], &i1, st->kind[1], &i2, st->kind[2]) != 7 ||
	    pid <= 0) {
		memset(st, 0, sizeof(*st));
		return;
	}
	st->coord = pid;
	st->ino[0] = i0;
	st->ino[1] = i1;
	st->ino[2] = i2;
}

int peer_stdio_fd(const struct peer_stdio *st, const struct peer_addr *a)
{
	int fd, pipe = !strcmp(a->kind, "pipe");

	if (!st->coord || (!pipe && strncmp(a->kind, "unix", 4)))
		return -1;
	for (fd = 0; fd < 3; fd++)
		if (st->ino[fd] &&
		    !strcmp(st->kind[fd], pipe ? "pipe" : "socket") &&
		    (a->lino == st->ino[fd] || a->pino == st->ino[fd]))
			return fd;
	return -1;
}

int peer_stdio_ancestor(const struct peer_stdio *st, pid_t pid)
{
	char path[64], buf[512], *p;
	int cur = st->coord, hops;

	for (hops = 0; cur > 1 && hops < 256; hops++) {
		int ppid = 0;

		if (cur == pid)
			return 1;
		snprintf(path, sizeof(path), "/proc/%d/stat", cur);
		if (propel_read_small(path, buf, sizeof(buf)) <= 0 ||
		    !(p = strrchr(buf, ')')) ||
		    sscanf(p + 1, " %*c %d", &ppid) != 1)
			return 0;
		cur = ppid;
	}
	return 0;
}
