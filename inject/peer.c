/*
 * inject/peer.c - the process behind a peer address (see inject/peer.h).
 *
 * Sockets are found with NETLINK_SOCK_DIAG (inet_diag: a TCP peer by its
 * addresses, else the listeners; every UDP socket of this network
 * namespace with its addresses and inode), then
 * the inode among /proc/PID/fd links ("socket:[N]", "pipe:[N]"), from a
 * scan of /proc kept while it is current (peer_holders).  It runs once per
 * new channel, never on a traced program's path.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject/peer.h"
#include "share/clock.h"
#include "share/log.h"
#include "share/proc.h"

#define PR_DOMAIN "peer"

#define PEER_TCP_LISTEN 10 /* TCP_LISTEN in the kernel's enum */

static int peer_unhex(const char *s, uint8_t *out, int *alen)
{
	size_t n = strlen(s), i;

	if (!strcmp(s, "-")) {
		*alen = 0;
		return 0;
	}
	if (n != 8 && n != 32)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	*alen = (int)n / 2;
	return 0;
}

int peer_parse(const char *line, struct peer_addr *a)
{
	char l[40], p[40];
	unsigned lp, pp;
	unsigned long long li, pi;
	int la, pa;

	memset(a, 0, sizeof(*a));
	if (sscanf(line, "%7s %39s %u %39s %u %llu %llu", a->kind, l, &lp, p,
		   &pp, &li, &pi) != 7)
		return -EINVAL;
	if (peer_unhex(l, a->laddr, &la) || peer_unhex(p, a->paddr, &pa) ||
	    (la && pa && la != pa))
		return -EINVAL;
	a->alen = pa ? pa : la;
	a->lport = (uint16_t)lp;
	a->pport = (uint16_t)pp;
	a->lino = li;
	a->pino = pi;
	return 0;
}

static void peer_ntop(const uint8_t *addr, int alen, char *buf, size_t size)
{
	if (!inet_ntop(alen == 4 ? AF_INET : AF_INET6, addr, buf,
		       (socklen_t)size))
		snprintf(buf, size, "?");
}

void peer_host(const struct peer_addr *a, char *buf, size_t size)
{
	if (!a->alen) {
		buf[0] = 0;
		return;
	}
	peer_ntop(a->paddr, a->alen, buf, size);
}

void peer_name(const struct peer_addr *a, char *buf, size_t size)
{
	char h[64];

	if (!a->alen && !a->pino && !strcmp(a->kind, "unix")) {
		snprintf(buf, size, "unix:? (not accepted yet)");
		return;
	}
	if (!a->alen) {
		snprintf(buf, size, "%s:%llu", a->kind,
			 (unsigned long long)a->pino);
		return;
	}
	peer_ntop(a->paddr, a->alen, h, sizeof(h));
	snprintf(buf, size, a->alen == 16 ? "[%s]:%u" : "%s:%u", h, a->pport);
}

int peer_is_local(const struct peer_addr *a)
{
	struct ifaddrs *ifs, *i;
	int found = 0;

	if (!a->alen)
		return 1;
	if ((a->alen == 4 && a->paddr[0] == 127) ||
	    (a->alen == 16 && !memcmp(a->paddr, &in6addr_loopback, 16)))
		return 1;
	if (getifaddrs(&ifs) < 0)
		return 0;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (a->alen == 4 && i->ifa_addr->sa_family == AF_INET)
			found = !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr,
					a->paddr, 4);
		else if (a->alen == 16 && i->ifa_addr->sa_family == AF_INET6)
			found = !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
					a->paddr, 16);
	}
	freeifaddrs(ifs);
	return found;
}

