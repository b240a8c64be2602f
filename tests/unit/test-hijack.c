/*
 * tests/unit/test-hijack.c - inject/hijack.c and inject/inject.c against real
 * processes with real ptrace.
 *
 * Builds its fixtures from tests/fixtures/hijack/ with gcc into
 * $O/tests/fixtures/hijack/: target (a self-checking multi-threaded
 * program under load), libpropel-agent-fake.so (the agent ABI, recording
 * what it receives), static-spin (gcc -static), trap-target (patches
 * itself with int3 like the agent), churn (one thread busy in malloc and
 * free: the agent may be loaded only at a safe point), slow-ctor (a
 * library constructor that runs 600 ms before main; slow-init, the same
 * in a DT_INIT without CFI), deep (late: test-hijack-late.h), setxid (threads
 * while main changes its ids: kept signals must come back as they were).  Cases print
 * PASS/FAIL/SKIP lines; needs root for the permission case (skips
 * otherwise).
 *
 * Usage: test-hijack            run every case
 *        test-hijack CASE...    run only the named cases (prefix match)
 *
 * propel-test: takes 32
 *   (seconds, alone: tests/run.sh -j starts the longest suites first)
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "inject/hijack.h"
#include "inject/inject.h"
#include "share/agent-abi.h"
#include "share/clock.h"
#include "tests/unit/check.h"

#define TH_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static char th_top[PATH_MAX / 2], th_fix[PATH_MAX], th_tmp[256];
static char th_target[PATH_MAX + 16], th_agent[PATH_MAX + 32],
	th_static[PATH_MAX + 16], th_trap[PATH_MAX + 16],
	th_churn[PATH_MAX + 16], th_churn_je[PATH_MAX + 16],
	th_ctor[PATH_MAX + 16], th_init[PATH_MAX + 16],
	th_setxid[PATH_MAX + 16];
static int th_failed;
static int th_argc;
static char **th_argv;

static void th_pass(const char *n)
{
	printf("PASS %s\n", n);
	fflush(stdout);
}

static void __attribute__((format(printf, 2, 3))) th_fail(const char *n,
							  const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	th_failed++;
}

static void th_skip(const char *n, const char *why)
{
	printf("SKIP %s: %s\n", n, why);
	fflush(stdout);
}

static int th_want(const char *name)
{
	int i;

	if (th_argc < 2)
		return 1;
	for (i = 1; i < th_argc; i++)
		if (!strncmp(name, th_argv[i], strlen(th_argv[i])))
			return 1;
	return 0;
}

static void th_sleep_ms(int ms)
{
	usleep(ms * 1000);
}

/* prog: slow-ctor.c linked against lib<name>.so, built from src with
 * flags (a library whose start-up runs before main). */
static int th_slow_start(const char *prog, const char *name, const char *src,
			 const char *flags)
{
	return CHECK_SH("gcc %s -shared -fPIC -o %s/lib%s.so "
		     "%s/tests/fixtures/hijack/%s && "
		     "gcc -O2 -o %s %s/tests/fixtures/hijack/slow-ctor.c "
		     "-Wl,--no-as-needed -L%s -l%s -Wl,-rpath,%s",
		     flags, th_fix, name, th_top, src, prog, th_top, th_fix,
		     name, th_fix);
}

static int th_build(void)
{
	const char *o = getenv("O") ? getenv("O") : "build";
	const char *t = getenv("PROPEL_TOP");

	if (t)
		snprintf(th_top, sizeof(th_top), "%s", t);
	else if (!getcwd(th_top, sizeof(th_top)))
		return -1;
	snprintf(th_fix, sizeof(th_fix), "%s/%s/tests/fixtures/hijack", th_top,
		 o[0] == '/' ? o + 0 : o);
	if (o[0] == '/')
		snprintf(th_fix, sizeof(th_fix), "%s/tests/fixtures/hijack", o);
	snprintf(th_target, sizeof(th_target), "%s/target", th_fix);
	snprintf(th_agent, sizeof(th_agent), "%s/libpropel-agent-fake.so", th_fix);
	snprintf(th_static, sizeof(th_static), "%s/static-spin", th_fix);
	snprintf(th_trap, sizeof(th_trap), "%s/trap-target", th_fix);
	snprintf(th_churn, sizeof(th_churn), "%s/churn", th_fix);
	snprintf(th_churn_je, sizeof(th_churn_je), "%s/churn-jemalloc", th_fix);
	snprintf(th_ctor, sizeof(th_ctor), "%s/slow-ctor", th_fix);
	snprintf(th_setxid, sizeof(th_setxid), "%s/setxid", th_fix);
	snprintf(th_init, sizeof(th_init), "%s/slow-init", th_fix);
	snprintf(th_tmp, sizeof(th_tmp), "/tmp/propel-hijack.XXXXXX");
	if (!mkdtemp(th_tmp))
		return -1;
	if (CHECK_SH("mkdir -p %s", th_fix))
		return -1;
	if (CHECK_SH("gcc -O2 -pthread -o %s %s/tests/fixtures/hijack/target.c",
		  th_target, th_top))
		return -1;
	if (CHECK_SH("gcc -O2 -pthread -rdynamic -o %s "
		  "%s/tests/fixtures/hijack/trap-target.c",
		  th_trap, th_top))
		return -1;
	if (CHECK_SH("gcc -O2 -o %s %s/tests/fixtures/hijack/churn.c", th_churn,
		  th_top))
		return -1;
	if (CHECK_SH("gcc -O2 -pthread -o %s %s/tests/fixtures/hijack/setxid.c",
		  th_setxid, th_top))
		return -1;
	if (th_slow_start(th_ctor, "slow-ctor", "slow-ctor-lib.c", "-O2") ||
	    th_slow_start(th_init, "slow-init", "slow-init-lib.S",
			  "-Wl,-init,slow_init"))
		return -1;
	/* the same on jemalloc (redis-server's allocator, interposed on
	 * libc's malloc), when it is installed (libjemalloc2) */
	if (access(TH_JEMALLOC, R_OK) ||
	    CHECK_SH("gcc -O2 -o %s %s/tests/fixtures/hijack/churn.c %s", th_churn_je,
		  th_top, TH_JEMALLOC))
		th_churn_je[0] = 0;
	if (CHECK_SH("gcc -O0 -g -fno-omit-frame-pointer -fPIC -shared "
		  "-fvisibility=hidden -I%s -o %s "
		  "%s/tests/fixtures/hijack/fake-agent.c",
		  th_top, th_agent, th_top))
		return -1;
	if (CHECK_SH("gcc -O2 -static -o %s %s/tests/fixtures/hijack/static-spin.c "
		  "2>/dev/null",
		  th_static, th_top))
		th_static[0] = 0;
	return 0;
}

