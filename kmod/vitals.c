/*
 * kmod/vitals.c - loader and user side of the vital-sign collector
 * (kernel side: kmod/vitals.bpf.c; shared structs: kmod/vitals.h; API:
 * kmod/vitals-collector.h).
 *
 * vitals_open: open the skeleton -> set rodata (self_tgid, thresholds) ->
 * switch off the programs whose tracepoint this kernel lacks (looked up in
 * the kernel's BTF as btf_trace_<name>, so no version checks and no need for
 * tracefs) or whose perf event cannot be opened (no hardware cache counter
 * in a VM) -> load -> attach each program on its own, so one failure costs
 * one vital.  If BPF is refused (not root, no CAP_BPF, lockdown) the
 * collector runs on the /proc fallback (kmod/vitals-proc.c) and every vital
 * says why it is coarse or off.
 *
 * Syscalls are counted by fentry on x64_sys_call where the kernel has it
 * (no tracepoint: enabling raw_syscalls sets the syscall-work flag on every
 * task, which sends every syscall of the machine down the slow entry path),
 * by tp_btf/sys_enter otherwise.
 *
 * Epochs (vitals_end_epoch_bpf): flip `parity` in the mmap'd .bss so new
 * events go to the other copy, let in-flight programs finish, drain the
 * ring buffer, read the idle copy's per-CPU cells (sketch, totals and the
 * per-process cache) and the per-process rows evicted into `procs`, merge
 * them, and clear both.
 *
 * The threshold t of each vital adapts to what t controls: the cost of
 * sampling (stack walks in the kernel, symbolization and storage here),
 * estimated as this thread's CPU time plus VITALS_SAMPLE_NS per sample.
 * Counting every event costs the same whatever t is, so it does not move
 * t (a machine busy with syscalls must not lose the rare ones, chopstix
 * §5.3).  Above the high watermark (0.5% of the machine; checked at every
 * poll) the exponent k of t = 2^k grows by the factor the cost is over it
 * (at most 4) for the vitals that sample most, which divides their later
 * powers of t by that factor; under the low watermark at an epoch's end t
 * halves (never below 2).  Labels new to the run are sampled whatever t
 * is (coverage).  BPF run-time statistics are read where they
 * are on (kernel.bpf_stats_enabled, or vitals_opts.profile): they cost
 * two clock reads per program run, so the collector does not turn them on
 * by itself.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kmod/vitals-collector.h"
#include "share/clock.h"
#include "share/log.h"
#include "vitals.skel.h"

#define PR_DOMAIN "vitals"

static const char *const vitals_units[VITALS_NR] = {
	"ticks", "overflows", "us",    "us",	    "sectors", "pages",
	"faults", "calls",     "signals", "bytes", "us",
};

const char *vitals_name(int vital)
{
	return propel_vital_name(vital);
}

const char *vitals_unit(int vital)
{
	return vital >= 0 && vital < VITALS_NR ? vitals_units[vital] : "";
}

int vitals_lookup(const char *name)
{
	return propel_vital_lookup(name);
}

static int name_in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	return propel_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t memfree_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

#define VITALS_MAX_PROGS 16
#define VITALS_MAX_CPUS 256

struct vitals {
	const char *source;
	int state[VITALS_NR];
	char why[VITALS_NR][160];
	char notes[512];
	struct vitals_opts o;
	unsigned ncpus;
	uint64_t mono_to_real;
	uint64_t epoch_start_ns; /* realtime */
	uint64_t epoch_start_mono;
	uint32_t seq;
	uint64_t user_ns0;
	/* current sink while polling */
	const struct vitals_sink_ops *ops;
	void *arg;
	struct vitals_proc *proc;
	int wake_fd; /* eventfd: vitals_wake() ends a vitals_poll() early */
	uint64_t nrecv[VITALS_NR]; /* samples read from the ring this epoch */
	uint64_t npow[VITALS_NR];  /* of them at a power of t (not new labels) */
#ifndef VITALS_SKEL_MISSING
	struct vitals_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[VITALS_MAX_PROGS + 2 * VITALS_MAX_CPUS];
	int nlinks;
	int perf_fds[2][VITALS_MAX_CPUS];
	int stats_fd;
	struct {
		struct bpf_program *prog;
		int vital;
		uint64_t run_ns; /* at the last look */
	} progs[VITALS_MAX_PROGS];
	int nprogs;
	uint64_t epoch_run_ns[VITALS_NR]; /* BPF time this epoch */
	uint64_t check_mono, check_user, check_samples;
	int ncpus_possible;
	int epfd; /* the ring's epoll set plus wake_fd */
	size_t cell_size; /* one CPU's value, rounded to 8 */
	void *cellbuf;    /* ncpus_possible values */
	/* the tally's sums at the last epoch's end (struct vitals_tally) */
	uint64_t tally_last[VITALS_NR][3];
	uint64_t epoch_user0; /* thread CPU at the epoch's start */
	const char *sys_hook;
#endif
};

/* the per-CPU values of `tally` are read as an array of them */
_Static_assert(sizeof(struct vitals_tally) % 8 == 0,
	       "a per-CPU value is a multiple of 8 bytes");

static void vitals_off(struct vitals *v, int vital, int state, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));
static void vitals_off(struct vitals *v, int vital, int state, const char *fmt,
		       ...)
{
	va_list ap;

	v->state[vital] = state;
	if (v->why[vital][0])
		return; /* first reason wins */
	va_start(ap, fmt);
	vsnprintf(v->why[vital], sizeof(v->why[vital]), fmt, ap);
	va_end(ap);
}

static void note(struct vitals *v, const char *s)
{
	size_t n = strlen(v->notes);

	snprintf(v->notes + n, sizeof(v->notes) - n, "%s%s", n ? "; " : "", s);
}

/* tracefs is not needed by tp_btf programs, but perf and an operator's
 * tools want it: mount it where it is missing, or say why not. */
