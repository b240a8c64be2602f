/*
 * analysis/vitals-rules.c - chopstix §3.2 rules and the EWMA detector over
 * in-memory epochs (see analysis/vitals-rules.h).  Pure: no I/O.
 *
 * Values are turned into rates first: cpu as a share of one core, sched and
 * block as a share of the epoch, the rest per second.  Each rule appends
 * flags naming the epoch, the process and the numbers that made it fire.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/vitals-rules.h"

int vitals_rules_vital(const char *name)
{
	return propel_vital_lookup(name);
}

const char *vitals_rules_name(int vital)
{
	return propel_vital_name(vital);
}

void vitals_rules_epochs_free(struct vitals_rules_epoch *ep, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(ep[i].procs);
	free(ep);
}

void vitals_rules_defaults(struct vitals_rules_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cpu_hz = 1000;
	o->busy_cpu = 0.3;
	o->block_frac = 0.1;
	o->sched_frac = 0.3;
	o->syscall_rate = 20000;
	o->leak_epochs = 4;
	o->leak_pages = 100;
	o->ewma_alpha = 0.3;
	o->ewma_k = 3;
	o->ewma_warmup = 5;
	o->umem_rate = 2000;
	o->init_epochs = 3;
}

struct flags {
	struct vitals_rules_flag *f;
	size_t n, cap;
	int err;
};

static void flag(struct flags *fl, const char *rule, size_t epoch,
		 const struct vitals_rules_proc *p, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void flag(struct flags *fl, const char *rule, size_t epoch,
		 const struct vitals_rules_proc *p, const char *fmt, ...)
{
	struct vitals_rules_flag *f;
	va_list ap;

	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? 2 * fl->cap : 32;
		struct vitals_rules_flag *nf = realloc(fl->f, cap * sizeof(*nf));

		if (!nf) {
			fl->err = -ENOMEM;
			return;
		}
		fl->f = nf;
		fl->cap = cap;
	}
	f = &fl->f[fl->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->rule, sizeof(f->rule), "%s", rule);
	f->epoch = epoch;
	if (p) {
		f->pid = p->pid;
		snprintf(f->comm, sizeof(f->comm), "%s", p->comm);
	}
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

static double secs(const struct vitals_rules_epoch *e)
{
	double s = (double)(e->end_ns - e->start_ns) / 1e9;

	return s > 0.001 ? s : 0.001;
}

static const struct vitals_rules_proc *find_proc(const struct vitals_rules_epoch *e,
						 uint32_t pid)
{
	size_t i;

	for (i = 0; i < e->nprocs; i++)
		if (e->procs[i].pid == pid)
			return &e->procs[i];
	return NULL;
}

/* Rule 9 for process p, whose user page faults are high in epoch k. */
static void rule_umem(const struct vitals_rules_epoch *ep, size_t k,
		      const struct vitals_rules_opts *o, struct flags *fl,
		      const struct vitals_rules_proc *p, double cpu)
{
	double s = secs(&ep[k]), umem = p->v[VR_UMEM] / s;
	const struct vitals_rules_proc *q;
	size_t age = 0;

	if (o->have_l2) {
		/* misses per fault: memory traffic beyond the touching */
		double l2 = p->v[VR_L2MISS] / s;

		if (l2 < umem)
			flag(fl, "initialization", k, p,
			     "rule 9: %.0f user page faults/s with few cache "
			     "misses (%.0f/s): initializing data structures",
			     umem, l2);
		else
			flag(fl, "increasing-load", k, p,
			     "rule 9: %.0f user page faults/s with %.0f cache "
			     "misses/s: memory paged in under load",
			     umem, l2);
		return;
	}
	while (age < k && (q = find_proc(&ep[k - age - 1], p->pid)))
		age++;
	/* young: absent from an epoch this recording saw (a process present
	 * since the first epoch has no known age) */
	if ((int)age < o->init_epochs && age < k) {
		flag(fl, "initialization", k, p,
		     "rule 9: %.0f user page faults/s in its first %zu epoch(s) "
		     "of life (no cache-miss counter here: judged by age): "
		     "initializing",
		     umem, age + 1);
		return;
	}
	if (k == 0)
		return; /* nothing to compare with */
	q = find_proc(&ep[k - 1], p->pid);
	if (q && cpu > 1.2 * q->v[VR_CPU] / (o->cpu_hz * secs(&ep[k - 1])) &&
	    cpu >= 0.05)
		flag(fl, "increasing-load", k, p,
		     "rule 9: %.0f user page faults/s and cpu up to %.0f%% of a "
		     "core from %.0f%% (no cache-miss counter here): memory "
		     "paged in under growing load",
		     umem, 100 * cpu,
		     100 * q->v[VR_CPU] / (o->cpu_hz * secs(&ep[k - 1])));
}

