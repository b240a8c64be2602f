/*
 * engine/session.h - the session: one sqlite file holding everything a later
 * replay, report or tui needs (default ./propel.db).
 *
 * Schema (format version PROPEL_SESSION_FORMAT; stored in meta):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)
 *       format_version, created_ns, command, host, tsc_hz, crashed (0/1)
 *   processes(id INTEGER PRIMARY KEY, pid, ppid, nonce TEXT, exe TEXT,
 *             host TEXT, start_ns, end_ns, exit_status, signal)
 *       one row per process image (an exec makes a new row, same pid)
 *   threads(id INTEGER PRIMARY KEY, proc INTEGER, pid, tid, name TEXT,
 *           first_ns, last_ns, nevents, wrapped (0/1))
 *   functions(id INTEGER PRIMARY KEY, proc INTEGER, addr, name TEXT,
 *             module TEXT, file TEXT, line, flags)
 *       name is demangled; file:line is the function's definition
 *       (DWARF decl attributes)
 *   callsites(id INTEGER PRIMARY KEY, proc INTEGER, addr, file TEXT, line)
 *   events(id INTEGER PRIMARY KEY, pid, tid, ts_ns, kind, depth,
 *          func INTEGER, site INTEGER, arg0, arg1, arg2)
 *       kind is enum session_kind; events of one thread are stored in
 *       time order, so id order is per-thread time order.  depth is 0 for
 *       the outermost traced frame of the thread.  func -> functions.id,
 *       site -> callsites.id (entry: the call site), NULL when unknown.
 *       signal: arg0 = signo, arg1 = fault addr, arg2 = pc.
 *       send/recv: arg0 = fd, arg1 = bytes, arg2 = stream offset.
 *       fork: arg0 = child pid.  process_exit: arg0 = status.
 *       exit: arg0 = 1 when the frame was unwound (longjmp, exception).
 *       entry: arg0 = 1 when the entry was rebuilt for a frame lost in a
 *       wrapped ring (time = the thread's oldest record).
 *   messages(send INTEGER, recv INTEGER, peer TEXT)
 *       matched send/recv event pairs (filled by matching)
 *
 * Vital-sign tables are owned by engine/vitals-store.c and created by it.
 */
#ifndef PROPEL_ENGINE_SESSION_H
#define PROPEL_ENGINE_SESSION_H

#include <sqlite3.h>
#include <stdint.h>

#define PROPEL_SESSION_FORMAT 1
#define PROPEL_SESSION_DEFAULT "propel.db"

enum session_kind {
	SK_ENTRY = 1,
	SK_EXIT = 2,
	SK_SIGNAL = 3,
	SK_THREAD_START = 5,
	SK_THREAD_EXIT = 6,
	SK_FORK = 7,
	SK_EXEC = 8,
	SK_PROCESS_EXIT = 9,
	SK_SEND = 10,
	SK_RECV = 11,
	SK_LOST = 12,
};

/* "entry", "exit", ... ; NULL for an unknown kind */
const char *session_kind_name(int kind);

enum session_open_flags {
	SESSION_READ = 0,
	SESSION_CREATE = 1, /* create or truncate: a new recording */
	SESSION_WRITE = 2,  /* open an existing one for writing */
};

struct session;

/*
 * Open a session file.  Reading checks that the file is a sqlite database
 * with our schema and a format version we understand; a corrupt, truncated
 * or newer file is refused with a one-line cause.
 */
int session_open(const char *path, int flags, struct session **out,
		 char **cause);
void session_close(struct session *s);
sqlite3 *session_db(struct session *s);
const char *session_path(struct session *s);

int session_meta_set(struct session *s, const char *key, const char *value);
/* Returns a malloc'd value or NULL. */
char *session_meta_get(struct session *s, const char *key);

/* Transactions around bulk ingest. */
int session_begin(struct session *s);
int session_commit(struct session *s);

/* Run SQL with no result rows; 0 or -EIO with *cause. */
int session_exec(struct session *s, const char *sql, char **cause);

/* A call site's source position: *file malloc'd; -ENOENT when unknown. */
int session_callsite(struct session *s, int64_t site, char **file, int *line);

#endif
