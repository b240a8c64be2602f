/*
 * engine/symcache.c - see engine/symcache.h.
 *
 * In memory: one open-addressing table of (address, kind) -> answer, its
 * strings either inside the file as read (kept whole for the run) or in
 * pools of new strings.  On disk, one file per module key, "KEY.sym":
 *
 *   header   magic "PRSYMC01", version, key and stamp lengths, the number
 *            of records, the strings' size, FNV-1a of all that follows
 *   key      the module key (as the file name), then the stamp
 *   records  24 bytes each: address, string offset (or none), line, kind,
 *            has (0: the answer is "none")
 *   strings  NUL-terminated, each stored once (a library's functions
 *            share a handful of declaration files)
 *
 * The byte order and layout are this machine's: the cache is a local
 * file of one user, and a file of another layout fails the magic or the
 * checksum and is rebuilt.  A cache file is a regular file of the
 * effective user (one of another user is never read: its names would be
 * taken on trust).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/symcache.h"
#include "share/hash.h"
#include "share/log.h"

#define PR_DOMAIN "symbols"

#define SYMCACHE_MAGIC "PRSYMC01"
#define SYMCACHE_VERSION 1u
#define SYMCACHE_NONE UINT32_MAX
#define SYMCACHE_FILE_MAX (256u << 20) /* a bigger file is not read */
#define SYMCACHE_ENT_MAX (1u << 22)    /* records written per file */
#define SYMCACHE_DIR_MAX_MB 64	       /* default $PROPEL_SYMBOL_CACHE_MAX */
#define SYMCACHE_TOUCH_S 600	       /* LRU: a file read is touched ... */
#define SYMCACHE_TMP_STALE_S 3600      /* a temporary left by a crash */

struct symcache_hdr {
	char magic[8];
	uint32_t version, keylen, stamplen, nrec, strsize, pad;
	uint64_t sum;
};

struct symcache_rec {
	uint64_t addr;
	uint32_t str;
	int32_t line;
	uint8_t kind, has, pad[6];
};

struct symcache_ent {
	uint64_t addr;
	const char *str;
	int32_t line;
	uint8_t kind; /* 0: empty slot */
	uint8_t has;
};

struct symcache_pool {
	struct symcache_pool *next;
	size_t used, cap;
	char data[];
};

struct symcache {
	char *dir, *key, *stamp; /* dir NULL: in memory only */
	char *blob;		 /* the file as read: its strings are used */
	struct symcache_ent *ent;
	size_t cap, used;
	struct symcache_pool *pool;
	unsigned fresh; /* answers not from the file */
	struct symcache_stats st;
};

/* ---- where ---- */

static int symcache_off(const char *v)
{
	return !strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no") ||
	       !strcmp(v, "none");
}

char *symcache_dir(void)
{
	const char *v = getenv("PROPEL_SYMBOL_CACHE");
	char *d = NULL;

	if (v && *v)
		return symcache_off(v) ? NULL : strdup(v);
	v = getenv("XDG_CACHE_HOME");
	if (v && v[0] == '/')
		return asprintf(&d, "%s/propel/symbols", v) < 0 ? NULL : d;
	v = getenv("HOME");
	if (v && v[0] == '/')
		return asprintf(&d, "%s/.cache/propel/symbols", v) < 0 ? NULL : d;
	return NULL;
}

static uint64_t symcache_dir_max(void)
{
	const char *v = getenv("PROPEL_SYMBOL_CACHE_MAX");
	char *end;
	unsigned long long mb;

	if (!v || !*v)
		return (uint64_t)SYMCACHE_DIR_MAX_MB << 20;
	mb = strtoull(v, &end, 10);
	if (*end || mb < 1 || mb > (1ull << 20))
		return (uint64_t)SYMCACHE_DIR_MAX_MB << 20;
	return (uint64_t)mb << 20;
}

