/*
 * engine/variance.h - `propel report --variance` (variance.c): a
 * session's flows grouped by path, their CV and tail, and the functions
 * ranked by the share of a problem group's variance they explain, beside
 * what `attach --adaptive` traced.  Called by tui/cmd-report.c.
 */
#ifndef PROPEL_ENGINE_VARIANCE_H
#define PROPEL_ENGINE_VARIANCE_H

/* Print db's report to stdout, text or JSON: 0, or -errno with *cause. */
int variance_report(const char *db, int json, char **cause);

#endif
