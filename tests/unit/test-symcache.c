/*
 * tests/unit/test-symcache.c - the symbol cache kept between propel
 * processes (engine/symcache.h through engine/symbols.h): a program built
 * here, looked up the way ingest does (name, declaration, source line,
 * parameters of each function) in fresh struct symbols, as successive
 * propel runs would, each answer list compared with the one the cache
 * switched off gives ("off": libdwfl's own answers, the reference):
 *
 *   cold, then hit      the second run answers from the file, no miss;
 *   corrupt files       truncated, a flipped byte, garbage under a valid
 *                       header: ignored (never a crash), the answers
 *                       libdwfl's, the file rewritten and hit next time;
 *   content changes     the program rebuilt at the same path (a new
 *                       build-id) names its new functions; a stripped copy
 *                       (same build-id) gets its own answers, not the
 *                       unstripped file's; a file without a build-id is
 *                       keyed by path, size and mtime;
 *   debug file appears  a separate debug file (by .gnu_debuglink) put in
 *                       place after a run: its declarations are found;
 *   where               $XDG_CACHE_HOME/propel/symbols by default; a
 *                       directory that cannot be made: the answers, no
 *                       file; $PROPEL_SYMBOL_CACHE_MAX: the least recently
 *                       used files go.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/symbols.h"
#include "engine/symcache.h"
#include "tests/unit/check.h"

#define BIAS 0x555555554000ull

static char dir[256], cache[300];

/* The program: three functions, one called through the other. */
static int build(const char *out, const char *fname, int pad,
		 const char *extra)
{
	char src[400];
	FILE *f;

	snprintf(src, sizeof(src), "%s/src-%s.c", dir, fname);
	f = fopen(src, "w");
	if (!f)
		return -1;
	/* pad blank lines move the declarations: a rebuilt program's lines
	 * differ from the old one's */
	for (int i = 0; i < pad; i++)
		fputc('\n', f);
	fprintf(f, "int %s(int x) { return x + 1; }\n"
		   "long beta(long y, char *p) { return %s((int)y) + (p != 0); }\n"
		   "int main(int argc, char **argv)\n"
		   "{ return (int)beta(argc, argv[0]); }\n", fname, fname);
	fclose(f);
	return CHECK_SH("gcc -g -O0 %s -o %s %s", extra, out, src);
}

/* name of every function symbol of path, with its address (nm) */
static int funcs(const char *path, char names[][64], uint64_t *addr, int max)
{
	char cmd[600], line[256];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "nm %s | awk '$2 == \"T\" || $2 == \"t\"'",
		 path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char t;

		if (sscanf(line, "%llx %c %63s", &a, &t, names[n]) == 3) {
			addr[n] = a;
			n++;
		}
	}
	pclose(f);
	return n;
}

static const char *base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static char fnames[16][64];
static uint64_t faddr[16];
static int nf;

/*
 * One "propel run" over path: every answer for the functions of the list
 * (taken from the unstripped program: the same addresses in each variant)
 * in out, the cache's stats in *st.
 */
static void run(const char *path, char *out, size_t n, struct symcache_stats *st)
{
	struct symbols *sy = symbols_new();
	struct symbols_mod *m = sy ? symbols_module(sy, path, BIAS, NULL) : NULL;
	size_t at = 0;

	memset(st, 0, sizeof(*st));
	out[0] = 0;
	for (int i = 0; m && i < nf; i++) {
		uint64_t a = faddr[i] + BIAS;
		char *name = symbols_name(m, a, NULL), *sig = NULL;
		const char *df = NULL, *sf = NULL;
		int dl = 0, sl = 0, de, se, pe;

		de = symbols_decl(m, a, &df, &dl);
		se = symbols_srcline(m, a + 4, &sf, &sl);
		pe = symbols_params(m, a, &sig);
		at += (size_t)snprintf(out + at, n - at, "%s|%s:%d|%s:%d|%s;",
				       name ? name : "(null)",
				       de ? "-" : base(df), dl,
				       se ? "-" : base(sf), sl,
				       pe ? "-" : sig);
		free(name);
		free(sig);
		if (at >= n)
			break;
	}
	symbols_cache_stats(m, st);
	symbols_free(sy);
	/* what symbols_free saved is in the stats of the next run's read */
}

