/*
 * tests/unit/test-ingest.c - engine/ingest.c, engine/symbols.c,
 * engine/replay.c and `propel replay`, without the agent.
 *
 * Compiles tests/fixtures/ingest/fix.c and fix.cc with -g at -O0 and -O2,
 * takes function and call addresses from the binaries (objdump), writes map
 * and ring files exactly as the agent does (share/ring.h: commit points,
 * calibration pairs), ingests them and checks the rows, then runs
 * `propel replay` in text and jsonl and compares with the expected output.
 * Expected lines come from the markers in the fixture sources.
 *
 * Cases written: two processes with several threads, a wrapped ring whose
 * oldest frames must be rebuilt, a thread that starts inside an open frame
 * (attach), a kill between zeroing and committing, a truncated ring, a ring
 * from a newer version, a ring with bad magic, an unknown record, a signal
 * record at the end (crash; its site is the pc's line).
 *
 * Where names come from (stripped binaries, debug files, debuginfod) is
 * tests/unit/test-symsrc.c; the helpers both use are ingest-lib.h.
 *
 * `test-ingest --bench N` ingests N synthetic events and prints events/s.
 */
#include "tests/unit/ingest-lib.h"
#include "engine/ingest-fault.h"
#include "engine/ingest-int.h"
#include "share/clock.h"

/* ---- the scenario ---- */

static struct bin c0, c2, cc0, cc2;
static char stripped[600];
static const char *csrc = "tests/fixtures/ingest/fix.c";
static const char *ccsrc = "tests/fixtures/ingest/fix.cc";
static const char *mangled_poke = "_ZNK2ns6Widget4pokeEi";
static const char *mangled_twice = "_ZN2ns5twiceIiEET_S1_";

/* funcs 0 main, 1 mid, 2 leaf, 3 printf (PLT); sites 0 main->mid,
 * 1 mid->leaf, 2 mid->leaf (second), 3 _start->main (not traced) */
static void map_c(const char *dir, uint32_t pid, uint32_t ppid,
		  const char *nonce, const struct bin *b, int exit_line)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "P %u %u %s %s\n"
		 "M 0 %llx %s\n"
		 "F 0 %llx 0 0 -\n"
		 "F 1 %llx 0 0 -\n"
		 "F 2 %llx 0 0 -\n"
		 "F 3 %llx 0 1 printf\n"
		 "S 0 %llx 0\n"
		 "S 1 %llx 1\n"
		 "S 2 %llx 1\n"
		 "S 3 %llx -1\n"
		 "%s",
		 pid, ppid, nonce, b->path, BIAS, b->path,
		 BIAS + bin_fn(b, "main"), BIAS + bin_fn(b, "mid"),
		 BIAS + bin_fn(b, "leaf"), BIAS + bin_fn(b, "printf@plt"),
		 BIAS + bin_call(b, "main", "mid", 1),
		 BIAS + bin_call(b, "mid", "leaf", 1),
		 BIAS + bin_call(b, "mid", "leaf", 2),
		 BIAS + bin_call(b, "_start", "main", 1) ?: BIAS + bin_fn(b, "_start") + 4,
		 exit_line ? "E 0\n" : "");
	map_write(dir, pid, nonce, text);
}

/* funcs 0 main, 1 poke, 2 twice; sites 0 main->poke, 1 main->twice */
static void map_cc(const char *dir, uint32_t pid, const char *nonce,
		   const struct bin *b, int exit_line)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "P %u 1 %s %s\n"
		 "M 0 %llx %s\n"
		 "F 0 %llx 0 0 -\n"
		 "F 1 %llx 0 0 -\n"
		 "F 2 %llx 0 0 %s\n"
		 "S 0 %llx 0\n"
		 "S 1 %llx 0\n"
		 "%s",
		 pid, nonce, b->path, BIAS, b->path, BIAS + bin_fn(b, "main"),
		 BIAS + bin_fn(b, mangled_poke), BIAS + bin_fn(b, mangled_twice),
		 mangled_twice, BIAS + bin_call(b, "main", mangled_poke, 1),
		 BIAS + bin_call(b, "main", mangled_twice, 1),
		 exit_line ? "E 0\n" : "");
	map_write(dir, pid, nonce, text);
}

