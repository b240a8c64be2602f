/*
 * engine/export-folded.c - `propel export --format=folded`: folded stacks,
 * one line per distinct call path, "frame;frame;frame weight" -- what
 * flamegraph.pl, inferno and speedscope read.
 *
 *   weight   the time in ns the thread spent with exactly that stack
 *            (self time: from each event to the thread's next, to the
 *            stack open between them), or with --counts the number of
 *            calls that opened that stack
 *   frames   outermost first; by default the first frame is the process,
 *            "command [pid]", so one graph shows every process side by
 *            side; --merged leaves it out and adds all processes' stacks
 *            together
 *
 * A frame the trace does not hold (the depths of a thread that began
 * inside open calls, a gap after lost records) is "[unknown]".  Lines are
 * sorted, so two exports of a session are identical.  The walk is
 * engine/replay.c's; the memory is one entry per distinct stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/export.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "share/hash.h"
#include "share/log.h"

struct fold_ent {
	char *key; /* NULL: free slot */
	size_t len;
	uint64_t hash, weight;
};

struct folded {
	const struct export_opts *o;
	struct session_proc *pv;
	size_t np;
	/* the thread walked now: its stack as one string with the offset
	 * where each depth's frame begins */
	int64_t pid, tid, last_ts;
	int have_thread;
	char *buf;
	size_t len, cap;
	size_t *at;   /* at[d] = len of the path above depth d */
	uint64_t *hs; /* hs[d] = hash of the path above depth d */
	uint64_t hash; /* of the whole path */
	int depth, at_cap;
	struct fold_ent *tab;
	size_t ntab, used;
	int err;
};

#define FOLD_H0 1469598103934665603ull

/* FNV-1a of n bytes of s, continuing from h; kept per depth, so an event
 * costs the hash of one frame, not of its whole stack */
static uint64_t fold_hash(uint64_t h, const char *s, size_t n)
{
	return propel_fnv(h, s, n);
}

static int fold_grow_tab(struct folded *f)
{
	size_t n = f->ntab ? 2 * f->ntab : 1024, i, j;
	struct fold_ent *t = calloc(n, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < f->ntab; i++) {
		if (!f->tab[i].key)
			continue;
		j = f->tab[i].hash & (n - 1);
		while (t[j].key)
			j = (j + 1) & (n - 1);
		t[j] = f->tab[i];
	}
	free(f->tab);
	f->tab = t;
	f->ntab = n;
	return 0;
}

/* add w to the current stack's line */
static void fold_add(struct folded *f, uint64_t w)
{
	size_t j;

	if (!w || f->err)
		return;
	if (4 * (f->used + 1) > 3 * f->ntab && (f->err = fold_grow_tab(f)))
		return;
	j = f->hash & (f->ntab - 1);
	for (; f->tab[j].key; j = (j + 1) & (f->ntab - 1))
		if (f->tab[j].hash == f->hash && f->tab[j].len == f->len &&
		    memcmp(f->tab[j].key, f->buf, f->len) == 0) {
			f->tab[j].weight += w;
			return;
		}
	f->tab[j].key = strndup(f->buf, f->len);
	if (!f->tab[j].key) {
		f->err = -ENOMEM;
		return;
	}
	f->tab[j].len = f->len;
	f->tab[j].hash = f->hash;
	f->tab[j].weight = w;
	f->used++;
}

static int fold_append(struct folded *f, const char *s, size_t n)
{
	if (f->len + n + 2 > f->cap) {
		size_t nc = (f->len + n + 2) * 2;
		char *nb = realloc(f->buf, nc);

		if (!nb)
			return -ENOMEM;
		f->buf = nb;
		f->cap = nc;
	}
	memcpy(f->buf + f->len, s, n);
	f->len += n;
	f->buf[f->len] = 0;
	return 0;
}

/* the stack cut to depth d (0 = nothing open) */
static void fold_cut(struct folded *f, int d)
{
	if (d < 0)
		d = 0;
	if (d < f->depth) {
		f->len = f->at[d];
		f->hash = f->hs[d];
		f->depth = d;
	}
}

