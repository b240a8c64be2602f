/*
 * inject/agent/slow.c - the slow path: first events of a thread, first
 * calls of a callee, and the library calls the agent must interpose on.
 *
 * Entered from tramp.S with the complete register state saved, so ordinary
 * C and libc are fine here.  Work that touches shared agent state runs under
 * ag_lock with signals blocked (slow_lock), so a signal handler that makes a
 * traced call cannot deadlock against its own thread.
 *
 * Interposed calls (through the PLT of an instrumented module):
 *   pthread_create   the start routine runs inside thread_start(), which
 *                    creates the thread's ring and traces the routine
 *   sigaction/signal emulated: the agent keeps the program's handlers and
 *                    installs its own wrapper, which records the delivery
 *                    and traces the handler; fault signals stay the agent's
 *   fork             the child gets its own rings (ag_fork_child)
 *   vfork            a real vfork (ag_vfork): the child runs on our memory
 *                    until it execs or exits, as a thread with no ring
 *                    (vfork_thread), so it writes nothing into our rings
 *                    or shadow stacks; FORK is recorded in the parent
 *   exec*            recorded; the environment keeps the agent for record;
 *                    under attach the coordinator is asked to follow the
 *                    thread into the new image (exec_handoff_wait)
 *   exit/_exit       recorded as the process exit (exit() from code we do
 *                    not see is caught by an on_exit hook, exit_hook)
 *   send/recv/read/write and their kin, connect, close, and the calls that
 *                    return a new descriptor: communication events
 *                    (comm.c), through comm_fast without the global lock
 *                    once the thread and the callee are set up
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject/agent/agent.h"

extern char **environ;

void slow_lock(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	pthread_mutex_lock(&ag_lock);
	map_batch_begin();
}

void slow_unlock(sigset_t *old)
{
	map_batch_end();
	pthread_mutex_unlock(&ag_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static const struct {
	const char *name;
	uint32_t kind;
} intercepts[] = {
	{ "pthread_create", IC_PTHREAD_CREATE },
	{ "sigaction", IC_SIGACTION },
	{ "__sigaction", IC_SIGACTION },
	{ "signal", IC_SIGNAL },
	{ "bsd_signal", IC_SIGNAL },
	{ "pthread_sigmask", IC_SIGMASK },
	{ "sigprocmask", IC_SIGPROCMASK },
	{ "fork", IC_FORK },
	{ "vfork", IC_VFORK },
	{ "clone", IC_CLONE },
	{ "execv", IC_EXEC },
	{ "execvp", IC_EXEC },
	{ "execl", IC_EXEC },
	{ "execlp", IC_EXEC },
	{ "execve", IC_EXECVE },
	{ "execle", IC_EXEC },
	{ "execvpe", IC_EXECVPE },
	{ "exit", IC_EXIT },
	{ "_exit", IC_EXIT },
	{ "_Exit", IC_EXIT },
	{ "prctl", IC_PRCTL },
	{ "seccomp", IC_SECCOMP },
	{ "syscall", IC_SYSCALL },
	{ "swapcontext", IC_SWAPCONTEXT },
	{ "setcontext", IC_SETCONTEXT },
	{ "makecontext", IC_MAKECONTEXT },
	{ "getcontext", IC_GETCONTEXT },
	/* communication (comm.c) */
	{ "send", IC_SEND },
	{ "sendto", IC_SENDTO },
	{ "sendmsg", IC_SENDMSG },
	{ "sendmmsg", IC_SENDMMSG },
	{ "write", IC_WRITE },
	{ "writev", IC_WRITEV },
	{ "recv", IC_RECV },
	{ "recvfrom", IC_RECVFROM },
	{ "recvmsg", IC_RECVMSG },
	{ "recvmmsg", IC_RECVMMSG },
	{ "read", IC_READ },
	{ "readv", IC_READV },
	{ "__read_chk", IC_READ_CHK },
	{ "__recv_chk", IC_RECV_CHK },
	{ "__recvfrom_chk", IC_RECVFROM_CHK },
	{ "sendfile", IC_SENDFILE },
	{ "sendfile64", IC_SENDFILE },
	{ "splice", IC_SPLICE },
	{ "connect", IC_CONNECT },
	{ "close", IC_CLOSE },
	{ "dup2", IC_DUP2 },
	{ "dup3", IC_DUP2 },
	{ "socket", IC_FDRET },
	{ "accept", IC_FDRET },
	{ "accept4", IC_FDRET },
	{ "dup", IC_FDRET },
	{ "open", IC_FDRET },
	{ "open64", IC_FDRET },
	{ "openat", IC_FDRET },
	{ "openat64", IC_FDRET },
	{ "creat", IC_FDRET },
	{ "fcntl", IC_FDRET },
	{ "fcntl64", IC_FDRET },
	{ "epoll_create", IC_FDRET },
	{ "epoll_create1", IC_FDRET },
	{ "eventfd", IC_FDRET },
	{ "signalfd", IC_FDRET },
	{ "timerfd_create", IC_FDRET },
	{ "memfd_create", IC_FDRET },
	{ "inotify_init", IC_FDRET },
	{ "inotify_init1", IC_FDRET },
	{ "pipe", IC_FDPAIR },
	{ "pipe2", IC_FDPAIR },
	{ "socketpair", IC_SOCKETPAIR },
};

uint32_t intercept_kind(const char *name)
{
	size_t i;

	if (!name)
		return IC_NONE;
	for (i = 0; i < sizeof(intercepts) / sizeof(intercepts[0]); i++)
		if (strcmp(name, intercepts[i].name) == 0)
			return intercepts[i].kind;
	return IC_NONE;
}

/* The i-th interposed function's name and kind (NULL past the last). */
const char *intercept_at(size_t i, uint32_t *kind)
{
	if (i >= sizeof(intercepts) / sizeof(intercepts[0]))
		return NULL;
	*kind = intercepts[i].kind;
	return intercepts[i].name;
}

/* ---- threads ---- */

static pthread_key_t thread_key;
static int thread_key_ok;

static void thread_key_dtor(void *p)
{
	(void)p;
	thread_exit_hook();
}

/* Rings a drain empties: asked by the injector (flags), or for record by
 * the environment the process started with (exec_env_save, below). */
static int ring_keep_all(void);