static void write_session(const char *dir)
{
	struct tw w;
	int i;

	map_c(dir, 1000, 1, "a1", &c0, 0);
	/* 1000: main thread, ends in a fault */
	tw_open(&w, dir, 1000, "a1", 1000, 16, 64);
	tw_put(&w, PROPEL_REC_ENTRY, 0, 3);
	tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 2);
	tw_put(&w, PROPEL_REC_EXIT, 2, 2);
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_put(&w, PROPEL_REC_ENTRY, 3, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_EXIT, 3, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_FORK, 1500, 0);
	tw_put(&w, 15, 7, 7); /* a record type from the future */
	tw_put(&w, PROPEL_REC_SIGNAL, 11, 1);
	tw_arg(&w, 0x10);
	tw_arg(&w, BIAS + bin_call(&c0, "mid", "leaf", 1)); /* the pc */
	tw_close(&w);

	/* 1001: a wrapped ring (4 x 8 records, 46 written): the oldest kept
	 * record is an exit of leaf; mid's and main's entries are gone */
	tw_open(&w, dir, 1000, "a1", 1001, 4, 8);
	tw_put(&w, PROPEL_REC_THREAD_START, 1000, 0);
	tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
	for (i = 0; i < 20; i++) {
		tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	}
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_put(&w, PROPEL_REC_EXIT, 0, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_THREAD_EXIT, 0, 0);
	tw_close(&w);

	/* 1003: started inside mid (attach): main's frame is rebuilt from
	 * the call site's function */
	tw_open(&w, dir, 1000, "a1", 1003, 16, 64);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_close(&w);

	/* 1004: sampled time (share/agent-abi.h PROPEL_STAMP_EVERY): mid's
	 * entry and exit and leaf's CALL record carry main's stamp, dated
	 * evenly up to main's exit, 8 ticks later; the CALL is leaf's entry
	 * and exit at one time */
	tw_open(&w, dir, 1000, "a1", 1004, 16, 64);
	tw_put_at(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE, 0);
	tw_put_at(&w, PROPEL_REC_ENTRY, 1, 0, 0);
	tw_put_at(&w, PROPEL_REC_CALL, 2, 1, 0);
	tw_put_at(&w, PROPEL_REC_EXIT, 1, 0, 0);
	tw_put_at(&w, PROPEL_REC_EXIT, 0, PROPEL_SITE_NONE, 8);
	tw_close(&w);

	/* C++ -O0: killed between beginning sub-buffer 2 and committing */
	map_cc(dir, 2000, "b2", &cc0, 0);
	tw_open(&w, dir, 2000, "b2", 2000, 4, 8);
	tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
	for (i = 0; i < 7; i++) {
		tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
		tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	}
	/* the 16th record fills sub-buffer 1: begin 2, then die */
	{
		struct propel_rec *r = propel_ring_sub(w.h, 1) + 7;

		r->a = 2;
		r->b = 1;
		r->w0 = propel_rec_w0(TSC0 + TICK * w.nrec++, PROPEL_REC_ENTRY);
		tw_begin_next(&w);
	}
	tw_close(&w);
	/* a truncated ring, one from a newer propel, one not a ring */
	tw_open(&w, dir, 2000, "b2", 2001, 4, 8);
	tw_put(&w, PROPEL_REC_ENTRY, 0, 0);
	tw_close(&w);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/2000.b2.2001.ring", dir);
		if (truncate(p, PROPEL_RING_HDR_SIZE + 100))
			perror(p);
	}
	tw_open(&w, dir, 2000, "b2", 2002, 4, 8);
	w.h->version = PROPEL_RING_VERSION + 1;
	tw_put(&w, PROPEL_REC_ENTRY, 0, 0);
	tw_close(&w);
	tw_open(&w, dir, 2000, "b2", 2003, 4, 8);
	memcpy(w.h->magic, "NOTARING", 8);
	tw_close(&w);
	{
		/* a thread's ring made but not begun (the process died while
		 * the agent set it up): all zeros, no damage to report */
		char p[512];
		int fd;

		snprintf(p, sizeof(p), "%s/2000.b2.2004.ring", dir);
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 3 * PROPEL_RING_HDR_SIZE))
			perror(p);
		if (fd >= 0)
			close(fd);
	}

	/* -O2 binaries, clean exits */
	map_c(dir, 3000, 1, "c3", &c2, 1);
	tw_open(&w, dir, 3000, "c3", 3000, 16, 64);
	tw_put(&w, PROPEL_REC_ENTRY, 0, 3);
	tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 2);
	tw_put(&w, PROPEL_REC_EXIT, 2, 2);
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_put(&w, PROPEL_REC_EXIT, 0, 3);
	tw_put(&w, PROPEL_REC_PROCESS_EXIT, 0, 0);
	tw_close(&w);

	/* a stripped binary and a module whose file is gone: module+0x names */
	{
		char text[2048];

		snprintf(text, sizeof(text),
			 "P 5000 1 f6 %s\n"
			 "M 0 %llx %s\n"
			 "M 1 7f0000000000 /nonexistent/libgone.so\n"
			 "F 0 %llx 0 0 -\n"
			 "F 1 7f0000001000 1 0 -\n"
			 "S 0 %llx 0\n"
			 "E 0\n",
			 stripped, BIAS, stripped, BIAS + bin_fn(&c0, "main"),
			 BIAS + bin_call(&c0, "main", "mid", 1));
		map_write(dir, 5000, "f6", text);
		tw_open(&w, dir, 5000, "f6", 5000, 16, 64);
		tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
		tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
		tw_put(&w, PROPEL_REC_EXIT, 1, 0);
		tw_put(&w, PROPEL_REC_EXIT, 0, PROPEL_SITE_NONE);
		tw_close(&w);
	}

	map_cc(dir, 4000, "d4", &cc2, 1);
	tw_open(&w, dir, 4000, "d4", 4000, 16, 64);
	/* the tail of an event whose own record was overwritten (a flight
	 * ring's oldest kept sub-buffer): not an unknown record */
	tw_put_at(&w, PROPEL_REC_ARG, 7, 0, (uint64_t)-1); /* a tick before */
	w.nrec = 0;
	tw_put(&w, PROPEL_REC_ENTRY, 0, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	tw_put(&w, PROPEL_REC_EXIT, 0, PROPEL_SITE_NONE);
	tw_put(&w, PROPEL_REC_PROCESS_EXIT, 0, 0);
	tw_close(&w);
}