/* A key is a file name: letters, digits, '-' and '_' only. */
static int symcache_key_ok(const char *k)
{
	size_t n = 0;

	for (; k[n]; n++)
		if (!((k[n] >= '0' && k[n] <= '9') ||
		      (k[n] >= 'a' && k[n] <= 'z') ||
		      (k[n] >= 'A' && k[n] <= 'Z') || k[n] == '-' ||
		      k[n] == '_'))
			return 0;
	return n > 0 && n <= 200;
}

static char *symcache_path(const struct symcache *c)
{
	char *p = NULL;

	return asprintf(&p, "%s/%s.sym", c->dir, c->key) < 0 ? NULL : p;
}

/* ---- the table ---- */

static size_t symcache_slot(const struct symcache *c, uint64_t addr, int kind)
{
	uint64_t h = (addr ^ ((uint64_t)kind << 59)) * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h >> 32) & (c->cap - 1);

	while (c->ent[i].kind &&
	       (c->ent[i].addr != addr || c->ent[i].kind != kind))
		i = (i + 1) & (c->cap - 1);
	return i;
}

static int symcache_grow(struct symcache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256, i, j;
	struct symcache_ent *old = c->ent, *ne;
	size_t ocap = c->cap;

	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	c->ent = ne;
	c->cap = ncap;
	for (i = 0; i < ocap; i++)
		if (old[i].kind) {
			j = symcache_slot(c, old[i].addr, old[i].kind);
			c->ent[j] = old[i];
		}
	free(old);
	return 0;
}

/* A copy of s in the cache's pools. */
static const char *symcache_str(struct symcache *c, const char *s)
{
	size_t n = strlen(s) + 1;
	struct symcache_pool *p = c->pool;

	if (!p || p->cap - p->used < n) {
		size_t cap = n > 16384 ? n : 16384;

		p = malloc(sizeof(*p) + cap);
		if (!p)
			return NULL;
		p->used = 0;
		p->cap = cap;
		p->next = c->pool;
		c->pool = p;
	}
	memcpy(p->data + p->used, s, n);
	p->used += n;
	return p->data + p->used - n;
}

/* Enter an answer whose string the caller keeps alive; 0 or -ENOMEM. */
static int symcache_enter(struct symcache *c, uint64_t addr, int kind,
			  int has, const char *str, int line)
{
	size_t i;

	if ((c->used + 1) * 2 > c->cap && symcache_grow(c))
		return -ENOMEM;
	i = symcache_slot(c, addr, kind);
	if (c->ent[i].kind)
		return 0; /* the first answer stays */
	c->ent[i] = (struct symcache_ent){ .addr = addr, .str = str,
					   .line = line, .kind = (uint8_t)kind,
					   .has = (uint8_t)!!has };
	c->used++;
	return 0;
}

int symcache_get(struct symcache *c, uint64_t addr, int kind,
		 const char **str, int *line)
{
	size_t i;

	if (!c)
		return -1;
	if (c->cap) {
		i = symcache_slot(c, addr, kind);
		if (c->ent[i].kind) {
			c->st.hits++;
			if (str)
				*str = c->ent[i].str;
			if (line)
				*line = c->ent[i].line;
			return c->ent[i].has;
		}
	}
	c->st.misses++;
	return -1;
}

const char *symcache_put(struct symcache *c, uint64_t addr, int kind,
			 int has, const char *str, int line)
{
	const char *s = NULL;

	if (!c || kind <= 0 || kind >= SYMCACHE_NKINDS)
		return NULL;
	if (has && str && !(s = symcache_str(c, str)))
		return NULL;
	if (symcache_enter(c, addr, kind, has && s, s, line))
		return NULL;
	c->fresh++;
	return s;
}

void symcache_stats(const struct symcache *c, struct symcache_stats *st)
{
	if (c)
		*st = c->st;
	else
		memset(st, 0, sizeof(*st));
}

/* ---- the file ---- */

