/*
 * engine/ingest-dir.c - a session directory into the session store: the
 * order of work that engine/ingest.c's note describes (maps, rings,
 * calibration, each ring's walk, the processes' ends, one transaction),
 * for ingest_dir() after a run and, begun while the run goes, for
 * engine/ingest-live.c.  Shares engine/ingest-int.h with ingest.c.
 */
#include <sys/utsname.h>

#include "engine/ingest-fault.h"
#include "engine/ingest-int.h"
#include "share/clock.h"

#define PR_DOMAIN "ingest"

/* PROPEL_DEBUG=store: the ms since the start of storing, per phase */
#define STORE_T(fmt, ...)                                                  \
	pr_log("store", "%.1f ms " fmt, (propel_mono_ns() - t_start) / 1e6, \
	       ##__VA_ARGS__)

/* ---- rings ---- */

/* reserve: the length mapped, past the file's end, for a spool that
 * grows while it is read (engine/ingest-live.c); 0: the file's size. */
int ingest_ring_open(struct ingest *in, const char *dir, const char *name,
		     size_t reserve, char **cause)
{
	char path[4096], key[256];
	const struct propel_ring_hdr *h;
	struct ingest_ring *nr;
	struct ingest_proc *p;
	const char *dot;
	struct stat sb;
	size_t len;
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		in->st->rings_corrupt++;
		return 0;
	}
	if ((size_t)sb.st_size < 12) {
		close(fd);
		in->st->rings_truncated++;
		return 0;
	}
	/* a big one (a spool) is mapped ahead of the walk instead
	 * (engine/ingest-fault.h) */
	len = reserve > (size_t)sb.st_size ? reserve : (size_t)sb.st_size;
	map = mmap(NULL, len, PROT_READ,
		   MAP_SHARED | (len < INGEST_FAULT_MIN ? MAP_POPULATE : 0),
		   fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		in->st->rings_corrupt++;
		return 0;
	}
	h = map;
	if (memcmp(h->magic, PROPEL_RING_MAGIC, 8) != 0) {
		static const char zero[8];

		/* a thread's ring the agent had made but not begun when its
		 * process died: nothing was in it */
		if (!memcmp(h->magic, zero, 8) && h->version == 0)
			in->st->rings_unbegun++;
		else
			in->st->rings_corrupt++;
		goto skip;
	}
	if (h->version > PROPEL_RING_VERSION) {
		in->st->rings_newer++;
		goto skip;
	}
	if ((size_t)sb.st_size < PROPEL_RING_HDR_SIZE) {
		in->st->rings_truncated++;
		goto skip;
	}
	if (propel_ring_check(h, sb.st_size, NULL)) {
		if (h->hdr_size == PROPEL_RING_HDR_SIZE && h->sub_count &&
		    h->sub_recs && h->sub_count <= (1u << 16) &&
		    h->sub_recs <= (1u << 26))
			in->st->rings_truncated++;
		else
			in->st->rings_corrupt++;
		goto skip;
	}
	/* key = "<pid>.<nonce>" = name up to its second dot */
	dot = strchr(name, '.');
	dot = dot ? strchr(dot + 1, '.') : NULL;
	if (!dot || (size_t)(dot - name) >= sizeof(key)) {
		in->st->rings_corrupt++;
		goto skip;
	}
	memcpy(key, name, dot - name);
	key[dot - name] = 0;
	p = ingest_proc_find(in, key);
	if (!p) {
		int err;

		in->st->orphan_rings++;
		p = ingest_proc_new(in, key);
		if (!p) {
			munmap(map, len);
			return -ENOMEM;
		}
		p->pid = h->pid;
		p->has_e = 0;
		err = ingest_proc_insert(in, p, strchr(key, '.') + 1, NULL);
		if (err) {
			munmap(map, len);
			return ingest_sql_err(in, cause);
		}
	}
	nr = realloc(in->rings, (in->nrings + 1) * sizeof(*nr));
	if (!nr) {
		munmap(map, len);
		return -ENOMEM;
	}
	in->rings = nr;
	nr = &in->rings[in->nrings++];
	nr->path = strdup(path);
	nr->proc = p;
	nr->h = h;
	nr->size = sb.st_size;
	nr->maplen = len;
	return 0;
skip:
	pr_dbg("%s: skipped", path);
	munmap(map, len);
	return 0;
}

