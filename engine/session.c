/*
 * engine/session.c - opening, creating and checking session files (schema in
 * engine/session.h).  SESSION_CREATE replaces the file; recorders that must
 * not lose an older session on failure create a temporary path and rename it
 * over the real one when they finish.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/session.h"
#include "share/log.h"

struct session {
	sqlite3 *db;
	char *path;
	long format;	/* of the file opened (PROPEL_SESSION_FORMAT if created) */
	int truncated;	/* shorter than its page count: read what is there */
	sqlite3_stmt *chunk_ins, *chunk_body_ins, *chunk_body_get;
	int64_t *warned; /* session_warn_once's keys */
	size_t nwarned;
	int quiet; /* session_quiet: every warning said */
};

struct session_rows {
	struct session *s;
	sqlite3_stmt *st;
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS processes(id INTEGER PRIMARY KEY, pid INTEGER,"
	" ppid INTEGER, nonce TEXT, exe TEXT, host TEXT, start_ns INTEGER,"
	" end_ns INTEGER, exit_status INTEGER, signal INTEGER);"
	"CREATE TABLE IF NOT EXISTS threads(id INTEGER PRIMARY KEY, proc INTEGER,"
	" pid INTEGER, tid INTEGER, name TEXT, first_ns INTEGER, last_ns INTEGER,"
	" nevents INTEGER, wrapped INTEGER);"
	"CREATE TABLE IF NOT EXISTS functions(id INTEGER PRIMARY KEY, proc INTEGER,"
	" addr INTEGER, name TEXT, module TEXT, file TEXT, line INTEGER,"
	" flags INTEGER);"
	"CREATE TABLE IF NOT EXISTS callsites(id INTEGER PRIMARY KEY,"
	" proc INTEGER, addr INTEGER, file TEXT, line INTEGER);"
	"CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, pid INTEGER,"
	" tid INTEGER, first_ts INTEGER, last_ts INTEGER, first_seq INTEGER,"
	" last_seq INTEGER, depth_min INTEGER, depth_max INTEGER, count INTEGER,"
	" codec INTEGER, checksum INTEGER, size INTEGER, kinds INTEGER);"
	"CREATE TABLE IF NOT EXISTS chunk_data(id INTEGER PRIMARY KEY, body BLOB);"
	"CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, pid INTEGER,"
	" tid INTEGER, ts_ns INTEGER, kind INTEGER, depth INTEGER, func INTEGER,"
	" site INTEGER, arg0 INTEGER, arg1 INTEGER, arg2 INTEGER);"
	"CREATE INDEX IF NOT EXISTS events_thread ON events(pid, tid, id);"
	"CREATE TABLE IF NOT EXISTS messages(send INTEGER, recv INTEGER,"
	" peer TEXT);"
	"CREATE INDEX IF NOT EXISTS messages_recv ON messages(recv);"
	"CREATE TABLE IF NOT EXISTS comm(event INTEGER PRIMARY KEY, pid INTEGER,"
	" tid INTEGER, ts_ns INTEGER, kind INTEGER, fd INTEGER, bytes INTEGER,"
	" chan TEXT, dir INTEGER, peer TEXT, offset INTEGER, hash INTEGER);"
	/* sends the agent held for a propagation request, from ts_ns
	 * (inject/agent/propagate.c): propel's time in the thread; event
	 * is the send's (comm) */
	"CREATE TABLE IF NOT EXISTS holds(event INTEGER PRIMARY KEY,"
	" pid INTEGER, tid INTEGER, ts_ns INTEGER, dur_ns INTEGER);"
	/* --args (engine/callvals.h): the entries' argument registers
	 * (argchunks, engine/argchunk.h; argvals, a row per entry, in the
	 * sessions written before), and a function's arguments as DWARF
	 * gives them */
	"CREATE TABLE IF NOT EXISTS argvals(event INTEGER PRIMARY KEY,"
	" a0 INTEGER, a1 INTEGER, a2 INTEGER, a3 INTEGER, a4 INTEGER,"
	" a5 INTEGER);"
	"CREATE TABLE IF NOT EXISTS argchunks(first INTEGER PRIMARY KEY,"
	" last INTEGER NOT NULL, n INTEGER NOT NULL, body BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS params(func INTEGER PRIMARY KEY, sig TEXT);";

/* Column kind of events, comm and each chunk's records holds these
 * integers in every format-2 file already written: they stay. */
_Static_assert(SK_ENTRY == 1 && SK_EXIT == 2 && SK_SIGNAL == 3 &&
		       SK_THREAD_START == 5 && SK_THREAD_EXIT == 6 &&
		       SK_FORK == 7 && SK_EXEC == 8 && SK_PROCESS_EXIT == 9 &&
		       SK_SEND == 10 && SK_RECV == 11 && SK_LOST == 12 &&
		       SK_OFFCPU == 13 && SK_KSIGNAL == 14 &&
		       PROPEL_KIND_COUNT == 15,
	       "the session format's kinds");

int session_exec(struct session *s, const char *sql, char **cause)
{
	char *msg = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		propel_cause(cause, -EIO, "%s: %s", s->path,
			     msg ? msg : sqlite3_errmsg(s->db));
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

int session_meta_set(struct session *s, const char *key, const char *value)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db,
			       "INSERT OR REPLACE INTO meta(key,value) VALUES(?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

char *session_meta_get(struct session *s, const char *key)
{
	sqlite3_stmt *st;
	char *v = NULL;

	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key=?", -1,
			       &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

int session_begin(struct session *s)
{
	return session_exec(s, "BEGIN", NULL);
}

int session_commit(struct session *s)
{
	return session_exec(s, "COMMIT", NULL);
}

/* Is the file shorter than the page count in its header says? */
static int session_header_truncated(const char *path)
{
	unsigned char h[32];
	struct stat sb;
	long long psize, pages;
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return 0;
	n = (int)read(fd, h, sizeof(h));
	if (fstat(fd, &sb) < 0)
		n = 0;
	close(fd);
	if (n != (int)sizeof(h) || memcmp(h, "SQLite format 3", 16) != 0)
		return 0;
	psize = h[16] << 8 | h[17];
	if (psize == 1)
		psize = 65536;
	pages = (long long)h[28] << 24 | h[29] << 16 | h[30] << 8 | h[31];
	return pages * psize > sb.st_size;
}

/* A read-only open must not create a file, and must say clearly what is
 * wrong with one that is not ours. */
static int check_readable(struct session *s, char **cause)
{
	char *v;
	long fmt;
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1,
				&st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK
						    : sqlite3_errcode(s->db);
	sqlite3_finalize(st);
	if (rc == SQLITE_NOTADB)
		return propel_cause(cause, -EINVAL,
				    "%s: not a propel session (not a sqlite file)",
				    s->path);
	if (rc == SQLITE_CORRUPT)
		return propel_cause(cause, -EINVAL,
				    "%s: session file is corrupt or truncated",
				    s->path);
	if (rc != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s: %s", s->path,
				    sqlite3_errmsg(s->db));
	v = session_meta_get(s, "format_version");
	if (!v)
		return propel_cause(cause, -EINVAL,
				    "%s: not a propel session (no format version)",
				    s->path);
	fmt = strtol(v, NULL, 10);
	free(v);
	if (fmt > PROPEL_SESSION_FORMAT)
		return propel_cause(cause, -EPROTO,
				    "%s: session format %ld is newer than this "
				    "propel understands (%d); upgrade propel",
				    s->path, fmt, PROPEL_SESSION_FORMAT);
	if (fmt < 1)
		return propel_cause(cause, -EINVAL,
				    "%s: not a propel session (format %ld)",
				    s->path, fmt);
	s->format = fmt;
	/* A truncated file (session_open found it shorter than its header
	 * says); a full structural check only for small files (it reads
	 * everything). */
	{
		struct stat sb;

		if (s->truncated) {
			/* chunked events: every chunk still there is read,
			 * the lost ones are named by the reader */
			if (fmt < 2)
				return propel_cause(cause, -EINVAL,
						    "%s: session file is "
						    "corrupt or truncated",
						    s->path);
			return 0;
		}
		/* format 2: a damaged chunk is found (checksum) and skipped by
		 * engine/chunk.c; a structural check would refuse it all */
		if (fmt >= 2)
			return 0;
		if (stat(s->path, &sb) == 0 && sb.st_size > (64 << 20))
			return 0;
	}
	rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);

		if (!r || strcmp(r, "ok") != 0) {
			sqlite3_finalize(st);
			return propel_cause(cause, -EINVAL,
					    "%s: session file is corrupt or "
					    "truncated",
					    s->path);
		}
	} else if (rc == SQLITE_OK) {
		rc = sqlite3_errcode(s->db);
		sqlite3_finalize(st);
		return propel_cause(cause, -EINVAL,
				    "%s: session file is corrupt or truncated",
				    s->path);
	}
	sqlite3_finalize(st);
	return 0;
}

int session_check_path(const char *path, char **cause)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return propel_cause(cause, -EISDIR,
				    "%s: is a directory, not a session file",
				    path);
	if (!S_ISREG(sb.st_mode))
		return propel_cause(cause, -EINVAL,
				    "%s: not a regular file, not a session",
				    path);
	return 0;
}

int session_open(const char *path, int flags, struct session **out,
		 char **cause)
{
	struct session *s;
	int oflags, err;
	char buf[32];

	*out = NULL;
	if (!path)
		path = PROPEL_SESSION_DEFAULT;
	if (flags != SESSION_CREATE &&
	    (err = session_check_path(path, cause)) != 0)
		return err;
	if (flags == SESSION_CREATE && access(path, F_OK) == 0 &&
	    (err = session_check_path(path, cause)) != 0)
		return err;
	if (flags == SESSION_CREATE && unlink(path) < 0 && errno != ENOENT)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->path = strdup(path);
	/* a session is used from one thread at a time */
	oflags = (flags == SESSION_READ ? SQLITE_OPEN_READONLY
					: SQLITE_OPEN_READWRITE) |
		 SQLITE_OPEN_NOMUTEX;
	if (flags == SESSION_CREATE)
		oflags |= SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &s->db, oflags, NULL) != SQLITE_OK) {
		err = propel_cause(cause, -EIO, "%s: %s", path,
				   s->db ? sqlite3_errmsg(s->db)
					 : "cannot open");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	/* sqlite refuses a file shorter than its header says unless the
	 * schema is "writable"; read-only here, it reads what is left */
	if (flags == SESSION_READ && session_header_truncated(path)) {
		s->truncated = 1;
		sqlite3_exec(s->db, "PRAGMA writable_schema=ON", NULL, NULL,
			     NULL);
	}
	if (flags == SESSION_CREATE) {
		err = session_exec(s, "PRAGMA journal_mode=OFF;"
				      "PRAGMA synchronous=OFF;",
				   cause);
		if (!err)
			err = session_exec(s, schema, cause);
		s->format = PROPEL_SESSION_FORMAT;
		snprintf(buf, sizeof(buf), "%d", PROPEL_SESSION_FORMAT);
		if (!err && session_meta_set(s, "format_version", buf))
			err = propel_cause(cause, -EIO, "%s: cannot write",
					   path);
		if (err)
			goto fail;
	} else {
		err = check_readable(s, cause);
		if (err)
			goto fail;
		if (flags == SESSION_WRITE) {
			err = session_exec(s, schema, cause);
			if (err)
				goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	session_close(s);
	return err;
}

void session_close(struct session *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->chunk_ins);
	sqlite3_finalize(s->chunk_body_ins);
	sqlite3_finalize(s->chunk_body_get);
	sqlite3_close(s->db);
	free(s->warned);
	free(s->path);
	free(s);
}

int session_warn_once(struct session *s, int64_t key)
{
	int64_t *n;
	size_t i;

	if (s->quiet)
		return 0;
	for (i = 0; i < s->nwarned; i++)
		if (s->warned[i] == key)
			return 0;
	n = realloc(s->warned, (s->nwarned + 1) * sizeof(*n));
	if (!n)
		return 1; /* said again rather than not at all */
	s->warned = n;
	s->warned[s->nwarned++] = key;
	return 1;
}

void session_quiet(struct session *s)
{
	s->quiet = 1;
}

sqlite3 *session_db(struct session *s)
{
	return s->db;
}

const char *session_path(struct session *s)
{
	return s->path;
}

int session_func_where(struct session *s, int64_t func, char **file,
		       char **name, int64_t *addr)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	*file = *name = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT f.module, p.exe, f.name, f.addr FROM "
			       "functions f LEFT JOIN processes p ON p.id = "
			       "f.proc WHERE f.id=?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, func);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 2)) {
		const char *mod = (const char *)sqlite3_column_text(st, 0);
		const char *pexe = (const char *)sqlite3_column_text(st, 1);

		if (!mod || access(mod, R_OK) != 0)
			mod = pexe;
		if (mod) {
			*file = strdup(mod);
			*name = strdup((const char *)sqlite3_column_text(st, 2));
			*addr = sqlite3_column_int64(st, 3);
			err = *file && *name ? 0 : -ENOMEM;
		}
	}
	sqlite3_finalize(st);
	if (err) {
		free(*file);
		free(*name);
		*file = *name = NULL;
	}
	return err;
}

