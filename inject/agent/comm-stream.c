/*
 * inject/agent/comm-stream.c - pipes and AF_UNIX streams for comm.c (the
 * comment at its top says how their offsets work): the positions files
 * shared by every agent that holds a channel, and who is at the other
 * end of an AF_UNIX stream.
 *
 * Positions: chan.pipe.<inode of the pipe>, chan.unix.<inode of the
 * sending socket> (chan.orphan.<inode> for the reads of a socket whose
 * other end is unknown), 4096 bytes mapped MAP_SHARED, made complete under
 * a name of their own and linked in (comm_ctr_get).  Everything here runs
 * in the traced program's calls, on the slow path: no malloc, errno kept
 * by the callers.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "inject/agent/comm-int.h"

/* sock_diag of the AF_UNIX socket ino into *u: 0, or -1 (no such socket,
 * or no sock_diag). */
int comm_unix_diag(uint64_t ino, struct comm_udiag *u)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req r;
	} req;
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} ans;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	ssize_t n;
	int s, ret = -1;

	u->peer = 0;
	u->rqlen = -1;
	u->shut = 0;
	if (!ino) /* a socket not accepted yet (or gone) has inode 0 */
		return -1;
	s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (s < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = AF_UNIX;
	req.r.udiag_ino = (uint32_t)ino;
	req.r.udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN;
	req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0u;
	if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) != sizeof(req))
		goto out;
	n = recv(s, &ans, sizeof(ans), 0);
	if (n > 0 && NLMSG_OK(&ans.nlh, (size_t)n) &&
	    ans.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
		struct unix_diag_msg *m = NLMSG_DATA(&ans.nlh);
		struct rtattr *a = (struct rtattr *)(m + 1);
		int len = (int)ans.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(*m));

		ret = 0;
		for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
			if (a->rta_type == UNIX_DIAG_PEER &&
			    RTA_PAYLOAD(a) >= 4)
				u->peer = *(uint32_t *)RTA_DATA(a);
			if (a->rta_type == UNIX_DIAG_RQLEN &&
			    RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen))
				u->rqlen = ((struct unix_diag_rqlen *)
						    RTA_DATA(a))->udiag_rqueue;
			if (a->rta_type == UNIX_DIAG_SHUTDOWN &&
			    RTA_PAYLOAD(a) >= 1)
				u->shut = *(uint8_t *)RTA_DATA(a);
		}
	}
out:
	close(s);
	return ret;
}


/*
 * Bytes queued in a pipe or UNIX stream direction, as fd's process can
 * see them: FIONREAD on a pipe (either end) or on the receiving socket;
 * the peer's receive queue for a UNIX stream's sending end.  -1 unknown.
 */
int64_t comm_backlog(int fd, unsigned ct, int out)
{
	int q = 0;

	if (ct == CT_USTREAM && out) {
		struct comm_udiag u;

		return comm_unix_diag(comm_fds[fd].peer_ino, &u) ? -1 : u.rqlen;
	}
	return ioctl(fd, FIONREAD, &q) < 0 ? -1 : q;
}

/* ---- shared byte counts of pipes and AF_UNIX streams ---- */

#define COMM_CTR_CACHE 256
static struct {
	uint64_t ino;
	char kind; /* 'p'ipe or 'u'nix: inodes of two file systems */
	struct comm_ctr *c;
} comm_ctr_cache[COMM_CTR_CACHE];

/*
 * Each positions file is a mapping of its own and stays mapped (a thread
 * may be inside a call counting into one: nothing tells when the last
 * stops), and a process has vm.max_map_count (65,530) in all: a client of
 * a local service that made 32,765 UNIX connections under record would
 * have had none left for its own malloc or threads (two files a
 * connection).  So a process maps at most COMM_CTR_MAPS of them over its
 * life; past that, new pipes and UNIX streams are recorded without
 * offsets (matched as a channel whose files could not be made), and the
 * session says so once.
 */
#define COMM_CTR_MAPS 8192
static unsigned comm_ctr_maps;
static int comm_ctr_full_said;

/*
 * The positions of the direction flowing into inode ino (a pipe, or the
 * receiving socket), made if new with the backlog that fd (of type ct,
 * the sending end if out) sees; *made = 1 then.  NULL when the file cannot
 * be made.
 */
/* An existing positions file, complete (its maker links it in only when
 * it is), or NULL. */
static struct comm_ctr *comm_ctr_map(const char *path)
{
	struct comm_ctr *c;
	struct stat st;
	int cfd = open(path, O_RDWR | O_CLOEXEC);

