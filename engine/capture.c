/*
 * engine/capture.c - session directory life cycle for record and attach
 * (see engine/capture.h).  The session file is written under a temporary
 * name next to the final one and renamed at the end, so an interrupted or
 * failed recording never destroys an earlier session.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/ingest.h"
#include "engine/session.h"
#include "share/agent-abi.h"
#include "share/log.h"

static int find_agent(char *buf, size_t n, char **cause)
{
	const char *env = getenv("PROPEL_AGENT");
	char exe[PATH_MAX - 64];
	ssize_t len;
	char *slash;

	if (env && *env) {
		if (access(env, R_OK) != 0)
			return propel_cause(cause, -ENOENT,
					    "agent %s (PROPEL_AGENT): %s", env,
					    strerror(errno));
		if (!realpath(env, buf))
			snprintf(buf, n, "%s", env);
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return propel_cause(cause, -ENOENT, "cannot find the propel binary");
	exe[len] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, n, "%s/libpropel-agent.so", exe);
	if (access(buf, R_OK) == 0)
		return 0;
	snprintf(buf, n, "%s/../lib/propel/libpropel-agent.so", exe);
	if (access(buf, R_OK) == 0)
		return 0;
	return propel_cause(cause, -ENOENT,
			    "cannot find libpropel-agent.so next to %s "
			    "(set PROPEL_AGENT)", exe);
}

/*
 * The agents' lease (share/agent-abi.h): "<pid> <start time>" of this
 * process in dir/PROPEL_COORD_FILE, so an agent switches itself off when
 * propel dies without detaching it.
 */
unsigned long long capture_proc_start(pid_t pid)
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

static int capture_coordinator(const char *dir, char **cause)
{
	char path[600];
	unsigned long long start = capture_proc_start(getpid());
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_COORD_FILE);
	f = fopen(path, "we");
	if (!f)
		return propel_cause(cause, -errno, "%s: %s", path, strerror(errno));
	bad = fprintf(f, "%d %llu\n", (int)getpid(), start) < 0;
	if (fclose(f) != 0 || bad)
		return propel_cause(cause, -EIO, "%s: cannot write", path);
	return 0;
}

int capture_begin(struct capture *c, const char *db, char **cause)
{
	struct timespec ts;
	int fd, err;

	memset(c, 0, sizeof(*c));
	c->db = strdup(db ? db : PROPEL_SESSION_DEFAULT);
	if (asprintf(&c->tmp, "%s.tmp-%d", c->db, (int)getpid()) < 0)
		return -ENOMEM;
	fd = open(c->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return propel_cause(cause, -errno, "cannot write %s: %s", c->db,
				    strerror(errno));
	close(fd);
	unlink(c->tmp);
	err = find_agent(c->agent, sizeof(c->agent), cause);
	if (err)
		return err;
	if (mkdir(PROPEL_SHM_ROOT, 01777) < 0 && errno != EEXIST)
		return propel_cause(cause, -errno, "%s: %s", PROPEL_SHM_ROOT,
				    strerror(errno));
	chmod(PROPEL_SHM_ROOT, 01777);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(c->dir, sizeof(c->dir), "%s/%d-%lx", PROPEL_SHM_ROOT,
		 (int)getpid(), (unsigned long)ts.tv_sec);
	if (mkdir(c->dir, 0777) < 0)
		return propel_cause(cause, -errno, "%s: %s", c->dir,
				    strerror(errno));
	/* the traced processes may run as other users */
	chmod(c->dir, 01777);
	return capture_coordinator(c->dir, cause);
}

/* 1 if pid is a zombie or gone. */
static int proc_dead(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int dead = 1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		dead = p[2] == 'Z' || p[2] == 'X';
	fclose(f);
	return dead;
}

#define CAPTURE_STARTUP_MS 3000 /* exec to the agent's load, at most */

/*
 * 1 if pid has just exec'd a program that is about to load the agent: its
 * environment preloads it and the dynamic loader is mapped (a static
 * program never loads it), or the exec is still under way (the new
 * image's environment is not set up yet: /proc/PID/environ is empty),
 * and the exec was less than CAPTURE_STARTUP_MS ago (one whose agent
 * failed to load is let go after that).
 */
static int exec_pending(pid_t pid, const char *agent, int dynamic)
{
	char path[64], env[16384], *p;
	struct timespec now;
	unsigned long long start;
	ssize_t n;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, env, sizeof(env) - 1);
	close(fd);
	env[n > 0 ? n : 0] = 0;
	for (p = env; p < env + n; p += strlen(p) + 1) {
		if (!strncmp(p, "LD_PRELOAD=", 11) && strstr(p, agent))
			found = 1;
	}
	if (n > 0 && (!found || !dynamic)) /* n == 0: not set up yet */
		return 0;
	/* the process's start is its fork; the exec came after, so this
	 * bounds the wait from above */
	start = capture_proc_start(pid);
	if (!start)
		return 0;
	clock_gettime(CLOCK_BOOTTIME, &now);
	return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000 <
	       start * 1000 / (uint64_t)sysconf(_SC_CLK_TCK) + CAPTURE_STARTUP_MS;
}

