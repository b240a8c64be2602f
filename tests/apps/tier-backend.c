/*
 * tests/apps/tier-backend.c - the middle tier of tests/e2e/three-tier.sh:
 * a small HTTP/1.1 backend (keep-alive) behind Debian's nginx (proxy_pass)
 * that keeps its data in Debian's redis-server, spoken to over TCP in
 * RESP by hand.
 *
 *   tier-backend -l PORT[,PORT...] -r REDISPORT [-P PIDFILE]
 *
 * One worker process per PORT (nginx lists them as upstream servers), each
 * a poll() loop over its keep-alive connections with one blocking redis
 * connection; the master re-forks a worker that died.  PIDFILE gets
 * "master PID" and "worker PORT PID" lines (a re-forked worker appends
 * its own).  Handlers:
 *   GET /item/N   redis GET item:N      -> 200 "item N: VALUE" (or "none")
 *   GET /count    redis INCR tier:hits  -> 200 "hits N"
 *   anything else                       -> 404
 * SIGTERM: each worker prints "tier-backend: worker PORT requests N
 * errors E" (E: redis errors and malformed requests) and exits 0.
 *
 * Faults (TIER_FAULT, in the environment):
 *   slow   every 20th /item request of a worker takes the slow path:
 *          render_item_slow > slow_layout > slow_measure > slow_checksum,
 *          at least 5 ms of computation
 *   crash  armed by TIER_FAULT_FILE: the first request after that file
 *          appears (the worker that renames it to FILE.taken) crashes in
 *          item_cache_store (a write through a NULL entry: SIGSEGV)
 *   hang   armed the same way: the worker sends the GET to redis and then
 *          waits for the reply to be handed over by an asynchronous reader
 *          that is not there (redis_await_async: a wake-up pipe nobody
 *          writes): it never reads redis's reply and never answers; its
 *          other connections stall with it
 * The worker that took a fault writes its pid into FILE.taken.
 * The file is checked with access(2) on every request, fault or not.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#define TB_MAXCONN 64
#define TB_BUF 8192

struct tb_conn {
	int fd;
	size_t n;
	char buf[TB_BUF];
};

static volatile sig_atomic_t tb_stop;
static int tb_redis = -1, tb_redis_port, tb_port;
static int tb_wake[2] = { -1, -1 }; /* the hang's wrong descriptor */
static long tb_requests, tb_errors, tb_items;
static const char *tb_fault, *tb_fault_file;

static void tb_on_term(int sig)
{
	(void)sig;
	tb_stop = 1;
}

/* SIGTERM without SA_RESTART: a blocked read returns (the hang ends) */
static void tb_term_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tb_on_term;
	sigaction(SIGTERM, &sa, NULL);
}

static int tb_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int tb_listen(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 128)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int redis_connect(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	a.sin_port = htons((uint16_t)tb_redis_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One RESP command of two arguments. */
static __attribute__((noinline)) int redis_send(const char *cmd,
						const char *key)
{
	char req[256];
	int n;

	if (tb_redis < 0 && (tb_redis = redis_connect()) < 0)
		return -1;
	n = snprintf(req, sizeof(req), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
		     strlen(cmd), cmd, strlen(key), key);
	return tb_write_all(tb_redis, req, (size_t)n);
}

/* A reply from fd: a bulk string, an integer or a status into out (""
 * for nil). */
static __attribute__((noinline)) int redis_read_reply(int fd, char *out,
						      size_t len)
{
	char buf[1024];
	size_t n = 0;

	for (;;) {
		char *nl;
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);

		if (r < 0 && errno == EINTR && !tb_stop)
			continue;
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = 0;
		nl = strstr(buf, "\r\n");
		if (!nl)
			continue;
		if (buf[0] == '$') {
			long bl = strtol(buf + 1, NULL, 10);
			size_t need;

			if (bl < 0) {
				out[0] = 0;
				return 0;
			}
			need = (size_t)(nl - buf) + 2 + (size_t)bl + 2;
			if (n < need)
				continue;
			snprintf(out, len, "%.*s", (int)bl, nl + 2);
			return 0;
		}
		if (buf[0] == ':' || buf[0] == '+') {
			snprintf(out, len, "%.*s", (int)(nl - buf - 1), buf + 1);
			return 0;
		}
		return -1; /* -ERR */
	}
}

static __attribute__((noinline)) int redis_await_reply(char *out, size_t len)
{
	return redis_read_reply(tb_redis, out, len);
}

/* The hang: the reply handed over by a reader that is not there -- it
 * waits for the wake-up pipe, and nobody reads the redis socket. */
static __attribute__((noinline)) int redis_await_async(char *out, size_t len)
{
	return redis_read_reply(tb_wake[0], out, len);
}

static __attribute__((noinline)) int redis_call(const char *cmd,
						const char *key, char *out,
						size_t len, int async)
{
	if (redis_send(cmd, key) ||
	    (async ? redis_await_async(out, len) : redis_await_reply(out, len))) {
		if (tb_redis >= 0)
			close(tb_redis);
		tb_redis = -1;
		if (!tb_stop) /* not the hang ended by SIGTERM */
			tb_errors++;
		return -1;
	}
	return 0;
}

/* the slow path: a few levels deep, >= 5 ms of computation at the bottom
 * (the thread's CPU time: a computation that costs 5.5 ms of CPU; on a
 * loaded host its wall time is longer, the rest waits for a CPU, which
 * propel leaves out of the request's time when it sees it: --vitals) */
static __attribute__((noinline)) uint64_t slow_checksum(const char *s)
{
	struct timespec a, b;
	uint64_t h = 1469598103934665603ull;
	long i = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int k = 0; k < 20000; k++, i++)
			h = (h ^ (uint64_t)s[i % 7]) * 1099511628211ull;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
		 5500000L);
	return h;
}