static void check_rows(struct session *s, const struct ingest_stats *st)
{
	char want[4096], warn[512];
	int l1, l2, lm, sig = 0, pid = 0;

	check(st->processes == 5 && st->threads == 8, "ingest-counts",
	      "processes %" PRIu64 " threads %" PRIu64, st->processes,
	      st->threads);
	check(st->rings_truncated == 1 && st->rings_newer == 1 &&
		      st->rings_corrupt == 1 && st->rings_unbegun == 1 &&
		      st->unknown_records == 1 &&
		      st->killed == 2 && st->wrapped == 1,
	      "ingest-damage-counted",
	      "truncated %" PRIu64 " newer %" PRIu64 " corrupt %" PRIu64
	      " unbegun %" PRIu64 " unknown %" PRIu64 " killed %" PRIu64 " wrapped %" PRIu64,
	      st->rings_truncated, st->rings_newer, st->rings_corrupt,
	      st->rings_unbegun, st->unknown_records, st->killed, st->wrapped);
	check(ingest_warning(st, warn, sizeof(warn)) == 1 &&
		      strstr(warn, "1 truncated ring(s) skipped") &&
		      !strchr(warn, '\n'),
	      "ingest-warning-line", "'%s'", warn);
	check(!st->tsc_measured && st->tsc_hz > 1999999999.0 &&
		      st->tsc_hz < 2000000001.0,
	      "ingest-tsc-from-headers", "hz %f measured %d", st->tsc_hz,
	      st->tsc_measured);
	CHECK_Q("ingest-meta", "2000000000|1;", s,
		"SELECT (SELECT value FROM meta WHERE key='tsc_hz'),"
		" (SELECT value FROM meta WHERE key='crashed')");
	check(ingest_crashed(s, &sig, &pid) == 1 && sig == 11 && pid == 1000,
	      "ingest-crashed", "signo %d pid %d", sig, pid);

	/* names, demangled; PLT name from the F line */
	CHECK_Q("symbols-c-names", "main|0;mid|0;leaf|0;printf|1;", s,
		"SELECT f.name, f.flags FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 1000 ORDER BY f.id");
	CHECK_Q("symbols-cxx-demangled",
		"main;ns::Widget::poke(int) const;int ns::twice<int>(int);", s,
		"SELECT f.name FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 2000 ORDER BY f.id");
	CHECK_Q("symbols-cxx-O2-demangled",
		"main;ns::Widget::poke(int) const;int ns::twice<int>(int);", s,
		"SELECT f.name FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 4000 ORDER BY f.id");
	/* declarations */
	snprintf(want, sizeof(want), "%s|%d;%s|%d;%s|%d;NULL|NULL;",
		 csrc, marker(csrc, "decl:main"), csrc, marker(csrc, "decl:mid"),
		 csrc, marker(csrc, "decl:leaf"));
	CHECK_Q("symbols-decl-O0", want, s,
		"SELECT f.file, f.line FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 1000 ORDER BY f.id");
	CHECK_Q("symbols-decl-O2", want, s,
		"SELECT f.file, f.line FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 3000 ORDER BY f.id");
	snprintf(want, sizeof(want), "%s|%d;%s|%d;", ccsrc,
		 marker(ccsrc, "def:poke"), ccsrc, marker(ccsrc, "decl:twice"));
	CHECK_Q("symbols-decl-cxx", want, s,
		"SELECT f.file, f.line FROM functions f JOIN processes p ON"
		" p.id = f.proc WHERE p.pid = 2000 AND f.name != 'main'"
		" ORDER BY f.id");
	/* call sites: file:line at -O0 and -O2; the site in _start has none */
	lm = marker(csrc, "site:main:mid:1");
	l1 = marker(csrc, "site:mid:leaf:1");
	l2 = marker(csrc, "site:mid:leaf:2");
	snprintf(want, sizeof(want), "%s|%d;%s|%d;%s|%d;NULL|NULL;", csrc,
		 lm, csrc, l1, csrc, l2);
	CHECK_Q("symbols-sites-O0", want, s,
		"SELECT c.file, c.line FROM callsites c JOIN processes p ON"
		" p.id = c.proc WHERE p.pid = 1000 AND c.id NOT IN (SELECT"
		" site FROM events WHERE kind = 3 AND site IS NOT NULL)"
		" ORDER BY c.id");
	CHECK_Q("symbols-sites-O2", want, s,
		"SELECT c.file, c.line FROM callsites c JOIN processes p ON"
		" p.id = c.proc WHERE p.pid = 3000 ORDER BY c.id");
	snprintf(want, sizeof(want), "%s|%d;%s|%d;", ccsrc,
		 marker(ccsrc, "site:main:poke:1"), ccsrc,
		 marker(ccsrc, "site:main:twice:1"));
	CHECK_Q("symbols-sites-cxx-O2", want, s,
		"SELECT c.file, c.line FROM callsites c JOIN processes p ON"
		" p.id = c.proc WHERE p.pid = 4000 ORDER BY c.id");

	/* no symbol anywhere: module+0xOFFSET, the address in the file */
	{
		const char *base = strrchr(stripped, '/') + 1;

		snprintf(want, sizeof(want),
			 "%s+0x%" PRIx64 "|NULL|NULL;libgone.so+0x1000|NULL|NULL;"
			 "site|NULL|NULL;",
			 base, bin_fn(&c0, "main"));
	}
	CHECK_Q("symbols-stripped-module-offset", want, s,
		"SELECT f.name, f.file, f.line FROM functions f JOIN processes p"
		" ON p.id = f.proc WHERE p.pid = 5000 UNION ALL SELECT 'site',"
		" c.file, c.line FROM callsites c JOIN processes p ON p.id = c.proc"
		" WHERE p.pid = 5000");
	{
		char cmd[1400], out[256] = "";
		FILE *f;

		snprintf(cmd, sizeof(cmd), "addr2line -f -e %s 0x%" PRIx64,
			 c0.path, bin_fn(&c0, "main"));
		f = popen(cmd, "r");
		if (f) {
			if (!fgets(out, sizeof(out), f))
				out[0] = 0;
			pclose(f);
		}
		check(strcmp(out, "main\n") == 0, "symbols-offset-agrees-with-addr2line",
		      "%s: %s", cmd, out);
	}
	CHECK_Q("symbols-never-question-mark", "0;", s,
		"SELECT count(*) FROM functions WHERE name = '?' OR name LIKE"
		" '?@%%' OR name IS NULL OR name = ''");
	/* depths of the plain thread, the signal folded with its ARGs */
	CHECK_Q("ingest-depths",
		"1|0|main;1|1|mid;1|2|leaf;2|2|leaf;1|2|leaf;2|2|leaf;2|1|mid;"
		"1|1|printf;2|1|printf;7|1|NULL;3|1|NULL;",
		s,
		"SELECT e.kind, e.depth, f.name FROM events e LEFT JOIN"
		" functions f ON f.id = e.func WHERE e.tid = 1000 ORDER BY e.id");
	snprintf(want, sizeof(want), "11|16|%" PRIu64 ";",
		 (uint64_t)(BIAS + bin_call(&c0, "mid", "leaf", 1)));
	CHECK_Q("ingest-signal-args", want, s,
		"SELECT arg0, arg1, arg2 FROM events WHERE kind = 3");
	/* the signal's site: its pc's line, found with the module's bias */
	snprintf(want, sizeof(want), "%s|%d;", csrc,
		 marker(csrc, "site:mid:leaf:1"));
	CHECK_Q("ingest-signal-site-is-pc-line", want, s,
		"SELECT c.file, c.line FROM events e JOIN callsites c ON"
		" c.id = e.site WHERE e.kind = 3");
	CHECK_Q("ingest-sampled-time",
		"1|0|main|0;1|1|mid|2000;1|2|leaf|4000;2|2|leaf|4000;"
		"2|1|mid|6000;2|0|main|8000;",
		s,
		"SELECT e.kind, e.depth, f.name, e.ts_ns - 5000000000 FROM events"
		" e LEFT JOIN functions f ON f.id = e.func WHERE e.tid = 1004"
		" ORDER BY e.id");
	CHECK_Q("ingest-ts-ns", "5000000000;5000001000;5000011000;", s,
		"SELECT ts_ns FROM events WHERE tid = 1000 AND"
		" (id = (SELECT min(id) FROM events WHERE tid = 1000) OR"
		" kind IN (2, 3) AND depth = 1 AND func IS NULL OR"
		" kind = 1 AND depth = 1 AND func = (SELECT id FROM functions"
		" WHERE name = 'mid' AND proc = 1)) ORDER BY id");

	/* wrapped ring: main, mid, leaf rebuilt at depth 0, 1, 2; the
	 * outermost exits come back to depth 0 */
	CHECK_Q("ingest-wrapped-rebuilt",
		"1|0|main|1;1|1|mid|1;1|2|leaf|1;2|2|leaf|0;1|2|leaf|NULL;", s,
		"SELECT e.kind, e.depth, f.name, e.arg0 FROM events e LEFT JOIN"
		" functions f ON f.id = e.func WHERE e.tid = 1001"
		" ORDER BY e.id LIMIT 5");
	CHECK_Q("ingest-wrapped-tail", "2|1|mid;2|0|main;6|0|NULL;", s,
		"SELECT kind, depth, name FROM (SELECT e.id, e.kind, e.depth,"
		" f.name FROM events e LEFT JOIN functions f ON f.id = e.func"
		" WHERE e.tid = 1001 ORDER BY e.id DESC LIMIT 3) ORDER BY id");
	CHECK_Q("ingest-wrapped-thread", "1|33;0|11;0|6;0|5;", s,
		"SELECT wrapped, nevents FROM threads WHERE pid = 1000"
		" ORDER BY wrapped DESC, nevents DESC");
	CHECK_Q("ingest-wrapped-balanced", "16|16|0;", s,
		"SELECT sum(kind = 1), sum(kind = 2), min(depth) FROM events"
		" WHERE tid = 1001");
	/* attach: parent main rebuilt from the call site of mid */
	CHECK_Q("ingest-parent-rebuilt",
		"1|0|main|1;1|1|mid|1;1|2|leaf|NULL;2|2|leaf|0;2|1|mid|0;", s,
		"SELECT e.kind, e.depth, f.name, e.arg0 FROM events e LEFT JOIN"
		" functions f ON f.id = e.func WHERE e.tid = 1003 ORDER BY e.id");
	/* kill between zeroing and committing: all 16 records are there */
	CHECK_Q("ingest-kill-mid-commit",
		"16|1|int ns::twice<int>(int)|1;", s,
		"SELECT (SELECT count(*) FROM events WHERE tid = 2000), e.depth,"
		" f.name, e.kind FROM events e JOIN functions f ON f.id = e.func"
		" WHERE e.tid = 2000 ORDER BY e.id DESC LIMIT 1");
	CHECK_Q("ingest-processes",
		"1000|1|NULL|11;2000|1|NULL|NULL;3000|1|0|NULL;4000|1|0|NULL;"
		"5000|1|0|NULL;", s,
		"SELECT pid, end_ns > start_ns, exit_status, signal FROM"
		" processes ORDER BY pid");
}

