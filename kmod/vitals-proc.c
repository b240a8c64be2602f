/*
 * kmod/vitals-proc.c - the /proc-polling fallback of the vital-sign
 * collector, used where BPF is refused (not root, no CAP_BPF, lockdown) or
 * propel was built without bpftool/clang.
 *
 * It is coarse, and says so: at each epoch's end it reads every
 * /proc/PID/{stat,schedstat,io} and reports per-process deltas; there are
 * no samples (no stacks), no sketch, and five vitals have no /proc source:
 *   cpu     utime+stime (converted to cpu_hz ticks)
 *   sched   schedstat run-queue wait (us)
 *   block   delayacct_blkio_ticks (us; zero unless delay accounting is on)
 *   blkio   io read_bytes+write_bytes (sectors; needs the same uid or root)
 *   umem    minflt+majflt
 *   syscall io syscr+syscw (read- and write-family calls only)
 * Called only from kmod/vitals.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kmod/vitals-collector.h"
#include "share/log.h"

struct vitals_proc_ent {
	uint32_t pid;
	uint64_t start; /* starttime, tells a reused pid */
	uint64_t v[VITALS_NR];
};

struct vitals_proc {
	unsigned cpu_hz;
	long clk_tck;
	struct vitals_proc_ent *ents;
	size_t nents;
};

int vitals_proc_status(int vital, const char **why)
{
	switch (vital) {
	case VITALS_CPU:
	case VITALS_SCHED:
	case VITALS_BLOCK:
	case VITALS_BLKIO:
	case VITALS_UMEM:
	case VITALS_SYSCALL:
		*why = "";
		return VITALS_COARSE;
	case VITALS_L2MISS:
		*why = "no cache-miss counts in /proc";
		return VITALS_OFF;
	default:
		*why = "no per-process source in /proc";
		return VITALS_OFF;
	}
}

int vitals_proc_open(struct vitals_proc **out, unsigned cpu_hz, char **cause)
{
	struct vitals_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return propel_cause(cause, -ENOMEM, "out of memory");
	if (access("/proc/self/stat", R_OK)) {
		free(p);
		return propel_cause(cause, -ENOENT, "/proc is not mounted");
	}
	p->cpu_hz = cpu_hz ? cpu_hz : 1000;
	p->clk_tck = sysconf(_SC_CLK_TCK);
	if (p->clk_tck <= 0)
		p->clk_tck = 100;
	*out = p;
	return 0;
}

void vitals_proc_close(struct vitals_proc *p)
{
	if (!p)
		return;
	free(p->ents);
	free(p);
}

static int read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	buf[n] = 0;
	fclose(f);
	return 0;
}

/* Read one process; 0 when it could be read. */
static int proc_read(struct vitals_proc *p, uint32_t pid,
		     struct vitals_proc_ent *e, char *comm, uint32_t *uid)
{
	char path[64], buf[2048], *lp, *rp, *tok, *save;
	unsigned long long f[64] = { 0 };
	struct stat st;
	int i;

	memset(e, 0, sizeof(*e));
	e->pid = pid;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp)
		return -1;
	snprintf(comm, VITALS_COMM_LEN, "%.*s", (int)(rp - lp - 1), lp + 1);
	/* fields from 3 (state) on */
	for (i = 3, tok = strtok_r(rp + 2, " ", &save); tok && i < 64;
	     i++, tok = strtok_r(NULL, " ", &save))
		f[i] = strtoull(tok, NULL, 10);
	e->start = f[22];
	e->v[VITALS_CPU] = (f[14] + f[15]) * p->cpu_hz / p->clk_tck;
	e->v[VITALS_UMEM] = f[10] + f[12];
	e->v[VITALS_BLOCK] = f[42] * 1000000ull / p->clk_tck;
	snprintf(path, sizeof(path), "/proc/%u/schedstat", pid);
	if (read_file(path, buf, sizeof(buf)) == 0) {
		unsigned long long run, wait;

		if (sscanf(buf, "%llu %llu", &run, &wait) == 2)
			e->v[VITALS_SCHED] = wait / 1000;
	}
	snprintf(path, sizeof(path), "/proc/%u/io", pid);
	if (read_file(path, buf, sizeof(buf)) == 0) {
		unsigned long long x;
		char *s;

		if ((s = strstr(buf, "syscr:")) && sscanf(s, "syscr: %llu", &x) == 1)
			e->v[VITALS_SYSCALL] += x;
		if ((s = strstr(buf, "syscw:")) && sscanf(s, "syscw: %llu", &x) == 1)
			e->v[VITALS_SYSCALL] += x;
		if ((s = strstr(buf, "\nread_bytes:")) &&
		    sscanf(s, "\nread_bytes: %llu", &x) == 1)
			e->v[VITALS_BLKIO] += x / 512;
		if ((s = strstr(buf, "\nwrite_bytes:")) &&
		    sscanf(s, "\nwrite_bytes: %llu", &x) == 1)
			e->v[VITALS_BLKIO] += x / 512;
	}
	snprintf(path, sizeof(path), "/proc/%u", pid);
	*uid = stat(path, &st) == 0 ? st.st_uid : 0;
	return 0;
}

static struct vitals_proc_ent *find_old(struct vitals_proc *p, uint32_t pid)
{
	size_t lo = 0, hi = p->nents;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->ents[mid].pid == pid)
			return &p->ents[mid];
		if (p->ents[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct vitals_proc_ent *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int vitals_proc_epoch(struct vitals_proc *p, struct vitals_epoch *e)
{
	struct vitals_proc_ent *now = NULL;
	size_t nnow = 0, cap = 0, nrows = 0, rcap = 0;
	struct vitals_row *rows = NULL;
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char comm[VITALS_COMM_LEN];
		struct vitals_proc_ent ent, *old;
		uint32_t pid, uid;
		int i;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtoul(de->d_name, NULL, 10);
		if ((pid_t)pid == self || proc_read(p, pid, &ent, comm, &uid))
			continue;
		if (nnow == cap) {
			cap = cap ? 2 * cap : 512;
			now = realloc(now, cap * sizeof(*now));
			if (!now)
				goto nomem;
		}
		now[nnow++] = ent;
		old = find_old(p, pid);
		if (old && old->start != ent.start)
			old = NULL;
		if (!old)
			continue; /* first sight: no delta yet */
		for (i = 0; i < VITALS_NR; i++) {
			uint64_t dv = ent.v[i] >= old->v[i] ? ent.v[i] - old->v[i] : 0;
			struct vitals_row *r;

			if (!dv)
				continue;
			if (nrows == rcap) {
				rcap = rcap ? 2 * rcap : 256;
				rows = realloc(rows, rcap * sizeof(*rows));
				if (!rows)
					goto nomem;
			}
			r = &rows[nrows++];
			memset(r, 0, sizeof(*r));
			r->tgid = pid;
			r->uid = uid;
			r->vital = i;
			memcpy(r->comm, comm, sizeof(r->comm));
			r->value = dv;
			r->count = 1;
			e->weight[i] += dv;
			e->events[i]++;
		}
	}
	closedir(d);
	qsort(now, nnow, sizeof(*now), ent_cmp);
	free(p->ents);
	p->ents = now;
	p->nents = nnow;
	e->rows = rows;
	e->nrows = nrows;
	return 0;
nomem:
	closedir(d);
	free(now);
	free(rows);
	return -ENOMEM;
}
