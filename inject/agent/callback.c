/*
 * inject/agent/callback.c - functions entered from code the agent does not
 * trace: qsort comparators, atexit handlers, makecontext entry points,
 * event-library handlers.
 *
 * Self-propelled instrumentation follows calls, and a call made inside libc
 * is not one of ours.  But a callback has to be handed to that code first,
 * and the handing-over is a call the agent does see: a traced call into a
 * system library with a code address of a traced module among its argument
 * registers.  The hot path (cb_args_unseen) sends such a call to the slow
 * path once per address; cb_sniff() then hooks every argument that starts a
 * function of a traced module (or, looked at by the slow path only, a GCC
 * nested function's trampoline to one: cb_tramp_target): its call sites are instrumented as usual
 * and its entry is patched (patch_entry, patch.c) to run ag_tramp_fentry.
 *
 * At the hooked entry, ag_on_fentry() does nothing when an instrumented
 * call site has just recorded this very call (the shadow stack's top frame
 * has this return slot).  Otherwise the call came from untraced code: it
 * records the entry and swaps the return address for ag_tramp_fret, which
 * records the exit and returns where the caller wanted (ag_on_fret).  The
 * replaced addresses live in the thread's hijack stack, never unwound by
 * guesswork, so a return always finds its address -- also after the agent
 * is switched off.  A frame left by longjmp leaves a stale entry, dropped
 * when a newer frame of the same stack lies above it.
 *
 * Limit: an unwinder (C++ exception, backtrace()) cannot pass a swapped
 * return address; it stops at ag_tramp_fret.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inject/agent/agent.h"
#include "share/agent-abi.h"

/* The traced modules' text ranges, sorted by nothing: a handful. */
#define CB_RANGES 16
static uint64_t cb_rlo[CB_RANGES], cb_rhi[CB_RANGES];
static volatile int cb_nr;

/* A filter before the ranges: one bit per 2 MiB region that holds traced
 * text, hashed into 64K bits.  Most pointers (heap, stack) miss it. */
static uint64_t cb_bits[1024];

static inline int cb_in_text(uint64_t a)
{
	uint64_t r = (a >> 21) & 0xffff;
	int n;

	if (!((cb_bits[r >> 6] >> (r & 63)) & 1))
		return 0;
	n = cb_nr;

	for (int i = 0; i < n; i++)
		if (a >= cb_rlo[i] && a < cb_rhi[i])
			return 1;
	return 0;
}

#define SEEN_BITS 14
static uint64_t seen[1 << SEEN_BITS]; /* 0 = empty; insert under ag_lock */

static inline unsigned seen_hash(uint64_t a)
{
	return (unsigned)((a * 0x9E3779B97F4A7C15ull) >> (64 - SEEN_BITS));
}

static int seen_has(uint64_t a)
{
	unsigned h = seen_hash(a);

	for (unsigned i = 0; i < 16; i++) {
		uint64_t v = __atomic_load_n(&seen[(h + i) & ((1 << SEEN_BITS) - 1)],
					     __ATOMIC_ACQUIRE);

		if (v == a)
			return 1;
		if (!v)
			return 0;
	}
	return 1; /* a full neighbourhood: stop asking */
}

static void seen_add(uint64_t a)
{
	unsigned h = seen_hash(a);

	for (unsigned i = 0; i < 16; i++) {
		uint64_t *p = &seen[(h + i) & ((1 << SEEN_BITS) - 1)];

		if (*p == a)
			return;
		if (!*p) {
			__atomic_store_n(p, a, __ATOMIC_RELEASE);
			return;
		}
	}
}

/* Switched off: the next session looks at every argument again. */
void cb_reset(void)
{
	memset(seen, 0, sizeof(seen));
}

/* After module_scan (ag_lock held, or before tracing starts).  Ranges are
 * only added: a reader sees a prefix of the array, all of it valid. */
void cb_range_update(void)
{
	for (struct ag_module *m = ag_modules; m; m = m->next) {
		int i, n = cb_nr;

		if (m->system || m->self || !m->text_hi)
			continue;
		for (i = 0; i < n; i++)
			if (cb_rlo[i] == m->text_lo)
				break;
		if (i < n)
			continue;
		if (n == CB_RANGES) { /* many modules: the last range widens */
			if (m->text_lo < cb_rlo[n - 1])
				cb_rlo[n - 1] = m->text_lo;
			if (m->text_hi > cb_rhi[n - 1])
				cb_rhi[n - 1] = m->text_hi;
		} else {
			cb_rlo[n] = m->text_lo;
			cb_rhi[n] = m->text_hi;
			__atomic_store_n(&cb_nr, n + 1, __ATOMIC_RELEASE);
		}
		for (uint64_t a = m->text_lo >> 21; a <= (m->text_hi - 1) >> 21; a++)
			__atomic_or_fetch(&cb_bits[(a & 0xffff) >> 6],
					  1ull << (a & 63), __ATOMIC_RELEASE);
	}
}

