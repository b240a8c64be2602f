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
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "share/proc.h"
#include "inject/inject.h"
#include "engine/ingest.h"
#include "engine/ingest-live.h"
#include "engine/symbols.h"
#include "engine/session.h"
#include "inject/tracer.h"
#include "share/agent-abi.h"
#include "share/log.h"

/*
 * The agents' lease (share/agent-abi.h): "<pid> <start time>" of this
 * process in dir/PROPEL_COORD_FILE, so an agent switches itself off when
 * propel dies without detaching it.
 */
unsigned long long capture_proc_start(pid_t pid)
{
	return propel_proc_start(pid);
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
	err = inject_find_agent(c->agent, sizeof(c->agent), cause);
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

int capture_traced_pids(const struct capture *c, pid_t **out)
{
	return tracer_traced_pids(c->dir, c->agent, out);
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

/*
 * A stored session's raw trace: renamed out of the way at once (to a
 * hidden name beside it, which no scan of PROPEL_SHM_ROOT looks at:
 * recover skips dot names) and removed by a shell's background job at
 * nice 19, so that the user's prompt does not wait for tmpfs to free the
 * spool's pages (fib(31): ~100 MB, tens of ms).  Where the rename or the
 * spawn fails it is removed here, as before.
 */
static void capture_remove_dir_later(const char *dir)
{
	static const char job[] = "nice -n 19 rm -rf -- \"$0\" </dev/null "
				  ">/dev/null 2>&1 &";
	const char *base = strrchr(dir, '/');
	char gone[PATH_MAX];
	char *argv[] = { "sh", "-c", (char *)job, gone, NULL };
	pid_t pid;

	if (!base || (size_t)snprintf(gone, sizeof(gone), "%.*s/.gone-%s",
				      (int)(base - dir), dir, base + 1) >=
			     sizeof(gone) ||
	    rename(dir, gone) < 0) {
		capture_remove_dir(dir);
		return;
	}
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ)) {
		capture_remove_dir(gone);
		return;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void capture_each_map(const char *dir, void (*fn)(void *arg, pid_t pid),
		      void *arg)
{
	struct dirent *de;
	DIR *d;

	if (!dir || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		const char *dot = strrchr(de->d_name, '.');
		long pid = strtol(de->d_name, NULL, 10);

		if (pid > 0 && dot && !strcmp(dot, ".map"))
			fn(arg, (pid_t)pid);
	}
	closedir(d);
}

void capture_abort(struct capture *c)
{
	ingest_live_abort(c->live);
	c->live = NULL;
	if (c->dir[0])
		capture_remove_dir(c->dir);
	if (c->tmp)
		unlink(c->tmp);
	free(c->tmp);
	free(c->db);
	c->tmp = c->db = NULL;
	symbols_free(c->sy);
	c->sy = NULL;
}

int capture_end(struct capture *c, int argc, char *const *argv, char **cause)
{
	return capture_end_hosts(c, argc, argv, NULL, 0, cause);
}

/* The session could not be stored: the rings stay where they are, and the
 * user's one line says so after why (the innermost cause, kept first) and
 * how to store them elsewhere. */
static void capture_kept(char **cause, const char *dir)
{
	char *s = NULL;

	if (!cause)
		return;
	if (asprintf(&s, "%s%sraw trace kept in %s (propel recover -o DB %s "
		     "stores it)", *cause ? *cause : "", *cause ? "; " : "",
		     dir, dir) < 0)
		return;
	free(*cause);
	*cause = s;
}

/*
 * The session stored live (in the session directory, engine/ingest-live.h)
 * to c->tmp: renamed where that is the same file system, else copied
 * (tmpfs to the disk: a few MB, a few ms).  0 or -errno with *cause.
 */
static int capture_move_live(struct capture *c, char **cause)
{
	char from[PATH_MAX], buf[1 << 16];
	int in, out, err = 0;
	ssize_t n;

	snprintf(from, sizeof(from), "%s/%s", c->dir, INGEST_LIVE_DB);
	if (rename(from, c->tmp) == 0)
		return 0;
	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(c->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, n) != n) {
			err = -(errno ? errno : EIO);
			break;
		}
	}
	if (in < 0 || out < 0)
		err = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0 && !err)
		err = -errno;
	unlink(from);
	if (err)
		return propel_cause(cause, err, "%s: %s", c->tmp,
				    strerror(-err));
	return 0;
}