/* the reference: the cache off */
static void ref(const char *path, char *out, size_t n)
{
	struct symcache_stats st;
	char *old = getenv("PROPEL_SYMBOL_CACHE");
	char save[400];

	snprintf(save, sizeof(save), "%s", old ? old : "");
	setenv("PROPEL_SYMBOL_CACHE", "off", 1);
	run(path, out, n, &st);
	setenv("PROPEL_SYMBOL_CACHE", save, 1);
}

static int count_files(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *de;
	int n = 0;

	if (!dd)
		return 0;
	while ((de = readdir(dd)))
		n += strstr(de->d_name, ".sym") != NULL;
	closedir(dd);
	return n;
}

/* the only (newest) .sym file of d, in out */
static int newest_file(const char *d, char *out, size_t n)
{
	DIR *dd = opendir(d);
	struct dirent *de;
	struct stat sb;
	time_t best = 0;
	long bestns = -1;
	char p[700];

	out[0] = 0;
	if (!dd)
		return -1;
	while ((de = readdir(dd))) {
		if (!strstr(de->d_name, ".sym") || de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
		if (!stat(p, &sb) &&
		    (sb.st_mtime > best ||
		     (sb.st_mtime == best && sb.st_mtim.tv_nsec > bestns))) {
			best = sb.st_mtime;
			bestns = sb.st_mtim.tv_nsec;
			snprintf(out, n, "%s", p);
		}
	}
	closedir(dd);
	return out[0] ? 0 : -1;
}

static void check_hit_and_corrupt(const char *prog, const char *want)
{
	char got[4096], file[700];
	struct symcache_stats st;
	struct stat sb;
	int fd;

	run(prog, got, sizeof(got), &st);
	CHECK("symcache-cold-answers", !strcmp(got, want) && st.loaded == 0 &&
	      st.misses > 0 && count_files(cache) == 1,
	      "got %s, want %s (loaded %u, misses %u, %d files)", got, want,
	      st.loaded, st.misses, count_files(cache));
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-hit", !strcmp(got, want) && st.loaded > 0 &&
	      st.misses == 0 && st.hits == (unsigned)nf * 4,
	      "got %s, want %s (loaded %u, hits %u, misses %u)", got, want,
	      st.loaded, st.hits, st.misses);

	/* truncated to half */
	newest_file(cache, file, sizeof(file));
	stat(file, &sb);
	if (truncate(file, sb.st_size / 2))
		perror("truncate");
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-truncated-ignored", !strcmp(got, want) &&
	      st.file_bad && st.loaded == 0,
	      "got %s, want %s (bad %d, loaded %u)", got, want, st.file_bad,
	      st.loaded);
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-truncated-rebuilt", !strcmp(got, want) && !st.file_bad &&
	      st.misses == 0, "got %s (bad %d, misses %u)", got, st.file_bad,
	      st.misses);

	/* one byte flipped in the records */
	stat(file, &sb);
	fd = open(file, O_RDWR);
	if (fd >= 0) {
		unsigned char b;

		if (pread(fd, &b, 1, sb.st_size * 2 / 3) == 1) {
			b ^= 0x5a;
			if (pwrite(fd, &b, 1, sb.st_size * 2 / 3) != 1)
				perror("pwrite");
		}
		close(fd);
	}
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-flipped-byte-ignored", !strcmp(got, want) &&
	      st.file_bad && st.loaded == 0,
	      "got %s, want %s (bad %d, loaded %u)", got, want, st.file_bad,
	      st.loaded);

	/* garbage after an intact header: a record count that would reach
	 * far past the file, strings without their NUL */
	fd = open(file, O_RDWR);
	if (fd >= 0) {
		char junk[4096];
		uint32_t big = 0x7fffffff;

		memset(junk, 0xff, sizeof(junk));
		if (pwrite(fd, junk, sizeof(junk), 40) != (ssize_t)sizeof(junk) ||
		    pwrite(fd, &big, 4, 20) != 4)
			perror("pwrite");
		close(fd);
	}
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-garbage-ignored", !strcmp(got, want) && st.file_bad,
	      "got %s, want %s (bad %d)", got, want, st.file_bad);
}

