/*
 * inject/agent/hot.c - the hot path: what runs on every traced call.
 *
 * Built with -mgeneral-regs-only: these functions run between a callee's
 * arguments (or return value) being set up and being used, and only the
 * general registers are saved around them (tramp.S).  No locks, no
 * syscalls (except the rare sub-buffer commit, which calls clock_gettime
 * through a raw syscall, and under record may nap while the drain catches
 * up), no allocation.  Anything else returns non-zero so
 * the trampoline takes the slow path (slow.c) with the full state saved.
 *
 * Shadow stack: per thread, one entry per traced call in progress, holding
 * the address of the call's return-address slot.  Stack addresses of live
 * frames decrease toward the top, so an entry whose slot is at or below a
 * new call's slot belongs to a frame that is gone (longjmp, exception,
 * thread switching stacks): shadow_unwind() closes it with an exit record
 * marked PROPEL_EXIT_UNWOUND.
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "inject/agent/agent.h"
#include "inject/agent/offsets.h"
#include "share/clock.h"

/* what tramp.S's fast paths assume */
_Static_assert(offsetof(struct athread, cur) == AT_CUR, "AT_CUR");
_Static_assert(offsetof(struct athread, end) == AT_END, "AT_END");
_Static_assert(offsetof(struct athread, busy) == AT_BUSY, "AT_BUSY");
_Static_assert(offsetof(struct athread, gen) == AT_GEN, "AT_GEN");
_Static_assert(offsetof(struct athread, dead) == AT_DEAD, "AT_DEAD");
_Static_assert(offsetof(struct athread, depth) == AT_DEPTH, "AT_DEPTH");
_Static_assert(offsetof(struct athread, ring) == AT_RING, "AT_RING");
_Static_assert(offsetof(struct athread, shadow) == AT_SHADOW, "AT_SHADOW");
_Static_assert(offsetof(struct athread, stamp) == AT_STAMP &&
		       offsetof(struct athread, stamp_left) == AT_STAMP_LEFT &&
		       offsetof(struct athread, stamp_every) == AT_STAMP_EVERY &&
		       offsetof(struct athread, stamp_most) == AT_STAMP_EVERY + 2,
	       "AT_STAMP*");
_Static_assert(sizeof(struct shadow) == 16 &&
		       offsetof(struct shadow, func) == 8 &&
		       offsetof(struct shadow, site) == 12,
	       "struct shadow as tramp.S reads it");
_Static_assert(SHADOW_MAX == SHADOW_MAX_ASM, "SHADOW_MAX");
_Static_assert(offsetof(struct ag_site, target) == SITE_TARGET &&
		       offsetof(struct ag_site, cache) == SITE_CACHE &&
		       offsetof(struct ag_site, id) == SITE_ID &&
		       offsetof(struct ag_site, lean_state) == SITE_LEANST &&
		       offsetof(struct ag_site, olo) == SITE_OLO &&
		       offsetof(struct ag_site, ohi) == SITE_OHI &&
		       offsetof(struct ag_site, fast) == SITE_FAST &&
		       offsetof(struct ag_site, pic) == SITE_PIC &&
		       offsetof(struct ag_site, fast) + 8 <= 64,
	       "struct ag_site as tramp.S reads it");
_Static_assert(offsetof(struct ag_func, addr) == FUNC_ADDR &&
		       offsetof(struct ag_func, id) == FUNC_ID &&
		       offsetof(struct ag_func, flags) == FUNC_FLAGS,
	       "struct ag_func as tramp.S reads it");
_Static_assert(F_READY == F_READY_ASM && F_PLT == F_PLT_ASM &&
		       F_SYSTEM == F_SYSTEM_ASM && F_SLOW == F_SLOW_ASM &&
		       F_NOCB == F_NOCB_ASM && F_PURE == F_PURE_ASM &&
		       F_QUIET == F_QUIET_ASM,
	       "flags");
_Static_assert(PROPEL_REC_ENTRY == PROPEL_REC_ENTRY_ASM &&
		       PROPEL_REC_EXIT == PROPEL_REC_EXIT_ASM &&
		       PROPEL_REC_CALL == PROPEL_REC_CALL_ASM,
	       "record types");

