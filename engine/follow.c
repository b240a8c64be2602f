/*
 * engine/follow.c - the --follow coordinator (see engine/follow.h).
 *
 * Hosts, each a struct fhost around a transport:
 *
 *   (none) --fl_host_open (this host: transport_open, waiting)--> UP
 *   (none) --fl_host_start (another: transport_start)--> CONNECTING
 *   CONNECTING --its line readable, or its deadline (fl_host_step:
 *       transport_step, never waiting: ssh's login and the clock exchange
 *       go on while every other host is served)--> UP (the requests
 *       queued for it go out), or FAILED (fl_host_fail: reported in one
 *       line, its queued requests refused, not tried again)
 *   UP --end of stream from it (fl_lost)--> LOST: reported in one line;
 *       its agents switch themselves off within the lease (propeld's
 *       keeper, which holds it, ends with propeld); their rings are read
 *       from the host's directory when we end
 *   UP --follow_end: STOP, FILE/DATA..., END (fl_collect)--> DONE
 *
 * A propagation request that crosses hosts: host A's propeld sends PEER
 * (id, channel); fl_peer finds the host whose addresses hold the peer's
 * address, or starts one by ssh to that address (a host that could not be
 * reached is not tried again), sends it FOLLOW (our id) once it is up, and
 * on its RESULT answers A with PEER_DONE (the agent's send goes on; it
 * waits PROPEL_PROPAGATE_MS at most, a login takes longer: the peer is
 * then traced a little late).  Ids of our own requests are unique across
 * hosts.
 *
 * --vitals (follow_set_vitals): a host up on another kernel is sent VITALS
 * (fl_host_up); at STOP its directory holds the collectors' file
 * (engine/vitals-host.h), which follow_end moves beside the session for
 * the caller to merge.
 *
 * Clocks: each host's CLOCK_MONOTONIC plus the offset measured while it
 * is reached (engine/transport.h); stored per host in the session meta as
 * "clock.<host>" = "offset_ns=N err_ns=E method=same-kernel|exchange".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/follow.h"
#include "engine/transport.h"
#include "engine/vitals-host.h"
#include "inject/peer-stdio.h"
#include "inject/peer.h"
#include "share/agent-abi.h"
#include "share/log.h"
#include "share/wire.h"

#define PR_DOMAIN "follow"

#define FL_MAX_HOSTS 64
#define FL_MAX_FWD 1024
#define FL_MAX_RESULTS 256
#define FL_FRAME (WIRE_MAX + 16)

enum { FH_CONNECTING, FH_UP, FH_LOST, FH_DONE, FH_FAILED };

struct fhost {
	struct transport *t;
	int state;
	char dir[600]; /* where its files land here */
	char clock[128];
	char asked[96]; /* CONNECTING: the peer it is reached for */
	int this_kernel; /* UP: its processes are this kernel's (fl_host_up) */
};

struct fl_fwd { /* a FOLLOW for a host's PEER (queued while to connects) */
	unsigned id, origin_id;
	int origin, to, sent;
	char peer[96];
	char line[200];
};

struct fl_result {
	unsigned id;
	int err;
	char text[256];
};

struct follow {
	uint32_t flags;
	int vitals; /* follow_set_vitals: 1, or 2 with all */
	struct fhost h[FL_MAX_HOSTS];
	int nh;
	char failed[FL_MAX_HOSTS][64]; /* addresses that could not be reached */
	int nfailed;
	struct fl_fwd fwd[FL_MAX_FWD];
	int nfwd;
	struct fl_result res[FL_MAX_RESULTS];
	int nres;
	unsigned next_id;
	int injected;
	char *buf;
};

static void fl_lost(struct follow *f, int i);

/* One pid namespace: the host's propeld (its HELLO's pid) is a process
 * here, named propeld, in this process's pid namespace. */
