/*
 * share/wire.h - the propeld protocol: what the coordinator (engine/
 * transport.c, engine/follow.c) and a host's daemon (inject/propeld.c) say
 * to each other over one byte stream (ssh's stdin/stdout, a pipe to a
 * local child, or propeld's UNIX socket).
 *
 * A frame is an 8-byte header, then len bytes of payload:
 *
 *   uint32_t len   payload bytes, little-endian (x86-64 only), <= WIRE_MAX
 *   uint16_t type  enum wire_type
 *   uint16_t ver   WIRE_VERSION
 *
 * Payloads are one line of space-separated fields (text, so a session can
 * be read with strace), except WIRE_DATA whose payload is raw file bytes.
 * The conversation, coordinator (C) and daemon (D):
 *
 *   C: HELLO "propel-wire 1 <flags> [<values>]"
 *                                 D: HELLO "propel-wire 1 <host> <pid>
 *                                     <boot id> <session dir> <addr,...>"
 *   C: TIME ""                    D: TIME "<CLOCK_MONOTONIC ns>"
 *   C: ATTACH "<id> <pid>"        D: RESULT "<id> <-errno> <pid> <text>"
 *   C: FOLLOW "<id> <peer>"       D: RESULT ... (find the process behind
 *                                     the peer on this host, inject it)
 *   D: PEER "<id> <peer>"         C: PEER_DONE "<id> <-errno>" (an agent
 *                                     of D's asked to follow a peer that
 *                                     is not on D's host; C finds the host)
 *   D: NOTE "<text>"              (one line for the user: a process
 *                                  injected, a peer refused)
 *   C: VITALS "<all>"             D: (a host on another kernel, --vitals)
 *                                  runs the kernel collectors over the
 *                                  processes it traces (`propel vitals
 *                                  host DIR`, engine/vitals-host.h); at
 *                                  STOP their output is the file
 *                                  vitals.db of the session dir
 *   C: STOP ""                    D: every agent detached, then for each
 *                                  file of the session dir FILE "<size>
 *                                  <name>" and DATA frames, then END
 *                                  "<processes detached>"; D exits.
 *
 * <flags> are PROPEL_START_* for every injection; <values>, when present,
 * the values mapping directives name (share/agent-abi.h,
 * PROPEL_VALUES_FILE: written into the daemon's session directory).
 *
 * <peer> is "<kind> <local addr> <local port> <peer addr> <peer port>
 * <local inode> <peer inode>" as the agent's C lines and request files
 * write it (inject/agent/comm.c; addresses in hex, "-" for none), seen from
 * the process that sends.  A version mismatch in HELLO ends the
 * conversation with one line naming both versions.
 */
#ifndef PROPEL_SHARE_WIRE_H
#define PROPEL_SHARE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_VERSION 1
#define WIRE_MAX (1u << 20)
#define WIRE_MAGIC "propel-wire"

enum wire_type {
	WIRE_HELLO = 1,
	WIRE_TIME,
	WIRE_ATTACH,
	WIRE_FOLLOW,
	WIRE_RESULT,
	WIRE_PEER,
	WIRE_PEER_DONE,
	WIRE_NOTE,
	WIRE_STOP,
	WIRE_FILE,
	WIRE_DATA,
	WIRE_END,
	WIRE_VITALS,
};

struct wire_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t ver;
};

/* Write one frame (all of it, retrying on EINTR).  0 or -errno. */
int wire_send(int fd, int type, const void *payload, size_t len);
/* The same with a printf-formatted text payload. */
int wire_sendf(int fd, int type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Read one whole frame (blocking until it is all in, at most ms for the
 * frame once begun; ms < 0: no limit).  The payload lands in buf (cap
 * bytes, NUL-terminated after len); returns the payload length, 0 with
 * *type set on an empty payload, -EPIPE at end of stream, -EPROTO on a
 * bad header or version, -EMSGSIZE if the payload is larger than cap - 1,
 * -ETIMEDOUT, or another -errno.
 */
int wire_recv(int fd, int *type, char *buf, size_t cap, int ms);

/* The name of a frame type, for messages. */
const char *wire_type_name(int type);

#endif