static void check_replay(const char *db)
{
	char out[16384], want[16384], args[1024];
	char file[600];
	int rc;
	uint64_t pc = BIAS + bin_call(&c0, "mid", "leaf", 1);

	snprintf(file, sizeof(file), "%s", csrc);
	snprintf(args, sizeof(args), "replay --tid 1000 %s", db);
	rc = run(args, out, sizeof(out));
	snprintf(want, sizeof(want),
		 "# DURATION     TID     FUNCTION\n"
		 "            [  1000] | main() {\n"
		 "            [  1000] |   mid() {\n"
		 "   1.000 us [  1000] |     leaf();\n"
		 "   1.000 us [  1000] |     leaf();\n"
		 "   5.000 us [  1000] |   } /* mid */\n"
		 "   1.000 us [  1000] |   printf();\n"
		 "            [  1000] |   /* fork: child 1500 */\n"
		 "            [  1000] |   /* signal: SIGSEGV (11) addr=0x10 "
		 "pc=0x%" PRIx64 " */\n",
		 pc);
	check(rc == 0, "replay-text-exit", "status %d", rc);
	check_text("replay-text", out, want);

	snprintf(args, sizeof(args), "replay --format=jsonl --tid 1000 %s", db);
	rc = run(args, out, sizeof(out));
	snprintf(want, sizeof(want),
		 "{\"kind\":\"entry\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000000000,\"func\":\"main\",\"depth\":0}\n"
		 "{\"kind\":\"entry\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000001000,\"func\":\"mid\",\"depth\":1,\"file\":\"%s\",\"line\":%d}\n"
		 "{\"kind\":\"entry\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000002000,\"func\":\"leaf\",\"depth\":2,\"file\":\"%s\",\"line\":%d}\n"
		 "{\"kind\":\"exit\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000003000,\"func\":\"leaf\",\"depth\":2}\n"
		 "{\"kind\":\"entry\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000004000,\"func\":\"leaf\",\"depth\":2,\"file\":\"%s\",\"line\":%d}\n"
		 "{\"kind\":\"exit\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000005000,\"func\":\"leaf\",\"depth\":2}\n"
		 "{\"kind\":\"exit\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000006000,\"func\":\"mid\",\"depth\":1}\n"
		 "{\"kind\":\"entry\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000007000,\"func\":\"printf\",\"depth\":1}\n"
		 "{\"kind\":\"exit\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000008000,\"func\":\"printf\",\"depth\":1}\n"
		 "{\"kind\":\"fork\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000009000,\"child\":1500}\n"
		 "{\"kind\":\"signal\",\"pid\":1000,\"tid\":1000,\"ts_ns\":5000011000,\"signo\":11,\"addr\":16,"
		 "\"file\":\"%s\",\"line\":%d}\n",
		 file, marker(csrc, "site:main:mid:1"), file,
		 marker(csrc, "site:mid:leaf:1"), file,
		 marker(csrc, "site:mid:leaf:2"), file,
		 marker(csrc, "site:mid:leaf:1"));
	check(rc == 0, "replay-jsonl-exit", "status %d", rc);
	check_text("replay-jsonl", out, want);

	/* the wrapped thread: rebuilt frames make a balanced tree */
	snprintf(args, sizeof(args), "replay --tid 1001 %s | head -6", db);
	run(args, out, sizeof(out));
	check_text("replay-text-wrapped", out,
		   "# DURATION     TID     FUNCTION\n"
		   "            [  1001] | main() {\n"
		   "            [  1001] |   mid() {\n"
		   "            [  1001] |     leaf();\n"
		   "   1.000 us [  1001] |     leaf();\n"
		   "   1.000 us [  1001] |     leaf();\n");
	snprintf(args, sizeof(args), "replay --tid 1001 %s | tail -3", db);
	run(args, out, sizeof(out));
	check_text("replay-text-wrapped-tail", out,
		   "            [  1001] |   } /* mid */\n"
		   "            [  1001] | } /* main */\n"
		   "            [  1001] | /* thread_exit */\n");

	/* C++: simple names in text, full ones in jsonl */
	snprintf(args, sizeof(args), "replay --pid 4000 %s", db);
	run(args, out, sizeof(out));
	check_text("replay-text-cxx", out,
		   "# DURATION     TID     FUNCTION\n"
		   "            [  4000] | main() {\n"
		   "   1.000 us [  4000] |   ns::Widget::poke();\n"
		   "   1.000 us [  4000] |   ns::twice<int>();\n"
		   "   5.000 us [  4000] | } /* main */\n"
		   "            [  4000] | /* process_exit: status 0 */\n");
	snprintf(args, sizeof(args),
		 "replay --format=jsonl --pid 4000 %s | sed -n 2p", db);
	run(args, out, sizeof(out));
	snprintf(want, sizeof(want),
		 "{\"kind\":\"entry\",\"pid\":4000,\"tid\":4000,\"ts_ns\":5000001000,"
		 "\"func\":\"ns::Widget::poke(int) const\",\"depth\":1,"
		 "\"file\":\"%s\",\"line\":%d}\n",
		 ccsrc, marker(ccsrc, "site:main:poke:1"));
	check_text("replay-jsonl-cxx", out, want);

	snprintf(args, sizeof(args),
		 "replay --format=jsonl --pid 5000 %s | sed -n 2p", db);
	run(args, out, sizeof(out));
	snprintf(want, sizeof(want),
		 "{\"kind\":\"entry\",\"pid\":5000,\"tid\":5000,\"ts_ns\":5000001000,"
		 "\"func\":\"libgone.so+0x1000\",\"depth\":1}\n");
	check_text("replay-jsonl-unknown-name", out, want);

	/* every thread, in order of first event; every line parses as one
	 * object with the required fields */
	snprintf(args, sizeof(args),
		 "replay --format=jsonl %s | grep -vc '^{\"kind\":\"[a-z_]*\","
		 "\"pid\":[0-9]*,\"tid\":[0-9]*,\"ts_ns\":[0-9]*[,}]'",
		 db);
	run(args, out, sizeof(out));
	check(strcmp(out, "0\n") == 0, "replay-jsonl-all-fields",
	      "%s lines without the required fields", out);
	snprintf(args, sizeof(args), "replay --format=jsonl %s | wc -l", db);
	run(args, out, sizeof(out));
	check(atoi(out) == 11 + 33 + 5 + 6 + 16 + 9 + 7 + 4,
	      "replay-jsonl-all-events",
	      "%d lines", atoi(out));

	snprintf(args, sizeof(args), "replay --format=xml %s", db);
	rc = run(args, out, sizeof(out));
	check(rc == 2 && strncmp(out, "propel: replay", 14) == 0 &&
		      !strchr(out, '\n')[1],
	      "replay-bad-format", "status %d: %s", rc, out);
	snprintf(args, sizeof(args), "replay --tid x %s", db);
	rc = run(args, out, sizeof(out));
	check(rc == 2 && strncmp(out, "propel: replay", 14) == 0,
	      "replay-bad-tid", "status %d: %s", rc, out);
}