/*
 * Functions of the C library that take no function pointer: a call to one
 * of them cannot hand untraced code a callback, so it takes the hot path's
 * common case (F_NOCB, tramp.S) without its arguments being looked at.
 * They are the leaf calls a server makes most (copies, allocation, the
 * system calls of an event loop).  Sorted, for bsearch.
 */
static const char *const cb_none[] = {
	"__errno_location", "__memcpy_chk", "__memmove_chk", "__memset_chk",
	"__snprintf_chk", "__sprintf_chk", "__stpcpy_chk", "__strcat_chk",
	"__strcpy_chk", "__strncpy_chk", "__vsnprintf_chk", "accept",
	"accept4", "aligned_alloc", "bind", "calloc", "clock_gettime",
	"close", "connect", "dup", "dup2", "dup3", "epoll_ctl", "epoll_pwait",
	"epoll_wait", "fcntl", "fcntl64", "free", "fstat", "fstat64",
	"fstatat", "fstatat64", "getpeername", "getpid", "getsockname",
	"getsockopt", "gettimeofday", "gmtime_r", "ioctl", "listen",
	"localtime_r", "lseek", "lseek64", "lstat", "malloc",
	"malloc_usable_size", "memalign", "memchr", "memcmp", "memcpy",
	"memmove", "mempcpy", "memrchr", "memset", "open", "open64", "openat",
	"openat64", "poll", "posix_memalign", "ppoll", "pread", "pread64",
	"preadv", "pthread_cond_broadcast", "pthread_cond_signal",
	"pthread_getspecific", "pthread_mutex_lock", "pthread_mutex_trylock",
	"pthread_mutex_unlock", "pthread_self", "pthread_setspecific",
	"pthread_spin_lock", "pthread_spin_unlock", "pwrite", "pwrite64",
	"pwritev", "rawmemchr", "read", "readv", "realloc", "recv",
	"recvfrom", "recvmsg", "sched_yield", "select", "send", "sendfile",
	"sendfile64", "sendmsg", "sendto", "setsockopt", "shutdown",
	"snprintf", "socket", "sprintf", "stat", "stat64", "stpcpy",
	"strcasecmp", "strcat", "strchr", "strcmp", "strcpy", "strcspn",
	"strdup", "strerror", "strftime", "strlen", "strncasecmp", "strncat",
	"strncmp", "strncpy", "strndup", "strnlen", "strpbrk", "strrchr",
	"strspn", "strstr", "strtod", "strtol", "strtoll", "strtoul",
	"strtoull", "time", "vsnprintf", "write", "writev",
};

static int cb_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cb_takes_none(const char *name)
{
	return name && bsearch(&name, cb_none, sizeof(cb_none) / sizeof(*cb_none),
			       sizeof(*cb_none), cb_name_cmp);
}

/*
 * The ones of them that never wait (no system call that blocks): copies,
 * strings, formatting, allocation, clocks read in the vDSO.  A call to
 * one is dated by the thread's sampled stamp like a traced call; a call
 * to any other untraced function is dated exactly, entry and exit, since
 * it may block for any time (hot.c sh_exact).  Sorted, for bsearch.
 */
static const char *const cb_nowait[] = {
	"__errno_location", "__memcpy_chk", "__memmove_chk", "__memset_chk",
	"__snprintf_chk", "__sprintf_chk", "__stpcpy_chk", "__strcat_chk",
	"__strcpy_chk", "__strncpy_chk", "__vsnprintf_chk", "aligned_alloc",
	"calloc", "clock_gettime", "free", "getpid", "gettimeofday",
	"gmtime_r", "malloc", "malloc_usable_size", "memalign", "memchr",
	"memcmp", "memcpy", "memmove", "mempcpy", "memrchr", "memset",
	"posix_memalign", "pthread_getspecific", "pthread_self",
	"pthread_setspecific", "rawmemchr", "realloc", "snprintf", "sprintf",
	"stpcpy", "strcasecmp", "strcat", "strchr", "strcmp", "strcpy",
	"strcspn", "strdup", "strerror", "strlen", "strncasecmp", "strncat",
	"strncmp", "strncpy", "strndup", "strnlen", "strpbrk", "strrchr",
	"strspn", "strstr", "strtod", "strtol", "strtoll", "strtoul",
	"strtoull", "time", "vsnprintf",
};