static void rules_epoch(const struct vitals_rules_epoch *ep, size_t k,
			const struct vitals_rules_opts *o, struct flags *fl)
{
	const struct vitals_rules_epoch *e = &ep[k];
	double s = secs(e), sys_cpu = 0, ncpu = e->ncpus ? e->ncpus : 1;
	double proc_cpu_delayed = 0, sched_total = 0;
	size_t i;

	for (i = 0; i < e->nprocs; i++) {
		sys_cpu += e->procs[i].v[VR_CPU] / (o->cpu_hz * s);
		sched_total += e->procs[i].v[VR_SCHED] / (s * 1e6);
	}
	for (i = 0; i < e->nprocs; i++) {
		const struct vitals_rules_proc *p = &e->procs[i];
		double cpu = p->v[VR_CPU] / (o->cpu_hz * s);
		double sched = p->v[VR_SCHED] / (s * 1e6);
		double block = p->v[VR_BLOCK] / (s * 1e6);
		double sysc = p->v[VR_SYSCALL] / s;
		double pages = (p->v[VR_UMEM] + p->v[VR_KMEM]) / s;

		if (sched >= o->sched_frac)
			proc_cpu_delayed += cpu;
		/* rule 1: by demand (ran + waited to run), so that a loop
		 * sharing a crowded CPU is still seen as one */
		if (cpu + sched >= o->busy_cpu && cpu >= 0.02) {
			if (o->have_l2 && p->v[VR_L2MISS] / s < 10 * cpu)
				flag(fl, "busy-loop", k, p,
				     "rule 1: cpu %.0f%% of a core with almost no "
				     "cache misses (%.0f/s)",
				     100 * cpu, p->v[VR_L2MISS] / s);
			else if (!o->have_l2 && sysc < 1000 * cpu &&
				 pages < 100 * cpu)
				flag(fl, "busy-loop", k, p,
				     "rule 1: cpu %.0f%% of a core (runnable %.0f%%); "
				     "no cache-miss counter here, but only %.0f "
				     "syscalls/s and %.0f pages/s: a loop that stays "
				     "in user space",
				     100 * cpu, 100 * (cpu + sched), sysc, pages);
		}
		/* rule 5 */
		if (block >= o->block_frac) {
			char by[160] = "";
			size_t l = 0;

			if (p->v[VR_BLKIO] > 0)
				l += snprintf(by + l, sizeof(by) - l,
					      "%sdisk I/O (%.0f sectors)",
					      l ? ", " : "", p->v[VR_BLKIO]);
			if (p->v[VR_LOCK] > 0 && l < sizeof(by))
				l += snprintf(by + l, sizeof(by) - l,
					      "%slocks (%.0f us)", l ? ", " : "",
					      p->v[VR_LOCK]);
			if (p->v[VR_SOCK] > 0 && l < sizeof(by))
				l += snprintf(by + l, sizeof(by) - l,
					      "%ssockets (%.0f bytes)",
					      l ? ", " : "", p->v[VR_SOCK]);
			flag(fl, "blocking", k, p,
			     "rule 5: blocked %.0f%% of the epoch; %s%s",
			     100 * block, l ? "mirrored by " : "",
			     l ? by : "not mirrored by disk I/O, locks or sockets");
			/* rule 6 */
			if (p->v[VR_UMEM] / s >= 1000 && p->v[VR_BLKIO] > 0)
				flag(fl, "memory-pressure", k, p,
				     "rule 6: %.0f user page faults/s while blocked "
				     "%.0f%% on disk I/O: low memory, swapping",
				     p->v[VR_UMEM] / s, 100 * block);
		}
		/* rule 7 */
		if (sched >= o->sched_frac && cpu < o->busy_cpu + 0.5)
			flag(fl, "held", k, p,
			     "rule 7: waited to run %.0f%% of the epoch, ran "
			     "%.0f%% of a core; system cpu %.0f%% of %u cores: "
			     "held %s",
			     100 * sched, 100 * cpu, 100 * sys_cpu / ncpu,
			     e->ncpus, sys_cpu / ncpu >= 0.8
					       ? "normally (fair sharing of the CPU)"
					       : "abnormally (CPU was idle)");
		/* rule 3 */
		if (p->short_io > 0)
			flag(fl, "bad-blocks", k, p,
			     "rule 3: %.0f of %.0f block requests answered with "
			     "fewer bytes than asked for or an error: bad blocks "
			     "on the disk?",
			     p->short_io, p->blkio_reqs);
		/* rule 9 */
		if (p->v[VR_UMEM] / s >= o->umem_rate)
			rule_umem(ep, k, o, fl, p, cpu);
		/* rule 8 */
		if (sysc >= o->syscall_rate &&
		    p->v[VR_KMEM] < 0.01 * p->v[VR_SYSCALL])
			flag(fl, "syscall-loop", k, p,
			     "rule 8: %.0f syscalls/s but %.0f kernel pages: a "
			     "loop around a system call that does little",
			     sysc, p->v[VR_KMEM]);
		/* rule 2 */
		if (pages >= o->leak_pages && (int)k + 1 >= o->leak_epochs) {
			int j, steady = 1;

			for (j = 1; j < o->leak_epochs && steady; j++) {
				const struct vitals_rules_proc *q =
					find_proc(&ep[k - j], p->pid);

				if (!q || (q->v[VR_UMEM] + q->v[VR_KMEM]) /
							  secs(&ep[k - j]) <
						  o->leak_pages)
					steady = 0;
			}
			if (steady)
				flag(fl, "leak", k, p,
				     "rule 2: allocated %.0f pages/s in each of %d "
				     "epochs without pause: net memory grows",
				     pages, o->leak_epochs);
		}
	}
	/* rule 4 */
	if (sys_cpu / ncpu >= 0.8 && sched_total >= 0.5 * ncpu &&
	    proc_cpu_delayed < 0.2)
		flag(fl, "kernel-bottleneck", k, NULL,
		     "rule 4: system cpu %.0f%%, processes waiting %.1f "
		     "cores' worth, yet the delayed ones ran %.0f%% of a core",
		     100 * sys_cpu / ncpu, sched_total, 100 * proc_cpu_delayed);
}