#define UNWIND_WINDOW (64ull << 20) /* slots further apart: another stack */

static uint64_t raw_mono_ns(void)
{
	struct timespec ts = { 0, 0 };
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_clock_gettime), "D"((long)CLOCK_MONOTONIC),
			   "S"(&ts)
			 : "rcx", "r11", "memory");
	(void)ret;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A calibration pair (share/ring.h): the clock read between two rdtsc,
 * the tsc taken as their middle.  A preemption or a slow syscall between
 * the reads widens the pair and skews the session's TSC rate (engine/
 * ingest.c takes it from the first and last pairs: 150 us off over a
 * 300 ms session made a 30 ms sleep 29.985 ms), so a wide one is read
 * again, and the narrowest of a few kept.
 */
#define PAIR_TIGHT_TICKS 4096 /* a syscall's width, about 1.5 us */
#define PAIR_TRIES 4

void ring_pair(uint64_t *tsc, uint64_t *ns)
{
	propel_clock_pair(tsc, ns, PAIR_TRIES, PAIR_TIGHT_TICKS, raw_mono_ns);
}

/*
 * On the ring's first lap: make the pages of sub-buffer k before the
 * writer enters it (ring_open made the first, and says why READ).  0, or
 * -1 when the kernel refused (no room in /dev/shm): the records are
 * dropped, as when the drain falls behind, and it asks again after ~4096
 * of them.
 */
static __attribute__((noinline)) int ring_populate(struct athread *t,
						   struct propel_ring_hdr *h,
						   uint64_t k)
{
	if (t->pop_skip) {
		t->pop_skip--;
		return -1;
	}
	if (ag_rawsys(SYS_madvise, (long)propel_ring_sub(h, k),
		      (long)propel_ring_sub_bytes(h), MADV_POPULATE_READ,
		      0) < 0) {
		t->pop_skip = 4096;
		h->flags |= PROPEL_RING_F_NOSPACE;
		return -1;
	}
	t->ring_pop = (uint32_t)k + 1;
	return 0;
}

/* A record that has no room: counted, and where the gap began noted for
 * the LOST record that will close it (ring_advance) */
static void ring_drop(struct athread *t, struct propel_ring_hdr *h)
{
	if (!t->dropped++)
		t->drop_depth = t->depth;
	h->dropped++; /* the total, exact even if no LOST follows */
}

int ag_wait_drain;

/* Under record, the drain has not copied out the sub-buffer the thread
 * would enter: nap (50 us, doubling to 1 ms) until it has, for at most
 * PROPEL_DRAIN_WAIT_MS, or until the lease saw propel end; after a wait
 * that ran out the thread drops as attach does.  1: room now. */
static __attribute__((noinline)) int ring_wait_drain(struct propel_ring_hdr *h,
						     uint64_t next)
{
	struct timespec nap = { 0, 50 * 1000 };
	uint64_t until = raw_mono_ns() + PROPEL_DRAIN_WAIT_MS * 1000000ull;

	while (!ag_coord_gone && raw_mono_ns() < until) {
		ag_rawsys(SYS_nanosleep, (long)&nap, 0, 0, 0);
		if (next - __atomic_load_n(&h->drained, __ATOMIC_ACQUIRE) <
		    h->sub_count)
			return 1;
		if (nap.tv_nsec < 1000 * 1000)
			nap.tv_nsec *= 2;
	}
	ag_wait_drain = 0; /* a drain that stalls that long: drop from now on */
	return 0;
}

/* The current sub-buffer is full: commit it (share/ring.h) and move on;
 * the next one is overwritten as it is, not zeroed first. */
static struct propel_rec *ring_advance(struct athread *t)
{
	struct propel_ring_hdr *h = t->ring;
	uint64_t next, tsc, ns;
	struct propel_rec *r;

