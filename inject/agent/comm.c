/*
 * inject/agent/comm.c - communication events: what a traced call sends and
 * receives, named so that the engine (engine/match.c) can pair every recv
 * with the send that holds its first byte, without one byte of the stream
 * changed.
 *
 * Reached from the slow path (slow.c: enter_slow, without the global lock)
 * for the interposed calls of agent.h's IC_COMM_FIRST..IC_COMM_LAST, and
 * from ag_on_exit (hot.c) at their return.  Each send/recv-family call that
 * moved bytes (its RESULT: an error, EAGAIN or end of file makes no event)
 * becomes, in the calling thread's ring (share/record.h):
 *
 *   SEND|RECV  a = fd, b = bytes
 *   ARG        the stream offset of the call's first byte (streams), or
 *              the FNV-1a hash of the datagram (datagrams)
 *   ARG        channel id (low 32 bits) | COMM_F_* flags << 32
 *   ARG        the TSC at the call's entry (a send is dated there)
 *
 * and the channel id names a line of the process's map file, written once
 * per channel (numbers only; engine/ingest.c forms the strings):
 *
 *   C <id> <type> <local addr hex|-> <local port> <peer addr hex|-> <peer port>
 *     <local inode> <peer inode>
 *
 * Offsets, per kind of channel:
 *   TCP     absolute, from the kernel, once per socket (then counted here):
 *           sender  tcpi_bytes_acked + SIOCOUTQ - (1 if the SYN is in
 *                   bytes_acked: the active opener's is, the passive
 *                   opener's is not; told apart by tcpi_bytes_sent -
 *                   tcpi_bytes_retrans + tcpi_notsent_bytes, which never
 *                   counts the SYN);
 *           receiver tcpi_bytes_received - SIOCINQ (- 1 once the peer's
 *                   FIN is in: bytes_received counts it, SIOCINQ does not).
 *           Each pair is read until the ioctl gives the same value on both
 *           sides of the getsockopt (no ACK or segment came in between).
 *           A late attach with bytes in flight therefore still matches.
 *           After a fork both processes may use the socket: from then on
 *           every call asks the kernel again (COMM_SHARED).
 *   pipes and AF_UNIX streams: two positions kept in shared memory, one
 *           small file per channel direction in the session directory
 *           (chan.pipe.<inode of the pipe>, chan.unix.<inode of the
 *           sending socket>: a writer always knows its own), mapped
 *           MAP_SHARED by every traced process that holds either end (fork,
 *           exec, attach): W, the offset of the next byte written, and R,
 *           of the next byte read; W - R is the backlog.  The file is made
 *           at the first call any traced process makes on the channel,
 *           with W = 0 and R = -backlog (FIONREAD; for a UNIX stream's
 *           writer the peer's receive queue from sock_diag, UDIAG_SHOW_RQLEN).
 *           A process injected (attach) after the file was made may have
 *           missed calls of its own: at its first call in a direction it
 *           takes its position from the other side's, R = W - backlog for a
 *           reader, W = R + backlog for a writer (comm_join) -- exact when
 *           the other side's every call was seen and none runs at that
 *           instant (calls in flight are counted in the file and waited
 *           for).  A read or write a thread was inside at injection is
 *           counted by nobody: on its descriptor the process joins even
 *           when the file is younger than the agent.  Under record every process is traced from its start
 *           and nothing is re-derived.  Writers in two processes whose
 *           calls overlap in time may be ordered differently from the
 *           kernel's order.
 *   UDP and AF_UNIX datagrams: no offset; the engine pairs by channel,
 *           length, content hash and order.
 *
 * Pipes and AF_UNIX streams (their positions files, the sockets' peers)
 * are inject/agent/comm-stream.c's, through inject/agent/comm-int.h.
 *
 * Channels: tcp/udp by both addresses (a wildcard local address is
 * replaced by the source address the kernel routes to the peer with);
 * pipes by the pipe's inode; AF_UNIX streams by both sockets' inodes (the
 * peer's from NETLINK_SOCK_DIAG, UDIAG_SHOW_PEER; a connection not
 * accepted yet, or whose other end has closed, is named as the section
 * "AF_UNIX streams whose other end is not named" says); AF_UNIX datagrams
 * by the receiving socket's inode.
 *
 * sendfile is a send on its output descriptor, splice a recv on its input
 * and a send on its output (streams only: they carry no buffer to hash).
 * MSG_PEEK and MSG_OOB receives consume nothing and make no event.  An
 * unconnected UDP socket read with no source address asked for (recv,
 * read, recvfrom(.., NULL, NULL)) is read by recvfrom with the agent's
 * own address buffer, so the datagram's sender is known; what the program
 * receives is the same.
 *
 * Cost: a read/write on a descriptor seen once to be neither a socket nor
 * a pipe stays on the hot path (comm_plain, agent.h: one byte per fd).
 * Descriptors are forgotten when the traced code closes, dup2s, or gets a
 * new one back (open, socket, accept, pipe...).  A descriptor closed and
 * reopened entirely inside untraced code keeps its old kind (documented
 * limit).  errno is kept across everything done here.  When a mapping
 * cannot be made, that channel gets no offsets; the program is never
 * touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "inject/agent/comm-int.h"

#define COMM_HASH 4096

int64_t comm_since_ns;
uint8_t *comm_fdtype;
struct comm_fd *comm_fds;
struct comm_chan *comm_chans;
uint32_t comm_nchans;
static uint32_t comm_hash[COMM_HASH];
static volatile int comm_spin;
/* channels whose peer this process has asked to be traced (propagate.c) */
static uint64_t comm_asked[COMM_CHAN_MAX / 64];

