/*
 * inject/agent/agent.h - internal declarations of the agent (not installed,
 * not seen by anything outside inject/agent/).
 *
 * The agent is self-propelled instrumentation (Mirgorodskiy & Miller): it
 * patches *call sites*, not function entries.  Instrumenting a function F
 * (patch_function) means decoding F with capstone and redirecting every call
 * and tail-call instruction in F to a per-site stub.  When a stub runs, the
 * agent records an entry event, makes sure the callee is instrumented (so
 * control never reaches uninstrumented code of the traced modules through an
 * instrumented site), calls the callee, records the exit and jumps back to
 * the instruction after the original call.  Cost grows with the code that
 * runs, not with the size of the program.
 *
 *   caller F:  call T        ==>   jmp stub_S           (same length)
 *   stub_S:    push r11 ; r11 = T ; push r11 ; r11 = site
 *              call *tramp_enter ; r11 = [rsp+8] ; rsp += 16
 *              call T  (or call *-16(%rsp))   <- callee returns here
 *              call *tramp_exit ; jmp R ; int3 ; .quad site
 *
 * The return address a callee sees is inside its stub, which carries a
 * registered DWARF FDE (patch.c) saying "the caller resumes at R with
 * rsp = CFA": C++ exceptions, backtrace() and _Unwind_* walk through stubs.
 *
 * Per-thread state (struct athread) is reached through one initial-exec TLS
 * pointer.  The hot path (hot.c, built -mgeneral-regs-only so it never
 * touches vector registers that may hold arguments or return values) takes
 * no lock, makes no syscall and allocates nothing: an rdtsc and a 16-byte
 * store into the thread's ring.  Everything else is the slow path (slow.c),
 * entered with the full register file saved (xsave) and the global lock
 * held with signals blocked.
 */
#ifndef PROPEL_AGENT_AGENT_H
#define PROPEL_AGENT_AGENT_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

#include "share/agent-abi.h"
#include "share/record.h"
#include "share/ring.h"

#define AG_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- modules and symbols (module.c) ---- */

struct ag_sym {
	uint64_t addr; /* run-time address */
	uint64_t size;
	const char *name; /* "" when only .eh_frame knows the function */
	int32_t cold;     /* index of "<name>.cold" part, or -1 */
	uint32_t frag;    /* a fragment (a .cold part): entered by jumps only */
};

/* One .eh_frame FDE, at run-time addresses. */
struct ag_fde {
	uint64_t lo, hi;
	uint64_t lsda; /* language-specific data (landing pads), or 0 */
	uint32_t frag; /* its CFA is not a function entry's: a .cold part */
};

struct ag_reloc {
	uint64_t got; /* run-time address of the GOT slot */
	const char *name;
};

struct ag_module {
	struct ag_module *next;
	int id;
	char *path;
	uint64_t bias;
	uint64_t text_lo, text_hi; /* executable range */
	uint64_t rd_lo[8], rd_hi[8]; /* its readable mappings */
	int nrd;
	int system;                /* a system library: not instrumented inside */
	int self;                  /* the agent itself */
	struct ag_sym *syms;       /* sorted by addr */
	size_t nsyms;
	struct ag_reloc *relocs; /* sorted by got */
	size_t nrelocs;
	struct ag_fde *fdes; /* sorted by lo */
	size_t nfdes;
	uint64_t plt_lo[3], plt_hi[3]; /* .plt, .plt.sec, .plt.got */
	void *file;
	size_t file_size;
	/* the executable segment as in the file: code before any patch,
	 * read into file at its offsets on first use, X_CHUNK at a time
	 * (x_have: a bit per chunk), from the file it was loaded from
	 * (x_dev, x_ino, x_mtime: the same one still) */
	uint64_t x_vaddr, x_off, x_size;
	uint8_t *x_have;
	uint64_t x_dev, x_ino;
	int64_t x_mtime;
	/* stub arena near the module's text (patch.c) */
	uint8_t *arena, *arena_cur, *arena_end;
	uint8_t *lean_rt; /* the current arena's lean routines (stub.c) */
};

