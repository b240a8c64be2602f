/*
 * share/drain.c - copying committed sub-buffers out of the rings while
 * the program runs (share/drain.h; the protocol is in share/ring.h).
 *
 * One thread, at nice -10 where allowed.  Each round it looks for new
 * ring files (when the directory's mtime has changed), then, for every
 * ring the agent created keep_all, appends the sub-buffers committed since
 * the last round to the ring file's spool and publishes how many it has
 * copied (drained).  It sleeps 0.2 ms after a round that copied something
 * and 2 ms after an idle one: a ring of 16 sub-buffers at fib's 700 MB/s
 * fills in about 10 ms.
 * A ring it cannot write (a full disk) is left: its agent drops records,
 * counted, and the program goes on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "share/drain.h"
#include "share/log.h"
#include "share/ring.h"

struct dring {
	char *name;
	int fd;
	struct propel_ring_hdr *h; /* NULL: not drained (flight, version 1) */
	size_t ring;               /* bytes of header + sub-buffers */
	uint64_t spooled;
	uint64_t made;             /* first lap: sub-buffers made ahead */
	int failed;
};

struct drain {
	char dir[512];
	pthread_t th;
	volatile int stop;
	struct dring *r;
	size_t n, cap;
	struct timespec mtime;
	struct drain_stats st;
};

static int drain_known(const struct drain *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->r[i].name, name))
			return 1;
	return 0;
}

/* Open a new ring; 0 when it is not ready yet (being created: try again
 * next round), 1 when it is known now (drained or not). */
static int drain_open(struct drain *d, const char *name)
{
	struct propel_ring_hdr hdr, *h = NULL;
	char path[1024];
	struct stat sb;
	struct dring *nr;
	size_t ring = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < PROPEL_RING_HDR_SIZE ||
	    pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    memcmp(hdr.magic, PROPEL_RING_MAGIC, 8) != 0 ||
	    propel_ring_check(&hdr, (size_t)sb.st_size, NULL)) {
		close(fd);
		return 0; /* the agent is still writing its header */
	}
	if (hdr.version >= 2 && hdr.keep_all) {
		ring = propel_ring_size(hdr.sub_count, hdr.sub_recs);
		h = mmap(NULL, ring, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (h == MAP_FAILED) {
			close(fd);
			return 0;
		}
	} else {
		close(fd);
		fd = -1;
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? 2 * d->cap : 64;

		nr = realloc(d->r, nc * sizeof(*nr));
		if (!nr) {
			if (h)
				munmap(h, ring);
			if (fd >= 0)
				close(fd);
			return 0;
		}
		d->r = nr;
		d->cap = nc;
	}
	nr = &d->r[d->n];
	memset(nr, 0, sizeof(*nr));
	nr->name = strdup(name);
	nr->fd = fd;
	nr->h = h;
	nr->ring = ring;
	if (h) /* a drain started late (recover) continues the spool */
		nr->spooled = ((size_t)sb.st_size - ring) /
			      propel_ring_sub_bytes(h);
	d->n++;
	d->st.rings++;
	return 1;
}

static void drain_scan(struct drain *d)
{
	struct stat sb;
	struct dirent *e;
	DIR *dir;
	int pending = 0;

	if (stat(d->dir, &sb) < 0)
		return;
	if (sb.st_mtim.tv_sec == d->mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == d->mtime.tv_nsec)
		return;
	dir = opendir(d->dir);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".ring") ||
		    drain_known(d, e->d_name))
			continue;
		if (!drain_open(d, e->d_name))
			pending = 1;
	}
	closedir(dir);
	if (!pending) /* else look again next round */
		d->mtime = sb.st_mtim;
}

/*
 * On a ring's first lap, make the pages of the next DRAIN_AHEAD
 * sub-buffers before the writer reaches them: allocating tmpfs pages is
 * two thirds of what a sub-buffer costs here (~210 us of 320 per 512
 * KiB), and the writer's own MADV_POPULATE_READ (the agent's
 * ring_populate) then finds them made and only maps them, in the
 * program's time.  Only once the writer has filled a sub-buffer: a thread
 * that records little gets nothing it does not use.  A refusal (/dev/shm
 * full) is the writer's to meet and count.
 */
#define DRAIN_AHEAD 4