	if (!h) {
		t->lost++;
		return NULL;
	}
	next = h->commits + 1;
	/* a drained ring: the drain has not copied the one this would
	 * overwrite -- drop, count; only record waits a while first
	 * (share/ring.h, share/agent-abi.h PROPEL_DRAIN_WAIT_MS) */
	if (h->keep_all &&
	    next - __atomic_load_n(&h->drained, __ATOMIC_ACQUIRE) >=
		    h->sub_count &&
	    !(ag_wait_drain && ring_wait_drain(h, next))) {
		ring_drop(t, h);
		return NULL;
	}
	if (unlikely(next < h->sub_count && next >= t->ring_pop) &&
	    ring_populate(t, h, next) < 0) {
		ring_drop(t, h);
		return NULL;
	}
	r = propel_ring_sub(h, next);
	ring_pair(&tsc, &ns);
	h->tsc_last = tsc;
	h->sub_tsc[next % h->sub_count] = tsc;
	/* records of this sub-buffer are no older than its start (ring.c) */
	t->stamp = tsc << 4;
	h->mono_last_ns = ns;
	__atomic_store_n(&h->commits, next, __ATOMIC_RELEASE);
	t->end = r + h->sub_recs;
	if (t->dropped) { /* where the gap was, how long, how deep */
		r->a = t->dropped > UINT32_MAX ? UINT32_MAX : (uint32_t)t->dropped;
		r->b = (uint32_t)((int32_t)t->depth - (int32_t)t->drop_depth);
		__atomic_store_n(&r->w0, t->stamp | PROPEL_REC_LOST,
				 __ATOMIC_RELEASE);
		t->dropped = 0;
		r++;
	}
	return r;
}

/* A record stamped now (fresh), or dated by the thread's last stamp */
static inline void rec_write(struct athread *t, unsigned type, uint32_t a,
			     uint32_t b, int fresh)
{
	struct propel_rec *r = t->cur;

	if (unlikely(r == t->end)) {
		r = ring_advance(t);
		if (!r)
			return;
	}
	t->cur = r + 1;
	__asm__ volatile("" ::: "memory");
	r->a = a;
	r->b = b;
	if (fresh)
		t->stamp = propel_rdtsc() << 4; /* later records: no older */
	__atomic_store_n(&r->w0, t->stamp | (type & 0xf), __ATOMIC_RELEASE);
}

void rec_put(struct athread *t, unsigned type, uint32_t a, uint32_t b)
{
	rec_write(t, type, a, b, 1);
}

static void rec_put_stamped(struct athread *t, unsigned type, uint32_t a,
			    uint32_t b)
{
	rec_write(t, type, a, b, 0);
}

/* An event's argument: dated as the event before it */
void rec_put64(struct athread *t, uint64_t v)
{
	rec_put_stamped(t, PROPEL_REC_ARG, (uint32_t)v, (uint32_t)(v >> 32));
}

void shadow_push(struct athread *t, uint64_t slot, uint32_t func,
		 uint32_t site)
{
	uint32_t d = t->depth;

	if (unlikely(d >= SHADOW_MAX)) {
		t->lost++;
		return;
	}
	t->depth = d + 1;
	__asm__ volatile("" ::: "memory");
	t->shadow[d].slot = slot;
	t->shadow[d].func = func;
	t->shadow[d].site = site;
}

/* Close every entry whose frame lies at or below `below` (deeper in the
 * stack), i.e. frames that were left without returning. */
void shadow_unwind(struct athread *t, uint64_t below)
{
	while (t->depth > 0) {
		struct shadow *s = &t->shadow[t->depth - 1];

		if (s->slot == 0 || s->slot > below ||
		    below - s->slot > UNWIND_WINDOW)
			break;
		t->depth--;
		if (t->ring && t->gen == ag_gen && ag_active)
			rec_put(t, PROPEL_REC_EXIT, s->func,
				(s->site & SH_SITE) | PROPEL_EXIT_UNWOUND);
	}
}

/* The callee: direct, or the last one this indirect site reached, or
 * looked up (a racy cache: a pointer store is atomic, and checked). */
