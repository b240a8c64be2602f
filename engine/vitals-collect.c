/*
 * engine/vitals-collect.c - the background collector thread: drives the
 * kmod collector (kmod/vitals-collector.h), which wakes it once per epoch
 * (or when the kernel's sample ring is half full, or to stop), symbolizes
 * the samples that came (engine/vitals-sym.c; a process that ended within
 * the epoch keeps its user addresses), then writes the epoch, its totals,
 * per-process values and samples in one transaction (engine/vitals-store.c),
 * summarizes the minutes older than the raw window (engine/vitals-summary.c)
 * and keeps the file under its size limit.
 *
 * Threads: the caller calls start/stop; everything else runs on the
 * collector thread, which owns its own session handle.  `stopping` is the
 * only shared state.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "engine/vitals-collect.h"
#include "engine/vitals-store.h"
#include "engine/vitals-summary.h"
#include "engine/vitals-sym.h"
#include "kmod/vitals-collector.h"
#include "share/clock.h"
#include "share/hash.h"
#include "share/log.h"

#define PR_DOMAIN "vitals"

struct vitals_pend {
	struct vitals_sample raw; /* stacks dropped after symbolization */
	char *kstack, *ustack;
	uint64_t n; /* pend_fold: samples this one stands for, 0: folded */
};

struct vitals_collect {
	struct vitals_collect_opts o;
	struct vitals *v;
	struct session *sess; /* the thread's own handle */
	struct vitals_store *st;
	struct vitals_sym *sym;
	int64_t run;
	pthread_t thread;
	int started;
	volatile int stopping;
	struct vitals_pend *pend;
	size_t npend, cappend;
	size_t nsym; /* pend[0, nsym) are symbolized */
	char summary[1024];
	int err;
	char *cause;
	struct vitals_collect_stats stats;
	uint64_t t0;
	uint64_t burst;	    /* the most bytes one recent epoch's write
			     * added (decaying: 1/64 an epoch) */
	double warp;	    /* PROPEL_VITALS_WARP (1: off) */
	uint64_t warp_base; /* CLOCK_REALTIME at the start */
};

/* A time of the epoch that starts at start as stored: with the test
 * switch (vitals-collect.h) the epoch keeps its length (rates stay true,
 * so the rules see what they would) and moves F times as far from the
 * collector's start. */
static uint64_t warped(const struct vitals_collect *vc, uint64_t start,
		       uint64_t t)
{
	if (vc->warp == 1 || start < vc->warp_base)
		return t;
	return t + (uint64_t)((double)(start - vc->warp_base) * (vc->warp - 1));
}

/* Join names of a stack into a malloc'd '\n'-separated string; *raw
 * (when given) counts the frames left as bare addresses. */
static char *stack_text(struct vitals_collect *vc, const struct vitals_sample *s,
			int user, int *raw)
{
	const unsigned long long *ips = user ? s->ustack : s->kstack;
	int bytes = user ? s->ustack_bytes : s->kstack_bytes;
	int n = bytes > 0 ? bytes / 8 : 0, i;
	size_t cap = 256, len = 0;
	char *out, buf[96];

	if (n <= 0)
		return NULL;
	if (n > VITALS_STACK_DEPTH)
		n = VITALS_STACK_DEPTH;
	out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = 0;
	for (i = 0; i < n; i++) {
		const char *name;
		size_t l;

		if (!ips[i])
			break;
		if (!user && !len) {
			/* our own frames: the BPF program and its trampoline */
			name = vitals_sym_kernel(vc->sym, ips[i], buf, sizeof(buf));
			if (!strncmp(name, "bpf_prog_", 9) ||
			    !strncmp(name, "bpf_trace_run", 13) ||
			    !strncmp(name, "bpf_trampoline", 14) ||
			    !strncmp(name, "__bpf_trace_", 12) ||
			    !strncmp(name, "call_trace_", 11) ||
			    !strncmp(name, "perf_trace_", 11) ||
			    !strncmp(name, "bpf_overflow_handler", 20) ||
			    !strncmp(name, "__perf_event_overflow", 21))
				continue;
		}
		if (user) {
			name = vitals_sym_user(vc->sym, s->tgid,
					       i ? ips[i] - 1 : ips[i], !i, buf,
					       sizeof(buf));
			if (raw && name[0] == '0' && name[1] == 'x')
				(*raw)++;
		} else
			name = vitals_sym_kernel(vc->sym, ips[i], buf, sizeof(buf));
		l = strlen(name);
		if (len + l + 2 > cap) {
			char *nb;

			cap = 2 * (len + l + 2);
			nb = realloc(out, cap);
			if (!nb)
				break;
			out = nb;
		}
		if (len)
			out[len++] = '\n';
		memcpy(out + len, name, l + 1);
		len += l;
	}
	return out;
}

