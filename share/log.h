/*
 * share/log.h - errors and logging shared by every part.
 *
 * Three channels, kept apart (STYLE.md):
 *   - return codes: 0 or -errno, propagated up;
 *   - a message for the user: built with propel_cause() into a malloc'd
 *     string that travels up as `char **cause` to the command, which prints
 *     it as one line, "propel: what: why";
 *   - debug logs: pr_dbg(), to the file named by $PROPEL_LOG (never the
 *     terminal, which the TUI owns), gated per domain by $PROPEL_DEBUG
 *     (comma-separated domain names, or "all").
 * Nothing here exits: the agent and the daemon must never take down their
 * host process.  Only the CLI's top level decides to exit.
 */
#ifndef PROPEL_SHARE_LOG_H
#define PROPEL_SHARE_LOG_H

#include <stdarg.h>

/* Set *cause to a formatted, malloc'd message (if cause is non-NULL and
 * *cause is still NULL: the first, innermost cause wins).  Returns err so
 * that `return propel_cause(cause, -ENOENT, "...")` reads naturally. */
int propel_cause(char **cause, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Print "propel: <what>: <cause>" (or strerror(-err)) on stderr. */
void propel_report(const char *what, int err, const char *cause);
/* The same, its cause formatted. */
void propel_reportf(const char *what, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Debug log, gated per domain. */
void propel_log(const char *domain, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int propel_log_enabled(const char *domain);

/* A line of domain's debug log, formatted only when it is on. */
#define pr_log(domain, fmt, ...)                                           \
	do {                                                               \
		if (propel_log_enabled(domain))                            \
			propel_log(domain, fmt, ##__VA_ARGS__);            \
	} while (0)
#define pr_dbg(fmt, ...) pr_log(PR_DOMAIN, fmt, ##__VA_ARGS__)

/* Program name used in messages ("propel", "propeld"). */
extern const char *propel_progname;

#endif
