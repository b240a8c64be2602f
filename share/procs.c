/*
 * share/procs.c - this node's processes as top sees them (share/procs.h):
 * /proc's pids, /proc/PID/stat, owners, command lines, and this process's
 * rights over them.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "share/proc.h"
#include "share/procs.h"

static int pid_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int procs_pids(int **pids)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0, cap = 0, *p = NULL, *np;

	*pids = NULL;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 512;
			np = realloc(p, cap * sizeof(*p));
			if (!np) {
				free(p);
				closedir(d);
				return -ENOMEM;
			}
			p = np;
		}
		p[n++] = atoi(de->d_name);
	}
	closedir(d);
	qsort(p, n, sizeof(*p), pid_cmp);
	*pids = p;
	return n;
}

int procs_stat_read(int pid, struct procs_stat *st)
{
	char path[64], buf[1024], *lp, *rp, *f[64], *save;
	unsigned long long ut, stt;
	int len, nf = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	len = propel_read_small(path, buf, sizeof(buf));
	if (len < 0)
		return len;
	/* "PID (COMM) S PPID ...": COMM may hold spaces and ')' */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->pid = pid;
	snprintf(st->comm, sizeof(st->comm), "%.*s", (int)(rp - lp - 1), lp + 1);
	for (lp = strtok_r(rp + 1, " \n", &save); lp && nf < 64;
	     lp = strtok_r(NULL, " \n", &save))
		f[nf++] = lp;
	/* f[0] is field 3 (state) of proc(5) */
	if (nf < 20)
		return -EINVAL;
	st->state = f[0][0];
	st->ppid = atoi(f[1]);
	st->flags = strtoul(f[6], NULL, 10);
	ut = strtoull(f[11], NULL, 10);
	stt = strtoull(f[12], NULL, 10);
	st->ticks = ut + stt;
	st->nthreads = atoi(f[17]);
	st->starttime = strtoull(f[19], NULL, 10);
	return 0;
}

int procs_uid(int pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &sb))
		return -errno;
	return (int)sb.st_uid;
}

int procs_cmdline(int pid, char *buf, size_t n)
{
	char path[64];
	int len, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	len = propel_read_small(path, buf, n);
	if (len < 0)
		return len;
	while (len > 0 && buf[len - 1] == 0)
		len--;
	for (i = 0; i < len; i++)
		if (buf[i] == 0 || buf[i] == '\n' || buf[i] == '\t')
			buf[i] = ' ';
	buf[len] = 0;
	return len;
}

int procs_have_cap(int cap)
{
	char buf[4096], *p;
	unsigned long long eff;

	if (propel_read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nCapEff:");
	if (!p)
		return 0;
	eff = strtoull(p + 8, NULL, 16);
	return cap >= 0 && cap < 64 && (eff >> cap & 1);
}

int procs_ptrace_scope(void)
{
	char buf[16];

	if (propel_read_small("/proc/sys/kernel/yama/ptrace_scope", buf,
			      sizeof(buf)) <= 0)
		return 0;
	return atoi(buf);
}

int procs_bpf_allowed(const char **why)
{
	char buf[256];

	if (geteuid() != 0) {
		*why = "not root";
		return 0;
	}
	if (!procs_have_cap(39 /* CAP_BPF */) &&
	    !procs_have_cap(21 /* CAP_SYS_ADMIN */)) {
		*why = "no CAP_BPF";
		return 0;
	}
	if (propel_read_small("/sys/kernel/security/lockdown", buf,
			      sizeof(buf)) > 0 &&
	    strstr(buf, "[confidentiality]")) {
		*why = "kernel lockdown";
		return 0;
	}
	*why = NULL;
	return 1;
}