void peer_local_addrs(char *buf, size_t size)
{
	struct ifaddrs *ifs, *i;
	size_t n = 0;

	buf[0] = 0;
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		char h[64];
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : 0;

		if (fam == AF_INET)
			inet_ntop(fam, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				  h, sizeof(h));
		else if (fam == AF_INET6)
			inet_ntop(fam, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				  h, sizeof(h));
		else
			continue;
		if (n + strlen(h) + 2 >= size)
			break;
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", h);
	}
	freeifaddrs(ifs);
	if (!n)
		snprintf(buf, size, "-");
}

/* A number field ("Uid:", "Seccomp:") of /proc/PID/status, or -errno. */
static long peer_status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl)) {
			v = strtol(line + kl, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

long peer_owner(pid_t pid)
{
	return peer_status_field(pid, "Uid:");
}

int peer_sandboxed(pid_t pid)
{
	/* SECCOMP_MODE_FILTER installed by the program itself, which needs
	 * no_new_privs (sshd's pre-authentication child, browsers); a
	 * container's filter alone is not a sandbox of the program's */
	return peer_status_field(pid, "Seccomp:") == 2 &&
	       peer_status_field(pid, "NoNewPrivs:") == 1;
}

/* ---- sockets by address (inet_diag) ---- */

struct peer_sock {
	uint64_t ino;
	int listen;
};

static int peer_addr_eq(const uint32_t *diag, int fam, const uint8_t *a,
			int alen)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					    0xff, 0xff };

	if (fam == AF_INET)
		return alen == 4 && !memcmp(diag, a, 4);
	if (alen == 16)
		return !memcmp(diag, a, 16);
	/* an IPv4 peer of a dual-stack socket: ::ffff:a.b.c.d */
	return !memcmp(diag, mapped, 12) && !memcmp((uint8_t *)diag + 12, a, 4);
}

static int peer_wild(const uint32_t *diag, int fam)
{
	return fam == AF_INET ? diag[0] == 0
			      : !diag[0] && !diag[1] && !diag[2] && !diag[3];
}

/*
 * One NETLINK_SOCK_DIAG request: req (len bytes) sent, each answer given
 * to each(h, arg).  A dump (NLM_F_DUMP) reads to its end; a lookup of one
 * socket reads its one answer, and its error (-ENOENT: no such socket) is
 * returned.  0 or -errno.
 */
unsigned long peer_diag_records;

static int peer_dump(void *req, size_t len,
		     void (*each)(const struct nlmsghdr *h, void *arg),
		     void *arg)
{
	int one = !(((struct nlmsghdr *)req)->nlmsg_flags & NLM_F_DUMP);
	union {
		char b[16384];
		struct nlmsghdr h; /* aligned */
	} u;
	int fd, done = 0, err = 0;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (send(fd, req, len, 0) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!done) {
		ssize_t n = recv(fd, u.b, sizeof(u.b), 0);
		struct nlmsghdr *h;

		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		for (h = &u.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE ||
			    h->nlmsg_type == NLMSG_ERROR) {
				if (one && h->nlmsg_type == NLMSG_ERROR)
					err = ((const struct nlmsgerr *)
						       NLMSG_DATA(h))->error;
				done = 1;
				break;
			}
			peer_diag_records++;
			each(h, arg);
		}
		done |= one;
	}
	close(fd);
	return err;
}

struct peer_inet_find {
	int fam, proto;
	const struct peer_addr *a;
	uint64_t *ino;
};

static void peer_inet_each(const struct nlmsghdr *h, void *arg)
{
	const struct peer_inet_find *q = arg;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	const struct peer_addr *a = q->a;
	int fam = q->fam, level;

	if (ntohs(m->id.idiag_sport) != a->pport || !m->idiag_inode)
		return;
	if (peer_addr_eq(m->id.idiag_src, fam, a->paddr, a->alen) &&
	    ntohs(m->id.idiag_dport) == a->lport &&
	    peer_addr_eq(m->id.idiag_dst, fam, a->laddr, a->alen))
		level = 2;
	else if ((q->proto == IPPROTO_TCP ? m->idiag_state == PEER_TCP_LISTEN
					  : peer_wild(m->id.idiag_dst, fam)) &&
		 (peer_wild(m->id.idiag_src, fam) ||
		  peer_addr_eq(m->id.idiag_src, fam, a->paddr, a->alen)))
		level = 1;
	else
		return;
	q->ino[level - 1] = m->idiag_inode;
}