static void vitals_tracefs(struct vitals *v)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		note(v, "tracefs was not mounted: mounted it on /sys/kernel/tracing");
		return;
	}
	char buf[200];

	snprintf(buf, sizeof(buf),
		 "tracefs not mounted and mounting it failed (%s); not needed: "
		 "programs attach through BTF",
		 strerror(errno));
	note(v, buf);
}

static int vitals_open_proc(struct vitals *v, const char *why_bpf,
			    char **cause)
{
	const char *why;
	int i, err;

	err = vitals_proc_open(&v->proc, v->o.cpu_hz, cause);
	if (err)
		return err;
	v->source = "proc";
	for (i = 0; i < VITALS_NR; i++) {
		int st = vitals_proc_status(i, &why);

		v->state[i] = st;
		snprintf(v->why[i], sizeof(v->why[i]), "%s%s%s",
			 st == VITALS_OFF ? why : "coarse /proc polling, no samples",
			 why_bpf ? ": BPF unavailable: " : "",
			 why_bpf ? why_bpf : "");
	}
	return 0;
}

#ifndef VITALS_SKEL_MISSING

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (getenv("PROPEL_VITALS_LIBBPF_STDERR"))
		return vfprintf(stderr, fmt, ap);
	if (propel_log_enabled(PR_DOMAIN)) {
		static char buf[65536];

		vsnprintf(buf, sizeof(buf), fmt, ap);
		propel_log(PR_DOMAIN, "libbpf: %s", buf);
	}
	return 0;
}

/* Does this kernel have tracepoint `name`?  Looked up in its BTF. */
static int tp_exists(const struct btf *btf, const char *name)
{
	const char *fake = getenv("PROPEL_VITALS_FAKE_MISSING");
	char tn[128];

	if (fake && name_in_list(fake, name))
		return 0;
	if (!btf)
		return 1; /* cannot tell: let load decide */
	snprintf(tn, sizeof(tn), "btf_trace_%s", name);
	return btf__find_by_name_kind(btf, tn, BTF_KIND_TYPEDEF) >= 0;
}

static int perf_open_cpu(uint32_t type, uint64_t config, uint64_t period,
			 int cpu)
{
	struct perf_event_attr a = { 0 };

	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.sample_period = period;
	a.disabled = 0;
	return syscall(__NR_perf_event_open, &a, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/* Open one sampling event per CPU into fds; -errno if any fails. */
static int perf_open_all(struct vitals *v, int which, uint32_t type,
			 uint64_t config, uint64_t period)
{
	unsigned i;

	for (i = 0; i < v->ncpus; i++) {
		int fd = perf_open_cpu(type, config, period, i);

		if (fd < 0) {
			int err = -errno;

			while (i-- > 0) {
				close(v->perf_fds[which][i]);
				v->perf_fds[which][i] = -1;
			}
			return err;
		}
		v->perf_fds[which][i] = fd;
	}
	return 0;
}

static void add_prog(struct vitals *v, struct bpf_program *p, int vital)
{
	if (v->nprogs < VITALS_MAX_PROGS) {
		v->progs[v->nprogs].prog = p;
		v->progs[v->nprogs].vital = vital;
		v->nprogs++;
	}
}

/* Unpack one ring-buffer record (struct vitals_wire: only the frames
 * taken) into a struct vitals_sample for the sink. */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct vitals *v = ctx;
	const struct vitals_wire *w = data;
	struct vitals_sample s;
	size_t kb, ub;

	if (size < VITALS_WIRE_HEAD)
		return 0;
	memset(&s, 0, sizeof(s));
	memcpy(&s, w, VITALS_WIRE_HEAD); /* the heads are laid out alike */
	kb = w->kstack_bytes > 0 ? (size_t)w->kstack_bytes : 0;
	ub = w->ustack_bytes > 0 ? (size_t)w->ustack_bytes : 0;
	if (kb > sizeof(s.kstack))
		kb = sizeof(s.kstack);
	if (ub > sizeof(s.ustack))
		ub = sizeof(s.ustack);
	if (VITALS_WIRE_HEAD + kb > size)
		kb = size - VITALS_WIRE_HEAD;
	if (VITALS_WIRE_HEAD + kb + ub > size)
		ub = size - VITALS_WIRE_HEAD - kb;
	memcpy(s.kstack, w->stack, kb);
	memcpy(s.ustack, (const char *)w->stack + kb, ub);
	s.ts_ns += v->mono_to_real;
	if (s.vital < VITALS_NR) {
		v->nrecv[s.vital]++;
		if (!(s.tshift & VITALS_TSHIFT_FRESH))
			v->npow[s.vital]++;
	}
	s.tshift &= ~VITALS_TSHIFT_FRESH;
	if (v->ops && v->ops->sample)
		v->ops->sample(v->arg, &s);
	return 0;
}

_Static_assert(offsetof(struct vitals_wire, stack) ==
		       offsetof(struct vitals_sample, kstack),
	       "struct vitals_wire and vitals_sample share their head");

static void vitals_close_bpf(struct vitals *v);

/* Does this kernel let us trace function `name` with fentry?  Its BTF
 * must have it; whether the attach is allowed shows at load and attach. */
static int fentry_exists(const struct btf *btf, const char *name)
{
	const char *fake = getenv("PROPEL_VITALS_FAKE_MISSING");

	if (fake && name_in_list(fake, name))
		return 0;
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;
}

/*
 * May a program trace `name` with fentry here?  Asked once per process
 * with the smallest such program (r0 = 0; exit) against the function's
 * BTF id: a kernel that refuses fentry (lockdown, no trampoline; EPERM on
 * this one) says so in a millisecond, where the whole object's load found
 * out only after verifying every program and then loaded them all again
 * (2.5-5.5 s under load).  0 allowed, or -errno with *why ("Operation not
 * permitted").  The full load and attach still fall back if they fail.
 */
static int fentry_probe(const struct btf *btf, const char *name,
			const char **why)
{
	static int known; /* 1 allowed, -errno refused, 0 not asked */
	struct bpf_insn insns[2];
	int id, fd, r = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (!r) {
		id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_FUNC)
			 : -ENOENT;
		memset(insns, 0, sizeof(insns));
		insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K; /* r0 = 0 */
		insns[1].code = BPF_JMP | BPF_EXIT;
		if (id < 0) {
			r = -ENOENT;
		} else {
			LIBBPF_OPTS(bpf_prog_load_opts, o,
				    .expected_attach_type = BPF_TRACE_FENTRY,
				    .attach_btf_id = (__u32)id);

			fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "propel_probe",
					   "GPL", insns, 2, &o);
			r = fd >= 0 ? 1 : -errno;
			if (fd >= 0)
				close(fd);
		}
		__atomic_store_n(&known, r, __ATOMIC_RELAXED);
	}
	if (r < 0)
		*why = strerror(-r);
	return r < 0 ? r : 0;
}