static int ring_open(struct athread *t)
{
	char path[600];
	size_t recs, sub, size;
	struct propel_ring_hdr *h;
	int fd, keep_all = ring_keep_all();
	uint32_t count = PROPEL_RING_SUBS;

	recs = (size_t)(ag_cfg.ring_kb ? ag_cfg.ring_kb
			: keep_all     ? PROPEL_RING_KB_FULL
				       : PROPEL_RING_KB_FLIGHT) *
	       1024 / sizeof(struct propel_rec);
	/* more sub-buffers, not larger ones, up to PROPEL_RING_SUB_MAX */
	while (count < PROPEL_RING_SUB_MAX &&
	       recs / (2 * count) * sizeof(struct propel_rec) >=
		       PROPEL_RING_SUB_BYTES)
		count *= 2;
	sub = recs / count;
	if (sub < 256)
		sub = 256;
	size = propel_ring_size(count, (uint32_t)sub);
	snprintf(path, sizeof(path), "%s/%d.%llx.%d.ring", ag_cfg.dir,
		 (int)getpid(), (unsigned long long)ag_nonce, (int)t->tid);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* a file-size limit would answer with SIGXFSZ, not an error */
	if (!ag_fsize_ok(fd, size)) {
		close(fd);
		unlink(path);
		return -EFBIG;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		int e = -errno;

		close(fd);
		unlink(path);
		return e;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED) {
		unlink(path);
		return -ENOMEM;
	}
	/* tmpfs allocates pages on first touch: a full /dev/shm would show
	 * up as SIGBUS in the program.  The header and the first sub-buffer
	 * are made now, each later one when the writer first reaches it
	 * (ring_populate): MADV_POPULATE_READ answers a full /dev/shm with
	 * an error, and a thread that records little (a fork child about to
	 * exec, an idle worker) never pays for all of its ring.  READ, not
	 * WRITE: on a shared tmpfs mapping a read fault makes the same page
	 * and maps it writable (tmpfs wants no write notification), and
	 * where the drain made the pages already (engine/drain.c) it maps
	 * them 16 at a time -- a quarter of what write faults cost.  A kernel
	 * without it (before 5.14) reserves the whole ring here. */
	if (madvise(h, PROPEL_RING_HDR_SIZE + sub * sizeof(struct propel_rec),
		    MADV_POPULATE_READ) == 0) {
		t->ring_pop = 1;
	} else {
		int ok = 0;

		if (errno == EINVAL) {
			fd = open(path, O_RDWR | O_CLOEXEC);
			ok = fd >= 0 && posix_fallocate(fd, 0, (off_t)size) == 0;
			if (fd >= 0)
				close(fd);
		}
		if (!ok) {
			munmap(h, size);
			unlink(path);
			return -ENOSPC;
		}
		t->ring_pop = count;
	}
	t->pop_skip = 0;
	memcpy(h->magic, PROPEL_RING_MAGIC, 8);
	h->version = PROPEL_RING_VERSION;
	h->hdr_size = PROPEL_RING_HDR_SIZE;
	h->pid = (uint32_t)getpid();
	h->tid = (uint32_t)t->tid;
	h->nonce = ag_nonce;
	h->sub_count = count;
	h->sub_recs = (uint32_t)sub;
	ring_pair(&h->tsc0, &h->mono0_ns);
	h->tsc_last = h->tsc0;
	h->sub_tsc[0] = h->tsc0;
	h->keep_all = (uint32_t)keep_all;
	h->exact = ag_stamp_every == 1;
	h->mono_last_ns = h->mono0_ns;
	prctl(PR_GET_NAME, h->comm, 0, 0, 0);
	t->ring = h;
	t->ring_size = size;
	t->stamp = h->tsc0 << 4;
	t->stamp_left = 0;
	t->stamp_every = (uint16_t)ag_stamp_every;
	t->stamp_most = (uint16_t)ag_stamp_every;
	t->cur = propel_ring_sub(h, 0);
	t->end = t->cur + sub;
	return 0;
}

/* The calling thread's ring.  The pointer is taken with an exchange: a
 * stop on another thread (ring_retire) may want it at the same moment,
 * and only one of the two may let the mapping go. */
void ring_close(struct athread *t)
{
	struct propel_ring_hdr *h =
		__atomic_exchange_n(&t->ring, NULL, __ATOMIC_ACQ_REL);
	uint64_t tsc, ns;

	if (!h)
		return;
	ring_pair(&tsc, &ns);
	h->tsc_last = tsc;
	h->mono_last_ns = ns;
	if (ag_stopping)
		h->flags |= PROPEL_RING_F_STOPPED;
	t->cur = t->end = NULL;
	munmap(h, t->ring_size);
}

/*
 * Another thread's ring at a stop.  That thread may be running (a lease
 * ends beside the program, a sandbox is entered) and be anywhere between
 * reading t->cur and writing a record there: its ring must not be
 * unmapped under it.  So the file is let go, but the addresses stay
 * mapped, to private pages holding a copy of the header (a late
 * sub-buffer commit computes as before), swapped in by one mremap: a late
 * record lands there, harmless, and never in the file.  The thread's
 * cursor is not touched: it may have checked it and be about to use it
 * (tramp.S), and from now on it points into the copy.  The thread gives
 * the addresses back itself (ring_release_stale) when it next opens a
 * ring or ends.
 */
void ring_retire(struct athread *t)
{
	struct propel_ring_hdr *h =
		__atomic_exchange_n(&t->ring, NULL, __ATOMIC_ACQ_REL);
	uint64_t tsc, ns;
	void *copy;

	if (!h)
		return;
	ring_pair(&tsc, &ns);
	h->tsc_last = tsc;
	h->mono_last_ns = ns;
	if (ag_stopping)
		h->flags |= PROPEL_RING_F_STOPPED;
	copy = mmap(NULL, t->ring_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (copy != MAP_FAILED) {
		memcpy(copy, h, PROPEL_RING_HDR_SIZE);
		if (mremap(copy, t->ring_size, t->ring_size,
			   MREMAP_MAYMOVE | MREMAP_FIXED, h) == MAP_FAILED)
			munmap(copy, t->ring_size); /* the file stays mapped */
	}
	/* t->cur and t->end are left as they are: the thread may have
	 * checked them and be about to read them again (tramp.S) */
	t->stale_size = t->ring_size;
	__atomic_store_n(&t->stale, (void *)h, __ATOMIC_RELEASE);
}

void ring_release_stale(struct athread *t)
{
	void *p = __atomic_exchange_n(&t->stale, NULL, __ATOMIC_ACQ_REL);

	if (!p)
		return;
	if (!t->ring)
		t->cur = t->end = NULL; /* they may point into it */
	munmap(p, t->stale_size);
}

struct athread *thread_get(void)
{
	struct athread *t = ag_self;
	int err;

	if (t && t->gen == ag_gen)
		return t->dead ? NULL : t;
	if (!t) {
		t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t == MAP_FAILED)
			return NULL;
		t->tid = ag_gettid();
		t->next = ag_threads;
		ag_threads = t;
		if (thread_key_ok)
			pthread_setspecific(thread_key, t);
		ag_self = t;
	}
	ring_close(t); /* a ring of an earlier session */
	ring_release_stale(t);
	t->gen = ag_gen;
	t->dead = 0;
	err = ring_open(t);
	if (err) {
		t->dead = 1;
		ag_warn("thread %d: cannot create its ring: %s; not traced",
			(int)t->tid, strerror(-err));
		return NULL;
	}
	return t;
}