int ingest_ring_cmp(const void *a, const void *b)
{
	const struct ingest_ring *x = a, *y = b;

	if (x->h->pid != y->h->pid)
		return x->h->pid < y->h->pid ? -1 : 1;
	if (x->h->tid != y->h->tid)
		return x->h->tid < y->h->tid ? -1 : 1;
	if (x->h->tsc0 != y->h->tsc0)
		return x->h->tsc0 < y->h->tsc0 ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* One (tsc, ns) pair read as close together as we can: the narrowest of
 * a few (a preemption between the reads skews the rate). */
static void ingest_pair(uint64_t *tsc, uint64_t *ns)
{
	propel_clock_pair(tsc, ns, 8, 0, propel_mono_ns);
}

/*
 * Every thread of a host reads one TSC, so one anchor dates them all --
 * a ring's own pair (rdtsc, then the clock) is late by whatever came
 * between the two reads (a preemption, a slow clock_gettime), and
 * threads dated by their own pairs could disagree by that much: a
 * wake-up seen before the call that caused it.  The anchor is the pair
 * read with the least delay: the one that puts the clock earliest for
 * its TSC (the smallest mono - tsc * ns_per_tick) among the rings' first
 * and last pairs.
 */
static void ingest_anchor(struct ingest *in)
{
	double best = 0;
	int have = 0;

	for (size_t i = 0; i < in->nrings; i++) {
		const struct propel_ring_hdr *h = in->rings[i].h;
		uint64_t tsc[2] = { h->tsc0, h->tsc_last };
		uint64_t ns[2] = { h->mono0_ns, h->mono_last_ns };

		for (int k = 0; k < 2; k++) {
			double off;

			if (!ns[k] || !tsc[k])
				continue;
			off = (double)ns[k] - (double)tsc[k] * in->ns_per_tick;
			if (!have || off < best) {
				best = off;
				have = 1;
				in->anchor_tsc = tsc[k];
				in->anchor_ns = (int64_t)ns[k];
			}
		}
	}
	if (!have) { /* no pair at all: this host's clock now */
		uint64_t t, n;

		ingest_pair(&t, &n);
		in->anchor_tsc = t;
		in->anchor_ns = (int64_t)n;
	}
}

/*
 * The session's TSC rate: from the calibration pairs in the ring headers
 * when the earliest and latest span at least 50 ms, else measured here
 * (same host, invariant TSC) over 50 ms.  While the run goes (in->live)
 * the latest pair is one read here.
 */
void ingest_calibrate(struct ingest *in)
{
	uint64_t t0 = 0, m0 = 0, t1 = 0, m1 = 0, ta, na, tb, nb;
	struct timespec req = { 0, 50000000 };
	size_t i;

	for (i = 0; i < in->nrings; i++) {
		const struct propel_ring_hdr *h = in->rings[i].h;

		if (h->mono0_ns && (!m0 || h->mono0_ns < m0)) {
			m0 = h->mono0_ns;
			t0 = h->tsc0;
		}
		if (h->mono_last_ns && h->mono_last_ns > m1) {
			m1 = h->mono_last_ns;
			t1 = h->tsc_last;
		}
	}
	/* live (engine/ingest-live.c): the ring is being written, its last
	 * pair is not yet; the first one and one read here, 50 ms on */
	if (in->live && m0 && t0 && !(m1 > m0 && (int64_t)(m1 - m0) >=
				      INGEST_MIN_CAL_NS)) {
		ingest_pair(&tb, &nb);
		if ((int64_t)(nb - m0) < INGEST_MIN_CAL_NS) {
			req.tv_nsec = INGEST_MIN_CAL_NS - (int64_t)(nb - m0);
			while (nanosleep(&req, &req) < 0 && errno == EINTR)
				;
			ingest_pair(&tb, &nb);
		}
		t1 = tb;
		m1 = nb;
	}
	if (m0 && m1 > m0 && (int64_t)(m1 - m0) >= INGEST_MIN_CAL_NS &&
	    t1 > t0) {
		in->st->tsc_hz = (double)(t1 - t0) * 1e9 / (double)(m1 - m0);
		in->st->tsc_measured = 0;
	} else {
		ingest_pair(&ta, &na);
		while (nanosleep(&req, &req) < 0 && errno == EINTR)
			;
		ingest_pair(&tb, &nb);
		in->st->tsc_hz = (double)(tb - ta) * 1e9 / (double)(nb - na);
		in->st->tsc_measured = 1;
	}
	in->ns_per_tick = 1e9 / in->st->tsc_hz;
	ingest_anchor(in);
}

/* ---- the whole directory ---- */

static int ingest_prepare(struct ingest *in, char **cause)
{
	static const char *const sql[] = {
		"INSERT INTO processes(pid,ppid,nonce,exe,host) VALUES(?,?,?,?,?)",
		"INSERT INTO functions(proc,addr,name,module,file,line,flags)"
		" VALUES(?,?,?,?,?,?,?)",
		"INSERT INTO callsites(proc,addr,file,line) VALUES(?,?,?,?)",
		"INSERT INTO threads(proc,pid,tid,name,first_ns,last_ns,nevents,"
		"wrapped) VALUES(?,?,?,?,?,?,?,?)",
		"INSERT INTO comm(event,pid,tid,ts_ns,kind,fd,bytes,chan,dir,"
		"peer,offset,hash) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
		"INSERT OR REPLACE INTO params(func,sig) VALUES(?,?)",
		"INSERT INTO holds(event,pid,tid,ts_ns,dur_ns) VALUES(?,?,?,?,?)",
	};
	sqlite3_stmt **out[] = { &in->ins_proc, &in->ins_func, &in->ins_site,
				 &in->ins_thread, &in->ins_comm, &in->ins_params,
				 &in->ins_hold };
	size_t i;

	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++)
		if (sqlite3_prepare_v2(in->db, sql[i], -1, out[i], NULL) !=
		    SQLITE_OK)
			return ingest_sql_err(in, cause);
	return 0;
}