/* push name at depth d, with "[unknown]" for any depth in between */
static int fold_push(struct folded *f, int d, const char *name)
{
	fold_cut(f, d);
	while (f->depth <= d) {
		const char *fr = f->depth == d ? name : "[unknown]";
		size_t n = strcspn(fr, ";\n"); /* a frame holds neither */

		if (f->depth + 1 >= f->at_cap) {
			int nc = f->at_cap ? 2 * f->at_cap : 64;
			size_t *na = realloc(f->at, nc * sizeof(*na));
			uint64_t *nh = na ? realloc(f->hs, nc * sizeof(*nh))
					  : NULL;

			if (na)
				f->at = na;
			if (!nh)
				return -ENOMEM;
			f->hs = nh;
			f->at_cap = nc;
		}
		f->at[f->depth] = f->len;
		f->hs[f->depth] = f->hash;
		if (f->len > 0) {
			if (fold_append(f, ";", 1))
				return -ENOMEM;
			f->hash = fold_hash(f->hash, ";", 1);
		}
		if (fold_append(f, fr, n))
			return -ENOMEM;
		f->hash = fold_hash(f->hash, fr, n);
		f->depth++;
	}
	return 0;
}

static void fold_thread(struct folded *f, const struct replay_event *ev)
{
	char root[300];
	const struct session_proc *p;

	f->pid = ev->pid;
	f->tid = ev->tid;
	f->have_thread = 1;
	f->last_ts = ev->ts_ns;
	f->len = 0;
	f->hash = FOLD_H0;
	f->depth = 0;
	if (f->o && f->o->merged)
		return;
	p = session_proc_find(f->pv, f->np, ev->pid);
	snprintf(root, sizeof(root), "%s [%" PRId64 "]", p ? p->command : "?",
		 ev->pid);
	if (fold_push(f, 0, root))
		f->err = -ENOMEM;
}

static int fold_event(const struct replay_event *ev, void *arg)
{
	struct folded *f = arg;
	int counts = f->o && f->o->counts;
	int base = f->o && f->o->merged ? 0 : 1; /* the process frame */

	if (!export_keep(f->o, ev)) /* --flow: another flow's event */
		return 0;

	if (!f->have_thread || ev->pid != f->pid || ev->tid != f->tid)
		fold_thread(f, ev);
	if (!counts && ev->ts_ns > f->last_ts && f->depth > base)
		fold_add(f, (uint64_t)(ev->ts_ns - f->last_ts));
	f->last_ts = ev->ts_ns;
	switch (ev->kind) {
	case SK_ENTRY:
		if (fold_push(f, ev->depth + base, ev->func ? ev->func : "?"))
			f->err = -ENOMEM;
		else if (counts)
			fold_add(f, 1);
		break;
	case SK_EXIT:
		fold_cut(f, ev->depth + base);
		break;
	case SK_LOST:
		fold_cut(f, base); /* nothing is known past a gap */
		break;
	}
	return f->err;
}

static int fold_cmp(const void *a, const void *b)
{
	const struct fold_ent *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static int folded_write(struct session *s, const struct export_opts *o,
			FILE *out, char **cause)
{
	struct replay_filter flt = { o ? o->pid : 0, 0 };
	struct folded f = { .o = o };
	size_t i, n = 0;
	int err;

	err = session_processes(s, &f.pv, &f.np, cause);
	if (err)
		return err;
	f.at = malloc(64 * sizeof(*f.at));
	f.hs = malloc(64 * sizeof(*f.hs));
	f.at_cap = f.at && f.hs ? 64 : 0;
	f.hash = FOLD_H0;
	if (!f.at || !f.hs || fold_grow_tab(&f)) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	err = replay_walk(s, &flt, fold_event, &f, cause);
	if (err == -ENOMEM)
		propel_cause(cause, err, "out of memory");
	if (err)
		goto out;
	/* compact and sort */
	for (i = 0; i < f.ntab; i++)
		if (f.tab[i].key) {
			f.tab[n] = f.tab[i];
			if (i != n++)
				f.tab[i].key = NULL;
		}
	qsort(f.tab, n, sizeof(*f.tab), fold_cmp);
	for (i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", f.tab[i].key, f.tab[i].weight);
	if (ferror(out))
		err = propel_cause(cause, -EIO, "write error");
	for (i = 0; i < n; i++) {
		free(f.tab[i].key);
		f.tab[i].key = NULL;
	}
out:
	for (i = 0; f.tab && i < f.ntab; i++)
		free(f.tab[i].key);
	free(f.tab);
	free(f.at);
	free(f.hs);
	free(f.buf);
	session_processes_free(f.pv, f.np);
	return err;
}

const struct export_format export_folded_format = {
	.name = "folded",
	.summary = "folded stacks (\"a;b;c weight\") for flamegraph.pl, "
		   "inferno and speedscope: self time in ns, or calls with "
		   "--counts; per process, or --merged",
	.takes = EXPORT_PID | EXPORT_COUNTS | EXPORT_MERGED | EXPORT_FLOW,
	.write = folded_write,
};
