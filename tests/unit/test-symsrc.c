/*
 * tests/unit/test-symsrc.c - where a function's name comes from when the
 * binary is stripped (engine/symbols.c through engine/ingest.c).
 *
 * One stripped copy of tests/fixtures/ingest/fix.c per source -- .symtab,
 * .dynsym, .gnu_debugdata (MiniDebugInfo), a debug file under
 * /usr/lib/debug/.build-id (installed for the test, removed after; root
 * only), a real local `debuginfod -F` (DEBUGINFOD_URLS), none
 * (module+0xOFFSET, checked against addr2line) -- each with its own random
 * build-id, ingested before and after each source is made available; and a
 * shared library at its own load bias beside a PIE.  Sessions are written
 * as the agent writes them (tests/unit/ingest-lib.h).  The same session
 * ingested with symbols warmed while "the run went"
 * (engine/ingest-warm.h) gives the same rows.
 */
#include "tests/unit/ingest-lib.h"
#include "tests/unit/check.h"
#include "engine/ingest-warm.h"
#include "engine/symbols.h"

static struct bin c0;
static const char *csrc = "tests/fixtures/ingest/fix.c";

/* ---- where names come from ---- */

enum { SV_SYMTAB, SV_DYNSYM, SV_MINI, SV_BUILDID, SV_DEBUGINFOD, SV_NONE, SV_N };

static const struct {
	const char *name, *flags;
} sv_kind[SV_N] = {
	[SV_SYMTAB] = { "symtab", "" },
	[SV_DYNSYM] = { "dynsym", "-rdynamic" },
	[SV_MINI] = { "mini", "" },
	[SV_BUILDID] = { "buildid", "" },
	[SV_DEBUGINFOD] = { "debuginfod", "" },
	[SV_NONE] = { "none", "" },
};

struct symvar {
	struct bin b;		/* unstripped, with its addresses */
	char file[700];		/* what the session names (stripped copy) */
	char id[41];		/* build-id, hex */
};

static struct symvar sv[SV_N];
static struct bin svlib;	/* fix.c as a shared library */

static void random_hex(char *out, int n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned seed = (unsigned)(getpid() * 2654435761u) ^ (unsigned)propel_real_ns();
	int i;

	for (i = 0; i < n; i++)
		out[i] = hex[rand_r(&seed) % 16];
	out[n] = 0;
}

/* Build the variants; 0 or -1. */
static int sv_build(const char *dir)
{
	char opt[256], name[64];
	int k;

	if (CHECK_SH("mkdir -p %s/strip %s/dbg %s/srv", dir, dir, dir))
		return -1;
	for (k = 0; k < SV_N; k++) {
		struct symvar *v = &sv[k];

		random_hex(v->id, 40);
		snprintf(opt, sizeof(opt), "-O0 %s -Wl,--build-id=0x%s",
			 sv_kind[k].flags, v->id);
		snprintf(name, sizeof(name), "sym-%s", sv_kind[k].name);
		if (bin_build(&v->b, "gcc", csrc, opt, name))
			return -1;
		snprintf(v->file, sizeof(v->file), "%s/strip/%s", dir, name);
	}
	/* .symtab: the binary as built */
	if (CHECK_SH("cp %s %s", sv[SV_SYMTAB].b.path, sv[SV_SYMTAB].file) ||
	    /* .dynsym only: -rdynamic exports main, mid, leaf */
	    CHECK_SH("strip --strip-all -o %s %s", sv[SV_DYNSYM].file,
	       sv[SV_DYNSYM].b.path) ||
	    /* MiniDebugInfo, as Fedora makes it (gdb manual, "MiniDebugInfo"):
	     * the function symbols .dynsym lacks, in an xz'd ELF */
	    CHECK_SH("cd %s/dbg && b=%s &&"
	       " nm -D $b --format=posix --defined-only | awk '{print $1}' |"
	       " sort >mini.dyn &&"
	       " nm $b --format=posix --defined-only |"
	       " awk '$2 == \"T\" || $2 == \"t\" {print $1}' | sort >mini.funcs &&"
	       " comm -13 mini.dyn mini.funcs >mini.keep &&"
	       " objcopy --only-keep-debug $b mini.full &&"
	       " objcopy -S --remove-section .gdb_index --remove-section .comment"
	       " --keep-symbols=mini.keep mini.full mini.debugdata &&"
	       " xz -f mini.debugdata &&"
	       " strip --strip-all -R .comment -o %s $b &&"
	       " objcopy --add-section .gnu_debugdata=mini.debugdata.xz %s",
	       dir, sv[SV_MINI].b.path, sv[SV_MINI].file, sv[SV_MINI].file) ||
	    /* separate debug files: kept away from the binary's directory */
	    CHECK_SH("objcopy --only-keep-debug %s %s/dbg/buildid.debug && strip"
	       " --strip-all -o %s %s",
	       sv[SV_BUILDID].b.path, dir, sv[SV_BUILDID].file,
	       sv[SV_BUILDID].b.path) ||
	    CHECK_SH("objcopy --only-keep-debug %s %s/srv/debuginfod.debug && strip"
	       " --strip-all -o %s %s",
	       sv[SV_DEBUGINFOD].b.path, dir, sv[SV_DEBUGINFOD].file,
	       sv[SV_DEBUGINFOD].b.path) ||
	    CHECK_SH("strip --strip-all -o %s %s", sv[SV_NONE].file, sv[SV_NONE].b.path))
		return -1;
	return bin_build(&svlib, "gcc", csrc,
			 "-O0 -shared -fPIC -fvisibility=hidden", "libfix.so");
}

