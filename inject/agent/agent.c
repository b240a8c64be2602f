/*
 * inject/agent/agent.c - the agent's life cycle and its exported interface
 * (share/agent-abi.h): start, stop, status; the LD_PRELOAD entry for
 * `propel record`; fork; the session's map file; memory that never calls
 * malloc (the agent may start while a stopped thread holds malloc's lock).
 *
 * States (each transition names the function that performs it):
 *
 *   inactive --propel_agent_start--> active --propel_agent_stop--> inactive
 *   active --lease_expire: agent_inert_locked--> inert
 *   inert --propel_agent_stop: agent_restore_locked--> inactive
 *   inert --propel_agent_start: agent_restore_locked, then start--> active
 *   active, inert --propel_agent_stop, the threads let go half-way (propel
 *       killed during its detach: agent_others_held)--> inert, the sites
 *       not yet restored left for the next detach
 *
 * inactive: no byte of the program differs from its file (the library may
 *   stay mapped: threads may still return through its stubs).
 * active: tracing.  Start runs with every other thread stopped by the
 *   injector (or before main, for record); it instruments the functions on
 *   every thread's stack (stack_activate) and from then on instrumentation
 *   propagates by itself.
 * inert: the agent switched itself off beside running threads (its
 *   coordinator is gone: the lease below).  Nothing is recorded and no code
 *   is written: one store (ag_active, ag_live = 0) turns every stub, lean
 *   way and entry hook into a pass-through (hot.c enter_check, tramp.S
 *   FAST_BEGIN and LEAN_BEGIN), which is atomic for every thread.  Putting
 *   the original bytes back while the program's threads run through them
 *   was what harmed: redis-server under load answered "unknown command" or
 *   aborted on a dict assertion in 19 of 30 rounds.  The byte-exact restore
 *   is left to `propel detach PID` (or the next attach), which holds every
 *   thread.  A fork child of an inert process is inert too.
 *
 * Stop restores every patched byte; rings are unmapped by their threads
 * (or here, for threads that are not inside the agent).  The library is
 * never unloaded: threads may still return through its stubs.
 * Nothing here exits or aborts: on failure the agent disables itself and
 * writes a "W" line (a warning) into the map file for the engine to report.
 */
#include <cpuid.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "inject/agent/adaptive.h"
#include "inject/agent/budget.h"
#include "share/clock.h"

__thread struct athread *ag_self __attribute__((tls_model("initial-exec")));
struct ag_config ag_cfg;
volatile int ag_active;
volatile int ag_inert;
volatile int ag_stopping;
volatile uint32_t ag_gen;
/* ag_gen while active, else 0: what the lean routines compare a thread's
 * generation with (tramp.S LEAN_BEGIN) */
volatile uint32_t ag_live;
uint64_t ag_nonce;
pthread_mutex_t ag_lock = PTHREAD_MUTEX_INITIALIZER;
struct athread *ag_threads;
uint64_t ag_xsave_mask;
uint32_t ag_xsave_size;
int32_t ag_stamp_every = PROPEL_STAMP_EVERY;

static struct ag_fd map = { -1, 0, 0 };
#define MAP_FLAGS (O_WRONLY | O_CREAT | O_APPEND)
static char map_path[700];

int slow_init_threads(void);
int ag_call_main(int (*main_fn)(int, char **, char **), int argc, char **argv,
		 char **envp);

/* ---- small utilities ---- */

pid_t ag_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

uint64_t ag_mono_ns(void)
{
	return propel_mono_ns();
}

/* A system call without libc: no wrapper the agent may have hooked, no
 * errno; -errno on failure. */