int module_scan(void); /* (re)scan loaded objects; new ones are added */
struct ag_module *module_of(uint64_t addr);
const struct ag_sym *module_sym(struct ag_module *m, uint64_t addr);
const struct ag_sym *module_sym_at(struct ag_module *m, uint64_t addr);
int module_in_plt(struct ag_module *m, uint64_t addr);
int module_readable(struct ag_module *m, uint64_t addr, uint64_t n);

/* ---- call-frame information (ehframe.c) ---- */

/* Read the FDEs of .eh_frame (sec: its bytes, at file address vaddr). */
void ehframe_load(struct ag_module *m, const uint8_t *sec, size_t size,
		  uint64_t vaddr);
const struct ag_fde *ehframe_find(struct ag_module *m, uint64_t addr);
/* Landing pads of an FDE's LSDA (C++ catch/cleanup entry points), read
 * from memory: up to max written to out; returns how many, -1 if
 * unreadable. */
int ehframe_landing_pads(struct ag_module *m, const struct ag_fde *fde,
			 uint64_t *out, int max);
/* The CFA at pc is rsp + *off (0), from the loaded .eh_frame_hdr; -1 if
 * not known. */
int ehframe_cfa_sp(struct ag_module *m, uint64_t pc, int64_t *off);
/* Original bytes of [addr, addr+n) from the file, or NULL. */
const uint8_t *module_code(struct ag_module *m, uint64_t addr, uint64_t n);
uint64_t module_export(struct ag_module *m, const char *name); /* or 0 */
int module_initfini(struct ag_module *m, uint64_t *out, int max);
const char *module_got_name(struct ag_module *m, uint64_t got);
extern struct ag_module *ag_modules;

/* ---- functions and call sites ---- */

/* a shadow entry's site word (struct shadow) */
#define SH_HOOK 0x80000000u  /* its exit does intercept/comm work (C) */
#define SH_EXACT 0x40000000u /* its exit stamped exactly (C): a call into
			      * untraced code that may block (F_PURE) */
#define SH_SITE 0x3fffffffu

enum {
	F_READY = 1,      /* its call sites are patched (or it needs none) */
	F_PLT = 2,        /* a PLT entry; name is the import */
	F_SYSTEM = 4,     /* in a system library: traced as a leaf */
	F_SLOW = 8,       /* every call takes the slow path (interposed) */
	F_FOREIGN = 16,   /* outside every known module */
	F_RESOLVED = 32,  /* PLT: destination instrumented if ours */
	F_NOTRACE = 64,   /* never record (the agent itself) */
	F_HOOKED = 128,   /* its entry was looked at for a hook (callback.c) */
	F_NOCB = 256,     /* PLT or system, takes no function pointer */
	F_PURE = 512,     /* F_NOCB and never blocks: sampled time (hot.c) */
	F_BUDGETED = 1024, /* the budget's static rule looked at it (budget.c) */
	F_UNTRACED = 2048, /* left untraced by the budget: its direct call
			    * sites are not patched (budget.c) */
	F_BOUNDCHK = 4096, /* the budget looked for a loop in it (budget.c) */
	F_BOUNDED = 8192,  /* ... and found none: its time is bounded */
	F_QUIET = 16384,   /* untraced by the budget's dynamic rule: its
			    * indirect calls record nothing (tramp.S) */
};