/* One try at open -> rodata -> load -> attach; with use_fentry == 0 the
 * syscall vital uses its tracepoint.  *fentry_failed says a retry without
 * fentry may do better. */
static int vitals_open_bpf_try(struct vitals *v, int use_fentry,
			       int *fentry_failed, char **cause)
{
	struct vitals_bpf *skel;
	struct btf *btf;
	const char *pwhy = "";
	char buf[256];
	int err, i, any = 0, fentry = 0, switch_on = 0;
	struct tpdef {
		struct bpf_program *prog;
		const char *tp;
		int vital;
	} tps[16];
	int ntps = 0;

	for (i = 0; i < VITALS_NR; i++)
		v->state[i] = VITALS_ON;
	libbpf_set_print(libbpf_quiet);
	skel = vitals_bpf__open();
	if (!skel)
		return propel_cause(cause, -errno, "opening BPF object: %s",
				    strerror(errno));
	v->skel = skel;
	skel->rodata->self_tgid = getpid();
	skel->rodata->sched_min_ns = 50000;
	if (v->o.filter_fd > 0) {
		err = bpf_map__reuse_fd(skel->maps.tgids, v->o.filter_fd);
		if (err)
			return propel_cause(cause, err,
					    "sharing the traced processes: %s",
					    strerror(-err));
		skel->rodata->filter_tgids = 1;
	} else {
		/* unused: the smallest map the kernel takes */
		bpf_map__set_max_entries(skel->maps.tgids, 1);
	}

	btf = btf__load_vmlinux_btf();
	if (!btf)
		note(v, "kernel BTF not readable: cannot check tracepoints");
#define TP(p, name, vit)                                                      \
	tps[ntps++] = (struct tpdef){ skel->progs.p, name, vit }
	TP(vitals_sched_switch, "sched_switch", VITALS_SCHED);
	TP(vitals_block_rq_issue, "block_rq_issue", VITALS_BLKIO);
	TP(vitals_block_rq_complete, "block_rq_complete", VITALS_BLKIO);
	TP(vitals_mm_page_alloc, "mm_page_alloc", VITALS_KMEM);
	TP(vitals_page_fault_user, "page_fault_user", VITALS_UMEM);
	if (use_fentry && fentry_exists(btf, "x64_sys_call") &&
	    fentry_probe(btf, "x64_sys_call", &pwhy)) {
		snprintf(buf, sizeof(buf),
			 "fentry on x64_sys_call refused (a probe program: %s):"
			 " syscalls through tp_btf/sys_enter", pwhy);
		note(v, buf);
		use_fentry = 0;
	}
	if (use_fentry && fentry_exists(btf, "x64_sys_call")) {
		fentry = 1;
		bpf_program__set_autoload(skel->progs.vitals_sys_enter, false);
	} else {
		bpf_program__set_autoload(skel->progs.vitals_sys_fentry, false);
		TP(vitals_sys_enter, "sys_enter", VITALS_SYSCALL);
	}
	TP(vitals_signal_deliver, "signal_deliver", VITALS_SIGNAL);
	TP(vitals_sock_send, "sock_send_length", VITALS_SOCK);
	TP(vitals_sock_recv, "sock_recv_length", VITALS_SOCK);
	TP(vitals_contention_begin, "contention_begin", VITALS_LOCK);
	TP(vitals_contention_end, "contention_end", VITALS_LOCK);
#undef TP
	for (i = 0; i < ntps; i++) {
		int vit = tps[i].vital;

		if (v->o.disable && name_in_list(v->o.disable, propel_vital_name(vit))) {
			vitals_off(v, vit, VITALS_OFF, "disabled by --disable");
			bpf_program__set_autoload(tps[i].prog, false);
		} else if (!tp_exists(btf, tps[i].tp)) {
			/* sched_switch carries both sched and block */
			if (strcmp(tps[i].tp, "sched_switch") == 0)
				vitals_off(v, VITALS_BLOCK, VITALS_OFF,
					   "tracepoint sched_switch missing on this kernel");
			vitals_off(v, vit, VITALS_OFF,
				   "tracepoint %s missing on this kernel", tps[i].tp);
			bpf_program__set_autoload(tps[i].prog, false);
		}
	}
	/* sched_switch carries sched and block: loaded while either is on
	 * (block has no program of its own; a kernel without sched_switch
	 * turned both off above) */
	if (v->o.disable && name_in_list(v->o.disable, "block"))
		vitals_off(v, VITALS_BLOCK, VITALS_OFF, "disabled by --disable");
	skel->rodata->sched_off = v->state[VITALS_SCHED] == VITALS_OFF;
	skel->rodata->block_off = v->state[VITALS_BLOCK] == VITALS_OFF;
	bpf_program__set_autoload(skel->progs.vitals_sched_switch,
				  !skel->rodata->sched_off ||
					  !skel->rodata->block_off);
	if (!tp_exists(btf, "sched_process_exec") ||
	    !bpf_program__autoload(skel->progs.vitals_sched_switch))
		bpf_program__set_autoload(skel->progs.vitals_exec, false);
	btf__free(btf);
	/* A vital needs all of its programs (lock: begin and end). */
	for (i = 0; i < ntps; i++)
		if (v->state[tps[i].vital] == VITALS_OFF &&
		    tps[i].prog != skel->progs.vitals_sched_switch)
			bpf_program__set_autoload(tps[i].prog, false);
	if (fentry) {
		if (v->o.disable && name_in_list(v->o.disable, "syscall")) {
			vitals_off(v, VITALS_SYSCALL, VITALS_OFF,
				   "disabled by --disable");
			bpf_program__set_autoload(skel->progs.vitals_sys_fentry,
						  false);
		} else {
			tps[ntps++] = (struct tpdef){ skel->progs.vitals_sys_fentry,
						      "x64_sys_call",
						      VITALS_SYSCALL };
		}
	}

	/* cpu and l2miss: perf events, opened before load */
	if (v->o.disable && name_in_list(v->o.disable, "cpu"))
		vitals_off(v, VITALS_CPU, VITALS_OFF, "disabled by --disable");
	else if ((err = perf_open_all(v, 0, PERF_TYPE_SOFTWARE,
				      PERF_COUNT_SW_CPU_CLOCK,
				      1000000000ull / v->o.cpu_hz)))
		vitals_off(v, VITALS_CPU, VITALS_OFF,
			   "perf_event_open(cpu-clock): %s", strerror(-err));
	if (v->o.disable && name_in_list(v->o.disable, "l2miss"))
		vitals_off(v, VITALS_L2MISS, VITALS_OFF, "disabled by --disable");
	else if ((err = perf_open_all(v, 1, PERF_TYPE_HARDWARE,
				      PERF_COUNT_HW_CACHE_MISSES,
				      VITALS_L2_PERIOD)))
		vitals_off(v, VITALS_L2MISS, VITALS_OFF,
			   "no hardware cache-miss counter on this machine "
			   "(perf_event_open: %s)",
			   strerror(-err));
	if (v->state[VITALS_CPU] == VITALS_OFF)
		bpf_program__set_autoload(skel->progs.vitals_cpu, false);
	if (v->state[VITALS_L2MISS] == VITALS_OFF)
		bpf_program__set_autoload(skel->progs.vitals_l2miss, false);

	err = vitals_bpf__load(skel);
	if (err) {
		*fentry_failed = fentry;
		snprintf(buf, sizeof(buf), "loading BPF programs: %s",
			 strerror(-err));
		return propel_cause(cause, err, "%s", buf);
	}
	for (i = 0; i < VITALS_NR; i++)
		skel->bss->tshift[i] = v->o.tshift;

	for (i = 0; i < ntps; i++) {
		struct bpf_link *l;
		int vit = tps[i].vital;

		if (!bpf_program__autoload(tps[i].prog))
			continue;
		l = bpf_program__attach(tps[i].prog);
		if (!l && tps[i].prog == skel->progs.vitals_sys_fentry) {
			*fentry_failed = 1;
			return propel_cause(cause, -errno, "fentry %s: %s",
					    tps[i].tp, strerror(errno));
		}
		if (!l) {
			if (tps[i].prog == skel->progs.vitals_sched_switch)
				vitals_off(v, VITALS_BLOCK, VITALS_OFF,
					   "attaching %s: %s", tps[i].tp,
					   strerror(errno));
			vitals_off(v, vit, VITALS_OFF, "attaching %s: %s",
				   tps[i].tp, strerror(errno));
			continue;
		}
		v->links[v->nlinks++] = l;
		add_prog(v, tps[i].prog, vit);
		if (tps[i].prog == skel->progs.vitals_sched_switch)
			switch_on = 1;
	}
	/* context switches and execs invalidate the per-CPU cache of the
	 * current task's identity (vitals.bpf.c, struct whocache): on only
	 * when both are watched */
	if (switch_on && bpf_program__autoload(skel->progs.vitals_exec)) {
		struct bpf_link *l = bpf_program__attach(skel->progs.vitals_exec);

		if (l) {
			v->links[v->nlinks++] = l;
			skel->bss->who_cache_on = 1;
		}
	}
	for (i = 0; i < 2; i++) {
		struct bpf_program *p = i ? skel->progs.vitals_l2miss
					  : skel->progs.vitals_cpu;
		int vit = i ? VITALS_L2MISS : VITALS_CPU;
		unsigned c;

		if (v->state[vit] == VITALS_OFF)
			continue;
		for (c = 0; c < v->ncpus; c++) {
			struct bpf_link *l =
				bpf_program__attach_perf_event(p, v->perf_fds[i][c]);

			if (!l) {
				vitals_off(v, vit, VITALS_OFF,
					   "attaching to perf event: %s",
					   strerror(errno));
				break;
			}
			v->links[v->nlinks++] = l;
		}
		add_prog(v, p, vit);
	}
	for (i = 0; i < VITALS_NR; i++)
		if (v->state[i] != VITALS_OFF)
			any = 1;
	if (!any)
		return propel_cause(cause, -ENOENT, "no vital could be attached");

	v->rb = ring_buffer__new(bpf_map__fd(skel->maps.samples), on_sample, v,
				 NULL);
	if (!v->rb)
		return propel_cause(cause, -errno, "ring buffer: %s",
				    strerror(errno));
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (v->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		ev.data.fd = ring_buffer__epoll_fd(v->rb);
		epoll_ctl(v->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
		ev.data.fd = v->wake_fd;
		if (v->wake_fd >= 0)
			epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->wake_fd, &ev);
	}
	v->sys_hook = fentry ? "fentry x64_sys_call" : "tp_btf sys_enter";
	if (v->o.profile) {
		v->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (v->stats_fd < 0)
			note(v, "BPF run-time statistics unavailable");
	}
	v->ncpus_possible = libbpf_num_possible_cpus();
	v->cell_size = (sizeof(struct vitals_cell) + 7) & ~(size_t)7;
	v->cellbuf = calloc(v->ncpus_possible > 0 ? v->ncpus_possible : 1,
			    v->cell_size);
	if (v->ncpus_possible <= 0 || !v->cellbuf)
		return propel_cause(cause, -ENOMEM, "per-CPU cells: out of memory");
	v->source = "bpf";
	return 0;
}