long ag_rawsys(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

void *ag_alloc(size_t n)
{
	static uint8_t *cur, *end;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (n > (1u << 20)) {
		p = mmap(NULL, n, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	if (!cur || cur + n > end) {
		p = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		cur = p;
		end = cur + (4u << 20);
	}
	p = cur;
	cur += n;
	return p;
}

int ag_fd_get(struct ag_fd *f, const char *path, int flags)
{
	struct stat st;

	if (f->fd >= 0 && fstat(f->fd, &st) == 0 && (uint64_t)st.st_dev == f->dev &&
	    (uint64_t)st.st_ino == f->ino)
		return f->fd;
	f->fd = -1; /* not ours any more: never closed by us */
	if (!path)
		return -1;
	f->fd = open(path, flags | O_CLOEXEC, 0600);
	if (f->fd >= 0 && fstat(f->fd, &st) == 0) {
		f->dev = (uint64_t)st.st_dev;
		f->ino = (uint64_t)st.st_ino;
	}
	return f->fd;
}

/*
 * May the agent write n more bytes to fd?  A process may lower its
 * file-size limit (sshd's privilege-separated child sets it to 0): a write
 * past it fails and raises SIGXFSZ, which would kill the program.
 */
int ag_fsize_ok(int fd, uint64_t n)
{
	struct rlimit rl;
	struct stat st;

	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1;
	return fstat(fd, &st) == 0 && (uint64_t)st.st_size + n <= rl.rlim_cur;
}

void ag_fd_close(struct ag_fd *f)
{
	if (ag_fd_get(f, NULL, 0) >= 0)
		close(f->fd);
	f->fd = -1;
}

char *ag_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ag_alloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

/*
 * Map lines.  Outside the slow path, one line per write(2), so it survives
 * any crash.  Inside it (slow_lock .. slow_unlock, or a start or fork under
 * map_batch_begin), lines collect in a buffer that is written before the
 * traced code runs again -- before any record can name what they define.
 */
static char map_buf[1 << 16];
static size_t map_buf_len;
static __thread int map_batching __attribute__((tls_model("initial-exec")));

void map_flush(void)
{
	size_t off = 0;
	int fd = map_buf_len ? ag_fd_get(&map, map_path, MAP_FLAGS) : -1;

	if (fd >= 0 && !ag_fsize_ok(fd, map_buf_len))
		fd = -1; /* the lines are lost, the program is not */

	while (fd >= 0 && off < map_buf_len) {
		ssize_t w = write(fd, map_buf + off, map_buf_len - off);

		if (w <= 0)
			break; /* a full disk: the engine sees a short map file */
		off += (size_t)w;
	}
	map_buf_len = 0;
}

void map_batch_begin(void)
{
	map_batching++;
}

void map_batch_end(void)
{
	if (map_batching && --map_batching == 0 && map.fd >= 0)
		map_flush();
}

/* One line (n bytes, its newline included) to the map: batched, or
 * written at once. */
static void map_emit(const char *buf, size_t n)
{
	if (map_batching) {
		if (map_buf_len + n > sizeof(map_buf))
			map_flush();
		memcpy(map_buf + map_buf_len, buf, n);
		map_buf_len += n;
		return;
	}
	if (ag_fd_get(&map, map_path, MAP_FLAGS) < 0 ||
	    !ag_fsize_ok(map.fd, (uint64_t)n) || write(map.fd, buf, n) < 0) {
		/* a full disk: the engine will see a short map file */
	}
}

void map_line(const char *fmt, ...)
{
	char buf[1200];
	va_list ap;
	int n;

	if (map.fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	map_emit(buf, (size_t)n);
}

/*
 * The F and S lines, one per function and call site, every one of them
 * again in each fork child (map_replay): built here as map_line's
 * "%u", "%llx", "%d" and "%s" would, without vsnprintf's cost.
 */
struct mline {
	char b[1200];
	size_t n;
};

static void ml_str(struct mline *l, const char *s)
{
	size_t k = strlen(s);

	if (k > sizeof(l->b) - 2 - l->n)
		k = sizeof(l->b) - 2 - l->n;
	memcpy(l->b + l->n, s, k);
	l->n += k;
}

static void ml_num(struct mline *l, uint64_t v, unsigned base)
{
	char t[24];
	int k = 0;

	do {
		t[k++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (k && l->n < sizeof(l->b) - 2)
		l->b[l->n++] = t[--k];
}

static void ml_int(struct mline *l, int64_t v)
{
	if (v < 0) {
		ml_str(l, "-");
		ml_num(l, (uint64_t)-v, 10);
	} else {
		ml_num(l, (uint64_t)v, 10);
	}
}

static void ml_end(struct mline *l)
{
	l->b[l->n++] = '\n';
	map_emit(l->b, l->n);
}

void ag_warn(const char *fmt, ...)
{
	char buf[1000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	map_line("W %s", buf);
}

/* Size of the xsave area for the state this kernel enabled (no AMX). */
static void xsave_setup(void)
{
	unsigned a, b, c, d, i;
	uint32_t lo, hi;
	uint64_t xcr0, size = 576;

	__cpuid_count(1, 0, a, b, c, d);
	if (!(c & (1u << 27))) { /* no OSXSAVE: legacy state only */
		ag_xsave_mask = 3;
		ag_xsave_size = 4096;
		return;
	}
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	xcr0 = ((uint64_t)hi << 32) | lo;
	ag_xsave_mask = xcr0 & ~(3ull << 17); /* AMX tiles are never ours */
	for (i = 2; i < 63; i++) {
		if (!(ag_xsave_mask & (1ull << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if (a + b > size)
			size = a + b;
	}
	ag_xsave_size = (uint32_t)((size + 64 + 63) & ~63ull);
}

/* ---- session map file ---- */

static int map_open(void)
{
	char exe[4096];
	ssize_t n;

	snprintf(map_path, sizeof(map_path), "%s/%d.%llx.map", ag_cfg.dir,
		 (int)getpid(), (unsigned long long)ag_nonce);
	map.fd = -1;
	if (ag_fd_get(&map, map_path, MAP_FLAGS) < 0)
		return -errno;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	map_line("P %d %d %llx %s", (int)getpid(), (int)getppid(),
		 (unsigned long long)ag_nonce, exe);
	return 0;
}

void map_func(const struct ag_func *f)
{
	struct mline l = { .n = 0 };

	if (map.fd < 0)
		return;
	ml_str(&l, "F ");
	ml_num(&l, f->id, 10);
	ml_str(&l, " ");
	ml_num(&l, f->addr, 16);
	ml_str(&l, " ");
	ml_int(&l, f->mod ? f->mod->id : -1);
	ml_str(&l, " ");
	ml_num(&l, ((f->flags & F_PLT) ? 1u : 0u) |
			   ((f->flags & F_SYSTEM) ? 2u : 0u) |
			   directive_map_flags(f),
	       10);
	ml_str(&l, " ");
	ml_str(&l, f->name && *f->name ? f->name : "-");
	ml_end(&l);
}

void map_site(const struct ag_site *s)
{
	struct mline l = { .n = 0 };

	if (s->kind == SITE_ENTRY || map.fd < 0)
		return; /* an entry: a hook (callback.c), no record names it */
	ml_str(&l, "S ");
	ml_num(&l, s->id, 10);
	ml_str(&l, " ");
	ml_num(&l, s->addr, 16);
	ml_str(&l, " ");
	ml_int(&l, s->owner ? (int)s->owner->id : -1);
	ml_end(&l);
}

/* Re-emit every module, function and site (a new session, or a child). */
static void map_replay(void)
{
	struct ag_module *m;
	struct ag_site *s;
	uint32_t i;

	for (m = ag_modules; m; m = m->next)
		map_line("M %d %llx %s", m->id, (unsigned long long)m->bias,
			 m->path);
	for (i = 0; i < ag_nfuncs; i++)
		map_func(ag_funcs_by_id[i]);
	for (s = ag_sites_all; s; s = s->next_all)
		map_site(s);
}

/* ---- activation ---- */

int looks_like_return_address(uint64_t w)
{
	const uint8_t *p = (const uint8_t *)w;

	if (p[-5] == 0xe8)
		return 1;
	if (p[-2] == 0xff && ((p[-1] >> 3) & 7) == 2)
		return 1;
	if (p[-3] == 0xff && ((p[-2] >> 3) & 7) == 2)
		return 1;
	if (p[-6] == 0xff && ((p[-5] >> 3) & 7) == 2)
		return 1;
	if (p[-7] == 0xff && ((p[-6] >> 3) & 7) == 2)
		return 1;
	return 0;
}

/* 1 if a lies in a traced function (now instrumented), else 0. */
static int instrument_code_addr(uint64_t a)
{
	struct ag_module *m = module_of(a);
	const struct ag_sym *s;

	if (!m || m->system || m->self || !m->file || a < m->text_lo + 8)
		return 0;
	s = module_sym(m, a);
	if (!s || s->frag)
		return 0;
	patch_function(func_get(s->addr));
	return 1;
}

/*
 * The site whose stub holds code address w, or NULL: a thread that was
 * inside a call when an earlier session stopped returns through that
 * session's stub (agent.c never unloads them), and its stack holds no
 * return address into the caller, only the stub's (struct ag_frame's
 * stub_ret).  Stubs are laid out one after another in their module's
 * arena: the site with the highest stub at or below w there.
 */
static struct ag_site *site_of_stub(uint64_t w)
{
	struct ag_site *best = NULL;
	struct ag_module *m;

	for (m = ag_modules; m; m = m->next)
		if (m->arena && w >= (uint64_t)m->arena &&
		    w < (uint64_t)m->arena_cur)
			break;
	if (!m)
		return NULL;
	for (struct ag_site *s = ag_sites_all; s; s = s->next_all)
		if (s->stub && (uint64_t)s->stub <= w &&
		    (uint64_t)s->stub >= (uint64_t)m->arena &&
		    (!best || s->stub > best->stub))
			best = s;
	return best;
}

/* The end of the readable mapping that holds sp, at most 2 MiB above
 * it, or 0. */
static uint64_t stack_end(uint64_t sp)
{
	extern char *ag_read_proc(const char *path, size_t *len);
	size_t cap = 0;
	uint64_t hi = 0;
	char *text = ag_read_proc("/proc/self/maps", &cap), *line;

	if (!text)
		return 0;
	for (line = text; *line;) {
		unsigned long l, u;
		char perms[8];
		char *nl = strchr(line, '\n');

		if (sscanf(line, "%lx-%lx %7s", &l, &u, perms) == 3 &&
		    sp >= l && sp < u && perms[0] == 'r')
			hi = u;
		if (!nl)
			break;
		line = nl + 1;
	}
	munmap(text, cap);
	if (hi && hi - sp > (2u << 20))
		hi = sp + (2u << 20);
	return hi;
}

/* The mapping of /proc/self/maps that holds a, as "path+offset" (or
 * "[name]", "anonymous") in buf[n]. */
static void maps_where(uint64_t a, char *buf, size_t n)
{
	extern char *ag_read_proc(const char *path, size_t *len);
	size_t cap = 0;
	char *text = ag_read_proc("/proc/self/maps", &cap), *line;

	snprintf(buf, n, "unmapped");
	if (!text)
		return;
	for (line = text; *line;) {
		unsigned long l, u, off;
		int pos = 0;
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &l, &u, &off,
			   &pos) == 3 && a >= l && a < u) {
			if (pos && line[pos])
				snprintf(buf, n, "%s+%#lx", line + pos,
					 (unsigned long)(a - l + off));
			else
				snprintf(buf, n, "anonymous");
			break;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	munmap(text, cap);
}

/* Instrument the functions on a thread's stack (its words from sp to
 * hi): its pc, and every word that looks like a return address into
 * traced code, or into the stub of a call site (the site's function: the
 * thread returns there through the stub).  A slot already swapped for an
 * adopted call (ag_adopt) names its return address elsewhere.
 *
 * Under --adaptive the frames are instrumented outermost first: a
 * function's level is given by the first caller whose sites are made
 * (adaptive.c), so main is level 0 and a frame N calls deep is level N
 * -- from the pc outward, the innermost frame (a busy server's is deep in
 * a request) was a root and its callees traced from the start; the
 * controller is told the frames in that order (adaptive_frame) and finds
 * the thread's loop among them. */
static int stack_activate(const struct propel_thread_hint *h, uint64_t hi)
{
	uint64_t a, outer[256];
	size_t nouter = 0;
	int n = 0, late = adaptive_on();

	if (!late)
		n = instrument_code_addr(h->pc);
	else
		adaptive_stack();
	for (a = h->sp & ~7ull; a + 8 <= hi; a += 8) {
		uint64_t w = *(const uint64_t *)a;
		struct ag_module *m;
		struct ag_site *st;

		if (w == (uint64_t)ag_tramp_fret)
			w = ag_adopted_ra(a);
		m = module_of(w);
		if (!m && ag_sites_all && (st = site_of_stub(w)) &&
		    st->owner && st->owner->mod && !st->owner->mod->system &&
		    !st->owner->mod->self) {
			patch_function(st->owner);
			n++;
			continue;
		}
		if (!m || m->system || m->self || w < m->text_lo + 8)
			continue;
		if (!looks_like_return_address(w))
			continue;
		if (late && nouter < sizeof(outer) / sizeof(outer[0]))
			outer[nouter++] = w;
		else
			n += instrument_code_addr(w);
	}
	while (nouter > 0) {
		n += instrument_code_addr(outer[--nouter]);
		adaptive_frame(outer[nouter]);
	}
	if (late) {
		n += instrument_code_addr(h->pc);
		adaptive_frame(h->pc);
	}
	return n;
}

/*
 * ---- the lease on the coordinator ----
 *
 * The agent holds a lease on the propel process that owns its session (the
 * coordinator): when that process is gone -- kill -9, OOM, a dropped ssh --
 * nobody will switch the agent off or read its rings, so after
 * PROPEL_LEASE_MS the agent switches itself off (agent_inert_locked:
 * recording stopped, every stub a pass-through, the code left as it is for
 * `propel detach` to restore with the threads held) and leaves its rings
 * in the session directory for `propel recover`.
 *
 *   none --lease_find (start)--> found: coordinator's pidfd, a stop pipe
 *   found --propel_agent_lease / fork child--> watching (thread "propel-lease")
 *   watching --pidfd readable, still gone PROPEL_LEASE_MS--> agent_inert_locked
 *   found, watching --agent_stop_locked: lease_cancel--> none (pipe closed,
 *                    the thread wakes and ends)
 *
 * The thread blocks every signal, sleeps in poll() on the pidfd and the
 * read end of the pipe, and never runs the program's code; the traced
 * program pays nothing on its hot path.  Each lease has its own pipe, so
 * a fork child (which inherits the parent's descriptors, but not its
 * thread) gets a pipe and a thread of its own: the parent's stop must not
 * end the child's lease, nor the child's the parent's.  Both watch the same
 * coordinator (the inherited pidfd names it, whatever its pid becomes).
 * Descriptors are checked before use (struct ag_fd): one the program
 * closed and reused is neither written nor closed; the thread then falls
 * back to asking /proc once a second.
 */
struct lease {
	struct ag_fd pidfd, rd, wr;
	pid_t pid;               /* the coordinator */
	unsigned long long start; /* its start time, clock ticks after boot */
	uint32_t gen;            /* == lease_gen while this lease holds */
	int running;             /* a thread watches it */
};

static struct lease *lease_cur;
static volatile uint32_t lease_gen;
/* the lease thread, 0 when none runs.  It never runs the program's code:
 * quiesce_alone() may count a process with only it beside the caller as
 * alone (not done yet: see quiesce.c) */
volatile pid_t ag_lease_tid;
volatile int ag_coord_gone;

static void lease_own(struct ag_fd *f, int fd)
{
	struct stat st;

	f->fd = fd;
	f->dev = f->ino = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		f->dev = (uint64_t)st.st_dev;
		f->ino = (uint64_t)st.st_ino;
	}
}

/* A small file's text into buf (NUL-terminated; "" if unreadable).  No
 * stdio: called with the other threads stopped. */
static void read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/* Start time of pid (field 22 of /proc/PID/stat), 0 if it is gone or a
 * zombie. */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	read_small(path, buf, sizeof(buf));
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	/* p + 2 is field 3 (state); field 22 is 19 spaces on */
	for (p += 2, field = 3; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	while (*p >= '0' && *p <= '9')
		start = start * 10 + (unsigned long long)(*p++ - '0');
	return start;
}

static int lease_coord_alive(const struct lease *l)
{
	unsigned long long s = proc_start(l->pid);

	return s && s == l->start;
}

/* Close the pipe's write end: the thread (if any) wakes and ends. */
static void lease_cancel(void)
{
	struct lease *l = lease_cur;

	lease_gen++;
	lease_cur = NULL;
	if (!l)
		return;
	ag_fd_close(&l->wr);
	if (!l->running) {
		ag_fd_close(&l->rd);
		ag_fd_close(&l->pidfd);
	}
}

/* After lease_cancel by a running program thread (a seccomp sandbox about
 * to be entered, whose filter may refuse the thread's last syscalls): let
 * the thread end first, for at most 200 ms.  A thread in a ptrace stop
 * (a detach: every thread is held) is not waited for. */
static void lease_wait_gone(void)
{
	pid_t tid = ag_lease_tid;
	uint64_t t0 = ag_mono_ns();
	struct timespec ms = { 0, 1000000 };
	char path[64], buf[512], *p;

	if (!tid || tid == ag_gettid())
		return;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	while (ag_lease_tid == tid && ag_mono_ns() - t0 < 200000000ull) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			return;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strrchr(buf, ')');
		if (!p || p[1] != ' ' || p[2] == 't' || p[2] == 'T' ||
		    p[2] == 'Z' || p[2] == 'X')
			return;
		nanosleep(&ms, NULL);
	}
}

/* Read the coordinator from the session directory and open its pidfd and
 * a stop pipe (syscalls only: the other threads may be stopped).  0 if
 * there is none to watch (an older propel, a test), -ESRCH if it is
 * already gone. */
static int lease_find(const char *dir)
{
	char path[700], buf[128], *e;
	struct lease *l;
	unsigned long long start;
	long pid;
	int pfd, pp[2];

	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_COORD_FILE);
	read_small(path, buf, sizeof(buf));
	pid = strtol(buf, &e, 10);
	start = strtoull(e, NULL, 10);
	/* the lease taken before the start (propel_agent_lease with the
	 * session): kept */
	if (lease_cur && lease_cur->pid == pid && lease_cur->start == start)
		return 0;
	lease_cancel();
	if (pid <= 0 || !start)
		return 0;
	pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (pfd < 0)
		return 0; /* no pidfd (an old kernel): no lease */
	/* the pidfd names the process that had pid when it was opened:
	 * the coordinator only if that process started when it did */
	if (proc_start((pid_t)pid) != start) {
		close(pfd);
		return -ESRCH;
	}
	if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    !(l = ag_alloc(sizeof(*l)))) {
		close(pfd);
		return 0;
	}
	lease_own(&l->pidfd, pfd);
	lease_own(&l->rd, pp[0]);
	lease_own(&l->wr, pp[1]);
	l->pid = (pid_t)pid;
	l->start = start;
	l->gen = lease_gen;
	lease_cur = l;
	ag_coord_gone = 0;
	return 0;
}

static void lease_expire(struct lease *l)
{
	char why[160];

	pthread_mutex_lock(&ag_lock);
	if (ag_active && l->gen == lease_gen) {
		snprintf(why, sizeof(why),
			 "propel (pid %d) ended without detaching: the agent "
			 "switched itself off after %d ms (lease); `propel "
			 "detach %d` restores its code",
			 (int)l->pid, PROPEL_LEASE_MS, (int)getpid());
		agent_inert_locked(why);
	}
	pthread_mutex_unlock(&ag_lock);
}

/* A test switch (tests/e2e/golden.sh lease-late): PROPEL_TEST_LEASE_SPIN_MS
 * keeps a recorded program's lease thread running its own loop that long
 * before it says who it is, as a loaded machine's scheduler can */
static uint32_t lease_test_spin_ms;

static void *lease_main(void *arg)
{
	struct lease *l = arg;
	uint64_t gone_at = 0;

	for (uint64_t t0 = ag_mono_ns();
	     ag_mono_ns() - t0 < lease_test_spin_ms * 1000000ull;)
		__asm__ volatile("pause");
	/* who it is first (lease_spawn waits for that), by raw syscalls */
	__atomic_store_n(&ag_lease_tid, (pid_t)ag_rawsys(SYS_gettid, 0, 0, 0, 0),
			 __ATOMIC_RELEASE);
	ag_rawsys(SYS_futex, (long)&ag_lease_tid, FUTEX_WAKE_PRIVATE, 1, 0);
	prctl(PR_SET_NAME, "propel-lease", 0, 0, 0);
	while (l->gen == lease_gen) {
		int pfd = ag_fd_get(&l->pidfd, NULL, 0);
		int rfd = ag_fd_get(&l->rd, NULL, 0);
		struct pollfd p[2] = { { pfd, POLLIN, 0 }, { rfd, POLLIN, 0 } };
		int timeout = -1, r;

		/* a descriptor the program closed: /proc, once a second */
		if (pfd < 0 || rfd < 0)
			timeout = 1000;
		/* the cost budget decides on its own clock (budget.c); the
		 * thread may have begun before the start that set it on */
		if (timeout < 0 || timeout > BUDGET_TICK_MS)
			timeout = BUDGET_TICK_MS;
		if (gone_at) {
			uint64_t el = (ag_mono_ns() - gone_at) / 1000000;

			if (el >= PROPEL_LEASE_MS) {
				lease_expire(l);
				break;
			}
			timeout = PROPEL_LEASE_MS - (int)el;
			p[0].fd = -1;
		}
		r = poll(p, 2, timeout);
		if (r < 0 && errno != EINTR)
			break;
		if (l->gen != lease_gen || (rfd >= 0 && p[1].revents))
			break; /* a stop */
		if (r == 0 && !gone_at) {
			budget_tick();
			adaptive_tick();
		}
		if (!gone_at && !lease_coord_alive(l)) {
			gone_at = ag_mono_ns();
			/* a propagation request waiting now goes on at once */
			ag_coord_gone = 1;
		}
	}
	ag_fd_close(&l->rd);
	ag_fd_close(&l->pidfd);
	l->running = 0;
	ag_lease_tid = 0;
	return NULL;
}

/* Start the thread of the current lease, with every signal blocked (it
 * inherits the mask).  Needs malloc's locks free: not with the other
 * threads stopped. */
static int lease_spawn(void)
{
	struct lease *l = lease_cur;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (!l)
		return 0;
	if (l->running)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256u << 10);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	l->running = 1;
	err = pthread_create(&th, &attr, lease_main, l);
	if (err)
		l->running = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	/* until quiesce.c knows the thread, it would take it for one of the
	 * program's and wait for an answer it never gives (it blocks every
	 * signal): a patch made meanwhile would be put off, and a function
	 * run once never traced (golden ind_vcall.O3 at load 11: the thread
	 * had not run 100 ms after its creation).  Its tid is known here
	 * already: the kernel wrote it at the clone, and its CPU clock's id
	 * is made of it (~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED).
	 * Set unless the thread said so first, and undone if it has ended. */
	if (!err) {
		clockid_t c;
		pid_t none = 0, tid;

		if (pthread_getcpuclockid(th, &c) == 0 && (c & 7) == 6) {
			tid = (pid_t) ~(c >> 3);
			if (__atomic_compare_exchange_n(&ag_lease_tid, &none, tid,
							0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE) &&
			    !__atomic_load_n(&l->running, __ATOMIC_ACQUIRE))
				__atomic_compare_exchange_n(&ag_lease_tid, &tid,
							    0, 0,
							    __ATOMIC_ACQ_REL,
							    __ATOMIC_ACQUIRE);
		}
	}
	/* else (no such clock id): woken by the thread's futex wake the
	 * moment it has said who it is (a poll of the word cost every fork
	 * child a few naps of a VM's timer); 100 ms at most, whatever holds
	 * it up. */
	for (uint64_t t0 = ag_mono_ns();
	     !err && !__atomic_load_n(&ag_lease_tid, __ATOMIC_ACQUIRE) &&
	     ag_mono_ns() - t0 < 100000000ull;) {
		struct timespec most = { 0, 10000000 };

		ag_rawsys(SYS_futex, (long)&ag_lease_tid, FUTEX_WAIT_PRIVATE, 0,
			  (long)&most);
	}
	return err ? -err : 1;
}

/* In a fork child: the parent's thread is not here, and its pipe is the
 * parent's.  A pipe and a thread of the child's own, on the same
 * coordinator (the inherited pidfd). */
static void lease_fork_child(void)
{
	struct lease *old = lease_cur, *l;
	int pp[2];

	ag_lease_tid = 0;
	if (!old)
		return;
	lease_cur = NULL;
	ag_fd_close(&old->rd);
	ag_fd_close(&old->wr);
	old->running = 0;
	if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    !(l = ag_alloc(sizeof(*l)))) {
		ag_fd_close(&old->pidfd);
		ag_warn("no lease in this child: propel's end will not "
			"switch its agent off");
		return;
	}
	l->pidfd = old->pidfd;
	lease_own(&l->rd, pp[0]);
	lease_own(&l->wr, pp[1]);
	l->pid = old->pid;
	l->start = old->start;
	l->gen = ++lease_gen;
	lease_cur = l;
	lease_spawn();
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&ag_lock);
}

static void fork_parent(void)
{
	comm_fork_parent(); /* the child holds our sockets too */
	pthread_mutex_unlock(&ag_lock);
}

/* In the child: its own nonce, map file and rings; other threads are gone. */
static void fork_child(void)
{
	struct athread *t, *self = ag_self;

	pthread_mutex_init(&ag_lock, NULL);
	ag_lease_tid = 0; /* the parent's thread is not here */
	if (!ag_active)
		return;
	patch_init(); /* /proc/self/mem of the child */
	for (t = ag_threads; t; t = t->next) {
		if (t->ring)
			munmap(t->ring, t->ring_size);
		t->ring = NULL;
		t->cur = t->end = NULL;
		ring_release_stale(t);
		if (t != self)
			t->dead = 1;
	}
	ag_threads = self;
	if (self)
		self->next = NULL;
	ag_nonce = propel_rdtsc() ^ ((uint64_t)getpid() << 40);
	ag_fd_close(&map);
	map_buf_len = 0; /* the parent's lines, if any, are the parent's */
	map_batch_begin();
	if (map_open() == 0) {
		map_replay();
		comm_fork_child();
	}
	map_batch_end();
	lease_fork_child();
	if (self) {
		self->tid = ag_gettid();
		self->gen = ag_gen - 1; /* forces a new ring */
		self->busy = 0;
		if (!thread_get())
			return;
		/* the child's trace starts inside the frames it inherited:
		 * open them again so its rings stand on their own */
		for (uint32_t i = 0; i < self->depth; i++)
			rec_put(self, PROPEL_REC_ENTRY, self->shadow[i].func,
				self->shadow[i].site & SH_SITE);
	}
}

/* need_coord: refuse to start when the session's coordinator is gone
 * (record: an image exec'd after propel died would be traced forever). */
static int start_common_in(const char *dir, uint32_t flags, int need_coord);
static int agent_restore_locked(int (*held)(void), int *cut);
static int agent_others_held(void);

/* The agent's start; the program's frames (a hijacked call's, or the
 * loader's running constructors) are above this one. */
static int start_common(const char *dir, uint32_t flags, int need_coord)
{
	uint64_t q = quiesce_enter((uint64_t)__builtin_frame_address(0));
	int err = start_common_in(dir, flags, need_coord);

	quiesce_leave(q);
	return err;
}

static int start_common_in(const char *dir, uint32_t flags, int need_coord)
{
	static int once;
	int err, lerr;

	/* active, but its coordinator gone and no thread watching it (propel
	 * killed between an old agent's start and its lease): stranded; the
	 * threads are held, so that session ends here */
	if (ag_active && lease_cur && !lease_cur->running &&
	    !lease_coord_alive(lease_cur))
		agent_stop_locked("propel ended before this agent's lease "
				  "began: switched off by a new attach");
	if (ag_active)
		return -EBUSY;
	if (!dir || !*dir || strlen(dir) >= sizeof(ag_cfg.dir))
		return -EINVAL;
	/* inert (an earlier session's lease ran out): the threads are held,
	 * so the old session's code goes back first, byte for byte */
	if (ag_inert) {
		int cut;

		agent_restore_locked(agent_others_held, &cut);
		if (cut)
			return -EAGAIN; /* propel ended during the start */
	}
	snprintf(ag_cfg.dir, sizeof(ag_cfg.dir), "%s", dir);
	ag_cfg.flags = flags;
	ag_stamp_every = flags & PROPEL_START_EXACT_TIME ? 1 : PROPEL_STAMP_EVERY;
	ag_skipped = 0; /* counted per session */
	if (!ag_nonce)
		ag_nonce = propel_rdtsc() ^ ((uint64_t)getpid() << 40);
	err = patch_init();
	if (err)
		return err;
	directive_load(dir);
	budget_start(dir, flags);
	adaptive_start(flags);
	lerr = lease_find(dir);
	if (lerr == -ESRCH && (need_coord || (flags & PROPEL_START_NEED_LEASE)))
		return lerr;
	ag_fd_close(&map);
	err = map_open();
	if (err) {
		lease_cancel();
		return err;
	}
	if (lerr == -ESRCH)
		ag_warn("no lease: the coordinator named in %s/%s is not "
			"visible here (another pid namespace?); the agent "
			"stays on if propel dies", dir, PROPEL_COORD_FILE);
	if (!once) {
		xsave_setup();
		slow_init_threads();
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		once = 1;
	}
	map_batch_begin();
	map_replay();
	module_scan();
	comm_start(!need_coord);
	map_batch_end();
	signals_install();
	/* (a hook is a window: its int3 needs the SIGTRAP handler) */
	if (!(flags & PROPEL_START_TRACE_LIBC)) {
		map_batch_begin();
		comm_hook_libc();
		map_batch_end();
	}
	map_batch_begin();
	cb_hook_start(); /* constructors, destructors, execve (callback.c) */
	map_batch_end();
	ag_gen++;
	return 0;
}

/*
 * ---- exported interface ----
 *
 * Each entry point runs on a program thread that the injector borrowed
 * (inject/inject.c) and hands it back its errno as it was called with,
 * whatever its work left there (files not found, maps, waits): a call
 * whose injector came late to its pad goes back to the program by itself
 * (tramp.S propel_agent_return), and the program may look at errno next
 * -- a call of its own failed just before the thread was stopped
 * (tests/e2e/harm-errno-escape.sh).  The injector writes the program's
 * value before each call.
 */

static int agent_start(const char *session_dir,
		       const struct propel_thread_hint *hints, uint32_t nhints,
		       uint32_t flags)
{
	int err;
	uint32_t i;

	/*
	 * Every other thread is stopped by the injector, perhaps inside the
	 * agent's lock (still busy from an earlier session, or in the middle
	 * of patching): never work beside it.  The injector lets the process
	 * run a moment and asks again.
	 */
	if (pthread_mutex_trylock(&ag_lock) != 0)
		return -EAGAIN;
	ag_no_traps = 1;
	{
		const char *hold = getenv("PROPEL_TEST_SLOW_HOLD_MS");

		slow_test_hold_ms = hold ? (uint32_t)strtoul(hold, NULL, 10) : 0;
	}
	if (flags >> PROPEL_START_RING_SHIFT)
		ag_cfg.ring_kb = (flags >> PROPEL_START_RING_SHIFT) * 64;
	err = start_common(session_dir, flags & 0xff, 0);
	if (!err) {
		int found = 0;

		map_batch_begin();
		for (i = 0; i < nhints; i++) {
			uint64_t hi = stack_end(hints[i].sp);

			/* (first: the slot it finds is still unpatched) */
			ag_adopt(&hints[i], hi);
			found += stack_activate(&hints[i], hi);
			cb_adopt_entry(&hints[i]); /* at main (callback.c) */
		}
		/* (the program's calls are followed from these: without one,
		 * only its messages through libc are recorded) */
		if (nhints && !found) {
			char where[300];

			maps_where(hints[0].pc, where, sizeof(where));
			ag_warn("no function of the program on the stack of its "
				"%u thread(s) (thread %llu: pc %#llx in %s, "
				"syscall %lld, sp %#llx, stack to %#llx)", nhints,
				(unsigned long long)hints[0].tid,
				(unsigned long long)hints[0].pc, where,
				(long long)hints[0].sys,
				(unsigned long long)hints[0].sp,
				(unsigned long long)stack_end(hints[0].sp));
		}
		map_batch_end();
		ag_active = 1;
		ag_live = ag_gen;
	}
	pthread_mutex_unlock(&ag_lock);
	return err;
}

AG_EXPORT int propel_agent_start(const char *session_dir,
				 const struct propel_thread_hint *hints,
				 uint32_t nhints, uint32_t flags)
{
	int e = errno, r = agent_start(session_dir, hints, nhints, flags);

	errno = e;
	return r;
}

/* Stop recording, with ag_lock held, and write no code: what is safe
 * beside running threads.  One store makes every stub a pass-through; the
 * rings are left to their threads (or unmapped here). */
static void agent_quiet_locked(void)
{
	struct athread *t;

	ag_active = 0;
	ag_live = 0;
	lease_cancel();
	lease_wait_gone();
	/* the calling thread closes its own ring; any other thread may be
	 * running (this is a lease's thread, or a program thread entering a
	 * sandbox) and about to write a record: ring_retire */
	ag_stopping = 1;
	for (t = ag_threads; t; t = t->next) {
		if (t == ag_self && !t->busy)
			ring_close(t);
		else
			ring_retire(t);
	}
	ag_stopping = 0;
}

/* The last lines of a stop in the map file: warnings, then "X n" (the
 * engine's "detached"; "X 0 inert" for an agent whose code stays). */
static void agent_stop_lines(const char *why, int n, int inert)
{
	if (ag_skipped)
		ag_warn("%u call sites left as they were (no room for a jump, "
			"or a thread inside)", ag_skipped);
	if (why)
		ag_warn("%s", why);
	map_line(inert ? "X %d inert" : "X %d", n);
	map_flush();
	ag_fd_close(&map);
}

/*
 * 1 while every other thread of the process is held by a tracer (a ptrace
 * or job-control stop) or gone.  propel_agent_stop runs with the threads
 * held by propel's detach, but a propel killed during it lets them all run
 * at once (the kernel detaches them): a byte-exact restore beside running
 * threads is what the lease must never do (redis-server answered "ERR
 * unknown command" in soak redis-detach, killed in the ~16 ms of the
 * stop call, 1 round of 60).  So the restore looks before each batch of
 * sites and, once they run, stops there and leaves the agent inert.
 */
static int agent_others_held(void)
{
	char dents[1024], path[96], buf[512], *p;
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pid_t self = ag_gettid();
	long got;
	int held = 1;

	if (fd < 0)
		return 0;
	while (held && (got = syscall(SYS_getdents64, fd, dents,
				      sizeof(dents))) > 0)
		for (long off = 0; held && off < got;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			long tid;

			off += d->d_reclen;
			if (d->d_name[0] == '.')
				continue;
			tid = strtol(d->d_name, NULL, 10);
			if (tid == self)
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%ld/stat",
				 tid);
			read_small(path, buf, sizeof(buf));
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] != 't' && p[2] != 'T' &&
			    p[2] != 'Z' && p[2] != 'X')
				held = 0;
		}
	close(fd);
	return held;
}

