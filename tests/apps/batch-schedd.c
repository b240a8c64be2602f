/*
 * tests/apps/batch-schedd.c - the scheduler daemon of the batch system
 * (tests/apps/batch.h).  Serves one batch-submit at a time on TCP: every
 * job ad goes on the job queue (a pipe to itself, jobq_push); a
 * negotiation timer (every 20 ms) pops one job when no shadow runs,
 * claims the startd's slot for it (request_claim, over TCP) and forks a shadow (shadow_main), which activates the claim,
 * waits for the result, writes the completion record to batch-logd and
 * sends its notice back over a pipe.  The schedd passes
 * each notice on to the submitter.  A shadow that dies without a notice
 * (child_exit) is logged and its job requeued: with BATCH_FAULT=crash the
 * job runs twice.  A failed job holds the rest of the cluster.
 *
 *   batch-schedd -l ADDR:PORT --startd ADDR:PORT --log SOCK
 *
 * Ready line: "batch-schedd: ready ADDR PORT pid PID"; at SIGTERM:
 * "batch-schedd: jobs N runs R ok".
 */
#include "tests/apps/batch.h"

static const char *startd_at, *log_path;
static int jobq[2], queued, held, fault;
static long jobs, runs;
static volatile sig_atomic_t stop;
static volatile int sink;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static __attribute__((noinline)) void jobq_push(const struct batch_ad *ad)
{
	if (batch_write_all(jobq[1], ad, sizeof(*ad)) < 0)
		batch_die("job queue: %s", strerror(errno));
	queued++;
}

static __attribute__((noinline)) int jobq_pop(struct batch_ad *ad)
{
	if (batch_read_all(jobq[0], ad, sizeof(*ad)) != sizeof(*ad))
		batch_die("job queue: %s", "short read");
	queued--;
	return 0;
}

/* ---- the shadow (a child per run of a job) ---- */

static __attribute__((noinline)) void shadow_crash(void)
{
	volatile int *p = (volatile int *)(long)sink; /* NULL */

	*p = 1;
}

static __attribute__((noinline)) void log_termination(const struct batch_ad *ad,
						      const struct batch_result *r)
{
	char line[96];
	int fd = batch_unix_connect(log_path);

	snprintf(line, sizeof(line), "job %d.%d terminated value %lld",
		 ad->cluster, ad->proc, (long long)r->value);
	batch_log(fd, LOG_TERMINATE, ad->cluster, ad->proc, line,
		  strlen(line));
	close(fd);
}

static __attribute__((noinline)) int claim_startd(const struct batch_ad *ad,
						  struct batch_result *r)
{
	int fd = batch_tcp_connect(startd_at), ok = 0;

	if (batch_write_all(fd, ad, sizeof(*ad)) == sizeof(*ad) &&
	    batch_wait(fd, BATCH_LEASE_MS) &&
	    batch_read_all(fd, r, sizeof(*r)) == sizeof(*r) &&
	    r->magic == BATCH_MAGIC)
		ok = 1;
	close(fd);
	return ok;
}

static __attribute__((noinline)) void shadow_lease_expired(struct batch_notice *n)
{
	n->status = 1;
	n->value = -1;
}

static __attribute__((noinline)) void shadow_main(const struct batch_ad *ad,
						  int wfd)
{
	struct batch_result r;
	struct batch_notice n = { BATCH_MAGIC, ad->proc, 0, ad->runs + 1, 0 };

	if (claim_startd(ad, &r)) {
		log_termination(ad, &r);
		if (fault == BF_CRASH && ad->proc == batch_fault_job() &&
		    ad->runs == 0)
			shadow_crash(); /* after the completion record */
		n.value = r.value;
	} else {
		shadow_lease_expired(&n);
	}
	batch_write_all(wfd, &n, sizeof(n));
	_exit(0);
}

/* ---- the schedd ---- */

static __attribute__((noinline)) void notify_submitter(int cfd,
						       const struct batch_notice *n)
{
	batch_write_all(cfd, n, sizeof(*n));
}

static __attribute__((noinline)) void get_exception_string(char *buf,
							   size_t len, int status)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "shadow died on signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "shadow exited %d", WEXITSTATUS(status));
}