enum ag_intercept {
	IC_NONE,
	IC_PTHREAD_CREATE,
	IC_SIGACTION,
	IC_SIGNAL,
	IC_SIGMASK,
	IC_SIGPROCMASK,
	IC_FORK,
	IC_VFORK,
	IC_CLONE, /* clone(CLONE_VM | CLONE_VFORK): as vfork (slow.c) */
	IC_EXEC,
	IC_EXECVE,
	IC_EXECVPE,
	IC_EXIT,
	IC_PRCTL,
	IC_SECCOMP,
	IC_SYSCALL,
	IC_SWAPCONTEXT, /* context.c: the frames go with the context */
	IC_SETCONTEXT,
	IC_MAKECONTEXT,
	IC_GETCONTEXT,
	/* communication (comm.c): every kind from IC_COMM_FIRST on */
	IC_COMM_FIRST,
	IC_SEND = IC_COMM_FIRST, /* send(fd, buf, len, flags) */
	IC_SENDTO,   /* sendto(fd, buf, len, flags, addr, alen) */
	IC_SENDMSG,  /* sendmsg(fd, msg, flags) */
	IC_SENDMMSG, /* sendmmsg(fd, vec, vlen, flags) */
	IC_WRITE,    /* write(fd, buf, len) */
	IC_WRITEV,   /* writev(fd, iov, cnt) */
	IC_RECV,     /* recv(fd, buf, len, flags) */
	IC_RECVFROM, /* recvfrom(fd, buf, len, flags, addr, alenp) */
	IC_RECVMSG,  /* recvmsg(fd, msg, flags) */
	IC_RECVMMSG, /* recvmmsg(fd, vec, vlen, flags, timeout) */
	IC_READ,     /* read(fd, buf, len) */
	IC_READV,    /* readv(fd, iov, cnt) */
	IC_READ_CHK, /* __read_chk(fd, buf, len, buflen) */
	IC_RECV_CHK, /* __recv_chk(fd, buf, len, buflen, flags) */
	IC_RECVFROM_CHK, /* __recvfrom_chk(fd, buf, len, buflen, flags, addr, alenp) */
	IC_SENDFILE, /* sendfile(out, in, offp, count): a send on out */
	IC_SPLICE,   /* splice(in, offin, out, offout, len, fl): recv + send */
	IC_CONNECT,  /* the socket's peer changes */
	IC_CLOSE,    /* the number is free */
	IC_DUP2,     /* dup2/dup3(old, new): new names another file */
	IC_FDRET,    /* returns a new descriptor (socket, accept, open, dup..) */
	IC_FDPAIR,   /* pipe/pipe2(fds[2]) */
	IC_SOCKETPAIR, /* socketpair(d, t, p, sv[2]) */
	IC_COMM_LAST = IC_SOCKETPAIR,
	/* a function a mapping directive names (directive.c): the kind
	 * holds what to record, IC_DIR_FIRST + (argument + 1 | 8 for rax
	 * | 16 for the six argument registers: --args) */
	IC_DIR_FIRST,
	IC_DIR_LAST = IC_DIR_FIRST + 31,
};

struct ag_func {
	struct ag_func *hnext;
	uint64_t addr;
	uint32_t id;
	volatile uint32_t flags;
	uint32_t intercept;
	uint32_t retries; /* patch attempts that met a thread in a window */
	struct ag_module *mod;
	const char *name;
	struct ag_site *callers; /* direct call sites (cnext): made lean */
};

enum site_kind {
	SITE_CALL,     /* call (direct or indirect) */
	SITE_TAIL,     /* jmp/jcc leaving the function: a tail call */
	SITE_ENTRY,    /* a function's entry (a callback: callback.c) */
};