static void check_short_names(void)
{
	static const char *const in[][2] = {
		{ "ns::Widget::poke(int) const", "ns::Widget::poke" },
		{ "int ns::twice<int>(int)", "ns::twice<int>" },
		{ "S::operator()(int)", "S::operator()" },
		{ "main", "main" },
		{ "libfix.so+0x1a2b", "libfix.so+0x1a2b" },
		{ "(anonymous namespace)::f(char const*)",
		  "(anonymous namespace)::f" },
	};
	char buf[256];
	size_t i;
	int ok = 1;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		replay_short_name(in[i][0], buf, sizeof(buf));
		if (strcmp(buf, in[i][1]) != 0) {
			printf("  %s -> %s (want %s)\n", in[i][0], buf, in[i][1]);
			ok = 0;
		}
	}
	check(ok, "replay-short-names", "see above");
}

/* N events on one thread: a call tree three deep, as the hot loop sees it */
static int bench(uint64_t n, int report_only)
{
	char dir[300], db[300], cmd[700], *cause = NULL;
	struct ingest_stats st;
	struct session *s;
	struct tw w;
	uint64_t i, t0;
	uint32_t recs = (uint32_t)(n / 15 + 64);
	int err;

	snprintf(dir, sizeof(dir), "/dev/shm/propel-test-ingest.%d", getpid());
	mkdir(dir, 0755);
	snprintf(db, sizeof(db), "%s/bench.db", tmp);
	map_c(dir, 9000, 1, "e5", &c0, 1);
	tw_open(&w, dir, 9000, "e5", 9000, 16, recs);
	/* a 1 s calibration span no matter how many records */
	tw_put(&w, PROPEL_REC_ENTRY, 0, 3);
	for (i = 1; i + 1 < n; i += 6) {
		tw_put(&w, PROPEL_REC_ENTRY, 1, 0);
		tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 2, 1);
		tw_put(&w, PROPEL_REC_ENTRY, 2, 2);
		tw_put(&w, PROPEL_REC_EXIT, 2, 2);
		tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	}
	tw_close(&w);
	if (session_open(db, SESSION_CREATE, &s, &cause)) {
		printf("FAIL ingest-bench: %s\n", cause);
		return 1;
	}
	t0 = propel_mono_ns();
	err = ingest_dir(s, dir, &st, &cause);
	t0 = propel_mono_ns() - t0;
	q_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
		/* nothing */
	}
	if (err) {
		printf("FAIL ingest-bench: %s\n", cause);
		return 1;
	}
	printf("%s ingest-bench: %" PRIu64 " events in %.2f s = %.0f events/s"
	       "\n",
	       report_only ? "INFO" : "PASS", st.events, t0 / 1e9,
	       st.events / (t0 / 1e9));
	return 0;
}

