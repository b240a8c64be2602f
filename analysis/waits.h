/*
 * analysis/waits.h - which calls are a thread waiting rather than working,
 * by the name of the C-library function (the same on every Linux server:
 * nginx, redis, sshd and CPython's selectors all wait through these):
 *
 *   waits_readiness  a wait for any of many descriptors to be ready
 *                    (poll, select, epoll_wait...): an event loop's wait for
 *                    its next piece of work, never a request's own work
 *   waits_input      a wait for input of any kind: the readiness waits, an
 *                    accept, a read or receive, a wait for a child or a
 *                    signal (a daemon between requests waits in one)
 *
 * A blocking read of a file is input too, but it can be a request's work
 * (a slow disk): only waits_readiness marks time that no request owns.
 * Used by analysis/rootcause.c (idle threads) and engine/variance.c
 * (no share of a group's variance for an event loop's wait).
 */
#ifndef PROPEL_ANALYSIS_WAITS_H
#define PROPEL_ANALYSIS_WAITS_H

int waits_readiness(const char *fn);
int waits_input(const char *fn);

#endif