/*
 * Dump the sockets of family fam and protocol proto in states (a bit per
 * state): ino[1] the exact connected socket of a's peer end, ino[0] a
 * listener or bound socket on the peer's port (left alone when not found).
 */
static int peer_diag(int fam, int proto, uint32_t states,
		     const struct peer_addr *a, uint64_t ino[2])
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	struct peer_inet_find q = { fam, proto, a, ino };

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = (uint8_t)fam;
	req.r.sdiag_protocol = (uint8_t)proto;
	req.r.idiag_states = states;
	return peer_dump(&req, sizeof(req), peer_inet_each, &q);
}

/* a lookup's answer: the socket's inode, by its state */
static void peer_exact_each(const struct nlmsghdr *h, void *arg)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	uint64_t *ino = arg;

	if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
	    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*m)) && m->idiag_inode)
		ino[m->idiag_state == PEER_TCP_LISTEN ? 0 : 1] = m->idiag_inode;
}

/*
 * The peer end of TCP channel a by its four addresses, one lookup in the
 * kernel's hash (inet_diag without NLM_F_DUMP) instead of a dump of every
 * socket: on a host whose clients churn (thousands of connections, most
 * in TIME_WAIT) each dump took ~200 ms of propeld's CPU, and nginx under
 * wrk waited that long for each of its 8 connections' first answers.
 * fam AF_INET (a's IPv4 addresses), or AF_INET6 (a's IPv6 ones, or the
 * IPv4 ones mapped: a dual-stack socket).  A connected socket's inode
 * goes to ino[1]; the kernel answers with the listener when no
 * connection matches (ino[0]); a socket with no inode (TIME_WAIT)
 * counts as none.  0 (found or not) or -errno.
 */
static int peer_tcp_exact(int fam, const struct peer_addr *a, uint64_t ino[2])
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	uint8_t *src = (uint8_t *)req.r.id.idiag_src;
	uint8_t *dst = (uint8_t *)req.r.id.idiag_dst;
	int err;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (uint8_t)fam;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* the peer's socket: its own end first */
	req.r.id.idiag_sport = htons(a->pport);
	req.r.id.idiag_dport = htons(a->lport);
	if (fam == AF_INET || a->alen == 16) {
		memcpy(src, a->paddr, (size_t)a->alen);
		memcpy(dst, a->laddr, (size_t)a->alen);
	} else {
		src[10] = src[11] = dst[10] = dst[11] = 0xff;
		memcpy(src + 12, a->paddr, 4);
		memcpy(dst + 12, a->laddr, 4);
	}
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	err = peer_dump(&req, sizeof(req), peer_exact_each, ino);
	return err == -ENOENT ? 0 : err;
}

struct peer_unix_find {
	uint64_t client, listener;
};

static void peer_unix_each(const struct nlmsghdr *h, void *arg)
{
	struct peer_unix_find *q = arg;
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));

	for (; !q->listener && RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		const uint32_t *v = RTA_DATA(a);
		size_t i;

		if (a->rta_type != UNIX_DIAG_ICONS)
			continue;
		for (i = 0; i < (size_t)RTA_PAYLOAD(a) / 4; i++)
			if (v[i] == q->client)
				q->listener = m->udiag_ino;
	}
}

/* One unix_diag dump of the AF_UNIX sockets in states (a bit per state),
 * with what show asks for, each answer given to each(h, arg). */
static int peer_unix_dump(uint32_t states, uint32_t show,
			  void (*each)(const struct nlmsghdr *h, void *arg),
			  void *arg)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req r;
	} req;

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = AF_UNIX;
	req.r.udiag_states = states;
	req.r.udiag_show = show;
	return peer_dump(&req, sizeof(req), each, arg);
}