int cb_pure(const char *name)
{
	return name && cb_takes_none(name) &&
	       bsearch(&name, cb_nowait, sizeof(cb_nowait) / sizeof(*cb_nowait),
		       sizeof(*cb_nowait), cb_name_cmp);
}

/*
 * A GCC nested function that uses its parent's variables is handed over
 * as the address of a trampoline the parent built in its own frame
 * (gcc's x86-64 layout: movabs $fn, %r11; movabs $chain, %r10;
 * jmp *%r11).  An argument a little above the call's frame fr (the
 * caller's frame, or its callers') that holds one is taken for its
 * function: 0, or that function.  Slow path only (cb_sniff: the first
 * call through a site is always slow): the bytes are read with
 * process_vm_readv, so an address that only looks like one of the stack
 * faults nobody.
 */
static uint64_t cb_tramp_target(const struct ag_frame *fr, uint64_t a)
{
	uint8_t p[24];
	struct iovec l = { p, sizeof(p) }, r = { (void *)a, sizeof(p) };
	uint64_t lo = (uint64_t)fr, fn;
	int saved = errno;
	long n;

	if (a < lo || a - lo > (1ull << 20))
		return 0;
	n = syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0);
	errno = saved;
	if (n != (long)sizeof(p) || p[0] != 0x49 || p[1] != 0xbb ||
	    p[10] != 0x49 || p[11] != 0xba || p[20] != 0x49 || p[21] != 0xff ||
	    p[22] != 0xe3)
		return 0;
	memcpy(&fn, p + 2, sizeof(fn));
	return cb_in_text(fn) ? fn : 0;
}

/* A call site whose arguments in its caller's frame were looked at, in
 * the seen set: a key no code address is (the upper half). */
#define CB_SITE_KEY(site) (~(uint64_t)(uintptr_t)(site))

/* Hot path, on a call into untraced code: any argument not looked at? */
int cb_args_unseen(const struct ag_frame *fr)
{
	const uint64_t a[6] = { fr->rdi, fr->rsi, fr->rdx, fr->rcx, fr->r8, fr->r9 };

	const struct athread *t = ag_self;
	uint64_t lo = (uint64_t)&fr->r11 + 8, top;

	for (int i = 0; i < 6; i++)
		if (cb_in_text(a[i]) && !seen_has(a[i]))
			return 1;
	/* an address in the caller's own frame (between this call's return
	 * slot and the caller's): perhaps a nested function's trampoline,
	 * read by the slow path (cb_tramp_target), once per call site */
	if (!t || !t->depth || seen_has(CB_SITE_KEY(fr->site)))
		return 0;
	top = t->shadow[t->depth - 1].slot;
	if (top <= lo || top - lo > (64u << 10))
		return 0;
	for (int i = 0; i < 6; i++)
		if (a[i] >= lo && a[i] + 24 <= top)
			return 1;
	return 0;
}

/* Slow path (ag_lock held): hook the functions handed over. */
void cb_sniff(const struct ag_frame *fr)
{
	const uint64_t a[6] = { fr->rdi, fr->rsi, fr->rdx, fr->rcx, fr->r8, fr->r9 };

	for (int i = 0; i < 6; i++) {
		uint64_t c = cb_in_text(a[i]) ? a[i] : cb_tramp_target(fr, a[i]);
		struct ag_module *m;
		const struct ag_sym *s;
		struct ag_func *f;

		if (!c || seen_has(c))
			continue;
		seen_add(c);
		m = module_of(c);
		if (!m || m->system || m->self)
			continue;
		s = module_sym_at(m, c);
		if (!s || s->frag)
			continue;
		f = func_get(c);
		func_resolve(f);
		patch_entry(f);
	}
	seen_add(CB_SITE_KEY(fr->site));
}

