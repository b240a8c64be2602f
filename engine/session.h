/*
 * engine/session.h - the session: one sqlite file holding everything a later
 * replay, report or tui needs (default ./propel.db).
 *
 * Schema (format version PROPEL_SESSION_FORMAT; stored in meta):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)
 *       format_version, created_ns, command, host, tsc_hz, crashed (0/1),
 *       estimated_records (call records dated between two stamps under
 *       --timing=sampled, absent when none)
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
 *   chunks(id INTEGER PRIMARY KEY, pid, tid, first_ts, last_ts,
 *          first_seq, last_seq, depth_min, depth_max, count, codec,
 *          checksum, size, kinds)   the chunk index (format 2); kinds
 *          has bit 1 << kind for each event kind in the chunk (NULL in
 *          the first format-2 files: unknown)
 *   chunk_data(id INTEGER PRIMARY KEY, blob)   the chunk bodies, same id
 *       Events are stored in chunks of up to CHUNK_EVENTS events of one
 *       thread (engine/chunk.h: the encoding, the writer and the one
 *       reader every module uses).  An event's id (its sequence number)
 *       is first_seq + its index in the chunk; ids are unique in the
 *       session and ascend in time order within a thread.  The index is
 *       kept apart from the bodies so that it stays in a few pages.
 *   events(id INTEGER PRIMARY KEY, pid, tid, ts_ns, kind, depth,
 *          func INTEGER, site INTEGER, arg0, arg1, arg2)
 *       the row form: what format 1 stored, and what hand-written test
 *       sessions still write.  Read (engine/chunk.h) only when the
 *       session has no chunks.  The fields are those of a chunked event:
 *       kind is enum propel_kind; events of one thread are stored in
 *       time order, so id order is per-thread time order.  depth is 0 for
 *       the outermost traced frame of the thread.  func -> functions.id,
 *       site -> callsites.id (entry: the call site), NULL when unknown.
 *       signal: arg0 = signo, arg1 = fault addr, arg2 = pc.
 *       send/recv: arg0 = fd, arg1 = bytes, arg2 = stream offset.
 *       fork: arg0 = child pid.  process_exit: arg0 = status.
 *       exit: arg0 = 1 when the frame was unwound (longjmp, exception).
 *       entry: arg0 = 1 when the entry was rebuilt for a frame lost in a
 *       wrapped ring (time = the thread's oldest record).
 *       entry, exit: arg2 (set only then) = the argument or return value
 *       a mapping directive named (record --directive, analysis/flows.h).
 *   messages(send INTEGER, recv INTEGER, peer TEXT)
 *       matched send/recv event pairs (engine/match.c): event ids; peer
 *       holds the channel (comm.chan)
 *   comm(event INTEGER PRIMARY KEY, pid, tid, ts_ns, kind, fd, bytes,
 *        chan TEXT, dir, peer TEXT, offset, hash)
 *       one row per send/recv event (event = its id): the channel as both
 *       ends name it and the direction (engine/chan.h), the other end as
 *       the program sees it, the stream offset of the first byte (NULL
 *       for datagrams) or the datagram's content hash (NULL for streams).
 *       chan is NULL when the agent could not name the channel.
 *
 * Vital-sign tables are owned by engine/vitals-store.c and created by it.
 */
#ifndef PROPEL_ENGINE_SESSION_H
#define PROPEL_ENGINE_SESSION_H

#include <sqlite3.h>
#include <stdint.h>

#include "share/kinds.h"

#define PROPEL_SESSION_FORMAT 2
#define PROPEL_SESSION_DEFAULT "propel.db"

/* The event kinds (share/kinds.h) by the engine's short names. */
#define SK_ENTRY PROPEL_KIND_ENTRY
#define SK_EXIT PROPEL_KIND_EXIT
#define SK_SIGNAL PROPEL_KIND_SIGNAL
#define SK_THREAD_START PROPEL_KIND_THREAD_START
#define SK_THREAD_EXIT PROPEL_KIND_THREAD_EXIT
#define SK_FORK PROPEL_KIND_FORK
#define SK_EXEC PROPEL_KIND_EXEC
#define SK_PROCESS_EXIT PROPEL_KIND_PROCESS_EXIT
#define SK_SEND PROPEL_KIND_SEND
#define SK_RECV PROPEL_KIND_RECV
#define SK_LOST PROPEL_KIND_LOST
/* never in a chunk: engine/replay.c merges the rows of table offcpu
 * (engine/offcpu-store.h) into a thread's events when asked to */
#define SK_OFFCPU PROPEL_KIND_OFFCPU
#define SK_KSIGNAL PROPEL_KIND_KSIGNAL /* the same, from table ksignals */

/* "entry", "exit", ... ; NULL for an unknown kind (engine/event.c) */
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
/* 0 when path names a regular file (what session_open reads); else -errno
 * with "PATH: No such file or directory", "PATH: is a directory, not a
 * session file" or "PATH: not a regular file" (a device, a FIFO).  For a
 * command that checks a session it opens later (report --reference). */
int session_check_path(const char *path, char **cause);
void session_close(struct session *s);
/*
 * 1 the first time key is given for s, 0 after: a warning about the file
 * (a damaged chunk: its row id; SESSION_WARN_*) is said once however many
 * readers walk it (an exporter walks it up to three times).
 */
#define SESSION_WARN_INDEX (-1) /* the chunk index is cut short */
#define SESSION_WARN_NAMES (-2) /* function and call site names cut short */
int session_warn_once(struct session *s, int64_t key);
/* Every warning about s counted as said (0 from session_warn_once): a
 * second reader of a file whose first reader says them (a TUI view's
 * background analysis, tui/bg.c). */