/*
 * The listening AF_UNIX socket whose accept queue holds a connection from
 * the socket of inode client (unix_diag UNIX_DIAG_ICONS: the inodes of the
 * connecting ends): its inode, 0 if none, or -errno.
 */
static int64_t peer_unix_listener(uint64_t client)
{
	struct peer_unix_find q = { client, 0 };
	int err = peer_unix_dump(1u << PEER_TCP_LISTEN, UDIAG_SHOW_ICONS,
				 peer_unix_each, &q);

	return q.listener ? (int64_t)q.listener : err;
}

struct peer_unix_seek {
	uint64_t ino;
	int found;
};

static void peer_unix_seek_each(const struct nlmsghdr *h, void *arg)
{
	struct peer_unix_seek *q = arg;
	const struct unix_diag_msg *m = NLMSG_DATA(h);

	if (m->udiag_ino == q->ino)
		q->found = 1;
}

/* 1 if an AF_UNIX socket of inode ino exists in this network namespace,
 * 0 if none does (every holder closed it), or -errno. */
static int peer_unix_exists(uint64_t ino)
{
	struct peer_unix_seek q = { ino, 0 };
	int err = peer_unix_dump(~0u, 0, peer_unix_seek_each, &q);

	return q.found ? 1 : err ? err : 0;
}

/* 1 if what sock_diag shows here is what pid's sockets are: pid lives in
 * this process's network namespace, or has ended (its conversation is
 * over: judged from here); 0 if it lives in another, or pid is 0. */
static int peer_netns_here(pid_t pid)
{
	struct stat a, b;
	char path[64];

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &a) < 0)
		return errno == ENOENT || errno == ESRCH;
	return stat("/proc/self/ns/net", &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* A peer that no process holds because its end is closed (a socketpair's
 * far end whose process exited, a connection closed and no listener on
 * its port): nothing to follow, and no failure -- said as such. */
static int peer_closed(const char *name, char **cause)
{
	return propel_cause(cause, -EPIPE, "%s: its peer closed its end "
				   "before propel looked: nothing to follow",
			    name);
}

/* ---- inodes to processes ---- */

/* 1 if fd of pid is open for reading (O_RDONLY or O_RDWR, from
 * /proc/PID/fdinfo/FD's octal flags). */
static int peer_fd_reads(pid_t pid, const char *fd)
{
	char path[300], buf[256], *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, fd);
	if (propel_read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	f = strstr(buf, "flags:");
	return f && (strtoul(f + 6, NULL, 8) & O_ACCMODE) != O_WRONLY;
}

/*
 * Every socket and pipe link of every process, from the last scan of
 * /proc (the scan costs a readlink per descriptor of every process: 1 ms
 * on an idle machine, tens on a busy server, once per channel asked).  A
 * later request for an inode the scan saw is answered from it while no
 * process has come or gone since (the /proc listing, one getdents, is the
 * same) and every holder it names still holds the inode (a readlink each);
 * anything else scans again.
 */
struct peer_link {
	uint64_t ino;
	pid_t pid;
	int fd;
	char kind; /* 's' socket, 'p' pipe */
};

static struct {
	struct peer_link *v;
	size_t n, cap;
	pid_t *pids; /* the /proc listing at the scan */
	size_t npids;
	uint64_t at_ms;
	int valid;
} pc;

#define PEER_CACHE_MS 2000

/* The processes of /proc, in its order; -errno. */
static int peer_pids(pid_t **out, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t cap = 0;
	pid_t *v = NULL;

	*n = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0)
			continue;
		if (*n == cap) {
			pid_t *nv = realloc(v, (cap = cap ? 2 * cap : 256) *
						       sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[(*n)++] = pid;
	}
	closedir(d);
	*out = v;
	return 0;
}

static void peer_link_add(pid_t pid, int fd, const char *link)
{
	char kind = !strncmp(link, "socket:[", 8) ? 's'
		    : !strncmp(link, "pipe:[", 6) ? 'p'
						    : 0;

	if (!kind)
		return;
	if (pc.n == pc.cap) {
		size_t cap = pc.cap ? 2 * pc.cap : 1024;
		struct peer_link *nv = realloc(pc.v, cap * sizeof(*nv));

		if (!nv) {
			pc.valid = 0;
			return;
		}
		pc.v = nv;
		pc.cap = cap;
	}
	pc.v[pc.n].ino = strtoull(strchr(link, '[') + 1, NULL, 10);
	pc.v[pc.n].pid = pid;
	pc.v[pc.n].fd = fd;
	pc.v[pc.n].kind = kind;
	pc.n++;
}

/* Scan every process's descriptors into pc. */
static int peer_scan(void)
{
	char path[300], link[64];
	struct dirent *f;
	int err;

	free(pc.pids);
	pc.pids = NULL;
	pc.n = 0;
	pc.valid = 0;
	err = peer_pids(&pc.pids, &pc.npids);
	if (err)
		return err;
	pc.valid = 1;
	pc.at_ms = propel_mono_ms();
	for (size_t i = 0; i < pc.npids; i++) {
		DIR *fd;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pc.pids[i]);
		fd = opendir(path);
		if (!fd)
			continue;
		while ((f = readdir(fd))) {
			ssize_t l;

			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fd/%s",
				 (int)pc.pids[i], f->d_name);
			l = readlink(path, link, sizeof(link) - 1);
			if (l <= 0)
				continue;
			link[l] = 0;
			peer_link_add(pc.pids[i], atoi(f->d_name), link);
		}
		closedir(fd);
	}
	return 0;
}

