/*
 * engine/export.c - the table of export formats and the dispatch (see
 * engine/export.h).  A format is added here and in its own
 * engine/export-<name>.c; nothing else changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chunk.h"
#include "engine/export.h"
#include "engine/flow-map.h"
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

int export_session(struct session *s, const char *name,
		   const struct export_opts *o, FILE *out, char **cause)
{
	const struct export_format *f = export_find(name);

	if (!f)
		return propel_cause(cause, -EINVAL,
				    "unknown format \"%s\" (known: %s)",
				    name ? name : "", export_names());
	/* nothing written for a session without a readable event (as
	 * replay and report refuse it), whatever the format reads */
	{
		int err = chunk_session_check(s, cause);

		if (err)
			return err;
	}
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
	if ((o && o->flow) || f->flows) {
		struct export_opts fo = { 0 };
		struct flow_map_walk w = { 0 };
		int err;

		if (o)
			fo = *o;
		err = flow_map_build(s, NULL, &fo.map, cause);
		if (err)
			return err;
		if (fo.flow && (size_t)fo.flow > flow_map_count(fo.map))
			err = propel_cause(cause, -ENOENT,
					   "--flow %d: no such flow (%s has "
					   "%zu; see propel report --flows)",
					   fo.flow, session_path(s),
					   flow_map_count(fo.map));
		fo.walk = &w;
		if (!err)
			err = f->write(s, &fo, out, cause);
		flow_map_free(fo.map);
		return err;
	}
	return f->write(s, o, out, cause);
}

int export_keep(const struct export_opts *o, const struct replay_event *ev)
{
	if (!o || !o->flow)
		return 1;
	return flow_map_step(o->map, o->walk, ev) == (uint32_t)(o->flow - 1);
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