static int vitals_open_bpf(struct vitals *v, char **cause)
{
	int fentry_failed = 0, err;
	char *why = NULL;

	err = vitals_open_bpf_try(v, 1, &fentry_failed, &why);
	if (err && fentry_failed) {
		char buf[300];

		vitals_close_bpf(v);
		memset(v->state, 0, sizeof(v->state));
		memset(v->why, 0, sizeof(v->why));
		snprintf(buf, sizeof(buf),
			 "fentry on x64_sys_call refused (%s): syscalls through "
			 "tp_btf/sys_enter", why);
		free(why);
		why = NULL;
		err = vitals_open_bpf_try(v, 0, &fentry_failed, &why);
		if (!err)
			note(v, buf);
	}
	if (err)
		*cause = why;
	else
		free(why);
	return err;
}

/* kernel.bpf_stats_enabled: someone (an operator, the bench) turned the
 * run-time statistics on for every program. */
static int bpf_stats_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	int on = 0;

	if (f) {
		if (fscanf(f, "%d", &on) != 1)
			on = 0;
		fclose(f);
	}
	return on;
}

static uint64_t prog_run_ns(struct bpf_program *p)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return 0;
	return info.run_time_ns;
}

/* Add BPF run time since the last look into epoch_run_ns[]; return the
 * total added. */