static void on_sample(void *arg, const struct vitals_sample *s)
{
	struct vitals_collect *vc = arg;
	struct vitals_pend *p;

	if (vc->npend == vc->cappend) {
		size_t cap = vc->cappend ? 2 * vc->cappend : 256;
		struct vitals_pend *n;

		if (cap > 200000)
			return; /* a runaway epoch: drop, counted nowhere */
		n = realloc(vc->pend, cap * sizeof(*n));
		if (!n)
			return;
		vc->pend = n;
		vc->cappend = cap;
	}
	p = &vc->pend[vc->npend++];
	p->raw = *s;
	p->kstack = p->ustack = NULL;
	vc->stats.samples++;
}

static const struct vitals_sink_ops vitals_collect_ops;

/*
 * Symbolize what arrived since the last call, for at most budget_ms of
 * this thread's CPU (and ten times that on the clock).
 * libdw is slow on a machine that runs many programs (a Dwfl per process,
 * every ELF file of a browser), so the kernel's ring is drained between
 * every few samples (it never waits for libdw), and the time is bounded
 * (epochs end on time).  With `all`, what is left when the time is up is
 * named from what is known already (each file's symbols read so far, the
 * processes' maps): only a frame in a file not read yet stays an address.
 * Reading a file's symbols (once a run per file) is charged neither to
 * the CPU budget nor to the clock's: on a loaded machine a first file
 * read from a busy disk, or the thread waiting for a CPU, took the whole
 * clock and left a new program's stacks as addresses for good
 * (tui-vitals-stack: 4,107 of 6,702 samples in one run beside a J=2
 * suite); the files' reading has a clock of its own, as long again, after
 * which no new file is read in this call.
 */
static void pend_symbolize(struct vitals_collect *vc, unsigned budget_ms,
			   int all)
{
	uint64_t cpu0 = propel_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t wall0 = propel_mono_ns(), lcpu0, lwall0;
	uint64_t cpu_max = budget_ms * 1000000ull, wall_max = 10 * cpu_max;
	int late = 0;

	vitals_sym_load_time(vc->sym, &lcpu0, &lwall0);
	for (; vc->nsym < vc->npend; vc->nsym++) {
		struct vitals_pend *p;
		int raw = 0;

		if (vc->nsym % 16 == 0)
			vitals_drain(vc->v, &vitals_collect_ops, vc);
		if (vc->nsym % 16 == 0 && !late) {
			uint64_t lcpu, lwall;

			vitals_sym_load_time(vc->sym, &lcpu, &lwall);
			late = propel_mono_ns() - wall0 - (lwall - lwall0) >=
				       wall_max ||
			       propel_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 -
					       (lcpu - lcpu0) >=
				       cpu_max;
			if (late && !all)
				break;
			if (late)
				pr_dbg("symbolizing late after %zu of %zu "
				       "samples (%.1f ms reading files)",
				       vc->nsym, vc->npend,
				       (lwall - lwall0) / 1e6);
			/* past its time, or the files' reading past its own */
			vitals_sym_set_quick(vc->sym,
					     late || lwall - lwall0 >= wall_max);
		}
		p = &vc->pend[vc->nsym]; /* the drain may have moved it */
		p->kstack = stack_text(vc, &p->raw, 0, NULL);
		p->ustack = stack_text(vc, &p->raw, 1, &raw);
		if (raw && late)
			vc->stats.unsymbolized++;
	}
	vitals_sym_set_quick(vc->sym, 0);
}

