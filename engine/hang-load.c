/*
 * engine/hang-load.c - see engine/hang-load.h.  One query, the comm rows
 * ordered by channel (a name is interned at its first row); an event id
 * becomes a trace index through (id, index) pairs sorted once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/chan-role.h"
#include "engine/hang-load.h"
#include "engine/session.h"
#include "share/log.h"

struct hl_pair {
	int64_t id;
	uint32_t idx;
};

static int hl_pair_cmp(const void *a, const void *b)
{
	const struct hl_pair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int hl_comm(struct session *s, const struct trace *t,
		   struct hang_load *l)
{
	struct hl_pair *pr, key;
	sqlite3_stmt *st;
	size_t i, cap = 0, ccap = 0;
	int rc, err = 0;

	pr = malloc((t->nev + 1) * sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	for (i = 0; i < t->nev; i++) {
		pr[i].id = t->ev[i].id;
		pr[i].idx = (uint32_t)i;
	}
	qsort(pr, t->nev, sizeof(*pr), hl_pair_cmp);
	/* sessions from before the comm tables have none: no channels */
	if (sqlite3_prepare_v2(session_db(s),
			       "SELECT event, offset, chan, peer FROM comm"
			       " WHERE chan IS NOT NULL ORDER BY chan, event",
			       -1, &st, NULL) != SQLITE_OK) {
		free(pr);
		return 0;
	}
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *ch = (const char *)sqlite3_column_text(st, 2);
		struct hl_pair *p;
		struct hang_comm *c;

		key.id = sqlite3_column_int64(st, 0);
		p = bsearch(&key, pr, t->nev, sizeof(*pr), hl_pair_cmp);
		if (!p || !ch)
			continue; /* an event the trace does not hold */
		if (t->ev[p->idx].kind != TK_SEND && t->ev[p->idx].kind != TK_RECV)
			continue;
		if (!l->in.nchan || strcmp(l->chan[l->in.nchan - 1], ch)) {
			if (l->in.nchan == ccap) {
				size_t nc = ccap ? 2 * ccap : 64;
				char **n = realloc(l->chan, nc * sizeof(*n));

				if (!n) {
					err = -ENOMEM;
					break;
				}
				l->chan = n;
				ccap = nc;
			}
			l->chan[l->in.nchan] = strdup(ch);
			if (!l->chan[l->in.nchan]) {
				err = -ENOMEM;
				break;
			}
			l->in.nchan++;
		}
		if (l->in.ncomm == cap) {
			size_t nc = cap ? 2 * cap : 1024;
			struct hang_comm *n = realloc(l->comm, nc * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			l->comm = n;
			cap = nc;
		}
		c = &l->comm[l->in.ncomm++];
		c->ev = p->idx;
		c->chan = (uint32_t)(l->in.nchan - 1);
		c->offset = sqlite3_column_type(st, 1) == SQLITE_NULL
				    ? -1
				    : sqlite3_column_int64(st, 1);
		/* which end its peer is (hl_roles makes it a role) */
		c->client = (int8_t)chan_role_peer_end(
			ch, (const char *)sqlite3_column_text(st, 3));
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	free(pr);
	return err;
}

/* Each event's role from its peer end (analysis/chan-role.h's listening-
 * port rule).  Before: client holds chan_role_peer_end; after: 1 client,
 * 0 server, -1 unknown. */
static int hl_roles(struct hang_load *l)
{
	uint8_t *srv = calloc(l->in.nchan + 1, 1);
	size_t i;

	if (!srv ||
	    chan_role_servers((const char *const *)l->chan, l->in.nchan, srv)) {
		free(srv);
		return -ENOMEM;
	}
	for (i = 0; i < l->in.ncomm; i++) {
		struct hang_comm *c = &l->comm[i];

		c->client = (int8_t)chan_role_client(srv[c->chan], c->client);
	}
	free(srv);
	return 0;
}

int hang_load(struct session *s, const struct trace *t, int64_t precision_ns,
	      struct hang_load *l, char **cause)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->in.t = t;
	l->in.precision_ns = precision_ns;
	err = hl_comm(s, t, l);
	if (!err)
		err = hl_roles(l);
	l->in.comm = l->comm;
	l->in.chan = (const char *const *)l->chan;
	if (!err)
		err = hang_find(&l->in, &l->h);
	if (err == -ENOMEM)
		return propel_cause(cause, err, "%s: out of memory",
				    session_path(s));
	if (err)
		return propel_cause(cause, err,
				    "%s: session file is corrupt or truncated",
				    session_path(s));
	return 0;
}

void hang_load_release(struct hang_load *l)
{
	size_t i;

	hang_free(l->h);
	for (i = 0; i < l->in.nchan; i++)
		free(l->chan[i]);
	free(l->chan);
	free(l->comm);
	memset(l, 0, sizeof(*l));
}