static __attribute__((noinline)) uint64_t slow_measure(const char *s)
{
	return slow_checksum(s) + 1;
}

static __attribute__((noinline)) uint64_t slow_layout(const char *s)
{
	return slow_measure(s) ^ 7;
}

static __attribute__((noinline)) int render_item_slow(char *body, size_t len,
						      const char *id,
						      const char *val)
{
	return snprintf(body, len, "item %s: %s (%llx)", id, val,
			(unsigned long long)slow_layout(val));
}

static __attribute__((noinline)) int render_item(char *body, size_t len,
						 const char *id,
						 const char *val)
{
	return snprintf(body, len, "item %s: %s", id, val);
}

struct tb_entry {
	char val[64];
};

/* the crash: the cache slot a corrupt index gives is NULL */
static __attribute__((noinline)) void item_cache_store(struct tb_entry *e,
						       const char *val)
{
	snprintf(e->val, sizeof(e->val), "%s", val);
}

/* armed faults (crash, hang) fire once, in the worker that takes the file */
static int tb_fault_armed(void)
{
	char taken[4096];
	FILE *f;

	if (!tb_fault_file || access(tb_fault_file, F_OK))
		return 0;
	snprintf(taken, sizeof(taken), "%s.taken", tb_fault_file);
	if (rename(tb_fault_file, taken))
		return 0;
	f = fopen(taken, "a"); /* who took it */
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	return 1;
}

static __attribute__((noinline)) int handle_item(const char *id, char *body,
						 size_t len)
{
	char key[64], val[512];
	int armed = tb_fault_armed();
	int hang = armed && tb_fault && !strcmp(tb_fault, "hang");

	snprintf(key, sizeof(key), "item:%s", id);
	if (redis_call("GET", key, val, sizeof(val), hang))
		return -1;
	if (!val[0])
		snprintf(val, sizeof(val), "none");
	if (armed && tb_fault && !strcmp(tb_fault, "crash")) {
		static struct tb_entry *slots[4];
		volatile int idx = 3;

		item_cache_store(slots[idx], val);
	}
	if (tb_fault && !strcmp(tb_fault, "slow") && ++tb_items % 20 == 0)
		return render_item_slow(body, len, id, val);
	return render_item(body, len, id, val);
}

static __attribute__((noinline)) int handle_count(char *body, size_t len)
{
	char val[64];

	(void)tb_fault_armed();
	if (redis_call("INCR", "tier:hits", val, sizeof(val), 0))
		return -1;
	return snprintf(body, len, "hits %s", val);
}

static __attribute__((noinline)) int tb_respond(int fd, int status,
						const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: keep-alive\r\n\r\n",
			 status, status == 200 ? "OK" : status == 404 ? "Not Found"
								   : "Error",
			 strlen(body));

	/* one write: header and body together */
	char out[TB_BUF];

	n = snprintf(out, sizeof(out), "%.*s%s", n, head, body);
	return tb_write_all(fd, out, (size_t)n);
}

/* One whole request in c->buf (no body: GET only): 0 keep, -1 close. */
static __attribute__((noinline)) int handle_request(struct tb_conn *c,
						    size_t len)
{
	char method[8], path[256], body[1024];
	int status = 200, r;

	tb_requests++;
	if (sscanf(c->buf, "%7s %255s", method, path) != 2 ||
	    strcmp(method, "GET")) {
		tb_errors++;
		return -1;
	}
	if (!strncmp(path, "/item/", 6))
		r = handle_item(path + 6, body, sizeof(body));
	else if (!strcmp(path, "/count"))
		r = handle_count(body, sizeof(body));
	else
		r = snprintf(body, sizeof(body), "not found"), status = 404;
	if (r < 0) {
		status = 502;
		snprintf(body, sizeof(body), "redis unavailable");
	}
	memmove(c->buf, c->buf + len, c->n - len);
	c->n -= len;
	return tb_respond(c->fd, status, body);
}

