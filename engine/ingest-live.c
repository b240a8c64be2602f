/*
 * engine/ingest-live.c - the session stored while the run goes (see
 * engine/ingest-live.h).
 *
 * States of the thread (live_main), each round:
 *   open    -> maps     live_open: the session file made, the transaction
 *                       and writers begun (ingest_dir_begin);
 *   maps    -> walking  live_maps reads the new whole lines of every map
 *                       file (ingest_map, on from where it stopped);
 *                       live_begin takes the first drained ring whose
 *                       process's P line is read, maps it with room to
 *                       grow (ingest_ring_open's reserve), calibrates,
 *                       and begins its walk (ingest_thread_begin);
 *   walking             live_walk reads the sub-buffers the drain has
 *                       copied since (ingest_walk_part), after reading
 *                       the maps again: the agent writes a function's F
 *                       line before any record can name it, so every id
 *                       in what was copied before the maps were read is
 *                       known;
 *   any     -> failed   an error: nothing more is done, the end drops it.
 * ingest_live_end stops the thread and reads on (ingest_dir_rest).
 */
#include <pthread.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include "engine/ingest-int.h"
#include "engine/ingest-live.h"
#include "share/clock.h"

#define PR_DOMAIN "ingest"

#define LIVE_NAP_NS (5 * 1000 * 1000) /* between rounds with nothing new */
/* address space for a spool that grows while it is read: walked live up
 * to this much, the rest at the end */
#define LIVE_RESERVE ((size_t)1 << 36)
#define LIVE_PART 8 /* sub-buffers read between looks at stop */
#define LIVE_MIN_FREE ((uint64_t)256 << 20) /* free space to begin with */

struct live_map {
	char *name;
	off_t seen; /* the file's size when last read */
};

struct ingest_live {
	char dir[512];
	char path[600];
	struct ingest in;
	struct ingest_stats st;
	struct session *s;
	struct ingest_walk w;
	struct ingest_spec sp;
	int begun, failed;
	struct live_map *maps;
	size_t nmaps;
	struct timespec mtime;
	pthread_t th;
	int running;
	volatile int stop;
	pthread_mutex_t mu; /* the nap between rounds, cut by stop */
	pthread_cond_t cv;
};

static void live_fail(struct ingest_live *lv, int err, char *cause)
{
	pr_dbg("live ingest given up: %s", cause ? cause : strerror(-err));
	free(cause);
	lv->failed = 1;
}

static void live_open(struct ingest_live *lv)
{
	struct ingest *in = &lv->in;
	struct statvfs vs;
	struct utsname un;
	char *cause = NULL;
	int err;

	/* where the rings are short of room the session is not made
	 * beside them: their spools need it more */
	if (statvfs(lv->dir, &vs) == 0 &&
	    (uint64_t)vs.f_bavail * vs.f_frsize < LIVE_MIN_FREE) {
		live_fail(lv, -ENOSPC, NULL);
		return;
	}
	err = session_open(lv->path, SESSION_CREATE, &lv->s, &cause);
	if (err) {
		lv->s = NULL;
		live_fail(lv, err, cause);
		return;
	}
	in->s = lv->s;
	in->db = session_db(lv->s);
	in->st = &lv->st;
	in->dir = lv->dir;
	in->live = 1;
	if (uname(&un) == 0)
		snprintf(in->host, sizeof(in->host), "%s", un.nodename);
	in->sy = symbols_new();
	err = in->sy ? ingest_dir_begin(in, &cause) : -ENOMEM;
	if (err)
		live_fail(lv, err, cause);
}

/* New map files, and the new whole lines of every one.  0 or -errno. */
static int live_maps(struct ingest_live *lv)
{
	char path[1024], *cause = NULL;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int err = 0;

	if (stat(lv->dir, &sb) == 0 &&
	    (sb.st_mtim.tv_sec != lv->mtime.tv_sec ||
	     sb.st_mtim.tv_nsec != lv->mtime.tv_nsec) &&
	    (d = opendir(lv->dir))) {
		lv->mtime = sb.st_mtim;
		while (!err && (de = readdir(d))) {
			size_t n = strlen(de->d_name), i;
			struct live_map *nm;

			if (n < 5 || strcmp(de->d_name + n - 4, ".map"))
				continue;
			for (i = 0; i < lv->nmaps; i++)
				if (!strcmp(lv->maps[i].name, de->d_name))
					break;
			if (i < lv->nmaps)
				continue;
			nm = realloc(lv->maps, (lv->nmaps + 1) * sizeof(*nm));
			if (!nm || !(nm[lv->nmaps].name = strdup(de->d_name)))
				err = -ENOMEM;
			if (nm)
				lv->maps = nm;
			if (!err)
				lv->maps[lv->nmaps++].seen = 0;
		}
		closedir(d);
	}
	for (size_t i = 0; !err && i < lv->nmaps; i++) {
		struct live_map *m = &lv->maps[i];

		snprintf(path, sizeof(path), "%s/%s", lv->dir, m->name);
		if (stat(path, &sb) < 0 || sb.st_size <= m->seen)
			continue;
		m->seen = sb.st_size;
		err = ingest_map(&lv->in, lv->dir, m->name, &cause);
	}
	if (err)
		live_fail(lv, err, cause);
	return err;
}