static void check_content_changes(const char *prog)
{
	char got[4096], want[4096], cp[400], nb[400];
	struct symcache_stats st;

	/* rebuilt at the same path: another build-id, other names and lines */
	if (build(prog, "gam", 3, "")) {
		CHECK("symcache-rebuilt-program", 0, "cannot rebuild %s", prog);
		return;
	}
	nf = funcs(prog, fnames, faddr, 16);
	ref(prog, want, sizeof(want));
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-rebuilt-program", !strcmp(got, want) &&
	      strstr(got, "gam|") && st.loaded == 0 && count_files(cache) == 2,
	      "got %s, want %s (loaded %u, %d files)", got, want, st.loaded,
	      count_files(cache));

	/* a stripped copy keeps the build-id: not the unstripped answers */
	snprintf(cp, sizeof(cp), "%s/stripped", dir);
	CHECK_SH("strip --strip-all -o %s %s", cp, prog);
	ref(cp, want, sizeof(want));
	run(cp, got, sizeof(got), &st);
	CHECK("symcache-stripped-copy", !strcmp(got, want) &&
	      !strstr(got, "gam|") && st.loaded == 0,
	      "got %s, want %s (loaded %u)", got, want, st.loaded);

	/* no build-id: path, size and mtime */
	snprintf(nb, sizeof(nb), "%s/nobid", dir);
	build(nb, "delta", 0, "-Wl,--build-id=none");
	nf = funcs(nb, fnames, faddr, 16);
	run(nb, got, sizeof(got), &st);
	run(nb, got, sizeof(got), &st);
	ref(nb, want, sizeof(want));
	CHECK("symcache-no-build-id-hit", !strcmp(got, want) &&
	      strstr(got, "delta|") && st.loaded > 0 && st.misses == 0,
	      "got %s, want %s (loaded %u, misses %u)", got, want, st.loaded,
	      st.misses);
	build(nb, "epsilon", 5, "-Wl,--build-id=none");
	nf = funcs(nb, fnames, faddr, 16);
	ref(nb, want, sizeof(want));
	run(nb, got, sizeof(got), &st);
	CHECK("symcache-no-build-id-rebuilt", !strcmp(got, want) &&
	      strstr(got, "epsilon|") && st.loaded == 0,
	      "got %s, want %s (loaded %u)", got, want, st.loaded);
}

/* A separate debug file found by .gnu_debuglink appears after a run. */
static void check_debug_file_appears(void)
{
	char got[4096], want[4096], p[400], dbg[400], away[400];
	struct symcache_stats st;

	snprintf(p, sizeof(p), "%s/linked", dir);
	snprintf(dbg, sizeof(dbg), "%s/linked.debug", dir);
	snprintf(away, sizeof(away), "%s/linked.debug.away", dir);
	if (build(p, "zeta", 1, "") ||
	    CHECK_SH("objcopy --only-keep-debug %s %s && strip --strip-debug %s &&"
	       " objcopy --add-gnu-debuglink=%s %s", p, dbg, p, dbg, p)) {
		CHECK("symcache-debug-file-appears", 0, "cannot make %s", p);
		return;
	}
	nf = funcs(p, fnames, faddr, 16);
	rename(dbg, away);
	run(p, got, sizeof(got), &st);
	if (!strstr(got, "zeta|-:0")) {
		CHECK("symcache-debug-file-appears", 0,
		      "a declaration known without the debug file: %s", got);
		return;
	}
	rename(away, dbg);
	ref(p, want, sizeof(want));
	run(p, got, sizeof(got), &st);
	CHECK("symcache-debug-file-appears", !strcmp(got, want) &&
	      strstr(got, "zeta|src-zeta.c:2") && st.loaded == 0,
	      "got %s, want %s (loaded %u)", got, want, st.loaded);
}