/*
 * A drained ring is read in one walk (engine/ingest.c) unless its thread
 * began inside a frame: this one begins in mid (its leaf calls, then mid's
 * exit) with more events than a chunk holds, so the walk stores a chunk
 * before it knows; that chunk is deleted and the thread walked again,
 * main and mid rebuilt, ids without a gap.
 */
static void check_walked_again(void)
{
	char dir[300], db[300], *cause = NULL;
	struct ingest_stats st;
	struct session *s;
	struct tw w;
	int err, i;

	snprintf(dir, sizeof(dir), "%s/again", tmp);
	snprintf(db, sizeof(db), "%s/again.db", tmp);
	mkdir(dir, 0755);
	map_c(dir, 6000, 1, "e5", &c0, 0);
	tw_open(&w, dir, 6000, "e5", 6000, 16, 4096);
	w.h->keep_all = 1;
	for (i = 0; i < 20000; i++) {
		tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	}
	tw_put(&w, PROPEL_REC_EXIT, 1, 0);
	tw_close(&w);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err)
		err = ingest_dir(s, dir, &st, &cause);
	check(err == 0 && st.rebuilt_frames == 2 && st.events == 40003,
	      "again-ingest", "err %d rebuilt %" PRIu64 " events %" PRIu64,
	      err, st.rebuilt_frames, st.events);
	if (err)
		return;
	CHECK_Q("again-chunks", "3|40003;", s,
		"SELECT count(*), sum(count) FROM chunks WHERE tid = 6000");
	CHECK_Q("again-bodies", "1;", s,
		"SELECT (SELECT count(*) FROM chunk_data) ="
		" (SELECT count(*) FROM chunks)");
	CHECK_Q("again-ids", "40003|1;", s,
		"SELECT max(last_seq) - min(first_seq) + 1, min(depth_min)"
		" = 0 FROM chunks WHERE tid = 6000");
	q_close(s);
}

