/*
 * share/log.c - see share/log.h.  The debug log is opened lazily, appended
 * with one write(2) per line so that several processes can share it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "share/log.h"

const char *propel_progname = "propel";

int propel_cause(char **cause, int err, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	if (!cause || *cause)
		return err;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	*cause = s;
	return err;
}

void propel_report(const char *what, int err, const char *cause)
{
	if (cause)
		fprintf(stderr, "%s: %s: %s\n", propel_progname, what, cause);
	else if (err)
		fprintf(stderr, "%s: %s: %s\n", propel_progname, what,
			strerror(err < 0 ? -err : err));
	else
		fprintf(stderr, "%s: %s\n", propel_progname, what);
}

void propel_reportf(const char *what, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	propel_report(what, 0, buf);
}

static int log_fd = -2;
static const char *log_domains;

int propel_log_enabled(const char *domain)
{
	const char *p;
	size_t n = strlen(domain);

	if (log_fd == -2) {
		const char *path = getenv("PROPEL_LOG");

		log_domains = getenv("PROPEL_DEBUG");
		log_fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND |
						   O_CLOEXEC, 0644)
			      : -1;
	}
	if (log_fd < 0 || !log_domains)
		return 0;
	if (strcmp(log_domains, "all") == 0)
		return 1;
	for (p = log_domains; (p = strstr(p, domain)); p += n)
		if ((p == log_domains || p[-1] == ',') &&
		    (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

void propel_log(const char *domain, const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	va_list ap;
	int n;

	if (log_fd < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(buf, sizeof(buf), "%ld.%06ld %d %s: ", (long)ts.tv_sec,
		     ts.tv_nsec / 1000, (int)getpid(), domain);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(log_fd, buf, n) < 0) {
		/* nothing to do: logging must never fail the caller */
	}
}
