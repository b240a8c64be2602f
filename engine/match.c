/*
 * engine/match.c - see engine/match.h.
 *
 * Everything in memory: the comm rows of the session (a few per message),
 * sends sorted by (chan, dir, offset) for streams and by (chan, dir,
 * bytes, hash, ts) for datagrams; each recv is a binary search (streams)
 * or the next unused send of its identity (datagrams).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/match.h"
#include "engine/session.h"
#include "share/log.h"

struct match_ev {
	int64_t event, ts, off, bytes, hash;
	const char *chan; /* interned in the loaded strings */
	int dir, send, stream;
};

static int match_cmp(const void *a, const void *b)
{
	const struct match_ev *x = a, *y = b;
	int c = strcmp(x->chan, y->chan);

	if (c)
		return c;
	if (x->stream != y->stream)
		return x->stream - y->stream;
	if (x->dir != y->dir)
		return x->dir - y->dir;
	if (x->stream) {
		if (x->off != y->off)
			return x->off < y->off ? -1 : 1;
	} else {
		if (x->bytes != y->bytes)
			return x->bytes < y->bytes ? -1 : 1;
		if (x->hash != y->hash)
			return x->hash < y->hash ? -1 : 1;
		if (x->ts != y->ts)
			return x->ts < y->ts ? -1 : 1;
	}
	return x->event < y->event ? -1 : x->event > y->event;
}

/* same channel, direction and kind (and, for datagrams, identity) */
static int match_group(const struct match_ev *x, const struct match_ev *y,
		       int ident)
{
	if (strcmp(x->chan, y->chan) || x->stream != y->stream ||
	    x->dir != y->dir)
		return 0;
	return !ident || x->stream ||
	       (x->bytes == y->bytes && x->hash == y->hash);
}

static int match_load(sqlite3 *db, struct match_ev **sv, size_t *ns,
		      struct match_ev **rv, size_t *nr, char ***strs,
		      size_t *nstrs)
{
	sqlite3_stmt *st;
	size_t caps = 0, capr = 0, capstr = 0;
	int rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT event, kind, chan, dir, offset, bytes,"
			       " hash, ts_ns FROM comm WHERE chan IS NOT NULL"
			       " ORDER BY chan",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *chan = (const char *)sqlite3_column_text(st, 2);
		struct match_ev e = { 0 }, **v;
		size_t *n, *cap;

		if (!chan)
			continue;
		/* rows come ordered by chan: one copy of each string */
		if (!*nstrs || strcmp((*strs)[*nstrs - 1], chan)) {
			if (*nstrs == capstr) {
				char **ns2;

				capstr = capstr ? 2 * capstr : 64;
				ns2 = realloc(*strs, capstr * sizeof(*ns2));
				if (!ns2)
					goto nomem;
				*strs = ns2;
			}
			if (!((*strs)[*nstrs] = strdup(chan)))
				goto nomem;
			(*nstrs)++;
		}
		e.chan = (*strs)[*nstrs - 1];
		e.event = sqlite3_column_int64(st, 0);
		e.send = sqlite3_column_int(st, 1) == SK_SEND;
		e.dir = sqlite3_column_int(st, 3);
		e.stream = sqlite3_column_type(st, 4) != SQLITE_NULL;
		e.off = sqlite3_column_int64(st, 4);
		e.bytes = sqlite3_column_int64(st, 5);
		e.hash = sqlite3_column_int64(st, 6);
		e.ts = sqlite3_column_int64(st, 7);
		if (!e.stream && sqlite3_column_type(st, 6) == SQLITE_NULL)
			continue; /* neither offset nor identity */
		v = e.send ? sv : rv;
		n = e.send ? ns : nr;
		cap = e.send ? &caps : &capr;
		if (*n == *cap) {
			struct match_ev *nv;

			*cap = *cap ? 2 * *cap : 256;
			nv = realloc(*v, *cap * sizeof(*nv));
			if (!nv)
				goto nomem;
			*v = nv;
		}
		(*v)[(*n)++] = e;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
nomem:
	sqlite3_finalize(st);
	return -ENOMEM;
}