/* A ring begun inside leaf, called by mid, called by main (an attach):
 * the frames open are learned from the owners of the outermost calls'
 * sites -- leaf's call from mid's site, then, mid having returned
 * unrecorded, mid's from main's -- and opened outermost first (main,
 * mid at its call site); mid's frame closes, unwound, when main calls
 * mid again, so that leaf's path is main > mid > leaf both times (one
 * guessed frame made it mid > leaf, then mid > mid > leaf). */
static void check_open_chain(void)
{
	/* type, function, site: leaf from mid's site; mid from main's */
	static const unsigned recs[][3] = {
		{ PROPEL_REC_ENTRY, 2, 1 }, { PROPEL_REC_EXIT, 2, 1 },
		{ PROPEL_REC_ENTRY, 1, 0 }, { PROPEL_REC_ENTRY, 2, 2 },
		{ PROPEL_REC_EXIT, 2, 2 },  { PROPEL_REC_EXIT, 1, 0 },
	};
	/* the first call in flight at the attach (adopted: no site), then
	 * leaf from mid's site, mid from main's: the same frames */
	static const unsigned adopted[][3] = {
		{ PROPEL_REC_ENTRY, 2, PROPEL_SITE_NONE },
		{ PROPEL_REC_EXIT, 2, PROPEL_SITE_NONE },
		{ PROPEL_REC_ENTRY, 2, 1 }, { PROPEL_REC_EXIT, 2, 1 },
		{ PROPEL_REC_ENTRY, 1, 0 }, { PROPEL_REC_EXIT, 1, 0 },
	};
	char dir[300], db[300], *cause = NULL;
	struct ingest_stats st;
	struct session *s;
	struct tw w;
	size_t i;
	int err;

	snprintf(dir, sizeof(dir), "%s/chain", tmp);
	snprintf(db, sizeof(db), "%s/chain.db", tmp);
	mkdir(dir, 0755);
	map_c(dir, 6100, 1, "e6", &c0, 0);
	tw_open(&w, dir, 6100, "e6", 6100, 16, 64);
	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
		tw_put(&w, recs[i][0], recs[i][1], recs[i][2]);
	tw_close(&w);
	tw_open(&w, dir, 6100, "e6", 6101, 16, 64);
	for (i = 0; i < sizeof(adopted) / sizeof(adopted[0]); i++)
		tw_put(&w, adopted[i][0], adopted[i][1], adopted[i][2]);
	tw_close(&w);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err)
		err = ingest_dir(s, dir, &st, &cause);
	check(err == 0 && st.rebuilt_frames == 4, "chain-ingest",
	      "err %d rebuilt %" PRIu64, err, st.rebuilt_frames);
	if (err)
		return;
	CHECK_Q("chain-frames",
		"1|0|main|1|0;1|1|mid|1|1;1|2|leaf|NULL|1;2|2|leaf|0|1;"
		"2|1|mid|2|0;1|1|mid|NULL|1;1|2|leaf|NULL|1;2|2|leaf|0|1;"
		"2|1|mid|0|1;", s,
		"SELECT e.kind, e.depth, f.name, e.arg0, e.site IS NOT NULL FROM"
		" events e LEFT JOIN functions f ON f.id = e.func WHERE"
		" e.tid = 6100 ORDER BY e.id");
	CHECK_Q("chain-adopted-first",
		"1|0|main|1|0;1|1|mid|1|1;1|2|leaf|NULL|0;2|2|leaf|0|0;"
		"1|2|leaf|NULL|1;2|2|leaf|0|1;2|1|mid|2|0;1|1|mid|NULL|1;"
		"2|1|mid|0|1;", s,
		"SELECT e.kind, e.depth, f.name, e.arg0, e.site IS NOT NULL FROM"
		" events e LEFT JOIN functions f ON f.id = e.func WHERE"
		" e.tid = 6101 ORDER BY e.id");
	q_close(s);
}