/* Is the scan still the processes' state as far as what:[ino] goes?
 * (Its holders are checked by the caller.) */
static int peer_scan_current(void)
{
	pid_t *now;
	size_t n;
	int same;

	if (!pc.valid || propel_mono_ms() - pc.at_ms > PEER_CACHE_MS ||
	    peer_pids(&now, &n))
		return 0;
	same = n == pc.npids && !memcmp(now, pc.pids, n * sizeof(*now));
	free(now);
	return same;
}

/* The processes (but except) holding what:[ino] as the scan saw them; with
 * readers, only those holding it open for reading (a pipe's far end from a
 * writer).  -ESTALE when a holder the scan saw no longer holds it, or the
 * scan saw none. */
static int peer_holders_scanned(const char *want, char kind, uint64_t ino,
				pid_t except, int readers, pid_t *pids, int max)
{
	char path[300], link[64], fdname[16];
	int n = 0, seen = 0;

	for (size_t i = 0; i < pc.n; i++) {
		const struct peer_link *k = &pc.v[i];
		ssize_t l;

		if (k->ino != ino || k->kind != kind)
			continue;
		seen++;
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)k->pid, k->fd);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			return -ESTALE;
		link[l] = 0;
		if (strcmp(link, want))
			return -ESTALE;
		if (k->pid == except || n >= max)
			continue;
		snprintf(fdname, sizeof(fdname), "%d", k->fd);
		if (readers && !peer_fd_reads(k->pid, fdname))
			continue;
		if (n && pids[n - 1] == k->pid)
			continue; /* its next descriptor on the same inode */
		pids[n++] = k->pid;
	}
	return seen ? n : -ESTALE;
}

/* The processes (but except) holding what:[ino] (see above). */
static int peer_holders(const char *what, uint64_t ino, pid_t except,
			int readers, pid_t *pids, int max)
{
	char want[64], kind = what[0];
	int n, err;

	snprintf(want, sizeof(want), "%s:[%llu]", what, (unsigned long long)ino);
	if (peer_scan_current()) {
		n = peer_holders_scanned(want, kind, ino, except, readers, pids,
					 max);
		if (n >= 0)
			return n;
	}
	err = peer_scan();
	if (err)
		return err;
	n = peer_holders_scanned(want, kind, ino, except, readers, pids, max);
	return n == -ESTALE ? 0 : n;
}

