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

int match_session(struct session *s, struct match_stats *stp, char **cause)
{
	sqlite3 *db = session_db(s);
	struct match_ev *sv = NULL, *rv = NULL;
	size_t ns = 0, nr = 0, nstrs = 0, i, g = 0;
	struct match_stats st = { 0 };
	sqlite3_stmt *ins = NULL;
	char **strs = NULL;
	int err;

	err = match_load(db, &sv, &ns, &rv, &nr, &strs, &nstrs);
	if (err)
		goto out;
	st.sends = ns;
	st.recvs = nr;
	qsort(sv, ns, sizeof(*sv), match_cmp);
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