/* Rss of this process's mapping that starts at p, in bytes; -1 if none. */
static long long rss_of(const void *p)
{
	char line[512], want[64];
	long long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = strncmp(line, want, strlen(want)) == 0;
		else if (in && sscanf(line, "Rss: %lld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * A ring file past INGEST_FAULT_MIN is mapped without MAP_POPULATE: the
 * ingest still reads every record.  Its spool's pages are made ahead of
 * the walk by engine/ingest-fault.c: the thread alone maps the whole
 * spool, and nothing of the ring before it (which may have holes).
 */
static void check_mapped_ahead(void)
{
	char dir[300], db[300], path[400], *cause = NULL;
	struct ingest_ring r = { 0 };
	struct ingest_fault *f;
	struct ingest_stats st;
	struct session *s;
	long long rss = -1;
	struct tw w;
	size_t size, spool = 0;
	void *map;
	int err, i, fd;

	snprintf(dir, sizeof(dir), "%s/big", tmp);
	snprintf(db, sizeof(db), "%s/big.db", tmp);
	mkdir(dir, 0755);
	map_c(dir, 6100, 1, "bg", &c0, 0);
	tw_open(&w, dir, 6100, "bg", 6100, 4, 1u << 18);
	w.h->keep_all = 1;
	for (i = 0; i < 400000; i++) {
		tw_put(&w, PROPEL_REC_ENTRY, 2, 1);
		tw_put(&w, PROPEL_REC_EXIT, 2, 1);
	}
	size = w.size;
	tw_close(&w);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err)
		err = ingest_dir(s, dir, &st, &cause);
	/* (mid, the caller of site 1, is open: its entry rebuilt) */
	check(err == 0 && size >= INGEST_FAULT_MIN && st.events == 800001 &&
	      st.rebuilt_frames == 1, "big-ring-ingest",
	      "err %d size %zu events %" PRIu64 " rebuilt %" PRIu64, err, size,
	      st.events, st.rebuilt_frames);
	if (!err)
		q_close(s);
	free(cause);

	/* a spool of 20 MB after the ring (as the drain appends it) */
	snprintf(path, sizeof(path), "%s/6100.bg.6100.ring", dir);
	fd = open(path, O_RDWR);
	map = MAP_FAILED;
	if (fd >= 0) {
		static char mb[1 << 20];

		memset(mb, 0x5a, sizeof(mb));
		for (i = 0; i < 20; i++)
			if (pwrite(fd, mb, sizeof(mb),
				   (off_t)(size + (size_t)i * sizeof(mb))) !=
			    (ssize_t)sizeof(mb))
				break;
		spool = (size_t)i * sizeof(mb);
		map = mmap(NULL, size + spool, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
	}
	if (map == MAP_FAILED) {
		check(0, "big-ring-mapped-ahead", "%s: %s", path,
		      strerror(errno));
		return;
	}
	r.h = map;
	r.size = size + spool;
	f = ingest_fault_start(&r, 1);
	for (i = 0; f && i < 500; i++) {
		struct timespec nap = { 0, 10 * 1000 * 1000 };

		rss = rss_of(map);
		if (rss >= (long long)spool)
			break;
		nanosleep(&nap, NULL);
	}
	ingest_fault_stop(f);
	/* (the kernel's fault-around may map a few pages either side) */
	check(f && spool == 20u << 20 && rss >= (long long)spool &&
	      rss <= (long long)spool + (1 << 20),
	      "big-ring-mapped-ahead", "Rss %lld, spool %zu after a ring of %zu",
	      rss, spool, size);
	munmap(map, size + spool);
}

int main(int argc, char **argv)
{
	/* how many PASS/FAIL lines follow (tests/run.sh holds us to it) */
	printf("CHECKS 58\n");
	fflush(stdout);
	char dir[300], db[300], *cause = NULL;
	struct ingest_stats st;
	struct session *s;
	int err;

	/* names come from local files */
	unsetenv("DEBUGINFOD_URLS");
	if (lib_init("test-ingest"))
		return 1;
	if (system("command -v gcc g++ objdump >/dev/null") != 0) {
		printf("SKIP test-ingest: gcc, g++ or objdump missing\n");
		return 0;
	}
	if (bin_build(&c0, "gcc", csrc, "-O0", "fix-c-O0") ||
	    bin_build(&c2, "gcc", csrc, "-O2", "fix-c-O2") ||
	    bin_build(&cc0, "g++", ccsrc, "-O0", "fix-cc-O0") ||
	    bin_build(&cc2, "g++", ccsrc, "-O2", "fix-cc-O2")) {
		printf("FAIL fixtures: cannot build the fixtures\n");
		return 1;
	}
	{
		char cmd[1400];

		snprintf(stripped, sizeof(stripped), "%s-stripped", c0.path);
		snprintf(cmd, sizeof(cmd), "strip -o %s %s", stripped, c0.path);
		if (system(cmd) != 0)
			printf("FAIL fixtures-strip: %s\n", cmd);
	}
	check(bin_call(&c2, "mid", "leaf", 2) && bin_fn(&cc2, mangled_twice),
	      "fixtures-addresses", "objdump gave no call mid->leaf");
	if (argc > 2 && strcmp(argv[1], "--bench") == 0)
		return bench(strtoull(argv[2], NULL, 10), 1);

	snprintf(dir, sizeof(dir), "%s/session", tmp);
	snprintf(db, sizeof(db), "%s/propel.db", tmp);
	mkdir(dir, 0755);
	write_session(dir);
	err = session_open(db, SESSION_CREATE, &s, &cause);
	if (!err)
		err = ingest_dir(s, dir, &st, &cause);
	check(err == 0, "ingest-dir", "%s", cause ? cause : strerror(-err));
	if (err)
		return 1;
	err = ingest_write_meta(s, 3, (char *[]){ "./app", "a b", "it's", NULL });
	CHECK_Q("ingest-write-meta", "./app 'a b' 'it'\\''s';", s,
		"SELECT value FROM meta WHERE key = 'command'");
	check_rows(s, &st);
	q_close(s);

	{
		const char *propel = getenv("PROPEL");

		if (access(propel ? propel : "build/propel", X_OK) == 0)
			check_replay(db);
		else
			printf("SKIP replay: no propel binary (set PROPEL)\n");
	}
	check_short_names();
	check_walked_again();
	check_open_chain();
	check_mapped_ahead();

	/* a missing directory is an error with a cause */
	{
		char *c2 = NULL;

		session_open(db, SESSION_WRITE, &s, &cause);
		err = ingest_dir(s, "/nonexistent/propel", &st, &c2);
		check(err == -ENOENT && c2 && strstr(c2, "/nonexistent"),
		      "ingest-missing-dir", "err %d cause %s", err, c2);
		free(c2);
		q_close(s);
	}
	bench(200000, 0);
	lib_done();
	return nfail ? 1 : 0;
}