static int fl_same_pidns(const struct transport *t)
{
	char a[64], b[64], path[64], comm[32] = "";
	ssize_t na, nb;
	FILE *fp;

	if (t->remote_pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", t->remote_pid);
	if (!(fp = fopen(path, "re")))
		return 0;
	if (!fgets(comm, sizeof(comm), fp))
		comm[0] = 0;
	fclose(fp);
	if (strcmp(comm, "propeld\n"))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", t->remote_pid);
	na = readlink("/proc/self/ns/pid", a, sizeof(a) - 1);
	nb = readlink(path, b, sizeof(b) - 1);
	return na > 0 && na == nb && !memcmp(a, b, (size_t)na);
}

/* Host i's line is up: its clock noted, the requests queued for it sent. */
static void fl_host_up(struct follow *f, int i)
{
	struct fhost *h = &f->h[i];

	snprintf(h->clock, sizeof(h->clock), "offset_ns=%lld err_ns=%lld "
		 "method=%s", (long long)h->t->offset_ns,
		 (long long)h->t->err_ns,
		 h->t->same_clock && h->t->err_ns == 0 ? "same-kernel"
						       : "exchange");
	h->state = FH_UP;
	/* this host, or one on its kernel and pid namespace whose directory
	 * can be read here (a network namespace) */
	h->this_kernel = i == 0 || (h->t->same_clock && fl_same_pidns(h->t) &&
				    access(h->t->dir, R_OK | X_OK) == 0);
	pr_dbg("host %s (%s): %s", h->t->host, h->t->name, h->clock);
	if (f->vitals && !h->this_kernel &&
	    wire_sendf(h->t->to, WIRE_VITALS, "%s",
		       f->vitals == 2 ? "all" : "traced") < 0) {
		fl_lost(f, i);
		return;
	}
	for (int k = 0; k < f->nfwd; k++) {
		struct fl_fwd *w = &f->fwd[k];

		if (w->to != i || w->sent)
			continue;
		if (wire_sendf(h->t->to, WIRE_FOLLOW, "%u %s", w->id,
			       w->line) < 0) {
			fl_lost(f, i);
			return;
		}
		w->sent = 1;
	}
}

/* This host, waiting until it answers: its index, or -errno. */
static int fl_host_open(struct follow *f, char **cause)
{
	int err;

	if (f->nh == FL_MAX_HOSTS)
		return propel_cause(cause, -ENOSPC, "too many hosts");
	memset(&f->h[f->nh], 0, sizeof(f->h[0]));
	err = transport_open(NULL, f->flags, &f->h[f->nh].t, cause);
	if (err)
		return err;
	fl_host_up(f, f->nh);
	return f->nh++;
}

/* Start reaching another host (for peer): its index, or -errno. */
static int fl_host_start(struct follow *f, const char *addr, const char *peer,
			 char **cause)
{
	struct fhost *h;
	int err;

	if (f->nh == FL_MAX_HOSTS)
		return propel_cause(cause, -ENOSPC, "too many hosts");
	h = &f->h[f->nh];
	memset(h, 0, sizeof(*h));
	err = transport_start(addr, f->flags, &h->t, cause);
	if (err)
		return err;
	h->state = FH_CONNECTING;
	snprintf(h->asked, sizeof(h->asked), "%s", peer);
	return f->nh++;
}

static void fl_refuse(struct follow *f, int origin, unsigned id, int err)
{
	if (f->h[origin].state == FH_UP)
		wire_sendf(f->h[origin].t->to, WIRE_PEER_DONE, "%u %d", id,
			   err);
}

static void fl_unreachable(struct follow *f, const char *peer,
			   const char *addr, const char *why)
{
	propel_reportf("follow", "%s: cannot reach host %s: %s; tracing goes on "
		       "elsewhere", peer, addr, why);
	if (f->nfailed < FL_MAX_HOSTS)
		snprintf(f->failed[f->nfailed++], 64, "%.63s", addr);
}

/* Host i could not be reached: said in one line, its queued requests
 * refused, its ssh killed. */
static void fl_host_fail(struct follow *f, int i, const char *why)
{
	struct fhost *h = &f->h[i];

	fl_unreachable(f, h->asked, h->t->name, why ? why : "?");
	h->state = FH_FAILED;
	transport_kill(h->t);
	for (int k = 0; k < f->nfwd;) {
		struct fl_fwd *w = &f->fwd[k];

		if (w->to != i) {
			k++;
			continue;
		}
		fl_refuse(f, w->origin, w->origin_id, -EHOSTUNREACH);
		*w = f->fwd[--f->nfwd];
	}
}

/* One step of a host being reached (readable: its line has something). */
static void fl_host_step(struct follow *f, int i, int readable)
{
	char *cause = NULL;
	int r = transport_step(f->h[i].t, readable, &cause);

	if (r > 0)
		fl_host_up(f, i);
	else if (r < 0)
		fl_host_fail(f, i, cause);
	free(cause);
}

int follow_begin(uint32_t flags, struct follow **out, char **cause)
{
	struct follow *f = calloc(1, sizeof(*f));
	int err;

	*out = NULL;
	if (!f || !(f->buf = malloc(FL_FRAME))) {
		free(f);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	f->flags = flags | PROPEL_START_FOLLOW;
	err = fl_host_open(f, cause);
	if (err < 0) {
		free(f->buf);
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

int follow_own_stdio(struct follow *f, char **cause)
{
	struct peer_stdio st;

	peer_stdio_self(&st);
	return peer_stdio_write(follow_local_dir(f), &st, cause);
}

const char *follow_local_dir(const struct follow *f)
{
	return f->h[0].t->dir;
}

void follow_set_vitals(struct follow *f, int all)
{
	f->vitals = all ? 2 : 1;
}

void follow_each_host(const struct follow *f,
		      void (*fn)(void *arg, const char *host, const char *dir,
				 int this_kernel),
		      void *arg)
{
	for (int i = 0; i < f->nh; i++)
		if (f->h[i].state == FH_UP)
			fn(arg, f->h[i].t->host, f->h[i].t->dir,
			   f->h[i].this_kernel);
}

static void fl_lost(struct follow *f, int i)
{
	struct fhost *h = &f->h[i];

	if (h->state != FH_UP)
		return;
	h->state = FH_LOST;
	propel_reportf("follow", "host %s lost: its propeld ended; its agents "
		       "switch themselves off within %d ms (rings in %s on %s)",
		       h->t->host, PROPEL_LEASE_MS, h->t->dir, h->t->host);
}

static int fl_host_of(struct follow *f, const char *addr)
{
	for (int i = 0; i < f->nh; i++)
		if (transport_has_addr(f->h[i].t, addr) ||
		    !strcmp(f->h[i].t->name, addr))
			return i;
	return -1;
}

/* A host's agent asked for a peer that is not on that host. */
static void fl_peer(struct follow *f, int from, const char *payload)
{
	struct peer_addr a;
	struct fl_fwd *w;
	unsigned id;
	int n = 0, to, i;
	char addr[64], name[96], *cause = NULL;

	if (sscanf(payload, "%u %n", &id, &n) != 1 || !n ||
	    peer_parse(payload + n, &a))
		return;
	peer_host(&a, addr, sizeof(addr));
	peer_name(&a, name, sizeof(name));
	to = fl_host_of(f, addr);
	for (i = 0; to < 0 && i < f->nfailed; i++)
		if (!strcmp(f->failed[i], addr))
			goto refuse;
	if (to < 0) {
		to = fl_host_start(f, addr, name, &cause);
		if (to < 0) {
			fl_unreachable(f, name, addr, cause ? cause : "?");
			free(cause);
			goto refuse;
		}
	}
	if (to == from || f->nfwd == FL_MAX_FWD ||
	    (f->h[to].state != FH_UP && f->h[to].state != FH_CONNECTING))
		goto refuse;
	w = &f->fwd[f->nfwd++];
	memset(w, 0, sizeof(*w));
	w->id = ++f->next_id;
	w->origin = from;
	w->origin_id = id;
	w->to = to;
	snprintf(w->peer, sizeof(w->peer), "%s", name);
	snprintf(w->line, sizeof(w->line), "%s", payload + n);
	if (f->h[to].state == FH_UP) {
		if (wire_sendf(f->h[to].t->to, WIRE_FOLLOW, "%u %s", w->id,
			       w->line) < 0) {
			f->nfwd--;
			fl_lost(f, to);
			goto refuse;
		}
		w->sent = 1;
	}
	return;
refuse:
	fl_refuse(f, from, id, -EHOSTUNREACH);
}

static void fl_result(struct follow *f, int from, const char *payload)
{
	struct fl_result *r;
	unsigned id;
	int err = 0, pid = 0, n = 0, i;

	if (sscanf(payload, "%u %d %d %n", &id, &err, &pid, &n) < 3)
		return;
	for (i = 0; i < f->nfwd; i++) {
		struct fl_fwd *w = &f->fwd[i];

		if (w->id != id)
			continue;
		fl_refuse(f, w->origin, w->origin_id, err);
		*w = f->fwd[--f->nfwd];
		return; /* what happened there came as a NOTE */
	}
	if (f->nres == FL_MAX_RESULTS)
		memmove(f->res, f->res + 1, sizeof(f->res[0]) * --f->nres);
	r = &f->res[f->nres++];
	r->id = id;
	r->err = err;
	snprintf(r->text, sizeof(r->text), "%s", payload + n);
	(void)from;
}

/* One frame from host i (readable). */
static void fl_frame(struct follow *f, int i)
{
	struct fhost *h = &f->h[i];
	int type = 0, n;

	n = wire_recv(h->t->from, &type, f->buf, FL_FRAME, 10000);
	if (n < 0) {
		fl_lost(f, i);
		return;
	}
	switch (type) {
	case WIRE_NOTE:
		if (!strncmp(f->buf, "traced pid", 10))
			f->injected++;
		propel_report(h->t->host, 0, f->buf);
		break;
	case WIRE_PEER:
		fl_peer(f, i, f->buf);
		break;
	case WIRE_RESULT:
		fl_result(f, i, f->buf);
		break;
	default:
		pr_dbg("%s: unexpected %s", h->t->host, wire_type_name(type));
		break;
	}
}

int follow_poll(struct follow *f, int ms)
{
	struct pollfd p[FL_MAX_HOSTS];
	int map[FL_MAX_HOSTS], np = 0, i, up = 0;

	for (i = 0; i < f->nh; i++)
		if (f->h[i].state == FH_UP || f->h[i].state == FH_CONNECTING) {
			p[np].fd = f->h[i].t->from;
			p[np].events = POLLIN;
			p[np].revents = 0;
			map[np++] = i;
		}
	if (np && poll(p, (nfds_t)np, ms) < 0)
		np = 0;
	else if (!np && ms > 0)
		usleep((useconds_t)ms * 1000);
	for (i = 0; i < np; i++) {
		if (f->h[map[i]].state == FH_CONNECTING)
			fl_host_step(f, map[i], p[i].revents != 0);
		else if (p[i].revents && f->h[map[i]].state == FH_UP)
			fl_frame(f, map[i]);
	}
	for (i = 0; i < f->nh; i++)
		up += f->h[i].state == FH_UP || f->h[i].state == FH_CONNECTING;
	return up;
}

int follow_attach(struct follow *f, pid_t pid, char **cause)
{
	unsigned id = ++f->next_id;
	struct timespec t0, t1;
	int i;

	if (f->h[0].state != FH_UP)
		return propel_cause(cause, -EPIPE, "this host's propeld is gone");
	if (wire_sendf(f->h[0].t->to, WIRE_ATTACH, "%u %d", id, (int)pid) < 0)
		return propel_cause(cause, -EPIPE, "this host's propeld is gone");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (i = 0; i < f->nres; i++)
			if (f->res[i].id == id) {
				int err = f->res[i].err;

				if (err)
					propel_cause(cause, err, "%s",
						     f->res[i].text);
				else
					f->injected++;
				f->res[i] = f->res[--f->nres];
				return err;
			}
		if (!follow_poll(f, 100) || f->h[0].state != FH_UP)
			return propel_cause(cause, -EPIPE,
					    "this host's propeld is gone");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 60)
			return propel_cause(cause, -ETIMEDOUT, "no answer");
	}
}

void follow_counts(const struct follow *f, int *processes, int *hosts)
{
	int n = 0;

	for (int i = 0; i < f->nh; i++)
		n += f->h[i].state != FH_CONNECTING &&
		     f->h[i].state != FH_FAILED;
	if (processes)
		*processes = f->injected;
	if (hosts)
		*hosts = n;
}

/* STOP host i and write what it streams into h->dir. */
static int fl_collect(struct follow *f, int i, const char *top)
{
	struct fhost *h = &f->h[i];
	int type = 0, n, fd = -1, err = 0;
	long long left = 0;

	snprintf(h->dir, sizeof(h->dir), "%s/%d-%s", top, i, h->t->host);
	if (mkdir(h->dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (wire_send(h->t->to, WIRE_STOP, NULL, 0) < 0)
		return -EPIPE;
	for (;;) {
		n = wire_recv(h->t->from, &type, f->buf, FL_FRAME, 120000);
		if (n < 0) {
			err = n;
			break;
		}
		if (type == WIRE_FILE) {
			char name[256], path[900];

			if (fd >= 0)
				close(fd);
			fd = -1;
			if (sscanf(f->buf, "%lld %255s", &left, name) != 2 ||
			    strchr(name, '/'))
				continue;
			snprintf(path, sizeof(path), "%s/%s", h->dir, name);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				  0600);
		} else if (type == WIRE_DATA) {
			if (fd >= 0 && write(fd, f->buf, (size_t)n) != n)
				err = -EIO;
		} else if (type == WIRE_NOTE) {
			propel_report(h->t->host, 0, f->buf);
		} else if (type == WIRE_END) {
			break;
		} else if (type == WIRE_PEER) {
			unsigned id;

			if (sscanf(f->buf, "%u", &id) == 1)
				wire_sendf(h->t->to, WIRE_PEER_DONE, "%u %d",
					   id, -ECANCELED);
		}
	}
	if (fd >= 0)
		close(fd);
	h->state = err ? FH_LOST : FH_DONE;
	return err;
}

/* Copy file from to a new file to (another file system: the session's
 * directory is on /dev/shm); 0 or -1 with errno. */
static int fl_copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, e = 0;
	ssize_t n = 0;

	if (in >= 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (in < 0 || out < 0 || n < 0)
		e = errno ? errno : EIO;
	if (out >= 0 && close(out) < 0 && !e)
		e = errno;
	if (in >= 0)
		close(in);
	if (e) {
		unlink(to);
		errno = e;
		return -1;
	}
	return 0;
}

/* The vital signs host i streamed (a host on another kernel), moved
 * beside the session for the caller (follow_end). */
static void fl_vitals(struct follow *f, int i, const char *db,
		      struct follow_vitals *vit, size_t *nvit)
{
	struct fhost *h = &f->h[i];
	struct follow_vitals *v = &vit[*nvit];
	char from[700];

	snprintf(from, sizeof(from), "%s/%s", h->dir, VITALS_HOST_FILE);
	if (access(from, F_OK))
		return;
	snprintf(v->path, sizeof(v->path), "%s.host%d.vitals", db, i);
	snprintf(v->host, sizeof(v->host), "%s", h->t->host);
	v->offset_ns = h->t->offset_ns;
	if (rename(from, v->path) == 0 || fl_copy(from, v->path) == 0)
		(*nvit)++;
	else
		propel_reportf("follow", "host %s: its vital signs: %s: %s",
			       h->t->host, v->path, strerror(errno));
}

int follow_end(struct follow *f, struct capture *cap, int argc,
	       char *const *argv, struct follow_vitals **vit, size_t *nvit,
	       char **cause)
{
	struct capture_host ch[FL_MAX_HOSTS];
	size_t nch = 0;
	int i, err, lost_local = 0;

	*vit = NULL;
	*nvit = 0;
	if (f->vitals && cap->db &&
	    !(*vit = calloc(FL_MAX_HOSTS, sizeof(**vit))))
		return propel_cause(cause, -ENOMEM, "out of memory");

	mkdir(cap->dir, 0700);
	/* hosts still being reached are given up */
	for (i = 0; i < f->nh; i++)
		if (f->h[i].state == FH_CONNECTING)
			fl_host_fail(f, i, "the session ended first");
	/* every peer request still open is answered first: no agent waits */
	for (i = 0; i < f->nfwd; i++)
		fl_refuse(f, f->fwd[i].origin, f->fwd[i].origin_id, -ECANCELED);
	f->nfwd = 0;
	for (i = 0; i < f->nh; i++) {
		struct fhost *h = &f->h[i];

		if (h->state == FH_UP && (err = fl_collect(f, i, cap->dir))) {
			propel_reportf("follow", "host %s: the session could not be "
				       "collected: %s", h->t->host, strerror(-err));
		}
	}
	for (i = 0; i < f->nh; i++) {
		struct fhost *h = &f->h[i];

		if (h->state == FH_LOST && h->t->same_clock &&
		    access(h->t->dir, F_OK) == 0)
			lost_local = 1;
		/* closing the line ends the lease of a lost host's agents */
		transport_hangup(h->t);
	}
	if (lost_local) {
		/* a lost host on this kernel: its directory is here too;
		 * read it once its agents have switched themselves off */
		struct timespec nap = { PROPEL_LEASE_MS / 1000 + 1, 0 };

		nanosleep(&nap, NULL);
	}
	for (i = 0; i < f->nh; i++) {
		struct fhost *h = &f->h[i];

		if (h->state == FH_DONE) {
			ch[nch].dir = h->dir;
			if (*vit)
				fl_vitals(f, i, cap->db, *vit, nvit);
		} else if (h->t->same_clock && access(h->t->dir, F_OK) == 0) {
			propel_reportf("follow", "host %s: its rings read from %s",
				       h->t->host, h->t->dir);
			ch[nch].dir = h->t->dir;
		} else {
			continue;
		}
		ch[nch].host = h->t->host;
		ch[nch].offset_ns = h->t->offset_ns;
		ch[nch].clock = h->clock;
		nch++;
	}
	err = capture_end_hosts(cap, argc, argv, ch, nch, cause);
	follow_abort(f);
	return err;
}

void follow_abort(struct follow *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nh; i++)
		transport_close(f->h[i].t);
	free(f->buf);
	free(f);
}