/* ---- processes ------------------------------------------------------- */

struct th_proc {
	pid_t pid;
	char out[PATH_MAX + 32];
};

/* Start argv; returns once the new image runs (a close-on-exec pipe
 * reaches end of file at the exec), so that a loaded machine cannot hand
 * the caller the fork's copy of this program instead. */
static pid_t th_spawn(char *const argv[], const char *out)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(out ? out : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC, 0644);

		close(p[0]);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (pid > 0 && read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	return pid;
}

static int th_start_target(struct th_proc *p, const char *tag)
{
	char *argv[] = { th_target, NULL };

	snprintf(p->out, sizeof(p->out), "%s/target-%s.out", th_tmp, tag);
	p->pid = th_spawn(argv, p->out);
	th_sleep_ms(150);
	return p->pid > 0 ? 0 : -1;
}

#include "tests/unit/test-hijack-proc.h"

struct th_counts {
	unsigned long tick, asmc, comp, reads, sleeps, spawns, usr1;
};

/* Last status line of a target; -1 if it reported an ERROR or died. */
static int th_counts(struct th_proc *p, struct th_counts *c, char *why,
		     size_t wn)
{
	char line[400], last[400] = "";
	FILE *f = fopen(p->out, "r");
	int st;

	if (!f) {
		snprintf(why, wn, "no output file");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ERROR", 5)) {
			snprintf(why, wn, "target said: %s", line);
			why[strcspn(why, "\n")] = 0;
			fclose(f);
			return -1;
		}
		if (!strncmp(line, "tick ", 5))
			memcpy(last, line, sizeof(last));
	}
	fclose(f);
	if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
		snprintf(why, wn, "target died (status %#x)", st);
		p->pid = -1;
		return -1;
	}
	if (sscanf(last, "tick %lu asm %lu comp %lu reads %lu sleeps %lu spawns %lu "
			 "usr1 %lu",
		   &c->tick, &c->asmc, &c->comp, &c->reads, &c->sleeps,
		   &c->spawns, &c->usr1) != 7) {
		snprintf(why, wn, "no status line yet");
		return -1;
	}
	return 0;
}

/* The target is alive, untraced, self-checks fine, and every thread makes
 * progress: in ms milliseconds, or while a machine loaded by other tests
 * keeps it waiting for a CPU, in TH_PROGRESS_MS (a thread left stopped or
 * stuck never moves; one that runs moves within a few scheduler periods,
 * which the load of the suites beside this one stretches past ms). */
#define TH_PROGRESS_MS 5000
static int th_moved(const struct th_counts *a, const struct th_counts *b)
{
	return b->tick > a->tick && b->asmc > a->asmc && b->comp > a->comp &&
	       b->reads > a->reads && b->sleeps > a->sleeps &&
	       b->spawns > a->spawns;
}

static int th_healthy(struct th_proc *p, int ms, char *why, size_t wn)
{
	struct th_counts a, b;
	long end;
	pid_t tr;

	if (th_counts(p, &a, why, wn))
		return -1;
	th_sleep_ms(ms);
	end = (long)propel_mono_ms() + TH_PROGRESS_MS;
	if (th_counts(p, &b, why, wn))
		return -1;
	while (!th_moved(&a, &b) && (long)propel_mono_ms() < end) {
		th_sleep_ms(50);
		if (th_counts(p, &b, why, wn))
			return -1;
	}
	tr = th_tracer(p->pid);
	if (tr != 0) {
		snprintf(why, wn, "TracerPid is %d", tr);
		return -1;
	}
	if (!th_moved(&a, &b)) {
		snprintf(why, wn,
			 "no progress in %d ms: tick %lu->%lu asm %lu->%lu comp %lu->%lu "
			 "reads %lu->%lu sleeps %lu->%lu spawns %lu->%lu",
			 ms + TH_PROGRESS_MS, a.tick, b.tick, a.asmc, b.asmc, a.comp, b.comp, a.reads,
			 b.reads, a.sleeps, b.sleeps, a.spawns, b.spawns);
		return -1;
	}
	return 0;
}

static int th_one_line(const char *cause)
{
	return cause && *cause && !strchr(cause, '\n');
}

/* ---- cases ------------------------------------------------------------ */

struct th_snap {
	pid_t tid;
	struct user_regs_struct regs;
	unsigned char x[8192];
	size_t xn;
	unsigned char stack[1024];
};

