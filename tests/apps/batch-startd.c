/*
 * tests/apps/batch-startd.c - the execution daemon of the batch system
 * (tests/apps/batch.h).  On TCP, one message per connection:
 * the schedd's claim request (an ad with runs -1: grant_claim answers with
 * a claim id), or the shadow's job ad, which activates the claim: the
 * startd reports its slot to batch-logd
 * (update_collector: a 64 KiB slot ad over a UNIX stream with a small
 * send buffer) and forks a starter for the job.  The starter forks the
 * job, which computes its value, writes it to its output file (the ad's)
 * and sends its result up a pipe; the starter passes it to the shadow.
 *
 *   batch-startd -l ADDR:PORT --log SOCK
 *
 * Ready line: "batch-startd: ready ADDR PORT pid PID"; at SIGTERM:
 * "batch-startd: claims N ok".  With BATCH_FAULT=stall batch-logd stops
 * reading this daemon's slot ads after the first: the second blocks for
 * ever in write.
 */
#include "tests/apps/batch.h"

static const char *log_path;
static int logfd = -1;
static long claims;
static volatile sig_atomic_t stop;
static char slot_ad[BATCH_SLOTAD];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- the job (a child of the starter) ---- */

static __attribute__((noinline)) int64_t checksum(int arg)
{
	int64_t v = arg;
	int i;

	for (i = 0; i < 1000; i++)
		v = (v * 1103515245 + 12345) % 2147483647;
	return v;
}

static __attribute__((noinline)) int write_output(const char *path,
						  int proc, int64_t v)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "job %d value %lld\n", proc, (long long)v);
	return fclose(f);
}

static __attribute__((noinline)) void job_main(const struct batch_ad *ad,
					       int wfd)
{
	struct batch_result r = { BATCH_MAGIC, ad->proc, 0, checksum(ad->arg) };

	if (write_output(ad->out, ad->proc, r.value) < 0)
		r.status = 1;
	batch_write_all(wfd, &r, sizeof(r));
	_exit(0);
}

/* ---- the starter (a child of the startd per claim) ---- */

static __attribute__((noinline)) void starter_main(const struct batch_ad *ad,
						   int sfd)
{
	struct batch_result r = { BATCH_MAGIC, ad->proc, 1, -1 };
	int p[2], status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		_exit(1);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		job_main(ad, p[1]);
	}
	close(p[1]);
	if (pid > 0 && batch_read_all(p[0], &r, sizeof(r)) != sizeof(r))
		r.status = 1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	batch_write_all(sfd, &r, sizeof(r));
	_exit(0);
}

/* ---- the startd ---- */

static __attribute__((noinline)) void update_collector(const struct batch_ad *ad)
{
	int sz = 4096;

	if (logfd < 0) {
		logfd = batch_unix_connect(log_path);
		setsockopt(logfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	memset(slot_ad, 'a' + ad->proc % 26, sizeof(slot_ad));
	batch_log(logfd, LOG_SLOT, ad->cluster, ad->proc, slot_ad,
		  sizeof(slot_ad));
}

static __attribute__((noinline)) void spawn_starter(const struct batch_ad *ad,
						    int sfd)
{
	pid_t pid = fork();

	if (pid == 0)
		starter_main(ad, sfd);
}

/* the schedd's claim request (runs -1): the slot's claim id */
static __attribute__((noinline)) void grant_claim(int sfd,
						  const struct batch_ad *ad)
{
	struct batch_result r = { BATCH_MAGIC, ad->proc, 0,
				  1000 + claims };

	batch_write_all(sfd, &r, sizeof(r));
}

static __attribute__((noinline)) void handle_claim(int sfd)
{
	struct batch_ad ad;

	if (batch_read_all(sfd, &ad, sizeof(ad)) != sizeof(ad) ||
	    ad.magic != BATCH_MAGIC)
		return;
	if (ad.runs < 0) {
		grant_claim(sfd, &ad);
		return;
	}
	claims++;
	update_collector(&ad);
	spawn_starter(&ad, sfd);
}

static __attribute__((noinline)) void reap_starters(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];
	int lfd, i;

	batch_self = "batch-startd";
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-l") == 0)
			listen_at = argv[i + 1];
		else if (strcmp(argv[i], "--log") == 0)
			log_path = argv[i + 1];
		else
			break;
	}
	if (i != argc || !log_path)
		batch_die("usage: batch-startd -l ADDR:PORT --log SOCK%s", "");
	batch_fault();
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	lfd = batch_tcp_listen(listen_at, &sa);
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("batch-startd: ready %s %d pid %d\n", host, ntohs(sa.sin_port),
	       (int)getpid());
	fflush(stdout);
	while (!stop) {
		if (batch_wait(lfd, 50)) {
			int sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (sfd >= 0) {
				handle_claim(sfd);
				close(sfd);
			}
		}
		reap_starters();
	}
	printf("batch-startd: claims %ld ok\n", claims);
	return 0;
}