	if (cfd < 0)
		return NULL;
	/* never map past its end: that would be SIGBUS in the program */
	if (fstat(cfd, &st) < 0 || st.st_size < 4096) {
		close(cfd);
		return NULL;
	}
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	close(cfd);
	if (c == MAP_FAILED)
		return NULL;
	if (c->magic != COMM_CTR_MAGIC) {
		munmap(c, 4096);
		return NULL;
	}
	return c;
}

struct comm_ctr *comm_ctr_get(const char *kind, uint64_t ino, int fd,
				     unsigned ct, int out, int *made_here)
{
	struct comm_ctr *c;
	char path[640], tmp[680];
	int cfd, slot = (int)(ino % COMM_CTR_CACHE);
	int64_t q;

	*made_here = 0;
	if (comm_ctr_cache[slot].ino == ino && comm_ctr_cache[slot].c &&
	    comm_ctr_cache[slot].kind == kind[0])
		return comm_ctr_cache[slot].c;
	if (__atomic_load_n(&comm_ctr_maps, __ATOMIC_RELAXED) >= COMM_CTR_MAPS) {
		if (!__atomic_exchange_n(&comm_ctr_full_said, 1,
					 __ATOMIC_RELAXED))
			ag_warn("offsets of new pipes and UNIX streams off: "
				"%d positions files mapped, the most a "
				"process keeps", COMM_CTR_MAPS);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/chan.%s.%llu", ag_cfg.dir, kind,
		 (unsigned long long)ino);
	c = comm_ctr_map(path);
	if (c)
		goto out;
	/*
	 * Made complete under a name of our own, its blocks allocated (a
	 * full /dev/shm must not show up as SIGBUS later), then linked in
	 * under its name: another process that made it first wins, and
	 * nobody ever maps a file still being made.
	 */
	snprintf(tmp, sizeof(tmp), "%s/chan.tmp.%d.%d", ag_cfg.dir,
		 (int)getpid(), (int)ag_gettid());
	cfd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (cfd < 0)
		return NULL;
	if (!ag_fsize_ok(cfd, 4096) || posix_fallocate(cfd, 0, 4096) != 0) {
		close(cfd);
		unlink(tmp);
		return NULL;
	}
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	close(cfd);
	if (c == MAP_FAILED) {
		unlink(tmp);
		return NULL;
	}
	q = comm_backlog(fd, ct, out);
	/* a backlog nobody can see (a connection not accepted yet) after a
	 * late injection: dated "always", so that the first reader
	 * injected takes R from W and its own queue (comm_join) */
	c->created_ns = q < 0 && comm_since_ns ? 0 : (int64_t)ag_mono_ns();
	c->written = 0;
	c->read = q > 0 ? -q : 0;
	c->magic = COMM_CTR_MAGIC;
	if (link(tmp, path) == 0) {
		unlink(tmp);
		*made_here = 1;
		goto out;
	}
	unlink(tmp);
	munmap(c, 4096);
	c = errno == EEXIST ? comm_ctr_map(path) : NULL;
	if (!c)
		return NULL;
out:
	__atomic_fetch_add(&comm_ctr_maps, 1, __ATOMIC_RELAXED);
	comm_ctr_cache[slot].c = NULL;
	comm_ctr_cache[slot].ino = ino;
	comm_ctr_cache[slot].kind = kind[0];
	comm_ctr_cache[slot].c = c;
	return c;
}

void comm_ctr_forget(void)
{
	memset(comm_ctr_cache, 0, sizeof(comm_ctr_cache));
	comm_ctr_full_said = 0; /* each session's map file says it */
}

/* ---- AF_UNIX streams whose other end is not named (yet, or any more) ---- */

/*
 * sock_diag names a UNIX stream's peer only while both sockets exist:
 *
 *   a client that connected and calls before the server accepted: the
 *   server's socket has no inode yet.  COMM_PEND: the channel is
 *   "C <id> unix - 0 - 0 <ino> 0", its sends count in its own direction's
 *   file; each later call asks again (comm_unix_resolve), and once the
 *   peer is known the C line is written anew, complete (the engine keeps
 *   the last), and the direction flowing in is named.  Meanwhile it is
 *   listed as chan.upend.<pid>.<hash of the listener's name>.<seq> -> its
 *   inode (a symlink), for a server that accepts it after it closed;
 *   resolving it removes the entry.
 *
 *   an end that first looks after its peer closed (its peer's inode is
 *   gone): each end that learns its peer P from the kernel leaves a note
 *   for P's side, chan.upeer.<P> -> its own inode (comm_unix_note); the
 *   end whose peer is gone takes the note, else (its client was never
 *   told it) claims the oldest pending entry of the process SO_PEERCRED
 *   names, on the same listener, whose socket is gone too (comm_unix_claim:
 *   unlinking it is the claim).  No note, no entry: the peer stays unknown
 *   ("orphan": its reads are counted in a file of its own).
 *
 * The engine names the channel of a client that never learned its peer
 * from the accepting end's events (engine/match.c).
 */
