/*
 * engine/export.c - the table of export formats and the dispatch (see
 * engine/export.h).  A format is added here and in its own
 * engine/export-<name>.c; nothing else changes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/export.h"
#include "share/log.h"

static const struct export_format *const export_table[] = {
    &export_dot_format,
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

const struct export_format *export_format_at(int i)
{
	return i >= 0 && (size_t)i < EXPORT_N ? export_table[i] : NULL;
}

int export_session(struct session *s, const char *name, FILE *out, char **cause)
{
	const struct export_format *f = export_find(name);

	if (!f)
		return propel_cause(cause, -EINVAL,
				    "unknown format \"%s\" (known: %s)",
				    name ? name : "", export_names());
	return f->write(s, out, cause);
}
