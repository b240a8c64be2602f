/*
 * engine/hang-load.c - see engine/hang-load.h.  One query, the comm rows
 * ordered by channel (a name is interned at its first row); an event id
 * becomes a trace index through (id, index) pairs sorted once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* "tcp:E1>E2" (tcp: and udp:): E1 or E2 as [*e, *e + *n). */
static int hl_end(const char *ch, int which, const char **e, size_t *n)
{
	const char *gt;

	if (strncmp(ch, "tcp:", 4) && strncmp(ch, "udp:", 4))
		return -1;
	gt = strchr(ch + 4, '>');
	if (!gt)
		return -1;
	*e = which == 1 ? ch + 4 : gt + 1;
	*n = which == 1 ? (size_t)(gt - ch - 4) : strlen(gt + 1);
	return 0;
}

/* 1 or 2: the end of chan that peer names; -1 none */
static int hl_peer_end(const char *ch, const char *peer)
{
	const char *e;
	size_t n;
	int w;

	for (w = 1; peer && w <= 2; w++)
		if (!hl_end(ch, w, &e, &n) && strlen(peer) == n &&
		    !strncmp(e, peer, n))
			return w;
	return -1;
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
		c->client = (int8_t)hl_peer_end(
			ch, (const char *)sqlite3_column_text(st, 3));
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	free(pr);
	return err;
}

/* The end of a channel that other channels share (a listening address:
 * each connection to it has an end of its own) is its server's; an event
 * whose peer is that end was made by the client.  Before: client holds
 * hl_peer_end; after: 1 client, 0 server, -1 unknown. */
static void hl_roles(struct hang_load *l)
{
	uint8_t *srv = calloc(l->in.nchan + 1, 1);
	size_t i, j;

	for (i = 0; srv && i < l->in.nchan; i++) {
		size_t cnt[3] = { 0, 0, 0 }, n1, n2;
		const char *e1, *e2, *f, *g;
		int w;

		if (hl_end(l->chan[i], 1, &e1, &n1) ||
		    hl_end(l->chan[i], 2, &e2, &n2))
			continue;
		for (j = 0; j < l->in.nchan; j++) /* by name: few thousand */
			for (w = 1; j != i && w <= 2; w++) {
				size_t n;

				if (hl_end(l->chan[j], w, &f, &n))
					break;
				g = f;
				cnt[1] += n == n1 && !strncmp(g, e1, n);
				cnt[2] += n == n2 && !strncmp(g, e2, n);
			}
		srv[i] = cnt[1] > cnt[2] ? 1 : cnt[2] > cnt[1] ? 2 : 0;
	}
	for (i = 0; i < l->in.ncomm; i++) {
		struct hang_comm *c = &l->comm[i];
		int end = c->client;

		c->client = -1;
		if (srv && srv[c->chan] && end > 0)
			c->client = end == srv[c->chan];
	}
	free(srv);
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
		hl_roles(l);
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