static void drain_make_ahead(struct dring *r, uint64_t commits)
{
	struct propel_ring_hdr *h = r->h;
	uint64_t want = commits + 1 + DRAIN_AHEAD;

	if (!commits || r->made >= h->sub_count)
		return;
	if (want > h->sub_count)
		want = h->sub_count;
	if (r->made < commits + 1) /* the writer's own, up to its current */
		r->made = commits + 1;
	if (r->made >= want)
		return;
	if (madvise(propel_ring_sub(h, r->made),
		    (size_t)(want - r->made) * propel_ring_sub_bytes(h),
		    MADV_POPULATE_WRITE) < 0) {
		r->made = h->sub_count; /* no room, or an old kernel: stop */
		return;
	}
	r->made = want;
}

/* Copy ring r's newly committed sub-buffers; how many. */
static uint64_t drain_ring(struct drain *d, struct dring *r)
{
	struct propel_ring_hdr *h = r->h;
	uint64_t commits, n = 0;
	size_t sb;

	if (!h || r->failed)
		return 0;
	sb = propel_ring_sub_bytes(h);
	commits = __atomic_load_n(&h->commits, __ATOMIC_ACQUIRE);
	if (commits - r->spooled > h->sub_count) {
		/* the writer never begins sub-buffer k while k - drained >=
		 * sub_count: a header saying so is not an agent's (a damaged
		 * file), and copying "commits" sub-buffers would fill the
		 * disk.  Left as it is: ingest counts what is wrong with it. */
		r->failed = 1;
		return 0;
	}
	while (r->spooled < commits) {
		const char *p = (const char *)propel_ring_sub(h, r->spooled);
		off_t at = (off_t)(r->ring + r->spooled * sb);
		size_t done = 0;

		while (done < sb) {
			ssize_t w = pwrite(r->fd, p + done, sb - done,
					   at + (off_t)done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				r->failed = 1;
				d->st.failed++;
				/* the spool ends at its last whole one */
				if (ftruncate(r->fd, at) < 0) {
					/* ring walkers ignore a partial tail */
				}
				return n;
			}
			done += (size_t)w;
		}
		r->spooled++;
		__atomic_store_n(&h->drained, r->spooled, __ATOMIC_RELEASE);
		d->st.subs++;
		d->st.bytes += sb;
		n++;
	}
	drain_make_ahead(r, commits);
	return n;
}

/* One round: new rings, then every ring's new sub-buffers; how many. */
static uint64_t drain_round(struct drain *d)
{
	uint64_t copied = 0;

	drain_scan(d);
	for (size_t i = 0; i < d->n; i++)
		copied += drain_ring(d, &d->r[i]);
	return copied;
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;

	/* ahead of the programs it drains when the machine is busy (a
	 * raise needs CAP_SYS_NICE: without it the thread keeps its nice) */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10) < 0) {
		/* not permitted: as it was */
	}
	while (!d->stop) {
		struct timespec nap = { 0, 2 * 1000 * 1000 };

		if (drain_round(d))
			nap.tv_nsec = 200 * 1000;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int drain_start(const char *dir, struct drain **out, char **cause)
{
	struct drain *d = calloc(1, sizeof(*d));
	int err;

	*out = NULL;
	if (!d)
		return propel_cause(cause, -ENOMEM, "drain: out of memory");
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	err = pthread_create(&d->th, NULL, drain_main, d);
	if (err) {
		free(d);
		return propel_cause(cause, -err, "drain: cannot start: %s",
				    strerror(err));
	}
	*out = d;
	return 0;
}

static void drain_free(struct drain *d, struct drain_stats *stats)
{
	for (size_t i = 0; i < d->n; i++) {
		struct dring *r = &d->r[i];

		if (r->h)
			munmap(r->h, r->ring);
		if (r->fd >= 0)
			close(r->fd);
		free(r->name);
	}
	if (stats)
		*stats = d->st;
	free(d->r);
	free(d);
}

void drain_stop(struct drain *d, struct drain_stats *stats)
{
	if (!d)
		return;
	d->stop = 1;
	pthread_join(d->th, NULL);
	drain_free(d, stats);
}

int drain_once(const char *dir, struct drain_stats *stats)
{
	struct drain *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	drain_round(d);
	drain_free(d, stats);
	return 0;
}

int drain_mode_parse(const char *s)
{
	if (!strcmp(s, "full"))
		return 1;
	if (!strcmp(s, "flight"))
		return 0;
	return -1;
}

void drain_report(const char *verb, const struct drain_stats *st)
{
	char msg[256];

	/* the dropped records: ingest says how many (ingest_warning) */
	if (st->failed)
		snprintf(msg, sizeof(msg),
			 "%u ring%s could not be drained (disk full?): their "
			 "threads kept only what their rings held",
			 st->failed, st->failed > 1 ? "s" : "");
	else
		return;
	propel_report(verb, 0, msg);
}