/*
 * The file of c's key, read whole and checked: the buffer (malloc'd) with
 * *hdr, *rec (unaligned: memcpy each) and *strs set, or NULL (none, or not
 * to be trusted: c->st.file_bad set).
 */
static char *symcache_read(struct symcache *c, struct symcache_hdr *hdr,
			   const char **rec, const char **strs)
{
	char *path = symcache_path(c), *buf = NULL;
	struct stat sb;
	uint64_t want;
	size_t got = 0, klen = strlen(c->key), slen = strlen(c->stamp), i;
	ssize_t r;
	int fd;

	if (!path)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
	    sb.st_size < (off_t)sizeof(*hdr) || sb.st_size > SYMCACHE_FILE_MAX)
		goto bad;
	buf = malloc((size_t)sb.st_size);
	if (!buf)
		goto out;
	while (got < (size_t)sb.st_size &&
	       (r = read(fd, buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)r;
	if (got != (size_t)sb.st_size)
		goto bad;
	memcpy(hdr, buf, sizeof(*hdr));
	want = sizeof(*hdr) + (uint64_t)hdr->keylen + hdr->stamplen +
	       (uint64_t)hdr->nrec * sizeof(struct symcache_rec) +
	       hdr->strsize;
	if (memcmp(hdr->magic, SYMCACHE_MAGIC, 8) ||
	    hdr->version != SYMCACHE_VERSION || want != (uint64_t)sb.st_size ||
	    propel_fnv(PROPEL_FNV_INIT, buf + sizeof(*hdr),
		       got - sizeof(*hdr)) != hdr->sum)
		goto bad;
	/* another key's file under this name cannot be, but is not used;
	 * another stamp is the same file read with other debug info */
	if (hdr->keylen != klen || memcmp(buf + sizeof(*hdr), c->key, klen) ||
	    hdr->stamplen != slen ||
	    memcmp(buf + sizeof(*hdr) + klen, c->stamp, slen))
		goto bad;
	*rec = buf + sizeof(*hdr) + klen + slen;
	*strs = *rec + (size_t)hdr->nrec * sizeof(struct symcache_rec);
	if (hdr->strsize && (*strs)[hdr->strsize - 1])
		goto bad;
	for (i = 0; i < hdr->nrec; i++) {
		struct symcache_rec rc;

		memcpy(&rc, *rec + i * sizeof(rc), sizeof(rc));
		if (rc.kind == 0 || rc.kind >= SYMCACHE_NKINDS || rc.has > 1 ||
		    (rc.has ? rc.str >= hdr->strsize : rc.str != SYMCACHE_NONE))
			goto bad;
	}
	/* the least recently used go first when the directory is trimmed */
	if (sb.st_mtime + SYMCACHE_TOUCH_S < time(NULL))
		futimens(fd, NULL);
	goto out;
bad:
	pr_dbg("symbol cache %s/%s.sym: not used (invalid, or for other debug"
	       " info)", c->dir, c->key);
	c->st.file_bad = 1;
	free(buf);
	buf = NULL;
out:
	close(fd);
	return buf;
}

/* Enter a checked file's records (their strings point into it). */
static int symcache_enter_file(struct symcache *c,
			       const struct symcache_hdr *hdr, const char *rec,
			       const char *strs)
{
	size_t i;

	for (i = 0; i < hdr->nrec; i++) {
		struct symcache_rec rc;

		memcpy(&rc, rec + i * sizeof(rc), sizeof(rc));
		if (symcache_enter(c, rc.addr, rc.kind, rc.has,
				   rc.has ? strs + rc.str : NULL, rc.line))
			return -ENOMEM;
	}
	return 0;
}

struct symcache *symcache_open(const char *key, const char *stamp)
{
	struct symcache *c = calloc(1, sizeof(*c));
	struct symcache_hdr hdr;
	const char *rec, *strs;

	if (!c)
		return NULL;
	if (!key || !symcache_key_ok(key) || !(c->dir = symcache_dir()))
		return c;
	c->key = strdup(key);
	c->stamp = strdup(stamp ? stamp : "");
	if (!c->key || !c->stamp) {
		free(c->dir);
		c->dir = NULL;
		return c;
	}
	c->blob = symcache_read(c, &hdr, &rec, &strs);
	if (c->blob && !symcache_enter_file(c, &hdr, rec, strs))
		c->st.loaded = hdr.nrec;
	pr_dbg("symbol cache %s.sym: %u answers read", key, c->st.loaded);
	return c;
}

/* ---- writing ---- */

/* The strings of a file being written, each once. */
struct symcache_out {
	char *buf;
	size_t len, cap;
	uint32_t *slot; /* offset + 1; 0 = empty */
	size_t nslot, used;
};

static int symcache_out_str(struct symcache_out *o, const char *s,
			    uint32_t *off)
{
	size_t n = strlen(s) + 1, i;
	uint64_t h = propel_fnv(PROPEL_FNV_INIT, s, n);

	if ((o->used + 1) * 2 > o->nslot) {
		size_t ns = o->nslot ? o->nslot * 2 : 1024, j;
		uint32_t *nw = calloc(ns, sizeof(*nw));

		if (!nw)
			return -ENOMEM;
		for (j = 0; j < o->nslot; j++) {
			const char *t;

			if (!o->slot[j])
				continue;
			t = o->buf + o->slot[j] - 1;
			i = propel_fnv(PROPEL_FNV_INIT, t, strlen(t) + 1) & (ns - 1);
			while (nw[i])
				i = (i + 1) & (ns - 1);
			nw[i] = o->slot[j];
		}
		free(o->slot);
		o->slot = nw;
		o->nslot = ns;
	}
	for (i = h & (o->nslot - 1); o->slot[i]; i = (i + 1) & (o->nslot - 1))
		if (!strcmp(o->buf + o->slot[i] - 1, s)) {
			*off = o->slot[i] - 1;
			return 0;
		}
	if (o->len + n >= UINT32_MAX - 1)
		return -EFBIG;
	if (o->len + n > o->cap) {
		size_t nc = (o->len + n) * 2;
		char *nb = realloc(o->buf, nc);

		if (!nb)
			return -ENOMEM;
		o->buf = nb;
		o->cap = nc;
	}
	memcpy(o->buf + o->len, s, n);
	*off = (uint32_t)o->len;
	o->slot[i] = (uint32_t)o->len + 1;
	o->len += n;
	o->used++;
	return 0;
}

static int symcache_mkdirs(const char *dir)
{
	char *p = strdup(dir), *s;
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			err = -errno;
		*s = '/';
		if (err)
			break;
	}
	if (!err && mkdir(p, 0700) && errno != EEXIST)
		err = -errno;
	free(p);
	return err;
}