static int ingest_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ingest_ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && strcmp(s + n - m, suf) == 0;
}

/*
 * An image ends in one of four ways: a clean exit the agent saw (E line or
 * PROCESS_EXIT record), a detach (X line), a crash or kill, or an exec.
 * An exec is seen from the outside: the same pid started a newer image
 * (its own map file and rings) in the session, whatever code called
 * execve (a stripped shell, libc's posix_spawn) and whether the agent saw
 * it or not.  Images are ordered by the creation of their oldest ring.
 */
static void ingest_mark_execs(struct ingest *in)
{
	size_t i, j;

	for (i = 0; i < in->nrings; i++) {
		struct ingest_proc *p = in->rings[i].proc;
		int64_t b = (int64_t)in->rings[i].h->mono0_ns;

		if (p && b > 0 && (!p->born_ns || b < p->born_ns))
			p->born_ns = b;
	}
	for (i = 0; i < in->nprocs; i++) {
		struct ingest_proc *p = in->procs[i];

		for (j = 0; j < in->nprocs && !p->execd; j++) {
			struct ingest_proc *q = in->procs[j];

			if (q == p || q->pid != p->pid || !p->pid)
				continue;
			/* an image without rings left no trace of its time:
			 * it is the older one only if the other has a time */
			if (p->born_ns ? q->born_ns > p->born_ns : q->born_ns > 0)
				p->execd = 1;
		}
	}
}

/* The image is still running (a recording stopped while a traced daemon
 * lives on): its process maps one of the image's own rings. */
static int ingest_still_running(const struct ingest *in,
				const struct ingest_proc *p)
{
	char path[64], line[4096 + 256], pre[1024];
	FILE *f;
	int found = 0;

	if (!in->dir || !p->pid || !p->key)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	snprintf(pre, sizeof(pre), "%s/%s.", in->dir, p->key);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, pre) != NULL;
	fclose(f);
	return found;
}

