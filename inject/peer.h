/*
 * inject/peer.h - which process is at the other end of a channel, on this
 * host (propagation, DESIGN.md "Agent"): the peer named by an agent's
 * propagation request (inject/tracer.h) is mapped to the processes that
 * hold its end:
 *
 *   tcp    the socket whose local address is the peer's and whose remote
 *          is ours (NETLINK_SOCK_DIAG, inet_diag), else the listener on the
 *          peer's port (the connection is still in its accept queue);
 *          socket inode -> processes through /proc/PID/fd
 *   udp    the socket bound to the peer's port (connected to us first)
 *   unix   the peer socket's inode (the agent has it from unix_diag);
 *          a connection not accepted yet (peer inode 0): the listener
 *          whose accept queue holds it (UNIX_DIAG_ICONS)
 *   unixd  the receiving socket's inode
 *   pipe   the pipe's inode, held open for reading by another process
 *          (the request comes at a send: its far end reads)
 *
 * Used by inject/propeld.c.  Errors: 0 or -errno with a one-line cause.
 */
#ifndef PROPEL_INJECT_PEER_H
#define PROPEL_INJECT_PEER_H

#include <stdint.h>
#include <sys/types.h>

struct peer_addr {
	char kind[8];		/* tcp udp unix unixd pipe */
	uint8_t laddr[16], paddr[16];
	int alen;		/* 4, 16; 0 for unix and pipe */
	uint16_t lport, pport;
	uint64_t lino, pino;
};

/* Parse "<kind> <laddr> <lport> <paddr> <pport> <lino> <pino>" (hex
 * addresses, "-" for none).  0 or -EINVAL. */
int peer_parse(const char *line, struct peer_addr *a);

/* "10.0.0.2:8080", "[::1]:80", "pipe:1234", "unix:5678" */
void peer_name(const struct peer_addr *a, char *buf, size_t size);
/* The peer's address alone ("10.0.0.2"), "" for unix and pipe. */
void peer_host(const struct peer_addr *a, char *buf, size_t size);

/* 1 if the peer's address is one of this host's (network namespace's)
 * addresses, or the channel is local by kind (unix, pipe); 0 if not. */
int peer_is_local(const struct peer_addr *a);

/* The processes (other than except) holding the peer's end, at most max,
 * in pids; returns how many (0: none found), or -errno with *cause:
 * -EPIPE when nobody holds it because it is closed (a unix peer socket
 * gone, a TCP connection gone with no listener on its port), as seen from
 * except's network namespace (the asker's; unknown when except is 0). */
int peer_find(const struct peer_addr *a, pid_t except, pid_t *pids, int max,
	      char **cause);

/* The socket records sock_diag has given peer_find so far: what its
 * lookups cost (a dump reads every socket of the namespace). */
extern unsigned long peer_diag_records;

/* This host's addresses, comma-separated, into buf (for the HELLO). */
void peer_local_addrs(char *buf, size_t size);

/* The owner (real uid) of pid, or -errno. */
long peer_owner(pid_t pid);

/* 1 if pid runs under a seccomp filter it set itself (no_new_privs: a
 * sandbox such as sshd's pre-authentication child, where the agent's system
 * calls, or the restart of a call ptrace interrupted, may be killed). */
int peer_sandboxed(pid_t pid);

#endif
