/*
 * inject/agent/agent.c - the agent's life cycle and its exported interface
 * (share/agent-abi.h): start, stop, status; the LD_PRELOAD entry for
 * `propel record`; fork; the session's map file; memory that never calls
 * malloc (the agent may start while a stopped thread holds malloc's lock).
 *
 * States:   inactive --propel_agent_start--> active --propel_agent_stop--> inactive
 * Start runs with every other thread stopped by the injector (or before
 * main, for record); it instruments the functions on every thread's stack
 * (stack_activate) and from then on instrumentation propagates by itself.
 * Stop restores every patched byte; rings are unmapped by their threads
 * (or here, for threads that are not inside the agent).  The library is
 * never unloaded: threads may still return through its stubs.
 * Nothing here exits or aborts: on failure the agent disables itself and
 * writes a "W" line (a warning) into the map file for the engine to report.
 */
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/agent/agent.h"

__thread struct athread *ag_self __attribute__((tls_model("initial-exec")));
struct ag_config ag_cfg;
volatile int ag_active;
volatile uint32_t ag_gen;
uint64_t ag_nonce;
pthread_mutex_t ag_lock = PTHREAD_MUTEX_INITIALIZER;
struct athread *ag_threads;
uint64_t ag_xsave_mask;
uint32_t ag_xsave_size;

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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

static void swap_bytes(uint8_t *a, uint8_t *b, size_t n)
{
	while (n--) {
		uint8_t t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

void ag_sort(void *base, size_t n, size_t size,
	     int (*cmp)(const void *, const void *))
{
	uint8_t *b = base;
	size_t i, end, root, child;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;) {
		for (root = i; (child = 2 * root + 1) < n; root = child) {
			if (child + 1 < n &&
			    cmp(b + child * size, b + (child + 1) * size) < 0)
				child++;
			if (cmp(b + root * size, b + child * size) >= 0)
				break;
			swap_bytes(b + root * size, b + child * size, size);
		}
	}
	for (end = n - 1; end > 0; end--) {
		swap_bytes(b, b + end * size, size);
		for (root = 0; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end &&
			    cmp(b + child * size, b + (child + 1) * size) < 0)
				child++;
			if (cmp(b + root * size, b + child * size) >= 0)
				break;
			swap_bytes(b + root * size, b + child * size, size);
		}
	}
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
	if (map_batching) {
		if (map_buf_len + (size_t)n > sizeof(map_buf))
			map_flush();
		memcpy(map_buf + map_buf_len, buf, (size_t)n);
		map_buf_len += (size_t)n;
		return;
	}
	if (ag_fd_get(&map, map_path, MAP_FLAGS) < 0 ||
	    !ag_fsize_ok(map.fd, (uint64_t)n) ||
	    write(map.fd, buf, (size_t)n) < 0) {
		/* a full disk: the engine will see a short map file */
	}
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
	map_line("F %u %llx %d %u %s", f->id, (unsigned long long)f->addr,
		 f->mod ? f->mod->id : -1,
		 ((f->flags & F_PLT) ? 1u : 0u) | ((f->flags & F_SYSTEM) ? 2u : 0u),
		 f->name && *f->name ? f->name : "-");
}