/*
 * ag_lock within ms milliseconds: 0, or -EDEADLK at once when this very
 * thread holds it (glibc records the owner of every kind of mutex), or
 * -ETIMEDOUT.  A thread that waits for a lock it holds waits for ever:
 * an injector's call may find its thread anywhere inside the agent (a
 * signal handler's write inside the agent, or a call thread that went
 * back to the program by itself and was taken back in a slow path, see
 * agent.c propel_agent_lease), so no entry of the agent that can run on
 * such a thread waits without this.  The holder is waited for, for a
 * bound: it may itself wait on something this thread holds (a malloc
 * arena, the loader's lock).  ms 0: a trylock.
 */
int slow_lock_bounded(unsigned ms)
{
	struct timespec until;

	if (pthread_mutex_trylock(&ag_lock) == 0)
		return 0;
	if (__atomic_load_n(&ag_lock.__data.__owner, __ATOMIC_RELAXED) ==
	    (int)ag_gettid())
		return -EDEADLK;
	if (!ms)
		return -ETIMEDOUT;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return pthread_mutex_clocklock(&ag_lock, CLOCK_MONOTONIC, &until)
		       ? -ETIMEDOUT
		       : 0;
}

/*
 * A thread first seen at a hooked entry (callback.c, a send inside an
 * untraced library) or returning from a call adopted at injection: its
 * ring, made under the agent's lock.  Another thread may hold the lock
 * (patching a callee, the budget's round): this one waits for it up to
 * HOOKED_WAIT_MS -- under load the holder can be off its CPU for tens of
 * ms, and a thread-per-connection server's first recv passed unrecorded
 * (comm-libs record/threaded-server, 1 run in 10 beside two spinners).
 * This very thread may hold the lock (a signal handler calling write
 * inside the agent): NULL at once, and the call passes unrecorded.
 */
#define HOOKED_WAIT_MS 1000

struct athread *thread_get_hooked(void)
{
	sigset_t all, old;
	struct athread *t = NULL;

	/* posix_spawn's child (untraced, in libc) runs on our memory and
	 * our thread pointer: no athread of its own there */
	if (!comm_own_process())
		return NULL;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (slow_lock_bounded(HOOKED_WAIT_MS) == 0) {
		map_batch_begin();
		t = ag_active ? thread_get() : NULL;
		map_batch_end();
		pthread_mutex_unlock(&ag_lock);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return t;
}

void thread_exit_hook(void)
{
	struct athread *t = ag_self;
	struct propel_ring_hdr *h;

	if (t && !t->busy)
		ring_release_stale(t);
	if (!t || !(h = t->ring) || t->gen != ag_gen)
		return;
	t->busy = 1;
	rec_put(t, PROPEL_REC_THREAD_EXIT, 0, 0);
	h->flags |= PROPEL_RING_F_EXITED; /* (or a retired copy's) */
	ring_close(t);
	t->dead = 1;
	t->busy = 0;
}

/* ---- callees ---- */

/* Make sure a callee is instrumented before control reaches it. */
void func_resolve(struct ag_func *f)
{
	if (f->flags & F_READY)
		return;
	if ((f->flags & F_PLT) && !(f->flags & F_RESOLVED) && f->name) {
		/* the PLT entry leads into a module of our own: instrument
		 * the function it binds to */
		void *dst = dlsym(RTLD_DEFAULT, f->name);
		struct ag_module *m;

		f->flags |= F_RESOLVED;
		if (dst) {
			m = module_of((uint64_t)dst);
			if (!m && module_scan() > 0)
				m = module_of((uint64_t)dst);
			if (m && !m->system && !m->self)
				patch_function(func_get((uint64_t)dst));
		}
	}
	if (!(f->flags & (F_PLT | F_SYSTEM | F_FOREIGN)))
		patch_function(f); /* ready, unless it is to be tried again */
	else
		patch_ready(f);
}

uint64_t ag_invoke(void *fn, uint64_t a, uint64_t b, uint64_t c,
		   struct ag_func *f); /* tramp.S */

static int invoke_traced(struct athread *t, struct ag_func *f)
{
	return f && t && t->ring && !t->busy && ag_active && t->gen == ag_gen;
}

void ag_invoke_enter(struct ag_func *f, uint64_t slot)
{
	struct athread *t = ag_self;

	if (!invoke_traced(t, f))
		return;
	t->busy = 1;
	shadow_unwind(t, slot);
	shadow_push(t, slot, f->id, PROPEL_SITE_NONE);
	rec_put(t, PROPEL_REC_ENTRY, f->id, PROPEL_SITE_NONE);
	t->busy = 0;
}

void ag_invoke_exit(struct ag_func *f, uint64_t slot)
{
	struct athread *t = ag_self;

	if (!f || !t || t->busy)
		return;
	t->busy = 1;
	shadow_unwind(t, slot - 1);
	while (t->depth && t->shadow[t->depth - 1].slot == slot) {
		struct shadow *s = &t->shadow[--t->depth];

		if (t->ring && t->gen == ag_gen && ag_active)
			rec_put(t, PROPEL_REC_EXIT, s->func,
				s->site & SH_SITE);
	}
	t->busy = 0;
}

/* Run fn(a, b, c) as a traced call of f from agent code. */
static uint64_t traced_call(struct ag_func *f, void *fn, uint64_t a,
			    uint64_t b, uint64_t c)
{
	return ag_invoke(fn, a, b, c, f);
}

static struct ag_func *func_for_code(uint64_t addr)
{
	struct ag_func *f;
	sigset_t old;