int capture_end_hosts(struct capture *c, int argc, char *const *argv,
		      const struct capture_host *hosts, size_t nhosts,
		      char **cause)
{
	struct ingest_stats st;
	struct session *s = NULL;
	char warn[512], key[128];
	size_t i;
	int err, live = 0;

	memset(&st, 0, sizeof(st));
	if (c->live) { /* stored as the run went: the rest, or as before */
		struct symbols *sy = NULL;

		err = ingest_live_end(c->live, &s, &st, &sy, cause);
		c->live = NULL;
		if (err == -EAGAIN) {
			symbols_free(c->sy);
			c->sy = sy;
			err = 0;
		} else {
			symbols_free(sy);
			if (err)
				goto fail;
			live = 1;
			if (ingest_warning(&st, warn, sizeof(warn)))
				propel_report("warning", 0, warn);
		}
	}
	if (!live) {
		err = session_open(c->tmp, SESSION_CREATE, &s, cause);
		if (err)
			goto fail;
	}
	if (!nhosts && !live) {
		err = ingest_dir_symbols(s, c->dir, c->sy, &st, cause);
		if (!err && ingest_warning(&st, warn, sizeof(warn)))
			propel_report("warning", 0, warn);
	}
	for (i = 0; !err && i < nhosts; i++) {
		err = ingest_dir_host(s, hosts[i].dir, hosts[i].host,
				      hosts[i].offset_ns, &st, cause);
		if (!err && ingest_warning(&st, warn, sizeof(warn))) {
			char what[128];

			snprintf(what, sizeof(what), "warning: %s", hosts[i].host);
			propel_report(what, 0, warn);
		}
		snprintf(key, sizeof(key), "clock.%s", hosts[i].host);
		if (!err && hosts[i].clock &&
		    session_meta_set(s, key, hosts[i].clock))
			err = -EIO;
	}
	if (!err)
		err = ingest_write_meta(s, argc, argv);
	pr_log("store", "meta written");
	session_close(s);
	pr_log("store", "closed");
	symbols_free(c->sy);
	c->sy = NULL;
	pr_log("store", "symbols freed");
	if (err) {
		propel_cause(cause, err, "cannot store the session");
		goto fail;
	}
	if (live && (err = capture_move_live(c, cause)))
		goto fail;
	if (rename(c->tmp, c->db) < 0) {
		err = propel_cause(cause, -errno, "%s: %s", c->db,
				   strerror(errno));
		goto fail;
	}
	for (i = 0; i < nhosts; i++)
		capture_remove_dir(hosts[i].dir);
	capture_remove_dir_later(c->dir);
	pr_log("store", "renamed, removal started");
	free(c->tmp);
	free(c->db);
	c->tmp = c->db = NULL;
	return 0;
fail:
	symbols_free(c->sy);
	c->sy = NULL;
	unlink(c->tmp);
	capture_kept(cause, c->dir);
	free(c->tmp); /* the directory stays: its path is in the cause */
	free(c->db);
	c->tmp = c->db = NULL;
	return err;
}

int capture_buffer_opt(const char *verb, const char *arg, unsigned long *kb)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v < 64 ||
	    v > (1ul << 26)) {
		propel_reportf(verb, "--buffer-size %s: a size in KiB from 64 "
				     "to %lu", arg, 1ul << 26);
		return -1;
	}
	*kb = v;
	return 0;
}

uint32_t capture_ring_flags(unsigned long kb)
{
	return (uint32_t)(kb / 64) << PROPEL_START_RING_SHIFT;
}

void capture_agent_env(const char *dir, unsigned long kb, int libc, int full)
{
	char v[32];

	setenv("PROPEL_SESSION_DIR", dir, 1);
	if (kb) { /* else the agent's default for the mode */
		snprintf(v, sizeof(v), "%lu", kb);
		setenv("PROPEL_RING_KB", v, 1);
	}
	if (libc)
		setenv("PROPEL_TRACE_LIBC", "1", 1);
	if (full)
		setenv("PROPEL_KEEP_ALL", "1", 1);
}