static int th_snapshot(pid_t tid, struct th_snap *s)
{
	struct iovec io = { s->x, sizeof(s->x) };
	char path[64];
	int fd;

	s->tid = tid;
	if (ptrace(PTRACE_GETREGS, tid, 0, &s->regs) < 0)
		return -1;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &io) < 0)
		return -1;
	s->xn = io.iov_len;
	snprintf(path, sizeof(path), "/proc/%d/mem", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (pread(fd, s->stack, sizeof(s->stack),
		  (off_t)(s->regs.rsp - sizeof(s->stack))) !=
	    (ssize_t)sizeof(s->stack)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Compare the architectural FP/vector state: x87/SSE legacy area up to
 * xmm15 and, when present, the AVX upper halves. */
static int th_x_equal(const struct th_snap *a, const struct th_snap *b)
{
	if (memcmp(a->x, b->x, 416))
		return 0;
	if (a->xn >= 832 && b->xn >= 832 && memcmp(a->x + 576, b->x + 576, 256))
		return 0;
	return 1;
}

static void th_case_call(void)
{
	struct th_proc p;
	struct hijack *h = NULL;
	struct propel_thread_hint *hints = NULL;
	struct th_snap *before = NULL, *after = NULL;
	char *cause = NULL, why[512];
	uint64_t f_strlen, f_getpid, addr, ret, args[1];
	size_t n = 0, i;
	int err, calls_ok = 1, regs_ok = 1, x_ok = 1, stack_ok = 1, sys = 0;
	long t0;

	if (th_start_target(&p, "call")) {
		th_fail("call_restores", "cannot start target");
		return;
	}
	t0 = (long)propel_mono_ms();
	err = hijack_attach(p.pid, &h, &cause);
	if (err) {
		th_fail("call_attach", "%s", cause);
		goto out;
	}
	t0 = (long)propel_mono_ms() - t0;
	hijack_threads(h, &hints, &n);
	printf("# attach of %zu threads took %ld ms\n", n, t0);
	if (n < 6)
		th_fail("call_threads", "only %zu threads", n);
	else
		th_pass("call_threads");
	before = calloc(n, sizeof(*before));
	after = calloc(n, sizeof(*after));
	for (i = 0; i < n; i++)
		if (th_snapshot(hints[i].tid, &before[i]))
			th_fail("call_snapshot", "tid %llu: %s",
				(unsigned long long)hints[i].tid, strerror(errno));
	if (hijack_sym(h, "libc.so.6", "strlen", &f_strlen, &cause) ||
	    hijack_sym(h, "libc.so.6", "getpid", &f_getpid, &cause)) {
		th_fail("call_sym", "%s", cause);
		goto detach;
	}
	th_pass("call_sym");
	/* one call from every thread: user code, read(), nanosleep(),
	 * futex, ... */
	for (i = 0; i < n; i++) {
		if (before[i].regs.orig_rax != (unsigned long long)-1)
			sys++;
		if (hijack_set_call_thread(h, hints[i].tid)) {
			calls_ok = 0;
			continue;
		}
		err = hijack_stage(h, "hello, world", 13, &addr);
		args[0] = addr;
		if (!err)
			err = hijack_call(h, f_strlen, args, 1, 0, &ret, &cause);
		if (err || ret != 12) {
			th_fail("call_strlen", "tid %llu: err %d ret %llu %s",
				(unsigned long long)hints[i].tid, err,
				(unsigned long long)ret, cause ? cause : "");
			calls_ok = 0;
		}
		err = hijack_call(h, f_getpid, NULL, 0, 0, &ret, &cause);
		if (err || ret != (uint64_t)p.pid) {
			th_fail("call_getpid", "err %d ret %llu", err,
				(unsigned long long)ret);
			calls_ok = 0;
		}
	}
	if (calls_ok)
		th_pass("call_results");
	printf("# %d of %zu threads were stopped inside a syscall\n", sys, n);
	for (i = 0; i < n; i++) {
		if (th_snapshot(hints[i].tid, &after[i])) {
			regs_ok = 0;
			continue;
		}
		if (memcmp(&before[i].regs, &after[i].regs, sizeof(before[i].regs)))
			regs_ok = 0;
		if (!th_x_equal(&before[i], &after[i]))
			x_ok = 0;
		if (memcmp(before[i].stack, after[i].stack, sizeof(before[i].stack)))
			stack_ok = 0;
	}
	regs_ok ? th_pass("call_regs_restored")
		: th_fail("call_regs_restored", "general registers differ");
	x_ok ? th_pass("call_fpstate_restored")
	     : th_fail("call_fpstate_restored", "FP/vector state differs");
	stack_ok ? th_pass("call_stack_restored")
		 : th_fail("call_stack_restored", "bytes below sp differ");
detach:
	err = hijack_detach(h);
	if (err)
		th_fail("call_detach", "%s", strerror(-err));
	if (th_healthy(&p, 300, why, sizeof(why)))
		th_fail("call_target_healthy", "%s", why);
	else
		th_pass("call_target_healthy");
out:
	free(hints);
	free(before);
	free(after);
	free(cause);
	th_kill(p.pid);
}

static void th_case_signal(void)
{
	struct th_proc p;
	struct hijack *h = NULL;
	struct th_counts a, b;
	char *cause = NULL, why[256];
	int err;

	th_start_target(&p, "signal");
	if (th_counts(&p, &a, why, sizeof(why))) {
		th_fail("signal_kept", "%s", why);
		goto out;
	}
	err = hijack_attach(p.pid, &h, &cause);
	if (err) {
		th_fail("signal_kept", "attach: %s", cause);
		goto out;
	}
	kill(p.pid, SIGUSR1);
	th_sleep_ms(50);
	hijack_detach(h);
	th_sleep_ms(200);
	if (th_counts(&p, &b, why, sizeof(why)))
		th_fail("signal_kept", "%s", why);
	else if (b.usr1 != a.usr1 + 1)
		th_fail("signal_kept", "usr1 count %lu -> %lu", a.usr1, b.usr1);
	else
		th_pass("signal_kept");
out:
	free(cause);
	th_kill(p.pid);
}

static void th_case_timeout(void)
{
	struct th_proc p;
	struct hijack *h = NULL;
	char *cause = NULL, why[256];
	uint64_t fn, ret;
	long t0;
	int err;

	th_start_target(&p, "timeout");
	err = hijack_attach(p.pid, &h, &cause);
	if (err || hijack_sym(h, "libc.so.6", "pause", &fn, &cause)) {
		th_fail("call_timeout", "%s", cause);
		if (h)
			hijack_detach(h);
		goto out;
	}
	hijack_set_timeout(h, 300);
	t0 = (long)propel_mono_ms();
	err = hijack_call(h, fn, NULL, 0, 0, &ret, &cause);
	t0 = (long)propel_mono_ms() - t0;
	hijack_detach(h);
	/* the cause says where the call stayed: pause's syscall (34) */
	if (err != -ETIMEDOUT || !th_one_line(cause) || t0 > 2000 ||
	    !strstr(cause, "call to libc.so.6+0x") ||
	    !strstr(cause, "(it was at libc.so.6+0x") ||
	    !strstr(cause, "syscall 34)"))
		th_fail("call_timeout", "err %d after %ld ms: %s", err, t0,
			cause ? cause : "(no cause)");
	else if (th_healthy(&p, 300, why, sizeof(why)))
		th_fail("call_timeout", "after: %s", why);
	else
		th_pass("call_timeout");
	printf("# timeout cause: %s\n", cause ? cause : "");
out:
	free(cause);
	th_kill(p.pid);
}

static int th_file_has(const char *path, const char *s)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, s) != NULL;
	fclose(f);
	return found;
}