/* name: a drained ring (version 2, keep_all, a sane header), begun 50 ms
 * ago or more, whose process's P line has been read. */
static int live_ring_ready(struct ingest_live *lv, const char *name)
{
	struct propel_ring_hdr h;
	const struct ingest_proc *p;
	char path[1024], key[256];
	const char *dot = strchr(name, '.');
	struct stat sb;
	int fd, ok;

	dot = dot ? strchr(dot + 1, '.') : NULL;
	if (!dot || (size_t)(dot - name) >= sizeof(key))
		return 0;
	memcpy(key, name, dot - name);
	key[dot - name] = 0;
	p = ingest_proc_find(&lv->in, key);
	if (!p || !p->map_have_p)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", lv->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = fstat(fd, &sb) == 0 &&
	     (size_t)sb.st_size >= PROPEL_RING_HDR_SIZE &&
	     pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	     !memcmp(h.magic, PROPEL_RING_MAGIC, 8) && h.version >= 2 &&
	     h.version <= PROPEL_RING_VERSION && h.keep_all &&
	     !propel_ring_check(&h, (size_t)sb.st_size, NULL) &&
	     /* its first pair and ours span the calibration's 50 ms:
	      * ingest_calibrate does not wait (nor a stop for it) */
	     h.mono0_ns && (int64_t)(propel_mono_ns() - h.mono0_ns) >=
				   INGEST_MIN_CAL_NS;
	close(fd);
	return ok;
}

/* The first ring that is ready: mapped, the session calibrated, its walk
 * begun. */
static void live_begin(struct ingest_live *lv)
{
	struct ingest *in = &lv->in;
	char **names = NULL, *cause = NULL;
	size_t n = 0, i;
	int err;

	err = ingest_dir_names(lv->dir, &names, &n);
	for (i = 0; !err && i < n; i++) {
		size_t len = strlen(names[i]);

		if (len < 6 || strcmp(names[i] + len - 5, ".ring") ||
		    !live_ring_ready(lv, names[i]))
			continue;
		err = ingest_ring_open(in, lv->dir, names[i], LIVE_RESERVE,
				       &cause);
		if (!err && in->nrings != 1)
			err = -EINVAL; /* (it changed under us) */
		if (!err) {
			ingest_calibrate(in);
			err = ingest_thread_begin(in, &in->rings[0], &lv->w,
						  &lv->sp);
		}
		if (!err)
			lv->begun = 1;
		pr_log("store", "live: begun at %" PRIu64 " sub-buffer(s) "
		       "drained, %.1f ms after the ring's start",
		       in->nrings ? in->rings[0].h->drained : 0,
		       in->nrings ? (double)(propel_mono_ns() -
					     in->rings[0].h->mono0_ns) / 1e6
				  : 0.0);
		break;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (err)
		live_fail(lv, err, cause);
}

/* The pages of bytes a..b of r, walked, out of the mapping (the file
 * keeps them: a walk again, should it be undone, reads them anew): the
 * end's munmap of a spool of hundreds of MB no longer waits for them. */
static void live_unmap(const struct ingest_ring *r, size_t a, size_t b)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	a = (a + pg - 1) / pg * pg;
	b = b / pg * pg;
	if (b > a && madvise((char *)r->h + a, b - a, MADV_DONTNEED) < 0) {
		/* kept mapped: the end unmaps them */
	}
}

/* What the drain has copied since the last round.  1: some was read. */
static int live_walk(struct ingest_live *lv)
{
	const struct ingest_ring *r = &lv->in.rings[0];
	const struct propel_ring_hdr *h = r->h;
	size_t ring = propel_ring_size(h->sub_count, h->sub_recs);
	uint64_t to = __atomic_load_n(&h->drained, __ATOMIC_ACQUIRE);
	uint64_t max = (r->maplen - ring) / propel_ring_sub_bytes(h), from;
	int err;

	if (to > max)
		to = max;
	/* a bounded part: once the run has ended the caller, at the
	 * program's priority, reads the rest */
	if (to > lv->w.skip + LIVE_PART)
		to = lv->w.skip + LIVE_PART;
	if (to <= lv->w.skip)
		return 0;
	/* after reading how far: the lines of every id in those */
	if (live_maps(lv))
		return 0;
	from = lv->w.skip;
	err = ingest_walk_part(&lv->w, from, to);
	if (err) {
		live_fail(lv, err, NULL);
		return 0;
	}
	live_unmap(r, ring + from * propel_ring_sub_bytes(h),
		   ring + to * propel_ring_sub_bytes(h));
	return 1;
}