int session_func_at(struct session *s, int64_t func, int64_t pc,
		    int64_t *out)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT id FROM functions WHERE proc = (SELECT "
			       "proc FROM functions WHERE id=?) AND addr <= ? "
			       "AND (flags & 1) = 0 ORDER BY addr DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, func);
	sqlite3_bind_int64(st, 2, pc);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		err = 0;
	}
	sqlite3_finalize(st);
	return err;
}

int session_callsite(struct session *s, int64_t site, char **file, int *line)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	*file = NULL;
	*line = 0;
	if (site <= 0)
		return -ENOENT;
	if (sqlite3_prepare_v2(s->db, "SELECT file, line FROM callsites WHERE id=?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, site);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		*file = strdup((const char *)sqlite3_column_text(st, 0));
		*line = sqlite3_column_int(st, 1);
		err = *file ? 0 : -ENOMEM;
	}
	sqlite3_finalize(st);
	return err;
}

static char *session_col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? strdup((const char *)t) : NULL;
}

int session_processes(struct session *s, struct session_proc **out, size_t *n,
		      char **cause)
{
	sqlite3_stmt *st;
	struct session_proc *v = NULL;
	size_t nv = 0, cap = 0, i;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	/* images in insertion order; a later image of a pid replaces the
	 * earlier one in place (its first start keeps the order) */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT pid, ppid, exe, host, start_ns, end_ns,"
			       " exit_status, signal, " SESSION_PROC_COMM_SQL
			       " FROM processes"
			       " ORDER BY coalesce(start_ns, 0), id",
			       -1, &st, NULL) != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s: %s", s->path,
				    sqlite3_errmsg(s->db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		struct session_proc *p = NULL;

		for (i = 0; i < nv; i++)
			if (v[i].pid == pid)
				p = &v[i];
		if (p) {
			free(p->exe);
			free(p->host);
			free(p->name);
			p->execd = 1;
		} else {
			if (nv == cap) {
				size_t nc = cap ? 2 * cap : 16;
				struct session_proc *nvv =
					realloc(v, nc * sizeof(*v));

				if (!nvv) {
					err = -ENOMEM;
					break;
				}
				v = nvv;
				cap = nc;
			}
			p = &v[nv++];
			memset(p, 0, sizeof(*p));
			p->pid = pid;
			p->ppid = sqlite3_column_int64(st, 1);
			p->start_ns = sqlite3_column_int64(st, 4);
		}
		p->exe = session_col_text(st, 2);
		p->host = session_col_text(st, 3);
		p->end_ns = sqlite3_column_int64(st, 5);
		p->has_status = sqlite3_column_type(st, 6) != SQLITE_NULL;
		p->exit_status = sqlite3_column_int64(st, 6);
		p->signal = sqlite3_column_int64(st, 7);
		p->name = session_col_text(st, 8);
		p->command = session_proc_name(p->exe, p->name);
		if (!p->command)
			p->command = "?";
	}
	if (!err && rc != SQLITE_DONE)
		err = propel_cause(cause, -EIO, "%s: %s", s->path,
				   sqlite3_errmsg(s->db));
	else if (err)
		propel_cause(cause, err, "%s: out of memory", s->path);
	sqlite3_finalize(st);
	if (err) {
		session_processes_free(v, nv);
		return err;
	}
	*out = v;
	*n = nv;
	return 0;
}

