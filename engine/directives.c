/*
 * engine/directives.c - see engine/directives.h.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "engine/directives.h"
#include "engine/session.h"
#include "share/agent-abi.h"
#include "share/log.h"

void directives_release(struct directives *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++) {
		flows_directive_release(&ds->d[i]);
		free(ds->spec[i]);
	}
	free(ds->d);
	free(ds->spec);
	memset(ds, 0, sizeof(*ds));
}

/* Another directive names the same function's entry with another
 * argument: the agent records one argument per function. */
static int directives_conflict(const struct directives *ds,
			       const struct flows_directive *d, char **cause)
{
	size_t i;
	int a, b;

	for (i = 0; i < ds->n; i++)
		for (a = 0; a < 2; a++)
			for (b = 0; b < 2; b++)
				if (!d->exit[a] && !ds->d[i].exit[b] &&
				    d->arg[a] != ds->d[i].arg[b] &&
				    !strcmp(d->func[a], ds->d[i].func[b]))
					return propel_cause(
					    cause, -EINVAL,
					    "directive '%s': %s:entry "
					    "names arg%d and arg%d; one "
					    "argument per function",
					    ds->spec[i], d->func[a],
					    ds->d[i].arg[b], d->arg[a]);
	if (strcmp(d->func[0], d->func[1]) == 0 && !d->exit[0] && !d->exit[1] &&
	    d->arg[0] != d->arg[1])
		return propel_cause(cause, -EINVAL,
				    "%s:entry names arg%d and arg%d; one "
				    "argument per function",
				    d->func[0], d->arg[0], d->arg[1]);
	return 0;
}

int directives_add(struct directives *ds, const char *spec, char **cause)
{
	struct flows_directive d, *nd;
	char **ns, *s;
	size_t l;
	int err;

	while (isspace((unsigned char)*spec))
		spec++;
	l = strlen(spec);
	while (l && isspace((unsigned char)spec[l - 1]))
		l--;
	s = strndup(spec, l);
	if (!s)
		return propel_cause(cause, -ENOMEM, "out of memory");
	err = flows_directive_parse(s, &d, cause);
	if (!err &&
	    (strpbrk(d.func[0], " ,@\t") || strpbrk(d.func[1], " ,@\t")))
		err = propel_cause(cause, -EINVAL,
				   "directive '%s': a function name has no "
				   "blank, ',' or '@'",
				   s);
	else if (!err)
		err = directives_conflict(ds, &d, cause);
	if (err) {
		if (err == -ENOMEM)
			err = propel_cause(cause, err, "out of memory");
		flows_directive_release(&d);
		free(s);
		return err;
	}
	nd = realloc(ds->d, (ds->n + 1) * sizeof(*nd));
	if (nd)
		ds->d = nd;
	ns = nd ? realloc(ds->spec, (ds->n + 1) * sizeof(*ns)) : NULL;
	if (ns)
		ds->spec = ns;
	if (!nd || !ns) {
		flows_directive_release(&d);
		free(s);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	ds->d[ds->n] = d;
	ds->spec[ds->n++] = s;
	return 0;
}

/* A directives file is a short text file: a device (/dev/zero), a FIFO
 * or a binary would never end or would not parse. */
#define DIRECTIVES_FILE_MAX (1 << 20)

/* FILE read whole into *buf (NUL-terminated): 0, or -errno with *cause. */
static int directives_read(const char *path, char **buf, char **cause)
{
	struct stat sb;
	size_t n = 0;
	ssize_t r;
	char *b;
	int fd, err = 0;

	*buf = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	if (fstat(fd, &sb) < 0) {
		err = propel_cause(cause, -errno, "%s: %s", path,
				   strerror(errno));
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		err = propel_cause(cause, -EISDIR,
				   "%s: is a directory, not a "
				   "file of directives",
				   path);
		goto out;
	}
	if (S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3)) {
		/* /dev/null: no directives (report --directives /dev/null
		 * puts the session's aside) */
		*buf = strdup("");
		err = *buf ? 0 : propel_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		err = propel_cause(cause, -EINVAL,
				   "%s: not a regular file (a "
				   "device, FIFO or socket)",
				   path);
		goto out;
	}
	if (sb.st_size > DIRECTIVES_FILE_MAX) {
		err = propel_cause(cause, -EFBIG,
				   "%s: too large for a file of "
				   "directives (%lld bytes; at "
				   "most %d)",
				   path, (long long)sb.st_size,
				   DIRECTIVES_FILE_MAX);
		goto out;
	}
	b = malloc(DIRECTIVES_FILE_MAX + 1);
	if (!b) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto out;
	}
	/* up to one byte past the limit: a file that grew is refused too */
	while (n <= DIRECTIVES_FILE_MAX &&
	       (r = read(fd, b + n, DIRECTIVES_FILE_MAX + 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = propel_cause(cause, -errno, "%s: %s", path,
					   strerror(errno));
			free(b);
			goto out;
		}
		n += (size_t)r;
	}
	if (n > DIRECTIVES_FILE_MAX) {
		free(b);
		err = propel_cause(cause, -EFBIG,
				   "%s: too large for a file of "
				   "directives (at most %d "
				   "bytes)",
				   path, DIRECTIVES_FILE_MAX);
		goto out;
	}
	if (memchr(b, 0, n)) {
		free(b);
		err = propel_cause(cause, -EINVAL,
				   "%s: not a text file (it "
				   "holds a NUL byte)",
				   path);
		goto out;
	}
	b[n] = 0;
	*buf = b;
out:
	close(fd);
	return err;
}