/*
 * What untraced code enters, hooked at the start (agent.c, ag_lock held):
 *
 * Constructors and destructors (.preinit_array, .init_array, .fini_array
 * of every traced module: C++ static initialisation, GCC's constructor and
 * destructor attributes) are called by the loader and libc, untraced, and
 * handed over by no call the agent sees.  Under record the agent starts
 * before the program's .init_array runs (the __libc_start_main wrapper),
 * so each constructor is a call at depth 0 before main; under attach and
 * record alike the destructors after main returned are.
 *
 * libc's execve: posix_spawn, system() and popen run it in a child that
 * shares the parent's memory, inside libc (slow.c exec_foreign).
 */
static void hook_initfini(struct ag_module *m)
{
	uint64_t fn[64];
	int n = module_initfini(m, fn, 64);

	for (int i = 0; i < n; i++) {
		const struct ag_sym *s = module_sym_at(m, fn[i]);
		struct ag_func *f;

		if (!s || s->frag)
			continue;
		f = func_get(fn[i]);
		func_resolve(f);
		patch_entry(f);
	}
}

void cb_hook_start(void)
{
	for (struct ag_module *m = ag_modules; m; m = m->next) {
		const char *b = m->path ? strrchr(m->path, '/') : NULL;

		if (m->self)
			continue;
		if (!m->system)
			hook_initfini(m);
		else if (b && !strncmp(b, "/libc.so", 8))
			comm_hook_export(m, "execve", IC_EXECVE);
	}
}

/*
 * A system library's function hooked for its communication (comm.c
 * comm_hook_libc): called from untraced code -- stdio, libcurl, libssl --
 * it is recorded as a call with its send/recv event.  0: leave it.  A call
 * made inside another communication call (__read_chk calling read) is
 * that call's, and a read or write of a plain file is no event (hot.c).
 */
static int fentry_comm(struct athread **tp, struct ag_func *f, uint64_t slot,
		       const struct ag_fregs *r)
{
	uint64_t ra = *(const uint64_t *)slot;
	struct athread *t = *tp;

	if (!comm_kind(f->intercept) ||
	    (ra >= comm_self_lo && ra < comm_self_hi))
		return 0; /* the agent's own call */
	/* a thread that has made no traced call yet (one a library
	 * started, a thread pool's worker): its ring now */
	if (ag_active && (!t || (t->gen != ag_gen && !t->busy)) &&
	    !comm_plain(f->intercept, r->rdi))
		*tp = t = thread_get_hooked();
	if (!ag_active || !t || t->gen != ag_gen || t->dead || t->busy ||
	    !t->ring || comm_plain(f->intercept, r->rdi)) {
		if (!t || !t->busy)
			comm_hook_untraced(f->intercept, r);
		return 0;
	}
	if (t->ncomm && t->comm[t->ncomm - 1].slot > slot)
		return 0;
	return 1;
}

static void on_fentry(struct ag_site *hook, uint64_t slot, struct ag_fregs *r);

/* The program's frames begin at r (see ag_on_enter_slow) */
void ag_on_fentry(struct ag_site *hook, uint64_t slot, struct ag_fregs *r)
{
	uint64_t q = quiesce_enter((uint64_t)r);

	on_fentry(hook, slot, r);
	quiesce_leave(q);
}

static void on_fentry(struct ag_site *hook, uint64_t slot, struct ag_fregs *r)
{
	struct athread *t = ag_self;
	struct ag_func *f = hook->owner;
	uint32_t n;
	int sys = f->mod && f->mod->system;

	if (sys && f->intercept == IC_EXECVE) {
		exec_foreign(r); /* posix_spawn's child: no record */
		return;
	}
	/* a thread that has made no traced call yet (a constructor's,
	 * before main; one a library started): its ring now */
	if (!sys && ag_active && (!t || (t->gen != ag_gen && !t->busy)))
		t = thread_get_hooked();
	if (sys ? !fentry_comm(&t, f, slot, r)
		: (!ag_active || !t || t->gen != ag_gen || t->dead || t->busy ||
		   !t->ring))
		return;
	if (t->depth && t->shadow[t->depth - 1].slot == slot)
		return; /* a traced call site has recorded it */
	t->busy = 1;
	if (sys && !comm_hook_wants(f->intercept, r)) {
		t->busy = 0;
		return;
	}
	/* entries of frames now gone from this stack: dead */
	n = t->nhijack;
	while (n && t->hijack[n - 1].slot <= slot &&
	       slot - t->hijack[n - 1].slot < (64ull << 20))
		n--;
	t->nhijack = n;
	if (n < HIJACK_MAX && t->depth < SHADOW_MAX) {
		shadow_unwind(t, slot);
		rec_put(t, PROPEL_REC_ENTRY, f->id, PROPEL_SITE_NONE);
		if (sys) {
			struct ag_frame fr = {
				.r10 = r->r10, .r9 = r->r9, .r8 = r->r8,
				.rcx = r->rcx, .rdx = r->rdx, .rsi = r->rsi,
				.rdi = r->rdi, .rax = r->rax,
				.target = f->addr, /* (no site: not replaceable) */
			};

			comm_enter(t, &fr, f, slot);
		}
		shadow_push(t, slot, f->id, PROPEL_SITE_NONE);
		t->hijack[n].slot = slot;
		t->hijack[n].ra = *(uint64_t *)slot;
		__asm__ volatile("" ::: "memory");
		t->nhijack = n + 1;
		*(uint64_t *)slot = (uint64_t)ag_tramp_fret;
	}
	t->busy = 0;
}