static int ingest_finish_procs(struct ingest *in)
{
	sqlite3_stmt *st;
	size_t i;
	int crashed = 0, rc = 0;

	ingest_mark_execs(in);

	if (sqlite3_prepare_v2(in->db,
			       "UPDATE processes SET start_ns=?,end_ns=?,"
			       "exit_status=?,signal=? WHERE id=?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	for (i = 0; i < in->nprocs && !rc; i++) {
		struct ingest_proc *p = in->procs[i];
		int clean = p->has_e || p->has_exit_rec || p->execd;

		if (!clean && !p->detached && !ingest_still_running(in, p))
			in->st->killed++;
		if (p->have_ns) {
			sqlite3_bind_int64(st, 1, p->first_ns);
			sqlite3_bind_int64(st, 2, p->last_ns);
		} else {
			sqlite3_bind_null(st, 1);
			sqlite3_bind_null(st, 2);
		}
		if (p->has_e)
			sqlite3_bind_int64(st, 3, p->e_status);
		else if (p->has_exit_rec)
			sqlite3_bind_int64(st, 3, p->exit_rec_status);
		else
			sqlite3_bind_null(st, 3);
		if (!clean && p->crash_signo) {
			sqlite3_bind_int(st, 4, p->crash_signo);
			crashed = 1;
		} else {
			sqlite3_bind_null(st, 4);
		}
		sqlite3_bind_int64(st, 5, p->row);
		rc = ingest_step(st);
		/* when tracing ended in it: a detach stops the processes one
		 * after another, and the first stopped is not the first to
		 * stop working (analysis/rootcause.c) */
		if (!rc && p->stop_ns > 0) {
			char key[48], v[24];

			snprintf(key, sizeof(key), "stopped.%u", p->pid);
			snprintf(v, sizeof(v), "%lld", (long long)p->stop_ns);
			rc = session_meta_set(in->s, key, v) ? -EIO : 0;
		}
	}
	sqlite3_finalize(st);
	if (rc)
		return rc;
	return session_meta_set(in->s, "crashed", crashed ? "1" : "0");
}

/* meta key += n (each host's ingest adds its own) */
static int ingest_meta_add(struct session *s, const char *key, uint64_t n)
{
	char *was = session_meta_get(s, key), buf[32];
	unsigned long long v = was ? strtoull(was, NULL, 10) : 0;

	free(was);
	snprintf(buf, sizeof(buf), "%llu", v + (unsigned long long)n);
	return session_meta_set(s, key, buf);
}

int ingest_dir(struct session *s, const char *dir, struct ingest_stats *st,
	       char **cause)
{
	return ingest_dir_host(s, dir, NULL, 0, st, cause);
}

static int ingest_dir_all(struct session *s, const char *dir,
			  const char *host, int64_t offset_ns,
			  struct symbols *sy, struct ingest_stats *st,
			  char **cause);

int ingest_dir_host(struct session *s, const char *dir, const char *host,
		    int64_t offset_ns, struct ingest_stats *st, char **cause)
{
	return ingest_dir_all(s, dir, host, offset_ns, NULL, st, cause);
}

int ingest_dir_symbols(struct session *s, const char *dir,
		       struct symbols *sy, struct ingest_stats *st,
		       char **cause)
{
	return ingest_dir_all(s, dir, NULL, 0, sy, st, cause);
}

/* PROPEL_DEBUG=store: the ms since the start of storing, per phase */

/* The *.map and *.ring names of dir, sorted.  0 or -errno. */
int ingest_dir_names(const char *dir, char ***names, size_t *n)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char **nn;

		if (!ingest_ends(de->d_name, ".map") &&
		    !ingest_ends(de->d_name, ".ring"))
			continue;
		nn = realloc(*names, (*n + 1) * sizeof(*nn));
		if (!nn || !(nn[*n] = strdup(de->d_name))) {
			*names = nn ? nn : *names;
			err = -ENOMEM;
			break;
		}
		*names = nn;
		(*n)++;
	}
	closedir(d);
	if (*n) /* (names is NULL in an empty directory) */
		qsort(*names, *n, sizeof(**names), ingest_name_cmp);
	return err;
}

/* The transaction and the writers: in's s, db, st, sy and dir set. */
int ingest_dir_begin(struct ingest *in, char **cause)
{
	int err;

	in->t_start = propel_mono_ns();
	sqlite3_exec(in->db, "PRAGMA cache_size=-131072;", NULL, NULL, NULL);
	err = session_exec(in->s, "BEGIN", cause);
	if (err)
		return err;
	in->began = 1;
	err = chunk_writer_new(in->s, &in->cw);
	return err ? err : ingest_prepare(in, cause);
}

/*
 * The maps (read on from where a live ingest left them), the rings, each
 * walked, the processes' ends.  lw: the live ring's walk so far -- that
 * ring is in->rings[0], calibrated already, and stays first.
 */