static void check_where(const char *prog)
{
	char got[4096], want[4096], p[400], *d;
	struct symcache_stats st;
	struct timespec old[2] = { { 1000000, 0 }, { 1000000, 0 } };
	int fd;

	ref(prog, want, sizeof(want));

	/* default: $XDG_CACHE_HOME/propel/symbols */
	unsetenv("PROPEL_SYMBOL_CACHE");
	snprintf(p, sizeof(p), "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", p, 1);
	d = symcache_dir();
	snprintf(p, sizeof(p), "%s/xdg/propel/symbols", dir);
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-xdg-default", d && !strcmp(d, p) && count_files(p) == 1 &&
	      !strcmp(got, want), "dir %s (want %s), %d files", d ? d : "(none)",
	      p, count_files(p));
	free(d);

	/* a directory that cannot be made (under a regular file) */
	snprintf(p, sizeof(p), "%s/plain", dir);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s/plain/cache", dir);
	setenv("PROPEL_SYMBOL_CACHE", p, 1);
	run(prog, got, sizeof(got), &st);
	CHECK("symcache-unwritable-dir", !strcmp(got, want) &&
	      access(p, F_OK) != 0, "got %s, want %s", got, want);

	/* bounded: three old 600 KB files and a limit of 1 MiB */
	setenv("PROPEL_SYMBOL_CACHE", cache, 1);
	setenv("PROPEL_SYMBOL_CACHE_MAX", "1", 1);
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/old%d-0.sym", cache, i);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			if (ftruncate(fd, 600 << 10))
				perror("ftruncate");
			old[0].tv_sec = old[1].tv_sec = 1000000 + i;
			futimens(fd, old);
			close(fd);
		}
	}
	/* new answers to save: another program */
	snprintf(p, sizeof(p), "%s/eta", dir);
	build(p, "eta", 0, "");
	nf = funcs(p, fnames, faddr, 16);
	run(p, got, sizeof(got), &st);
	{
		long long total = 0;
		DIR *dd = opendir(cache);
		struct dirent *de;
		struct stat sb;
		char q[700];
		int olds = 0;

		while (dd && (de = readdir(dd))) {
			snprintf(q, sizeof(q), "%s/%s", cache, de->d_name);
			if (strstr(de->d_name, ".sym") && !stat(q, &sb)) {
				total += sb.st_size;
				olds += !strncmp(de->d_name, "old", 3);
			}
		}
		if (dd)
			closedir(dd);
		snprintf(q, sizeof(q), "%s/old2-0.sym", cache);
		CHECK("symcache-bounded", total <= (1 << 20) && olds == 1 &&
		      !access(q, F_OK) && count_files(cache) >= 2,
		      "%lld bytes in %d files, %d of the old ones left", total,
		      count_files(cache), olds);
	}
	unsetenv("PROPEL_SYMBOL_CACHE_MAX");
}

int main(void)
{
	char prog[400], want[4096];

	CHECKS_EXPECT(14);
	if (system("command -v gcc nm strip objcopy >/dev/null") != 0) {
		printf("SKIP test-symcache: gcc or binutils missing\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", CHECK_TMP("symcache"));
	CHECK_SH("rm -rf %s && mkdir -p %s", dir, dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	setenv("PROPEL_SYMBOL_CACHE", cache, 1);
	unsetenv("PROPEL_SYMBOL_CACHE_MAX");
	unsetenv("DEBUGINFOD_URLS");
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	if (build(prog, "alpha", 0, "")) {
		printf("FAIL symcache-build: cannot build %s\n", prog);
		return 1;
	}
	nf = funcs(prog, fnames, faddr, 16);
	ref(prog, want, sizeof(want));
	if (nf < 3 || !strstr(want, "alpha|src-alpha.c:1") ||
	    !strstr(want, "beta|src-alpha.c:2|src-alpha.c:2|i8|y:i8,p:p")) {
		printf("FAIL symcache-reference: libdwfl's answers are not the"
		       " program's: %s\n", want);
		return 1;
	}
	check_hit_and_corrupt(prog, want);
	check_content_changes(prog);
	check_debug_file_appears();
	check_where(prog);
	if (!failures)
		CHECK_SH("rm -rf %s", dir);
	return failures ? 1 : 0;
}
