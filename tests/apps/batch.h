/*
 * tests/apps/batch.h - what the batch system's programs share
 * (batch-submit.c, batch-schedd.c, batch-startd.c, batch-logd.c): a small
 * distributed batch scheduler shaped like Condor as the self-propelled
 * paper (§5) diagnoses it.
 *
 *   batch-submit --TCP--> batch-schedd: one job ad per job of a cluster
 *   batch-schedd: queues each ad (a pipe to itself: jobq_push/jobq_pop),
 *     a negotiation timer pops one at a time, claims the startd's slot
 *     (TCP) and forks a shadow
 *   shadow --TCP--> batch-startd: the ad; the startd reports its slot to
 *     the log daemon (batch-logd, UNIX) and forks a starter; the starter
 *     forks the job, which writes its output file and its result (a pipe)
 *   starter --TCP--> shadow: the result; the shadow writes the completion
 *     record to batch-logd (UNIX) and its notice to the schedd (a pipe)
 *   batch-schedd --TCP--> batch-submit: one notice per job
 *
 * Faults, by environment (BATCH_FAULT in every program's environment):
 *   perbatch  batch-submit registers the output file as a per-cluster
 *             attribute (set_transfer_files): every job after the first
 *             writes the first job's output file; theirs are missing
 *   crash     the shadow of job BATCH_FAULT_JOB (default 2) dies of
 *             SIGSEGV right after its completion record, on its first
 *             run; the schedd (child_exit) requeues the job: it runs twice
 *   stall     batch-logd stops reading the startd after its first slot
 *             ad; the startd blocks for ever in its next one (a 64 KiB
 *             write into a small socket buffer); the job's shadow gives
 *             up after its lease, the schedd holds the rest of the cluster
 *
 * Every message is a fixed-size struct read whole (batch_read_all), so
 * every recv matches one send.  Header-only: each program is one .c file
 * plus this.
 */
#ifndef PROPEL_TESTS_BATCH_H
#define PROPEL_TESTS_BATCH_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define BATCH_FN static __attribute__((unused, noinline))
#define BATCH_MAGIC 0x62617463u /* "batc" */
#define BATCH_SLOTAD (64 * 1024)
#define BATCH_LEASE_MS 1500

enum batch_fault { BF_NONE, BF_PERBATCH, BF_CRASH, BF_STALL };

struct batch_ad {
	uint32_t magic;
	int32_t cluster, proc, runs; /* proc -1: the end of the cluster */
	int32_t arg;
	char owner[16], cmd[32];
	char out[160]; /* the output file */
};

struct batch_result {
	uint32_t magic;
	int32_t proc, status;
	int64_t value;
};

/* schedd -> submit; shadow -> schedd */
struct batch_notice {
	uint32_t magic;
	int32_t proc, status, runs; /* status: 0 done, 1 failed, 2 held */
	int64_t value;
};

enum { LOG_SLOT = 1, LOG_EXECUTE, LOG_TERMINATE, LOG_EXCEPTION };

/* -> batch-logd: a header, then len bytes */
struct batch_log {
	uint32_t magic;
	int32_t kind, cluster, proc;
	uint32_t len;
};

static const char *batch_self = "batch";

BATCH_FN void batch_die(const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", batch_self);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(2);
}

/* the same calls whatever the fault, so that a good run's coverage does
 * not differ from a faulty one's in here */
BATCH_FN int batch_fault(void)
{
	static const char *const name[] = { "none", "perbatch", "crash",
					    "stall" };
	const char *f = getenv("BATCH_FAULT");
	int i, found = -1;

	if (!f || !*f)
		f = "none";
	for (i = 0; i < 4; i++)
		if (strcmp(f, name[i]) == 0)
			found = i;
	if (found < 0)
		batch_die("BATCH_FAULT=%s: none, perbatch, crash or stall", f);
	return found;
}

BATCH_FN int batch_fault_job(void)
{
	const char *j = getenv("BATCH_FAULT_JOB");

	return j && *j ? atoi(j) : 2;
}

/* n bytes, or 0 at the end of the stream (-1 on an error) */
BATCH_FN ssize_t batch_read_all(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

BATCH_FN ssize_t batch_write_all(int fd, const void *p, size_t n)
{
	size_t put = 0;

	while (put < n) {
		ssize_t r = write(fd, (const char *)p + put, n - put);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		put += (size_t)r;
	}
	return (ssize_t)put;
}

/* fd readable within ms: 1, 0 on a timeout */
BATCH_FN int batch_wait(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

BATCH_FN int batch_unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 16) < 0)
		batch_die("cannot listen on %s", path);
	return fd;
}

BATCH_FN int batch_unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		batch_die("cannot connect to %s", path);
	return fd;
}

/* "ADDR:PORT" */
BATCH_FN void batch_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		batch_die("bad address %s", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		batch_die("bad address %s", s);
}

/* A TCP listener on "ADDR:PORT" (port 0: picked); *sa says which. */
BATCH_FN int batch_tcp_listen(const char *at, struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	batch_addr(at, sa);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)sa, &sl) < 0)
		batch_die("cannot listen on %s", at);
	return fd;
}

BATCH_FN int batch_tcp_connect(const char *at)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	batch_addr(at, &sa);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		batch_die("cannot connect to %s", at);
	return fd;
}

/* One record to the log daemon. */
BATCH_FN int batch_log(int fd, int kind, int cluster, int proc,
		       const void *body, size_t len)
{
	struct batch_log h = { BATCH_MAGIC, kind, cluster, proc,
			       (uint32_t)len };

	if (batch_write_all(fd, &h, sizeof(h)) < 0)
		return -1;
	return len && batch_write_all(fd, body, len) < 0 ? -1 : 0;
}

#endif
