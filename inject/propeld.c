/*
 * inject/propeld.c - the per-host daemon (DESIGN.md "Data flow"): one per
 * host, run as root, nothing listening on the network.
 *
 *   propeld --stdio          serve one coordinator on stdin/stdout (what
 *                            `ssh HOST propeld --stdio` runs, and what
 *                            propel spawns for its own host)
 *   propeld [--socket PATH]  serve local coordinators on a UNIX socket
 *                            (default PROPELD_SOCKET), each connection its
 *                            own session; the requester is known by
 *                            SO_PEERCRED
 *
 * A session (struct pd) is one coordinator's conversation (share/wire.h):
 * its own session directory on this host (/dev/shm/propel/d<pid>-...),
 * an inject/tracer.c watching it (execs to follow, propagation requests
 * of the agents), and, in --mode full, a share/drain.c thread copying
 * the rings out while the programs run.  Its life:
 *
 *   HELLO --pd_hello--> READY: directory made, lease keeper forked, tracer
 *       and drain started
 *   READY --ATTACH / FOLLOW (pd_attach, pd_follow)--> READY: a process,
 *       or the process behind a peer address, injected
 *   READY --an agent's request (pd_on_peer)--> the peer found here and
 *       injected, or, not on this host, PEER to the coordinator
 *       (pd_pending until PEER_DONE or PROPEL_PROPAGATE_MS)
 *   READY --VITALS (pd_vitals: this host runs another kernel than the
 *       coordinator's)--> READY, `propel vitals host DIR` beside it
 *   READY --STOP (pd_stop)--> the collectors' output stored
 *       (pd_vitals_end), every agent of the directory switched off
 *       (patched bytes restored), the files streamed, END; gone
 *   READY --end of stream (the coordinator died: pd_lost)--> every agent
 *       switched off, the directory kept for `propel recover`; gone
 *
 * Authorization: a process is injected only if the requester may ptrace
 * it: root, or its owner (the uid of the SO_PEERCRED peer on the socket;
 * propeld's own uid under --stdio, where ssh has authenticated the user).
 *
 * The lease (share/agent-abi.h): agents switch themselves off when the
 * process named in the directory's coordinator file is gone.  That process
 * is a small child of propeld's (pd_keeper) that lives while the
 * coordinator's stream is open and propeld lives: the agents switch off
 * (inert, PROPEL_LEASE_MS later) when either ends.  A propeld killed
 * mid-session drains and detaches nobody, so its agents' rings only fill:
 * they stop at once, and nothing waits for an answer from it (a
 * propagation request ends as soon as an agent's lease sees the keeper
 * gone); the coordinator reports the host lost and reads the rings left
 * in the directory at its end.  Errors are one line, never an exit while
 * a session runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "share/clock.h"
#include "share/drain.h"
#include "inject/hijack.h"
#include "inject/inject.h"
#include "inject/peer-stdio.h"
#include "inject/peer.h"
#include "inject/tracer.h"
#include "share/agent-abi.h"
#include "share/log.h"
#include "share/proc.h"
#include "share/wire.h"

#define PR_DOMAIN "propeld"

#define PROPELD_SOCKET "/run/propel/propeld.sock"
#define PD_MAX_PENDING 256
#define PD_MAX_DONE 1024
#define PD_MAX_CLIENTS 32
#define PD_CHUNK (256 * 1024)

struct pd_pending {
	char name[96];
	unsigned id;
	uint64_t deadline_ms;
};

struct pd {
	int in, out;
	uid_t uid;          /* the requester */
	int ready, gone;
	uint32_t flags;     /* PROPEL_START_* for every injection */
	char dir[512];
	char agent[PATH_MAX];
	pid_t keeper;
	struct tracer *tr;
	struct drain *dr;
	struct pd_pending pend[PD_MAX_PENDING];
	int npend;
	unsigned next_id;
	pid_t done[PD_MAX_DONE]; /* injected or refused: not again */
	int ndone;
	int injected;
	int watching; /* threads seized, their exec to come (tracer_poll) */
	uint64_t quiet[8]; /* stdio channels said not followed (once each) */
	int nquiet;
	pid_t vitals;  /* `propel vitals host DIR` (pd_vitals), or 0 */
	int vitals_fd; /* its stdin: closed, it stores and ends */
};

