/*
 * tests/apps/dist-front.c - the front end of the distributed scenario
 * (issue 9, "What it must show").  At its start, before it opens anything
 * else, it forks a worker child that it feeds over a pipe (work in one
 * pipe, results back in another); then it connects to the back end (TCP),
 * to the logger (UNIX stream socket) and makes a UDP socket for the
 * monitor, and serves clients on TCP, one connection at a time.  Each
 * request of a client:
 *
 *   client --request--> front --back-request--> back --back-reply--> front
 *   front --work (pipe)--> child --result (pipe)--> front
 *   front --log (UNIX)--> logger     front --heartbeat (UDP)--> monitor
 *   front --reply--> client
 *
 * Every message is checked by its receiver (tests/apps/dist.h).  A client's
 * STOP stops the whole system: the front end passes it to the back end,
 * the child, the logger and the monitor, then exits.  SIGTERM stops the
 * front end and its child only.
 *
 *   dist-front -l ADDR:PORT --back ADDR:PORT --log PATH --monitor ADDR:PORT
 *              [--corrupt SEQ]
 *
 * Port 0 picks one; the ready line says which:
 *   dist-front: ready ADDR PORT pid PID child PID
 * At the end, the child then the front end print
 *   dist-child: requests N recv BYTES sent BYTES ok
 *   dist-front: requests N client-recv B client-sent B back-sent B
 *     back-recv B child-sent B child-recv B log-sent B beats N beat-bytes B ok
 * --corrupt SEQ: every message the front end passes on for request SEQ
 * has one byte changed after its checksum (the back end must fail).
 */
#include <sys/un.h>
#include <sys/wait.h>

#include "tests/apps/dist.h"

static struct {
	long requests;
	size_t client_recv, client_sent, back_sent, back_recv;
	size_t child_sent, child_recv, log_sent, beats, beat_bytes;
} st;
static int back_fd, log_fd, udp_fd, work_w, res_r;
static struct sockaddr_in mon_sa;

/* ---- the child: work in, results out ---- */

__attribute__((noinline)) static int child_work(int in, int out, long *n,
						size_t *got, size_t *put)
{
	int type;
	uint32_t seq;
	size_t r = dist_recv(in, DK_WORK, 0, DT_REQ, &type, &seq);

	if (!r || type == DT_STOP) {
		*got += r;
		return 0;
	}
	*got += r;
	*put += dist_send(out, DT_REP, DK_RESULT, seq);
	(*n)++;
	return 1;
}

static void child_main(int in, int out)
{
	long n = 0;
	size_t got = 0, put = 0;

	dist_self = "dist-child";
	while (child_work(in, out, &n, &got, &put))
		;
	printf("dist-child: requests %ld recv %zu sent %zu ok\n", n, got, put);
	exit(0);
}

/* ---- the front end ---- */

__attribute__((noinline)) static void front_backend(uint32_t seq)
{
	int type;
	uint32_t s;

	st.back_sent += dist_send(back_fd, DT_REQ, DK_BACK_REQ, seq);
	st.back_recv += dist_recv(back_fd, DK_BACK_REP, seq, DT_REP, &type, &s);
	if (type != DT_REP)
		dist_die("the back end did not reply to %s", "a request");
}

__attribute__((noinline)) static void front_child(uint32_t seq)
{
	int type;
	uint32_t s;

	st.child_sent += dist_send(work_w, DT_REQ, DK_WORK, seq);
	st.child_recv += dist_recv(res_r, DK_RESULT, seq, DT_REP, &type, &s);
	if (type != DT_REP)
		dist_die("the child did not return %s", "a result");
}

__attribute__((noinline)) static void front_log(uint32_t seq)
{
	st.log_sent += dist_send(log_fd, DT_REQ, DK_LOG, seq);
}

__attribute__((noinline)) static void front_beat(int type, uint32_t seq)
{
	static unsigned char buf[sizeof(struct dist_hdr) + DIST_MAX];
	size_t n = dist_build(buf, type, DK_BEAT, seq,
			      type == DT_STOP ? 0 : dist_len(DK_BEAT, seq));
	ssize_t r = sendto(udp_fd, buf, n, 0, (struct sockaddr *)&mon_sa,
			   sizeof(mon_sa));

	if (r != (ssize_t)n)
		dist_die("sendto the monitor: %s", strerror(errno));
	if (type != DT_STOP)
		st.beats++;
	st.beat_bytes += n;
}