static inline struct ag_func *site_callee(struct ag_site *site, uint64_t target)
{
	struct ag_func *f = site->target;

	if (f)
		return f;
	f = __atomic_load_n(&site->cache, __ATOMIC_RELAXED);
	if (f && f->addr == target)
		return f;
	f = func_find(target);
	if (f)
		__atomic_store_n(&site->cache, f, __ATOMIC_RELAXED);
	return f;
}

/*
 * What the trampolines share: 0 = record nothing (inactive, or a nested
 * event), 1 = take the slow path, 2 = record, with *fp the callee.
 */
static inline int enter_check(struct athread *t, struct ag_frame *fr,
			      struct ag_func **fp)
{
	struct ag_func *f;

	if (unlikely(!ag_active))
		return 0;
	if (unlikely(!t || t->gen != ag_gen))
		return 1;
	if (unlikely(t->dead || t->busy))
		return 0;
	f = site_callee(fr->site, fr->target);
	if (unlikely(!f || (f->flags & (F_READY | F_SLOW)) != F_READY) &&
	    /* read/write of a file: no event, no slow path (comm.c) */
	    !(f && (f->flags & F_READY) && comm_plain(f->intercept, fr->rdi)))
		return 1;
	/* syscall(SYS_seccomp or SYS_prctl, ...): perhaps a sandbox (slow.c) */
	if (unlikely(f->intercept == IC_SYSCALL) &&
	    (fr->rdi == SYS_seccomp || fr->rdi == SYS_prctl))
		return 1;
	/* into untraced code, perhaps handing it a callback (callback.c) */
	if ((f->flags & (F_SYSTEM | F_PLT)) && !(f->flags & F_NOCB) &&
	    cb_args_unseen(fr))
		return 1;
	*fp = f;
	return 2;
}

/*
 * A send/recv-family call (comm.c) whose callee is set up: comm_fast
 * (slow.c) records it here, without the slow path's xsave.  Its arguments
 * are integers and pointers, so no vector register holds anything live at
 * its entry (all are caller-saved in the ABI): comm.c, built without
 * -mgeneral-regs-only, may use them.  1 if it was handled.
 */
static inline int comm_hot(struct ag_frame *fr, int tail)
{
	struct ag_func *f = site_callee(fr->site, fr->target);

	return f && comm_kind(f->intercept) && comm_fast(fr, tail);
}

/*
 * A call of a function --args or a directive names (directive.c) whose
 * thread and callee are set up: its ENTRY and values recorded here,
 * without the slow path's lock and xsave.  Unlike a send's, its
 * arguments may be in vector registers (a double): only code built
 * -mgeneral-regs-only runs here (this file, directive.c).  Not a system
 * function's (its callbacks are sniffed on the slow path).  1 if it was
 * handled.
 */
static inline int dir_hot(struct athread *t, struct ag_frame *fr, int tail)
{
	struct ag_site *site = fr->site;
	struct ag_func *f = site_callee(site, fr->target);
	uint64_t slot = (uint64_t)&fr->r11 + (tail ? 8 : 0);
	int hook;

	if (!f || !dir_kind(f->intercept) || !t || t->gen != ag_gen ||
	    t->dead || t->busy || !t->ring ||
	    (f->flags & (F_READY | F_NOTRACE | F_SYSTEM | F_PLT | F_FOREIGN)) !=
		    F_READY)
		return 0;
	t->busy = 1;
	if (tail) {
		tail_enter(t, f, site, slot);
		if (t->depth && t->shadow[t->depth - 1].slot == slot &&
		    t->shadow[t->depth - 1].func == f->id &&
		    directive_entry(t, f, fr))
			t->shadow[t->depth - 1].site |= SH_HOOK;
	} else {
		shadow_unwind(t, slot);
		rec_put(t, PROPEL_REC_ENTRY, f->id, site->id);
		hook = directive_entry(t, f, fr);
		shadow_push(t, slot, f->id,
			    site->id | (hook ? SH_HOOK : 0) | sh_exact(f));
	}
	t->busy = 0;
	return 1;
}