static void th_case_inject(void)
{
	struct th_proc p;
	char *cause = NULL, why[512], dir[PATH_MAX], rec[PATH_MAX + 32],
		line[512];
	unsigned nh = 0, hints = 0, ok = 0, aligned = 0, flags = 99;
	FILE *f;
	int err, i, loops = 200, bad = 0;
	long t0;

	snprintf(dir, sizeof(dir), "%s/session", th_tmp);
	mkdir(dir, 0755);
	snprintf(rec, sizeof(rec), "%s/fake-agent.txt", dir);
	th_start_target(&p, "inject");

	err = inject_agent_stop(p.pid, &cause);
	if (err != -ENOENT || !th_one_line(cause) ||
	    !strstr(cause, "propel agent not loaded"))
		th_fail("stop_not_loaded", "err %d: %s", err, cause);
	else
		th_pass("stop_not_loaded");
	free(cause);
	cause = NULL;
	if (inject_agent_loaded(p.pid, NULL) != 0)
		th_fail("loaded_before", "agent reported loaded");

	err = inject_agent_start(p.pid, th_agent, dir, 1, &cause);
	if (err) {
		th_fail("inject_start", "%s", cause);
		goto out;
	}
	f = fopen(rec, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "start nhints=%u flags=%u aligned=%u", &nh, &flags,
			   &aligned) == 3)
			continue;
		if (!strncmp(line, "hint ", 5)) {
			hints++;
			ok += strstr(line, " ok") != NULL;
		}
	}
	if (f)
		fclose(f);
	/* (the injector adds NEED_LEASE: the target is in our pid namespace) */
	if (!nh || hints != nh || ok != nh ||
	    flags != (1 | PROPEL_START_NEED_LEASE) || !aligned)
		th_fail("inject_start", "nhints %u lines %u ok %u flags %u aligned %u",
			nh, hints, ok, flags, aligned);
	else
		th_pass("inject_start");
	if (inject_agent_loaded(p.pid, NULL) != 1 ||
	    inject_agent_status(p.pid, &cause) != 1)
		th_fail("inject_status", "not reported active: %s",
			cause ? cause : "");
	else
		th_pass("inject_status");
	err = inject_agent_start(p.pid, th_agent, dir, 1, &cause);
	if (err != -EBUSY || !th_one_line(cause) ||
	    strcmp(cause, "already being traced by propel"))
		th_fail("inject_busy", "err %d: %s", err, cause ? cause : "");
	else
		th_pass("inject_busy");
	free(cause);
	cause = NULL;
	err = inject_agent_stop(p.pid, &cause);
	if (err != 7 || inject_agent_status(p.pid, NULL) != 0)
		th_fail("inject_stop", "err %d: %s", err, cause ? cause : "");
	else
		th_pass("inject_stop");
	if (th_healthy(&p, 200, why, sizeof(why)))
		th_fail("inject_healthy", "%s", why);
	else
		th_pass("inject_healthy");

	if (getenv("PROPEL_HIJACK_LOOPS"))
		loops = atoi(getenv("PROPEL_HIJACK_LOOPS"));
	t0 = (long)propel_mono_ms();
	for (i = 0; i < loops && !bad; i++) {
		err = inject_agent_start(p.pid, th_agent, dir, 0, &cause);
		if (err) {
			th_fail("inject_loop", "start #%d: %s", i, cause);
			bad = 1;
		}
		err = inject_agent_stop(p.pid, &cause);
		if (!bad && err != 7) {
			th_fail("inject_loop", "stop #%d: %d %s", i, err,
				cause ? cause : "");
			bad = 1;
		}
		if (th_tracer(p.pid) != 0) {
			th_fail("inject_loop", "#%d left a tracer", i);
			bad = 1;
		}
	}
	t0 = (long)propel_mono_ms() - t0;
	printf("# %d x (inject_agent_start + inject_agent_stop): %ld ms, "
	       "%.2f ms per pair\n",
	       i, t0, i ? (double)t0 / i : 0.0);
	snprintf(line, sizeof(line), "stop %d", loops + 1);
	if (!bad && !th_file_has(rec, line))
		th_fail("inject_loop", "agent did not record '%s'", line);
	else if (!bad && th_healthy(&p, 300, why, sizeof(why)))
		th_fail("inject_loop", "%s", why);
	else if (!bad)
		th_pass("inject_loop");

	/* dlopen failure: dlerror text from the target */
	free(cause);
	cause = NULL;
	err = inject_agent_start(p.pid, "/nonexistent/libpropel-agent-nope.so",
				 dir, 0, &cause);
	if (!err || !th_one_line(cause) ||
	    !strstr(cause, "cannot open shared object file"))
		th_fail("bad_dlopen", "err %d: %s", err, cause ? cause : "");
	else if (th_healthy(&p, 200, why, sizeof(why)))
		th_fail("bad_dlopen", "%s", why);
	else
		th_pass("bad_dlopen");
	printf("# dlopen failure cause: %s\n", cause ? cause : "");

	/* an agent of another build (another file) is loaded: refused, no
	 * second copy beside it */
	free(cause);
	cause = NULL;
	{
		char other[PATH_MAX + 64];

		snprintf(other, sizeof(other), "%s/libpropel-agent-other.so", th_tmp);
		CHECK_SH("cp %s %s", th_agent, other);
		err = inject_agent_start(p.pid, other, dir, 0, &cause);
		if (!err || !th_one_line(cause) ||
		    !strstr(cause, "another propel build"))
			th_fail("other_build", "err %d: %s", err, cause ? cause : "");
		else if (th_healthy(&p, 200, why, sizeof(why)))
			th_fail("other_build", "%s", why);
		else
			th_pass("other_build");
		printf("# other build: %s\n", cause ? cause : "");
	}
out:
	free(cause);
	th_kill(p.pid);
}

/* expect attach to fail with a one-line cause containing want */
static void th_expect_attach_fail(const char *name, pid_t pid, const char *want)
{
	struct hijack *h = NULL;
	char *cause = NULL;
	int err = hijack_attach(pid, &h, &cause);

	if (!err) {
		hijack_detach(h);
		th_fail(name, "attach to %d succeeded", pid);
	} else if (!th_one_line(cause) || !strstr(cause, want)) {
		th_fail(name, "err %d, cause '%s', wanted '%s'", err,
			cause ? cause : "", want);
	} else {
		th_pass(name);
	}
	printf("# %s: propel: attach %d: %s\n", name, pid, cause ? cause : "");
	free(cause);
}

