/*
 * engine/vitals-host.h - `--follow --vitals` on a host of another kernel
 * (issue 36 item 3).  The coordinator's collectors see only its own
 * kernel; a host reached by ssh that runs another one is covered by its
 * own propeld, which on the coordinator's VITALS frame (share/wire.h)
 * starts `propel vitals host DIR` beside it (inject/propeld.c: propeld
 * links inject/ and share/ only, so the collectors run in that child):
 *
 *   vitals_host_run    the child: the two collectors of engine/
 *                      vitals-trace.h over the processes whose map files
 *                      appear in DIR (propeld's session directory, looked
 *                      at every 100 ms, as the coordinator does for the
 *                      hosts on its kernel), until its stdin ends (propeld
 *                      closes it once its agents are detached, or dies);
 *                      then all of it into DIR/VITALS_HOST_FILE, streamed
 *                      to the coordinator with the rings at STOP.
 *   vitals_host_merge  the coordinator, after the session is stored and
 *                      its own collectors' output is in it: one host's
 *                      file appended, its row ids renumbered after the
 *                      session's (runs, epochs, stacks, samples) and its
 *                      times moved onto the session's clock (the host's
 *                      CLOCK_MONOTONIC + offset_ns = ours, engine/
 *                      transport.h; the samples' CLOCK_REALTIME through
 *                      both hosts' mono_to_real).
 *
 * The host's pids are its own (a real other host has its own pid space,
 * as its processes in the session have): its spans and signals carry its
 * name in column host (engine/offcpu-store.h), and a span of this
 * session's collectors that had been given this host for its pid goes
 * back to this session's host.  Nothing here exits.
 */
#ifndef PROPEL_ENGINE_VITALS_HOST_H
#define PROPEL_ENGINE_VITALS_HOST_H

#include <stdint.h>

#define VITALS_HOST_FILE "vitals.db"

/* 0, or -errno with *cause (the file is not written). */
int vitals_host_run(const char *dir, int all, char **cause);

/*
 * Append the host's file (VITALS_HOST_FILE as collected) of host (its name
 * in the session's processes) to session db.
 * *summary (malloc'd, free() it) gets the host's one line of what ran
 * there.  0 or -errno with *cause.
 */
int vitals_host_merge(const char *db, const char *file, const char *host,
		      int64_t offset_ns, char **summary, char **cause);

#endif
