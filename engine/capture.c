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
	return 0;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[1024];

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
		remove_dir(c->dir);
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
	remove_dir(c->dir);
	free(c->tmp);
	free(c->db);
	c->tmp = c->db = NULL;
	return 0;
fail:
	unlink(c->tmp);
	propel_cause(cause, err, "raw trace kept in %s", c->dir);
	return err;
}
