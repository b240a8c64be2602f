/*
 * kmod/offcpu.c - loader and user side of the off-CPU tracer (kernel side:
 * kmod/offcpu.bpf.c; shared structs and API: kmod/offcpu.h).
 *
 * offcpu_open: open the skeleton -> set rodata (self_tgid, all, min_ns) ->
 * load -> attach.  sched_switch and sched_wakeup are required (without them
 * there is nothing to say); sched_process_fork (children of the traced
 * processes) and contention_begin/end (kernel locks as a reason) are
 * optional, and a missing one is said in the cause of offcpu_notes.  BPF
 * refused (not root, no CAP_BPF) is an error with a one-line cause: the
 * caller records its trace without the tracer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kmod/offcpu.h"
#include "share/log.h"

#define PR_DOMAIN "offcpu"

#include "offcpu.skel.h"

static const char *const offcpu_reasons[OFFCPU_NREASONS] = {
    "runqueue", "io",	"lock",	 "socket", "pipe",
    "sleep",	"poll", "child", "fault",  "other",
};

const char *offcpu_reason_name(int reason)
{
	return reason >= 0 && reason < OFFCPU_NREASONS ? offcpu_reasons[reason]
						       : "other";
}

const char *offcpu_syscall_name(unsigned nr)
{
	static const struct {
		unsigned nr;
		const char *name;
	} names[] = {
	    {0, "read"},
	    {1, "write"},
	    {7, "poll"},
	    {17, "pread"},
	    {18, "pwrite"},
	    {19, "readv"},
	    {20, "writev"},
	    {23, "select"},
	    {26, "msync"},
	    {34, "pause"},
	    {35, "nanosleep"},
	    {40, "sendfile"},
	    {42, "connect"},
	    {43, "accept"},
	    {44, "sendto"},
	    {45, "recvfrom"},
	    {46, "sendmsg"},
	    {47, "recvmsg"},
	    {61, "wait4"},
	    {73, "flock"},
	    {74, "fsync"},
	    {75, "fdatasync"},
	    {128, "sigtimedwait"},
	    {130, "sigsuspend"},
	    {162, "sync"},
	    {202, "futex"},
	    {230, "clock_nanosleep"},
	    {232, "epoll_wait"},
	    {247, "waitid"},
	    {270, "pselect6"},
	    {271, "ppoll"},
	    {275, "splice"},
	    {277, "sync_file_range"},
	    {281, "epoll_pwait"},
	    {288, "accept4"},
	    {295, "preadv"},
	    {296, "pwritev"},
	    {299, "recvmmsg"},
	    {306, "syncfs"},
	    {307, "sendmmsg"},
	    {327, "preadv2"},
	    {328, "pwritev2"},
	    {441, "epoll_pwait2"},
	    {449, "futex_waitv"},
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	return NULL;
}

#ifdef OFFCPU_SKEL_MISSING

int offcpu_open(const struct offcpu_opts *o, struct offcpu **out, char **cause)
{
	(void)o;
	*out = NULL;
	return propel_cause(cause, -ENOSYS, "%s", OFFCPU_SKEL_MISSING);
}
int offcpu_add_tgid(struct offcpu *oc, uint32_t tgid, int parent_only)
{
	(void)oc, (void)tgid, (void)parent_only;
	return -ENOSYS;
}
int offcpu_forget_tgid(struct offcpu *oc, uint32_t tgid)
{
	(void)oc, (void)tgid;
	return -ENOSYS;
}
int offcpu_poll(struct offcpu *oc, int timeout_ms,
		void (*cb)(void *arg, const struct offcpu_span *s), void *arg)
{
	(void)oc, (void)timeout_ms, (void)cb, (void)arg;
	return -ENOSYS;
}
uint64_t offcpu_lost(struct offcpu *oc)
{
	(void)oc;
	return 0;
}
int offcpu_tgids_fd(struct offcpu *oc)
{
	(void)oc;
	return -1;
}
void offcpu_close(struct offcpu *oc) { (void)oc; }
const char *offcpu_notes(struct offcpu *oc)
{
	(void)oc;
	return "";
}

#else

struct offcpu {
	struct offcpu_bpf *skel;
	struct ring_buffer *rb;
	void (*cb)(void *arg, const struct offcpu_span *s);
	void *arg;
	char notes[256];
};

static int offcpu_libbpf_print(enum libbpf_print_level level, const char *fmt,
			       va_list ap)
{
	(void)level;
	if (getenv("PROPEL_VITALS_LIBBPF_STDERR"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static int offcpu_on_span(void *ctx, void *data, size_t size)
{
	struct offcpu *oc = ctx;

	if (size >= sizeof(struct offcpu_span) && oc->cb)
		oc->cb(oc->arg, data);
	return 0;
}

/* Attach p; for an optional program a failure is a note. */
static int offcpu_attach(struct offcpu *oc, struct bpf_program *p,
			 const char *what, int optional, char **cause)
{
	size_t n = strlen(oc->notes);

	if (bpf_program__attach(p))
		return 0;
	if (!optional)
		return propel_cause(cause, -errno, "attaching %s: %s", what,
				    strerror(errno));
	snprintf(oc->notes + n, sizeof(oc->notes) - n, "%s%s unavailable",
		 n ? "; " : "", what);
	return 0;
}

