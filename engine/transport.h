/*
 * engine/transport.h - the coordinator's line to one host's propeld
 * (share/wire.h): `propeld --stdio` spawned as a child for this host, or
 * `ssh HOST propeld --stdio` for another (ssh's own config and keys).
 *
 *   PROPEL_SSH       the ssh command, split on blanks (default "ssh"; e.g.
 *                    "ssh -F /path/ssh_config"); propel adds
 *                    -o BatchMode=yes -o ConnectTimeout=5
 *   PROPEL_PROPELD   the local propeld (default: next to the propel binary)
 *   PROPEL_REMOTE_PROPELD  propeld's path on other hosts (default: the
 *                    local one's absolute path)
 *   PROPEL_TEST_FOREIGN=1  every host reached by ssh counts as one on
 *                    another kernel (same_clock 0: its clock exchanged,
 *                    its rings only streamed, its vital signs collected
 *                    by its own propeld), so that path is tested on one
 *                    machine with network namespaces
 *   PROPEL_PROPELD_SOCKET  this host's propeld socket (default
 *                    /run/propel/propeld.sock): when a propeld serves
 *                    there (root's: it sees and may inject more than the
 *                    user, as SO_PEERCRED allows), this host is reached
 *                    through it instead of a child
 *
 * transport_start spawns it and says HELLO; transport_step, each time
 * its line is readable (or to see the deadline pass), reads the host's
 * answer (its name, boot id, session directory, addresses) and aligns its
 * clock, without ever waiting: the coordinator serves its other hosts
 * while ssh logs in.  transport_open does both, waiting (this host).
 * Errors: 0 or -errno with a one-line cause (ssh's own last line when ssh
 * fails).  Used by engine/follow.c.
 */
#ifndef PROPEL_ENGINE_TRANSPORT_H
#define PROPEL_ENGINE_TRANSPORT_H

#include <stdint.h>
#include <sys/types.h>

struct transport {
	char name[256];	    /* "local", or the address ssh was given */
	pid_t pid;	    /* propeld, or ssh */
	int to, from;	    /* frames to it, from it */
	int errfd;	    /* its stderr */
	/* from its HELLO */
	char host[65];
	char boot[64];
	char dir[512];
	char addrs[1024];   /* comma-separated */
	int remote_pid;
	/* its CLOCK_MONOTONIC + offset_ns = ours, within err_ns */
	int64_t offset_ns, err_ns;
	int same_clock;     /* same kernel (boot id): offset 0, exact */
	/* reaching it (engine/transport.c draws the phases) */
	int phase;          /* TRANSPORT_HELLO, _CLOCK, _UP */
	int64_t deadline_ns; /* CLOCK_MONOTONIC: give up then */
	int rounds;         /* clock exchange: answers so far */
	int64_t t1_ns, best_ns; /* the TIME in flight went out at t1 */
	int64_t clock0_ns;  /* the exchange's first TIME went out */
};

enum { TRANSPORT_HELLO, TRANSPORT_CLOCK, TRANSPORT_UP };

/* Spawn (host NULL: this host) and say HELLO with flags (PROPEL_START_*
 * for every injection there); the answer is transport_step's.  0 with
 * *out, or -errno with *cause. */
int transport_start(const char *host, uint32_t flags, struct transport **out,
		    char **cause);

/* One step on the way: readable says t->from has something (else only
 * the deadline is looked at).  1: up (HELLO read, clock aligned: an
 * NTP-style exchange, best of 8 round trips or more while the best is
 * slow -- up to 256 of them or 250 ms, until one takes under 50 us --,
 * offset and error bound half the best round trip; one kernel: 0 and 0
 * unless PROPEL_CLOCK_EXCHANGE=1), 0: not yet, -errno with *cause:
 * failed. */
int transport_step(struct transport *t, int readable, char **cause);

/* transport_start, then transport_step until up, waiting.  0 with *out,
 * or -errno with *cause. */
int transport_open(const char *host, uint32_t flags, struct transport **out,
		   char **cause);

/* The values mapping directives name (share/agent-abi.h, "f@1,g@ret"),
 * said in every later HELLO so that each host's agents record them; NULL
 * or "" for none.  The string must outlive the transports. */
void transport_set_values(const char *values);

/* 1 if addr (numeric) is one of the host's addresses. */
int transport_has_addr(const struct transport *t, const char *addr);

/* The last line the host wrote on stderr, into buf ("" if none). */
void transport_last_err(struct transport *t, char *buf, size_t size);

/* Close the line, wait for the child (a short while, then kill it); t
 * stays readable. */
void transport_hangup(struct transport *t);
/* transport_hangup, and free t. */
void transport_close(struct transport *t);
/* Give up on a line now: its child (ssh, and what ssh started) killed,
 * not waited for; t stays readable. */
void transport_kill(struct transport *t);

#endif
