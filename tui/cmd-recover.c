/*
 * tui/cmd-recover.c - `propel recover [-o DB] [DIR]`: build a session from
 * the rings a dead propel left in /dev/shm/propel (LTTng's lttng-crash).
 *
 * When propel dies without detaching (kill -9, OOM, a dropped ssh), each
 * agent's lease (share/agent-abi.h) switches it off after PROPEL_LEASE_MS
 * and leaves its map and ring files in the session directory.  recover
 * picks DIR, or the newest directory under PROPEL_SHM_ROOT whose
 * coordinator is gone (its PROPEL_COORD_FILE names a process that no longer
 * runs; without that file, the pid the directory is named after), waits a
 * lease for agents still switching themselves off, and ingests it as
 * record does (engine/ingest.h: each ring up to its last committed
 * record).  The directory is removed only once the session file is
 * written and renamed into place; on any error it is kept.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
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
#include "tui/cmd.h"
#include "tui/opt.h"

/* 1 if the directory's coordinator is gone (or unknown and its named pid
 * is gone), 0 if it still runs: that session is not ours to take. */
static int recover_abandoned(const char *dir)
{
	char path[1400];
	const char *base = strrchr(dir, '/');
	unsigned long long start = 0;
	int pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_COORD_FILE);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d %llu", &pid, &start) != 2)
			pid = 0;
		fclose(f);
		if (pid > 0)
			return capture_proc_start(pid) != start;
	}
	pid = atoi(base ? base + 1 : dir); /* "<pid>-<time>" */
	return pid <= 0 || !capture_proc_start(pid);
}

/* Counts of ring and map files in dir; -errno if it cannot be read. */
static int recover_count(const char *dir, int *rings, int *maps)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	*rings = *maps = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n > 5 && !strcmp(e->d_name + n - 5, ".ring"))
			(*rings)++;
		if (n > 4 && !strcmp(e->d_name + n - 4, ".map"))
			(*maps)++;
	}
	closedir(d);
	return 0;
}

/* The newest abandoned session directory with rings, into out. */
static int recover_pick(char *out, size_t n)
{
	DIR *d = opendir(PROPEL_SHM_ROOT);
	struct dirent *e;
	time_t best = 0;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[1024];
		struct stat st;
		int rings, maps;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", PROPEL_SHM_ROOT, e->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode) ||
		    recover_count(path, &rings, &maps) || !rings ||
		    !recover_abandoned(path))
			continue;
		if (!found || st.st_mtime >= best) {
			best = st.st_mtime;
			snprintf(out, n, "%s", path);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* 1 while some process of the session is alive with its agent still on:
 * a map file without its "X" (switched off) or "E" (exited) line whose
 * pid runs. */
static int recover_agents_on(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int on = 0;

	if (!d)
		return 0;
	while (!on && (e = readdir(d))) {
		char path[1400], line[512];
		size_t n = strlen(e->d_name);
		int done = 0;
		FILE *f;

		if (n < 5 || strcmp(e->d_name + n - 4, ".map"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if ((line[0] == 'X' || line[0] == 'E') && line[1] == ' ')
				done = 1;
		fclose(f);
		on = !done && capture_proc_start(atoi(e->d_name)) != 0;
	}
	closedir(d);
	return on;
}

static int recover_store(const char *dir, const char *db, char **cause)
{
	struct ingest_stats st;
	struct session *s = NULL;
	char *tmp = NULL, warn[512];
	char *meta[] = { "propel", "recover", (char *)dir };
	int err;

	memset(&st, 0, sizeof(st));
	if (asprintf(&tmp, "%s.tmp-%d", db, (int)getpid()) < 0)
		return -ENOMEM;
	err = session_open(tmp, SESSION_CREATE, &s, cause);
	if (err)
		goto out;
	err = ingest_dir(s, dir, &st, cause);
	if (!err)
		err = ingest_write_meta(s, 3, meta);
	session_close(s);
	if (err) {
		propel_cause(cause, err, "%s: cannot store the session", dir);
		goto out;
	}
	if (!st.threads) {
		err = propel_cause(cause, -EINVAL,
				   "%s: no ring could be read (%llu corrupt, "
				   "%llu truncated, %llu of a newer propel); "
				   "the directory is kept",
				   dir, (unsigned long long)st.rings_corrupt,
				   (unsigned long long)st.rings_truncated,
				   (unsigned long long)st.rings_newer);
		goto out;
	}
	if (ingest_warning(&st, warn, sizeof(warn)))
		propel_report("warning", 0, warn);
	if (rename(tmp, db) < 0) {
		err = propel_cause(cause, -errno, "%s: %s", db, strerror(errno));
		goto out;
	}
	fprintf(stderr,
		"propel: recover: %llu events, %llu threads, %llu processes "
		"from %s into %s\n",
		(unsigned long long)st.events, (unsigned long long)st.threads,
		(unsigned long long)st.processes, dir, db);
	capture_remove_dir(dir);
out:
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

static int cmd_recover_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = PROPEL_SESSION_DEFAULT;
	char dir[1024], *cause = NULL;
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	int c, err, rings, maps, waited = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (opt_output("recover", "-o", optarg, 0))
				return 2;
			db = optarg;
			break;
		default:
			opt_bad("recover", c, argv);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "usage: propel recover %s\n",
			cmd_recover_entry.usage);
		return 2;
	}
	if (optind < argc) {
		snprintf(dir, sizeof(dir), "%s", argv[optind]);
		err = recover_count(dir, &rings, &maps);
		if (err) {
			fprintf(stderr, "propel: recover: %s: %s\n", dir,
				strerror(-err));
			return 1;
		}
		if (!rings) {
			fprintf(stderr, "propel: recover: %s: no rings left\n",
				dir);
			return 1;
		}
		if (!recover_abandoned(dir)) {
			fprintf(stderr,
				"propel: recover: %s: its propel is still "
				"running (it stores the session itself)\n",
				dir);
			return 1;
		}
	} else if (!recover_pick(dir, sizeof(dir))) {
		fprintf(stderr, "propel: recover: no rings left in %s "
				"(no session of a propel that died)\n",
			PROPEL_SHM_ROOT);
		return 1;
	}
	/* agents still on switch themselves off within their lease */
	while (recover_agents_on(dir) && waited < PROPEL_LEASE_MS + 2000) {
		nanosleep(&nap, NULL);
		waited += 50;
	}
	if (recover_agents_on(dir))
		propel_report("warning", 0,
			      "an agent of the session is still on (see "
			      "propel detach PID): its newest records may be "
			      "missing");
	err = recover_store(dir, db, &cause);
	if (err) {
		propel_report("recover", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

const struct propel_cmd cmd_recover_entry = {
	.name = "recover",
	.usage = "[-o DB] [DIR]",
	.summary = "build a session from the rings a dead propel left\n"
		   "  -o DB   session file (default ./propel.db)\n"
		   "  DIR     a session directory (default: the newest in "
		   PROPEL_SHM_ROOT " whose propel is gone);\n"
		   "          removed once the session is written",
	.exec = cmd_recover_exec,
};
