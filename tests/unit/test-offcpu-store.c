/*
 * tests/unit/test-offcpu-store.c - the off-CPU spans of a session
 * (engine/offcpu-store.c) on a scratch session file: a session without the
 * table reads as empty; a range finds exactly the spans that overlap it
 * (one that started long before, one that ends exactly at t0, none of
 * another thread); a call's split into off-CPU time and its main span;
 * the words of each reason; spans of the pid on a host where no process
 * of that pid was traced are another process's (a --follow's hosts each
 * have a pid space).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/offcpu-store.h"
#include "engine/session.h"
#include "tests/unit/check.h"

static struct offcpu_row row(int64_t tid, int64_t ts, int64_t dur,
			     const char *reason, const char *op)
{
	struct offcpu_row r;

	memset(&r, 0, sizeof(r));
	r.pid = 100;
	r.tid = tid;
	r.ts_ns = ts;
	r.dur_ns = dur;
	r.fd = -1;
	snprintf(r.reason, sizeof(r.reason), "%s", reason);
	snprintf(r.op, sizeof(r.op), "%s", op ? op : "");
	return r;
}

int main(void)
{
	CHECKS_EXPECT(13);
	char path[] = "/tmp/propel-offcpu-XXXXXX", buf[160];
	struct session *s = NULL;
	struct offcpu_row rows[5], *got = NULL;
	size_t n = 99;
	int fd = mkstemp(path), main_i;
	int64_t off;

	if (fd < 0 || session_open(path, SESSION_CREATE, &s, NULL)) {
		printf("FAIL offcpu-store-open: cannot create %s\n", path);
		return 1;
	}
	close(fd);
	CHECK("offcpu-store-absent",
	      !offcpu_store_present(s) &&
		  offcpu_store_range(s, 100, 101, 0, 1000, &got, &n) == 0 &&
		  n == 0,
	      "n = %zu", n);

	rows[0] = row(101, 1000, 5000000, "sleep", "nanosleep"); /* long */
	rows[1] = row(101, 6000000, 100, "runqueue", NULL);
	rows[2] = row(101, 7000000, 2000000, "pipe", "read");
	rows[3] = row(102, 7000000, 2000000, "lock", "futex"); /* another */
	rows[4] = row(101, 9500000, 1000000, "io", "fsync");
	CHECK("offcpu-store-put",
	      offcpu_store_create(s) == 0 &&
		  offcpu_store_put(s, rows, 5) == 0 && offcpu_store_present(s),
	      "cannot store");

	/* [4 ms, 8 ms]: the long sleep (from 1 us), the run queue wait, the
	 * pipe read; not the other thread's lock, not the later fsync */
	offcpu_store_range(s, 100, 101, 4000000, 8000000, &got, &n);
	CHECK("offcpu-store-range",
	      n == 3 && got[0].ts_ns == 1000 &&
		  !strcmp(got[1].reason, "runqueue") &&
		  !strcmp(got[2].op, "read") && got[2].fd == -1,
	      "n = %zu", n);
	/* a span that ends exactly at t0 overlaps it; one after t1 does not */
	free(got);
	offcpu_store_range(s, 100, 101, 6000100, 6000100, &got, &n);
	CHECK("offcpu-store-range-edge", n == 1 && got[0].ts_ns == 6000000,
	      "n = %zu", n);
	free(got);
	offcpu_store_range(s, 100, 102, 0, 100000000, &got, &n);
	CHECK("offcpu-store-range-thread",
	      n == 1 && !strcmp(got[0].reason, "lock"), "n = %zu", n);
	free(got);

	/* a call over [6.5 ms, 10 ms]: pipe 2 ms + fsync 0.5 ms of it */
	offcpu_store_range(s, 100, 101, 6500000, 10000000, &got, &n);
	off = offcpu_store_split(got, n, 6500000, 10000000, &main_i);
	CHECK("offcpu-store-split",
	      off == 2500000 && main_i >= 0 &&
		  !strcmp(got[main_i].reason, "pipe"),
	      "off %lld main %d", (long long)off, main_i);
	free(got);
	off = offcpu_store_split(rows, 0, 0, 10, &main_i);
	CHECK("offcpu-store-split-none", off == 0 && main_i == -1, "off %lld",
	      (long long)off);

	rows[2].dur_ns = 38000000;
	offcpu_store_text(&rows[2], buf, sizeof(buf));
	CHECK("offcpu-store-text-pipe",
	      !strcmp(buf, "off-CPU 38 ms: blocked in pipe read"), "%s", buf);
	rows[1].dur_ns = 12000000;
	offcpu_store_text(&rows[1], buf, sizeof(buf));
	CHECK("offcpu-store-text-runq",
	      !strcmp(buf, "waited 12 ms on the run queue"), "%s", buf);
	rows[3].runq_ns = 1000000;
	offcpu_store_text(&rows[3], buf, sizeof(buf));
	CHECK("offcpu-store-text-lock",
	      !strcmp(buf,
		      "off-CPU 2 ms: waiting on a lock in futex (1 ms of it "
		      "runnable)"),
	      "%s", buf);
	offcpu_store_why(&rows[4], buf, sizeof(buf));
	CHECK("offcpu-store-why-io", !strcmp(buf, "I/O in fsync"), "%s", buf);
	offcpu_store_why(&rows[2], buf, sizeof(buf));
	CHECK("offcpu-store-why-pipe", !strcmp(buf, "pipe read"), "%s", buf);

	/* pid 100 traced on host B; host A's collectors saw a pid 100 too */
	rows[0] = row(101, 20000000, 1000000, "socket", "recvfrom");
	snprintf(rows[0].host, sizeof(rows[0].host), "B");
	rows[1] = row(101, 20500000, 3000000, "sleep", "nanosleep");
	snprintf(rows[1].host, sizeof(rows[1].host), "A");
	session_exec(s, "INSERT INTO processes(pid, host) VALUES(100, 'B')",
		     NULL);
	offcpu_store_put(s, rows, 2);
	offcpu_store_range(s, 100, 101, 19000000, 30000000, &got, &n);
	CHECK("offcpu-store-host", n == 1 && !strcmp(got[0].reason, "socket"),
	      "n = %zu", n);
	free(got);

	session_close(s);
	unlink(path);
	return failures ? 1 : 0;
}