/* One request of a client: 1 served, 0 the client is gone, -1 stop. */
__attribute__((noinline)) static int front_request(int cfd)
{
	int type;
	uint32_t seq;
	size_t r = dist_recv(cfd, DK_REQUEST, 0, DT_REQ, &type, &seq);

	st.client_recv += r;
	if (!r)
		return 0;
	if (type == DT_STOP)
		return -1;
	front_backend(seq);
	front_child(seq);
	front_log(seq);
	front_beat(DT_REQ, seq);
	st.client_sent += dist_send(cfd, DT_REP, DK_REPLY, seq);
	st.requests++;
	return 1;
}

static int front_unix(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), tries;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	for (tries = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0;
	     tries++)
		if (tries == 50)
			dist_die("connect to the logger at %s: failed", path);
		else
			usleep(100000);
	return fd;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0", *back = NULL, *logp = NULL,
		   *mon = NULL;
	int work[2], res[2], lfd, i, stop = 0, status = 0;
	struct sockaddr_in got;
	char host[INET_ADDRSTRLEN];
	pid_t child;

	dist_self = "dist-front";
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-l") == 0)
			listen_at = argv[i + 1];
		else if (strcmp(argv[i], "--back") == 0)
			back = argv[i + 1];
		else if (strcmp(argv[i], "--log") == 0)
			logp = argv[i + 1];
		else if (strcmp(argv[i], "--monitor") == 0)
			mon = argv[i + 1];
		else if (strcmp(argv[i], "--corrupt") == 0)
			dist_corrupt = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (i != argc || !back || !logp || !mon)
		dist_die(
		    "usage: dist-front -l ADDR:PORT --back ADDR:PORT --log "
		    "PATH --monitor ADDR:PORT [--corrupt SEQ]%s",
		    "");
	/* the child first, before anything else is open */
	if (pipe(work) < 0 || pipe(res) < 0)
		dist_die("pipe: %s", strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		dist_die("fork: %s", strerror(errno));
	if (child == 0) {
		close(work[1]);
		close(res[0]);
		child_main(work[0], res[1]);
	}
	close(work[0]);
	close(res[1]);
	work_w = work[1];
	res_r = res[0];
	dist_signals();
	back_fd = dist_connect(back);
	log_fd = front_unix(logp);
	dist_addr(mon, &mon_sa);
	udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	lfd = dist_bind(SOCK_STREAM, listen_at, &got);
	inet_ntop(AF_INET, &got.sin_addr, host, sizeof(host));
	printf("dist-front: ready %s %d pid %d child %d\n", host,
	       ntohs(got.sin_port), (int)getpid(), (int)child);
	fflush(stdout);
	while (!stop && !dist_stop) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), r;

		if (cfd < 0) {
			if (errno == EINTR)
				continue;
			dist_die("accept: %s", strerror(errno));
		}
		while ((r = front_request(cfd)) > 0)
			;
		stop = r < 0;
		close(cfd);
	}
	if (stop) { /* the whole system */
		st.back_sent += dist_send(back_fd, DT_STOP, DK_BACK_REQ, 0);
		st.log_sent += dist_send(log_fd, DT_STOP, DK_LOG, 0);
		front_beat(DT_STOP, 0);
	}
	st.child_sent += dist_send(work_w, DT_STOP, DK_WORK, 0);
	close(work_w);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	printf("dist-front: requests %ld client-recv %zu client-sent %zu "
	       "back-sent %zu back-recv %zu child-sent %zu child-recv %zu "
	       "log-sent %zu beats %zu beat-bytes %zu %s\n",
	       st.requests, st.client_recv, st.client_sent, st.back_sent,
	       st.back_recv, st.child_sent, st.child_recv, st.log_sent,
	       st.beats, st.beat_bytes,
	       WIFEXITED(status) && !WEXITSTATUS(status) ? "ok"
							 : "child-failed");
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