	if (!addr)
		return NULL;
	slow_lock(&old);
	f = func_get(addr);
	func_resolve(f);
	slow_unlock(&old);
	return f->flags & F_NOTRACE ? NULL : f;
}

/* ---- pthread_create ---- */

struct start_ctx {
	void *(*fn)(void *);
	void *arg;
	struct ag_func *f;
	pid_t parent;
};

static void *thread_start(void *p)
{
	struct start_ctx c = *(struct start_ctx *)p;
	struct athread *t;
	sigset_t old;

	free(p);
	slow_lock(&old);
	t = ag_active ? thread_get() : NULL;
	slow_unlock(&old);
	if (t && t->ring)
		rec_put(t, PROPEL_REC_THREAD_START, (uint32_t)c.parent, 0);
	return (void *)traced_call(c.f, (void *)c.fn, (uint64_t)c.arg, 0, 0);
}

/* ---- signals ---- */

static struct sigaction prog_act[NSIG];
static unsigned char managed[NSIG];
static const int fault_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };

static int is_fault(int sig)
{
	for (size_t i = 0; i < sizeof(fault_sigs) / sizeof(fault_sigs[0]); i++)
		if (fault_sigs[i] == sig)
			return 1;
	return 0;
}

static void sig_wrapper(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct athread *t = ag_self;
	struct sigaction *pa = &prog_act[sig];
	void *h = pa->sa_flags & SA_SIGINFO ? (void *)pa->sa_sigaction
					    : (void *)pa->sa_handler;
	int saved_errno = errno;

	/* every return restores errno: a handler that changes it turns the
	 * EINTR of the call it interrupted into another error (redis's
	 * event loop panics on epoll_wait failing with anything else) */
	if (sig == SIGTRAP && (quiesce_signal(si, uc) || patch_trap(uc))) {
		errno = saved_errno;
		return;
	}
	if (t && t->ring && !t->busy && t->gen == ag_gen && ag_active) {
		t->busy = 1;
		rec_put(t, PROPEL_REC_SIGNAL, (uint32_t)sig,
			(uint32_t)si->si_code);
		rec_put64(t, (uint64_t)si->si_addr);
		rec_put64(t, (uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
		t->busy = 0;
	}
	if (h == (void *)SIG_DFL || h == (void *)SIG_IGN) {
		struct sigaction dfl;

		if (h == (void *)SIG_IGN && !is_fault(sig)) {
			errno = saved_errno;
			return;
		}
		/* the default action, exactly as without the agent */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
		managed[sig] = 0;
		if (si->si_code <= 0 || sig == SIGABRT || sig == SIGTRAP)
			syscall(SYS_tgkill, getpid(), ag_gettid(), sig);
		errno = saved_errno;
		return;
	}
	if (pa->sa_flags & SA_RESETHAND) {
		pa->sa_handler = SIG_DFL;
		pa->sa_flags &= ~SA_SIGINFO;
	}
	errno = saved_errno;
	traced_call(func_find((uint64_t)h), h, (uint64_t)sig, (uint64_t)si,
		    (uint64_t)ucv);
}

static int manage(int sig, const struct sigaction *act)
{
	struct sigaction ours = *act;

	ours.sa_flags |= SA_SIGINFO;
	/* the agent's own signals (quiesce.c's queued SIGTRAP, asking a
	 * thread where it is) must not cut a blocking call short: with the
	 * program's flags (SIG_DFL's: none) a hot fixture's reader thread,
	 * asked just as it entered read() on a pipe, got EINTR and ended,
	 * and its writers blocked for ever (budget hot/record-keeps, 1
	 * record in 6 beside two spinners).  A program handler's own
	 * SA_RESTART choice stands, but for SIGTRAP, whose only
	 * asynchronous sender here is the agent */
	if (sig == SIGTRAP ||
	    (!(act->sa_flags & SA_SIGINFO) &&
	     (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)))
		ours.sa_flags |= SA_RESTART;
	ours.sa_sigaction = sig_wrapper;
	if (sigaction(sig, &ours, NULL) < 0)
		return -1;
	managed[sig] = 1;
	return 0;
}

int signals_install(void)
{
	struct sigaction cur;
	size_t i;

	for (i = 0; i < sizeof(fault_sigs) / sizeof(fault_sigs[0]) + 1; i++) {
		int sig = i < sizeof(fault_sigs) / sizeof(fault_sigs[0])
				  ? fault_sigs[i]
				  : SIGTRAP;

		if (managed[sig] || sigaction(sig, NULL, &cur) < 0)
			continue;
		prog_act[sig] = cur;
		if (manage(sig, &cur) < 0)
			ag_warn("cannot install a handler for signal %d", sig);
	}
	return 0;
}

/* Put the program's own dispositions back (detach). */
void signals_uninstall(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		if (!managed[sig] || sig == SIGTRAP)
			continue;
		sigaction(sig, &prog_act[sig], NULL);
		managed[sig] = 0;
	}
}

static int emul_sigaction(int sig, const struct sigaction *act,
			  struct sigaction *oact)
{
	void *h;

	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP ||
	    !ag_active)
		return sigaction(sig, act, oact);
	if (!managed[sig] && !is_fault(sig) && sig != SIGTRAP) {
		if (!act)
			return sigaction(sig, act, oact);
		h = act->sa_flags & SA_SIGINFO ? (void *)act->sa_sigaction
					       : (void *)act->sa_handler;
		if (h == (void *)SIG_DFL || h == (void *)SIG_IGN)
			return sigaction(sig, act, oact);
	}
	if (!managed[sig] && sigaction(sig, NULL, &prog_act[sig]) < 0)
		return -1;
	if (oact)
		*oact = prog_act[sig];
	if (!act)
		return 0;
	h = act->sa_flags & SA_SIGINFO ? (void *)act->sa_sigaction
				       : (void *)act->sa_handler;
	if (h != (void *)SIG_DFL && h != (void *)SIG_IGN)
		func_for_code((uint64_t)h);
	prog_act[sig] = *act;
	if ((h == (void *)SIG_DFL || h == (void *)SIG_IGN) && !is_fault(sig) &&
	    sig != SIGTRAP) {
		managed[sig] = 0;
		return sigaction(sig, act, NULL);
	}
	return manage(sig, act);
}