void map_site(const struct ag_site *s)
{
	if (s->kind == SITE_ENTRY)
		return; /* a hook (callback.c): no record names it */
	map_line("S %u %llx %d", s->id, (unsigned long long)s->addr,
		 s->owner ? (int)s->owner->id : -1);
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

static int looks_like_return_address(uint64_t w)
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

static void instrument_code_addr(uint64_t a)
{
	struct ag_module *m = module_of(a);
	const struct ag_sym *s;

	if (!m || m->system || m->self || !m->file || a < m->text_lo + 8)
		return;
	s = module_sym(m, a);
	if (!s || s->frag)
		return;
	patch_function(func_get(s->addr));
}

/* Instrument the functions on a thread's stack: its pc, and every word
 * from sp up that looks like a return address into traced code. */
static void stack_activate(const struct propel_thread_hint *h)
{
	size_t cap = 0;
	uint64_t lo = 0, hi = 0, sp = h->sp, a;
	char *text, *line;
	int fd;

	instrument_code_addr(h->pc);
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	close(fd);
	{
		extern char *ag_read_proc(const char *path, size_t *len);

		text = ag_read_proc("/proc/self/maps", &cap);
	}
	if (!text)
		return;
	for (line = text; *line;) {
		unsigned long l, u;
		char perms[8];
		char *nl = strchr(line, '\n');

		if (sscanf(line, "%lx-%lx %7s", &l, &u, perms) == 3 &&
		    sp >= l && sp < u && perms[0] == 'r') {
			lo = sp;
			hi = u;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	munmap(text, cap);
	if (!lo)
		return;
	if (hi - lo > (2u << 20))
		hi = lo + (2u << 20);
	for (a = lo & ~7ull; a + 8 <= hi; a += 8) {
		uint64_t w = *(const uint64_t *)a;
		struct ag_module *m = module_of(w);

		if (!m || m->system || m->self || w < m->text_lo + 8)
			continue;
		if (looks_like_return_address(w))
			instrument_code_addr(w);
	}
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&ag_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&ag_lock);
}

/* In the child: its own nonce, map file and rings; other threads are gone. */
static void fork_child(void)
{
	struct athread *t, *self = ag_self;

	pthread_mutex_init(&ag_lock, NULL);
	if (!ag_active)
		return;
	patch_init(); /* /proc/self/mem of the child */
	for (t = ag_threads; t; t = t->next) {
		if (t->ring)
			munmap(t->ring, t->ring_size);
		t->ring = NULL;
		t->cur = t->end = NULL;
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
	if (map_open() == 0)
		map_replay();
	map_batch_end();
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
				self->shadow[i].site & 0x7fffffffu);
	}
}

static int start_common(const char *dir, uint32_t flags)
{
	static int once;
	int err;

	if (ag_active)
		return -EBUSY;
	if (!dir || !*dir || strlen(dir) >= sizeof(ag_cfg.dir))
		return -EINVAL;
	snprintf(ag_cfg.dir, sizeof(ag_cfg.dir), "%s", dir);
	ag_cfg.flags = flags;
	ag_skipped = 0; /* counted per session */
	if (!ag_cfg.ring_kb)
		ag_cfg.ring_kb = 8192;
	if (!ag_nonce)
		ag_nonce = propel_rdtsc() ^ ((uint64_t)getpid() << 40);
	err = patch_init();
	if (err)
		return err;
	ag_fd_close(&map);
	err = map_open();
	if (err)
		return err;
	if (!once) {
		xsave_setup();
		slow_init_threads();
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		once = 1;
	}
	map_batch_begin();
	map_replay();
	module_scan();
	map_batch_end();
	signals_install();
	ag_gen++;
	return 0;
}

/* ---- exported interface ---- */

AG_EXPORT int propel_agent_start(const char *session_dir,
				 const struct propel_thread_hint *hints,
				 uint32_t nhints, uint32_t flags)
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
	if (flags >> PROPEL_START_RING_SHIFT)
		ag_cfg.ring_kb = (flags >> PROPEL_START_RING_SHIFT) * 64;
	err = start_common(session_dir, flags & 0xff);
	if (!err) {
		map_batch_begin();
		for (i = 0; i < nhints; i++)
			stack_activate(&hints[i]);
		map_batch_end();
		ag_active = 1;
	}
	pthread_mutex_unlock(&ag_lock);
	return err;
}

/* Switch tracing off in this process, with ag_lock held: every patched
 * byte restored, rings left to their threads (or unmapped here). */
int agent_stop_locked(const char *why)
{
	struct athread *t;
	int n;

	ag_active = 0;
	n = patch_restore_all();
	signals_uninstall();
	for (t = ag_threads; t; t = t->next) {
		if (t->busy || !t->ring)
			continue;
		t->ring->tsc_last = propel_rdtsc();
		t->ring->mono_last_ns = ag_mono_ns();
		munmap(t->ring, t->ring_size);
		t->ring = NULL;
		t->cur = t->end = NULL;
	}
	if (ag_skipped)
		ag_warn("%u call sites left as they were (no room for a jump, "
			"or a thread inside)", ag_skipped);
	if (why)
		ag_warn("%s", why);
	map_line("X %d", n);
	map_flush();
	ag_fd_close(&map);
	return n;
}

AG_EXPORT int propel_agent_stop(void)
{
	int n;

	if (!ag_active)
		return 0;
	/* the same for a thread stopped while it patched code: restoring
	 * beside its half-written batch would leave some of it live */
	if (pthread_mutex_trylock(&ag_lock) != 0)
		return -EAGAIN;
	n = agent_stop_locked(NULL);
	pthread_mutex_unlock(&ag_lock);
	return n;
}

AG_EXPORT int propel_agent_status(void)
{
	return ag_active;
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

	if (!real)
		return 127;
	if (dir && *dir) {
		if (kb)
			ag_cfg.ring_kb = (uint32_t)strtoul(kb, NULL, 10);
		if (start_common(dir, libc && *libc == '1'
					      ? PROPEL_START_TRACE_LIBC
					      : 0) == 0) {
			ag_active = 1;
			real_main = main_fn;
			return real(main_wrapper, argc, argv, init, fini,
				    rtld_fini, stack_end);
		}
	}
	return real(main_fn, argc, argv, init, fini, rtld_fini, stack_end);
}