void session_quiet(struct session *s);
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

/*
 * One event as stored, decoded (engine/chunk.h reads and writes them).
 * func and site are row ids, 0 for none (NULL).
 */
#define SE_ARG0 0x01
#define SE_ARG1 0x02
#define SE_ARG2 0x04
#define SE_DEPTH 0x08 /* depth known (always, but in hand-made rows) */
struct session_event {
	int64_t id, ts_ns;
	int64_t func, site;
	int64_t arg[3];
	int32_t depth;
	uint8_t kind; /* enum propel_kind */
	uint8_t has;  /* SE_* */
};

/* One row of the chunk index. */
struct session_chunk {
	int64_t id, pid, tid;
	int64_t first_ts, last_ts, first_seq, last_seq;
	int32_t depth_min, depth_max;
	int64_t count;
	int codec;
	uint64_t checksum;
	int64_t size; /* bytes of the body */
	int32_t kinds; /* bit 1 << kind for each kind in the chunk; -1 unknown */
};

/* Store one chunk (index row and body).  0 or -EIO. */
int session_chunk_put(struct session *s, struct session_chunk *c,
		      const void *body, size_t size);
/*
 * The whole chunk index, ordered by (pid, tid, first_seq), malloc'd.
 * A damaged index (a truncated file) yields the rows it could read and
 * *partial = 1.  0, or -EIO/-ENOMEM.
 */
int session_chunk_index(struct session *s, struct session_chunk **out,
			size_t *n, int *partial);
/* A chunk's body, malloc'd: 0, -ENOENT (missing), -EIO (unreadable). */
int session_chunk_body(struct session *s, int64_t id, void **body,
		       size_t *size);
/* The highest event id stored so far (0 when none). */
int64_t session_max_seq(struct session *s);

/* The row form (table events), for sessions without chunks. */
struct session_rows;
/* Does the events table hold any row? */
int session_rows_any(struct session *s);
/* The threads of the row form, in order of their first id: pid/tid pairs
 * (malloc'd, 2 * *n values). */
int session_rows_threads(struct session *s, int64_t **pairs, size_t *n);
int session_rows_open(struct session *s, int64_t pid, int64_t tid,
		      struct session_rows **out);
/* 1 and *ev filled, 0 at the end, -EIO (corrupt or truncated file). */
int session_rows_next(struct session_rows *r, struct session_event *ev);
void session_rows_close(struct session_rows *r);
/* One row by id: 0, -ENOENT. */
int session_rows_get(struct session *s, int64_t id, struct session_event *ev,
		     int64_t *pid, int64_t *tid);

/* 1 when the file is shorter than sqlite's page count says. */
int session_truncated(struct session *s);

/* Where a function's code is: the file (its module when readable, else its
 * process's executable), its name and address; *file, *name malloc'd.
 * 0, -ENOENT, -EIO. */
int session_func_where(struct session *s, int64_t func, char **file,
		       char **name, int64_t *addr);
/* The traced function of func's process (not a PLT stub) with the
 * highest run-time address at or below pc, in *out.  0, -ENOENT, -EIO. */
int session_func_at(struct session *s, int64_t func, int64_t pc,
		    int64_t *out);
/* A call site's source position: *file malloc'd; -ENOENT when unknown. */
int session_callsite(struct session *s, int64_t site, char **file, int *line);

/*
 * The processes of a session, one per pid (its latest image: after an
 * exec, the program it became), ordered by their first start.  exe and
 * host are malloc'd (NULL when unknown); command is the name shown
 * (session_proc_name; points into exe or name, or "?").  execd = 1 when an earlier image of the pid exec'd
 * into this one.  end_ns 0 and has_status 0 while unknown.  Used by the
 * threads pane (tui/view-threads.c) and the exporters (engine/export*.c).
 */
struct session_proc {
	int64_t pid, ppid;
	char *exe, *host, *name; /* name: the main thread's (comm) */
	const char *command;
	int64_t start_ns, end_ns;
	int64_t exit_status, signal;
	int has_status, execd;
};
/* 0 and *out (malloc'd, *n rows), or -EIO/-ENOMEM with *cause. */
int session_processes(struct session *s, struct session_proc **out, size_t *n,
		      char **cause);
void session_processes_free(struct session_proc *p, size_t n);
/*
 * The name a process is shown by: its executable's base name, unless its
 * main thread's name (comm, at most 15 characters) is not the start of it
 * -- a multi-call binary started through a symlink (Debian's
 * /usr/bin/redis-server -> redis-check-rdb: ps says redis-server), which
 * the kernel's exe link resolves away.  comm NULL or "": the base name.
 */
const char *session_proc_name(const char *exe, const char *comm);
/* That comm as a column of a query over processes: the main thread's name
 * in the threads table. */
#define SESSION_PROC_COMM_SQL                                               \
	"(SELECT th.name FROM threads th WHERE th.proc = processes.id"      \
	" AND th.tid = processes.pid ORDER BY th.id LIMIT 1)"
/* The threads table, by first event: name malloc'd (NULL when unknown). */
struct session_thread {
	int64_t pid, tid;
	char *name;
	int64_t first_ns, last_ns;
};
int session_threads(struct session *s, struct session_thread **out,
		    size_t *n, char **cause);
void session_threads_free(struct session_thread *t, size_t n);
/* The row of pid in p (n rows), or NULL. */
const struct session_proc *session_proc_find(const struct session_proc *p,
					     size_t n, int64_t pid);

#endif