/* one process per variant, pid 6000 + k: main -> mid -> leaf */
#define LIBBIAS 0x7f3c5a200000ull

static void sv_session(const char *dir)
{
	char text[4096];
	struct tw w;
	int k;

	for (k = 0; k < SV_N; k++) {
		const struct bin *b = &sv[k].b;
		char nonce[16];

		snprintf(nonce, sizeof(nonce), "s%d", k);
		snprintf(text, sizeof(text),
			 "P %d 1 %s %s\n"
			 "M 0 %llx %s\n"
			 "F 0 %llx 0 0 -\n"
			 "F 1 %llx 0 0 -\n"
			 "F 2 %llx 0 0 -\n"
			 "S 0 %llx 0\n"
			 "S 1 %llx 1\n"
			 "E 0\n",
			 6000 + k, nonce, sv[k].file, BIAS, sv[k].file,
			 BIAS + bin_fn(b, "main"), BIAS + bin_fn(b, "mid"),
			 BIAS + bin_fn(b, "leaf"),
			 BIAS + bin_call(b, "main", "mid", 1),
			 BIAS + bin_call(b, "mid", "leaf", 1));
		map_write(dir, 6000 + k, nonce, text);
		tw_open(&w, dir, 6000 + k, nonce, 6000 + k, 16, 64);
		tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
		tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
		tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 1, 0);
		tw_put(&w, PROPEL_REC_EXIT, 0, PROPEL_SITE_NONE);
		tw_close(&w);
	}
	/* a PIE and a shared library at their own biases; mid and leaf are in
	 * the library, the fault is in the library's mid */
	snprintf(text, sizeof(text),
		 "P 6100 1 sl %s\n"
		 "M 0 %llx %s\n"
		 "M 1 %llx %s\n"
		 "F 0 %llx 0 0 -\n"
		 "F 1 %llx 1 0 -\n"
		 "F 2 %llx 1 0 -\n"
		 "S 0 %llx 0\n",
		 c0.path, BIAS, c0.path, LIBBIAS, svlib.path,
		 BIAS + bin_fn(&c0, "main"), LIBBIAS + bin_fn(&svlib, "mid"),
		 LIBBIAS + bin_fn(&svlib, "leaf"),
		 LIBBIAS + bin_call(&svlib, "mid", "leaf", 1));
	map_write(dir, 6100, "sl", text);
	tw_open(&w, dir, 6100, "sl", 6100, 16, 64);
	tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_ENTRY, 1, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 0);
	tw_put(&w, PROPEL_REC_EXIT, 2, 0);
	tw_put(&w, PROPEL_REC_SIGNAL, 11, 1);
	tw_arg(&w, 0);
	tw_arg(&w, LIBBIAS + bin_call(&svlib, "mid", "leaf", 2));
	tw_close(&w);
}

/* Every function and call site row of a session, in order (malloc'd). */
static char *sv_all_rows(const char *db)
{
	struct session *s;
	const char *r;

	if (session_open(db, SESSION_READ, &s, NULL))
		return strdup("cannot open");
	r = q(s,
	      "SELECT * FROM (SELECT 'F', proc, addr, name, ifnull(module, ''),"
	      " ifnull(file, ''), ifnull(line, 0) FROM functions ORDER BY id)"
	      " UNION ALL SELECT * FROM (SELECT 'S', proc, addr, '', '',"
	      " ifnull(file, ''), ifnull(line, 0) FROM callsites ORDER BY id)");
	r = strdup(r);
	q_close(s);
	return (char *)r;
}