int peer_find(const struct peer_addr *a, pid_t except, pid_t *pids, int max,
	      char **cause)
{
	uint64_t ino[2] = { 0, 0 };
	uint32_t states = ~0u;
	int err = 0, proto, n = 0;
	char name[96];

	peer_name(a, name, sizeof(name));
	if (!strcmp(a->kind, "pipe"))
		return peer_holders("pipe", a->pino, except, 1, pids, max);
	if (!strcmp(a->kind, "unix") && !a->pino && a->lino) {
		/* connected, not accepted yet: whoever holds the listener */
		int64_t l = peer_unix_listener(a->lino);

		if (l < 0)
			return propel_cause(cause, (int)l, "sock_diag: %s",
					    strerror((int)-l));
		if (l)
			return peer_holders("socket", (uint64_t)l, except, 0,
					    pids, max);
		/* in no listener's queue, and no peer: the far end (or the
		 * listener, with the connection queued) closed */
		if (peer_netns_here(except)) {
			snprintf(name, sizeof(name), "unix:%llu",
				 (unsigned long long)a->lino);
			return peer_closed(name, cause);
		}
		return 0;
	}
	if (!strcmp(a->kind, "unix") || !strcmp(a->kind, "unixd")) {
		if (!a->pino)
			return 0;
		n = peer_holders("socket", a->pino, except, 0, pids, max);
		/* (seen from the asker's network namespace only: another's
		 * sockets are not in this one's sock_diag) */
		if (n == 0 && peer_netns_here(except) &&
		    peer_unix_exists(a->pino) == 0)
			return peer_closed(name, cause);
		return n;
	}
	if (!strcmp(a->kind, "tcp"))
		proto = IPPROTO_TCP;
	else if (!strcmp(a->kind, "udp"))
		proto = IPPROTO_UDP;
	else
		return propel_cause(cause, -EINVAL, "%s: unknown kind", name);
	/* TCP: the connected socket by one lookup (an IPv4 one: then as a
	 * dual-stack socket's), then only the listeners (the connection
	 * still waits in the accept queue: the listener's holder takes it);
	 * a lookup refused (an old kernel): every socket, as for UDP */
	if (proto == IPPROTO_TCP) {
		err = peer_tcp_exact(a->alen == 4 ? AF_INET : AF_INET6, a, ino);
		if (!err && !ino[1] && a->alen == 4)
			err = peer_tcp_exact(AF_INET6, a, ino);
		if (!err && ino[1])
			n = peer_holders("socket", ino[1], except, 0, pids, max);
		if (!err)
			states = 1u << PEER_TCP_LISTEN;
		err = 0;
	}
	if (n == 0 && !ino[0]) {
		err = peer_diag(AF_INET6, proto, states, a, ino);
		if (a->alen == 4 && !err)
			err = peer_diag(AF_INET, proto, states, a, ino);
	}
	if (err)
		return propel_cause(cause, err, "sock_diag: %s", strerror(-err));
	/* the connected socket; if no process holds it yet (it waits in
	 * the accept queue), the listener's */
	if (n == 0 && ino[1] && states == ~0u)
		n = peer_holders("socket", ino[1], except, 0, pids, max);
	if (n == 0 && ino[0])
		n = peer_holders("socket", ino[0], except, 0, pids, max);
	if (proto == IPPROTO_TCP && !ino[0] && !ino[1] && peer_netns_here(except))
		return peer_closed(name, cause);
	pr_dbg("%s: sockets %llu %llu, %d process(es)", name,
	       (unsigned long long)ino[1], (unsigned long long)ino[0], n);
	return n;
}