static void *live_main(void *arg)
{
	struct ingest_live *lv = arg;

	/* behind the drain (nice -10), beside the program: the work is the
	 * user's wait either way, done now where a core is idle */
	live_open(lv);
	while (!lv->stop) {
		struct timespec until;

		if (!lv->failed && !lv->begun && !live_maps(lv))
			live_begin(lv);
		if (!lv->failed && lv->begun && live_walk(lv))
			continue;
		/* caught up: a few of the lookups left for later */
		if (!lv->failed && lv->in.defer_done < lv->in.ndefer) {
			if (ingest_defer_run(&lv->in, 16))
				live_fail(lv, -EIO, NULL);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += LIVE_NAP_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&lv->mu);
		while (!lv->stop &&
		       pthread_cond_timedwait(&lv->cv, &lv->mu, &until) == 0)
			;
		pthread_mutex_unlock(&lv->mu);
	}
	return NULL;
}

int ingest_live_start(const char *dir, struct ingest_live **out)
{
	struct ingest_live *lv = calloc(1, sizeof(*lv));
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (!lv)
		return -ENOMEM;
	snprintf(lv->dir, sizeof(lv->dir), "%s", dir);
	snprintf(lv->path, sizeof(lv->path), "%s/%s", dir, INGEST_LIVE_DB);
	pthread_mutex_init(&lv->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lv->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&lv->th, NULL, live_main, lv);
	if (err) {
		pthread_cond_destroy(&lv->cv);
		pthread_mutex_destroy(&lv->mu);
		free(lv);
		return -err;
	}
	lv->running = 1;
	*out = lv;
	return 0;
}

static void live_stop(struct ingest_live *lv)
{
	if (!lv->running)
		return;
	pthread_mutex_lock(&lv->mu);
	lv->stop = 1;
	pthread_cond_signal(&lv->cv);
	pthread_mutex_unlock(&lv->mu);
	pthread_join(lv->th, NULL);
	pthread_cond_destroy(&lv->cv);
	pthread_mutex_destroy(&lv->mu);
	lv->running = 0;
}

/* Everything dropped but the symbols (returned); the file removed. */
static struct symbols *live_drop(struct ingest_live *lv)
{
	struct symbols *sy = lv->in.sy;

	if (lv->s) {
		if (lv->in.db)
			ingest_dir_end(&lv->in, -ECANCELED, NULL);
		session_close(lv->s);
		unlink(lv->path);
	}
	for (size_t i = 0; i < lv->nmaps; i++)
		free(lv->maps[i].name);
	free(lv->maps);
	free(lv);
	return sy;
}

/* The live ring mapped to its end, should it have outgrown the reserve. */
static int live_remap(struct ingest_ring *r)
{
	struct stat sb;
	void *map;
	int fd = open(r->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	if ((size_t)sb.st_size > r->maplen) {
		map = mmap(NULL, sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			close(fd);
			return -ENOMEM;
		}
		munmap((void *)r->h, r->maplen);
		r->h = map;
		r->maplen = sb.st_size;
	}
	close(fd);
	r->size = sb.st_size;
	return 0;
}

int ingest_live_end(struct ingest_live *lv, struct session **s,
		    struct ingest_stats *st, struct symbols **sy,
		    char **cause)
{
	struct ingest *in = &lv->in;
	char **names = NULL;
	size_t n = 0, i;
	int err;

	*s = NULL;
	*sy = NULL;
	live_stop(lv);
	if (lv->failed || !lv->s) {
		*sy = live_drop(lv);
		return -EAGAIN;
	}
	in->live = 0;
	in->t_start = propel_mono_ns();
	pr_log("store", "live: %" PRIu64 " sub-buffer(s) stored as the run "
	       "went", lv->w.skip);
	err = lv->begun ? live_remap(&in->rings[0]) : 0;
	if (!err)
		err = ingest_dir_names(lv->dir, &names, &n);
	if (!err)
		err = ingest_dir_rest(in, names, n, lv->begun ? &lv->w : NULL,
				      lv->begun ? &lv->sp : NULL, cause);
	err = ingest_dir_end(in, err, cause);
	in->db = NULL; /* (ended) */
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	*st = lv->st;
	if (err) {
		/* (a full disk, most likely): dropped, its room freed, and
		 * ingested as before -- into the caller's file */
		pr_dbg("live ingest: the rest failed (%s): ingested again",
		       cause && *cause ? *cause : strerror(-err));
		if (cause) {
			free(*cause);
			*cause = NULL;
		}
		*sy = live_drop(lv);
		return -EAGAIN;
	}
	*s = lv->s;
	lv->s = NULL;
	*sy = live_drop(lv);
	return 0;
}

void ingest_live_abort(struct ingest_live *lv)
{
	if (!lv)
		return;
	live_stop(lv);
	symbols_free(live_drop(lv));
}
