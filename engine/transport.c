/*
 * engine/transport.c - spawning propeld, locally or through ssh, and the
 * first words with it (see engine/transport.h).
 *
 *   transport_start: spawned, HELLO sent --> HELLO
 *   HELLO --its HELLO read (transport_step)--> UP (one kernel), or
 *       CLOCK (first TIME sent)
 *   CLOCK --TRANSPORT_ROUNDS answers or more (transport_step)--> UP
 *   any --end of stream, a bad answer, the deadline--> failed (-errno,
 *       the cause ssh's last line when it said one)
 *
 * Nothing here waits but transport_open (the blocking form, for this
 * host) and the 100 ms a dead child gets to finish its last line.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/transport.h"
#include "share/clock.h"
#include "share/log.h"
#include "share/proc.h"
#include "share/wire.h"

#define PR_DOMAIN "transport"

#define TRANSPORT_HELLO_MS 15000 /* to the HELLO answer (ssh's login) */
#define TRANSPORT_FRAME_MS 5000  /* to each TIME answer */
#define TRANSPORT_SOCKET "/run/propel/propeld.sock" /* inject/propeld.c */
/* The clock exchange: at least TRANSPORT_ROUNDS round trips; while the
 * best is over TRANSPORT_RTT_GOOD_NS, more, up to TRANSPORT_ROUNDS_MAX or
 * TRANSPORT_CLOCK_MS since the first.  The bound is half the best round
 * trip, and on a loaded host a round trip is mostly the waits of the
 * processes on the way (propel, ssh, sshd, propeld) for a CPU: eight of
 * them were all slow (a 1.7-ms bound beside a test run, 61 us alone);
 * the best of more is one that found every CPU free. */
#define TRANSPORT_ROUNDS 8
#define TRANSPORT_ROUNDS_MAX 256
#define TRANSPORT_RTT_GOOD_NS 50000
#define TRANSPORT_CLOCK_MS 250

static int transport_failed(struct transport *t, int err, char **cause);