/* The stream send holding r's first byte, or NULL. */
static const struct match_ev *match_stream(const struct match_ev *s, size_t n,
					   const struct match_ev *r)
{
	size_t lo = 0, hi = n;

	/* the first send after r in (chan, stream, dir, off) order */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct match_ev key = *r;
		int c;

		key.event = INT64_MAX; /* after every send at r's offset */
		c = match_cmp(&s[mid], &key);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !match_group(&s[lo - 1], r, 0))
		return NULL;
	s += lo - 1;
	return r->off >= s->off && r->off < s->off + s->bytes ? s : NULL;
}

/*
 * UNIX streams that an agent saw only before the server accepted them
 * (engine/chan.h: chan "unix:C-?", C the connecting socket's inode): the
 * accepting end, when traced, names the channel with C as its peer
 * ("unix:C").  Each such channel (per process: inodes are per host) takes
 * that name, peer and direction.  Those that cannot be named stay as they
 * are.  0 or -EIO/-ENOMEM.
 */
struct match_uchan {
	char *chan, *peer;
	int64_t pid;
	const char *host;
};

static int match_uchan_cmp(const void *a, const void *b)
{
	return strcmp(((const struct match_uchan *)a)->peer,
		      ((const struct match_uchan *)b)->peer);
}

static int match_unix_pending(sqlite3 *db)
{
	sqlite3_stmt *st = NULL, *ins = NULL;
	struct match_uchan *v = NULL;
	char **hosts = NULL;
	int64_t *hpid = NULL;
	size_t nv = 0, cap = 0, nh = 0, caph = 0, i, j;
	int rc, err = 0, pending = 0;
	char sql[320];

	if (sqlite3_prepare_v2(db, "SELECT DISTINCT chan, peer, pid FROM comm"
				   " WHERE chan LIKE 'unix:%-%'"
				   " AND offset IS NOT NULL",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		const char *p = (const char *)sqlite3_column_text(st, 1);

		if (!c || !p)
			continue;
		if (nv == cap) {
			struct match_uchan *nn;

			cap = cap ? 2 * cap : 32;
			if (!(nn = realloc(v, cap * sizeof(*v))))
				goto nomem;
			v = nn;
		}
		v[nv].chan = strdup(c);
		v[nv].peer = strdup(p);
		v[nv].pid = sqlite3_column_int64(st, 2);
		v[nv].host = NULL;
		if (!v[nv].chan || !v[nv].peer) {
			free(v[nv].chan);
			free(v[nv].peer);
			goto nomem;
		}
		pending |= c[strlen(c) - 1] == '?';
		nv++;
	}
	if (rc != SQLITE_DONE)
		goto eio;
	if (!pending)
		goto out;
	sqlite3_finalize(st);
	st = NULL;
	/* each process's host */
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT pid, host FROM processes",
			       -1, &st, NULL) != SQLITE_OK)
		goto eio;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 1);

		if (nh == caph) {
			char **nn;
			int64_t *np;

			caph = caph ? 2 * caph : 32;
			nn = realloc(hosts, caph * sizeof(*hosts));
			if (nn)
				hosts = nn;
			np = realloc(hpid, caph * sizeof(*hpid));
			if (np)
				hpid = np;
			if (!nn || !np)
				goto nomem;
		}
		hpid[nh] = sqlite3_column_int64(st, 0);
		if (!(hosts[nh] = strdup(h ? h : "")))
			goto nomem;
		nh++;
	}
	if (rc != SQLITE_DONE)
		goto eio;
	for (i = 0; i < nv; i++)
		for (j = 0; j < nh && !v[i].host; j++)
			if (hpid[j] == v[i].pid)
				v[i].host = hosts[j];
	if (sqlite3_exec(db, "CREATE TEMP TABLE IF NOT EXISTS match_unix("
			     "old TEXT, pid INTEGER, chan TEXT, peer TEXT,"
			     " d INTEGER, PRIMARY KEY(old, pid));"
			     "DELETE FROM match_unix;",
			     NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO match_unix"
				   " VALUES(?,?,?,?,?)",
			       -1, &ins, NULL) != SQLITE_OK)
		goto eio;
	/* by peer: the accepting ends of C are those whose peer is "unix:C" */
	qsort(v, nv, sizeof(*v), match_uchan_cmp);
	for (i = 0; i < nv; i++) {
		unsigned long long c, lo, hi;
		char want[40], peer[40];
		struct match_uchan key;
		size_t lo_i = 0, hi_i = nv;

		if (sscanf(v[i].chan, "unix:%llu-?", &c) != 1 ||
		    v[i].chan[strlen(v[i].chan) - 1] != '?')
			continue;
		snprintf(want, sizeof(want), "unix:%llu", c);
		key.peer = want;
		while (lo_i < hi_i) {
			size_t mid = lo_i + (hi_i - lo_i) / 2;

			if (match_uchan_cmp(&v[mid], &key) < 0)
				lo_i = mid + 1;
			else
				hi_i = mid;
		}
		for (j = lo_i; j < nv && !strcmp(v[j].peer, want); j++) {
			if (sscanf(v[j].chan, "unix:%llu-%llu", &lo, &hi) != 2 ||
			    (lo != c && hi != c) ||
			    (v[i].host && v[j].host &&
			     strcmp(v[i].host, v[j].host)))
				continue;
			snprintf(peer, sizeof(peer), "unix:%llu",
				 lo == c ? hi : lo);
			sqlite3_bind_text(ins, 1, v[i].chan, -1, SQLITE_STATIC);
			sqlite3_bind_int64(ins, 2, v[i].pid);
			sqlite3_bind_text(ins, 3, v[j].chan, -1, SQLITE_STATIC);
			sqlite3_bind_text(ins, 4, peer, -1, SQLITE_TRANSIENT);
			/* data flows from the lower inode in direction 0 */
			sqlite3_bind_int(ins, 5, lo == c ? 0 : 1);
			rc = sqlite3_step(ins);
			sqlite3_reset(ins);
			if (rc != SQLITE_DONE)
				goto eio;
			break;
		}
	}
	snprintf(sql, sizeof(sql),
		 "UPDATE comm SET chan = n.chan, peer = n.peer,"
		 " dir = CASE WHEN comm.kind = %d THEN n.d ELSE 1 - n.d END"
		 " FROM match_unix n"
		 " WHERE comm.chan = n.old AND comm.pid = n.pid;"
		 "DELETE FROM match_unix;", SK_SEND);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		goto eio;
	goto out;
