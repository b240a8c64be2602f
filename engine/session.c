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
};

static const char *const kind_names[] = {
	[SK_ENTRY] = "entry",
	[SK_EXIT] = "exit",
	[SK_SIGNAL] = "signal",
	[SK_THREAD_START] = "thread_start",
	[SK_THREAD_EXIT] = "thread_exit",
	[SK_FORK] = "fork",
	[SK_EXEC] = "exec",
	[SK_PROCESS_EXIT] = "process_exit",
	[SK_SEND] = "send",
	[SK_RECV] = "recv",
	[SK_LOST] = "lost",
};

const char *session_kind_name(int kind)
{
	if (kind < 0 || kind >= (int)(sizeof(kind_names) / sizeof(kind_names[0])))
		return NULL;
	return kind_names[kind];
}

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
	"CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, pid INTEGER,"
	" tid INTEGER, ts_ns INTEGER, kind INTEGER, depth INTEGER, func INTEGER,"
	" site INTEGER, arg0 INTEGER, arg1 INTEGER, arg2 INTEGER);"
	"CREATE INDEX IF NOT EXISTS events_thread ON events(pid, tid, id);"
	"CREATE INDEX IF NOT EXISTS events_time ON events(ts_ns);"
	"CREATE TABLE IF NOT EXISTS messages(send INTEGER, recv INTEGER,"
	" peer TEXT);";

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
	/* A truncated file is shorter than its page count says; a full
	 * structural check only for small files (it reads everything). */
	{
		struct stat sb;
		long long pages = 0, psize = 0;

		if (sqlite3_prepare_v2(s->db, "PRAGMA page_count", -1, &st,
				       NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			pages = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (sqlite3_prepare_v2(s->db, "PRAGMA page_size", -1, &st,
				       NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			psize = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (stat(s->path, &sb) == 0 && pages * psize > sb.st_size)
			return propel_cause(cause, -EINVAL,
					    "%s: session file is truncated",
					    s->path);
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

int session_open(const char *path, int flags, struct session **out,
		 char **cause)
{
	struct session *s;
	int oflags, err;
	char buf[32];

	*out = NULL;
	if (!path)
		path = PROPEL_SESSION_DEFAULT;
	if (flags == SESSION_READ && access(path, F_OK) != 0)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
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
	if (flags == SESSION_CREATE) {
		err = session_exec(s, "PRAGMA journal_mode=OFF;"
				      "PRAGMA synchronous=OFF;",
				   cause);
		if (!err)
			err = session_exec(s, schema, cause);
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
	sqlite3_close(s->db);
	free(s->path);
	free(s);
}

sqlite3 *session_db(struct session *s)
{
	return s->db;
}

const char *session_path(struct session *s)
{
	return s->path;
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