/*
 * A thread stopped at a function's first instruction when the agent
 * starts -- the coordinator follows an exec to the new image's main and
 * injects there (inject/tracer.c) --: that call is recorded as a hooked
 * entry records one, its entry now and its exit when it returns (the
 * return slot at sp goes through ag_tramp_fret), so that what it calls or
 * tail-calls is under it.  The calling thread's own only (the agent's
 * start runs on it); ag_lock held, every other thread stopped.
 */
void cb_adopt_entry(const struct propel_thread_hint *h)
{
	struct ag_module *m = module_of(h->pc);
	const struct ag_sym *s =
		m && !m->system && !m->self ? module_sym_at(m, h->pc) : NULL;
	uint64_t slot = h->sp, ra;
	struct athread *t;
	struct ag_func *f;
	uint32_t n;

	if (!s || s->frag || h->tid != (uint64_t)ag_gettid() ||
	    (slot & 15) != 8)
		return;
	ra = *(const uint64_t *)slot;
	if (!module_of(ra) || !looks_like_return_address(ra))
		return;
	f = func_get(h->pc);
	if (f->flags & F_NOTRACE)
		return;
	t = thread_get();
	if (!t || !t->ring || t->depth || (n = t->nhijack) >= HIJACK_MAX)
		return;
	rec_put(t, PROPEL_REC_ENTRY, f->id, PROPEL_SITE_NONE);
	shadow_push(t, slot, f->id, PROPEL_SITE_NONE);
	t->hijack[n].slot = slot;
	t->hijack[n].ra = ra;
	t->nhijack = n + 1;
	*(uint64_t *)slot = (uint64_t)ag_tramp_fret;
}

/*
 * ---- calls in flight at injection ----
 *
 * A thread stopped inside a read or write when the agent is injected (a
 * thread-per-connection server blocked in recv before its client sends,
 * a writer blocked on a full pipe) made the call before any hook and
 * returns from it after: its bytes would be no event.  The wrapper's
 * return slot (its CFA - 8, from the loaded .eh_frame_hdr) is swapped to
 * ag_tramp_fret as a hooked entry's is.
 * The thread may have no athread yet, so the replaced address is kept
 * here by slot and tid; a slot stays swapped (and kept) after a stop.
 * At the return the call is recorded with the offset learned then
 * (comm_adopted).
 */
#define ADOPT_MAX 64
static struct adopt {
	uint64_t slot; /* 0: free */
	uint64_t ra;
	int32_t tid;
	uint32_t kind;
	struct ag_func *f;
	uint64_t a[6];
} adopted[ADOPT_MAX];

