/*
 * tests/apps/batch-logd.c - the job log and slot collector of the batch
 * system (tests/apps/batch.h).  On its UNIX socket, many connections at
 * once (poll): records from shadows and the schedd (termination,
 * exception) are appended to the job log FILE, one line each; slot ads
 * from the startd are counted.  A flush timer runs every 50 ms.
 *
 *   batch-logd -l SOCK -f FILE
 *
 * Ready line: "batch-logd: ready SOCK pid PID"; at SIGTERM:
 * "batch-logd: records N slots M ok".  With BATCH_FAULT=stall, after the
 * first slot ad of a connection it stops polling that connection
 * (throttle_peer, which never resumes it): the startd blocks writing.
 */
#include "tests/apps/batch.h"

#define MAXC 64

static FILE *logf;
static long records, slots;
static int fault;
static volatile sig_atomic_t stop;
static volatile int sink;
static char body[BATCH_SLOTAD];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static __attribute__((noinline)) void append_record(const struct batch_log *h,
						    const char *text)
{
	static const char *const kind[] = { "?", "slot", "execute",
					    "terminate", "exception" };

	fprintf(logf, "%s %d.%d %s\n", kind[h->kind], h->cluster, h->proc,
		text);
	records++;
}

/* the bug: a peer sending too much is paused, never resumed */
static __attribute__((noinline)) void throttle_peer(struct pollfd *p)
{
	p->events = 0;
}

static __attribute__((noinline)) void collect_slot(const struct batch_log *h)
{
	sink += h->proc;
	slots++;
}

/* one record: 1, 0 at the end of the connection */
static __attribute__((noinline)) int read_record(struct pollfd *p)
{
	struct batch_log h;

	if (batch_read_all(p->fd, &h, sizeof(h)) != sizeof(h) ||
	    h.magic != BATCH_MAGIC || h.len >= sizeof(body) + 1 ||
	    batch_read_all(p->fd, body, h.len) != (ssize_t)h.len)
		return 0;
	if (h.kind == LOG_SLOT) {
		collect_slot(&h);
		if (fault == BF_STALL)
			throttle_peer(p);
	} else if (h.kind > LOG_SLOT && h.kind <= LOG_EXCEPTION) {
		body[h.len < 200 ? h.len : 200] = 0;
		append_record(&h, body);
	}
	return 1;
}

static __attribute__((noinline)) void flush_log(void)
{
	fflush(logf);
}

int main(int argc, char **argv)
{
	const char *path = NULL, *file = NULL;
	struct pollfd p[MAXC];
	int n = 1, i;

	batch_self = "batch-logd";
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-l") == 0)
			path = argv[i + 1];
		else if (strcmp(argv[i], "-f") == 0)
			file = argv[i + 1];
		else
			break;
	}
	if (i != argc || !path || !file)
		batch_die("usage: batch-logd -l SOCK -f FILE%s", "");
	fault = batch_fault();
	signal(SIGTERM, on_term);
	logf = fopen(file, "a");
	if (!logf)
		batch_die("cannot open %s", file);
	p[0].fd = batch_unix_listen(path);
	p[0].events = POLLIN;
	printf("batch-logd: ready %s pid %d\n", path, (int)getpid());
	fflush(stdout);
	while (!stop) {
		int r = poll(p, (nfds_t)n, 50);

		if (r < 0 && errno != EINTR)
			batch_die("poll: %s", strerror(errno));
		if (r <= 0) {
			flush_log();
			continue;
		}
		if ((p[0].revents & POLLIN) && n < MAXC) {
			int fd = accept4(p[0].fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				p[n].fd = fd;
				p[n].events = POLLIN;
				p[n++].revents = 0;
			}
		}
		for (i = 1; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP)) ||
			    read_record(&p[i]))
				continue;
			close(p[i].fd);
			p[i--] = p[--n];
		}
	}
	flush_log();
	printf("batch-logd: records %ld slots %ld ok\n", records, slots);
	return 0;
}