static void th_case_bad(void)
{
	struct th_proc p;
	char *cause = NULL, why[256], comm[64] = "", path[64];
	pid_t pid;
	FILE *f;
	int i;

	/* nonexistent */
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	th_expect_attach_fail("bad_nonexistent", pid, "no such process");

	/* zombie */
	pid = fork();
	if (pid == 0)
		_exit(0);
	for (i = 0; i < 200 && th_state(pid) != 'Z'; i++)
		th_sleep_ms(5);
	th_expect_attach_fail("bad_zombie", pid, "zombie");
	waitpid(pid, NULL, 0);

	/* kernel thread */
	f = fopen("/proc/2/comm", "r");
	if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "kthreadd", 8))
		th_expect_attach_fail("bad_kthread", 2, "kernel thread");
	else
		th_skip("bad_kthread", "pid 2 is not kthreadd here");
	if (f)
		fclose(f);

	/* a thread rather than the process */
	th_start_target(&p, "bad");
	{
		char tp[64];
		pid_t tid = 0;
		FILE *d;

		/* the oldest thread after main: a long-lived worker (the newest is
		 * one of the short-lived threads the target keeps creating) */
		snprintf(tp, sizeof(tp), "ls /proc/%d/task | sort -n | sed -n 2p",
			 p.pid);
		d = popen(tp, "r");
		if (d && fscanf(d, "%d", &tid) == 1 && tid != p.pid)
			th_expect_attach_fail("bad_thread_id", tid,
					      "is a thread of process");
		if (d)
			pclose(d);
	}

	/* not permitted: nobody attaching to a root process */
	if (geteuid() != 0) {
		th_skip("bad_not_permitted", "needs root");
	} else {
		int pfd[2], err = 0, st;
		char buf[512] = "";
		ssize_t r;

		if (pipe(pfd))
			return;
		pid = fork();
		if (pid == 0) {
			struct hijack *h = NULL;

			close(pfd[0]);
			if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
				_exit(2);
			err = hijack_attach(p.pid, &h, &cause);
			if (!err)
				hijack_detach(h);
			dprintf(pfd[1], "%d %s", err, cause ? cause : "");
			_exit(0);
		}
		close(pfd[1]);
		r = read(pfd[0], buf, sizeof(buf) - 1);
		close(pfd[0]);
		waitpid(pid, &st, 0);
		buf[r > 0 ? r : 0] = 0;
		if (atoi(buf) != -EPERM || !strstr(buf, "not permitted") ||
		    strchr(buf, '\n'))
			th_fail("bad_not_permitted", "got '%s'", buf);
		else if (th_healthy(&p, 150, why, sizeof(why)))
			th_fail("bad_not_permitted", "after: %s", why);
		else
			th_pass("bad_not_permitted");
		printf("# bad_not_permitted: %s\n", buf);
	}

	/* a second tracer */
	if (access("/usr/bin/strace", X_OK)) {
		th_skip("bad_traced", "strace not installed");
	} else {
		char spid[32];
		char *av[] = { "/usr/bin/strace", "-q", "-o", "/dev/null", "-p",
			       spid, NULL };
		pid_t st;

		snprintf(spid, sizeof(spid), "%d", p.pid);
		st = th_spawn(av, NULL);
		for (i = 0; i < 400 && th_tracer(p.pid) <= 0; i++)
			th_sleep_ms(5);
		snprintf(path, sizeof(path), "by pid %d (strace)", st);
		th_expect_attach_fail("bad_traced", p.pid, path);
		kill(st, SIGTERM);
		waitpid(st, NULL, 0);
		for (i = 0; i < 200 && th_tracer(p.pid) != 0; i++)
			th_sleep_ms(5);
		if (th_healthy(&p, 150, why, sizeof(why)))
			th_fail("bad_traced_after", "%s", why);
		else
			th_pass("bad_traced_after");
	}
	th_kill(p.pid);

	/* statically linked */
	if (!th_static[0]) {
		th_skip("bad_static", "gcc -static did not build");
	} else {
		char *av[] = { th_static, NULL };
		int err;

		pid = th_spawn(av, NULL);
		th_sleep_ms(50);
		err = inject_agent_start(pid, th_agent, th_tmp, 0, &cause);
		if (err != -ENOEXEC || !th_one_line(cause) ||
		    !strstr(cause, "statically linked: cannot load the agent"))
			th_fail("bad_static", "err %d: %s", err,
				cause ? cause : "");
		else if (th_tracer(pid) != 0 || th_settle(pid) != 'S')
			th_fail("bad_static", "target left in state %c",
				th_state(pid));
		else
			th_pass("bad_static");
		printf("# bad_static: %s\n", cause ? cause : "");
		free(cause);
		cause = NULL;
		th_kill(pid);
	}
}

/* Race attach against processes that exit right away.  The racing
 * process is a grandchild, so that its exit status goes to a helper that
 * reports it (we, the tracer, must not be its parent). */
static void th_case_race(void)
{
	int rounds = 120, i, counts[4] = { 0 }, bad = 0;
	long t0 = (long)propel_mono_ms();

	for (i = 0; i < rounds && !bad; i++) {
		int pfd[2], st, gst = -1, err;
		struct hijack *h = NULL;
		char *cause = NULL;
		pid_t helper, pid = 0;

		if (pipe(pfd))
			return;
		helper = fork();
		if (helper == 0) {
			pid_t g = fork();

			if (g == 0) {
				char ms[16];

				int nul = open("/dev/null", O_WRONLY);

				dup2(nul, 1);
				snprintf(ms, sizeof(ms), "%d", i % 6);
				if (i % 2)
					execl("/bin/true", "true", NULL);
				else
					execl(th_target, th_target, ms, NULL);
				_exit(127);
			}
			if (write(pfd[1], &g, sizeof(g)) < 0)
				_exit(2);
			waitpid(g, &st, 0);
			if (write(pfd[1], &st, sizeof(st)) < 0)
				_exit(2);
			_exit(0);
		}
		close(pfd[1]);
		if (read(pfd[0], &pid, sizeof(pid)) != sizeof(pid)) {
			th_fail("race_exit", "round %d: helper gave no pid: %s", i,
				strerror(errno));
			bad = 1;
			close(pfd[0]);
			waitpid(helper, NULL, 0);
			break;
		}
		usleep((i * 397) % 3000);
		err = hijack_attach(pid, &h, &cause);
		if (!err) {
			counts[0]++;
			hijack_detach(h);
		} else if (!th_one_line(cause)) {
			th_fail("race_exit", "cause '%s'", cause ? cause : "");
			bad = 1;
		} else if (strstr(cause, "no such process")) {
			counts[1]++;
		} else if (strstr(cause, "zombie")) {
			counts[2]++;
		} else if (strstr(cause, "exited during attach")) {
			counts[3]++;
		} else {
			th_fail("race_exit", "unexpected cause '%s'", cause);
			bad = 1;
		}
		free(cause);
		if (read(pfd[0], &gst, sizeof(gst)) != sizeof(gst) ||
		    !WIFEXITED(gst) || WEXITSTATUS(gst) != 0) {
			if (!bad)
				th_fail("race_exit",
					"round %d: target ended with status %#x",
					i, gst);
			bad = 1;
		}
		close(pfd[0]);
		waitpid(helper, NULL, 0);
	}
	printf("# race: %d rounds in %ld ms: attached %d, no such process %d, "
	       "zombie %d, exited during attach %d\n",
	       i, (long)propel_mono_ms() - t0, counts[0], counts[1], counts[2],
	       counts[3]);
	if (!bad)
		th_pass("race_exit");
}

#include "tests/unit/test-hijack-lease.h"