static __sighandler_t emul_signal(int sig, __sighandler_t h)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	if (emul_sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/*
 * SIGTRAP is never blocked while the agent is active.  A thread that
 * blocks it and meets one of the agent's int3s (a site being rewritten) is
 * not sent to the handler: the kernel forces the signal, resetting its
 * disposition to SIG_DFL for the whole process, and the process dies --
 * then, or at the next int3 of any thread.  Servers block every signal in
 * their workers (jemalloc's background thread, redis's among them), so a
 * mask that asks for SIGTRAP blocked is given without it; the tracer
 * unblocks it in the threads it holds at attach (inject/hijack.c), and
 * signals_trap_check puts the handler back before each int3 batch.
 */
static const sigset_t *sigmask_no_trap(int how, const sigset_t *set,
				       sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK || !ag_active ||
	    sigismember(set, SIGTRAP) != 1)
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

static int emul_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	return pthread_sigmask(how, sigmask_no_trap(how, set, &copy), old);
}

static int emul_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	return sigprocmask(how, sigmask_no_trap(how, set, &copy), old);
}

/* Before an int3 is written: SIGTRAP still goes to sig_wrapper (a reset by
 * the kernel, see emul_sigmask, is undone). */
void signals_trap_check(void)
{
	struct sigaction cur;

	if (!managed[SIGTRAP] || sigaction(SIGTRAP, NULL, &cur) < 0 ||
	    ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sig_wrapper))
		return;
	ag_warn("SIGTRAP's handler was reset (a thread that blocked it met an "
		"int3): put back");
	manage(SIGTRAP, &prog_act[SIGTRAP]);
}

/* ---- exec ---- */

static int env_has(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return 1;
	return 0;
}

/*
 * For record: an exec'd image must load the agent again.  The variables
 * are those the process started with (saved when the agent is loaded,
 * exec_env_save): a program that cleared its environment (env -i, a
 * shell's exec -c) still hands the agent on, and the agent knows that it
 * was started by the environment (record) rather than by an injector.
 */
static const char *const exec_env_keep[] = { "LD_PRELOAD", "PROPEL_SESSION_DIR",
					     "PROPEL_RING_KB",
					     "PROPEL_TRACE_LIBC",
					     "PROPEL_KEEP_ALL", "PROPEL_TIMING" };
#define EXEC_ENV_N (sizeof(exec_env_keep) / sizeof(exec_env_keep[0]))
static char *exec_env[EXEC_ENV_N]; /* "NAME=value", or NULL */

static void exec_env_save(void)
{
	size_t i;

	for (i = 0; i < EXEC_ENV_N; i++) {
		const char *val = getenv(exec_env_keep[i]);

		if (val && asprintf(&exec_env[i], "%s=%s", exec_env_keep[i],
				    val) < 0)
			exec_env[i] = NULL;
	}
}

static int ring_keep_all(void)
{
	return (ag_cfg.flags & PROPEL_START_KEEP_ALL) ||
	       (exec_env[4] && !strcmp(exec_env[4], "PROPEL_KEEP_ALL=1"));
}