void comm_lock(void)
{
	while (__atomic_exchange_n(&comm_spin, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

void comm_unlock(void)
{
	__atomic_store_n(&comm_spin, 0, __ATOMIC_RELEASE);
}

/*
 * Descriptors a thread was inside a read or write on when the agent was
 * injected: that call moves bytes no count sees, whatever the date of the
 * channel's positions (comm_join).
 */
static int comm_late_fd[16];
static unsigned comm_nlate;

/* the process the descriptor table is of: a vfork child (posix_spawn's,
 * in libc, untraced) shares our memory, not our descriptors */
static pid_t comm_pid;

int comm_own_process(void)
{
	return (pid_t)syscall(SYS_getpid) == comm_pid;
}

void comm_start(int late)
{
	comm_pid = (pid_t)syscall(SYS_getpid);
	comm_since_ns = late ? (int64_t)ag_mono_ns() : 0;
	comm_nlate = 0;
	if (!comm_fdtype) {
		void *p = mmap(NULL, COMM_FD_MAX, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		void *q = mmap(NULL, sizeof(struct comm_fd) * COMM_FD_MAX,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		void *c = mmap(NULL, sizeof(struct comm_chan) * COMM_CHAN_MAX,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);

		if (p == MAP_FAILED || q == MAP_FAILED || c == MAP_FAILED) {
			ag_warn("communication events off: no memory for "
				"the descriptor table");
			return;
		}
		comm_fds = q;
		comm_chans = c;
		__atomic_store_n(&comm_fdtype, p, __ATOMIC_RELEASE);
		return;
	}
	/* a later session: its map file knows none of our channels, and
	 * its directory holds positions files of its own (a pipe's count
	 * kept in the last session's file disagreed with its reader's new
	 * one: comm.sh attach/late-pipe-again) */
	comm_ctr_forget();
	memset(comm_fdtype, CT_UNKNOWN, COMM_FD_MAX);
	memset(comm_asked, 0, sizeof(comm_asked));
	comm_nchans = 0;
	memset(comm_hash, 0, sizeof(comm_hash));
}

/* The communication kind of system call sys made on a descriptor (its
 * first argument), or IC_NONE. */
static uint32_t comm_sys_kind(int64_t sys)
{
	switch (sys) {
	case SYS_read: return IC_READ;
	case SYS_readv: return IC_READV;
	case SYS_recvfrom: return IC_RECVFROM;
	case SYS_recvmsg: return IC_RECVMSG;
	case SYS_recvmmsg: return IC_RECVMMSG;
	case SYS_write: return IC_WRITE;
	case SYS_writev: return IC_WRITEV;
	case SYS_sendto: return IC_SENDTO;
	case SYS_sendmsg: return IC_SENDMSG;
	case SYS_sendmmsg: return IC_SENDMMSG;
	case SYS_sendfile: return IC_SENDFILE;
	case SYS_splice: return IC_SPLICE;
	}
	return IC_NONE;
}

void comm_stopped_in(int64_t sys, const uint64_t *arg)
{
	uint32_t k = comm_sys_kind(sys);
	int64_t fd[2] = { (int64_t)arg[0], k == IC_SPLICE ? (int64_t)arg[2] : -1 };
	int i;

	if (k == IC_NONE)
		return;
	for (i = 0; i < 2; i++)
		if (fd[i] >= 0 && fd[i] < COMM_FD_MAX &&
		    comm_nlate < sizeof(comm_late_fd) / sizeof(comm_late_fd[0]))
			comm_late_fd[comm_nlate++] = (int)fd[i];
}

int comm_was_in_flight(int fd)
{
	unsigned i;

	for (i = 0; i < comm_nlate; i++)
		if (comm_late_fd[i] == fd)
			return 1;
	return 0;
}

static void comm_forget(int64_t fd)
{
	if (fd >= 0 && fd < COMM_FD_MAX && comm_fdtype)
		__atomic_store_n(&comm_fdtype[fd], CT_UNKNOWN, __ATOMIC_RELEASE);
}

/* ---- channels and their C lines ---- */

static const char *const comm_type_name[] = {
	[CT_TCP] = "tcp", [CT_UDP] = "udp", [CT_USTREAM] = "unix",
	[CT_UDGRAM] = "unixd", [CT_PIPE] = "pipe",
};

static void comm_hex(char *out, const uint8_t *a, int n)
{
	static const char hx[] = "0123456789abcdef";
	int i;

	if (!n) {
		strcpy(out, "-");
		return;
	}
	for (i = 0; i < n; i++) {
		out[2 * i] = hx[a[i] >> 4];
		out[2 * i + 1] = hx[a[i] & 15];
	}
	out[2 * n] = 0;
}

void comm_chan_line(uint32_t id, const struct comm_chan *c)
{
	char l[40], p[40];

	comm_hex(l, c->laddr, c->alen);
	comm_hex(p, c->paddr, c->alen);
	map_line("C %u %s %s %u %s %u %llu %llu", id, comm_type_name[c->type],
		 l, c->lport, p, c->pport, (unsigned long long)c->lino,
		 (unsigned long long)c->pino);
}

static uint32_t comm_chan_hash(const struct comm_chan *c)
{
	const uint8_t *p = (const uint8_t *)c;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < offsetof(struct comm_chan, hnext); i++)
		h = (h ^ p[i]) * 16777619u;
	return h % COMM_HASH;
}

/* The id of channel *c (new ones get their C line), or COMM_CHAN_NONE. */
static uint32_t comm_chan_id(struct comm_chan *c)
{
	uint32_t h, i, id = COMM_CHAN_NONE;

	c->hnext = 0;
	h = comm_chan_hash(c);
	comm_lock();
	for (i = comm_hash[h]; i; i = comm_chans[i - 1].hnext)
		if (!memcmp(&comm_chans[i - 1], c,
			    offsetof(struct comm_chan, hnext))) {
			id = i - 1;
			break;
		}
	if (id == COMM_CHAN_NONE && comm_nchans < COMM_CHAN_MAX) {
		id = comm_nchans++;
		c->hnext = comm_hash[h];
		comm_chans[id] = *c;
		comm_hash[h] = id + 1;
		comm_chan_line(id, c);
	}
	comm_unlock();
	return id;
}

void comm_fork_child(void)
{
	uint32_t i;

	comm_pid = (pid_t)syscall(SYS_getpid);
	for (i = 0; comm_chans && i < comm_nchans; i++)
		comm_chan_line(i, &comm_chans[i]);
	comm_spin = 0;
	comm_fork_parent();
}

/* Both processes hold the parent's TCP sockets now: ask the kernel for
 * every offset from here on. */
/*
 * ---- calls made inside untraced libraries ----
 *
 * The agent intercepts communication at the call sites of the modules it
 * traces.  A send or write made inside a system library -- stdio's
 * fwrite, libcurl, libssl, libpq -- has no such call site: the library is
 * not instrumented.  So the entries of the C library's communication
 * functions are hooked too (patch_entry_system): tramp_fentry records a
 * call reaching one from untraced code as that function's call with its
 * event (callback.c ag_on_fentry), and its return through tramp_fret
 * (ag_on_fret, comm_exit).  A call that a traced call site has recorded
 * already passes through (the shadow stack's top frame has its slot).
 * With --libc the C library is traced like any module and needs none.
 */
static unsigned comm_look(int64_t fd);

uint64_t comm_self_lo, comm_self_hi; /* the agent's text: its own calls */

void comm_hook_libc(void)
{
	struct ag_module *m;
	const char *name;
	uint32_t kind;
	size_t k;

	if (!comm_fdtype)
		return;
	for (m = ag_modules; m; m = m->next)
		if (m->self && m->text_hi > m->text_lo) {
			comm_self_lo = m->text_lo;
			comm_self_hi = m->text_hi;
		}
	for (m = ag_modules; m; m = m->next) {
		const char *b = m->path ? strrchr(m->path, '/') : NULL;

		if (m->system && !m->self && b && !strncmp(b, "/libc.so", 8))
			break;
	}
	if (!m)
		return;
	/* every communication function interposed at call sites (slow.c),
	 * but those whose work is at the return: a new descriptor is on a
	 * number the hooked close has freed */
	for (k = 0; (name = intercept_at(k, &kind)); k++)
		if (comm_kind(kind) && kind != IC_FDRET && kind != IC_FDPAIR &&
		    kind != IC_SOCKETPAIR)
			comm_hook_export(m, name, kind);
}

/* Hook the entry of the function system library m exports as name, as
 * an interposed function of that kind (also callback.c: execve). */
void comm_hook_export(struct ag_module *m, const char *name, uint32_t kind)
{
	uint64_t a = module_export(m, name);
	const struct ag_sym *sy = a ? module_sym_at(m, a) : NULL;
	struct ag_func *f;

	if (!sy || sy->frag)
		return;
	f = func_get(a);
	if (!f->intercept) { /* named after another alias */
		f->intercept = kind;
		f->flags |= F_SLOW;
	}
	if (f->intercept == kind)
		patch_entry_system(f);
}

/* close, connect, dup2: the number names another file (or peer) now */
static void hook_forget(uint32_t kind, const struct ag_fregs *r)
{
	if (kind == IC_CLOSE || kind == IC_CONNECT)
		comm_forget((int64_t)r->rdi);
	else if (kind == IC_DUP2)
		comm_forget((int64_t)r->rsi);
}

/* Kinds whose work is at the return, on the descriptor table only: the
 * number names another file (or peer) afterwards. */
static int comm_names_fd(uint32_t k)
{
	return k == IC_CONNECT || k == IC_DUP2 || k == IC_FDRET ||
	       k == IC_FDPAIR || k == IC_SOCKETPAIR;
}

/* At a hooked entry, from untraced code, busy: a call on a channel, to
 * be recorded?  Else only the descriptor table is kept right: stdio's
 * writes to a file, fclose of one, a library's connect or dup2 are none
 * of the trace's business (a traced call site records them as calls). */
int comm_hook_wants(uint32_t kind, const struct ag_fregs *r)
{
	int saved = errno, fd = (int)r->rdi, want;
	unsigned ct;

	if (!comm_own_process()) {
		errno = saved;
		return 0; /* a vfork child's: neither recorded nor counted */
	}
	switch (kind) {
	case IC_CLOSE:
		ct = fd >= 0 && fd < COMM_FD_MAX ? comm_fdtype[fd] : CT_OTHER;
		want = ct != CT_UNKNOWN && ct != CT_OTHER;
		break;
	case IC_SPLICE:
		want = comm_look(fd) != CT_OTHER ||
		       comm_look((int64_t)r->rdx) != CT_OTHER;
		break;
	default:
		want = !comm_names_fd(kind) && comm_look(fd) != CT_OTHER;
		break;
	}
	errno = saved;
	if (!want)
		hook_forget(kind, r);
	return want;
}

void comm_hook_untraced(uint32_t kind, const struct ag_fregs *r)
{
	int saved = errno;

	if (!comm_fdtype || (kind != IC_CLOSE && kind != IC_CONNECT &&
			     kind != IC_DUP2))
		return;
	if (comm_own_process())
		hook_forget(kind, r);
	errno = saved;
}

void comm_fork_parent(void)
{
	int fd;

	for (fd = 0; comm_fdtype && fd < COMM_FD_MAX; fd++)
		if (comm_fdtype[fd] == CT_TCP)
			comm_fds[fd].flags |= COMM_SHARED;
}

/* ---- addresses ---- */

/* sockaddr -> (address bytes, port); 0 or -1 if not IPv4/IPv6. */
static int comm_inaddr(const void *sa, socklen_t len, uint8_t *addr,
		       uint8_t *alen, uint16_t *port)
{
	const struct sockaddr *s = sa;

	if (!sa || len < sizeof(sa_family_t))
		return -1;
	if (s->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = sa;

		memcpy(addr, &in->sin_addr, 4);
		*alen = 4;
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (s->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = sa;

		*port = ntohs(in6->sin6_port);
		/* a dual-stack socket's IPv4 peer (::ffff:a.b.c.d): the other
		 * end, an IPv4 socket, names it a.b.c.d */
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			memcpy(addr, &in6->sin6_addr.s6_addr[12], 4);
			*alen = 4;
			return 0;
		}
		memcpy(addr, &in6->sin6_addr, 16);
		*alen = 16;
		return 0;
	}
	return -1;
}

static int comm_wildcard(const uint8_t *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i])
			return 0;
	return 1;
}

/* The source address the kernel would use toward (paddr, pport). */
static void comm_route_src(uint8_t *laddr, const uint8_t *paddr, int alen,
			   uint16_t pport)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int s;

	memset(&ss, 0, sizeof(ss));
	if (alen == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, paddr, 4);
		in->sin_port = htons(pport ? pport : 9);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, paddr, 16);
		in6->sin6_port = htons(pport ? pport : 9);
	}
	s = socket(alen == 4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	if (connect(s, (struct sockaddr *)&ss,
		    alen == 4 ? sizeof(struct sockaddr_in)
			      : sizeof(struct sockaddr_in6)) == 0 &&
	    getsockname(s, (struct sockaddr *)&ss, &sl) == 0) {
		uint8_t a[16], n;
		uint16_t p;

		if (!comm_inaddr(&ss, sl, a, &n, &p) && n == alen)
			memcpy(laddr, a, alen);
	}
	close(s);
}