/* The real agent ($O/libpropel-agent.so), when it has been built with the
 * ABI's symbols: start it in the self-checking target, let it run, stop
 * it.  The target must go on verifying its own results throughout. */
static void th_case_agent(void)
{
	const char *o = getenv("O") ? getenv("O") : "build";
	char so[PATH_MAX + 64], dir[128], why[512], *cause = NULL;
	struct th_proc p;
	int err;

	if (o[0] == '/')
		snprintf(so, sizeof(so), "%s/libpropel-agent.so", o);
	else
		snprintf(so, sizeof(so), "%s/%s/libpropel-agent.so", th_top, o);
	if (access(so, R_OK) ||
	    CHECK_SH("nm -D %s 2>/dev/null | grep -q ' T propel_agent_start$'", so)) {
		th_skip("real_agent", "libpropel-agent.so not built with the ABI");
		return;
	}
	snprintf(dir, sizeof(dir), "/dev/shm/propel/test-hijack-%d", getpid());
	CHECK_SH("mkdir -p %s", dir);
	th_start_target(&p, "agent");
	th_lease_gone(p.pid, so, dir);
	err = inject_agent_start(p.pid, so, dir, 0, &cause);
	if (err) {
		th_fail("real_agent", "start: %s", cause ? cause : strerror(-err));
		goto out;
	}
	if (th_healthy(&p, 300, why, sizeof(why))) {
		th_fail("real_agent", "while active: %s", why);
		goto out;
	}
	err = inject_agent_stop(p.pid, &cause);
	if (err < 0) {
		th_fail("real_agent", "stop: %s", cause ? cause : strerror(-err));
		goto out;
	}
	printf("# real agent: %d sites restored\n", err);
	if (th_healthy(&p, 300, why, sizeof(why)))
		th_fail("real_agent", "after stop: %s", why);
	else
		th_pass("real_agent");
out:
	free(cause);
	th_kill(p.pid);
	CHECK_SH("rm -rf %s", dir);
}

/* The tracer of a call killed while the call runs (a propel killed during
 * an injection): in the safe way back (hijack_set_return; hijack-ret.c)
 * the thread puts itself back with its signal frame.  A tracer child holds
 * the target and calls usleep(300 ms) in it, from a thread in a system
 * call, (user) from one in user code with live vector registers, or
 * (sleep) from the sleeper in nanosleep, restarted by its restart block,
 * which the frame's rt_sigreturn sets to fail with EINTR (the call is made
 * again whole: hijack-ret.c; the sleeper said "nanosleep returned EINTR"
 * beside make test J=2, the agent's pad giving up on a late tracer); we
 * kill the tracer 100 ms into the call.  pad "rt": glibc's __restore_rt
 * (the dlopen's way); "agent": the agent's pad (its start and stop).  The
 * target must live on, untraced, every self-check (registers, FP state,
 * syscall restarts) holding.  On the plain way back (pad 0) the target
 * dies: the first round proves the case can fail. */
static int th_dies_once(struct th_proc *p, const char *so, int pad_kind,
			int user, char *why, size_t wn)
{
	int pp[2], st;
	char c;
	pid_t tr;

	if (pipe(pp))
		return snprintf(why, wn, "pipe"), -1;
	tr = fork();
	if (tr == 0) {
		struct hijack *h = NULL;
		struct propel_thread_hint *hints = NULL;
		uint64_t fn, pad = 0, res = 0, ret, args[1] = { 300000 };
		size_t n = 0;

		close(pp[0]);
		if (hijack_attach(p->pid, &h, NULL) ||
		    hijack_sym(h, "libc.so.6", "usleep", &fn, NULL))
			_exit(2);
		/* user 1: a thread in user code; 2: the sleeper, in
		 * nanosleep (clock_nanosleep in glibc), which the kernel
		 * restarts by its restart block (not main, whose sleeps
		 * between ticks check nothing) */
		if (user && !hijack_threads(h, &hints, &n))
			for (size_t i = 0; i < n; i++)
				if ((user == 1 ? hints[i].sys == -1
					       : (hints[i].sys == 35 ||
						  hints[i].sys == 230) &&
							 hints[i].tid != (uint64_t)p->pid) &&
				    !hijack_set_call_thread(h, hints[i].tid))
					break;
		if (pad_kind == 1)
			pad = hijack_restore_rt(h);
		if (pad_kind == 2 &&
		    (hijack_sym(h, so, PROPEL_AGENT_RETURN_SYM, &pad, NULL) ||
		     hijack_sym(h, so, PROPEL_AGENT_RESULT_SYM, &res, NULL)))
			_exit(3);
		if (pad_kind && !pad)
			_exit(4);
		hijack_set_return(h, pad, res);
		if (write(pp[1], "g", 1) != 1)
			_exit(5);
		hijack_call(h, fn, args, 1, 0, &ret, NULL);
		_exit(6); /* killed before */
	}
	close(pp[1]);
	if (tr < 0 || read(pp[0], &c, 1) != 1) {
		close(pp[0]);
		if (tr > 0)
			waitpid(tr, &st, 0);
		return snprintf(why, wn, "the tracer did not start the call (%#x)",
				st), -1;
	}
	close(pp[0]);
	th_sleep_ms(100);
	kill(tr, SIGKILL);
	waitpid(tr, &st, 0);
	/* the usleep ends 200 ms later, the agent's pad yields up to ~0.5 s
	 * (1e9 TSC cycles: inject/agent/tramp.S) */
	th_sleep_ms(1200);
	return th_healthy(p, 300, why, wn);
}

static void th_case_dies(void)
{
	static const char *const pads[] = { "plain", "rt", "agent" };
	const char *o = getenv("O") ? getenv("O") : "build";
	char so[PATH_MAX + 64], dir[128], why[512], name[64], *cause = NULL;
	struct th_proc p;

	if (o[0] == '/')
		snprintf(so, sizeof(so), "%s/libpropel-agent.so", o);
	else
		snprintf(so, sizeof(so), "%s/%s/libpropel-agent.so", th_top, o);
	snprintf(dir, sizeof(dir), "/dev/shm/propel/test-hijack-%d", getpid());
	CHECK_SH("mkdir -p %s", dir);
	for (int pad = 0; pad < 3; pad++) {
		for (int user = 0; user < 3; user++) {
			snprintf(name, sizeof(name), "dies_%s%s", pads[pad],
				 user == 1 ? "_user" : user == 2 ? "_sleep" : "");
			if (pad == 0 && user)
				continue;
			if (th_start_target(&p, name)) {
				th_fail(name, "cannot start target");
				continue;
			}
			/* the real agent loaded and switched off, for its pad */
			if (pad == 2 &&
			    (inject_agent_start(p.pid, so, dir, 0, &cause) ||
			     inject_agent_stop(p.pid, &cause) < 0)) {
				th_fail(name, "agent: %s", cause ? cause : "?");
				th_kill(p.pid);
				continue;
			}
			if (th_dies_once(&p, so, pad, user, why, sizeof(why)) == 0) {
				if (pad == 0)
					th_fail(name, "the target lived through a "
						      "plain call whose tracer died: "
						      "the case cannot tell");
				else
					th_pass(name);
			} else if (pad == 0) {
				printf("# plain way back, tracer killed: %s\n", why);
				th_pass(name);
			} else {
				th_fail(name, "%s", why);
			}
			th_kill(p.pid);
		}
	}
	free(cause);
	CHECK_SH("rm -rf %s", dir);
}

