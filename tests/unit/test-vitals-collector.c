/*
 * tests/unit/test-vitals-collector.c - the collector (kmod/vitals.c) loads,
 * attaches, counts this test's own child's syscalls and page faults in the
 * right process, samples them with stacks, and swaps epochs so that the
 * second epoch does not repeat the first one's counts.
 * Needs root and BPF; SKIPs without them (and says which vital is off why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kmod/vitals-collector.h"

struct acc {
	pid_t child;
	uint64_t sys_child, umem_child, nsamples, child_samples, with_ustack;
	uint64_t with_kstack;
	int epochs;
	uint64_t first_sys;
};

static void on_sample(void *arg, const struct vitals_sample *s)
{
	struct acc *a = arg;

	a->nsamples++;
	if ((pid_t)s->tgid == a->child) {
		a->child_samples++;
		if (s->ustack_bytes > 0)
			a->with_ustack++;
		if (s->kstack_bytes > 0)
			a->with_kstack++;
	}
}

static void on_epoch(void *arg, const struct vitals_epoch *e)
{
	struct acc *a = arg;
	size_t i;
	uint64_t sys = 0;

	for (i = 0; i < e->nrows; i++) {
		if ((pid_t)e->rows[i].tgid != a->child)
			continue;
		if (e->rows[i].vital == VITALS_SYSCALL)
			sys += e->rows[i].value;
		if (e->rows[i].vital == VITALS_UMEM)
			a->umem_child += e->rows[i].value;
	}
	if (a->epochs == 0)
		a->first_sys = sys;
	a->sys_child += sys;
	a->epochs++;
}

int main(void)
{
	/* how many PASS/FAIL lines follow (tests/run.sh holds us to it) */
	printf("CHECKS 5\n");
	fflush(stdout);
	struct vitals_opts o = { .epoch_ms = 400 };
	struct vitals_sink_ops ops = { on_sample, on_epoch };
	struct acc a = { 0 };
	struct vitals *v;
	char *cause = NULL;
	const char *why;
	int i, st;

	if (geteuid() != 0) {
		printf("SKIP vitals-collector: needs root\n");
		return 0;
	}
	if (vitals_open(&o, &v, &cause)) {
		printf("FAIL vitals-collector-open: %s\n", cause);
		return 1;
	}
	if (strcmp(vitals_source(v), "bpf") != 0) {
		printf("SKIP vitals-collector: BPF unavailable: %s\n",
		       vitals_notes(v));
		vitals_close(v);
		return 0;
	}
	printf("PASS vitals-collector-open\n");
	for (i = 0; i < VITALS_NR; i++)
		if (vitals_status(v, i, &why) != VITALS_ON)
			printf("# %s off: %s\n", vitals_name(i), why);
	printf("# kernel memory %llu bytes\n",
	       (unsigned long long)vitals_kernel_bytes(v, NULL));

	a.child = fork();
	if (a.child == 0) {
		/* 20000 getppid calls and 2000 fresh pages, then exit */
		char *m = mmap(NULL, 2000 * 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int k;

		for (k = 0; k < 20000; k++)
			getppid();
		for (k = 0; k < 2000; k++)
			m[k * 4096] = 1;
		_exit(0);
	}
	waitpid(a.child, &st, 0);
	vitals_flush(v, &ops, &a);
	vitals_flush(v, &ops, &a);
	printf("# child syscalls %llu (first epoch %llu) umem %llu samples %llu "
	       "(child %llu, ustack %llu, kstack %llu)\n",
	       (unsigned long long)a.sys_child,
	       (unsigned long long)a.first_sys,
	       (unsigned long long)a.umem_child,
	       (unsigned long long)a.nsamples,
	       (unsigned long long)a.child_samples,
	       (unsigned long long)a.with_ustack,
	       (unsigned long long)a.with_kstack);
	if (a.sys_child >= 20000 && a.sys_child < 20100)
		printf("PASS vitals-collector-syscall-count\n");
	else
		printf("FAIL vitals-collector-syscall-count: %llu, want 20000..20100\n",
		       (unsigned long long)a.sys_child);
	if (a.first_sys == a.sys_child)
		printf("PASS vitals-collector-epoch-swap\n");
	else
		printf("FAIL vitals-collector-epoch-swap: second epoch repeated counts\n");
	if (a.umem_child >= 2000)
		printf("PASS vitals-collector-umem\n");
	else
		printf("FAIL vitals-collector-umem: %llu faults, want >= 2000\n",
		       (unsigned long long)a.umem_child);
	/* log sampling: 20000 calls from few sites -> tens of samples, not
	 * thousands, and at least one per site */
	if (a.child_samples > 0 && a.child_samples < 2000 && a.with_ustack > 0)
		printf("PASS vitals-collector-log-sampling\n");
	else
		printf("FAIL vitals-collector-log-sampling: %llu child samples, "
		       "%llu with user stacks\n",
		       (unsigned long long)a.child_samples,
		       (unsigned long long)a.with_ustack);
	vitals_close(v);
	return 0;
}
