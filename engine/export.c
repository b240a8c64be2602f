/*
 * engine/export.c - the table of export formats and the dispatch (see
 * engine/export.h).  A format is added here and in its own
 * engine/export-<name>.c; nothing else changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "engine/analysis-load.h"
#include "engine/export.h"
#include "engine/session.h"
#include "share/log.h"

static const struct export_format *const export_table[] = {
	&export_dot_format,
	&export_chrome_format,
	&export_folded_format,
	&export_otlp_format,
};
#define EXPORT_N (sizeof(export_table) / sizeof(export_table[0]))

const struct export_format *export_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < EXPORT_N; i++)
		if (strcmp(export_table[i]->name, name) == 0)
			return export_table[i];
	return NULL;
}

const char *export_names(void)
{
	static char buf[256];
	size_t i, len = 0;

	if (buf[0])
		return buf;
	for (i = 0; i < EXPORT_N && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					i ? ", " : "", export_table[i]->name);
	return buf;
}

static int export_id_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The event ids of flow n (analysis/flows.c, as `propel report --flows`
 * numbers them), sorted. */
static int export_flow_ids(struct session *s, int n, int64_t **out,
			   size_t *nout, char **cause)
{
	struct flows_opts fo = { 0 };
	struct flows *fl = NULL;
	struct trace *t = NULL;
	size_t i, k = 0;
	int64_t *ids;
	int err;

	err = analysis_load(s, &t, cause);
	if (err)
		return err;
	err = flows_build(t, &fo, &fl);
	if (err) {
		trace_free(t);
		return propel_cause(cause, err, "out of memory");
	}
	if (n < 1 || (size_t)n > fl->n) {
		err = propel_cause(cause, -ENOENT,
				   "--flow %d: no such flow (%s has %zu; see "
				   "propel report --flows)",
				   n, session_path(s), fl->n);
		goto out;
	}
	ids = malloc((fl->flow[n - 1].nevents + 1) * sizeof(*ids));
	if (!ids) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < t->nev; i++)
		if (fl->of[i] == (uint32_t)(n - 1))
			ids[k++] = t->ev[i].id;
	qsort(ids, k, sizeof(*ids), export_id_cmp);
	*out = ids;
	*nout = k;
out:
	flows_free(fl);
	trace_free(t);
	return err;
}

int export_session(struct session *s, const char *name,
		   const struct export_opts *o, FILE *out, char **cause)
{
	const struct export_format *f = export_find(name);

	if (!f)
		return propel_cause(cause, -EINVAL,
				    "unknown format \"%s\" (known: %s)",
				    name ? name : "", export_names());
	if (o && o->pid) {
		struct session_proc *pv;
		size_t n;
		int err = session_processes(s, &pv, &n, cause), known;

		if (err)
			return err;
		known = session_proc_find(pv, n, o->pid) != NULL;
		session_processes_free(pv, n);
		if (!known)
			return propel_cause(cause, -ENOENT,
					    "--pid %lld: no such process in %s",
					    (long long)o->pid, session_path(s));
	}
	if (o && o->flow) {
		struct export_opts fo = *o;
		int err = export_flow_ids(s, o->flow, &fo.keep, &fo.nkeep,
					  cause);

		if (err)
			return err;
		err = f->write(s, &fo, out, cause);
		free(fo.keep);
		return err;
	}
	return f->write(s, o, out, cause);
}

int export_keep(const struct export_opts *o, int64_t id)
{
	size_t lo = 0, hi;

	if (!o || !o->flow)
		return 1;
	hi = o->nkeep;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->keep[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nkeep && o->keep[lo] == id;
}

int64_t export_unix_offset(struct session *s)
{
	struct session_thread *tv = NULL;
	size_t nt = 0, i;
	int64_t last = 0, off = 0;
	char *v;

	if ((v = session_meta_get(s, "realtime_offset_ns"))) {
		off = strtoll(v, NULL, 10);
		free(v);
		return off;
	}
	if (session_threads(s, &tv, &nt, NULL) == 0) {
		for (i = 0; i < nt; i++)
			if (tv[i].last_ns > last)
				last = tv[i].last_ns;
		session_threads_free(tv, nt);
	}
	if (last && (v = session_meta_get(s, "created_ns"))) {
		off = strtoll(v, NULL, 10) - last;
		free(v);
	}
	return off;
}