/* One hold of the trap target: call fn (trap_arm / trap_disarm) with every
 * other thread stopped, detach.  0, or -1 with why. */
static int th_trap_hold(pid_t pid, const char *exe, const char *fn, char *why,
			size_t wn)
{
	struct hijack *h = NULL;
	char *cause = NULL;
	uint64_t addr, ret = 0;
	int err;

	err = hijack_attach(pid, &h, &cause);
	if (!err)
		err = hijack_sym(h, exe, fn, &addr, &cause);
	if (!err)
		err = hijack_call(h, addr, NULL, 0, 0, &ret, &cause);
	if (h) {
		int e2 = hijack_detach(h);

		if (!err)
			err = e2;
	}
	if (err)
		snprintf(why, wn, "%s: %s", fn, cause ? cause : strerror(-err));
	free(cause);
	return err ? -1 : 0;
}

/*
 * The detach defect: a thread stopped right after executing an int3 of the
 * "agent" (its SIGTRAP pending, or reported as a signal-delivery-stop)
 * must not resume at int3+1 once the byte is restored in the hold.  Four
 * threads take the trap without pause; 300 holds restore the byte and 300
 * put the int3 back.  Without the fix the target soon runs the tail of
 * "mov eax, 42" or meets a SIGTRAP it does not own.
 */
static void th_case_int3(void)
{
	char exe[PATH_MAX], why[512] = "", line[256], last[256] = "";
	unsigned long before = 0, after = 0;
	struct th_proc p;
	char *argv[] = { th_trap, NULL };
	int i, st, bad = 0;
	FILE *f;

	if (!realpath(th_trap, exe)) {
		th_fail("int3", "no trap-target");
		return;
	}
	snprintf(p.out, sizeof(p.out), "%s/trap.out", th_tmp);
	p.pid = th_spawn(argv, p.out);
	th_sleep_ms(200);
	for (i = 0; i < 300 && !bad; i++) {
		if (th_trap_hold(p.pid, exe, "trap_disarm", why, sizeof(why)) ||
		    th_trap_hold(p.pid, exe, "trap_arm", why, sizeof(why)))
			bad = 1;
		if (waitpid(p.pid, &st, WNOHANG) == p.pid) {
			snprintf(why, sizeof(why),
				 "target died at cycle %d (status %#x)", i, st);
			p.pid = -1;
			bad = 1;
		}
	}
	th_sleep_ms(150);
	f = fopen(p.out, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ERROR", 5) && !bad) {
			snprintf(why, sizeof(why), "target said: %s", line);
			why[strcspn(why, "\n")] = 0;
			bad = 1;
		}
		if (!strncmp(line, "calls ", 6))
			memcpy(last, line, sizeof(last));
	}
	if (f)
		fclose(f);
	sscanf(last, "calls %lu", &before);
	th_sleep_ms(150);
	f = fopen(p.out, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "calls ", 6))
			sscanf(line, "calls %lu", &after);
	if (f)
		fclose(f);
	if (!bad && p.pid > 0 && waitpid(p.pid, &st, WNOHANG) == p.pid) {
		snprintf(why, sizeof(why), "target died (status %#x)", st);
		p.pid = -1;
		bad = 1;
	}
	if (!bad && after <= before) {
		snprintf(why, sizeof(why), "no progress (%lu -> %lu calls)",
			 before, after);
		bad = 1;
	}
	if (bad)
		th_fail("int3", "%s", why);
	else
		th_pass("int3");
	th_kill(p.pid);
}

/* The last "calls N" of a churn target's output; -1 after an ERROR. */
static long th_churn_calls(const char *out, char *why, size_t wn)
{
	char line[256];
	long calls = 0;
	FILE *f = fopen(out, "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ERROR", 5)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(why, wn, "target said: %s", line);
			calls = -1;
			break;
		}
		sscanf(line, "calls %ld", &calls);
	}
	if (f)
		fclose(f);
	return calls;
}

/*
 * A single thread busy in malloc and free (tests/fixtures/hijack/churn.c),
 * a fresh one each round, the agent loaded and stopped in it: it must go
 * on allocating unharmed.  glibc's malloc takes no lock in a
 * single-threaded process, so a dlopen called from a stop inside malloc
 * meets a heap half-way through a change; inject_agent_start must wait
 * for the thread to be out of its C library -- or out of an allocator
 * interposed on its malloc (churn_jemalloc: jemalloc, as redis-server's).
 */
static void th_churn_run(const char *name, char *prog)
{
	int rounds = 40, i, bad = 0, st;
	char out[PATH_MAX + 32], why[512] = "", *cause = NULL;
	long t0 = (long)propel_mono_ms();

	snprintf(out, sizeof(out), "%s/%s.out", th_tmp, name);
	for (i = 0; i < rounds && !bad; i++) {
		char *argv[] = { prog, NULL };
		char dir[PATH_MAX];
		long before, after;
		pid_t pid;
		int err;

		snprintf(dir, sizeof(dir), "%s/%s-%d", th_tmp, name, i);
		mkdir(dir, 0755);
		pid = th_spawn(argv, out);
		if (pid <= 0) {
			snprintf(why, sizeof(why), "cannot start %.400s", prog);
			bad = 1;
			break;
		}
		th_sleep_ms(20 + i % 7);
		/* (the agent's start writes a file: malloc) */
		err = 0;
		for (int k = 0; k < 8 && !err; k++) {
			err = inject_agent_start(pid, th_agent, dir, 1, &cause);
			if (!err)
				err = inject_agent_stop(pid, &cause);
			th_sleep_ms(k);
		}
		if (err < 0) {
			snprintf(why, sizeof(why), "round %d: %s", i,
				 cause ? cause : strerror(-err));
			bad = 1;
		}
		free(cause);
		cause = NULL;
		/* a new "calls" line (every 20 ms of the target's) in 60 ms,
		 * or under load in TH_PROGRESS_MS (th_healthy) */
		before = th_churn_calls(out, why, sizeof(why));
		th_sleep_ms(60);
		after = th_churn_calls(out, why, sizeof(why));
		for (long end = (long)propel_mono_ms() + TH_PROGRESS_MS;
		     before >= 0 && after >= 0 && after <= before && (long)propel_mono_ms() < end;) {
			th_sleep_ms(50);
			after = th_churn_calls(out, why, sizeof(why));
		}
		if (!bad && waitpid(pid, &st, WNOHANG) == pid) {
			snprintf(why, sizeof(why), "round %d: target died (%s)", i,
				 WIFSIGNALED(st) ? strsignal(WTERMSIG(st))
						 : "exit");
			pid = -1;
			bad = 1;
		} else if (!bad && (before < 0 || after < 0)) {
			bad = 1;
		} else if (!bad && after <= before) {
			snprintf(why, sizeof(why), "round %d: no progress in %d ms "
				 "(%ld -> %ld blocks)", i, 60 + TH_PROGRESS_MS,
				 before, after);
			bad = 1;
		}
		th_kill(pid);
	}
	if (bad)
		th_fail(name, "%s", why);
	else
		th_pass(name);
	printf("# %s: %d rounds in %ld ms\n", name, i,
	       (long)propel_mono_ms() - t0);
}