/*
 * The warm-up (engine/ingest-warm.h): its lookups made while the map
 * files grow leave the ingest's rows as they are without it; a line not
 * ended yet waits for its newline.
 */
static void check_warm(const char *dir, const char *sess, const char *cold)
{
	char wdir[450], db[450], path[700];
	struct ingest_warm *w;
	struct ingest_stats st;
	struct session *s;
	char *cause = NULL, *a, *b;
	int n0, n1, n2, n3, err;
	FILE *f;

	snprintf(wdir, sizeof(wdir), "%s/warm", dir);
	snprintf(db, sizeof(db), "%s/warm.db", dir);
	snprintf(path, sizeof(path), "%s/6100.sl.map", wdir);
	if (CHECK_SH("rm -rf %s && cp -r %s %s", wdir, sess, wdir) ||
	    !(w = ingest_warm_new(wdir))) {
		printf("FAIL symbols-warm: cannot copy %s\n", sess);
		nfail++;
		return;
	}
	n0 = ingest_warm_round(w);
	n1 = ingest_warm_round(w);
	f = fopen(path, "a");
	if (f) { /* a line the agent is writing: no newline yet */
		fputs("W still being writ", f);
		fclose(f);
	}
	n2 = ingest_warm_round(w);
	f = fopen(path, "a");
	if (f) {
		fputs("ten\n", f);
		fclose(f);
	}
	n3 = ingest_warm_round(w);
	check(n0 > 10 && n1 == 0 && n2 == 0 && n3 == 1, "symbols-warm-follows-lines",
	      "lines read per round: %d %d %d %d, want >10 0 0 1", n0, n1, n2,
	      n3);
	/* the warning line is the copy's only difference: the session's rows
	 * are compared with the cold ingest's */
	unlink(db);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err) {
		struct symbols *sy = ingest_warm_stop(w);

		w = NULL;
		err = ingest_dir_symbols(s, wdir, sy, &st, &cause);
		symbols_free(sy);
		q_close(s);
	}
	ingest_warm_stop(w);
	a = sv_all_rows(cold);
	b = sv_all_rows(db);
	check(!err && a && b && strcmp(a, b) == 0 && strstr(a, "libfix.so"),
	      "symbols-warm-same-rows", "%s\ncold: %s\nwarm: %s",
	      cause ? cause : "", a, b);
	free(a);
	free(b);
	free(cause);
}

static int sv_ingest(const char *dir, const char *db)
{
	struct ingest_stats st;
	struct session *s;
	char *cause = NULL;
	int err;

	unlink(db);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err) {
		err = ingest_dir(s, dir, &st, &cause);
		q_close(s);
	}
	if (err)
		printf("FAIL symbols-ingest: %s\n", cause ? cause : "?");
	free(cause);
	return err;
}

/* "name|file|line;" of variant k's functions, then its call site mid->leaf */
static const char *sv_rows(const char *db, int k)
{
	struct session *s;
	const char *r;

	if (session_open(db, SESSION_READ, &s, NULL))
		return "cannot open";
	r = q(s,
	      "SELECT f.name FROM functions f JOIN processes p ON p.id = f.proc"
	      " WHERE p.pid = %d UNION ALL SELECT ifnull(c.file, 'NULL') || ':'"
	      " || ifnull(c.line, 'NULL') FROM callsites c JOIN processes p ON"
	      " p.id = c.proc WHERE p.pid = %d AND c.id = (SELECT max(id) FROM"
	      " callsites WHERE proc = p.id)",
	      6000 + k, 6000 + k);
	q_close(s);
	return r;
}

/* expected rows: the names, or module+0xOFFSET; the site's line when the
 * source has DWARF */
static void sv_want(char *want, size_t size, int k, int named, int lines)
{
	const struct bin *b = &sv[k].b;
	const char *base = strrchr(sv[k].file, '/') + 1;

	if (named)
		snprintf(want, size, "main;mid;leaf;");
	else
		snprintf(want, size, "%s+0x%" PRIx64 ";%s+0x%" PRIx64 ";%s+0x%"
			 PRIx64 ";", base, bin_fn(b, "main"), base,
			 bin_fn(b, "mid"), base, bin_fn(b, "leaf"));
	if (lines)
		snprintf(want + strlen(want), size - strlen(want), "%s:%d;",
			 csrc, marker(csrc, "site:mid:leaf:1"));
	else
		snprintf(want + strlen(want), size - strlen(want), "NULL:NULL;");
}