static void rule_death(const struct vitals_rules_epoch *ep, size_t n,
		       struct flags *fl)
{
	size_t k, i;

	/* present in epochs k-3..k-1 (three in a row), absent from k on */
	for (k = 3; k < n; k++) {
		const struct vitals_rules_epoch *prev = &ep[k - 1];

		for (i = 0; i < prev->nprocs; i++) {
			const struct vitals_rules_proc *p = &prev->procs[i];
			size_t j;
			int gone = 1;

			if (!find_proc(&ep[k - 2], p->pid) ||
			    !find_proc(&ep[k - 3], p->pid))
				continue;
			for (j = k; j < n && gone; j++)
				if (find_proc(&ep[j], p->pid))
					gone = 0;
			if (!gone)
				continue;
			if (p->v[VR_SIGNAL] > 0)
				flag(fl, "death", k, p,
				     "rule 10: vitals vanished after %zu epochs; "
				     "%.0f signal(s) delivered in its last epoch "
				     "(see its signal samples for which)",
				     k, p->v[VR_SIGNAL]);
			else
				flag(fl, "death", k, p,
				     "rule 10: vitals vanished; no signal in its "
				     "last epoch: exited by itself or was killed "
				     "(SIGKILL is not delivered to a handler)");
		}
	}
}

static void rule_ewma(const struct vitals_rules_epoch *ep, size_t n,
		      const struct vitals_rules_opts *o, struct flags *fl)
{
	double mean[VR_NR] = { 0 }, var[VR_NR] = { 0 };
	size_t k, i;
	int v;

	for (k = 0; k < n; k++) {
		double tot[VR_NR] = { 0 }, s = secs(&ep[k]);

		for (i = 0; i < ep[k].nprocs; i++)
			for (v = 0; v < VR_NR; v++)
				tot[v] += ep[k].procs[i].v[v] / s;
		for (v = 0; v < VR_NR; v++) {
			double x = tot[v], d = x - mean[v];

			if (k == 0) {
				mean[v] = x;
				continue;
			}
			if ((int)k >= o->ewma_warmup &&
			    d > o->ewma_k * sqrt(var[v]) && x > 1.5 * mean[v] &&
			    x > 0) {
				struct vitals_rules_proc sys = { 0 };

				snprintf(sys.comm, sizeof(sys.comm), "%s",
					 propel_vital_name(v));
				flag(fl, "ewma", k, &sys,
				     "%s at %.0f/s, moving average %.0f/s "
				     "(+%.1f deviations)",
				     propel_vital_name(v), x, mean[v],
				     var[v] > 0 ? d / sqrt(var[v]) : 99.0);
			}
			mean[v] += o->ewma_alpha * d;
			var[v] = (1 - o->ewma_alpha) *
				 (var[v] + o->ewma_alpha * d * d);
		}
	}
}

static int flag_cmp(const void *a, const void *b)
{
	const struct vitals_rules_flag *x = a, *y = b;

	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return strcmp(x->rule, y->rule);
}

int vitals_rules_run(const struct vitals_rules_epoch *ep, size_t n,
		     const struct vitals_rules_opts *opts,
		     struct vitals_rules_flag **out, size_t *nout)
{
	struct vitals_rules_opts o;
	struct flags fl = { 0 };
	size_t k;

	if (opts)
		o = *opts;
	else
		vitals_rules_defaults(&o);
	for (k = 0; k < n; k++)
		rules_epoch(ep, k, &o, &fl);
	rule_death(ep, n, &fl);
	rule_ewma(ep, n, &o, &fl);
	if (fl.err) {
		free(fl.f);
		return fl.err;
	}
	if (fl.n)
		qsort(fl.f, fl.n, sizeof(*fl.f), flag_cmp);
	*out = fl.f;
	*nout = fl.n;
	return 0;
}