eio:
	err = -EIO;
	goto out;
nomem:
	err = -ENOMEM;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(ins);
	for (i = 0; i < nv; i++) {
		free(v[i].chan);
		free(v[i].peer);
	}
	for (i = 0; i < nh; i++)
		free(hosts[i]);
	free(v);
	free(hosts);
	free(hpid);
	return err;
}

int match_session(struct session *s, struct match_stats *stp, char **cause)
{
	sqlite3 *db = session_db(s);
	struct match_ev *sv = NULL, *rv = NULL;
	size_t ns = 0, nr = 0, nstrs = 0, i, g = 0;
	struct match_stats st = { 0 };
	sqlite3_stmt *ins = NULL;
	char **strs = NULL;
	int err;

	err = match_unix_pending(db);
	if (!err)
		err = match_load(db, &sv, &ns, &rv, &nr, &strs, &nstrs);
	if (err)
		goto out;
	st.sends = ns;
	st.recvs = nr;
	if (ns) /* (NULL when none: qsort's base must not be) */
		qsort(sv, ns, sizeof(*sv), match_cmp);
	if (nr)
		qsort(rv, nr, sizeof(*rv), match_cmp);
	if (session_exec(s, "DELETE FROM messages", cause)) {
		err = -EIO;
		goto out;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO messages(send, recv, peer)"
				   " VALUES(?,?,?)",
			       -1, &ins, NULL) != SQLITE_OK) {
		err = -EIO;
		goto out;
	}
	/* datagrams: recvs and sends of one identity, both in time order */
	for (i = 0; i < nr; i++) {
		const struct match_ev *r = &rv[i], *m = NULL;

		if (r->stream) {
			m = match_stream(sv, ns, r);
		} else {
			struct match_ev key = *r;
			size_t lo = 0, hi = ns, k;

			/* the group's first send, then the k-th for the
			 * recv's rank k in its own group */
			key.ts = INT64_MIN;
			key.event = INT64_MIN;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (match_cmp(&sv[mid], &key) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (!i || !match_group(&rv[i - 1], r, 1))
				g = i; /* the first recv of its identity */
			k = i - g;
			if (lo + k < ns && match_group(&sv[lo + k], r, 1))
				m = &sv[lo + k];
		}
		if (!m)
			continue;
		sqlite3_bind_int64(ins, 1, m->event);
		sqlite3_bind_int64(ins, 2, r->event);
		sqlite3_bind_text(ins, 3, r->chan, -1, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			sqlite3_reset(ins);
			err = -EIO;
			goto out;
		}
		sqlite3_reset(ins);
		st.matched++;
	}
out:
	if (err == -EIO && cause && !*cause)
		propel_cause(cause, -EIO, "%s: matching messages: %s",
			     session_path(s), sqlite3_errmsg(db));
	else if (err == -ENOMEM)
		propel_cause(cause, err, "%s: matching messages: out of memory",
			     session_path(s));
	sqlite3_finalize(ins);
	for (i = 0; i < nstrs; i++)
		free(strs[i]);
	free(strs);
	free(sv);
	free(rv);
	if (stp)
		*stp = st;
	return err;
}