static int symcache_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	ssize_t r;

	while (n) {
		r = write(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

struct symcache_file {
	char name[256];
	off_t size;
	struct timespec mtime;
};

static int symcache_older(const void *a, const void *b)
{
	const struct symcache_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

/* Keep the directory's cache files under the limit: the least recently
 * used (oldest mtime) go until three quarters of it are left; temporaries
 * a crashed writer left behind go too. */
static void symcache_trim(const char *dir)
{
	uint64_t max = symcache_dir_max(), total = 0;
	struct symcache_file *f = NULL, *nf;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat sb;
	time_t now = time(NULL);
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		int tmp = !strncmp(de->d_name, ".tmp.", 5);

		if (len >= sizeof(f->name) ||
		    (!tmp && (len < 5 || strcmp(de->d_name + len - 4, ".sym"))))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (tmp) {
			if (sb.st_mtime + SYMCACHE_TMP_STALE_S < now)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		total += (uint64_t)sb.st_size;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nf = realloc(f, cap * sizeof(*f));
			if (!nf)
				break;
			f = nf;
		}
		memcpy(f[n].name, de->d_name, len + 1);
		f[n].size = sb.st_size;
		f[n].mtime = sb.st_mtim;
		n++;
	}
	if (total > max && f) {
		qsort(f, n, sizeof(*f), symcache_older);
		for (i = 0; i < n && total > max / 4 * 3; i++)
			if (!unlinkat(dirfd(d), f[i].name, 0))
				total -= (uint64_t)f[i].size;
	}
	free(f);
	closedir(d);
}

/* Write every answer of c (with the file's current ones merged) to a
 * temporary file renamed over c's: 0 or -errno. */
static int symcache_save(struct symcache *c)
{
	struct symcache_out o = { 0 };
	struct symcache_hdr hdr, old;
	const char *orec, *ostrs;
	char *path = NULL, *tmp = NULL, *merged, *recs = NULL;
	size_t klen = strlen(c->key), slen = strlen(c->stamp), i, n = 0;
	uint64_t sum;
	int fd = -1, err;

	/* what another process saved since we read: kept */
	merged = symcache_read(c, &old, &orec, &ostrs);
	if (merged && symcache_enter_file(c, &old, orec, ostrs)) {
		err = -ENOMEM;
		goto out;
	}
	err = symcache_mkdirs(c->dir);
	if (err)
		goto out;
	recs = malloc((c->used < SYMCACHE_ENT_MAX ? c->used : SYMCACHE_ENT_MAX) *
		      sizeof(struct symcache_rec) + 1);
	if (!recs) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c->cap && n < SYMCACHE_ENT_MAX; i++) {
		const struct symcache_ent *e = &c->ent[i];
		struct symcache_rec rc = { 0 };

		if (!e->kind)
			continue;
		rc.addr = e->addr;
		rc.kind = e->kind;
		rc.line = e->line;
		rc.has = e->has;
		rc.str = SYMCACHE_NONE;
		if (e->has && (err = symcache_out_str(&o, e->str, &rc.str)))
			goto out;
		memcpy(recs + n++ * sizeof(rc), &rc, sizeof(rc));
	}
	memset(&hdr, 0, sizeof(hdr));
	memcpy(hdr.magic, SYMCACHE_MAGIC, 8);
	hdr.version = SYMCACHE_VERSION;
	hdr.keylen = (uint32_t)klen;
	hdr.stamplen = (uint32_t)slen;
	hdr.nrec = (uint32_t)n;
	hdr.strsize = (uint32_t)o.len;
	sum = propel_fnv(PROPEL_FNV_INIT, c->key, klen);
	sum = propel_fnv(sum, c->stamp, slen);
	sum = propel_fnv(sum, recs, n * sizeof(struct symcache_rec));
	hdr.sum = propel_fnv(sum, o.buf, o.len);
	path = symcache_path(c);
	if (!path || asprintf(&tmp, "%s/.tmp.%s.%d", c->dir, c->key,
			      (int)getpid()) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = symcache_write_all(fd, &hdr, sizeof(hdr));
	if (!err)
		err = symcache_write_all(fd, c->key, klen);
	if (!err)
		err = symcache_write_all(fd, c->stamp, slen);
	if (!err)
		err = symcache_write_all(fd, recs, n * sizeof(struct symcache_rec));
	if (!err)
		err = symcache_write_all(fd, o.buf, o.len);
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	if (err)
		pr_dbg("symbol cache %s: not written: %s", c->dir, strerror(-err));
	else
		symcache_trim(c->dir);
	free(merged);
	free(recs);
	free(o.buf);
	free(o.slot);
	free(path);
	free(tmp);
	return err;
}

void symcache_close(struct symcache *c)
{
	struct symcache_pool *p, *n;

	if (!c)
		return;
	if (c->dir && c->fresh)
		symcache_save(c);
	for (p = c->pool; p; p = n) {
		n = p->next;
		free(p);
	}
	free(c->ent);
	free(c->blob);
	free(c->dir);
	free(c->key);
	free(c->stamp);
	free(c);
}