static void worker_loop(int lfd)
{
	static struct tb_conn conn[TB_MAXCONN];
	struct pollfd pf[TB_MAXCONN + 1];
	size_t nc = 0, i;

	for (i = 0; i < TB_MAXCONN; i++)
		conn[i].fd = -1;
	while (!tb_stop) {
		size_t np = 0;

		pf[np].fd = lfd;
		pf[np++].events = POLLIN;
		for (i = 0; i < nc; i++) {
			pf[np].fd = conn[i].fd;
			pf[np++].events = POLLIN;
		}
		if (poll(pf, np, 500) < 0)
			continue;
		if (pf[0].revents & POLLIN) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0 && nc < TB_MAXCONN) {
				conn[nc].fd = fd;
				conn[nc++].n = 0;
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (i = 0; i < nc; i++) {
			struct tb_conn *c = &conn[i];
			char *end;
			ssize_t r;

			if (!(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(c->fd, c->buf + c->n, sizeof(c->buf) - 1 - c->n);
			if (r > 0) {
				c->n += (size_t)r;
				c->buf[c->n] = 0;
			}
			while (r > 0 && (end = strstr(c->buf, "\r\n\r\n"))) {
				if (handle_request(c, (size_t)(end + 4 - c->buf))) {
					r = 0;
					break;
				}
				c->buf[c->n] = 0;
			}
			if (r <= 0 || c->n >= sizeof(c->buf) - 1) {
				close(c->fd);
				c->fd = -1;
			}
		}
		for (i = 0; i < nc;) { /* drop the closed ones */
			if (conn[i].fd < 0) {
				conn[i] = conn[--nc];
				conn[nc].fd = -1;
			} else {
				i++;
			}
		}
	}
	printf("tier-backend: worker %d requests %ld errors %ld\n", tb_port,
	       tb_requests, tb_errors);
	fflush(stdout);
}

static pid_t tb_spawn(int lfd, int port, const char *pidfile)
{
	pid_t p = fork();

	if (p == 0) {
		tb_term_handler();
		signal(SIGPIPE, SIG_IGN);
		tb_port = port;
		if (pipe(tb_wake))
			_exit(1);
		worker_loop(lfd);
		_exit(0);
	}
	if (p > 0 && pidfile) {
		FILE *f = fopen(pidfile, "a");

		if (f) {
			fprintf(f, "worker %d %d\n", port, (int)p);
			fclose(f);
		}
	}
	return p;
}

int main(int argc, char **argv)
{
	int lfd[16], port[16], nw = 0, c, i;
	pid_t pid[16];
	const char *pidfile = NULL;
	char *ports = NULL, *tok, *save;

	while ((c = getopt(argc, argv, "l:r:P:")) != -1) {
		if (c == 'l')
			ports = optarg;
		else if (c == 'r')
			tb_redis_port = atoi(optarg);
		else if (c == 'P')
			pidfile = optarg;
		else
			return 2;
	}
	if (!ports || !tb_redis_port) {
		fprintf(stderr, "usage: tier-backend -l PORT[,PORT...] -r "
				"REDISPORT [-P PIDFILE]\n");
		return 2;
	}
	tb_fault = getenv("TIER_FAULT");
	tb_fault_file = getenv("TIER_FAULT_FILE");
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "master %d\n", (int)getpid());
			fclose(f);
		}
	}
	for (tok = strtok_r(ports, ",", &save); tok && nw < 16;
	     tok = strtok_r(NULL, ",", &save)) {
		port[nw] = atoi(tok);
		lfd[nw] = tb_listen(port[nw]);
		if (lfd[nw] < 0) {
			perror("tier-backend: listen");
			return 1;
		}
		nw++;
	}
	tb_term_handler();
	for (i = 0; i < nw; i++)
		pid[i] = tb_spawn(lfd[i], port[i], pidfile);
	printf("tier-backend: ready %d workers\n", nw);
	fflush(stdout);
	while (!tb_stop) {
		int st;
		pid_t d = waitpid(-1, &st, 0);

		if (d < 0 && errno == EINTR)
			continue;
		if (d < 0)
			break;
		for (i = 0; i < nw; i++)
			if (pid[i] == d && !tb_stop) {
				fprintf(stderr, "tier-backend: worker %d (pid %d) "
						"died (%s %d), re-forked\n",
					port[i], (int)d,
					WIFSIGNALED(st) ? "signal" : "status",
					WIFSIGNALED(st) ? WTERMSIG(st)
							: WEXITSTATUS(st));
				pid[i] = tb_spawn(lfd[i], port[i], pidfile);
			}
	}
	for (i = 0; i < nw; i++)
		kill(pid[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
}