/* Every patched byte back as it was in the file, and the program's own
 * signal dispositions: only with every other thread held (propel_agent_stop,
 * propel_agent_start; with held, as long as held() says so) or by a thread
 * alone in its process.  *cut = 1: the threads ran before the end, the
 * rest of the sites are left (the agent stays inert, its handlers in). */
static int agent_restore_locked(int (*held)(void), int *cut)
{
	int n;

	patch_init(); /* this process's /proc/self/mem (a fork child's own) */
	n = patch_restore_all(held, cut);
	if (*cut) {
		ag_inert = 1;
		return n;
	}
	signals_uninstall();
	ag_inert = 0;
	return n;
}

/* Switch tracing off in this process, with ag_lock held: every patched
 * byte restored, rings left to their threads (or unmapped here). */
int agent_stop_locked(const char *why)
{
	int n, cut;

	agent_quiet_locked();
	n = agent_restore_locked(NULL, &cut);
	agent_stop_lines(why, n, 0);
	return n;
}

/* Switch tracing off beside running threads (the lease), with ag_lock
 * held: state inert, the code left for a stop that holds the threads. */
void agent_inert_locked(const char *why)
{
	agent_quiet_locked();
	ag_inert = 1;
	agent_stop_lines(why, 0, 1);
}

static int agent_stop(void)
{
	int n, cut, was_inert = ag_inert;

	if (!ag_active && !ag_inert)
		return 0;
	/* the same for a thread stopped while it patched code: restoring
	 * beside its half-written batch would leave some of it live */
	if (pthread_mutex_trylock(&ag_lock) != 0)
		return -EAGAIN;
	if (ag_active)
		agent_quiet_locked();
	n = agent_restore_locked(agent_others_held, &cut);
	if (cut)
		agent_stop_lines("propel ended during the detach: the agent "
				 "switched itself off; `propel detach` restores "
				 "the rest of its code", n, 1);
	else if (!was_inert)
		agent_stop_lines(NULL, n, 0);
	pthread_mutex_unlock(&ag_lock);
	return n;
}