struct ag_site {
	/* what every call through the site reads first, in one cache line
	 * (sites are allocated 64-byte aligned: site_alloc) */
	struct ag_func *target; /* direct: the callee; NULL: indirect */
	struct ag_func *cache; /* indirect: the callee last reached (hot.c) */
	uint32_t id;
	/* an indirect site's lean way: 0 not tried yet (the trampolines ask
	 * the slow path, which tries: patch_lean_indirect), 1 on, 2 not */
	uint8_t lean_state;
	uint64_t olo, ohi; /* jmp *: the owner's body (a jump there is no call) */
	/* a callee the trampolines took before: id << 48 | address, 0 none
	 * (tramp.S FAST_CALLEE; cleared when the patches are undone) */
	uint64_t fast;
	struct ag_site *hnext;
	struct ag_site *wnext;  /* in the table of patch addresses */
	struct ag_site *next_all;
	uint64_t addr; /* address of the original instruction */
	uint64_t ret;  /* address after it */
	uint64_t at;   /* where the patch starts: addr, or a window's start */
	struct ag_func *owner;
	uint8_t kind;
	uint8_t len;   /* of the original instruction */
	uint8_t plen;  /* of the patched bytes (a window: several insns) */
	uint8_t trap;  /* patched with int3 (too short, no window) */
	uint8_t patched;
	uint8_t orig[24];
	uint8_t new_bytes[24];
	uint8_t *stub;
	/* a direct call's lean way (stub.c stub_lean, tramp.S ag_lean_rt):
	 * its stub starts with a jump to the generic code, turned to the lean
	 * code while the callee is known plain; NULL when the site has none */
	uint8_t *lean;
	int32_t *lean_jmp;      /* that jump's displacement (4-aligned) */
	uint64_t *lean_lit;     /* indirect: the callee it takes */
	uint8_t *lean_ids;      /* its func | site << 32 immediate */
	struct ag_site *cnext;  /* the callee's next direct caller */
	/* an indirect site's callees, as the fast word, by (address >> 4) & 7:
	 * a site that dispatches to a few (an event loop, a phase engine, a
	 * vtable call) finds each in one line (tramp.S FAST_CALLEE) */
	uint64_t pic[8] __attribute__((aligned(64)));
};

/* A call into untraced code that may block is dated exactly (its exit in
 * C), every other call record by the thread's sampled stamp (hot.c). */
static inline uint32_t sh_exact(const struct ag_func *f)
{
	return (f->flags & (F_SYSTEM | F_PLT)) && !(f->flags & F_PURE) ? SH_EXACT
								       : 0;
}

struct ag_func *func_get(uint64_t addr);  /* create if new (slow path) */
struct ag_func *func_find(uint64_t addr); /* lock-free lookup */
struct ag_site *site_find(uint64_t addr); /* lock-free lookup */

/* ---- patching (patch.c) ---- */

int patch_init(void);
int patch_function(struct ag_func *f);   /* instrument f's call sites */
/* f is ready (F_READY): its direct callers take their lean way */
void patch_ready(struct ag_func *f);
/* undo every patch; with held, only while held() says the other threads
 * are held (checked before each batch): *cut = 1 when it stopped early */
int patch_restore_all(int (*held)(void), int *cut);
int patch_trap(ucontext_t *uc);          /* SIGTRAP at one of our int3s */
int patch_entry(struct ag_func *f);      /* hook f's entry (callback.c) */
/* f's direct call sites back to their original bytes (budget.c, ag_lock
 * held): how many */
int patch_untrace(struct ag_func *f);
int patch_entry_system(struct ag_func *f); /* a system library's (comm.c) */
/* an indirect site (or jump) that reached f: its lean way, if f may take
 * it (ag_lock held) */
void patch_lean_indirect(struct ag_site *s, struct ag_func *f);
extern struct ag_site *ag_sites_all;     /* every site, newest first */
extern int ag_no_traps;                  /* no int3 sites (attach) */
extern uint32_t ag_skipped;              /* sites left alone */

/* ---- no thread inside replaced bytes (quiesce.c) ---- */

struct quiesce_win {
	uint64_t lo, hi; /* a pc in (lo, hi) is inside */
};

/* bad[i] = 1 for each window some thread is inside (all, on error). */
int quiesce_check(const struct quiesce_win *w, int n, uint8_t *bad);
int quiesce_alone(void); /* the calling thread is the only one */
int quiesce_self(const struct quiesce_win *w, int n, uint8_t *bad);
/* The calling thread entered the agent at frame floor (the program's
 * frames are there and above): its own scans skip the agent's frames
 * below.  Returns what to give quiesce_leave. */