int directives_add_file(struct directives *ds, const char *path, char **cause)
{
	char *buf, *line, *next;
	int err, ln = 0;

	err = directives_read(path, &buf, cause);
	for (line = buf; !err && line && *line; line = next) {
		char *p = line;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ln++;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		err = directives_add(ds, p, cause);
		if (err == -EINVAL) {
			char *c = *cause;

			*cause = NULL;
			err = propel_cause(cause, err, "%s:%d: %s", path, ln,
					   c ? c : "bad directive");
			free(c);
		}
	}
	free(buf);
	return err;
}

/* "name@what," into ds->values unless there already. */
static int directives_value(struct directives *ds, const char *func, int exit,
			    int arg, size_t *at)
{
	char one[256];
	int n = exit	 ? snprintf(one, sizeof(one), "%s@ret", func)
		: arg < 0 ? snprintf(one, sizeof(one), "%s@args", func)
			  : snprintf(one, sizeof(one), "%s@%d", func, arg);
	const char *p = ds->values;
	size_t l = (size_t)n;

	while ((p = strstr(p, one))) {
		if ((p == ds->values || p[-1] == ',') && (p[l] == ',' || !p[l]))
			return 0;
		p++;
	}
	if (n < 0 || (size_t)n >= sizeof(one) ||
	    *at + l + 2 > sizeof(ds->values))
		return -E2BIG;
	if (*at)
		ds->values[(*at)++] = ',';
	memcpy(ds->values + *at, one, l + 1);
	*at += l;
	return 0;
}

int directives_values(struct directives *ds, char **cause)
{
	size_t i, at = 0;
	int s;

	ds->values[0] = 0;
	for (i = 0; i < ds->n; i++)
		for (s = 0; s < 2; s++)
			if (directives_value(ds, ds->d[i].func[s],
					     ds->d[i].exit[s], ds->d[i].arg[s],
					     &at))
				return propel_cause(cause, -E2BIG,
						    "directives: too many "
						    "functions named (at "
						    "most %zu bytes of them)",
						    sizeof(ds->values) - 1);
	if (ds->args && directives_value(ds, "*", 0, -1, &at))
		return propel_cause(cause, -E2BIG, "directives: too many "
				    "functions named");
	return 0;
}

int directives_write(const struct directives *ds, const char *dir, char **cause)
{
	char path[1024];
	FILE *f;
	int bad;

	if (!ds->n && !ds->args)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_VALUES_FILE);
	f = fopen(path, "we");
	if (!f)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	bad = fprintf(f, "%s\n", ds->values) < 0;
	bad |= fclose(f) != 0;
	if (bad)
		return propel_cause(cause, -EIO, "%s: cannot write", path);
	return 0;
}

int directives_keep(const char *db, const struct directives *ds, char **cause)
{
	struct session *s = NULL;
	size_t i, len = 1;
	char *all;
	int err;

	for (i = 0; i < ds->n; i++)
		len += strlen(ds->spec[i]) + 1;
	all = calloc(1, len);
	if (!all)
		return propel_cause(cause, -ENOMEM, "out of memory");
	for (i = 0; i < ds->n; i++) {
		strcat(all, ds->spec[i]);
		strcat(all, "\n");
	}
	err = session_open(db, SESSION_WRITE, &s, cause);
	if (!err) {
		err = session_meta_set(s, "directives", all);
		session_close(s);
		if (err)
			err = propel_cause(
			    cause, err, "%s: cannot keep the directives", db);
	}
	free(all);
	return err;
}

int directives_load(struct session *s, struct directives *ds, char **cause)
{
	char *all = session_meta_get(s, "directives"), *line, *save = NULL;
	int err = 0;

	memset(ds, 0, sizeof(*ds));
	if (!all)
		return 0;
	for (line = strtok_r(all, "\n", &save); line && !err;
	     line = strtok_r(NULL, "\n", &save))
		err = directives_add(ds, line, cause);
	free(all);
	if (err)
		directives_release(ds);
	return err;
}

static int directives_has_side(const struct directives *ds, const char *func,
			       int exit, int arg)
{
	size_t i;
	int s;

	for (i = 0; i < ds->n; i++)
		for (s = 0; s < 2; s++)
			if (ds->d[i].exit[s] == exit &&
			    (exit || ds->d[i].arg[s] == arg) &&
			    !strcmp(ds->d[i].func[s], func))
				return 1;
	return 0;
}

int directives_recorded(const struct directives *ds,
			const struct flows_directive *d)
{
	return directives_has_side(ds, d->func[0], d->exit[0], d->arg[0]) &&
	       directives_has_side(ds, d->func[1], d->exit[1], d->arg[1]);
}