/* ---- TCP offsets from the kernel ---- */

static int comm_tcp_info(int fd, struct tcp_info *ti)
{
	socklen_t l = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &l) < 0)
		return -1;
	/* bytes_received: the newest field read here */
	return l >= offsetof(struct tcp_info, tcpi_bytes_retrans) + 4 ? 0 : -1;
}

/* Offset of the next byte this end will send; -1 when unknown. */
static int64_t comm_tcp_send_next(int fd)
{
	struct tcp_info ti;
	int q1, q2, i;

	for (i = 0; i < 8; i++) {
		int64_t a, b;

		if (ioctl(fd, SIOCOUTQ, &q1) < 0 || comm_tcp_info(fd, &ti) ||
		    ioctl(fd, SIOCOUTQ, &q2) < 0)
			return -1;
		if (q1 != q2)
			continue;
		a = (int64_t)ti.tcpi_bytes_acked + q1;
		b = (int64_t)ti.tcpi_bytes_sent - (int64_t)ti.tcpi_bytes_retrans +
		    ti.tcpi_notsent_bytes;
		/* the active opener's bytes_acked counts its SYN */
		return a > b ? a - 1 : a;
	}
	return -1;
}

/* tcpi_state values (include/net/tcp_states.h, not exported) */
enum {
	COMM_TCP_TIME_WAIT = 6,
	COMM_TCP_CLOSE_WAIT = 8,
	COMM_TCP_LAST_ACK = 9,
	COMM_TCP_CLOSING = 11,
};