/*
 * 1 if pid is alive and maps a file under dir/ or the agent library, or
 * is about to (exec_pending).  A child of ours (child non-zero) whose
 * memory is already gone but that is not a zombie yet is exiting: its own
 * children are about to be handed to us, so it counts until it is a
 * zombie.
 */
static int maps_session(pid_t pid, const char *dir, const char *agent,
			int child)
{
	char path[64], line[4096 + 256], pre[600];
	FILE *f;
	int found = 0, lines = 0, dynamic = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	snprintf(pre, sizeof(pre), "%s/", dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		lines++;
		found = strstr(line, pre) || strstr(line, agent);
		dynamic |= strstr(line, "/ld-linux") != NULL;
	}
	fclose(f);
	if (!found && !lines && child)
		found = !proc_dead(pid);
	if (!found && lines)
		found = exec_pending(pid, agent, dynamic);
	return found;
}

/* The caller's children, from /proc/self/task/TID/children (one thread:
 * propel's coordinator), else from a scan of /proc. */
static size_t my_children(pid_t *out, size_t max)
{
	char path[64], buf[8192], *p, *end;
	pid_t me = getpid();
	size_t n = 0;
	ssize_t r;
	DIR *d;
	struct dirent *e;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)me);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[r > 0 ? r : 0] = 0;
		for (p = buf; n < max; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			out[n++] = (pid_t)v;
		}
		return n;
	}
	d = opendir("/proc");
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		int pid = atoi(e->d_name), ppid = 0;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			sscanf(p + 1, " %*c %d", &ppid);
		fclose(f);
		if (ppid == me)
			out[n++] = pid;
	}
	closedir(d);
	return n;
}

struct capture_cand {
	pid_t pid;
	int has_map; /* named by a map file (else: a child of ours) */
};

static int cand_cmp(const void *a, const void *b)
{
	const struct capture_cand *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return y->has_map - x->has_map; /* the one with a map file first */
}

int capture_traced_pids(const struct capture *c, pid_t **out)
{
	struct capture_cand *v, *nv;
	pid_t kids[512], *res;
	size_t n, cap = 1024, i, k = 0;
	struct dirent *e;
	DIR *d;

	*out = NULL;
	n = my_children(kids, sizeof(kids) / sizeof(kids[0]));
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i].pid = kids[i];
		v[i].has_map = 0;
	}
	d = opendir(c->dir);
	while (d && (e = readdir(d))) {
		const char *dot = strrchr(e->d_name, '.');
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0 || !dot || strcmp(dot, ".map"))
			continue;
		if (n == cap) {
			nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		v[n].pid = pid;
		v[n++].has_map = 1;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), cand_cmp);
	res = malloc((n ? n : 1) * sizeof(*res));
	if (!res) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (i && v[i].pid == v[i - 1].pid)
			continue;
		if (maps_session(v[i].pid, c->dir, c->agent, !v[i].has_map))
			res[k++] = v[i].pid;
	}
	free(v);
	*out = res;
	return (int)k;
}

int capture_traced_left(const struct capture *c, pid_t *one)
{
	pid_t *v = NULL;
	int n = capture_traced_pids(c, &v);

	if (n > 0 && one)
		*one = v[0];
	free(v);
	return n;
}

void capture_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

void capture_abort(struct capture *c)
{
	if (c->dir[0])
		capture_remove_dir(c->dir);
	if (c->tmp)
		unlink(c->tmp);
	free(c->tmp);
	free(c->db);
	c->tmp = c->db = NULL;
}

int capture_end(struct capture *c, int argc, char *const *argv, char **cause)
{
	struct ingest_stats st;
	struct session *s = NULL;
	char warn[512];
	int err;

	memset(&st, 0, sizeof(st));
	err = session_open(c->tmp, SESSION_CREATE, &s, cause);
	if (err)
		goto fail;
	err = ingest_dir(s, c->dir, &st, cause);
	if (!err)
		err = ingest_write_meta(s, argc, argv);
	session_close(s);
	if (err) {
		propel_cause(cause, err, "cannot store the session");
		goto fail;
	}
	if (ingest_warning(&st, warn, sizeof(warn)))
		propel_report("warning", 0, warn);
	if (rename(c->tmp, c->db) < 0) {
		err = propel_cause(cause, -errno, "%s: %s", c->db,
				   strerror(errno));
		goto fail;
	}
	capture_remove_dir(c->dir);
	free(c->tmp);
	free(c->db);
	c->tmp = c->db = NULL;
	return 0;
fail:
	unlink(c->tmp);
	propel_cause(cause, err, "raw trace kept in %s", c->dir);
	return err;
}