struct pend_key {
	uint64_t h;
	size_t i;
};

static int pend_key_cmp(const void *a, const void *b)
{
	const struct pend_key *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static uint64_t pend_hash(const struct vitals_pend *p)
{
	uint64_t h = PROPEL_FNV_INIT;

	h = propel_fnv(h, &p->raw.vital, sizeof(p->raw.vital));
	h = propel_fnv(h, &p->raw.tgid, sizeof(p->raw.tgid));
	h = propel_fnv(h, &p->raw.label, sizeof(p->raw.label));
	if (p->kstack)
		h = propel_fnv(h, p->kstack, strlen(p->kstack));
	h = propel_fnv(h, "|", 1);
	if (p->ustack)
		h = propel_fnv(h, p->ustack, strlen(p->ustack));
	return h;
}

/*
 * Fold the symbolized samples of epochs up to seq that are alike (vital,
 * process, label, both stacks: the later powers of t of a steady label)
 * into the first of them: n counts them, counter is the last estimate.
 * Each stored row then says something new; the epoch's totals still
 * count every sample.
 */
static void pend_fold(struct vitals_collect *vc, uint32_t seq)
{
	struct pend_key *k = malloc(vc->npend * sizeof(*k) + 1);
	size_t i, j, nk = 0;

	for (i = 0; i < vc->npend; i++)
		vc->pend[i].n = 1;
	if (!k)
		return;
	for (i = 0; i < vc->npend; i++)
		if (vc->pend[i].raw.epoch <= seq)
			k[nk++] = (struct pend_key){ pend_hash(&vc->pend[i]), i };
	qsort(k, nk, sizeof(*k), pend_key_cmp);
	for (i = 0; i < nk; i = j) {
		struct vitals_pend *lead = &vc->pend[k[i].i];

		for (j = i + 1; j < nk && k[j].h == k[i].h; j++) {
			struct vitals_pend *p = &vc->pend[k[j].i];

			if (p->raw.vital != lead->raw.vital ||
			    p->raw.tgid != lead->raw.tgid ||
			    p->raw.label != lead->raw.label ||
			    !str_eq(p->kstack, lead->kstack) ||
			    !str_eq(p->ustack, lead->ustack))
				continue; /* a hash collision: kept apart */
			lead->n++;
			if (p->raw.counter > lead->raw.counter)
				lead->raw.counter = p->raw.counter;
			p->n = 0;
		}
	}
	free(k);
}

static void write_epoch(struct vitals_collect *vc, const struct vitals_epoch *e)
{
	struct vitals_store_epoch se = {
		.run = vc->run,
		.seq = e->seq,
		.start_ns = warped(vc, e->start_ns, e->start_ns),
		.end_ns = warped(vc, e->start_ns, e->end_ns),
		.bpf_run_ns = e->bpf_run_ns,
		.user_run_ns = e->user_run_ns,
		.memfree_kb = e->memfree_kb,
		.ncpus = e->ncpus,
	};
	int64_t id;
	size_t i, keep = 0;
	uint64_t used0, used1, target;
	int err, full;

	pend_symbolize(vc, 100, 1);
	pend_fold(vc, e->seq);
	used0 = vitals_store_used_bytes(vc->st);
	err = vitals_store_begin(vc->st);
	if (err) {
		pr_dbg("epoch %u: cannot begin a transaction", e->seq);
		return;
	}
	id = vitals_store_epoch(vc->st, &se);
	if (id <= 0)
		goto fail;
	for (i = 0; i < VITALS_NR; i++)
		if (e->events[i] &&
		    vitals_store_total(vc->st, id, vitals_name(i), e->events[i],
				       e->weight[i], e->sampled[i], e->dropped[i],
				       e->tshift[i]))
			goto fail;
	for (i = 0; i < e->nrows; i++) {
		const struct vitals_row *r = &e->rows[i];

		if (vitals_store_value(vc->st, id, se.start_ns,
				       vitals_name(r->vital), r->tgid, r->uid,
				       r->comm, r->value, r->count, r->aux,
				       r->short_io))
			goto fail;
	}
	for (i = 0; i < vc->npend; i++) {
		struct vitals_pend *p = &vc->pend[i];
		struct vitals_store_sample ss;

		if (p->raw.epoch > e->seq) {
			vc->pend[keep++] = *p;
			continue;
		}
		if (!p->n) { /* folded into an earlier one */
			free(p->kstack);
			free(p->ustack);
			continue;
		}
		ss.n = p->n;
		ss.ts_ns = warped(vc, e->start_ns, p->raw.ts_ns);
		ss.weight = p->raw.weight;
		ss.counter = p->raw.counter;
		ss.label = p->raw.label;
		memcpy(ss.d, p->raw.data, sizeof(ss.d));
		ss.vital = vitals_name(p->raw.vital);
		ss.comm = p->raw.comm;
		ss.pid = p->raw.tgid;
		ss.tid = p->raw.tid;
		ss.uid = p->raw.uid;
		ss.kstack = p->kstack;
		ss.ustack = p->ustack;
		err = vitals_store_sample(vc->st, id, &ss);
		free(p->kstack);
		free(p->ustack);
		if (err)
			pr_dbg("sample lost: %d", err);
	}
	vc->npend = keep;
	vc->nsym = keep;
	if (vitals_store_commit(vc->st))
		goto fail;
	used1 = vitals_store_used_bytes(vc->st);
	/* the largest recent epoch, not the largest ever: one large epoch
	 * (a busy machine's first, every process new to it) kept room for
	 * its like free for the rest of the run, and a 0.25-MiB ring held
	 * one epoch's values of its last day (vitals-history, fcr3) */
	vc->burst -= vc->burst / 64;
	if (used1 > used0 && used1 - used0 > vc->burst)
		vc->burst = used1 - used0;
	/* beside a trace every sample and value is of a traced process:
	 * all kept whole (the size limit still holds) */
	if (vc->o.filter_fd <= 0 &&
	    vitals_summary_compact(vc->st, se.end_ns, vc->o.raw_window_ns, 0,
				   4))
		pr_dbg("epoch %u: not summarized", e->seq);
	/* room for the next epoch and its summary: the file stays under
	 * its limit (the pages freed here are what the next write takes) */
	target = vc->o.budget_bytes / 10 * 9;
	if (target > 2 * vc->burst && target - 2 * vc->burst > vc->o.budget_bytes / 2)
		target -= 2 * vc->burst;
	else if (target > vc->o.budget_bytes / 2)
		target = vc->o.budget_bytes / 2;
	vitals_store_retain(vc->st, target);
	vc->stats.epochs++;
	vc->stats.bpf_run_ns += e->bpf_run_ns;
	vc->stats.user_run_ns += e->user_run_ns;
	if (vc->stats.epochs % 30 == 0)
		vitals_sym_forget(vc->sym); /* pids come and go, exec remaps */
	if (vc->o.on_epoch)
		vc->o.on_epoch(vc->o.arg, id);
	return;
fail:
	pr_dbg("epoch %u not stored: %s", e->seq,
	       sqlite3_errmsg(session_db(vc->sess)));
	full = sqlite3_errcode(session_db(vc->sess)) == SQLITE_FULL;
	session_exec(vc->sess, "ROLLBACK", NULL);
	if (full) {
		/* at the size limit: make more room for the next ones */
		vc->stats.epochs_full++;
		vc->burst += vc->burst / 2 + 4096;
		vitals_store_retain(vc->st, vc->o.budget_bytes / 2);
	}
}

static void on_epoch(void *arg, const struct vitals_epoch *e)
{
	write_epoch(arg, e);
}

static const struct vitals_sink_ops vitals_collect_ops = { on_sample,
							   on_epoch };

static void *vitals_collect_main(void *arg)
{
	struct vitals_collect *vc = arg;

	/* This thread drains the kernel's ring: on a loaded machine it must
	 * get a CPU soon after it is woken, or samples are dropped.  Its own
	 * work is small (a copy per sample, libdw and sqlite once per epoch
	 * and per new address), so a higher weight costs others little. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10))
		pr_dbg("cannot raise the collector thread's priority: %s",
		       strerror(errno));

	/* one wake-up per epoch (or when the kernel's ring is half full, or
	 * to stop: vitals_collect_stop wakes it) */
	while (!vc->stopping) {
		int err = vitals_poll(vc->v, -1, &vitals_collect_ops, vc);

		pend_symbolize(vc, 50, 0);
		if (err && err != -EINTR) {
			vc->err = err;
			break;
		}
	}
	vitals_flush(vc->v, &vitals_collect_ops, vc);
	return NULL;
}

static const char *state_name(int st)
{
	return st == VITALS_ON ? "on" : st == VITALS_COARSE ? "coarse" : "off";
}

int vitals_collect_start(struct session *s,
			 const struct vitals_collect_opts *o,
			 struct vitals_collect **out, char **cause)
{
	struct vitals_collect *vc = calloc(1, sizeof(*vc));
	struct vitals_opts vo = { 0 };
	size_t len;
	int err, i;

	if (!vc)
		return propel_cause(cause, -ENOMEM, "out of memory");
	if (o)
		vc->o = *o;
	if (!vc->o.epoch_ms)
		vc->o.epoch_ms = 1000;
	if (!vc->o.budget_bytes)
		vc->o.budget_bytes = 64ull << 20;
	if (!vc->o.raw_window_ns)
		vc->o.raw_window_ns = 10ull * 1000000000ull;
	vc->warp = 1;
	if (getenv("PROPEL_VITALS_WARP")) {
		vc->warp = atof(getenv("PROPEL_VITALS_WARP"));
		if (!(vc->warp >= 1 && vc->warp <= 1e7)) {
			err = propel_cause(cause, -EINVAL,
					   "PROPEL_VITALS_WARP: want 1 to 1e7");
			goto fail;
		}
	}
	vc->warp_base = propel_real_ns();
	vo.epoch_ms = vc->o.epoch_ms;
	vo.cpu_hz = vc->o.cpu_hz;
	vo.proc_only = vc->o.proc_only;
	vo.disable = vc->o.disable;
	vo.profile = vc->o.profile;
	vo.filter_fd = vc->o.filter_fd;

	err = session_open(session_path(s), SESSION_WRITE, &vc->sess, cause);
	if (err)
		goto fail;
	err = vitals_store_new(vc->sess, &vc->st, cause);
	if (err)
		goto fail;
	/* one transaction per epoch without an fsync each (four per commit,
	 * each a sleep of this thread): a crash of propel loses nothing the
	 * kernel has, a crash of the machine at most the last epochs, as for a
	 * session this command created (engine/session.c) */
	session_exec(vc->sess, "PRAGMA synchronous=OFF", NULL);
	/* the hard limit, vitals_store_retain keeping below it.  It binds
	 * this connection only (a trace written beside is not limited); not
	 * on a session that other data already made larger, where every
	 * write would fail: retention alone there.  (The vitals schema alone
	 * is 30-32 pages: a test against half the budget left a 256 KiB
	 * file unlimited whenever it was 32, and it grew to 344 KiB.) */
	if (vitals_store_used_bytes(vc->st) < vc->o.budget_bytes)
		vitals_store_limit(vc->st, vc->o.budget_bytes);
	vc->sym = vitals_sym_new();
	if (!vc->sym) {
		err = propel_cause(cause, -ENOMEM, "out of memory");
		goto fail;
	}
	err = vitals_open(&vo, &vc->v, cause);
	if (err)
		goto fail;
	err = vitals_store_run_begin(vc->st, vitals_source(vc->v),
				     vc->o.epoch_ms, vitals_notes(vc->v),
				     &vc->run);
	if (err) {
		propel_cause(cause, err, "%s: %s", session_path(s),
			     sqlite3_errmsg(session_db(vc->sess)));
		goto fail;
	}
	snprintf(vc->summary, sizeof(vc->summary), "vitals via %s",
		 vitals_source(vc->v));
	for (i = 0; i < VITALS_NR; i++) {
		const char *why = "";
		int stt = vitals_status(vc->v, i, &why);

		vitals_store_status(vc->st, vc->run, vitals_name(i),
				    state_name(stt), why);
		if (stt != VITALS_ON) {
			len = strlen(vc->summary);
			snprintf(vc->summary + len, sizeof(vc->summary) - len,
				 "; %s %s%s%s", vitals_name(i), state_name(stt),
				 why[0] ? ": " : "", why);
		}
	}
	if (vitals_notes(vc->v)[0]) {
		len = strlen(vc->summary);
		snprintf(vc->summary + len, sizeof(vc->summary) - len, "; %s",
			 vitals_notes(vc->v));
	}
	vc->stats.kernel_bytes = vitals_kernel_bytes(vc->v,
						     &vc->stats.kernel_bytes_vital);
	if (vitals_sys_hook(vc->v)) {
		len = strlen(vc->summary);
		snprintf(vc->summary + len, sizeof(vc->summary) - len,
			 "; syscalls via %s", vitals_sys_hook(vc->v));
	}
	vc->t0 = propel_mono_ns();
	err = pthread_create(&vc->thread, NULL, vitals_collect_main, vc);
	if (err) {
		err = propel_cause(cause, -err, "starting the vitals thread");
		goto fail;
	}
	vc->started = 1;
	*out = vc;
	return 0;
fail:
	vitals_close(vc->v);
	vitals_sym_free(vc->sym);
	vitals_store_free(vc->st);
	if (vc->sess)
		session_close(vc->sess);
	free(vc);
	return err;
}

int vitals_collect_stop(struct vitals_collect *vc,
			struct vitals_collect_stats *stats, char **cause)
{
	size_t i;
	int err;

	if (!vc)
		return 0;
	vc->stopping = 1;
	if (vc->started) {
		vitals_wake(vc->v);
		pthread_join(vc->thread, NULL);
	}
	vc->stats.wall_ns = propel_mono_ns() - vc->t0;
	vitals_store_run_end(vc->st, vc->run);
	vc->stats.file_bytes = vitals_store_used_bytes(vc->st);
	vc->stats.ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	vc->stats.nprogs = vitals_prog_stats(vc->v, vc->stats.progs,
					     VITALS_COLLECT_MAX_PROGS);
	if (stats)
		*stats = vc->stats;
	err = vc->err;
	if (err)
		propel_cause(cause, err, "collecting vitals: %s", strerror(-err));
	for (i = 0; i < vc->npend; i++) {
		free(vc->pend[i].kstack);
		free(vc->pend[i].ustack);
	}
	free(vc->pend);
	vitals_close(vc->v);
	vitals_sym_free(vc->sym);
	vitals_store_free(vc->st);
	session_close(vc->sess);
	free(vc);
	return err;
}

const char *vitals_collect_summary(struct vitals_collect *vc)
{
	return vc->summary;
}