static uint32_t comm_upend_seq;

static int comm_unix_link(const char *what, uint64_t key, char *path,
			  size_t n)
{
	return snprintf(path, n, "%s/chan.%s.%llu", ag_cfg.dir, what,
			(unsigned long long)key);
}

/* The inode a symlink of ours names, 0 if none. */
static uint64_t comm_unix_read(const char *path)
{
	char v[24];
	ssize_t r = readlink(path, v, sizeof(v) - 1);

	if (r <= 0)
		return 0;
	v[r] = 0;
	return strtoull(v, NULL, 10);
}

void comm_unix_note(uint64_t own, uint64_t peer)
{
	char path[640], v[24];

	comm_unix_link("upeer", peer, path, sizeof(path));
	snprintf(v, sizeof(v), "%llu", (unsigned long long)own);
	symlink(v, path); /* EEXIST: noted already (another holder) */
}

/* FNV-1a of the listener's name as fd's end sees it (getpeername on the
 * client, getsockname on the accepted socket: the same name). */
static uint32_t comm_unix_lhash(int fd, int peer)
{
	struct sockaddr_un sa;
	socklen_t l = sizeof(sa), i;
	uint32_t h = 2166136261u;

	memset(&sa, 0, sizeof(sa));
	if ((peer ? getpeername(fd, (struct sockaddr *)&sa, &l)
		  : getsockname(fd, (struct sockaddr *)&sa, &l)) < 0)
		return 0;
	for (i = 0; i < l && i < sizeof(sa); i++)
		h = (h ^ ((uint8_t *)&sa)[i]) * 16777619u;
	return h;
}

static int comm_upend_path(char *path, size_t n, int pid, uint32_t lhash,
			   uint32_t seq)
{
	return snprintf(path, n, "%s/chan.upend.%d.%08x.%010u", ag_cfg.dir,
			pid, lhash, seq);
}

/* A pending client lists itself (see above); its seq, or 0. */
uint32_t comm_upend_add(int fd, uint64_t ino)
{
	uint32_t seq = __atomic_add_fetch(&comm_upend_seq, 1, __ATOMIC_RELAXED);
	char path[640], v[24];

	comm_upend_path(path, sizeof(path), (int)getpid(),
			comm_unix_lhash(fd, 1), seq);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)ino);
	return symlink(v, path) == 0 ? seq : 0;
}

static void comm_upend_del(int fd, uint32_t seq)
{
	char path[640];

	if (!seq)
		return;
	comm_upend_path(path, sizeof(path), (int)getpid(),
			comm_unix_lhash(fd, 1), seq);
	unlink(path);
}

/* The client of accepted socket fd, gone before anyone told it its peer:
 * the oldest pending entry of that process on this listener whose socket
 * is gone, claimed; 0 if none. */
static uint64_t comm_unix_claim(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	char pre[64], path[640], best[300];
	union {
		struct linux_dirent64 {
			uint64_t ino;
			int64_t off;
			unsigned short reclen;
			unsigned char type;
			char name[];
		} d;
		char buf[4096];
	} u;
	size_t pl;
	int tries, dfd;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0 || !cr.pid)
		return 0;
	pl = (size_t)snprintf(pre, sizeof(pre), "chan.upend.%d.%08x.",
			      (int)cr.pid, comm_unix_lhash(fd, 0));
	for (tries = 0; tries < 4; tries++) {
		uint64_t c = 0;
		long n;

		best[0] = 0;
		dfd = open(ag_cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return 0;
		while ((n = syscall(SYS_getdents64, dfd, u.buf,
				    sizeof(u.buf))) > 0) {
			long o;

			for (o = 0; o < n;) {
				struct linux_dirent64 *e =
					(struct linux_dirent64 *)(u.buf + o);
				struct comm_udiag ud;
				uint64_t ino;

				o += e->reclen;
				if (strncmp(e->name, pre, pl) ||
				    (best[0] && strcmp(e->name, best) >= 0))
					continue; /* not one, or not older */
				snprintf(path, sizeof(path), "%s/%s",
					 ag_cfg.dir, e->name);
				ino = comm_unix_read(path);
				if (!ino || !comm_unix_diag(ino, &ud))
					continue; /* still open: not this one */
				snprintf(best, sizeof(best), "%s", e->name);
				c = ino;
			}
		}
		close(dfd);
		if (!best[0])
			return 0;
		snprintf(path, sizeof(path), "%s/%s", ag_cfg.dir, best);
		if (unlink(path) == 0)
			return c;
		/* another end claimed it first: look again */
	}
	return 0;
}

/* fd's peer (an AF_UNIX stream of inode ino): its inode, and in *how
 * whether the kernel named it (LIVE) or it is gone (GONE; 0 if unknown);
 * 0 and NONE: not accepted yet. */