AG_EXPORT int propel_agent_stop(void)
{
	int e = errno, r = agent_stop();

	errno = e;
	return r;
}

/* how long propel_agent_lease(NULL) waits for another thread's ag_lock */
#define LEASE_LOCK_WAIT_MS 1000

static int agent_lease(const char *session_dir)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/*
	 * The call thread may be inside the agent's lock, and then it is
	 * this thread that holds it: never wait for it.  Before the start,
	 * an earlier session's agent (still active) may have had it there
	 * when the injector stopped it.  After the start too: a propel late
	 * at the start's pad (a loaded machine keeping it off its CPU for
	 * the pad's ~0.4 s) finds the thread gone back to the program by
	 * itself, and takes it back wherever it is by then -- in a slow
	 * path, this lock held.  Waiting here, nginx's worker hung for ever
	 * on its own lock in soak nginx-attach (propel killed during this
	 * call), its lease thread behind it in lease_expire, every later
	 * start answering EAGAIN (tests/e2e/harm-escape.sh).  Another
	 * holder (the lease thread's budget round; a program thread: they
	 * run during this call) is waited for a while after the start.
	 */
	if (slow_lock_bounded(session_dir ? 0 : LEASE_LOCK_WAIT_MS) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return -EAGAIN;
	}
	/* before the start: the lease watches already, so that a propel
	 * killed during the start leaves no agent on for ever */
	if (session_dir && !ag_active && lease_find(session_dir) < 0)
		lease_cancel();
	r = ag_active || (session_dir && lease_cur) ? lease_spawn() : 0;
	pthread_mutex_unlock(&ag_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

AG_EXPORT int propel_agent_lease(const char *session_dir)
{
	int e = errno, r = agent_lease(session_dir);

	errno = e;
	return r;
}

AG_EXPORT int propel_agent_status(void)
{
	return ag_active ? 1 : ag_inert ? 2 : 0;
}

/*
 * record: LD_PRELOAD puts this before libc's; it starts the agent and runs
 * main as a traced call.  Without PROPEL_SESSION_DIR it only passes through.
 */
typedef int (*start_main_fn)(int (*)(int, char **, char **), int, char **,
			     void (*)(void), void (*)(void), void (*)(void),
			     void *);
static int (*real_main)(int, char **, char **);

static int main_wrapper(int argc, char **argv, char **envp)
{
	return ag_call_main(real_main, argc, argv, envp);
}

AG_EXPORT int __libc_start_main(int (*main_fn)(int, char **, char **), int argc,
				char **argv, void (*init)(void),
				void (*fini)(void), void (*rtld_fini)(void),
				void *stack_end)
{
	start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
	const char *dir = getenv("PROPEL_SESSION_DIR");
	const char *kb = getenv("PROPEL_RING_KB");
	const char *libc = getenv("PROPEL_TRACE_LIBC");
	const char *follow = getenv("PROPEL_FOLLOW");
	const char *timing = getenv("PROPEL_TIMING");
	const char *budget = getenv("PROPEL_BUDGET");
	const char *keep = getenv("PROPEL_KEEP_ALL");
	const char *spin = getenv("PROPEL_TEST_LEASE_SPIN_MS");

	if (!real)
		return 127;
	if (dir && *dir) {
		if (spin)
			lease_test_spin_ms = (uint32_t)strtoul(spin, NULL, 10);
		ag_wait_drain = keep && *keep == '1'; /* record: kept whole */
		if (kb)
			ag_cfg.ring_kb = (uint32_t)strtoul(kb, NULL, 10);
		if (start_common(dir, (libc && *libc == '1'
					       ? PROPEL_START_TRACE_LIBC
					       : 0) |
					      (follow && *follow == '1'
					       ? PROPEL_START_FOLLOW
					       : 0) |
					      (timing && !strcmp(timing, "exact")
					       ? PROPEL_START_EXACT_TIME
					       : 0) |
					      (budget && *budget == '1'
					       ? PROPEL_START_BUDGET
					       : 0), 1) == 0) {
			ag_active = 1;
			ag_live = ag_gen;
			lease_spawn();
			real_main = main_fn;
			return real(main_wrapper, argc, argv, init, fini,
				    rtld_fini, stack_end);
		}
	}
	return real(main_fn, argc, argv, init, fini, rtld_fini, stack_end);
}