int offcpu_open(const struct offcpu_opts *o, struct offcpu **out, char **cause)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));
	const char *fake = getenv("PROPEL_VITALS_FAKE_MISSING");
	int err;

	*out = NULL;
	if (!oc)
		return propel_cause(cause, -ENOMEM, "out of memory");
	libbpf_set_print(offcpu_libbpf_print);
	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		err = propel_cause(cause, -errno, "opening BPF object: %s",
				   strerror(errno));
		goto fail;
	}
	oc->skel->rodata->self_tgid = getpid();
	oc->skel->rodata->trace_all = o && o->all;
	oc->skel->rodata->min_ns = o && o->min_ns ? o->min_ns : 1000000;
	/* the loader of kmod/vitals.c checks tracepoints in the kernel's
	 * BTF; here a missing optional one fails at load, so leave out what
	 * the test hook says is missing */
	if (fake && strstr(fake, "contention_begin")) {
		bpf_program__set_autoload(
		    oc->skel->progs.offcpu_contention_begin, false);
		bpf_program__set_autoload(oc->skel->progs.offcpu_contention_end,
					  false);
		snprintf(oc->notes, sizeof(oc->notes),
			 "kernel lock contention unavailable");
	}
	err = offcpu_bpf__load(oc->skel);
	if (err) {
		err = propel_cause(cause, err, "loading BPF programs: %s",
				   strerror(-err));
		goto fail;
	}
	err = offcpu_attach(oc, oc->skel->progs.offcpu_switch, "sched_switch",
			    0, cause);
	if (!err)
		err = offcpu_attach(oc, oc->skel->progs.offcpu_wakeup,
				    "sched_wakeup", 0, cause);
	if (!err)
		err = offcpu_attach(oc, oc->skel->progs.offcpu_fork,
				    "children (sched_process_fork)", 1, cause);
	if (!err)
		err = offcpu_attach(oc, oc->skel->progs.offcpu_signal,
				    "signals (signal_deliver)", 1, cause);
	if (!err) /* without it, an exited thread's entry stays until its
		   * id is reused (the entry tells a reused id) */
		err = offcpu_attach(oc, oc->skel->progs.offcpu_exit,
				    "thread exits (sched_process_exit)", 1,
				    cause);
	if (!err &&
	    bpf_program__autoload(oc->skel->progs.offcpu_contention_begin)) {
		err = offcpu_attach(oc, oc->skel->progs.offcpu_contention_begin,
				    "kernel lock contention", 1, cause);
		if (!err)
			err = offcpu_attach(
			    oc, oc->skel->progs.offcpu_contention_end,
			    "kernel lock contention end", 1, cause);
	}
	if (err)
		goto fail;
	oc->rb = ring_buffer__new(bpf_map__fd(oc->skel->maps.spans),
				  offcpu_on_span, oc, NULL);
	if (!oc->rb) {
		err = propel_cause(cause, -errno, "ring buffer: %s",
				   strerror(errno));
		goto fail;
	}
	*out = oc;
	return 0;
fail:
	offcpu_close(oc);
	return err;
}

int offcpu_add_tgid(struct offcpu *oc, uint32_t tgid, int parent_only)
{
	uint32_t v = parent_only ? 2 : 1, old;
	int fd = bpf_map__fd(oc->skel->maps.tgids);

	/* already there: no new generation (every thread would look its
	 * process up again) */
	if (bpf_map_lookup_elem(fd, &tgid, &old) == 0 && old == v)
		return 0;
	if (bpf_map_update_elem(fd, &tgid, &v, BPF_ANY))
		return -errno;
	__atomic_add_fetch(&oc->skel->data->gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int offcpu_forget_tgid(struct offcpu *oc, uint32_t tgid)
{
	int fd = bpf_map__fd(oc->skel->maps.tgids);

	/* a thread decided traced keeps its decision until the next
	 * generation: a process forgotten is one whose own threads were
	 * never traced (parent-only), so no new generation is needed */
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

int offcpu_poll(struct offcpu *oc, int timeout_ms,
		void (*cb)(void *arg, const struct offcpu_span *s), void *arg)
{
	int n;

	oc->cb = cb;
	oc->arg = arg;
	n = ring_buffer__poll(oc->rb, timeout_ms);
	return n < 0 && n != -EINTR ? n : 0;
}

/* spans the ring buffer had no room for, and traced threads whose state
 * could not be kept (ostates full): their spans are lost too */
uint64_t offcpu_lost(struct offcpu *oc)
{
	return oc->skel->bss->lost + oc->skel->bss->nostate;
}

const char *offcpu_notes(struct offcpu *oc) { return oc->notes; }

int offcpu_tgids_fd(struct offcpu *oc)
{
	return bpf_map__fd(oc->skel->maps.tgids);
}

void offcpu_close(struct offcpu *oc)
{
	if (!oc)
		return;
	if (oc->skel && oc->skel->bss)
		pr_dbg("switch-ins not seen (spans ended by the slice): %llu",
		       (unsigned long long)oc->skel->bss->unseen);
	ring_buffer__free(oc->rb);
	offcpu_bpf__destroy(oc->skel);
	free(oc);
}

#endif