int ingest_dir_rest(struct ingest *in, char **names, size_t nnames,
		    struct ingest_walk *lw, const struct ingest_spec *lsp,
		    char **cause)
{
	struct ingest_stats *st = in->st;
	uint64_t t_start = in->t_start;
	size_t i, k = lw ? 1 : 0;
	struct ingest_fault *fault;
	char buf[64];
	int err = 0;

	for (i = 0; !err && i < nnames; i++)
		if (ingest_ends(names[i], ".map"))
			err = ingest_map(in, in->dir, names[i], cause);
	if (!err && ingest_defer_run(in, SIZE_MAX))
		err = ingest_sql_err(in, cause);
	for (i = 0; !err && i < nnames; i++) {
		const char *base;

		if (!ingest_ends(names[i], ".ring"))
			continue;
		base = lw ? strrchr(in->rings[0].path, '/') : NULL;
		if (base && !strcmp(base + 1, names[i]))
			continue;
		err = ingest_ring_open(in, in->dir, names[i], 0, cause);
	}
	if (err)
		return err;
	if (in->nrings > k)
		qsort(in->rings + k, in->nrings - k, sizeof(*in->rings),
		      ingest_ring_cmp);
	STORE_T("opened %zu ring(s)", in->nrings);
	if (!lw)
		ingest_calibrate(in);
	STORE_T("calibrated");
	fault = ingest_fault_start(in->rings + k, in->nrings - k);
	for (i = 0; !err && i < in->nrings; i++)
		err = ingest_thread(in, &in->rings[i], i < k ? lw : NULL,
				    i < k ? lsp : NULL, cause);
	ingest_fault_stop(fault);
	STORE_T("walked");
	if (!err && ingest_finish_procs(in))
		err = ingest_sql_err(in, cause);
	snprintf(buf, sizeof(buf), "%.0f", st->tsc_hz);
	if (!err && session_meta_set(in->s, "tsc_hz", buf))
		err = ingest_sql_err(in, cause);
	if (!err && st->estimated && ingest_meta_add(in->s, "estimated_records",
						     st->estimated))
		err = ingest_sql_err(in, cause);
	if (!err) /* every recv with the send that holds its first byte */
		err = match_session(in->s, NULL, cause);
	return err;
}

/* Commit (or, on err, roll back) and free in's state; err or -EIO. */
int ingest_dir_end(struct ingest *in, int err, char **cause)
{
	uint64_t t_start = in->t_start;
	size_t i;

	STORE_T("matched");
	chunk_writer_free(in->cw);
	sqlite3_finalize(in->ins_proc);
	sqlite3_finalize(in->ins_func);
	sqlite3_finalize(in->ins_site);
	sqlite3_finalize(in->ins_thread);
	sqlite3_finalize(in->ins_comm);
	sqlite3_finalize(in->ins_hold);
	argchunk_writer_free(in->args);
	sqlite3_finalize(in->ins_params);
	sqlite3_finalize(in->upd_defer[0]);
	sqlite3_finalize(in->upd_defer[1]);
	free(in->defer);
	if (in->began) {
		if (err)
			sqlite3_exec(in->db, "ROLLBACK", NULL, NULL, NULL);
		else if (session_exec(in->s, "COMMIT", cause))
			err = -EIO;
	}
	STORE_T("committed");
	for (i = 0; i < in->nrings; i++) {
		munmap((void *)in->rings[i].h, in->rings[i].maplen);
		free(in->rings[i].path);
	}
	free(in->rings);
	STORE_T("unmapped");
	for (i = 0; i < in->nprocs; i++)
		ingest_proc_free(in->procs[i]);
	free(in->procs);
	in->st->seconds = (propel_mono_ns() - t_start) / 1e9;
	return err;
}

static int ingest_dir_all(struct session *s, const char *dir,
			  const char *host, int64_t offset_ns,
			  struct symbols *sy, struct ingest_stats *st,
			  char **cause)
{
	struct ingest in = { .s = s, .db = session_db(s), .st = st, .dir = dir,
			     .offset_ns = offset_ns };
	char **names = NULL;
	size_t nnames = 0, i;
	struct utsname un;
	int err;

	memset(st, 0, sizeof(*st));
	err = ingest_dir_names(dir, &names, &nnames);
	if (err == -ENOMEM)
		goto out;
	if (err)
		return propel_cause(cause, err, "%s: %s", dir, strerror(-err));
	if (host)
		snprintf(in.host, sizeof(in.host), "%s", host);
	else if (uname(&un) == 0)
		snprintf(in.host, sizeof(in.host), "%s", un.nodename);
	in.sy = sy ? sy : symbols_new();
	if (!in.sy) {
		err = -ENOMEM;
		goto out;
	}
	err = ingest_dir_begin(&in, cause);
	if (!err)
		err = ingest_dir_rest(&in, names, nnames, NULL, NULL, cause);
	err = ingest_dir_end(&in, err, cause);
out:
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	if (in.sy != sy)
		symbols_free(in.sy);
	if (err == -ENOMEM)
		propel_cause(cause, err, "%s: out of memory", dir);
	return err;
}