static void sv_check(const char *name, const char *db, int k, int named,
		     int lines)
{
	char want[1024];
	const char *got;

	sv_want(want, sizeof(want), k, named, lines);
	got = sv_rows(db, k);
	check(strcmp(got, want) == 0, name, "got '%s', want '%s'", got, want);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* a real debuginfod serving dir/srv on 127.0.0.1; its pid, or -1 */
static pid_t debuginfod_start(const char *dir, int *port)
{
	int tries;

	for (tries = 0; tries < 3; tries++) {
		char p[16], dbf[600], log[600];
		pid_t pid;
		int i;

		*port = free_port();
		if (*port < 0)
			return -1;
		snprintf(p, sizeof(p), "%d", *port);
		snprintf(dbf, sizeof(dbf), "%s/debuginfod.sqlite", dir);
		snprintf(log, sizeof(log), "%s/debuginfod.log", dir);
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
			char srv[600];

			snprintf(srv, sizeof(srv), "%s/srv", dir);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execlp("debuginfod", "debuginfod", "-F", srv, "-p", p,
			       "-d", dbf, "-t", "0", "-g", "0", (char *)NULL);
			_exit(127);
		}
		/* ready when it serves the debug file (scanned) */
		for (i = 0; i < 200; i++) {
			int st;

			if (waitpid(pid, &st, WNOHANG) == pid)
				break;
			if (CHECK_SH("curl -sf -o /dev/null http://127.0.0.1:%d/buildid/"
			       "%s/debuginfo",
			       *port, sv[SV_DEBUGINFOD].id) == 0)
				return pid;
			usleep(50000);
		}
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void check_symbol_sources(void)
{
	char dir[400], sess[450], db[450], dbgdir[64], dbgfile[128];
	char url[64], cache[450];
	int k, port, made_dir = 0;
	pid_t dpid;

	snprintf(dir, sizeof(dir), "%s/symbols", tmp);
	snprintf(sess, sizeof(sess), "%s/session", dir);
	if (CHECK_SH("mkdir -p %s", sess) || sv_build(dir)) {
		printf("FAIL symbols-fixtures: cannot build the stripped variants\n");
		nfail++;
		return;
	}
	{
		int distinct = 1, j;

		for (k = 0; k < SV_N; k++)
			for (j = 0; j < k; j++)
				distinct &= strcmp(sv[k].id, sv[j].id) != 0;
		check(distinct && CHECK_SH("readelf -S %s | grep -q gnu_debugdata",
				     sv[SV_MINI].file) == 0 &&
			      CHECK_SH("readelf -S %s | grep -q '\\.symtab'",
				 sv[SV_NONE].file) != 0,
		      "symbols-fixtures", "build-ids not distinct, or strip failed");
	}
	sv_session(sess);

	/* 1. nothing installed, no debuginfod */
	unsetenv("DEBUGINFOD_URLS");
	snprintf(db, sizeof(db), "%s/before.db", dir);
	if (sv_ingest(sess, db))
		return;
	sv_check("symbols-from-symtab", db, SV_SYMTAB, 1, 1);
	sv_check("symbols-from-dynsym", db, SV_DYNSYM, 1, 0);
	sv_check("symbols-from-gnu-debugdata", db, SV_MINI, 1, 0);
	sv_check("symbols-buildid-before-install", db, SV_BUILDID, 0, 0);
	sv_check("symbols-debuginfod-without-urls", db, SV_DEBUGINFOD, 0, 0);
	sv_check("symbols-none-module-offset", db, SV_NONE, 0, 0);
	{
		char cmd[1400], out[256] = "";
		FILE *f;

		/* the offset is the file's address: addr2line on the unstripped
		 * twin names it */
		snprintf(cmd, sizeof(cmd), "addr2line -f -e %s 0x%" PRIx64,
			 sv[SV_NONE].b.path, bin_fn(&sv[SV_NONE].b, "leaf"));
		f = popen(cmd, "r");
		if (f) {
			if (!fgets(out, sizeof(out), f))
				out[0] = 0;
			pclose(f);
		}
		check(strcmp(out, "leaf\n") == 0,
		      "symbols-none-offset-agrees-with-addr2line", "%s: %s", cmd,
		      out);
	}
	/* the shared library: its own bias, its DWARF, the fault's line */
	{
		struct session *s;
		char want[1024];

		if (!session_open(db, SESSION_READ, &s, NULL)) {
			snprintf(want, sizeof(want), "main|NULL;mid|%s:%d;leaf|%s:%d;",
				 csrc, marker(csrc, "decl:mid"), csrc,
				 marker(csrc, "decl:leaf"));
			CHECK_Q("symbols-shared-library-bias", want, s,
				"SELECT f.name, CASE WHEN f.module LIKE '%%libfix.so'"
				" THEN f.file || ':' || f.line ELSE 'NULL' END FROM"
				" functions f JOIN processes p ON p.id = f.proc"
				" WHERE p.pid = 6100 ORDER BY f.id");
			snprintf(want, sizeof(want), "%s|%d;", csrc,
				 marker(csrc, "site:mid:leaf:2"));
			CHECK_Q("symbols-shared-library-fault-line", want, s,
				"SELECT c.file, c.line FROM events e JOIN callsites c"
				" ON c.id = e.site WHERE e.kind = 3 AND e.pid = 6100");
			q_close(s);
		}
	}

	check_warm(dir, sess, db);

	/* 2. the debug file under /usr/lib/debug/.build-id */
	snprintf(dbgdir, sizeof(dbgdir), "/usr/lib/debug/.build-id/%.2s",
		 sv[SV_BUILDID].id);
	snprintf(dbgfile, sizeof(dbgfile), "%s/%.38s.debug", dbgdir,
		 sv[SV_BUILDID].id + 2);
	if (access(dbgdir, F_OK) != 0)
		made_dir = 1;
	if (CHECK_SH("mkdir -p %s 2>/dev/null && cp %s/dbg/buildid.debug %s 2>/dev/null",
	       dbgdir, dir, dbgfile) == 0) {
		snprintf(db, sizeof(db), "%s/buildid.db", dir);
		if (!sv_ingest(sess, db)) {
			sv_check("symbols-from-build-id-debug-file", db, SV_BUILDID,
				 1, 1);
			sv_check("symbols-debuginfod-still-without-urls", db,
				 SV_DEBUGINFOD, 0, 0);
		}
		unlink(dbgfile);
		if (made_dir)
			rmdir(dbgdir);
	} else {
		printf("SKIP symbols-from-build-id-debug-file: cannot write %s"
		       " (needs root)\n", dbgdir);
		if (made_dir)
			rmdir(dbgdir);
	}

	/* 3. debuginfod */
	if (system("command -v debuginfod >/dev/null && command -v curl"
		   " >/dev/null") != 0) {
		printf("SKIP symbols-from-debuginfod: debuginfod or curl not"
		       " installed (tests/install-deps.sh test)\n");
		return;
	}
	dpid = debuginfod_start(dir, &port);
	if (dpid < 0) {
		printf("FAIL symbols-from-debuginfod: debuginfod did not serve"
		       " (see %s/debuginfod.log)\n", dir);
		nfail++;
		return;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	snprintf(cache, sizeof(cache), "%s/debuginfod-cache", dir);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	snprintf(db, sizeof(db), "%s/debuginfod.db", dir);
	if (!sv_ingest(sess, db)) {
		sv_check("symbols-from-debuginfod", db, SV_DEBUGINFOD, 1, 1);
		sv_check("symbols-none-with-debuginfod", db, SV_NONE, 0, 0);
	}
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	kill(dpid, SIGTERM);
	waitpid(dpid, NULL, 0);
}

int main(void)
{
	/* how many PASS/FAIL lines follow (tests/run.sh holds us to it) */
	printf("CHECKS 16\n");
	fflush(stdout);
	/* a case sets DEBUGINFOD_URLS itself */
	unsetenv("DEBUGINFOD_URLS");
	if (lib_init("test-symsrc"))
		return 1;
	if (system("command -v gcc objdump >/dev/null") != 0) {
		printf("SKIP test-symsrc: gcc or objdump missing\n");
		return 0;
	}
	if (bin_build(&c0, "gcc", csrc, "-O0", "fix-c-O0")) {
		printf("FAIL fixtures: cannot build %s\n", csrc);
		return 1;
	}
	check_symbol_sources();
	lib_done();
	return nfail ? 1 : 0;
}
