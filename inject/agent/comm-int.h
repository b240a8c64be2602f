/*
 * inject/agent/comm-int.h - what inject/agent/comm.c (descriptors, calls,
 * events, TCP) and inject/agent/comm-stream.c (pipes and AF_UNIX streams:
 * the shared positions files, the sockets' peers) share.  Nothing else
 * includes it.
 */
#ifndef PROPEL_INJECT_AGENT_COMM_INT_H
#define PROPEL_INJECT_AGENT_COMM_INT_H

#include <stdint.h>

#define COMM_F_OFFSET 1u /* ARG 1 is a stream offset */
#define COMM_F_DGRAM 2u  /* ARG 1 is a datagram's hash */
#define COMM_F_HELD 4u   /* ARG 3 follows: when the send began to be held */
#define COMM_CHAN_NONE 0xffffffffu

#define COMM_SHARED 1u   /* TCP: another process may use it: ask each time */
#define COMM_SEND_OK 2u  /* send_next is known */
#define COMM_RECV_OK 4u  /* recv_next is known */
#define COMM_NOPEER 8u   /* no channel could be named */
#define COMM_IN_JOINED 16u  /* pipes, unix: R is this process's too */
#define COMM_OUT_JOINED 32u /* W is */
#define COMM_PEND 64u       /* unix stream not accepted yet: peer unknown */

/* Set by an injection (attach): calls before it were not seen here. */
extern int64_t comm_since_ns;

/* Byte counts of one direction of a pipe or AF_UNIX stream (a file). */
struct comm_ctr {
	volatile uint64_t magic; /* COMM_CTR_MAGIC once the rest is set */
	volatile int64_t created_ns; /* CLOCK_MONOTONIC */
	volatile int64_t written;    /* W: offset of the next byte written */
	volatile int64_t read;       /* R: of the next byte read */
	/* calls in flight, [0] reads and [1] writes: entered (their bytes
	 * may have moved) and not yet counted in R or W (comm_join) */
	volatile int64_t busy[2];
};
#define COMM_CTR_MAGIC 0x33525443504f5250ull /* "PROPCTR3" */

struct comm_fd {
	uint32_t flags;
	uint32_t chan; /* streams, connected datagram sockets; NONE */
	int64_t send_next, recv_next; /* TCP */
	struct comm_ctr *in, *out;    /* pipes, AF_UNIX streams */
	uint64_t ino, peer_ino;
	uint32_t upend; /* COMM_PEND: its entry's seq (comm_upend_add) */
	/* datagram sockets: the local address (wildcard resolved per peer) */
	uint8_t laddr[16];
	uint16_t lport;
	uint8_t alen; /* 4, 16; 0 unknown */
	/* datagrams: the last peer and its channel (under comm_lock) */
	uint8_t last_alen;
	uint16_t last_pport;
	uint8_t last_paddr[16];
	uint32_t last_chan;
};

struct comm_chan {
	uint8_t type, alen;
	uint16_t lport, pport;
	uint8_t laddr[16], paddr[16];
	uint64_t lino, pino;
	uint32_t hnext; /* id + 1 of the next in its bucket, 0 = end */
};

#define COMM_CHAN_MAX 65536

/* comm.c: the descriptor and channel tables, under comm_lock */
extern struct comm_fd *comm_fds;
extern struct comm_chan *comm_chans;
extern uint32_t comm_nchans;
void comm_lock(void);
void comm_unlock(void);
/* Write channel id's C line into the map file. */
void comm_chan_line(uint32_t id, const struct comm_chan *c);

/* comm-stream.c */
/* What sock_diag says of an AF_UNIX socket. */
struct comm_udiag {
	uint64_t peer; /* the peer's inode; 0: none, not accepted, or gone */
	int64_t rqlen; /* its receive queue (bytes, streams); -1 unknown */
	int shut;      /* SHUTDOWN_MASK bits: 3 once the peer has gone */
};

/* sock_diag of the AF_UNIX socket ino into *u: 0, or -1 (no such socket,
 * or no sock_diag). */
int comm_unix_diag(uint64_t ino, struct comm_udiag *u);

/* Bytes queued in a pipe or UNIX stream direction as fd (of type ct, the
 * sending end if out) can see them; -1 unknown. */
int64_t comm_backlog(int fd, unsigned ct, int out);

/* The positions file of one direction (kind "pipe", "unix" or "orphan",
 * named by inode ino), made if new with the backlog fd sees (*made_here
 * = 1 then); NULL when it cannot be made. */
struct comm_ctr *comm_ctr_get(const char *kind, uint64_t ino, int fd,
			      unsigned ct, int out, int *made_here);
/* A new session: the positions files of the last one are forgotten (its
 * directory's, not this one's; they stay mapped: a thread inside a read
 * when the session ended may still count into one). */
void comm_ctr_forget(void);

enum { COMM_PEER_NONE, COMM_PEER_LIVE, COMM_PEER_GONE };

/* An AF_UNIX stream's peer: its inode and how it is known (*how). */
uint64_t comm_unix_find(int fd, uint64_t ino, int *how);
/* Leave a note for peer's side: its peer is own. */
void comm_unix_note(uint64_t own, uint64_t peer);
/* List a client not accepted yet; its entry's seq, or 0. */
uint32_t comm_upend_add(int fd, uint64_t ino);
/* A COMM_PEND client: its peer, if it can be named now. */
void comm_unix_resolve(int fd, int64_t consumed);
/* A thread was inside a read or write on fd at injection. */
int comm_was_in_flight(int fd);
/* Pipes and UNIX streams: this process's first call in a direction. */
void comm_join(int fd, unsigned ct, int send);

#endif