static uint64_t vitals_take_cost(struct vitals *v)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < v->nprogs; i++) {
		uint64_t r = prog_run_ns(v->progs[i].prog);
		uint64_t d = r >= v->progs[i].run_ns ? r - v->progs[i].run_ns : 0;

		v->progs[i].run_ns = r;
		v->epoch_run_ns[v->progs[i].vital] += d;
		sum += d;
	}
	return sum;
}

/* Kernel-side cost of one sample (two stack walks and a ring-buffer
 * record), measured with --profile on this project's test machine. */
#define VITALS_SAMPLE_NS 6000

/* High watermark, checked at every wake-up (the epoch's end, a ring half
 * full) over the time since the last: the cost of sampling (this thread +
 * VITALS_SAMPLE_NS per sample, counted as they are read from the ring: no
 * look at the kernel's cells). */
static void vitals_check_high(struct vitals *v)
{
	uint64_t now = propel_mono_ns(), wall, user, ns, cost;
	const uint64_t *sampled = v->npow;
	int i, worst = -1;
	double over;

	if (v->o.high_wm >= 1)
		return;
	wall = now - v->check_mono;
	if (wall < 100000000ull)
		return;
	user = thread_cpu_ns();
	for (ns = 0, i = 0; i < VITALS_NR; i++)
		ns += v->nrecv[i];
	cost = (user - v->check_user) +
	       (ns >= v->check_samples ? ns - v->check_samples : ns) *
		       VITALS_SAMPLE_NS;
	v->check_mono = now;
	v->check_user = user;
	v->check_samples = ns;
	over = (double)cost / ((double)wall * v->ncpus) / v->o.high_wm;
	if (over < 1)
		return;
	for (i = 0; i < VITALS_NR; i++)
		if (worst < 0 || sampled[i] > sampled[worst])
			worst = i;
	/* a label of count N is sampled log2(N) / k times (t = 2^k): k
	 * times `over` (at most 4) brings the later powers of t under the
	 * watermark at once, for each vital whose powers of t are a quarter
	 * of the worst's or more (one step at a time for one vital took a
	 * busy machine's collector minutes to bring down).  Samples of new
	 * labels count in the cost but choose no vital: t does not move
	 * them, and a vital of few events (cpu ticks) whose samples are
	 * mostly new labels would lose its powers of t for nothing. */
	for (i = 0; worst >= 0 && i < VITALS_NR; i++) {
		uint32_t k = v->skel->bss->tshift[i], nk;

		if (!sampled[i] || sampled[i] * 4 < sampled[worst])
			continue;
		nk = (uint32_t)(k * (over > 4 ? 4 : over) + 0.999);
		if (nk <= k)
			nk = k + 1;
		if (nk > 20)
			nk = 20;
		v->skel->bss->tshift[i] = nk;
		pr_dbg("high watermark: t of %s -> 2^%u", propel_vital_name(i), nk);
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct vitals_row *x = a, *y = b;

	if (x->vital != y->vital)
		return x->vital - y->vital;
	return x->value < y->value ? 1 : x->value > y->value ? -1 : 0;
}

static int row_key_cmp(const void *a, const void *b)
{
	const struct vitals_row *x = a, *y = b;

	if (x->vital != y->vital)
		return x->vital - y->vital;
	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

struct rowvec {
	struct vitals_row *r;
	size_t n, cap;
};

static int rowvec_add(struct rowvec *rv, uint32_t tgid, uint16_t vital,
		      uint32_t uid, const char *comm, uint64_t value,
		      uint64_t count, uint64_t aux, uint64_t short_io)
{
	struct vitals_row *r;

	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? 2 * rv->cap : 256;
		struct vitals_row *n = realloc(rv->r, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rv->r = n;
		rv->cap = cap;
	}
	r = &rv->r[rv->n++];
	memset(r, 0, sizeof(*r));
	r->tgid = tgid;
	r->vital = vital;
	r->uid = uid;
	memcpy(r->comm, comm, sizeof(r->comm));
	r->comm[VITALS_COMM_LEN - 1] = 0;
	r->value = value;
	r->count = count;
	r->aux = aux;
	r->short_io = short_io;
	return 0;
}

/* Merge rows of one (vital, tgid): slots of several CPUs and chunks and
 * rows evicted to `procs`.  A row with no comm (a completion interrupt
 * opened it) takes one from its process. */
static void rows_merge(struct rowvec *rv)
{
	size_t i, o = 0;

	qsort(rv->r, rv->n, sizeof(*rv->r), row_key_cmp);
	for (i = 0; i < rv->n; i++) {
		struct vitals_row *r = &rv->r[i];

		if (o && rv->r[o - 1].vital == r->vital &&
		    rv->r[o - 1].tgid == r->tgid) {
			struct vitals_row *m = &rv->r[o - 1];

			m->value += r->value;
			m->count += r->count;
			m->aux += r->aux;
			m->short_io += r->short_io;
			if (!m->comm[0])
				memcpy(m->comm, r->comm, sizeof(m->comm));
			if (!m->uid)
				m->uid = r->uid;
			continue;
		}
		if (o != i)
			rv->r[o] = *r;
		o++;
	}
	rv->n = o;
	for (i = 0; i < rv->n; i++) {
		struct vitals_row *r = &rv->r[i];

		if (!r->comm[0]) {
			char path[64];
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%u/comm", r->tgid);
			f = fopen(path, "r");
			if (f) {
				if (fgets(r->comm, sizeof(r->comm), f))
					r->comm[strcspn(r->comm, "\n")] = 0;
				fclose(f);
			}
		}
	}
}

static int vitals_end_epoch_bpf(struct vitals *v, struct vitals_epoch *e)
{
	struct vitals_bpf__bss *bss = v->skel->bss;
	int fd = bpf_map__fd(v->skel->maps.procs);
	int cfd = bpf_map__fd(v->skel->maps.cells);
	struct vitals_proc_key key, next, *keys = NULL;
	size_t nkeys = 0, cap = 0, i;
	struct rowvec rv = { 0 };
	uint32_t old = bss->parity & 1, vit, ch;
	uint64_t wall, total = 0;
	struct timespec ts = { 0, 3000000 };
	int c, err = 0;

	__atomic_store_n(&bss->parity, old ^ 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&bss->epoch, 1, __ATOMIC_SEQ_CST);
	nanosleep(&ts, NULL); /* programs running on the old copy finish */
	ring_buffer__consume(v->rb);

	/* the samples counted since the last epoch (the ring was read
	 * after they were counted: see struct vitals_tally) */
	for (vit = 0; vit < VITALS_NR; vit++) {
		uint64_t sum[3] = { 0, 0, 0 }, *last = v->tally_last[vit];
		const struct vitals_tally *ty = v->cellbuf;

		if (bpf_map_lookup_elem(bpf_map__fd(v->skel->maps.tally), &vit,
					v->cellbuf))
			continue;
		for (c = 0; c < v->ncpus_possible; c++, ty++) {
			sum[0] += ty->nsampled;
			sum[1] += ty->ndropped;
			sum[2] += ty->nshed;
		}
		e->sampled[vit] += sum[0] - last[0];
		e->dropped[vit] += sum[1] - last[1];
		e->shed[vit] += sum[2] - last[2];
		memcpy(last, sum, sizeof(sum));
	}
	/* the per-CPU cells: per-process cache; then clear them */
	for (vit = 0; vit < VITALS_NR; vit++) {
		for (ch = 0; ch < VITALS_HCA_CHUNKS; ch++) {
			uint32_t k = (old * VITALS_NR + vit) * VITALS_HCA_CHUNKS + ch;

			if (bpf_map_lookup_elem(cfd, &k, v->cellbuf))
				continue;
			for (c = 0; c < v->ncpus_possible; c++) {
				const struct vitals_cell *cell =
					(const void *)((char *)v->cellbuf +
						       c * v->cell_size);
				int s;

				for (s = 0; s < VITALS_PSLOTS && !err; s++) {
					const struct vitals_pslot *sl = &cell->slot[s];

					if (sl->tgid)
						err = rowvec_add(&rv, sl->tgid, vit,
								 sl->uid, sl->comm,
								 sl->value, sl->count,
								 sl->aux, sl->short_io);
				}
			}
			/* clear all but the fingerprints (see vitals_account) */
			for (c = 0; c < v->ncpus_possible; c++) {
				struct vitals_cell *cell =
					(void *)((char *)v->cellbuf + c * v->cell_size);
				int j;

				memset(cell, 0, offsetof(struct vitals_cell, hca));
				for (j = 0; j < VITALS_HCA_SIZE; j++)
					cell->hca[j].n = 0;
			}
			bpf_map_update_elem(cfd, &k, v->cellbuf, BPF_ANY);
		}
	}

	/* the rows evicted into the shared hash */
	if (bpf_map_get_next_key(fd, NULL, &key) == 0) {
		do {
			if (nkeys == cap) {
				struct vitals_proc_key *nk;

				cap = cap ? 2 * cap : 256;
				nk = realloc(keys, cap * sizeof(*keys));
				if (!nk) {
					err = -ENOMEM;
					break;
				}
				keys = nk;
			}
			keys[nkeys++] = key;
		} while (bpf_map_get_next_key(fd, &key, &next) == 0 &&
			 (key = next, 1));
	}
	for (i = 0; i < nkeys; i++) {
		struct vitals_proc_val val;

		if (keys[i].parity != old)
			continue;
		if (!err && bpf_map_lookup_elem(fd, &keys[i], &val) == 0 &&
		    keys[i].vital < VITALS_NR)
			err = rowvec_add(&rv, keys[i].tgid, keys[i].vital,
					 val.uid, val.comm, val.value, val.count,
					 val.aux, val.short_io);
		bpf_map_delete_elem(fd, &keys[i]);
	}
	free(keys);
	if (err) {
		free(rv.r);
		return err;
	}
	rows_merge(&rv);
	e->rows = rv.r ? rv.r : calloc(1, sizeof(*e->rows));
	e->nrows = rv.n;
	for (i = 0; i < e->nrows; i++) {
		e->events[e->rows[i].vital] += e->rows[i].count;
		e->weight[e->rows[i].vital] += e->rows[i].value;
	}
	qsort(e->rows, e->nrows, sizeof(*e->rows), row_cmp);
	for (i = 0; i < VITALS_NR; i++)
		e->tshift[i] = bss->tshift[i];
	v->check_samples = 0; /* counted again from zero */
	memset(v->nrecv, 0, sizeof(v->nrecv));
	memset(v->npow, 0, sizeof(v->npow));

	/* cost (where BPF statistics are on) and the low watermark */
	if (v->stats_fd >= 0 || bpf_stats_on())
		vitals_take_cost(v);
	for (i = 0; i < VITALS_NR; i++) {
		total += v->epoch_run_ns[i];
		v->epoch_run_ns[i] = 0;
	}
	e->bpf_run_ns = total;
	wall = propel_mono_ns() - v->epoch_start_mono;
	{
		uint64_t ns = 0, user = thread_cpu_ns();
		double cost;

		for (i = 0; i < VITALS_NR; i++)
			ns += e->sampled[i];
		cost = (double)(user - v->epoch_user0) + ns * VITALS_SAMPLE_NS;
		v->epoch_user0 = user;
		if (wall && cost / ((double)wall * v->ncpus) < v->o.low_wm)
			for (i = 0; i < VITALS_NR; i++)
				if (bss->tshift[i] > 1)
					bss->tshift[i]--;
	}
	return 0;
}

#endif /* VITALS_SKEL_MISSING */

/* Release every BPF resource (also of a half-finished open). */
static void vitals_close_bpf(struct vitals *v)
{
#ifndef VITALS_SKEL_MISSING
	int i;
	unsigned c;

	for (i = 0; i < v->nlinks; i++)
		bpf_link__destroy(v->links[i]);
	v->nlinks = 0;
	v->nprogs = 0;
	ring_buffer__free(v->rb);
	v->rb = NULL;
	vitals_bpf__destroy(v->skel);
	v->skel = NULL;
	for (i = 0; i < 2; i++)
		for (c = 0; c < VITALS_MAX_CPUS; c++)
			if (v->perf_fds[i][c] >= 0) {
				close(v->perf_fds[i][c]);
				v->perf_fds[i][c] = -1;
			}
	if (v->stats_fd >= 0)
		close(v->stats_fd);
	v->stats_fd = -1;
	if (v->epfd >= 0)
		close(v->epfd);
	v->epfd = -1;
	free(v->cellbuf);
	v->cellbuf = NULL;
#endif
}

int vitals_open(const struct vitals_opts *o, struct vitals **out,
		char **cause)
{
	struct vitals *v = calloc(1, sizeof(*v));
	char *bpf_cause = NULL;
	long n;
	int err;

	if (!v)
		return propel_cause(cause, -ENOMEM, "out of memory");
	if (o)
		v->o = *o;
	if (!v->o.epoch_ms)
		v->o.epoch_ms = 1000;
	if (!v->o.cpu_hz)
		v->o.cpu_hz = 1000;
	if (v->o.high_wm <= 0)
		v->o.high_wm = getenv("PROPEL_VITALS_HIGH_WM")
				       ? atof(getenv("PROPEL_VITALS_HIGH_WM"))
				       : 0.005;
	if (v->o.low_wm <= 0)
		v->o.low_wm = 0.002;
	if (!v->o.tshift)
		v->o.tshift = 1;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	v->ncpus = n > 0 ? (n > VITALS_MAX_CPUS ? VITALS_MAX_CPUS : n) : 1;
	v->mono_to_real = propel_real_ns() - propel_mono_ns();
#ifndef VITALS_SKEL_MISSING
	memset(v->perf_fds, -1, sizeof(v->perf_fds));
	v->stats_fd = -1;
	v->epfd = -1;
#endif
	v->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vitals_tracefs(v);

#ifdef VITALS_SKEL_MISSING
	bpf_cause = strdup(VITALS_SKEL_MISSING);
	err = -ENOSYS;
#else
	if (v->o.proc_only) {
		bpf_cause = strdup("--proc requested");
		err = -ENOSYS;
	} else {
		err = vitals_open_bpf(v, &bpf_cause);
	}
#endif
	if (err) {
		vitals_close_bpf(v);
		memset(v->state, 0, sizeof(v->state));
		memset(v->why, 0, sizeof(v->why));
		err = vitals_open_proc(v, bpf_cause, cause);
		if (err) {
			free(bpf_cause);
			if (v->wake_fd >= 0)
				close(v->wake_fd);
			free(v);
			return err;
		}
		{
			char buf[300];

			snprintf(buf, sizeof(buf),
				 "BPF unavailable (%s): coarse /proc polling",
				 bpf_cause ? bpf_cause : "?");
			note(v, buf);
		}
	}
	free(bpf_cause);
	v->epoch_start_ns = propel_real_ns();
	v->epoch_start_mono = propel_mono_ns();
	v->user_ns0 = 0; /* thread clocks: taken on the polling thread */
#ifndef VITALS_SKEL_MISSING
	v->check_mono = v->epoch_start_mono;
#endif
	if (v->proc) {
		/* prime the deltas */
		struct vitals_epoch e = { 0 };

		vitals_proc_epoch(v->proc, &e);
		free(e.rows);
	}
	*out = v;
	return 0;
}

int vitals_flush(struct vitals *v, const struct vitals_sink_ops *ops,
		 void *arg)
{
	struct vitals_epoch e = { 0 };
	uint64_t now;
	int err = 0;

	v->ops = ops;
	v->arg = arg;
	e.seq = v->seq;
	e.start_ns = v->epoch_start_ns;
	e.source = v->source;
	e.ncpus = v->ncpus;
	if (v->proc) {
		err = vitals_proc_epoch(v->proc, &e);
	}
#ifndef VITALS_SKEL_MISSING
	else
		err = vitals_end_epoch_bpf(v, &e);
#endif
	now = propel_real_ns();
	e.end_ns = now;
	e.memfree_kb = memfree_kb();
	{
		uint64_t u = thread_cpu_ns();

		e.user_run_ns = v->user_ns0 ? u - v->user_ns0 : 0;
		v->user_ns0 = u;
	}
	if (!err && ops && ops->epoch)
		ops->epoch(arg, &e);
	free(e.rows);
	v->seq++;
	v->epoch_start_ns = now;
	v->epoch_start_mono = propel_mono_ns();
	return err;
}

int vitals_poll(struct vitals *v, int timeout_ms,
		const struct vitals_sink_ops *ops, void *arg)
{
	uint64_t now, due;
	int left;

	v->ops = ops;
	v->arg = arg;
	if (!v->user_ns0)
		v->user_ns0 = thread_cpu_ns();
#ifndef VITALS_SKEL_MISSING
	if (!v->check_user)
		v->check_user = thread_cpu_ns();
#endif
	due = v->epoch_start_mono + (uint64_t)v->o.epoch_ms * 1000000ull;
	now = propel_mono_ns();
	left = now >= due ? 0 : (int)((due - now) / 1000000ull) + 1;
	if (timeout_ms < 0 || left < timeout_ms)
		timeout_ms = left;
#ifndef VITALS_SKEL_MISSING
	if (v->rb && v->epfd >= 0) {
		/* woken when the ring is half full (the programs ask for no
		 * wake-up otherwise), by vitals_wake(), or at the epoch's end;
		 * the ring is read all the same */
		struct epoll_event ev[2];
		int n = epoll_wait(v->epfd, ev, 2, timeout_ms), i;

		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++)
			if (ev[i].data.fd == v->wake_fd) {
				uint64_t c;

				if (read(v->wake_fd, &c, sizeof(c)) < 0)
					pr_dbg("eventfd: %s", strerror(errno));
			}
		n = ring_buffer__consume(v->rb);
		if (n < 0 && n != -EINTR)
			return n;
		vitals_check_high(v);
	} else
#endif
	{
		struct pollfd pfd = { .fd = v->wake_fd, .events = POLLIN };

		if (poll(&pfd, v->wake_fd >= 0, timeout_ms) > 0) {
			uint64_t c;

			if (read(v->wake_fd, &c, sizeof(c)) < 0)
				pr_dbg("eventfd: %s", strerror(errno));
		}
	}
	if (propel_mono_ns() >= due)
		return vitals_flush(v, ops, arg);
	return 0;
}

int vitals_drain(struct vitals *v, const struct vitals_sink_ops *ops,
		 void *arg)
{
	v->ops = ops;
	v->arg = arg;
#ifndef VITALS_SKEL_MISSING
	if (v->rb) {
		int n = ring_buffer__consume(v->rb);

		return n < 0 ? n : 0;
	}
#endif
	return 0;
}

void vitals_close(struct vitals *v)
{
	if (!v)
		return;
	vitals_close_bpf(v);
	vitals_proc_close(v->proc);
	if (v->wake_fd >= 0)
		close(v->wake_fd);
	free(v);
}

void vitals_wake(struct vitals *v)
{
	uint64_t one = 1;

	if (v && v->wake_fd >= 0 && write(v->wake_fd, &one, sizeof(one)) < 0)
		pr_dbg("waking the collector: %s", strerror(errno));
}

const char *vitals_source(struct vitals *v)
{
	return v->source;
}

int vitals_status(struct vitals *v, int vital, const char **why)
{
	if (vital < 0 || vital >= VITALS_NR)
		return VITALS_OFF;
	if (why)
		*why = v->why[vital];
	return v->state[vital];
}

const char *vitals_notes(struct vitals *v)
{
	return v->notes;
}

uint64_t vitals_kernel_bytes(struct vitals *v, uint64_t *per_vital)
{
	uint64_t sum = 0;
#ifndef VITALS_SKEL_MISSING
	struct bpf_map *m;

	if (per_vital)
		*per_vital = 0;
	if (!v->skel)
		return 0;
	bpf_object__for_each_map(m, v->skel->obj)
	{
		struct bpf_map_info info = { 0 };
		uint32_t len = sizeof(info);
		uint64_t b;

		if (bpf_obj_get_info_by_fd(bpf_map__fd(m), &info, &len))
			continue;
		if (info.type == BPF_MAP_TYPE_RINGBUF)
			b = info.max_entries;
		else if (info.type == BPF_MAP_TYPE_PERCPU_ARRAY)
			b = (uint64_t)info.max_entries *
			    ((info.value_size + 7) & ~7u) * v->ncpus_possible;
		else if (info.type == BPF_MAP_TYPE_TASK_STORAGE)
			b = 0; /* per live task, freed with it */
		else
			b = (uint64_t)info.max_entries *
			    (info.key_size + info.value_size);
		if (per_vital && (m == v->skel->maps.cells ||
				  m == v->skel->maps.seen))
			*per_vital += b / VITALS_NR;
		sum += b;
	}
#else
	if (per_vital)
		*per_vital = 0;
#endif
	return sum;
}

const char *vitals_sys_hook(struct vitals *v)
{
#ifndef VITALS_SKEL_MISSING
	return v->skel ? v->sys_hook : NULL;
#else
	return NULL;
#endif
}

int vitals_prog_stats(struct vitals *v, struct vitals_prog_stat *out, int max)
{
	int n = 0;
#ifndef VITALS_SKEL_MISSING
	int i;

	if (!v->skel || (v->stats_fd < 0 && !bpf_stats_on()))
		return 0;
	for (i = 0; i < v->nprogs && n < max; i++) {
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(v->progs[i].prog),
					   &info, &len))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s",
			 bpf_program__name(v->progs[i].prog));
		out[n].vital = v->progs[i].vital;
		out[n].run_cnt = info.run_cnt;
		out[n].run_ns = info.run_time_ns;
		n++;
	}
#endif
	return n;
}