int match_totals(struct session *s, struct match_total **out, size_t *n,
		 char **cause)
{
	sqlite3 *db = session_db(s);
	sqlite3_stmt *st;
	struct match_total *v = NULL;
	size_t nv = 0, cap = 0;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT cs.pid, cr.pid,"
			       " substr(cr.chan, 1, instr(cr.chan, ':') - 1) AS k,"
			       " count(*), sum(cr.bytes)"
			       " FROM messages m"
			       " JOIN comm cs ON cs.event = m.send"
			       " JOIN comm cr ON cr.event = m.recv"
			       " GROUP BY cs.pid, cr.pid, k"
			       " ORDER BY cs.pid, cr.pid, k",
			       -1, &st, NULL) != SQLITE_OK) {
		/* a session from before the comm table: no messages */
		if (strstr(sqlite3_errmsg(db), "no such table"))
			return 0;
		return propel_cause(cause, -EIO, "%s: %s", session_path(s),
				    sqlite3_errmsg(db));
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *k = sqlite3_column_text(st, 2);

		if (nv == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct match_total *nvv = realloc(v, nc * sizeof(*v));

			if (!nvv) {
				err = propel_cause(cause, -ENOMEM,
						   "%s: out of memory",
						   session_path(s));
				break;
			}
			v = nvv;
			cap = nc;
		}
		memset(&v[nv], 0, sizeof(v[nv]));
		v[nv].from_pid = sqlite3_column_int64(st, 0);
		v[nv].to_pid = sqlite3_column_int64(st, 1);
		snprintf(v[nv].kind, sizeof(v[nv].kind), "%s",
			 k && *k ? (const char *)k : "?");
		v[nv].count = sqlite3_column_int64(st, 3);
		v[nv].bytes = sqlite3_column_int64(st, 4);
		nv++;
	}
	if (!err && rc != SQLITE_DONE)
		err = propel_cause(cause, -EIO, "%s: %s", session_path(s),
				   sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n = nv;
	return 0;
}