uint64_t quiesce_enter(uint64_t floor);
void quiesce_leave(uint64_t old);
/* SIGTRAP: 1 if it is quiesce_check's question (answered here). */
int quiesce_signal(const siginfo_t *si, const ucontext_t *uc);

/* ---- threads and rings ---- */

#define SHADOW_MAX 8192

struct shadow {
	uint64_t slot; /* address of the return-address slot; 0 = pseudo */
	uint32_t func;
	uint32_t site; /* the site's id | SH_* (agent.h, above) */
};

#define HIJACK_MAX 256

/* A return address the agent replaced (callback.c): the caller's is kept
 * here while the callee runs and returns through ag_tramp_fret. */
struct hijack {
	uint64_t slot, ra;
};

struct comm_ctr; /* inject/agent/comm-int.h */

struct athread {
	struct propel_rec *cur, *end;
	volatile int busy;        /* inside the agent: nested events pass */
	uint32_t gen;             /* agent generation the ring belongs to */
	int dead;
	pid_t tid;
	uint32_t depth;           /* shadow entries in use */
	struct propel_ring_hdr *ring;
	/* sampled time (PROPEL_START_SAMPLED): the w0 of the thread's last
	 * stamped record (tsc << 4); the call records before the next stamp
	 * carry it, and ingest dates them between the two stamps */
	uint64_t stamp;
	int32_t stamp_left; /* call records until the next rdtsc */
	uint16_t stamp_every; /* now (adapts: tramp.S STAMP_NOW) */
	uint16_t stamp_most;  /* 1: every record stamped (--timing=exact) */
	size_t ring_size;
	uint64_t lost;
	uint64_t dropped;         /* records dropped since the drain fell behind */
	uint32_t drop_depth;      /* depth when it did */
	struct athread *next;     /* all threads, for stop */
	int unmap_pending;
	uint32_t nhijack;
	/* the shadow stack's first entries share the page of the fields
	 * above, which every traced call reads */
	struct shadow shadow[SHADOW_MAX] __attribute__((aligned(64)));
	struct hijack hijack[HIJACK_MAX];
	/* communication calls in progress (comm.c), innermost last */
	uint32_t ncomm;
	struct comm_pend {
		uint64_t slot;   /* its shadow entry's return slot */
		uint64_t tsc;    /* when it was entered */
		uint64_t held;   /* TSC when its propagation request began
				  * holding it (propagate.c), 0 not held */
		uint64_t a[6];   /* its arguments */
		uint64_t stk;    /* the 7th (on the stack), or 0 */
		int64_t off;     /* stream offset learned at entry, or -1 */
		uint32_t kind;   /* enum ag_intercept */
		int32_t fd;
		uint8_t ct;      /* enum comm_type at entry */
		uint8_t ct2;     /* splice: the out descriptor's, fd2 */
		int32_t fd2;
		/* pipes and UNIX streams: the positions whose busy count
		 * this call holds, [0] read and [1] written (comm_join) */
		struct comm_ctr *inflight[2];
		uint8_t subst;   /* addr: the agent asked for the source */
		uint32_t addr_len; /* recvfrom: the address the agent asked for */
		uint8_t addr[128]; /* (the program passed none: comm_enter) */
	} comm[4];
	/* a ring retired by another thread (ring_retire): its addresses,
	 * now private pages, which this thread gives back itself */
	void *stale;
	size_t stale_size;
	/* sub-buffers of the ring whose pages exist (ring_populate, hot.c),
	 * and records to drop before asking again after a refusal */
	uint32_t ring_pop;
	uint32_t pop_skip;
	uint64_t budget_seen; /* its ring's commits the budget sampled */
};