/* Offset of the next byte this end will read; -1 when unknown. */
static int64_t comm_tcp_recv_next(int fd)
{
	struct tcp_info ti;
	int q1, q2, i;

	for (i = 0; i < 8; i++) {
		int64_t fin;

		if (ioctl(fd, SIOCINQ, &q1) < 0 || comm_tcp_info(fd, &ti) ||
		    ioctl(fd, SIOCINQ, &q2) < 0)
			return -1;
		if (q1 != q2)
			continue;
		/* states after the peer's FIN: bytes_received counts it */
		fin = ti.tcpi_state == COMM_TCP_CLOSE_WAIT ||
		      ti.tcpi_state == COMM_TCP_LAST_ACK ||
		      ti.tcpi_state == COMM_TCP_CLOSING ||
		      ti.tcpi_state == COMM_TCP_TIME_WAIT;
		return (int64_t)ti.tcpi_bytes_received - q1 - fin;
	}
	return -1;
}

/* ---- descriptors ---- */

/* Look at fd once: its kind and, for streams, its channel. */
static unsigned comm_classify(int fd)
{
	struct comm_fd *c = &comm_fds[fd];
	struct sockaddr_storage la, pa;
	socklen_t ll = sizeof(la), pl = sizeof(pa), ol;
	struct comm_chan ch;
	struct stat st;
	int dom = 0, type = 0, proto = 0;
	unsigned ct = CT_OTHER;

	memset(c, 0, sizeof(*c));
	c->chan = COMM_CHAN_NONE;
	memset(&ch, 0, sizeof(ch));
	if (fstat(fd, &st) < 0)
		return CT_UNKNOWN; /* not open: look again next time */
	c->ino = st.st_ino;
	if (S_ISFIFO(st.st_mode)) {
		ct = CT_PIPE;
		ch.type = CT_PIPE;
		ch.lino = ch.pino = st.st_ino;
		c->chan = comm_chan_id(&ch);
		{
			int made;

			/* one direction: this end's (read or write) */
			c->in = c->out = comm_ctr_get("pipe", st.st_ino, fd,
						      CT_PIPE, 0, &made);
			if (made)
				c->flags |= COMM_IN_JOINED | COMM_OUT_JOINED;
		}
		goto done;
	}
	if (!S_ISSOCK(st.st_mode))
		goto done;
	ol = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &ol) < 0)
		goto done;
	ol = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol);
	ol = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &ol);
	if (dom == AF_INET || dom == AF_INET6) {
		if (type == SOCK_STREAM && proto == IPPROTO_TCP)
			ct = CT_TCP;
		else if (type == SOCK_DGRAM && proto == IPPROTO_UDP)
			ct = CT_UDP;
		else
			goto done;
		if (getsockname(fd, (struct sockaddr *)&la, &ll) == 0)
			comm_inaddr(&la, ll, c->laddr, &c->alen, &c->lport);
		if (getpeername(fd, (struct sockaddr *)&pa, &pl) == 0 &&
		    c->alen &&
		    !comm_inaddr(&pa, pl, ch.paddr, &ch.alen, &ch.pport) &&
		    ch.alen == c->alen) {
			ch.type = (uint8_t)ct;
			memcpy(ch.laddr, c->laddr, c->alen);
			ch.lport = c->lport;
			if (comm_wildcard(ch.laddr, ch.alen))
				comm_route_src(ch.laddr, ch.paddr, ch.alen,
					       ch.pport);
			c->chan = comm_chan_id(&ch);
		} else if (ct == CT_TCP) {
			c->flags |= COMM_NOPEER; /* not connected (yet) */
		}
		goto done;
	}
	if (dom == AF_UNIX) {
		ct = type == SOCK_STREAM ? CT_USTREAM : CT_UDGRAM;
		ch.type = (uint8_t)ct;
		if (ct == CT_UDGRAM) {
			struct comm_udiag u;

			/* connected: datagrams go to the peer's inode */
			if (!comm_unix_diag(st.st_ino, &u))
				c->peer_ino = u.peer;
		} else {
			int mi = 0, mo, how;

			if (getpeername(fd, (struct sockaddr *)&pa, &pl) < 0) {
				c->flags |= COMM_NOPEER; /* not connected */
				goto done;
			}
			c->peer_ino = comm_unix_find(fd, st.st_ino, &how);
			if (how == COMM_PEER_LIVE)
				comm_unix_note(st.st_ino, c->peer_ino);
			if (how == COMM_PEER_NONE) {
				c->flags |= COMM_PEND;
				c->upend = comm_upend_add(fd, st.st_ino);
			}
			ch.lino = st.st_ino;
			ch.pino = c->peer_ino;
			c->chan = comm_chan_id(&ch);
			/* each direction's file is named by its sending
			 * socket: a writer always knows its own */
			if (c->peer_ino)
				c->in = comm_ctr_get("unix", c->peer_ino, fd,
						     CT_USTREAM, 0, &mi);
			else if (how == COMM_PEER_GONE)
				c->in = comm_ctr_get("orphan", st.st_ino, fd,
						     CT_USTREAM, 0, &mi);
			c->out = comm_ctr_get("unix", st.st_ino, fd,
					      CT_USTREAM, 1, &mo);
			c->flags |= (mi ? COMM_IN_JOINED : 0) |
				    (mo ? COMM_OUT_JOINED : 0);
		}
		goto done;
	}