/* The poll timeout for d, at most t: a seized thread's exec stop comes as
 * SIGCHLD, not on a descriptor, so while one is awaited the loop looks
 * every PD_EXEC_POLL_MS (a 200-ms look cost every followed exec that). */
#define PD_EXEC_POLL_MS 1
static int pd_timeout(const struct pd *d, int t)
{
	int want = d->watching ? PD_EXEC_POLL_MS : d->npend ? 20 : t;

	return t < 0 || want < t ? want : t;
}

static uint64_t pd_ms(void)
{
	return propel_mono_ms();
}

static void pd_note(struct pd *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void pd_note(struct pd *d, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pr_dbg("note: %s", buf);
	if (!d->gone)
		wire_sendf(d->out, WIRE_NOTE, "%s", buf);
}

static void pd_comm(pid_t pid, char *buf, size_t n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (propel_read_small(path, buf, n) < 0)
		snprintf(buf, n, "?");
	buf[strcspn(buf, "\n")] = 0;
}

static int pd_was_done(struct pd *d, pid_t pid)
{
	for (int i = 0; i < d->ndone; i++)
		if (d->done[i] == pid)
			return 1;
	if (d->ndone < PD_MAX_DONE)
		d->done[d->ndone++] = pid;
	return 0;
}

/*
 * Inject pid for the requester, if it may ptrace it.  0 injected now, 1
 * traced already (its agent running, or a record's child about to start
 * its preloaded one), or -errno with *cause.
 */
static int pd_inject(struct pd *d, pid_t pid, char **cause)
{
	long owner = peer_owner(pid);
	int err;

	if (owner < 0)
		return propel_cause(cause, -ESRCH, "no process %d", (int)pid);
	if (d->uid != 0 && (uid_t)owner != d->uid)
		return propel_cause(cause, -EPERM,
				    "may not trace: owned by uid %ld, the "
				    "requester is uid %u", owner,
				    (unsigned)d->uid);
	/* not even stopped: an interrupted call's restart may be a syscall
	 * its filter kills it for (sshd's pre-authentication child), and an
	 * agent there switches itself off anyway */
	if (peer_sandboxed(pid))
		return propel_cause(cause, -EPERM, "its agent cannot run there");
	/* a record's child that has just exec'd: its preloaded agent
	 * starts before its main, and a call now would run in its loader's
	 * start-up */
	if (tracer_exec_pending(pid, d->agent, 1) &&
	    hijack_exe_dynamic(pid) == 1)
		return 1;
	if (inject_agent_loaded(pid, NULL) == 1 &&
	    inject_agent_status(pid, NULL) == 1)
		return 1; /* traced already (by this session or another) */
	err = inject_agent_start(pid, d->agent, d->dir, d->flags, cause);
	if (err == -EBUSY)
		return 1;
	if (!err)
		d->injected++;
	return err;
}

/* 1 if pid is one of propel's own: this propeld, its children (the lease
 * keepers), or a program from propeld's directory (the coordinator, whose
 * stderr a traced program may share: propagation never traces propel). */
static int pd_is_propel(pid_t pid)
{
	static char self[PATH_MAX]; /* propeld's own path, read once */
	static size_t dl;           /* its directory's length, with the '/' */
	char exe[PATH_MAX], path[64], buf[512], *p;
	ssize_t n;
	int ppid = 0;

	if (pid == getpid())
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (propel_read_small(path, buf, sizeof(buf)) > 0 &&
	    (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &ppid);
	if (ppid == getpid())
		return 1;
	if (!self[0]) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return 0;
		self[n] = 0;
		p = strrchr(self, '/');
		dl = p ? (size_t)(p - self) + 1 : 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	return !strncmp(exe, self, dl) &&
	       (!strcmp(exe + dl, "propel") || !strcmp(exe + dl, "propeld"));
}

/* One look at the processes behind peer a (seen from except's end) on
 * this host, injected; *fresh counts those injected now.  Returns how
 * many are traced now, or -errno with *cause. */
static int pd_follow_once(struct pd *d, const struct peer_addr *a,
			  pid_t except, pid_t *first, int *fresh, char **cause)
{
	pid_t pids[16];
	char name[96], comm[32];
	struct peer_stdio st;
	int n, i, ok = 0, err = 0, fd;

	peer_name(a, name, sizeof(name));
	/* the operator's pipeline is not the system (inject/peer-stdio.h) */
	peer_stdio_read(d->dir, &st);
	if ((fd = peer_stdio_fd(&st, a)) >= 0) {
		uint64_t ino = st.ino[fd];

		for (i = 0; i < d->nquiet && d->quiet[i] != ino; i++)
			;
		if (i == d->nquiet && d->nquiet < 8) {
			d->quiet[d->nquiet++] = ino;
			pd_note(d, "not following %s: propel's own %s", name,
				fd ? "output" : "input");
		}
		return 0;
	}
	n = peer_find(a, except, pids, 16, cause);
	if (n < 0)
		return n;
	/* a pipe written to has a reader: none but the writer is a
	 * self-pipe (an event loop's wake-up), no peer to follow */
	if (n == 0 && !strcmp(a->kind, "pipe"))
		return 0;
	if (n == 0)
		return propel_cause(cause, -ENOENT, "no process holds %s here",
				    name);
	for (i = 0; i < n; i++) {
		char *why = NULL;

		if (pd_is_propel(pids[i]) || peer_stdio_ancestor(&st, pids[i]))
			continue; /* not a peer of the work */
		if (pd_was_done(d, pids[i])) {
			ok++;
			continue;
		}
		pd_comm(pids[i], comm, sizeof(comm));
		err = pd_inject(d, pids[i], &why);
		if (err > 0) { /* traced already: nothing to say */
			if (first && !*first)
				*first = pids[i];
			ok++;
			err = 0;
		} else if (err) {
			pd_note(d, "follow %s: pid %d (%s)%s: %s", name,
				(int)pids[i], comm,
				peer_sandboxed(pids[i])
					? " runs in a seccomp sandbox, not traced"
					: "",
				why ? why : strerror(-err));
			propel_cause(cause, err, "%s", why ? why : strerror(-err));
		} else {
			pd_note(d, "traced pid %d (%s), the peer at %s",
				(int)pids[i], comm, name);
			if (first && !*first)
				*first = pids[i];
			(*fresh)++;
			ok++;
		}
		free(why);
	}
	return ok ? ok : err;
}

/* The processes behind peer a, injected, looked for again after an
 * injection: a connection still in its listener's accept queue is found
 * at the listener, which may accept it and hand it to a child it forks
 * (sshd) while its agent goes in -- the child holds it by the second
 * look.  Returns how many are traced, or -errno with *cause. */
static int pd_follow_peer(struct pd *d, const struct peer_addr *a, pid_t except,
			  pid_t *first, char **cause)
{
	int r = 0, pass, fresh, got = 0;

	for (pass = 0; pass < 2; pass++) {
		fresh = 0;
		r = pd_follow_once(d, a, except, first, &fresh, cause);
		if (r > 0)
			got = r;
		if (r < 0 || !fresh)
			break;
	}
	return got > 0 ? got : r;
}

/* ---- requests from the agents (inject/tracer.h) ---- */

static void pd_on_peer(const struct tracer_peer *req, void *arg)
{
	struct pd *d = arg;
	struct peer_addr a;
	char *cause = NULL;
	int r;

	if (peer_parse(req->line, &a)) {
		tracer_peer_done(d->tr, req->name);
		return;
	}
	if (!peer_is_local(&a)) {
		/* on another host: the coordinator knows the hosts */
		struct pd_pending *p;

		if (d->gone || d->npend == PD_MAX_PENDING) {
			tracer_peer_done(d->tr, req->name);
			return;
		}
		p = &d->pend[d->npend++];
		snprintf(p->name, sizeof(p->name), "%s", req->name);
		p->id = ++d->next_id;
		p->deadline_ms = pd_ms() + PROPEL_PROPAGATE_MS;
		wire_sendf(d->out, WIRE_PEER, "%u %s", p->id, req->line);
		return;
	}
	/* a test switch: each local peer's injection that much slower, as
	 * a large process on a loaded host is (tests/e2e/comm-libs.sh: the
	 * agent must wait for a taken request past PROPEL_PROPAGATE_MS) */
	propel_test_delay("PROPEL_TEST_PEER_DELAY_MS");
	r = pd_follow_peer(d, &a, req->pid, NULL, &cause);
	if (r == -ENOENT) {
		char name[96];

		peer_name(&a, name, sizeof(name));
		pd_note(d, "follow %s: %s%s", name, cause ? cause : "not found",
			d->uid == getuid() && getuid() != 0
				? " (or not visible to this user)"
				: "");
	} else if (r == -EPIPE && cause) {
		/* a peer that closed its end: normal, said, not a refusal
		 * (no "follow X:" line, which names a peer not traced) */
		pd_note(d, "%s", cause);
	}
	free(cause);
	tracer_peer_done(d->tr, req->name);
}

static void pd_peer_done(struct pd *d, unsigned id)
{
	for (int i = 0; i < d->npend; i++)
		if (d->pend[i].id == id) {
			tracer_peer_done(d->tr, d->pend[i].name);
			d->pend[i] = d->pend[--d->npend];
			return;
		}
}

static void pd_expire(struct pd *d)
{
	uint64_t now = pd_ms();

	for (int i = 0; i < d->npend;)
		if (d->pend[i].deadline_ms <= now) {
			tracer_peer_done(d->tr, d->pend[i].name);
			d->pend[i] = d->pend[--d->npend];
		} else {
			i++;
		}
}

static void pd_on_exec_warn(pid_t pid, int err, const char *cause, void *arg)
{
	pd_note(arg, "exec in %d not followed: %s", (int)pid,
		cause ? cause : strerror(-err));
}

/* ---- the session ---- */

/*
 * The lease keeper: a child that lives while the coordinator's stream is
 * open (it polls for the hang-up only, never reads) and propeld lives
 * (PR_SET_PDEATHSIG), named in the directory's coordinator file.
 */
static pid_t pd_keeper(int in)
{
	pid_t parent = getpid(), pid = fork();

	if (pid != 0)
		return pid;
	prctl(PR_SET_NAME, "propeld-lease", 0, 0, 0);
	/* ends with propeld (the thread that forked it: the main loop) */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
	/* only the coordinator's stream (to see it end) and stderr (under
	 * ssh, the channel stays open while a holder of stderr lives: the
	 * coordinator sees propeld's stdout end, not the whole line) */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != in)
			close(fd);
	if (in != 0)
		close(0);
	close(1);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	for (;;) {
		struct pollfd p = { in, 0, 0 };

		if (poll(&p, 1, -1) > 0 && (p.revents & (POLLHUP | POLLERR |
							 POLLNVAL)))
			_exit(0);
	}
}

/* HELLO's last field: the values mapping directives name, for every agent
 * of the session (share/agent-abi.h, PROPEL_VALUES_FILE). */
static int pd_values(struct pd *d, const char *values, char **cause)
{
	char path[600];
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", d->dir, PROPEL_VALUES_FILE);
	f = fopen(path, "we");
	if (!f)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	bad = fprintf(f, "%s\n", values) < 0;
	bad |= fclose(f) != 0;
	if (bad)
		return propel_cause(cause, -EIO, "%s: cannot write", path);
	chmod(path, 0644);
	return 0;
}

static int pd_hello(struct pd *d, const char *payload)
{
	char magic[32], addrs[1024], boot[64] = "-", *cause = NULL;
	unsigned ver = 0, flags = 0;
	int vat = 0;
	struct utsname un;
	struct timespec ts;
	char path[600];
	FILE *f;
	int err;
	static int seq;

	if (sscanf(payload, "%31s %u %u %n", magic, &ver, &flags, &vat) < 2 ||
	    strcmp(magic, WIRE_MAGIC) || ver != WIRE_VERSION) {
		wire_sendf(d->out, WIRE_RESULT, "0 %d 0 propeld speaks %s %d, "
			   "not \"%s\"", -EPROTO, WIRE_MAGIC, WIRE_VERSION,
			   payload);
		return -EPROTO;
	}
	d->flags = flags;
	err = inject_find_agent(d->agent, sizeof(d->agent), &cause);
	if (!err && mkdir(PROPEL_SHM_ROOT, 01777) < 0 && errno != EEXIST)
		err = propel_cause(&cause, -errno, "%s: %s", PROPEL_SHM_ROOT,
				   strerror(errno));
	if (!err) {
		chmod(PROPEL_SHM_ROOT, 01777);
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(d->dir, sizeof(d->dir), "%s/d%d-%d-%lx",
			 PROPEL_SHM_ROOT, (int)getpid(), ++seq,
			 (unsigned long)ts.tv_sec);
		if (mkdir(d->dir, 0777) < 0)
			err = propel_cause(&cause, -errno, "%s: %s", d->dir,
					   strerror(errno));
		else
			chmod(d->dir, 01777);
	}
	if (!err) {
		d->keeper = pd_keeper(d->in);
		snprintf(path, sizeof(path), "%s/%s", d->dir, PROPEL_COORD_FILE);
		f = fopen(path, "we");
		if (d->keeper < 0 || !f)
			err = propel_cause(&cause, -errno, "%s: %s", path,
					   strerror(errno));
		if (f) {
			fprintf(f, "%d %llu\n", (int)d->keeper,
				propel_proc_start(d->keeper));
			fclose(f);
		}
	}
	if (!err && vat && payload[vat])
		err = pd_values(d, payload + vat, &cause);
	if (!err)
		err = tracer_new(d->dir, d->agent, d->flags, pd_on_exec_warn, d,
				 &d->tr, &cause);
	if (!err) {
		tracer_set_peer(d->tr, pd_on_peer, d);
		if (d->flags & PROPEL_START_KEEP_ALL)
			err = drain_start(d->dir, &d->dr, &cause);
	}
	if (err) {
		wire_sendf(d->out, WIRE_RESULT, "0 %d 0 %s", err,
			   cause ? cause : strerror(-err));
		free(cause);
		return err;
	}
	if (propel_boot_id(boot, sizeof(boot)) < 0)
		strcpy(boot, "-");
	peer_local_addrs(addrs, sizeof(addrs));
	uname(&un);
	d->ready = 1;
	return wire_sendf(d->out, WIRE_HELLO, "%s %d %s %d %s %s %s",
			  WIRE_MAGIC, WIRE_VERSION, un.nodename, (int)getpid(),
			  boot, d->dir, addrs);
}

static void pd_attach(struct pd *d, const char *payload)
{
	unsigned id;
	int pid, err;
	char *cause = NULL, comm[32];

	if (sscanf(payload, "%u %d", &id, &pid) != 2 || pid <= 0) {
		wire_sendf(d->out, WIRE_RESULT, "0 %d 0 bad ATTACH", -EINVAL);
		return;
	}
	pd_comm(pid, comm, sizeof(comm));
	err = pd_inject(d, pid, &cause);
	if (err > 0)
		err = 0; /* traced already */
	if (!err)
		pd_was_done(d, pid);
	wire_sendf(d->out, WIRE_RESULT, "%u %d %d %s", id, err, pid,
		   err ? (cause ? cause : strerror(-err)) : comm);
	free(cause);
}

static void pd_follow(struct pd *d, const char *payload)
{
	struct peer_addr a;
	unsigned id;
	int n = 0, err;
	pid_t first = 0;
	char *cause = NULL;

	if (sscanf(payload, "%u %n", &id, &n) != 1 || !n ||
	    peer_parse(payload + n, &a)) {
		wire_sendf(d->out, WIRE_RESULT, "0 %d 0 bad FOLLOW", -EINVAL);
		return;
	}
	err = pd_follow_peer(d, &a, 0, &first, &cause);
	wire_sendf(d->out, WIRE_RESULT, "%u %d %d %s", id, err < 0 ? err : 0,
		   (int)first, err < 0 ? (cause ? cause : strerror(-err)) : "ok");
	free(cause);
}

static void pd_detach_warn(void *arg, pid_t pid, int err, const char *cause)
{
	char comm[32];

	pd_comm(pid, comm, sizeof(comm));
	pd_note(arg, "detach %d (%s): %s", (int)pid, comm,
		cause ? cause : strerror(-err));
}

/* Switch off every agent tracing into the directory; how many. */
static int pd_detach_all(struct pd *d)
{
	int ok;

	tracer_free(d->tr);
	d->tr = NULL;
	ok = tracer_detach_all(d->dir, d->agent, pd_detach_warn, d);
	if (d->dr) {
		drain_stop(d->dr, NULL);
		d->dr = NULL;
	}
	return ok < 0 ? 0 : ok;
}

static void pd_end_keeper(struct pd *d)
{
	if (d->keeper > 0) {
		kill(d->keeper, SIGKILL);
		waitpid(d->keeper, NULL, 0);
		d->keeper = 0;
	}
}

/*
 * VITALS: the kernel collectors over the processes traced into d->dir, in
 * a child running `propel vitals host DIR` (engine/vitals-host.h; propeld
 * links inject/ and share/ only), the propel next to propeld.  It ends,
 * its output in DIR/vitals.db, when its stdin (our pipe) ends: at STOP
 * (pd_vitals_end), or when propeld does.
 */
static void pd_vitals(struct pd *d, const char *payload)
{
	char exe[PATH_MAX], *slash;
	int all = payload && !strcmp(payload, "all"), p[2];
	ssize_t n;
	pid_t pid;

	if (d->vitals > 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 8);
	exe[n > 0 ? n : 0] = 0;
	if (!(slash = strrchr(exe, '/'))) {
		pd_note(d, "--vitals: cannot find propel: no vital signs here");
		return;
	}
	strcpy(slash + 1, "propel");
	if (access(exe, X_OK) || pipe2(p, O_CLOEXEC)) {
		pd_note(d, "--vitals: %s: %s: no vital signs here", exe,
			strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(p[0], 0);
		dup2(2, 1); /* never the coordinator's stream */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execl(exe, "propel", "vitals", "host", d->dir,
		      all ? "--all" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		pd_note(d, "--vitals: fork: %s: no vital signs here",
			strerror(errno));
		return;
	}
	d->vitals = pid;
	d->vitals_fd = p[1];
}

/* The collectors told to end; with wait, until their output is stored
 * (at most PD_VITALS_WAIT_MS, then killed); without (the coordinator is
 * gone: nobody wants it), killed. */
#define PD_VITALS_WAIT_MS 60000
static void pd_vitals_end(struct pd *d, int wait)
{
	uint64_t end = pd_ms() + PD_VITALS_WAIT_MS;
	int st;

	if (d->vitals <= 0)
		return;
	close(d->vitals_fd);
	d->vitals_fd = -1;
	while (wait && waitpid(d->vitals, &st, WNOHANG) == 0) {
		if (pd_ms() > end) {
			pd_note(d, "--vitals: the collectors did not end in "
				   "%d s: killed", PD_VITALS_WAIT_MS / 1000);
			kill(d->vitals, SIGKILL);
			waitpid(d->vitals, &st, 0);
			break;
		}
		usleep(20000);
	}
	if (!wait) {
		kill(d->vitals, SIGKILL);
		waitpid(d->vitals, &st, 0);
	}
	d->vitals = 0;
}

static int pd_stream_file(struct pd *d, const char *name)
{
	char path[1024], *buf;
	struct stat st;
	int fd, err = 0;
	ssize_t r;

	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	buf = malloc(PD_CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	err = wire_sendf(d->out, WIRE_FILE, "%lld %s", (long long)st.st_size,
			 name);
	while (!err && (r = read(fd, buf, PD_CHUNK)) > 0)
		err = wire_send(d->out, WIRE_DATA, buf, (size_t)r);
	free(buf);
	close(fd);
	return err;
}

static int pd_keep_name(const char *n)
{
	size_t l = strlen(n);

	if (n[0] == '.' || !strcmp(n, PROPEL_COORD_FILE) ||
	    !strcmp(n, PROPEL_VALUES_FILE))
		return 0;
	return !(l > 5 && (!strcmp(n + l - 5, ".peer") ||
			   !strcmp(n + l - 5, ".exec") ||
			   !strcmp(n + l - 6, ".taken") ||
			   !strcmp(n + l - 4, ".tmp")));
}

static void pd_remove_dir(const char *dir)
{
	DIR *dd = opendir(dir);
	struct dirent *e;
	char path[1024];

	while (dd && (e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (dd)
		closedir(dd);
	rmdir(dir);
}

static void pd_stop(struct pd *d)
{
	int n, err = 0;
	DIR *dd;
	struct dirent *e;

	/* before the detach: the collectors' symbolizer maps the agent
	 * library of the processes it reads, which would make the child
	 * look traced to tracer_detach_all */
	pd_vitals_end(d, 1);
	n = pd_detach_all(d);
	pd_end_keeper(d);
	dd = opendir(d->dir);
	while (!err && dd && (e = readdir(dd)))
		if (pd_keep_name(e->d_name))
			err = pd_stream_file(d, e->d_name);
	if (dd)
		closedir(dd);
	if (!err)
		err = wire_sendf(d->out, WIRE_END, "%d %d", n, d->injected);
	if (!err)
		pd_remove_dir(d->dir); /* it is the coordinator's now */
	d->gone = 1;
}

/* The coordinator is gone without a STOP: every process unharmed, the
 * rings kept for `propel recover`. */
static void pd_lost(struct pd *d)
{
	DIR *dd;
	struct dirent *e;
	int maps = 0;

	d->gone = 1;
	if (!d->ready)
		return;
	pd_vitals_end(d, 0);
	pd_detach_all(d);
	pd_end_keeper(d);
	dd = opendir(d->dir);
	while (dd && (e = readdir(dd))) {
		size_t l = strlen(e->d_name);

		maps += l > 4 && !strcmp(e->d_name + l - 4, ".map");
	}
	if (dd)
		closedir(dd);
	if (!maps) { /* nothing was traced: nothing to recover */
		pd_remove_dir(d->dir);
		return;
	}
	fprintf(stderr, "propeld: the coordinator is gone: agents switched "
			"off, rings kept in %s (propel recover)\n", d->dir);
}

/* One frame from the coordinator; -1 when the session is over. */
static int pd_serve(struct pd *d)
{
	static char buf[8192];
	int type = 0, n;
	unsigned id;
	int res;

	n = wire_recv(d->in, &type, buf, sizeof(buf), 5000);
	if (n < 0) {
		pd_lost(d);
		return -1;
	}
	if (!d->ready && type != WIRE_HELLO) {
		wire_sendf(d->out, WIRE_RESULT, "0 %d 0 HELLO first", -EPROTO);
		return 0;
	}
	switch (type) {
	case WIRE_HELLO:
		if (pd_hello(d, buf)) {
			d->gone = 1;
			return -1;
		}
		break;
	case WIRE_TIME:
		wire_sendf(d->out, WIRE_TIME, "%lld",
			   (long long)propel_mono_ns());
		break;
	case WIRE_ATTACH:
		pd_attach(d, buf);
		break;
	case WIRE_FOLLOW:
		pd_follow(d, buf);
		break;
	case WIRE_PEER_DONE:
		if (sscanf(buf, "%u %d", &id, &res) >= 1)
			pd_peer_done(d, id);
		break;
	case WIRE_VITALS:
		pd_vitals(d, buf);
		break;
	case WIRE_STOP:
		pd_stop(d);
		return -1;
	default:
		pd_note(d, "unexpected %s frame", wire_type_name(type));
		break;
	}
	return 0;
}

static void pd_free(struct pd *d)
{
	if (d->tr)
		tracer_free(d->tr);
	if (d->dr)
		drain_stop(d->dr, NULL);
	pd_end_keeper(d);
	pd_vitals_end(d, 0);
	free(d);
}

/* ---- the two ways in ---- */

static int pd_run_stdio(void)
{
	struct pd *d = calloc(1, sizeof(*d));

	if (!d)
		return 1;
	d->in = 0;
	d->out = dup(1);
	/* nothing else may write on the stream */
	dup2(2, 1);
	d->uid = getuid();
	while (!d->gone) {
		struct pollfd p[2] = { { d->in, POLLIN, 0 },
				       { d->tr ? tracer_fd(d->tr) : -1, POLLIN,
					 0 } };
		int t = pd_timeout(d, d->tr ? 200 : -1);

		if (poll(p, 2, t) < 0 && errno != EINTR)
			break;
		if (p[0].revents && pd_serve(d) < 0)
			break;
		if (d->tr && !d->gone)
			d->watching = tracer_poll(d->tr, 0);
		pd_expire(d);
	}
	pd_free(d);
	return 0;
}

static int pd_run_socket(const char *path)
{
	struct sockaddr_un sa;
	struct pd *cl[PD_MAX_CLIENTS];
	int ls, ncl = 0;
	char dir[sizeof(sa.sun_path)], *slash;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "propeld: %s: path too long\n", path);
		return 1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755);
	}
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(ls, 16) < 0) {
		fprintf(stderr, "propeld: %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* anyone may ask; SO_PEERCRED says what they may have */
	chmod(path, 0666);
	for (;;) {
		struct pollfd p[1 + 2 * PD_MAX_CLIENTS];
		int i, np = 1, t = 200;

		p[0].fd = ls;
		p[0].events = POLLIN;
		for (i = 0; i < ncl; i++) {
			p[np].fd = cl[i]->in;
			p[np++].events = POLLIN;
			p[np].fd = cl[i]->tr ? tracer_fd(cl[i]->tr) : -1;
			p[np++].events = POLLIN;
			t = pd_timeout(cl[i], t);
		}
		for (i = 0; i < np; i++)
			p[i].revents = 0;
		if (poll(p, (nfds_t)np, t) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
			struct ucred cr;
			socklen_t cl_len = sizeof(cr);
			struct pd *d;

			if (c >= 0 && (ncl == PD_MAX_CLIENTS ||
				       getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr,
						  &cl_len) < 0 ||
				       !(d = calloc(1, sizeof(*d))))) {
				close(c);
			} else if (c >= 0) {
				d->in = d->out = c;
				d->uid = cr.uid;
				cl[ncl++] = d;
				pr_dbg("client uid %u pid %d", cr.uid, cr.pid);
			}
		}
		for (i = 0; i < ncl; i++) {
			struct pd *d = cl[i];

			if (p[1 + 2 * i].revents && pd_serve(d) < 0)
				d->gone = 1;
			if (d->tr && !d->gone)
				d->watching = tracer_poll(d->tr, 0);
			pd_expire(d);
		}
		for (i = 0; i < ncl;) {
			if (cl[i]->gone) {
				close(cl[i]->in);
				pd_free(cl[i]);
				cl[i] = cl[--ncl];
			} else {
				i++;
			}
		}
	}
	return 1;
}

static void pd_usage(FILE *f)
{
	fprintf(f,
		"usage: propeld [--stdio | --socket PATH]\n"
		"  the per-host daemon of propel: injects the agent into the\n"
		"  processes a coordinator (propel --follow) asks for, and into\n"
		"  the peers its agents ask for; streams the rings back.\n"
		"  --stdio        serve one coordinator on stdin/stdout (run by\n"
		"                 `ssh HOST propeld --stdio`)\n"
		"  --socket PATH  serve local coordinators on a UNIX socket\n"
		"                 (default %s); a process is injected only\n"
		"                 if the client's uid may ptrace it (root, or its\n"
		"                 owner)\n"
		"  Nothing listens on the network.\n",
		PROPELD_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stdio", no_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL;
	int c, stdio = 0;

	propel_progname = "propeld";
	signal(SIGPIPE, SIG_IGN);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			stdio = 1;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'h':
			pd_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "propeld: %s: unknown option (see "
					"propeld --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc || (stdio && sock)) {
		fprintf(stderr, "propeld: %s: use --stdio or --socket PATH "
				"(see propeld --help)\n",
			optind < argc ? argv[optind] : "--stdio --socket");
		return 2;
	}
	if (stdio)
		return pd_run_stdio();
	return pd_run_socket(sock ? sock : PROPELD_SOCKET);
}