extern __thread struct athread *ag_self
	__attribute__((tls_model("initial-exec")));

/* hot.c */
void rec_put(struct athread *t, unsigned type, uint32_t a, uint32_t b);
void ring_pair(uint64_t *tsc, uint64_t *ns); /* a calibration pair, tight */
long ag_rawsys(long nr, long a, long b, long c, long d); /* -errno */
void rec_put64(struct athread *t, uint64_t v);
void shadow_push(struct athread *t, uint64_t slot, uint32_t func,
		 uint32_t site);
void shadow_unwind(struct athread *t, uint64_t below);
void tail_enter(struct athread *t, struct ag_func *f, struct ag_site *site,
		uint64_t ra_slot);

/* The frame tramp_enter builds (tramp.S): saved registers, then the
 * return address into the stub and the callee's address. */
/* the registers tramp_fentry saved (SAVE_RESULTS), lowest address first */
struct ag_fregs {
	uint64_t r11, r10, r9, r8, rdi, rsi, rcx, rdx, rax;
};

struct ag_frame {
	uint64_t r10, r9, r8, rcx, rdx, rsi, rdi, rax;
	struct ag_site *site;
	uint64_t rbp;
	uint64_t stub_ret;
	uint64_t target; /* at S-16: the callee, replaceable */
	uint64_t r11;    /* at S-8: the caller's r11; the return slot */
};

int ag_on_enter(struct ag_frame *fr);
int ag_on_tail(struct ag_frame *fr);
void ag_on_exit(struct ag_site *site, uint64_t sp, uint64_t *rax);
void ag_leaf_exit_slow(uint64_t ids, struct athread *t);
void ag_on_enter_slow(struct ag_frame *fr);
void ag_on_tail_slow(struct ag_frame *fr);

/* slow.c */
struct athread *thread_get(void);       /* create the ring if needed */
struct athread *thread_get_hooked(void); /* the same at a hooked entry */
void ring_close(struct athread *t);     /* the calling thread's own */
void ring_retire(struct athread *t);    /* another's, perhaps running */
void ring_release_stale(struct athread *t);
void thread_exit_hook(void);
int intercept_enter(struct athread *t, struct ag_frame *fr, struct ag_func *f);
void intercept_exit(struct athread *t, struct ag_func *f, uint64_t *rax);
int signals_install(void);
void signals_uninstall(void);
void signals_trap_check(void);
void func_resolve(struct ag_func *f); /* instrument a callee first */
void slow_lock(sigset_t *old);
int slow_lock_bounded(unsigned ms); /* 0, -EDEADLK (this thread's), -ETIMEDOUT */
extern uint32_t slow_test_hold_ms;
uint32_t intercept_kind(const char *name);
const char *intercept_at(size_t i, uint32_t *kind); /* NULL past the last */
extern struct ag_func **ag_funcs_by_id;
void slow_unlock(sigset_t *old);
void exec_foreign(const struct ag_fregs *r); /* libc's execve, hooked */

/* agent.c */
struct ag_config {
	char dir[512];
	uint32_t ring_kb; /* 0: the default for the ring's mode (ring_open) */
	uint32_t flags;
};
extern struct ag_config ag_cfg;
extern volatile int ag_active;
/* switched itself off with its code left patched: every stub passes
 * through, nothing is recorded, the byte-exact restore waits for a stop or
 * start with the threads held (agent.c "states") */
extern volatile int ag_inert;
/* agent_stop_locked is closing the rings: each is marked
 * PROPEL_RING_F_STOPPED (ring_close, ring_retire) */
extern volatile int ag_stopping;
extern volatile uint32_t ag_gen;
extern volatile uint32_t ag_live;
extern uint64_t ag_nonce;
extern pthread_mutex_t ag_lock;
extern struct athread *ag_threads;
extern uint32_t ag_nfuncs, ag_nsites;
extern uint64_t ag_xsave_mask;
extern uint32_t ag_xsave_size;
extern int32_t ag_stamp_every; /* 1, or PROPEL_STAMP_EVERY (sampled time) */