done:
	__atomic_store_n(&comm_fdtype[fd], (uint8_t)ct, __ATOMIC_RELEASE);
	return ct;
}

/* A datagram's channel: this socket and the other address. */
static uint32_t comm_dgram_chan(int fd, unsigned ct, const void *sa,
				socklen_t salen, int recv)
{
	struct comm_fd *c = &comm_fds[fd];
	struct comm_chan ch;

	memset(&ch, 0, sizeof(ch));
	ch.type = (uint8_t)ct;
	if (ct == CT_UDGRAM) {
		/* named by the receiving socket */
		ch.lino = ch.pino = recv ? c->ino : c->peer_ino;
		if (!ch.lino)
			return COMM_CHAN_NONE;
		return comm_chan_id(&ch);
	}
	if (!sa)
		return c->chan;
	if (comm_inaddr(sa, salen, ch.paddr, &ch.alen, &ch.pport))
		return COMM_CHAN_NONE;
	/* the same peer as last time: no lookup, no route query */
	comm_lock();
	if (c->last_alen && c->last_alen == ch.alen &&
	    c->last_pport == ch.pport &&
	    !memcmp(c->last_paddr, ch.paddr, ch.alen)) {
		uint32_t id = c->last_chan;

		comm_unlock();
		return id;
	}
	comm_unlock();
	if (!c->alen || !c->lport) { /* bound by the first send: look again */
		struct sockaddr_storage la;
		socklen_t ll = sizeof(la);

		if (getsockname(fd, (struct sockaddr *)&la, &ll) == 0)
			comm_inaddr(&la, ll, c->laddr, &c->alen, &c->lport);
	}
	if (c->alen == 16 && ch.alen == 4 && comm_wildcard(c->laddr, 16)) {
		memset(ch.laddr, 0, 4); /* [::] meets an IPv4 peer */
	} else if (c->alen != ch.alen) {
		return COMM_CHAN_NONE;
	} else {
		memcpy(ch.laddr, c->laddr, ch.alen);
	}
	ch.lport = c->lport;
	if (comm_wildcard(ch.laddr, ch.alen))
		comm_route_src(ch.laddr, ch.paddr, ch.alen, ch.pport);
	{
		uint32_t id = comm_chan_id(&ch);

		comm_lock();
		c->last_alen = ch.alen;
		c->last_pport = ch.pport;
		memcpy(c->last_paddr, ch.paddr, ch.alen);
		c->last_chan = id;
		comm_unlock();
		return id;
	}
}

/* ---- entry and exit ---- */

static int comm_is_send(uint32_t k)
{
	return k >= IC_SEND && k <= IC_WRITEV;
}

static int comm_is_recv(uint32_t k)
{
	return k >= IC_RECV && k <= IC_RECVFROM_CHK;
}

/* flags argument of a send/recv-family call, 0 for read/write */
static uint64_t comm_call_flags(const struct comm_pend *p)
{
	switch (p->kind) {
	case IC_SEND:
	case IC_SENDTO:
	case IC_RECV:
	case IC_RECVFROM:
		return p->a[3];
	case IC_SENDMSG:
	case IC_RECVMSG:
		return p->a[2];
	case IC_SENDMMSG:
	case IC_RECVMMSG:
		return p->a[3];
	case IC_RECV_CHK:
	case IC_RECVFROM_CHK:
		return p->a[4];
	}
	return 0;
}

/* fd's kind, looked at if new; CT_OTHER for no events. */
static unsigned comm_look(int64_t fd)
{
	unsigned ct;

	if (fd < 0 || fd >= COMM_FD_MAX)
		return CT_OTHER;
	ct = __atomic_load_n(&comm_fdtype[fd], __ATOMIC_ACQUIRE);
	if (ct == CT_UNKNOWN)
		ct = comm_classify((int)fd);
	if (ct == CT_UNKNOWN)
		return CT_OTHER;
	if (comm_fds[fd].flags & COMM_PEND)
		comm_unix_resolve((int)fd, 0);
	if (ct != CT_OTHER && (comm_fds[fd].flags & COMM_NOPEER)) {
		/* connected since (or accepted under it): again */
		ct = comm_classify((int)fd);
		if (ct == CT_UNKNOWN || (comm_fds[fd].flags & COMM_NOPEER))
			return CT_OTHER;
	}
	return ct;
}

/* TCP: the offset of the next byte in that direction, from the kernel,
 * once (or every time, for a socket shared with another process); pipes
 * and UNIX streams: comm_join. */
static void comm_learn(int fd, unsigned ct, int send)
{
	struct comm_fd *c = &comm_fds[fd];
	uint32_t ok = send ? COMM_SEND_OK : COMM_RECV_OK;
	int64_t n;

	if (ct == CT_PIPE || ct == CT_USTREAM)
		comm_join(fd, ct, send);
	if (ct != CT_TCP || ((c->flags & ok) && !(c->flags & COMM_SHARED)))
		return;
	n = send ? comm_tcp_send_next(fd) : comm_tcp_recv_next(fd);
	if (n < 0)
		return;
	__atomic_store_n(send ? &c->send_next : &c->recv_next, n,
			 __ATOMIC_RELAXED);
	__atomic_or_fetch(&c->flags, ok, __ATOMIC_RELAXED);
}

/*
 * --follow: the first send of this process on a channel asks that its
 * peer be traced (propagate.c), before the bytes leave.  k and a are the
 * call's kind and arguments (a datagram's channel is its destination's).
 */
/* The channel's first send asks the tracer for its peer: the TSC when
 * that began if the send was held for the answer, else 0. */