int ag_on_enter(struct ag_frame *fr)
{
	struct athread *t = ag_self;
	struct ag_site *site = fr->site;
	struct ag_func *f;
	uint64_t slot;

	int r = enter_check(t, fr, &f);

	if (r == 1 && (comm_hot(fr, 0) || dir_hot(t, fr, 0)))
		return 0;
	if (r != 2)
		return r;
	if (unlikely(!site->lean_state))
		return 1; /* the slow path tries its lean way */
	t->busy = 1;
	slot = (uint64_t)&fr->r11;
	if (t->depth)
		shadow_unwind(t, slot);
	shadow_push(t, slot, f->id, site->id | sh_exact(f));
	rec_put(t, PROPEL_REC_ENTRY, f->id, site->id);
	t->busy = 0;
	return 0;
}

/*
 * A tail call: the callee takes over the frame at the top of the shadow
 * stack (when its slot is the one this jump leaves in place).  It is shown
 * as a child of the function that jumped, as the source reads and as -O0
 * code runs: a second entry with the same slot, and both close together
 * when that slot's call returns.
 */
void tail_enter(struct athread *t, struct ag_func *f, struct ag_site *site,
		uint64_t ra_slot)
{
	shadow_unwind(t, ra_slot - 8);
	if (t->depth && t->shadow[t->depth - 1].slot == ra_slot) {
		shadow_push(t, ra_slot, f->id, site->id | sh_exact(f));
		rec_put(t, PROPEL_REC_ENTRY, f->id, site->id);
	}
}

int ag_on_tail(struct ag_frame *fr)
{
	struct athread *t = ag_self;
	struct ag_site *site = fr->site;
	struct ag_func *f;

	if (fr->target >= site->olo && fr->target < site->ohi)
		return 0; /* jmp * back into its own function: no call */

	int r = enter_check(t, fr, &f);

	if (r == 1 && (comm_hot(fr, 1) || dir_hot(t, fr, 1)))
		return 0;
	if (r != 2)
		return r;
	if (unlikely(!site->lean_state))
		return 1; /* the slow path tries its lean way */
	t->busy = 1;
	/* the jump happens with rsp at the caller's return-address slot,
	 * just above the two words the stub pushed */
	tail_enter(t, f, site, (uint64_t)&fr->r11 + 8);
	t->busy = 0;
	return 0;
}

void ag_on_exit(struct ag_site *site, uint64_t sp, uint64_t *rax)
{
	struct athread *t = ag_self;
	uint64_t slot = sp - 8;
	int record;

	if (unlikely(!t || t->busy))
		return;
	t->busy = 1;
	record = ag_active && t->gen == ag_gen && !t->dead && t->ring;
	if (t->depth && t->shadow[t->depth - 1].slot != slot)
		shadow_unwind(t, slot - 1);
	/* the call, and any tail calls that took over its frame */
	while (t->depth && t->shadow[t->depth - 1].slot == slot) {
		struct shadow *s = &t->shadow[--t->depth];

		if (record) {
			struct ag_func *f = NULL;

			if (unlikely(s->site & SH_HOOK)) {
				f = s->func < ag_nfuncs ? ag_funcs_by_id[s->func]
							: NULL;
				/* a send/recv is dated inside its call */
				if (f && comm_kind(f->intercept))
					comm_exit(t, s->slot, rax);
			}
			rec_put(t, PROPEL_REC_EXIT, s->func, s->site & SH_SITE);
			/* a directive's or --args' rax: by directive.c, built
			 * as this file is (a double's xmm0 is live here) */
			if (unlikely(s->site & SH_HOOK) && f &&
			    dir_kind(f->intercept))
				directive_exit(t, f, *rax);
			else if (unlikely(s->site & SH_HOOK))
				intercept_exit(t, f, rax);
		}
	}
	t->busy = 0;
}

/* A leaf call's record when its sub-buffer is full (tramp.S leaf_call):
 * ids = func | site << 32, busy set by the caller. */
void ag_leaf_exit_slow(uint64_t ids, struct athread *t)
{
	rec_put_stamped(t, PROPEL_REC_CALL, (uint32_t)ids, (uint32_t)(ids >> 32));
}
