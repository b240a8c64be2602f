/*
 * engine/follow.h - the --follow coordinator (DESIGN.md "Data flow"): one
 * propeld per host (engine/transport.h), starting with this host's; the
 * agents' propagation requests for peers on other hosts are relayed to
 * the host that has the peer's address (a new one reached with ssh to
 * that address); at the end every host detaches its agents and streams
 * its session directory back, and all of it becomes one session
 * (processes.host filled, each host's clock moved onto ours).
 *
 * Caller: engine/run.c (record and attach --follow).  Errors: 0 or
 * -errno with a one-line cause; a host that cannot be reached, a peer that may not be
 * traced, a host lost mid-session are each reported on stderr in one line
 * ("propel: ...") and the session goes on.
 */
#ifndef PROPEL_ENGINE_FOLLOW_H
#define PROPEL_ENGINE_FOLLOW_H

#include <stdint.h>
#include <sys/types.h>

struct follow;
struct capture;

/* Start this host's propeld; flags: PROPEL_START_* for every injection
 * (PROPEL_START_FOLLOW is added). */
int follow_begin(uint32_t flags, struct follow **out, char **cause);

/* Propel's own stdio and ancestors are not followed on this host
 * (inject/peer-stdio.h): before CMD starts, unless --follow-stdio.  0 or
 * -errno with *cause. */
int follow_own_stdio(struct follow *f, char **cause);
/* This host's session directory (for `record --follow`'s environment). */
const char *follow_local_dir(const struct follow *f);

/*
 * Every host reached so far and up, this host first: fn(arg, host name,
 * its session directory, this_kernel).  this_kernel: the host shares this
 * machine's kernel and pid namespace (a network namespace, as the tests'
 * hosts are): its processes are this kernel's, with the pids its
 * directory names, and its directory can be read here.  --vitals covers
 * those hosts' processes from here; another kernel's are not seen.
 */
void follow_each_host(const struct follow *f,
		      void (*fn)(void *arg, const char *host, const char *dir,
				 int this_kernel),
		      void *arg);

/* Inject pid on this host (serving other frames meanwhile).  0 or -errno
 * with *cause. */
int follow_attach(struct follow *f, pid_t pid, char **cause);

/* Serve the hosts for up to ms.  Returns the number of hosts still
 * connected. */
int follow_poll(struct follow *f, int ms);

/* Processes injected so far (every host), and hosts reached. */
void follow_counts(const struct follow *f, int *processes, int *hosts);

/* --vitals (all: every process there): each host up on another kernel
 * (this_kernel 0) is told to run the kernel collectors over the processes
 * it traces (its propeld: engine/vitals-host.h); their output comes back
 * with its rings at follow_end.  Before any other host is reached. */
void follow_set_vitals(struct follow *f, int all);

/* A host's vital signs as follow_end leaves them, for vitals_host_merge
 * once the session holds this host's own: a file beside the session
 * (remove it when done), the host, its clock offset. */
struct follow_vitals {
	char path[1100];
	char host[65];
	int64_t offset_ns;
};

/* Stop: every host detaches its agents and streams its directory into
 * cap's; the session is stored (capture_end_hosts).  f is freed.  *vit
 * (malloc'd, free() it; NULL and *nvit 0 when none) gets the hosts'
 * vital signs (follow_set_vitals). */
int follow_end(struct follow *f, struct capture *cap, int argc,
	       char *const *argv, struct follow_vitals **vit, size_t *nvit,
	       char **cause);

/* Give up without a session (f freed, hosts told to stop). */
void follow_abort(struct follow *f);

#endif
