/*
 * inject/peer-stdio.h - follow only the system, not the operator's
 * pipeline (issue 32): the channels a traced program inherited from
 * propel's own standard input, output and error (a terminal, `| cat`,
 * `| tee`, a harness reading the output) and propel's own ancestors are
 * not propagation peers.
 *
 * The coordinator (engine/follow.c, follow_own_stdio) writes
 * PEER_STDIO_FILE into the local propeld's session directory before CMD
 * starts: its pid and the inodes of its fds 0, 1 and 2 when they are
 * pipes or sockets.  propeld (inject/propeld.c, pd_follow_once) reads it
 * at each propagation request: a pipe or UNIX socket whose inode is one
 * of them is not followed (said once), nor is a process that is the
 * coordinator or one of its ancestors.  No file (--follow-stdio, or
 * another coordinator's propeld): everything is followed as before.
 */
#ifndef PROPEL_INJECT_PEER_STDIO_H
#define PROPEL_INJECT_PEER_STDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inject/peer.h"

#define PEER_STDIO_FILE "stdio"

struct peer_stdio {
	pid_t coord;		/* 0: no file, nothing held back */
	uint64_t ino[3];	/* fd 0, 1, 2: 0 when not a pipe or socket */
	char kind[3][8];	/* "pipe", "socket" */
};

/* This process's stdio (fds 0..2) into st, coord = getpid(). */
void peer_stdio_self(struct peer_stdio *st);
/* st into DIR/PEER_STDIO_FILE.  0 or -errno with *cause. */
int peer_stdio_write(const char *dir, const struct peer_stdio *st,
		     char **cause);
/* DIR/PEER_STDIO_FILE into st (coord 0 when there is none). */
void peer_stdio_read(const char *dir, struct peer_stdio *st);
/* The fd (0..2) of st whose channel a names (pipe or unix, either end's
 * inode), -1 when none. */
int peer_stdio_fd(const struct peer_stdio *st, const struct peer_addr *a);
/* 1 if pid is st's coordinator or one of its ancestors. */
int peer_stdio_ancestor(const struct peer_stdio *st, pid_t pid);

#endif