static void transport_propeld(char *buf, size_t n)
{
	const char *env = getenv("PROPEL_PROPELD");
	char exe[PATH_MAX - 16], *slash;
	ssize_t len;

	if (env && *env) {
		if (!realpath(env, buf))
			snprintf(buf, n, "%s", env);
		return;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = 0;
	if ((slash = strrchr(exe, '/')))
		*slash = 0;
	snprintf(buf, n, "%s/propeld", exe);
}

void transport_last_err(struct transport *t, char *buf, size_t size)
{
	char all[4096];
	ssize_t r, n = 0;
	char *p, *end;

	buf[0] = 0;
	if (t->errfd < 0)
		return;
	while (n < (ssize_t)sizeof(all) - 1 &&
	       (r = read(t->errfd, all + n, sizeof(all) - 1 - n)) > 0)
		n += r;
	all[n] = 0;
	while (n > 0 && (all[n - 1] == '\n' || all[n - 1] == '\r'))
		all[--n] = 0;
	p = strrchr(all, '\n');
	p = p ? p + 1 : all;
	end = p + strlen(p);
	if (end > p && end[-1] == '\r')
		end[-1] = 0;
	snprintf(buf, size, "%s", p);
}

static int transport_spawn(struct transport *t, char *const *argv, char **cause)
{
	int in[2], out[2], er[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(er, O_CLOEXEC))
		return propel_cause(cause, -errno, "pipe: %s", strerror(errno));
	t->pid = fork();
	if (t->pid < 0)
		return propel_cause(cause, -errno, "fork: %s", strerror(errno));
	if (t->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(er[1], 2);
		/* Ctrl-C is for the coordinator, which stops the host */
		signal(SIGINT, SIG_IGN);
		setpgid(0, 0);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(er[1]);
	t->to = in[1];
	t->from = out[0];
	t->errfd = er[0];
	fcntl(t->errfd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* This host's propeld's socket, if one serves (PROPEL_PROPELD_SOCKET, or
 * the default path): the connected descriptor, else -1. */
static int transport_socket(void)
{
	const char *env = getenv("PROPEL_PROPELD_SOCKET");
	const char *path = env && *env ? env : TRANSPORT_SOCKET;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path) || access(path, F_OK))
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	pr_dbg("propeld socket %s: %s", path, fd >= 0 ? "connected" : "no");
	return fd;
}

static const char *transport_values;

void transport_set_values(const char *values)
{
	transport_values = values && *values ? values : NULL;
}

int transport_start(const char *host, uint32_t flags, struct transport **out,
		    char **cause)
{
	struct transport *t = calloc(1, sizeof(*t));
	char propeld[PATH_MAX], ssh[1024], *argv[64];
	const char *remote;
	int err, argc = 0;

	*out = NULL;
	if (!t)
		return propel_cause(cause, -ENOMEM, "out of memory");
	t->to = t->from = t->errfd = -1;
	snprintf(t->name, sizeof(t->name), "%s", host ? host : "local");
	transport_propeld(propeld, sizeof(propeld));
	if (!host && (t->to = transport_socket()) >= 0) {
		t->from = dup(t->to);
		goto hello;
	}
	if (!host) {
		if (access(propeld, X_OK)) {
			err = propel_cause(cause, -ENOENT, "%s: %s", propeld,
					   strerror(errno));
			goto fail;
		}
		argv[argc++] = propeld;
	} else {
		const char *env = getenv("PROPEL_SSH");
		char *tok, *save = NULL;

		snprintf(ssh, sizeof(ssh), "%s", env && *env ? env : "ssh");
		for (tok = strtok_r(ssh, " \t", &save); tok && argc < 48;
		     tok = strtok_r(NULL, " \t", &save))
			argv[argc++] = tok;
		argv[argc++] = "-o";
		argv[argc++] = "BatchMode=yes";
		argv[argc++] = "-o";
		argv[argc++] = "ConnectTimeout=5";
		argv[argc++] = (char *)host;
		remote = getenv("PROPEL_REMOTE_PROPELD");
		argv[argc++] = remote && *remote ? (char *)remote : propeld;
	}
	argv[argc++] = "--stdio";
	argv[argc] = NULL;
	err = transport_spawn(t, argv, cause);
	if (err)
		goto fail;
hello:
	err = wire_sendf(t->to, WIRE_HELLO, "%s %d %u%s%s", WIRE_MAGIC,
			 WIRE_VERSION, flags, transport_values ? " " : "",
			 transport_values ? transport_values : "");
	if (err < 0) {
		err = transport_failed(t, err, cause);
		goto fail;
	}
	t->phase = TRANSPORT_HELLO;
	t->deadline_ns = (int64_t)propel_mono_ns() + TRANSPORT_HELLO_MS * 1000000LL;
	*out = t;
	return 0;
fail:
	transport_close(t);
	return err < 0 ? err : -EPROTO;
}

/* The line failed with err: the cause is the host's own last word on
 * stderr (ssh's), if it said one. */
static int transport_failed(struct transport *t, int err, char **cause)
{
	char last[512];

	/* the child may not have written its last word yet */
	if (err == -EPIPE)
		usleep(100 * 1000);
	transport_last_err(t, last, sizeof(last));
	return propel_cause(cause, err, "%s", last[0] ? last
			    : err == -EPIPE ? "no propeld there"
			    : strerror(-err));
}

/* The HELLO answer in buf (type): the host's name, boot id, directory,
 * addresses.  0 or -errno with *cause. */
static int transport_hello(struct transport *t, int type, const char *buf,
			   char **cause)
{
	char magic[32];
	int ver = 0;

	if (type == WIRE_RESULT) {
		int code = 0, n = 0;

		sscanf(buf, "%*u %d %*d %n", &code, &n);
		return propel_cause(cause, code ? code : -EPROTO,
				    "propeld: %s", buf + n);
	}
	if (type != WIRE_HELLO ||
	    sscanf(buf, "%31s %d %64s %d %63s %511s %1023s", magic, &ver,
		   t->host, &t->remote_pid, t->boot, t->dir, t->addrs) != 7 ||
	    strcmp(magic, WIRE_MAGIC) || ver != WIRE_VERSION)
		return propel_cause(cause, -EPROTO, "propeld answered "
				    "\"%.100s\", expected %s %d", buf,
				    WIRE_MAGIC, WIRE_VERSION);
	pr_dbg("%s: host %s dir %s addrs %s", t->name, t->host, t->dir,
	       t->addrs);
	return 0;
}

/* After the HELLO: one kernel (boot id), one CLOCK_MONOTONIC; else the
 * first TIME of the exchange goes out.  1 when the clock is known. */
static int transport_clock_begin(struct transport *t)
{
	char boot[64] = "";
	const char *force = getenv("PROPEL_CLOCK_EXCHANGE");
	const char *foreign = getenv("PROPEL_TEST_FOREIGN");

	propel_boot_id(boot, sizeof(boot));
	t->same_clock = boot[0] && !strcmp(boot, t->boot);
	/* the test switch: a host reached by ssh counts as another kernel
	 * (its clock exchanged, its vital signs its own propeld's) */
	if (foreign && *foreign == '1' && strcmp(t->name, "local"))
		t->same_clock = 0;
	if (t->same_clock && !(force && *force == '1')) {
		/* one kernel, one CLOCK_MONOTONIC (network namespaces) */
		t->offset_ns = t->err_ns = 0;
		return 1;
	}
	t->phase = TRANSPORT_CLOCK;
	t->rounds = 0;
	t->best_ns = -1;
	t->clock0_ns = (int64_t)propel_mono_ns();
	return 0;
}

/* Send the next TIME of the exchange (t1 noted). */
static int transport_time_send(struct transport *t)
{
	t->t1_ns = (int64_t)propel_mono_ns();
	t->deadline_ns = t->t1_ns + TRANSPORT_FRAME_MS * 1000000LL;
	return wire_send(t->to, WIRE_TIME, NULL, 0);
}

int transport_step(struct transport *t, int readable, char **cause)
{
	char buf[4096];
	int type = 0, err;

	if (t->phase == TRANSPORT_UP)
		return 1;
	if (!readable) {
		if ((int64_t)propel_mono_ns() < t->deadline_ns)
			return 0;
		return propel_cause(cause, -ETIMEDOUT, "%s: no answer in %d s",
				    t->name,
				    t->phase == TRANSPORT_HELLO
					    ? TRANSPORT_HELLO_MS / 1000
					    : TRANSPORT_FRAME_MS / 1000);
	}
	err = wire_recv(t->from, &type, buf, sizeof(buf), TRANSPORT_FRAME_MS);
	if (err < 0)
		return transport_failed(t, err, cause);
	if (t->phase == TRANSPORT_HELLO) {
		err = transport_hello(t, type, buf, cause);
		if (err)
			return err;
		if (transport_clock_begin(t)) {
			t->phase = TRANSPORT_UP;
			return 1;
		}
	} else {
		int64_t t3 = (int64_t)propel_mono_ns(), t2;
		long long remote;

		if (type != WIRE_TIME || sscanf(buf, "%lld", &remote) != 1)
			return propel_cause(cause, -EPROTO, "%s: clock "
					    "exchange failed", t->host);
		t2 = remote;
		/* the remote read its clock somewhere in [t1, t3] */
		if (t->best_ns < 0 || t3 - t->t1_ns < t->best_ns) {
			t->best_ns = t3 - t->t1_ns;
			t->offset_ns = (t->t1_ns + t3) / 2 - t2;
			t->err_ns = (t->best_ns + 1) / 2;
		}
		if (++t->rounds >= TRANSPORT_ROUNDS &&
		    (t->best_ns <= TRANSPORT_RTT_GOOD_NS ||
		     t->rounds >= TRANSPORT_ROUNDS_MAX ||
		     t3 - t->clock0_ns >= TRANSPORT_CLOCK_MS * 1000000LL)) {
			pr_dbg("%s: clock: best of %d round trips %lld ns",
			       t->name, t->rounds, (long long)t->best_ns);
			t->phase = TRANSPORT_UP;
			return 1;
		}
	}
	err = transport_time_send(t);
	return err < 0 ? transport_failed(t, err, cause) : 0;
}

int transport_open(const char *host, uint32_t flags, struct transport **out,
		   char **cause)
{
	struct transport *t = NULL;
	int err;

	err = transport_start(host, flags, &t, cause);
	while (!err) {
		int64_t left = (t->deadline_ns - (int64_t)propel_mono_ns()) / 1000000;
		struct pollfd p = { t->from, POLLIN, 0 };

		err = transport_step(t, left > 0 && poll(&p, 1, (int)left) > 0,
				     cause);
		if (err == 1) {
			*out = t;
			return 0;
		}
	}
	if (t)
		transport_close(t);
	return err;
}

int transport_has_addr(const struct transport *t, const char *addr)
{
	size_t n = strlen(addr);
	const char *p = t->addrs;

	while ((p = strstr(p, addr))) {
		if ((p == t->addrs || p[-1] == ',') &&
		    (p[n] == ',' || p[n] == 0))
			return 1;
		p += n;
	}
	return 0;
}

void transport_hangup(struct transport *t)
{
	int st, i;

	if (!t)
		return;
	if (t->to >= 0)
		close(t->to);
	if (t->from >= 0)
		close(t->from);
	if (t->errfd >= 0)
		close(t->errfd);
	t->to = t->from = t->errfd = -1;
	for (i = 0; t->pid > 0 && i < 300; i++) {
		if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
			t->pid = 0;
			break;
		}
		usleep(10 * 1000);
	}
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, &st, 0);
		t->pid = 0;
	}
}

void transport_kill(struct transport *t)
{
	if (t && t->pid > 0) {
		kill(-t->pid, SIGKILL); /* its group (setpgid in the child) */
		kill(t->pid, SIGKILL);
	}
	transport_hangup(t);
}

void transport_close(struct transport *t)
{
	transport_hangup(t);
	free(t);
}