int session_threads(struct session *s, struct session_thread **out,
		    size_t *n, char **cause)
{
	struct session_thread *v = NULL, *nvv;
	size_t nv = 0, cap = 0;
	sqlite3_stmt *st;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT pid, tid, name, first_ns, last_ns"
			       " FROM threads ORDER BY first_ns, pid, tid",
			       -1, &st, NULL) != SQLITE_OK)
		return propel_cause(cause, -EIO, "%s: %s", s->path,
				    sqlite3_errmsg(s->db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (nv == cap) {
			cap = cap ? 2 * cap : 16;
			nvv = realloc(v, cap * sizeof(*v));
			if (!nvv) {
				err = propel_cause(cause, -ENOMEM,
						   "%s: out of memory", s->path);
				break;
			}
			v = nvv;
		}
		v[nv].pid = sqlite3_column_int64(st, 0);
		v[nv].tid = sqlite3_column_int64(st, 1);
		v[nv].name = session_col_text(st, 2);
		v[nv].first_ns = sqlite3_column_int64(st, 3);
		v[nv].last_ns = sqlite3_column_int64(st, 4);
		nv++;
	}
	if (!err && rc != SQLITE_DONE)
		err = propel_cause(cause, -EIO, "%s: %s", s->path,
				   sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	if (err) {
		session_threads_free(v, nv);
		return err;
	}
	*out = v;
	*n = nv;
	return 0;
}

void session_threads_free(struct session_thread *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

void session_processes_free(struct session_proc *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(p[i].exe);
		free(p[i].host);
		free(p[i].name);
	}
	free(p);
}

const char *session_proc_name(const char *exe, const char *comm)
{
	const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;

	if (comm && *comm && (!base || strncmp(base, comm, strlen(comm))))
		return comm;
	return base;
}

const struct session_proc *session_proc_find(const struct session_proc *p,
					     size_t n, int64_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

int session_truncated(struct session *s)
{
	return s->truncated;
}

/* ---- chunks (engine/chunk.c encodes and decodes the bodies) ---- */

static int session_prep(struct session *s, sqlite3_stmt **st, const char *sql)
{
	if (*st)
		return 0;
	return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK ? 0
									  : -EIO;
}

int session_chunk_put(struct session *s, struct session_chunk *c,
		      const void *body, size_t size)
{
	sqlite3_stmt *st;
	int rc;

	/* kinds: absent from the first format-2 files (a session opened
	 * for writing keeps its table as it was) */
	if (session_prep(s, &s->chunk_ins,
			 "INSERT INTO chunks(pid,tid,first_ts,last_ts,"
			 "first_seq,last_seq,depth_min,depth_max,count,codec,"
			 "checksum,size,kinds) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)") &&
	    session_prep(s, &s->chunk_ins,
			 "INSERT INTO chunks(pid,tid,first_ts,last_ts,"
			 "first_seq,last_seq,depth_min,depth_max,count,codec,"
			 "checksum,size) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)"))
		return -EIO;
	if (session_prep(s, &s->chunk_body_ins,
			 "INSERT INTO chunk_data(id,body) VALUES(?,?)"))
		return -EIO;
	st = s->chunk_ins;
	sqlite3_bind_int64(st, 1, c->pid);
	sqlite3_bind_int64(st, 2, c->tid);
	sqlite3_bind_int64(st, 3, c->first_ts);
	sqlite3_bind_int64(st, 4, c->last_ts);
	sqlite3_bind_int64(st, 5, c->first_seq);
	sqlite3_bind_int64(st, 6, c->last_seq);
	sqlite3_bind_int(st, 7, c->depth_min);
	sqlite3_bind_int(st, 8, c->depth_max);
	sqlite3_bind_int64(st, 9, c->count);
	sqlite3_bind_int(st, 10, c->codec);
	sqlite3_bind_int64(st, 11, (int64_t)c->checksum);
	sqlite3_bind_int64(st, 12, (int64_t)size);
	if (sqlite3_bind_parameter_count(st) >= 13)
		sqlite3_bind_int(st, 13, c->kinds);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return -EIO;
	c->id = sqlite3_last_insert_rowid(s->db);
	c->size = (int64_t)size;
	st = s->chunk_body_ins;
	sqlite3_bind_int64(st, 1, c->id);
	sqlite3_bind_blob(st, 2, body, (int)size, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int session_chunk_index(struct session *s, struct session_chunk **out,
			size_t *n, int *partial)
{
	struct session_chunk *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	*partial = 0;
	/* no ORDER BY: a scan in rowid order reads what a truncated file
	 * still has; engine/chunk.c sorts */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT id,pid,tid,first_ts,last_ts,first_seq,"
			       "last_seq,depth_min,depth_max,count,codec,"
			       "checksum,size,kinds FROM chunks",
			       -1, &st, NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(s->db,
			       "SELECT id,pid,tid,first_ts,last_ts,first_seq,"
			       "last_seq,depth_min,depth_max,count,codec,"
			       "checksum,size FROM chunks",
			       -1, &st, NULL) != SQLITE_OK)
		/* format 1 has no chunks table: its events are rows */
		return s->format < 2 ? 0 : -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct session_chunk *c;

		if (cnt == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			v = nv;
		}
		c = &v[cnt++];
		c->id = sqlite3_column_int64(st, 0);
		c->pid = sqlite3_column_int64(st, 1);
		c->tid = sqlite3_column_int64(st, 2);
		c->first_ts = sqlite3_column_int64(st, 3);
		c->last_ts = sqlite3_column_int64(st, 4);
		c->first_seq = sqlite3_column_int64(st, 5);
		c->last_seq = sqlite3_column_int64(st, 6);
		c->depth_min = sqlite3_column_int(st, 7);
		c->depth_max = sqlite3_column_int(st, 8);
		c->count = sqlite3_column_int64(st, 9);
		c->codec = sqlite3_column_int(st, 10);
		c->checksum = (uint64_t)sqlite3_column_int64(st, 11);
		c->size = sqlite3_column_int64(st, 12);
		/* unknown (an early format-2 file): any kind may be there */
		c->kinds = sqlite3_column_count(st) > 13 &&
					   sqlite3_column_type(st, 13) !=
						   SQLITE_NULL
				   ? sqlite3_column_int(st, 13)
				   : -1;
	}
	if (rc != SQLITE_DONE)
		*partial = 1;
	sqlite3_finalize(st);
	*out = v;
	*n = cnt;
	return 0;
}

int session_chunk_body(struct session *s, int64_t id, void **body,
		       size_t *size)
{
	sqlite3_stmt *st;
	const void *b;
	int rc, n;

	*body = NULL;
	*size = 0;
	if (session_prep(s, &s->chunk_body_get,
			 "SELECT body FROM chunk_data WHERE id=?"))
		return -EIO;
	st = s->chunk_body_get;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? -ENOENT : -EIO;
	}
	b = sqlite3_column_blob(st, 0);
	n = sqlite3_column_bytes(st, 0);
	if (!b && n) {
		sqlite3_reset(st);
		return -EIO;
	}
	*body = malloc(n ? (size_t)n : 1);
	if (!*body) {
		sqlite3_reset(st);
		return -ENOMEM;
	}
	if (n)
		memcpy(*body, b, (size_t)n);
	*size = (size_t)n;
	sqlite3_reset(st);
	return 0;
}

int64_t session_max_seq(struct session *s)
{
	sqlite3_stmt *st;
	int64_t m = 0;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT max(coalesce((SELECT max(last_seq) FROM "
			       "chunks), 0), coalesce((SELECT max(id) FROM "
			       "events), 0))",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		m = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return m;
}

/* ---- the row form ---- */

int session_rows_any(struct session *s)
{
	sqlite3_stmt *st;
	int any = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM events LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	any = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return any;
}

int session_rows_threads(struct session *s, int64_t **pairs, size_t *n)
{
	sqlite3_stmt *st;
	int64_t *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	int rc;

	*pairs = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT pid, tid FROM events GROUP BY pid, tid "
			       "ORDER BY min(id)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap ? 2 * cap : 16;
			nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				free(v);
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			v = nv;
		}
		v[2 * cnt] = sqlite3_column_int64(st, 0);
		v[2 * cnt + 1] = sqlite3_column_int64(st, 1);
		cnt++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return -EIO;
	}
	*pairs = v;
	*n = cnt;
	return 0;
}

#define SESSION_ROW_COLS "id, ts_ns, kind, depth, func, site, arg0, arg1, arg2"

static void session_row_fill(sqlite3_stmt *st, struct session_event *ev)
{
	int i;

	memset(ev, 0, sizeof(*ev));
	ev->id = sqlite3_column_int64(st, 0);
	ev->ts_ns = sqlite3_column_int64(st, 1);
	ev->kind = (uint8_t)sqlite3_column_int(st, 2);
	if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
		ev->depth = sqlite3_column_int(st, 3);
		ev->has |= SE_DEPTH;
	}
	ev->func = sqlite3_column_int64(st, 4);
	ev->site = sqlite3_column_int64(st, 5);
	for (i = 0; i < 3; i++)
		if (sqlite3_column_type(st, 6 + i) != SQLITE_NULL) {
			ev->arg[i] = sqlite3_column_int64(st, 6 + i);
			ev->has |= SE_ARG0 << i;
		}
}

int session_rows_open(struct session *s, int64_t pid, int64_t tid,
		      struct session_rows **out)
{
	struct session_rows *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->s = s;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT " SESSION_ROW_COLS " FROM events"
			       " WHERE pid = ? AND tid = ? ORDER BY id",
			       -1, &r->st, NULL) != SQLITE_OK) {
		free(r);
		return -EIO;
	}
	sqlite3_bind_int64(r->st, 1, pid);
	sqlite3_bind_int64(r->st, 2, tid);
	*out = r;
	return 0;
}

int session_rows_next(struct session_rows *r, struct session_event *ev)
{
	int rc = sqlite3_step(r->st);

	if (rc == SQLITE_ROW) {
		session_row_fill(r->st, ev);
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

void session_rows_close(struct session_rows *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->st);
	free(r);
}

int session_rows_get(struct session *s, int64_t id, struct session_event *ev,
		     int64_t *pid, int64_t *tid)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT " SESSION_ROW_COLS ", pid, tid FROM events"
			       " WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		session_row_fill(st, ev);
		if (pid)
			*pid = sqlite3_column_int64(st, 9);
		if (tid)
			*tid = sqlite3_column_int64(st, 10);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -ENOENT;
}