static void th_case_churn(void)
{
	th_churn_run("churn", th_churn);
	if (th_churn_je[0])
		th_churn_run("churn_jemalloc", th_churn_je);
	else
		th_skip("churn_jemalloc", "no " TH_JEMALLOC " (libjemalloc2)");
}

/*
 * A process stopped while the dynamic loader runs a library's constructor
 * (tests/fixtures/hijack/slow-ctor*.c: 600 ms in the library's own code,
 * before main): the agent must not go in until main runs -- from a
 * constructor it would find no function of the program on the stack, and
 * main, called from libc, would never be traced (sshd's re-exec'd
 * connection process, stopped in libgcrypt's constructor).
 */
static void th_ctor_run(const char *name, char *prog)
{
	char *argv[] = { prog, NULL };
	char out[PATH_MAX + 32], dir[PATH_MAX], line[64] = "", *cause = NULL;
	FILE *f;
	pid_t pid;
	int err;

	snprintf(out, sizeof(out), "%s/%s.out", th_tmp, name);
	snprintf(dir, sizeof(dir), "%s/%s", th_tmp, name);
	mkdir(dir, 0755);
	pid = th_spawn(argv, out);
	if (pid <= 0) {
		th_fail(name, "cannot start %.400s", prog);
		return;
	}
	th_sleep_ms(100);
	err = inject_agent_start(pid, th_agent, dir, 1, &cause);
	f = fopen(out, "r");
	if (f && !fgets(line, sizeof(line), f))
		line[0] = 0;
	if (f)
		fclose(f);
	if (err)
		th_fail(name, "inject: %s", cause ? cause : strerror(-err));
	else if (strcmp(line, "main\n"))
		th_fail(name, "the agent went in before main (the "
			      "constructor was running)");
	else
		th_pass(name);
	free(cause);
	th_kill(pid);
}

/* ctor: a constructor with CFI (the unwinder finds ld.so under it);
 * ctor_init: a DT_INIT without CFI, its return address a word above sp */
static void th_case_ctor(void)
{
	th_ctor_run("ctor", th_ctor);
	th_ctor_run("ctor_init", th_init);
}

/*
 * A multi-threaded process changing its ids all the time
 * (tests/fixtures/hijack/setxid.c), held and let go again and again, and
 * the agent started and stopped in it: it must go on changing them.
 * glibc's setgid waits for every thread to take a SIGSETXID, whose
 * handler ignores one its own process did not send; a signal kept during
 * a hold must come back with its own siginfo.
 */
static void th_case_setxid(void)
{
	char *argv[] = { th_setxid, NULL };
	char out[PATH_MAX + 32], dir[PATH_MAX], why[512] = "", *cause = NULL;
	long before, after;
	int i, err = 0;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/setxid.out", th_tmp);
	snprintf(dir, sizeof(dir), "%s/setxid", th_tmp);
	mkdir(dir, 0755);
	pid = th_spawn(argv, out);
	if (pid <= 0) {
		th_fail("setxid", "cannot start %.400s", th_setxid);
		return;
	}
	th_sleep_ms(50);
	for (i = 0; i < 200 && !err; i++) {
		struct hijack *h = NULL;

		err = hijack_attach(pid, &h, &cause);
		if (!err) {
			th_sleep_ms(i % 3);
			err = hijack_detach(h);
		}
		if (!err && i % 20 == 0) {
			err = inject_agent_start(pid, th_agent, dir, 1, &cause);
			if (!err && inject_agent_stop(pid, &cause) < 0)
				err = -1;
		}
		if (err)
			snprintf(why, sizeof(why), "round %d: %s", i,
				 cause ? cause : strerror(-err));
		free(cause);
		cause = NULL;
	}
	th_sleep_ms(100);
	before = th_churn_calls(out, why, sizeof(why));
	th_sleep_ms(300);
	after = th_churn_calls(out, why, sizeof(why));
	if (err || before < 0 || after < 0)
		th_fail("setxid", "%s", why);
	else if (after <= before)
		th_fail("setxid", "setgid hangs after %d holds (%ld -> %ld id "
				  "changes)", i, before, after);
	else
		th_pass("setxid");
	th_kill(pid);
}

#include "tests/unit/test-hijack-late.h"

int main(int argc, char **argv)
{
	/* how many PASS/FAIL lines follow (tests/run.sh holds us to it) */
	printf("CHECKS 43\n");
	fflush(stdout);
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{ "call", th_case_call },     { "signal", th_case_signal },
		{ "timeout", th_case_timeout }, { "inject", th_case_inject },
		{ "bad", th_case_bad },       { "race", th_case_race },
		{ "agent", th_case_agent },   { "int3", th_case_int3 },
		{ "churn", th_case_churn },   { "ctor", th_case_ctor },
		{ "setxid", th_case_setxid }, { "dies", th_case_dies },
		{ "late", th_case_late },
	};
	size_t i;

	th_argc = argc;
	th_argv = argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (th_build()) {
		printf("FAIL hijack_fixtures: cannot build the fixtures with gcc\n");
		return 1;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (th_want(cases[i].name))
			cases[i].fn();
	if (!getenv("TH_KEEP"))
		CHECK_SH("rm -rf %s", th_tmp);
	return th_failed ? 1 : 0;
}