uint64_t comm_unix_find(int fd, uint64_t ino, int *how)
{
	struct comm_udiag u;
	uint64_t p;
	char path[640];

	*how = COMM_PEER_NONE;
	if (comm_unix_diag(ino, &u))
		return 0;
	if (u.peer) {
		*how = COMM_PEER_LIVE;
		return u.peer;
	}
	if ((u.shut & 3) != 3)
		return 0; /* connected, not accepted yet */
	*how = COMM_PEER_GONE;
	comm_unix_link("upeer", ino, path, sizeof(path));
	p = comm_unix_read(path);
	return p ? p : comm_unix_claim(fd);
}

/*
 * A pending client (COMM_PEND): its peer, if it can be named now.
 * consumed: bytes a recv just took before the file of the direction
 * flowing in could be made here (its R starts before them).  Any thread
 * may get here; all write the same values.
 */
void comm_unix_resolve(int fd, int64_t consumed)
{
	struct comm_fd *c = &comm_fds[fd];
	struct comm_ctr *in;
	uint64_t peer;
	int made = 0, how;

	if (!(__atomic_load_n(&c->flags, __ATOMIC_ACQUIRE) & COMM_PEND))
		return;
	peer = comm_unix_find(fd, c->ino, &how);
	if (!peer && how == COMM_PEER_NONE)
		return; /* still in the accept queue */
	if (how == COMM_PEER_LIVE)
		comm_unix_note(c->ino, peer);
	comm_upend_del(fd, c->upend);
	c->upend = 0;
	if (peer) {
		comm_lock();
		if (c->chan < comm_nchans && !comm_chans[c->chan].pino) {
			comm_chans[c->chan].pino = peer;
			comm_chan_line(c->chan, &comm_chans[c->chan]);
		}
		comm_unlock();
		c->peer_ino = peer;
		in = comm_ctr_get("unix", peer, fd, CT_USTREAM, 0, &made);
		if (in && made && consumed)
			__atomic_fetch_sub(&in->read, consumed,
					   __ATOMIC_RELAXED);
		c->in = in;
		__atomic_or_fetch(&c->flags, made ? COMM_IN_JOINED : 0,
				  __ATOMIC_RELEASE);
	}
	__atomic_and_fetch(&c->flags, ~COMM_PEND, __ATOMIC_RELEASE);
}

/*
 * Pipes and UNIX streams: the first call of this process in a direction
 * whose positions another process set up before this agent started
 * (attach): calls of ours may have gone unseen, so take the position from
 * the other side's and the backlog (the comment at the top).
 *
 * The other side's count follows its call: between the kernel moving the
 * bytes and the count, the backlog already shows them and the position
 * does not.  Its calls in flight are counted (busy, comm_inflight), so the
 * pair is taken only with none in flight before and after it and the
 * position unchanged: no call can have moved bytes uncounted in between.
 * A call that stays in flight (a writer blocked on a full pipe, a reader
 * on an empty one) is waited for 2 ms, then the pair is taken as it is --
 * exact unless that call moved part of its bytes before blocking.
 */
void comm_join(int fd, unsigned ct, int send)
{
	struct comm_fd *c = &comm_fds[fd];
	uint32_t j = send ? COMM_OUT_JOINED : COMM_IN_JOINED;
	struct comm_ctr *ctr = send ? c->out : c->in;
	volatile int64_t *busy;
	uint64_t until;
	int i;

	if ((c->flags & j) || !ctr)
		return;
	__atomic_or_fetch(&c->flags, j, __ATOMIC_RELAXED);
	if (!comm_since_ns ||
	    (ctr->created_ns >= comm_since_ns && !comm_was_in_flight(fd)))
		return; /* every call of ours since it was made was seen */
	busy = &ctr->busy[!send];
	until = ag_mono_ns() + 2000000;
	for (i = 0; i < 64; i++) {
		int quiet = __atomic_load_n(busy, __ATOMIC_SEQ_CST) <= 0;
		int64_t other = send ? ctr->read : ctr->written;
		int64_t q = comm_backlog(fd, ct, send);

		if (q < 0)
			return;
		if (other != (send ? ctr->read : ctr->written))
			continue; /* the other side moved meanwhile */
		if (!quiet || __atomic_load_n(busy, __ATOMIC_SEQ_CST) > 0) {
			if (ag_mono_ns() < until) {
				sched_yield();
				i--; /* only moves count against the 64 */
				continue;
			}
		}
		if (send)
			__atomic_store_n(&ctr->written, other + q,
					 __ATOMIC_RELAXED);
		else
			__atomic_store_n(&ctr->read, other - q,
					 __ATOMIC_RELAXED);
		return;
	}
}