static uint64_t comm_propagate(int fd, unsigned ct, uint32_t k,
			       const uint64_t *a)
{
	struct comm_fd *c = &comm_fds[fd];
	uint32_t id = c->chan;
	const struct comm_chan *ch;
	char l[40], p[40], line[200];
	uint64_t bit, held;

	if (ct == CT_UDP || ct == CT_UDGRAM) {
		const void *sa = NULL;
		socklen_t salen = 0;

		if (k == IC_SENDTO && a[4]) {
			sa = (const void *)a[4];
			salen = (socklen_t)a[5];
		} else if (k == IC_SENDMSG && a[1]) {
			const struct msghdr *m = (const void *)a[1];

			sa = m->msg_name;
			salen = m->msg_namelen;
		}
		if (ct == CT_UDP && !c->lport) {
			/* not bound before its first send: ask at the next
			 * (a channel named now would have port 0) */
			struct sockaddr_storage la;
			socklen_t ll = sizeof(la);

			if (getsockname(fd, (struct sockaddr *)&la, &ll) == 0)
				comm_inaddr(&la, ll, c->laddr, &c->alen,
					    &c->lport);
			if (!c->lport)
				return 0;
		}
		id = comm_dgram_chan(fd, ct, sa, salen, 0);
	}
	if (id == COMM_CHAN_NONE || id >= comm_nchans)
		return 0;
	bit = 1ull << (id % 64);
	if ((__atomic_load_n(&comm_asked[id / 64], __ATOMIC_RELAXED) & bit) ||
	    (__atomic_fetch_or(&comm_asked[id / 64], bit, __ATOMIC_RELAXED) & bit))
		return 0; /* asked already (a plain load first: no write per send) */
	ch = &comm_chans[id];
	comm_hex(l, ch->laddr, ch->alen);
	comm_hex(p, ch->paddr, ch->alen);
	snprintf(line, sizeof(line), "%s %s %u %s %u %llu %llu\n",
		 comm_type_name[ch->type], l, ch->lport, p, ch->pport,
		 (unsigned long long)ch->lino, (unsigned long long)ch->pino);
	held = propel_rdtsc();
	if (!propagate_ask(id, line))
		held = 0;
	/*
	 * Pipes and UNIX streams: the reader was injected just now, after
	 * the positions file was made; its first read would take its
	 * position from ours and the backlog (comm_join), racing with the
	 * count of this very send (made at its exit).  Nothing has been
	 * written on it yet as far as the count knows (W = 0) and this
	 * thread is the writer about to write: R = -backlog now is exact,
	 * and the file is dated now, after the reader's injection, so the
	 * reader takes it as it is.
	 */
	if ((ct == CT_PIPE || ct == CT_USTREAM) && c->out &&
	    __atomic_load_n(&c->out->written, __ATOMIC_RELAXED) == 0) {
		int64_t q = comm_backlog(fd, ct, 1);

		/* not accepted yet: no queue to ask, but under record every
		 * byte written on it was seen, so there is none */
		if (q < 0 && (c->flags & COMM_PEND) && !comm_since_ns)
			q = 0;
		if (q >= 0) {
			__atomic_store_n(&c->out->read, -q, __ATOMIC_RELAXED);
			__atomic_store_n(&c->out->created_ns,
					 (int64_t)ag_mono_ns(), __ATOMIC_RELEASE);
		}
	}
	return held;
}

/*
 * Pipes and UNIX streams: p's call on fd is in flight in that direction
 * (its bytes may move before it is counted) until comm_pend_done; a
 * process joining the channel waits for none (comm_join).
 */
static void comm_inflight(struct comm_pend *p, int fd, unsigned ct, int send)
{
	struct comm_ctr *ctr;

	if ((ct != CT_PIPE && ct != CT_USTREAM) || fd < 0 || fd >= COMM_FD_MAX)
		return;
	ctr = send ? comm_fds[fd].out : comm_fds[fd].in;
	if (!ctr)
		return;
	__atomic_fetch_add(&ctr->busy[send], 1, __ATOMIC_SEQ_CST);
	p->inflight[send] = ctr;
}

static void comm_pend_done(struct comm_pend *p)
{
	int d;

	for (d = 0; d < 2; d++)
		if (p->inflight[d]) {
			__atomic_fetch_sub(&p->inflight[d]->busy[d], 1,
					   __ATOMIC_SEQ_CST);
			p->inflight[d] = NULL;
		}
}

void comm_pend_drop(struct athread *t, uint32_t n)
{
	while (t->ncomm > n)
		comm_pend_done(&t->comm[--t->ncomm]);
}

static int comm_stream(unsigned ct)
{
	return ct == CT_TCP || ct == CT_PIPE || ct == CT_USTREAM;
}

int comm_enter(struct athread *t, struct ag_frame *fr, struct ag_func *f,
	       uint64_t slot)
{
	uint32_t k = f->intercept;
	int fd = (int)fr->rdi, saved = errno;
	unsigned ct = CT_UNKNOWN, ct2 = CT_OTHER;
	struct comm_pend *p;

	if (!comm_fdtype || !t)
		return 0;
	/* calls whose frames are gone (longjmp out of a blocking recv) */
	while (t->ncomm && t->comm[t->ncomm - 1].slot <= slot)
		comm_pend_drop(t, t->ncomm - 1);
	if (!comm_names_fd(k)) /* (their work is at the return) */
		switch (k) {
		case IC_CLOSE:
			/* a client not accepted yet: a last look (its entry stays
			 * for the server if it still is not) */
			if (fd >= 0 && fd < COMM_FD_MAX &&
			    comm_fdtype[fd] == CT_USTREAM &&
			    (comm_fds[fd].flags & COMM_PEND))
				comm_unix_resolve(fd, 0);
			comm_forget(fd);
			break;
		case IC_SPLICE: /* bytes out of fd (a recv), into rdx (a send) */
			ct = comm_look(fd);
			ct2 = comm_look((int64_t)fr->rdx);
			errno = saved;
			if (!comm_stream(ct))
				ct = CT_OTHER;
			if (!comm_stream(ct2))
				ct2 = CT_OTHER;
			if (ct == CT_OTHER && ct2 == CT_OTHER)
				return 0;
			break;
		default:
			ct = comm_look(fd);
			errno = saved;
			if (ct == CT_OTHER || (k == IC_SENDFILE && !comm_stream(ct)))
				return 0;
			break;
		}
	if (t->ncomm >= sizeof(t->comm) / sizeof(t->comm[0]))
		return 0;
	p = &t->comm[t->ncomm];
	memset(p, 0, offsetof(struct comm_pend, addr));
	p->slot = slot;
	p->kind = k;
	p->fd = fd;
	p->fd2 = (int32_t)fr->rdx;
	p->off = -1;
	p->held = 0;
	p->a[0] = fr->rdi;
	p->a[1] = fr->rsi;
	p->a[2] = fr->rdx;
	p->a[3] = fr->rcx;
	p->a[4] = fr->r8;
	p->a[5] = fr->r9;
	if (k == IC_RECVFROM_CHK)
		p->stk = ((uint64_t *)slot)[1];
	if (k == IC_SPLICE) {
		if (ct != CT_OTHER)
			comm_learn(fd, ct, 0);
		if (ct2 != CT_OTHER)
			comm_learn(p->fd2, ct2, 1);
		comm_inflight(p, fd, ct, 0);
		comm_inflight(p, p->fd2, ct2, 1);
		if (ct2 != CT_OTHER && (ag_cfg.flags & PROPEL_START_FOLLOW))
			p->held = comm_propagate(p->fd2, ct2, k, p->a);
		errno = saved;
	} else if (comm_is_send(k) || comm_is_recv(k) || k == IC_SENDFILE) {
		struct comm_fd *c = &comm_fds[fd];
		uint64_t fl = comm_call_flags(p);

		if (comm_is_recv(k) && (fl & (MSG_PEEK | MSG_OOB)))
			return 0; /* consumes nothing */
		comm_learn(fd, ct, !comm_is_recv(k));
		comm_inflight(p, fd, ct, !comm_is_recv(k));
		if (!comm_is_recv(k) && (ag_cfg.flags & PROPEL_START_FOLLOW))
			p->held = comm_propagate(fd, ct, k, p->a);
		/* an unconnected UDP socket read with no address asked for:
		 * ask for it on the program's behalf (recvfrom receives
		 * exactly what recv or read would have); not at a hooked
		 * entry (no site), where the callee is already running */
		if (ct == CT_UDP && c->chan == COMM_CHAN_NONE && fr->site &&
		    (k == IC_RECV || k == IC_READ ||
		     (k == IC_RECVFROM && !fr->r8))) {
			p->addr_len = sizeof(p->addr);
			if (k == IC_READ)
				fr->rcx = 0; /* flags */
			fr->r8 = (uint64_t)p->addr;
			fr->r9 = (uint64_t)&p->addr_len;
			fr->target = (uint64_t)recvfrom;
			p->subst = 1;
		}
		errno = saved;
	}
	p->ct = (uint8_t)ct;
	p->ct2 = (uint8_t)ct2;
	p->tsc = propel_rdtsc();
	t->ncomm++;
	return 1;
}