/* a shadow ended without its notice: log it, run the job again */
static __attribute__((noinline)) void child_exit(struct batch_ad *ad,
						 int status)
{
	char line[96];
	int fd;

	get_exception_string(line, sizeof(line), status);
	fd = batch_unix_connect(log_path);
	batch_log(fd, LOG_EXCEPTION, ad->cluster, ad->proc, line,
		  strlen(line));
	close(fd);
	ad->runs++;
	jobq_push(ad);
}

static __attribute__((noinline)) void hold_job(int cfd,
					       const struct batch_ad *ad)
{
	struct batch_notice n = { BATCH_MAGIC, ad->proc, 2, ad->runs, 0 };

	notify_submitter(cfd, &n);
}

/* claim the startd's slot for the job (the shadow activates it) */
static __attribute__((noinline)) int request_claim(const struct batch_ad *ad)
{
	struct batch_ad req = *ad;
	struct batch_result r;
	int fd = batch_tcp_connect(startd_at), ok;

	req.runs = -1;
	ok = batch_write_all(fd, &req, sizeof(req)) == sizeof(req) &&
	     batch_wait(fd, BATCH_LEASE_MS) &&
	     batch_read_all(fd, &r, sizeof(r)) == sizeof(r) &&
	     r.magic == BATCH_MAGIC;
	close(fd);
	return ok;
}

static __attribute__((noinline)) void run_shadow(int cfd, struct batch_ad *ad)
{
	struct batch_notice n;
	int p[2], status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		batch_die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		batch_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		shadow_main(ad, p[1]);
	}
	close(p[1]);
	runs++;
	if (batch_read_all(p[0], &n, sizeof(n)) == sizeof(n)) {
		waitpid(pid, &status, 0);
		notify_submitter(cfd, &n);
		if (n.status == 0)
			jobs++;
		else
			held = 1;
	} else {
		waitpid(pid, &status, 0);
		child_exit(ad, status);
	}
	close(p[0]);
}

/* the timer: one job when one is queued */
static __attribute__((noinline)) void negotiate(int cfd)
{
	struct batch_ad ad;

	sink++;
	if (!queued || cfd < 0)
		return;
	jobq_pop(&ad);
	if (held || !request_claim(&ad))
		hold_job(cfd, &ad);
	else
		run_shadow(cfd, &ad);
}

/* one message of the submitter: 1, 0 at its end */
static __attribute__((noinline)) int receive_job(int cfd)
{
	struct batch_ad ad;

	if (batch_read_all(cfd, &ad, sizeof(ad)) != sizeof(ad))
		return 0;
	if (ad.magic != BATCH_MAGIC)
		batch_die("bad job ad%s", "");
	if (ad.proc >= 0)
		jobq_push(&ad);
	return 1;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];
	int lfd, cfd = -1, i;

	batch_self = "batch-schedd";
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-l") == 0)
			listen_at = argv[i + 1];
		else if (strcmp(argv[i], "--startd") == 0)
			startd_at = argv[i + 1];
		else if (strcmp(argv[i], "--log") == 0)
			log_path = argv[i + 1];
		else
			break;
	}
	if (i != argc || !startd_at || !log_path)
		batch_die("usage: batch-schedd -l ADDR:PORT --startd ADDR:PORT "
			  "--log SOCK%s", "");
	fault = batch_fault();
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(jobq, O_CLOEXEC) < 0)
		batch_die("pipe: %s", strerror(errno));
	lfd = batch_tcp_listen(listen_at, &sa);
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("batch-schedd: ready %s %d pid %d\n", host, ntohs(sa.sin_port),
	       (int)getpid());
	fflush(stdout);
	while (!stop) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = cfd, .events = POLLIN } };
		int r = poll(p, cfd >= 0 ? 2 : 1, 20);

		if (r < 0 && errno != EINTR)
			batch_die("poll: %s", strerror(errno));
		if (r > 0 && (p[0].revents & POLLIN) && cfd < 0) {
			cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			held = 0;
		}
		if (r > 0 && cfd >= 0 && (p[1].revents & (POLLIN | POLLHUP)) &&
		    !receive_job(cfd)) {
			close(cfd);
			cfd = -1;
			while (queued) { /* the submitter left: drop its jobs */
				struct batch_ad ad;

				jobq_pop(&ad);
			}
		}
		if (r == 0)
			negotiate(cfd);
	}
	printf("batch-schedd: jobs %ld runs %ld ok\n", jobs, runs);
	return 0;
}
