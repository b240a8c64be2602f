/*
 * engine/capture.h - what `propel record` and `propel attach` share: the
 * session directory in /dev/shm where agents write, finding the agent
 * library, and turning the directory into a session file at the end.
 */
#ifndef PROPEL_ENGINE_CAPTURE_H
#define PROPEL_ENGINE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbols;

struct capture {
	char dir[512];      /* /dev/shm/propel/<id> */
	char agent[4096];   /* path of libpropel-agent.so */
	char *db;           /* final session path */
	char *tmp;          /* written here, renamed to db at the end */
	struct symbols *sy; /* warmed while the run went (engine/ingest-warm.h),
			     * for the ingest; freed by capture_end/abort */
	struct ingest_live *live; /* record: the session stored as it went
				   * (engine/ingest-live.h); ended by
				   * capture_end/abort */
};

/*
 * Check that db can be written (creates db's temporary file), find the
 * agent, and create the session directory.  0 or -errno with *cause.
 */
int capture_begin(struct capture *c, const char *db, char **cause);

/*
 * Ingest the directory into the session, write meta, rename it over db,
 * remove the directory (renamed to a hidden name at once, its files
 * removed in the background: the spool's pages are not waited for).
 * Prints ingest warnings on stderr (one line).
 * Returns 0 or -errno with *cause; the directory is kept on failure so
 * nothing is lost (its path is in the cause).  Either way c holds nothing
 * more to free.
 */
int capture_end(struct capture *c, int argc, char *const *argv, char **cause);

/* One host's part of a --follow session (engine/follow.c): the directory
 * its propeld streamed back, its name, its clock's offset to ours and a
 * line for the session meta "clock.<host>". */
struct capture_host {
	const char *dir;
	const char *host;
	int64_t offset_ns;
	const char *clock;
};

/* capture_end for a session made of several hosts' directories (each
 * removed with c->dir once the session is stored). */
int capture_end_hosts(struct capture *c, int argc, char *const *argv,
		      const struct capture_host *hosts, size_t nhosts,
		      char **cause);

/*
 * The processes still tracing into the session: every pid named by a map
 * file of the directory ("<pid>.<nonce>.map", one per process image), or a
 * child of the caller (a child just forked has no map file yet), that is
 * alive and maps a file of the directory (its rings) or the agent library
 * (an attached process whose threads have no ring yet, an image that has
 * just exec'd and loads the agent again); and a child of the caller that
 * is exiting but not yet a zombie (its children are about to become the
 * caller's).  A process that exec'd an image without the agent has
 * detached.  capture_traced_pids returns how many,
 * their pids in *pids (malloc'd), or -errno; capture_traced_left the
 * count, with one of them in *one (if one is non-NULL).
 */
int capture_traced_pids(const struct capture *c, pid_t **pids);
/* Start time of pid (clock ticks after boot, /proc/PID/stat field 22), 0
 * if it is gone or a zombie. */
unsigned long long capture_proc_start(pid_t pid);
/* Remove a session directory and the files in it. */
void capture_remove_dir(const char *dir);
/* fn(arg, pid) for each traced process image of a session directory dir:
 * each names its map file "<pid>.<nonce>.map"; propel's own children
 * (propeld, the collectors) have none.  --vitals puts them in the
 * collectors' set (engine/run.c, engine/vitals-host.c). */
void capture_each_map(const char *dir, void (*fn)(void *arg, pid_t pid),
		      void *arg);
int capture_traced_left(const struct capture *c, pid_t *one);

/*
 * --buffer-size KB of record and attach: a ring's size per thread, 64 KiB
 * to 64 GiB, to *kb.  0, or -1 after a one-line error naming verb.
 */
int capture_buffer_opt(const char *verb, const char *arg, unsigned long *kb);
/* The agent's start flags (share/agent-abi.h) that carry a ring size of kb
 * KiB to a process injected live (attach, --follow's peers); 0 for kb 0,
 * the agent's default. */
uint32_t capture_ring_flags(unsigned long kb);
/*
 * In the environment of a program run traced from its start (record),
 * what its agent reads there: the session directory, the ring size (kb 0:
 * the agent's default for the mode), libc traced or not, full mode or
 * flight.
 */
void capture_agent_env(const char *dir, unsigned long kb, int libc, int full);

/* Remove the directory and temporary file without ingesting. */
void capture_abort(struct capture *c);

#endif