/* Called with every other thread stopped, under ag_lock. */
void ag_adopt(const struct propel_thread_hint *h, uint64_t hi)
{
	struct ag_module *m = module_of(h->pc), *wm;
	const struct ag_sym *sy = m ? module_sym(m, h->pc) : NULL;
	uint32_t kind;
	uint64_t slot, w;
	int64_t cfa;
	int i;

	comm_stopped_in(h->sys, h->sys_arg);
	if (!sy || sy->frag || m->self || h->sys < 0 ||
	    (kind = comm_adoptable(h->sys, h->sys_arg)) == IC_NONE)
		return;
	for (i = 0; i < ADOPT_MAX && adopted[i].slot; i++)
		;
	/* full: give back the entries of threads gone without returning
	 * (cancelled, or exited from a signal handler) */
	for (int j = 0; i == ADOPT_MAX && j < ADOPT_MAX; j++) {
		char path[48];

		snprintf(path, sizeof(path), "/proc/self/task/%d",
			 (int)adopted[j].tid);
		if (access(path, F_OK) != 0) {
			adopted[j].slot = 0;
			i = j;
		}
	}
	/* the return slot from the call-frame information: a guess could
	 * take a stale word of the frame for it, and write over data */
	if (i == ADOPT_MAX || ehframe_cfa_sp(m, h->pc, &cfa) < 0 || cfa < 8 ||
	    cfa > 4096)
		return;
	slot = h->sp + (uint64_t)cfa - 8;
	if (slot & 7 || slot + 8 > hi)
		return;
	w = *(const uint64_t *)slot;
	wm = module_of(w);
	if (!wm || wm->self || w < wm->text_lo + 8 || w >= wm->text_hi ||
	    !looks_like_return_address(w))
		return; /* (and a slot swapped already: ag_tramp_fret) */
	adopted[i].ra = w;
	adopted[i].tid = (int32_t)h->tid;
	adopted[i].kind = kind;
	adopted[i].f = func_get(sy->addr);
	memcpy(adopted[i].a, h->sys_arg, sizeof(adopted[i].a));
	__atomic_store_n(&adopted[i].slot, slot, __ATOMIC_RELEASE);
	*(uint64_t *)slot = (uint64_t)ag_tramp_fret;
}

uint64_t ag_adopted_ra(uint64_t slot)
{
	int i;

	for (i = ADOPT_MAX; i-- > 0;)
		if (__atomic_load_n(&adopted[i].slot, __ATOMIC_ACQUIRE) == slot)
			return adopted[i].ra;
	return 0;
}

/* An adopted call returned through slot: where to really go. */
static uint64_t adopt_return(uint64_t slot, uint64_t *rax)
{
	int tid = (int)ag_gettid(), saved = errno, i;
	struct athread *t = ag_self;
	struct adopt c;

	for (i = ADOPT_MAX; i-- > 0;)
		if (__atomic_load_n(&adopted[i].slot, __ATOMIC_ACQUIRE) == slot &&
		    adopted[i].tid == tid)
			break;
	if (i < 0)
		return 0; /* never: ag_tramp_fret is in no other slot */
	c = adopted[i];
	__atomic_store_n(&adopted[i].slot, 0, __ATOMIC_RELEASE);
	if (ag_active && (!t || (t->gen != ag_gen && !t->busy)))
		t = thread_get_hooked();
	if (ag_active && t && t->gen == ag_gen && !t->dead && !t->busy &&
	    t->ring) {
		t->busy = 1;
		rec_put(t, PROPEL_REC_ENTRY, c.f->id, PROPEL_SITE_NONE);
		comm_adopted(t, c.kind, c.a, rax);
		rec_put(t, PROPEL_REC_EXIT, c.f->id, PROPEL_SITE_NONE);
		t->busy = 0;
	}
	errno = saved;
	return c.ra;
}

/* The hooked function returned (rsp was slot + 8): where to really go. */
uint64_t ag_on_fret(uint64_t slot, uint64_t *rax)
{
	struct athread *t = ag_self;
	uint64_t ra = 0;
	uint32_t n = t ? t->nhijack : 0;
	int was_busy;

	while (n) {
		n--;
		if (t->hijack[n].slot == slot) {
			ra = t->hijack[n].ra;
			t->nhijack = n; /* and any stale entries above it */
			break;
		}
	}
	if (!ra)
		return adopt_return(slot, rax);
	was_busy = t->busy;
	t->busy = 1;
	if (!was_busy) {
		shadow_unwind(t, slot - 1);
		/* a send/recv is dated inside its call (hot.c ag_on_exit) */
		if (t->ncomm && t->comm[t->ncomm - 1].slot == slot &&
		    t->ring && t->gen == ag_gen && ag_active && !t->dead)
			comm_exit(t, slot, rax);
		while (t->depth && t->shadow[t->depth - 1].slot == slot) {
			struct shadow *s = &t->shadow[--t->depth];

			if (t->ring && t->gen == ag_gen && ag_active && !t->dead)
				rec_put(t, PROPEL_REC_EXIT, s->func,
					s->site & SH_SITE);
		}
		/* a makecontext function's end: on to its uc_link */
		ctx_end(t, slot);
	}
	t->busy = was_busy;
	return ra;
}
