/*
 * tui/opt.c - see tui/opt.h.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/directives.h"
#include "share/log.h"
#include "tui/opt.h"

int opt_number(const char *verb, const char *opt, const char *arg, double min,
	       double max, const char *unit, double *out)
{
	char what[128], *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end != arg && !*end && !errno && isfinite(v) && v >= min &&
	    v <= max) {
		*out = v;
		return 0;
	}
	snprintf(what, sizeof(what), "%s: %s %.40s", verb, opt, arg);
	propel_reportf(what, "%s from %.15g to %.15g", unit, min, max);
	return -1;
}

int opt_output(const char *verb, const char *opt, const char *arg, int dash_ok)
{
	char what[128];

	if (*arg && (*arg != '-' || (dash_ok && !strcmp(arg, "-"))))
		return 0;
	snprintf(what, sizeof(what), "%s: %s '%.40s'", verb, opt, arg);
	propel_reportf(what, "%s",
		       *arg ? "an output file name, not an option (for such "
			      "a name say ./NAME)"
			    : "an output file name, not empty");
	return -1;
}

void opt_bad(const char *verb, int c, char **argv)
{
	char what[128];

	snprintf(what, sizeof(what), "%s: %.60s", verb, argv[optind - 1]);
	propel_reportf(what, "%s (see propel %s --help)",
		       c == ':' ? "needs a value" : "unknown option", verb);
}

int opt_directive(const char *verb, int file, const char *arg,
		  struct directives *ds)
{
	char *cause = NULL, what[64];
	int err = file ? directives_add_file(ds, arg, &cause)
		       : directives_add(ds, arg, &cause);

	if (!err)
		return 0;
	snprintf(what, sizeof(what), "%s: %s", verb,
		 file ? "--directives" : "--directive");
	propel_report(what, err, cause);
	free(cause);
	return -1;
}