void map_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void map_batch_begin(void); /* lines are buffered until the matching end */
void map_batch_end(void);
void map_flush(void);
void map_func(const struct ag_func *f); /* its F line */
void map_site(const struct ag_site *s); /* its S line */
void ag_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *ag_alloc(size_t n); /* zeroed, never freed, no malloc */

/*
 * A file descriptor of the agent's own.  The program may close it under us
 * (closefrom() after an exec, daemons closing everything) and get its
 * number back for a socket of its own: the agent must then neither write
 * into it nor close it.  ag_fd_get() checks the descriptor still names
 * the file it opened (device and inode) and opens it again if not.
 */
struct ag_fd {
	int fd;
	uint64_t dev, ino;
};
int ag_fd_get(struct ag_fd *f, const char *path, int flags); /* fd or -1 */
void ag_fd_close(struct ag_fd *f);
int ag_fsize_ok(int fd, uint64_t n); /* within RLIMIT_FSIZE (no SIGXFSZ) */
char *ag_strdup(const char *s);
/* elements begin with the uint64_t key cmp orders by first; no malloc */
void ag_sort(void *base, size_t n, size_t size,
	     int (*cmp)(const void *, const void *));
void ag_fork_child(void);
int agent_stop_locked(const char *why); /* ag_lock held; a W line if why */
/* ag_lock held, other threads running: stop recording, code left patched */
void agent_inert_locked(const char *why);
uint64_t ag_mono_ns(void);
extern volatile pid_t ag_lease_tid; /* the lease thread (agent.c), or 0 */
/* 1 from the moment the lease thread saw the coordinator end (its pidfd
 * readable) until a new lease: nobody will answer a propagation request */
extern volatile int ag_coord_gone;
/* hot.c: a full drained ring waits for the drain (record's; agent.c's
 * __libc_start_main sets it: share/agent-abi.h PROPEL_DRAIN_WAIT_MS) */
extern int ag_wait_drain;
pid_t ag_gettid(void);

/* comm.c: communication events (send/recv and their kin) */
#define COMM_FD_MAX 65536
enum comm_type {
	CT_UNKNOWN = 0, /* not looked at since it was (re)opened */
	CT_OTHER,       /* a file, a tty...: no events, no slow path */
	CT_TCP,
	CT_UDP,
	CT_USTREAM, /* AF_UNIX SOCK_STREAM */
	CT_UDGRAM,  /* AF_UNIX SOCK_DGRAM / SOCK_SEQPACKET */
	CT_PIPE,
};
extern uint8_t *comm_fdtype; /* by fd; NULL until comm_start */
/* Hot: a read/write-family call on a descriptor known to carry no
 * communication (no slow path, no event). */
static inline int comm_plain(uint32_t kind, uint64_t fd)
{
	return (kind == IC_READ || kind == IC_WRITE || kind == IC_READV ||
		kind == IC_WRITEV || kind == IC_READ_CHK) &&
	       fd < COMM_FD_MAX && comm_fdtype && comm_fdtype[fd] == CT_OTHER;
}
static inline int dir_kind(uint32_t kind)
{
	return kind >= IC_DIR_FIRST && kind <= IC_DIR_LAST;
}
/* directive.c: the values mapping directives name (share/agent-abi.h) */
void directive_load(const char *dir); /* at start: PROPEL_VALUES_FILE */
void directive_classify(struct ag_func *f); /* a new function, by name */
unsigned directive_map_flags(const struct ag_func *f); /* F line: 4, 8, 16 */
/* after f's ENTRY record: ARG(the argument); 1 if rax is wanted at exit */
int directive_entry(struct athread *t, const struct ag_func *f,
		    const struct ag_frame *fr);