static char **env_with_agent(char *const *envp)
{
	size_t n = 0, i, k = 0;
	char **v;

	if (!exec_env[1] || env_has(envp, "PROPEL_SESSION_DIR"))
		return NULL;
	while (envp && envp[n])
		n++;
	v = malloc((n + EXEC_ENV_N + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < EXEC_ENV_N; i++)
		if (exec_env[i] && !env_has(envp, exec_env_keep[i]))
			v[k++] = exec_env[i];
	for (i = 0; i < n; i++)
		v[k++] = envp[i];
	v[k] = NULL;
	return v;
}

/* ---- exec under attach ---- */

/* Set by the exec intercept, consumed once the slow path has let go of
 * ag_lock (enter_slow): ask the coordinator to follow this exec. */
static __thread int exec_handoff __attribute__((tls_model("initial-exec")));

/* Started by propel_agent_start (attach), not by the environment (record,
 * where the exec'd image loads the agent through LD_PRELOAD). */
static int exec_attach_mode(void)
{
	const char *d = exec_env[1] ? exec_env[1] + strlen("PROPEL_SESSION_DIR=")
				    : NULL;

	return !d || strcmp(d, ag_cfg.dir) != 0;
}

/* 1 if the program an exec of file would run is set-user/group-ID: it is
 * left alone, since running it under ptrace would drop its privileges. */
static int exec_setid(const char *file, int search)
{
	char buf[4096];
	const char *p, *end;
	struct stat st;

	if (!file || !*file)
		return 0;
	if (!search || strchr(file, '/'))
		return stat(file, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
	p = getenv("PATH");
	for (p = p ? p : "/bin:/usr/bin";; p = end + 1) {
		end = strchrnul(p, ':');
		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(end - p), p,
			 end > p ? "/" : "", file);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return (st.st_mode & (S_ISUID | S_ISGID)) != 0;
		if (!*end)
			return 0;
	}
}

/*
 * Under attach, just before an exec: ask the coordinator (engine/run.c,
 * inject/tracer.c) to follow this thread into the new image.  The request
 * is an empty file <pid>.<tid>.exec in the session directory; the
 * coordinator seizes the thread with PTRACE_O_TRACEEXEC and removes the
 * file (or removes it because it cannot), then injects the agent again
 * when the new image reaches main.  We wait for the file to go at most
 * PROPEL_EXEC_HANDOFF_MS, less if the lease sees the coordinator end or
 * the session's end begins (PROPEL_STOPPING_FILE): without an answer the
 * exec is late, never lost, its new image untraced and a W line says so;
 * the execs of the next PROPEL_EXEC_HANDOFF_MS * 5 do not ask (a stuck
 * coordinator would stall a program that execs often).  No malloc, no
 * lock: a vfork child runs this too.
 */
static volatile uint64_t exec_quiet_until; /* ag_mono_ns: no asking before */

static void exec_handoff_wait(void)
{
	struct timespec nap = { 0, 50 * 1000 };
	char path[700], stop[700];
	uint64_t end;
	int fd;

	snprintf(stop, sizeof(stop), "%s/" PROPEL_STOPPING_FILE, ag_cfg.dir);
	if (ag_coord_gone || ag_mono_ns() < exec_quiet_until ||
	    access(stop, F_OK) == 0)
		return;
	snprintf(path, sizeof(path), "%s/%d.%d.exec", ag_cfg.dir,
		 (int)syscall(SYS_getpid), (int)ag_gettid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	end = ag_mono_ns() + PROPEL_EXEC_HANDOFF_MS * 1000ull * 1000;
	while (access(path, F_OK) == 0) {
		if (ag_coord_gone || access(stop, F_OK) == 0) {
			unlink(path);
			return; /* nobody will answer */
		}
		if (ag_mono_ns() > end) {
			unlink(path);
			exec_quiet_until = ag_mono_ns() +
					   PROPEL_EXEC_HANDOFF_MS * 5000000ull;
			ag_warn("exec of process %d not followed: the coordinator "
				"did not answer in %d ms; its new image is "
				"untraced", (int)syscall(SYS_getpid),
				PROPEL_EXEC_HANDOFF_MS);
			return;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 1000 * 1000)
			nap.tv_nsec *= 2;
	}
}

/* The process whose exec a traced call handed off (its own pid): libc's
 * execve inside it must not ask again.  Shared with a vfork child. */
static pid_t exec_handed;

static void exec_handoff_now(void)
{
	exec_handed = (pid_t)syscall(SYS_getpid);
	exec_handoff_wait();
}

/*
 * libc's own execve, hooked at its entry (callback.c cb_hook_start),
 * reached from code the agent does not trace: posix_spawn's child (and
 * so system()'s and popen's), which runs libc's __execve on the parent's
 * memory after clone(CLONE_VM|CLONE_VFORK).  Under attach it asks the
 * coordinator to follow the exec as a traced exec call does; under record
 * the new image loads the agent through the environment it inherits.
 */
void exec_foreign(const struct ag_fregs *r)
{
	if (!ag_active || !exec_attach_mode() ||
	    exec_handed == (pid_t)syscall(SYS_getpid) ||
	    exec_setid((const char *)r->rdi, 0))
		return;
	exec_handoff_now();
}

/* ---- exit ---- */

static pid_t exit_noted; /* the process image whose exit is recorded */

/*
 * Record a clean exit of this process image once: PROCESS_EXIT in the
 * calling thread's ring, then the E line.  Reached from the exit/_exit
 * intercept, from main's return (ag_call_main), and from exit_hook, which
 * libc runs for every exit() whatever code called it (a stripped main, a
 * library, Python's Py_Exit), so that a clean exit is never mistaken for a
 * kill.  t is NULL or the caller's thread, marked busy.
 */
static int in_vfork_child(void);

static void exit_note(struct athread *t, int status)
{
	pid_t me = (pid_t)syscall(SYS_getpid);

	if (!ag_active || exit_noted == me || in_vfork_child())
		return; /* a vfork child's exit is not ours */
	exit_noted = me;
	if (t && t->ring && t->gen == ag_gen)
		rec_put(t, PROPEL_REC_PROCESS_EXIT, (uint32_t)status, 0);
	map_line("E %d", status);
}

static void exit_hook(int status, void *arg)
{
	struct athread *t = ag_self;

	(void)arg;
	if (t && t->busy)
		return; /* exit() from inside the agent: nothing to trust */
	if (t)
		t->busy = 1;
	exit_note(t, status);
	if (t)
		t->busy = 0;
}

/* Loading the agent (LD_PRELOAD, or dlopen from a hijacked thread with the
 * other threads running) registers exit_hook, which does nothing while the
 * agent is inactive (the library is never unloaded), and saves the
 * environment an exec hands on (exec_env_save). */
__attribute__((constructor)) static void exit_hook_install(void)
{
	on_exit(exit_hook, NULL);
	exec_env_save();
}

/* ---- vfork ---- */

/*
 * vfork shares the parent's memory with the child until the child execs
 * or exits, and the parent's thread stays suspended meanwhile.  The child
 * runs with the parent's TLS, so ag_self would be the parent's thread:
 * its ring, its shadow stack.  ag_vfork (below) points ag_self at
 * vfork_thread instead just before the system call, and the parent puts
 * its own back when it resumes (vfork_leave); nothing crosses the system
 * call on the stack, which the child reuses (glibc's vfork does the same:
 * the return address travels in a register).
 *
 * vfork_thread has the current generation and no ring: the hot path
 * records into nothing (rec_put finds no ring) and keeps a shadow stack
 * no one reads.  The slow path does nothing for it but the exec and exit
 * intercepts (enter_slow): the exec'd image gets the agent through the
 * environment under record, as for fork; the exit is not the parent's.
 * Code is not patched from the child (its pid is not the one the agent
 * knows).  Two threads vforking at once share vfork_thread: harmless, it
 * holds nothing.  The parent records FORK with PROPEL_FORK_VFORK.
 */
#define SLOW_STR2(x) #x
#define SLOW_STR(x) SLOW_STR2(x)

static struct athread vfork_thread;
static __thread pid_t vfork_child __attribute__((tls_model("initial-exec")));

struct athread *vfork_enter(void);
long vfork_leave(struct athread *t, long r);

__attribute__((used)) struct athread *vfork_enter(void)
{
	struct athread *t = ag_self;

	vfork_thread.gen = ag_gen;
	vfork_thread.depth = 0;
	vfork_thread.busy = 0;
	vfork_thread.dead = 0;
	vfork_thread.ring = NULL;
	vfork_thread.cur = vfork_thread.end = NULL;
	vfork_thread.tid = -1;
	ag_self = &vfork_thread;
	return t;
}

/* In the parent, resumed: r is the raw system call's result. */
__attribute__((used)) long vfork_leave(struct athread *t, long r)
{
	ag_self = t;
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	vfork_child = (pid_t)r;
	return r;
}

static int in_vfork_child(void)
{
	return ag_self == &vfork_thread;
}

/* long ag_vfork(void): vfork(2) for the agent's intercept.  rdx holds the
 * return address across the call, r8 the parent's thread. */
__asm__(".text\n"
	"	.p2align 4\n"
	"	.type	ag_vfork, @function\n"
	"ag_vfork:\n"
	"	sub	$8, %rsp\n"
	"	call	vfork_enter\n"
	"	add	$8, %rsp\n"
	"	mov	%rax, %r8\n"
	"	pop	%rdx\n"
	"	mov	$" SLOW_STR(SYS_vfork) ", %eax\n"
	"	syscall\n"
	"	push	%rdx\n"
	"	test	%rax, %rax\n"
	"	jz	1f\n" /* the child: straight back, as vfork_thread */
	"	push	%rax\n"
	"	mov	%r8, %rdi\n"
	"	mov	%rax, %rsi\n"
	"	call	vfork_leave\n"
	"	add	$8, %rsp\n"
	"1:	ret\n"
	"	.size	ag_vfork, .-ag_vfork\n");
long ag_vfork(void);

/*
 * clone(fn, stack, CLONE_VM | CLONE_VFORK, arg, ...) made by the program
 * itself (posix_spawn's is libc's own, untraced): as vfork, the child runs
 * on the parent's memory and thread pointer while the parent waits, so it
 * runs as vfork_thread (records nothing; an exec in it is handed on) and
 * the parent gets its own back when clone returns.
 */
struct clone_vm {
	int (*fn)(void *);
	void *arg;
};

static int clone_vm_start(void *p)
{
	struct clone_vm *c = p;

	vfork_enter();
	return c->fn(c->arg);
}

static long ag_clone_vm(int (*fn)(void *), void *stack, int flags, void *arg,
			void *ptid, void *tls, void *ctid)
{
	struct clone_vm c = { fn, arg }; /* the parent waits: it lives on */
	struct athread *t = ag_self;
	long r = clone(clone_vm_start, stack, flags, &c, ptid, tls, ctid);

	ag_self = t;
	if (r > 0)
		vfork_child = (pid_t)r;
	return r;
}

static int clone_is_vfork(const struct ag_frame *fr)
{
	return fr->rdi && (fr->rdx & CLONE_VM) && (fr->rdx & CLONE_VFORK) &&
	       !(fr->rdx & (CLONE_THREAD | CLONE_SETTLS));
}

/* ---- the slow path proper ---- */

/*
 * A seccomp filter (sshd's privilege-separated child, browsers, systemd
 * services) kills or refuses the syscalls the agent makes to patch code and
 * open rings.  Just before one is installed, the agent switches itself off
 * in that process, restoring every byte while it still may.
 */
static int sandbox_entering(uint32_t kind, const struct ag_frame *fr)
{
	if (kind == IC_PRCTL)
		return fr->rdi == PR_SET_SECCOMP;
	if (kind == IC_SECCOMP)
		return fr->rdi == SECCOMP_SET_MODE_STRICT ||
		       fr->rdi == SECCOMP_SET_MODE_FILTER;
	/* syscall(SYS_seccomp, op, ...) or syscall(SYS_prctl, opt, ...) */
	return (fr->rdi == SYS_seccomp &&
		(fr->rsi == SECCOMP_SET_MODE_STRICT ||
		 fr->rsi == SECCOMP_SET_MODE_FILTER)) ||
	       (fr->rdi == SYS_prctl && fr->rsi == PR_SET_SECCOMP);
}

int intercept_enter(struct athread *t, struct ag_frame *fr, struct ag_func *f)
{
	switch (f->intercept) {
	case IC_PTHREAD_CREATE: {
		struct start_ctx *c = malloc(sizeof(*c));

		if (!c)
			break;
		c->fn = (void *(*)(void *))fr->rdx;
		c->arg = (void *)fr->rcx;
		c->parent = t ? t->tid : ag_gettid();
		c->f = func_get(fr->rdx);
		func_resolve(c->f);
		if (c->f->flags & F_NOTRACE)
			c->f = NULL;
		fr->rdx = (uint64_t)thread_start;
		fr->rcx = (uint64_t)c;
		break;
	}
	case IC_SIGACTION:
		fr->target = (uint64_t)emul_sigaction;
		break;
	case IC_SIGNAL:
		fr->target = (uint64_t)emul_signal;
		break;
	case IC_SIGMASK:
		fr->target = (uint64_t)emul_pthread_sigmask;
		break;
	case IC_SIGPROCMASK:
		fr->target = (uint64_t)emul_sigprocmask;
		break;
	case IC_VFORK:
		if (in_vfork_child())
			break; /* vfork from a vfork child: as it is */
		fr->target = (uint64_t)ag_vfork;
		vfork_child = 0;
		return 1; /* exit hook: record the child's pid */
	case IC_CLONE:
		if (in_vfork_child() || !clone_is_vfork(fr))
			break; /* (a thread, or a copy: not followed here) */
		fr->target = (uint64_t)ag_clone_vm;
		vfork_child = 0;
		return 1; /* exit hook: record the child's pid */
	case IC_FORK:
		vfork_child = 0;
		return 1; /* exit hook: record the child's pid */
	case IC_EXEC:
	case IC_EXECVE:
	case IC_EXECVPE:
		if (t && t->ring)
			rec_put(t, PROPEL_REC_EXEC, 0, 0);
		if (exec_attach_mode()) {
			int search = f->intercept == IC_EXECVPE ||
				     (f->name && (!strcmp(f->name, "execvp") ||
						  !strcmp(f->name, "execlp")));

			exec_handoff = !exec_setid((const char *)fr->rdi, search);
			break;
		}
		if (f->intercept == IC_EXEC) {
			char **v = env_with_agent(environ);

			if (v)
				environ = v;
		} else {
			char **v = env_with_agent((char *const *)fr->rdx);

			if (v)
				fr->rdx = (uint64_t)v;
		}
		break;
	case IC_EXIT:
		exit_note(t, (int)fr->rdi);
		break;
	default:
		if (comm_kind(f->intercept))
			return comm_enter(t, fr, f, (uint64_t)&fr->r11);
		/* a directive's function: its values after its records
		 * (enter_slow: directive_entry, intercept_exit) */
		break;
	case IC_PRCTL:
	case IC_SECCOMP:
	case IC_SYSCALL:
		if (sandbox_entering(f->intercept, fr))
			agent_stop_locked("a seccomp sandbox is about to be "
					  "entered: tracing stops in this "
					  "process (its syscalls would be "
					  "refused there)");
		break;
	}
	return 0;
}

void intercept_exit(struct athread *t, struct ag_func *f, uint64_t *rax)
{
	pid_t child = (pid_t)*rax;

	if (f && comm_kind(f->intercept))
		return; /* comm_exit, before the exit record (hot.c) */
	if (f && dir_kind(f->intercept)) {
		directive_exit(t, f, *rax);
		return;
	}
	if ((int64_t)*rax <= 0)
		return;
	rec_put(t, PROPEL_REC_FORK, (uint32_t)child,
		child == vfork_child ? PROPEL_FORK_VFORK : 0);
	vfork_child = 0;
}

/*
 * A communication call (comm.c) of a thread and callee already set up,
 * from the hot path (hot.c: comm_hot, without xsave) or here: no global
 * lock (no signal mask to set: no syscall of our own on the way to a
 * send, a recv, or a read of a file).  1 if it was handled here.
 */
int comm_fast(struct ag_frame *fr, int tail)
{
	struct athread *t = ag_self;
	struct ag_site *site = fr->site;
	struct ag_func *f;
	uint64_t slot = (uint64_t)&fr->r11 + (tail ? 8 : 0);
	int hook;

	if (!ag_active || !t || t->gen != ag_gen || t->dead || !t->ring ||
	    t->busy || in_vfork_child())
		return 0;
	f = site->target ? site->target : func_find(fr->target);
	if (!f || !comm_kind(f->intercept) ||
	    (f->flags & (F_READY | F_NOTRACE)) != F_READY)
		return 0;
	t->busy = 1;
	if (tail) {
		int pushed;

		tail_enter(t, f, site, slot);
		pushed = t->depth && t->shadow[t->depth - 1].slot == slot &&
			 t->shadow[t->depth - 1].func == f->id;
		hook = comm_enter(t, fr, f, slot);
		if (hook && pushed)
			t->shadow[t->depth - 1].site |= SH_HOOK;
		else if (hook)
			comm_pend_drop(t, t->ncomm - 1); /* no exit for it */
	} else {
		shadow_unwind(t, slot);
		rec_put(t, PROPEL_REC_ENTRY, f->id, site->id);
		hook = comm_enter(t, fr, f, slot);
		shadow_push(t, slot, f->id, site->id | (hook ? SH_HOOK : 0) | sh_exact(f));
	}
	t->busy = 0;
	return 1;
}

/* A tail call into a directive's function (directive.c): its value after
 * the entry tail_enter recorded, its frame hooked for rax as comm_fast
 * hooks a send's. */
static void directive_tail(struct athread *t, struct ag_func *f,
			   struct ag_frame *fr)
{
	uint64_t slot = (uint64_t)&fr->r11 + 8;
	struct shadow *s;

	if (!t->depth)
		return;
	s = &t->shadow[t->depth - 1];
	if (s->slot == slot && s->func == f->id && directive_entry(t, f, fr))
		s->site |= SH_HOOK;
}

/* A test switch (tests/e2e/harm-escape.sh): PROPEL_TEST_SLOW_HOLD_MS, read
 * by an attach's start, keeps ag_lock that long in the first slow-path
 * entry after it, as a thread preempted there on a loaded machine would
 * (every signal is blocked: the sleep is whole) */
uint32_t slow_test_hold_ms;

static void slow_test_hold(void)
{
	struct timespec ts = { slow_test_hold_ms / 1000,
			       (long)(slow_test_hold_ms % 1000) * 1000000L };

	slow_test_hold_ms = 0;
	nanosleep(&ts, NULL);
}

static void enter_slow(struct ag_frame *fr, int tail)
{
	struct ag_site *site = fr->site;
	struct athread *t;
	struct ag_func *f;
	sigset_t old;
	int hook = 0;

	if (fr->target >= site->olo && fr->target < site->ohi)
		return; /* jmp * back into its own function (hot.c) */
	if (comm_fast(fr, tail))
		return;
	slow_lock(&old);
	if (!ag_active) {
		slow_unlock(&old);
		return;
	}
	if (slow_test_hold_ms)
		slow_test_hold();
	if (in_vfork_child()) {
		/* only the exec intercepts run in a vfork child (the exec'd
		 * image's environment); it instruments and records nothing */
		f = site->target ? site->target : func_find(fr->target);
		if (f && (f->flags & F_SLOW) &&
		    (f->intercept == IC_EXEC || f->intercept == IC_EXECVE ||
		     f->intercept == IC_EXECVPE))
			intercept_enter(NULL, fr, f);
		slow_unlock(&old);
		if (exec_handoff) {
			exec_handoff = 0;
			exec_handoff_now();
		}
		return;
	}
	t = thread_get();
	f = site->target ? site->target : func_get(fr->target);
	func_resolve(f);
	patch_lean_indirect(site, f);
	if (f->flags & (F_SYSTEM | F_PLT | F_FOREIGN))
		cb_sniff(fr);
	if (t)
		t->busy = 1;
	if ((f->flags & F_SLOW) || f->intercept == IC_SYSCALL)
		hook = intercept_enter(t, fr, f);
	if (t)
		t->busy = 0;
	slow_unlock(&old);
	if (exec_handoff) {
		exec_handoff = 0;
		exec_handoff_now();
	}
	if (!t || t->dead || (f->flags & F_NOTRACE))
		return;
	t->busy = 1;
	if (tail) {
		tail_enter(t, f, site, (uint64_t)&fr->r11 + 8);
		if (dir_kind(f->intercept))
			directive_tail(t, f, fr);
	} else {
		uint64_t slot = (uint64_t)&fr->r11;

		shadow_unwind(t, slot);
		rec_put(t, PROPEL_REC_ENTRY, f->id, site->id);
		if (dir_kind(f->intercept))
			hook = directive_entry(t, f, fr);
		shadow_push(t, slot, f->id, site->id | (hook ? SH_HOOK : 0) | sh_exact(f));
		/* a send is dated after its entry record, not before */
		if (hook && comm_kind(f->intercept) && t->ncomm &&
		    t->comm[t->ncomm - 1].slot == slot)
			t->comm[t->ncomm - 1].tsc = propel_rdtsc();
	}
	/* its frame pushed: the frames go with the context (context.c) */
	if (ctx_kind(f->intercept))
		ctx_call(t, f->intercept, fr);
	t->busy = 0;
}

/* The program's frames begin at fr (quiesce.c: the agent's own below are
 * not scanned for threads inside windows) */
void ag_on_enter_slow(struct ag_frame *fr)
{
	uint64_t q = quiesce_enter((uint64_t)fr);

	enter_slow(fr, 0);
	quiesce_leave(q);
}

void ag_on_tail_slow(struct ag_frame *fr)
{
	uint64_t q = quiesce_enter((uint64_t)fr);

	enter_slow(fr, 1);
	quiesce_leave(q);
}

/* main, as a traced call (record: from the __libc_start_main wrapper). */
int ag_call_main(int (*main_fn)(int, char **, char **), int argc, char **argv,
		 char **envp)
{
	struct ag_func *f = func_for_code((uint64_t)main_fn);
	struct athread *t;
	sigset_t old;
	int ret;

	slow_lock(&old);
	t = ag_active ? thread_get() : NULL;
	slow_unlock(&old);
	(void)t;
	ret = (int)traced_call(f, (void *)main_fn, (uint64_t)argc,
			       (uint64_t)argv, (uint64_t)envp);
	t = ag_self;
	if (t && t->ring && !t->busy && t->gen == ag_gen) {
		t->busy = 1;
		exit_note(t, ret);
		t->busy = 0;
	}
	return ret;
}

int slow_init_threads(void)
{
	if (!thread_key_ok && pthread_key_create(&thread_key, thread_key_dtor) == 0)
		thread_key_ok = 1;
	return 0;
}