/* FNV-1a over the first n bytes of an iovec list. */
static uint64_t comm_hash_iov(const struct iovec *iov, size_t cnt, uint64_t n)
{
	uint64_t h = 14695981039346656037ull;
	size_t i, j;

	if (n > 65536)
		n = 65536;
	for (i = 0; i < cnt && n; i++) {
		const uint8_t *b = iov[i].iov_base;
		size_t m = iov[i].iov_len < n ? iov[i].iov_len : n;

		for (j = 0; b && j < m; j++)
			h = (h ^ b[j]) * 1099511628211ull;
		n -= m;
	}
	return h;
}

/* One event for n bytes moved by p's call. */
static void comm_emit_fd(struct athread *t, struct comm_pend *p, int fd,
			 unsigned ct, int send, uint64_t n,
			 const struct iovec *iov, size_t cnt, const void *sa,
			 socklen_t salen)
{
	struct comm_fd *c = &comm_fds[fd];
	uint64_t arg = 0, fl = 0;
	uint32_t chan = c->chan;
	struct comm_ctr *ctr;

	switch (ct) {
	case CT_TCP:
		if (c->flags & (send ? COMM_SEND_OK : COMM_RECV_OK)) {
			arg = (uint64_t)__atomic_fetch_add(
				send ? &c->send_next : &c->recv_next,
				(int64_t)n, __ATOMIC_RELAXED);
			fl = COMM_F_OFFSET;
		}
		break;
	case CT_PIPE:
	case CT_USTREAM:
		if (!send && !c->in && (c->flags & COMM_PEND))
			comm_unix_resolve(fd, (int64_t)n); /* accepted since */
		ctr = send ? c->out : c->in;
		if (ctr) {
			arg = (uint64_t)__atomic_fetch_add(
				send ? &ctr->written : &ctr->read, (int64_t)n,
				__ATOMIC_RELAXED);
			fl = COMM_F_OFFSET;
		}
		break;
	case CT_UDP:
	case CT_UDGRAM:
		if (!iov)
			return; /* sendfile to a datagram socket: no identity */
		arg = comm_hash_iov(iov, cnt, n);
		fl = COMM_F_DGRAM;
		chan = comm_dgram_chan(fd, ct, sa, salen, !send);
		break;
	default:
		return;
	}
	if (send && p->held)
		fl |= COMM_F_HELD;
	rec_put(t, send ? PROPEL_REC_SEND : PROPEL_REC_RECV, (uint32_t)fd,
		n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
	rec_put64(t, arg);
	rec_put64(t, (uint64_t)chan | fl << 32);
	rec_put64(t, send ? p->tsc : 0);
	if (fl & COMM_F_HELD)
		rec_put64(t, p->held);
}

static void comm_emit(struct athread *t, struct comm_pend *p, uint64_t n,
		      const struct iovec *iov, size_t cnt, const void *sa,
		      socklen_t salen)
{
	comm_emit_fd(t, p, p->fd, p->ct, p->kind == IC_SENDFILE ||
			 comm_is_send(p->kind), n, iov, cnt, sa, salen);
}

static void comm_exit_io(struct athread *t, struct comm_pend *p, int64_t r)
{
	struct iovec one = { (void *)p->a[1], (size_t)r };
	const void *sa = NULL;
	socklen_t salen = 0;

	if (r <= 0)
		return; /* an error, EAGAIN, end of file: nothing moved */
	switch (p->kind) {
	case IC_SENDFILE:
		comm_emit(t, p, (uint64_t)r, NULL, 0, NULL, 0);
		return;
	case IC_SPLICE:
		if (p->ct != CT_OTHER)
			comm_emit_fd(t, p, p->fd, p->ct, 0, (uint64_t)r, NULL,
				     0, NULL, 0);
		if (p->ct2 != CT_OTHER && p->fd2 >= 0 && p->fd2 < COMM_FD_MAX)
			comm_emit_fd(t, p, p->fd2, p->ct2, 1, (uint64_t)r,
				     NULL, 0, NULL, 0);
		return;
	case IC_SENDTO:
		sa = (const void *)p->a[4];
		salen = (socklen_t)p->a[5];
		break;
	case IC_RECVFROM:
	case IC_RECV:
	case IC_READ:
		if (p->subst) {
			sa = p->addr;
			salen = p->addr_len;
		} else if (p->kind == IC_RECVFROM && p->a[4] && p->a[5]) {
			sa = (const void *)p->a[4];
			salen = *(socklen_t *)p->a[5];
		}
		break;
	case IC_RECVFROM_CHK:
		if (p->a[5] && p->stk) {
			sa = (const void *)p->a[5];
			salen = *(socklen_t *)p->stk;
		}
		break;
	case IC_WRITEV:
	case IC_READV:
		comm_emit(t, p, (uint64_t)r, (const struct iovec *)p->a[1],
			  (size_t)p->a[2], NULL, 0);
		return;
	case IC_SENDMSG:
	case IC_RECVMSG: {
		const struct msghdr *m = (const struct msghdr *)p->a[1];

		comm_emit(t, p, (uint64_t)r, m->msg_iov, m->msg_iovlen,
			  m->msg_name, m->msg_name ? m->msg_namelen : 0);
		return;
	}
	case IC_SENDMMSG:
	case IC_RECVMMSG: {
		const struct mmsghdr *v = (const struct mmsghdr *)p->a[1];
		int64_t i;

		for (i = 0; i < r; i++) {
			const struct msghdr *m = &v[i].msg_hdr;

			if (v[i].msg_len)
				comm_emit(t, p, v[i].msg_len, m->msg_iov,
					  m->msg_iovlen, m->msg_name,
					  m->msg_name ? m->msg_namelen : 0);
		}
		return;
	}
	}
	comm_emit(t, p, (uint64_t)r, &one, 1, sa, salen);
}

/*
 * A read or write a thread was inside at injection (system call sys with
 * arguments arg, the syscall's order): the kind to record it as when it
 * returns (callback.c adopts it), or IC_NONE -- not a call on a channel,
 * nothing the agent could name at its return (splice, an unconnected
 * datagram socket read with no address asked for), or one that consumes
 * nothing (MSG_PEEK).
 */
uint32_t comm_adoptable(int64_t sys, const uint64_t *arg)
{
	uint32_t k = comm_sys_kind(sys);
	int64_t fd = (int64_t)arg[0];
	int saved = errno;
	unsigned ct;

	if (!comm_fdtype || k == IC_NONE || k == IC_SPLICE || fd < 0 ||
	    fd >= COMM_FD_MAX)
		return IC_NONE;
	ct = comm_look(fd);
	errno = saved;
	if (ct == CT_OTHER || ct == CT_UNKNOWN ||
	    (k == IC_SENDFILE && !comm_stream(ct)))
		return IC_NONE;
	if ((k == IC_RECVFROM || k == IC_RECVMSG) && (arg[3] & (MSG_PEEK | MSG_OOB)))
		return IC_NONE;
	if (ct == CT_UDP && comm_fds[fd].chan == COMM_CHAN_NONE &&
	    (k == IC_READ || k == IC_READV || (k == IC_RECVFROM && !arg[4])))
		return IC_NONE;
	return k;
}

/*
 * That call returned *rax: its event.  Its offset is learned now, after
 * its bytes moved: the position is asked afresh (the kernel's for TCP, the
 * other side's and the backlog for pipes and UNIX streams) and the call's
 * bytes are taken off it before they are counted again.
 */
void comm_adopted(struct athread *t, uint32_t kind, const uint64_t *arg,
		  uint64_t *rax)
{
	int64_t r = (int64_t)*rax;
	int fd = (int)arg[0], send = comm_is_send(kind) || kind == IC_SENDFILE;
	int saved = errno;
	struct comm_pend p;
	struct comm_fd *c;
	unsigned ct;

	if (!comm_fdtype || r <= 0 || fd < 0 || fd >= COMM_FD_MAX)
		return;
	ct = comm_look(fd);
	if (ct == CT_OTHER || ct == CT_UNKNOWN)
		goto out;
	c = &comm_fds[fd];
	memset(&p, 0, offsetof(struct comm_pend, addr));
	p.kind = kind;
	p.fd = fd;
	p.fd2 = -1;
	p.off = -1;
	memcpy(p.a, arg, sizeof(p.a));
	p.ct = (uint8_t)ct;
	p.ct2 = CT_OTHER;
	p.tsc = propel_rdtsc();
	if (kind != IC_RECVMMSG && kind != IC_SENDMMSG && comm_stream(ct)) {
		/* (a batch of datagrams has no stream offset) */
		__atomic_and_fetch(&c->flags,
				   ~(send ? COMM_SEND_OK | COMM_OUT_JOINED
					  : COMM_RECV_OK | COMM_IN_JOINED),
				   __ATOMIC_RELAXED);
		comm_learn(fd, ct, send);
		if (ct == CT_TCP && (c->flags & (send ? COMM_SEND_OK
						      : COMM_RECV_OK)))
			__atomic_fetch_sub(send ? &c->send_next : &c->recv_next,
					   r, __ATOMIC_RELAXED);
		else if (ct != CT_TCP && (send ? c->out : c->in))
			__atomic_fetch_sub(send ? &c->out->written
						: &c->in->read, r,
					   __ATOMIC_RELAXED);
	}
	comm_exit_io(t, &p, r);
out:
	errno = saved;
}

void comm_exit(struct athread *t, uint64_t slot, uint64_t *rax)
{
	int64_t r = (int64_t)*rax;
	int saved = errno;
	struct comm_pend *p;
	uint32_t i = t->ncomm;

	while (i > 0 && t->comm[i - 1].slot != slot)
		i--;
	if (!i)
		return;
	comm_pend_drop(t, i); /* frames gone (longjmp) */
	p = &t->comm[i - 1];
	t->ncomm = i - 1;
	switch (p->kind) {
	case IC_CLOSE:
		comm_forget(p->fd);
		break;
	case IC_CONNECT:
		if (r == 0 || saved == EINPROGRESS)
			comm_forget(p->fd);
		break;
	case IC_DUP2:
	case IC_FDRET:
		if (r >= 0)
			comm_forget(r);
		break;
	case IC_FDPAIR:
	case IC_SOCKETPAIR:
		if (r == 0) {
			const int *v = (const int *)(p->kind == IC_FDPAIR
							     ? p->a[0]
							     : p->a[3]);

			comm_forget(v[0]);
			comm_forget(v[1]);
		}
		break;
	default:
		comm_exit_io(t, p, r);
		comm_pend_done(p); /* counted */
		break;
	}
	errno = saved;
}