void directive_exit(struct athread *t, const struct ag_func *f, uint64_t rax);
static inline int comm_kind(uint32_t kind)
{
	return kind >= IC_COMM_FIRST && kind <= IC_COMM_LAST;
}
void comm_start(int late);  /* a new session: forget every descriptor;
			     * late: injected into a running process */
int comm_enter(struct athread *t, struct ag_frame *fr, struct ag_func *f,
	       uint64_t slot);  /* 1: call comm_exit at its return */
void comm_exit(struct athread *t, uint64_t slot, uint64_t *rax);
/* At injection: a thread was stopped inside system call sys (or -1). */
void comm_stopped_in(int64_t sys, const uint64_t *arg);
/* At injection, a thread inside system call sys: the kind to record it
 * as at its return, or IC_NONE; at that return, its event. */
uint32_t comm_adoptable(int64_t sys, const uint64_t *arg);
void comm_adopted(struct athread *t, uint32_t kind, const uint64_t *arg,
		  uint64_t *rax);
/* w, in a module's text, follows a call instruction */
int looks_like_return_address(uint64_t w);
/* At injection: adopt a call the thread of hint h was stopped inside
 * (its stack readable up to hi). */
struct propel_thread_hint;
void ag_adopt(const struct propel_thread_hint *h, uint64_t hi);
/* The return address an adopted call's slot holds for it, or 0. */
uint64_t ag_adopted_ra(uint64_t slot);
/* Drop t's pending calls above the first n (no exit will come for them). */
void comm_pend_drop(struct athread *t, uint32_t n);
int comm_fast(struct ag_frame *fr, int tail); /* slow.c: 1 if handled */
/* hook the entries of the system C library's communication functions
 * (patch_entry_system): calls made inside untraced libraries */
void comm_hook_libc(void);
void comm_hook_export(struct ag_module *m, const char *name, uint32_t kind);
extern uint64_t comm_self_lo, comm_self_hi; /* the agent's own text */
/* at such an entry, a call the agent does not record: keep the
 * descriptor table right (close, dup2) */
void comm_hook_untraced(uint32_t kind, const struct ag_fregs *r);
int comm_hook_wants(uint32_t kind, const struct ag_fregs *r); /* busy */
int comm_own_process(void); /* 0 in a vfork child sharing our memory */
void comm_fork_parent(void);
void comm_fork_child(void); /* after map_replay: the C lines again */
/* propagate.c: ask that the peer of channel chan (its C line numbers in
 * line) be traced, and wait for the answer (bounded) */
/* 1 when it waited for the tracer's answer (the send was held) */
int propagate_ask(uint32_t chan, const char *line);

/* callback.c: functions entered from code the agent does not trace */
int cb_args_unseen(const struct ag_frame *fr); /* hot: worth a look? */
int cb_takes_none(const char *name); /* a libc function with no callback */
int cb_pure(const char *name); /* ... that never blocks (F_PURE) */
void cb_sniff(const struct ag_frame *fr);      /* slow: hook what's new */
void cb_range_update(void);                    /* after module_scan */
void cb_reset(void);
void cb_hook_start(void); /* constructors, destructors, libc's execve */
void cb_adopt_entry(const struct propel_thread_hint *h); /* stopped at one */

/* context.c */
void ctx_call(struct athread *t, uint32_t kind, const struct ag_frame *fr);
void ctx_end(struct athread *t, uint64_t slot);
static inline int ctx_kind(uint32_t kind)
{
	return kind >= IC_SWAPCONTEXT && kind <= IC_GETCONTEXT;
}
void ag_on_fentry(struct ag_site *hook, uint64_t slot, struct ag_fregs *r);
uint64_t ag_on_fret(uint64_t slot, uint64_t *rax);

/* tramp.S */
extern char ag_tramp_enter[], ag_tramp_exit[], ag_tramp_tail[];
extern char ag_tramp_fentry[], ag_tramp_fret[];

#endif
