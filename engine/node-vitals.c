/*
 * engine/node-vitals.c - see engine/node-vitals.h.
 *
 * Threads: the caller's (start, get, stop) and the poller
 * (node_vitals_main), which owns the collectors and `cur`.  The poller
 * adds each span to cur (by tgid), and once a second moves cur into
 * `pub` under the lock; each vital-sign epoch replaces the syscall rates
 * of pub's twin table `sys` under the same lock.  Tables are open-address
 * hashes of NV_SLOTS entries: a node with more processes than that loses
 * the newest ones' figures for the second (shown as unknown, never as
 * another's).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/node-vitals.h"
#include "kmod/offcpu.h"
#include "kmod/vitals-collector.h"
#include "share/clock.h"
#include "share/proc.h"
#include "share/procs.h"

#define NV_SLOTS 8192        /* processes per table (a power of 2) */
#define NV_WINDOW_NS 1000000000ull
#define NV_POLL_MS 200

struct nv_proc {
	int tgid; /* 0: free */
	uint64_t off_ns[OFFCPU_NREASONS];
	uint16_t nr[OFFCPU_NREASONS]; /* the last span's system call */
	double sys_s; /* syscalls per second (table `sys` only) */
};

struct node_vitals {
	struct offcpu *oc;
	struct vitals *v;
	const char *missing; /* static text, or why (owned) */
	char *why_owned;
	pthread_t thread; /* loads the collectors, then polls them */
	int started;
	volatile int stopping;
	pthread_mutex_t lock;
	struct nv_proc *cur, *pub;   /* NV_SLOTS each */
	struct nv_proc *sys;         /* NV_SLOTS: sys_s only */
	int sys_known;               /* an epoch has come */
	uint64_t next_turn;
};

static unsigned nv_hash(int tgid)
{
	return ((unsigned)tgid * 2654435761u) & (NV_SLOTS - 1);
}

static struct nv_proc *nv_find(struct nv_proc *t, int tgid, int add)
{
	unsigned h = nv_hash(tgid), i;

	for (i = 0; i < NV_SLOTS; i++, h = (h + 1) & (NV_SLOTS - 1)) {
		if (t[h].tgid == tgid)
			return &t[h];
		if (!t[h].tgid) {
			if (!add)
				return NULL;
			t[h].tgid = tgid;
			return &t[h];
		}
	}
	return NULL;
}

static void nv_span(void *arg, const struct offcpu_span *s)
{
	struct node_vitals *nv = arg;
	struct nv_proc *p;
	unsigned r = s->reason < OFFCPU_NREASONS ? s->reason : OFFCPU_OTHER;

	if (s->kind != OFFCPU_EV_SPAN || !s->tgid)
		return;
	p = nv_find(nv->cur, (int)s->tgid, 1);
	if (!p)
		return;
	/* a span longer than the window counts as the window: a 5 s sleep
	 * that ends now says "sleep", not five times more than the rest */
	p->off_ns[r] += s->dur_ns < NV_WINDOW_NS ? s->dur_ns : NV_WINDOW_NS;
	p->nr[r] = s->nr;
}

static void nv_epoch(void *arg, const struct vitals_epoch *e)
{
	struct node_vitals *nv = arg;
	double secs = e->end_ns > e->start_ns ? (e->end_ns - e->start_ns) / 1e9
					      : 1.0;
	size_t i;

	pthread_mutex_lock(&nv->lock);
	memset(nv->sys, 0, NV_SLOTS * sizeof(*nv->sys));
	for (i = 0; i < e->nrows; i++) {
		const struct vitals_row *r = &e->rows[i];
		struct nv_proc *t;

		if (r->vital != VITALS_SYSCALL || !r->tgid)
			continue;
		t = nv_find(nv->sys, (int)r->tgid, 1);
		if (t)
			t->sys_s += r->value / secs;
	}
	nv->sys_known = 1;
	pthread_mutex_unlock(&nv->lock);
}

static void nv_sample(void *arg, const struct vitals_sample *s)
{
	(void)arg, (void)s; /* the rates are enough here */
}

static const struct vitals_sink_ops nv_ops = {
	.sample = nv_sample,
	.epoch = nv_epoch,
};

static void nv_turn(struct node_vitals *nv)
{
	struct nv_proc *t;

	pthread_mutex_lock(&nv->lock);
	t = nv->pub;
	nv->pub = nv->cur;
	nv->cur = t;
	pthread_mutex_unlock(&nv->lock);
	memset(nv->cur, 0, NV_SLOTS * sizeof(*nv->cur));
}

/* What is missing (NULL: nothing), under the lock: the poller says it
 * once the collectors are loaded; owned, when not NULL, is freed with nv. */
static void nv_say(struct node_vitals *nv, const char *missing, char *owned)
{
	pthread_mutex_lock(&nv->lock);
	nv->missing = missing;
	nv->why_owned = owned;
	pthread_mutex_unlock(&nv->lock);
}

/* The collectors' loads take a few hundred ms: here, so the console's
 * first screen does not wait for them. */
static void nv_open(struct node_vitals *nv)
{
	struct offcpu_opts oo = { .all = 1 };
	struct vitals_opts vo = { 0 };
	const char *why = NULL;
	char *cause = NULL;

	if (offcpu_open(&oo, &nv->oc, &cause)) {
		nv->oc = NULL;
		nv_say(nv, cause ? cause : "BPF refused", cause);
		return;
	}
	/* only the syscall counter: the other vital signs cost what this
	 * view would not show */
	vo.epoch_ms = 1000;
	/* the counts are exact whatever t; the samples go unread: few */
	vo.tshift = 16;
	vo.high_wm = 0.002;
	vo.low_wm = 0.0005;
	vo.disable = "cpu,l2miss,sched,block,blkio,kmem,umem,signal,sock,lock";
	if (vitals_open(&vo, &nv->v, &cause)) {
		nv->v = NULL;
		nv_say(nv, cause ? cause : "BPF refused", cause);
	} else if (vitals_status(nv->v, VITALS_SYSCALL, &why) != VITALS_ON) {
		nv_say(nv, "no syscall counter", NULL);
	} else {
		nv_say(nv, NULL, NULL);
	}
}

static void *node_vitals_main(void *arg)
{
	struct node_vitals *nv = arg;

	nv_open(nv);
	nv->next_turn = propel_mono_ns() + NV_WINDOW_NS;
	while (!nv->stopping && nv->oc) {
		uint64_t now;

		/* sleep, then read what came: waiting in the ring's poll
		 * would wake this thread at each span of the node */
		usleep(NV_POLL_MS * 1000);
		if (offcpu_poll(nv->oc, 0, nv_span, nv) < 0)
			break;
		if (nv->v && vitals_poll(nv->v, 0, &nv_ops, nv) < 0)
			break;
		now = propel_mono_ns();
		if (now >= nv->next_turn) {
			nv->next_turn = now + NV_WINDOW_NS;
			nv_turn(nv);
		}
	}
	return NULL;
}

int node_vitals_start(struct node_vitals **out)
{
	struct node_vitals *nv = calloc(1, sizeof(*nv));
	const char *why = NULL;

	*out = NULL;
	if (!nv)
		return -ENOMEM;
	pthread_mutex_init(&nv->lock, NULL);
	nv->cur = calloc(NV_SLOTS, sizeof(*nv->cur));
	nv->pub = calloc(NV_SLOTS, sizeof(*nv->pub));
	nv->sys = calloc(NV_SLOTS, sizeof(*nv->sys));
	if (!nv->cur || !nv->pub || !nv->sys) {
		node_vitals_stop(nv);
		return -ENOMEM;
	}
	*out = nv;
	if (!procs_bpf_allowed(&why)) {
		nv->missing = why;
		return 0;
	}
	nv->missing = "BPF loading";
	if (pthread_create(&nv->thread, NULL, node_vitals_main, nv)) {
		nv->missing = "no thread";
		return 0;
	}
	nv->started = 1;
	return 0;
}

void node_vitals_stop(struct node_vitals *nv)
{
	if (!nv)
		return;
	nv->stopping = 1; /* seen within NV_POLL_MS */
	if (nv->started)
		pthread_join(nv->thread, NULL);
	if (nv->v)
		vitals_close(nv->v);
	if (nv->oc)
		offcpu_close(nv->oc);
	pthread_mutex_destroy(&nv->lock);
	free(nv->cur);
	free(nv->pub);
	free(nv->sys);
	free(nv->why_owned);
	free(nv);
}

const char *node_vitals_missing(struct node_vitals *nv)
{
	const char *m;

	if (!nv)
		return "not started";
	pthread_mutex_lock(&nv->lock);
	m = nv->missing;
	pthread_mutex_unlock(&nv->lock);
	return m;
}

static void nv_name(char *buf, size_t n, const char *pre, unsigned nr)
{
	const char *s = nr == OFFCPU_NO_SYSCALL ? NULL : offcpu_syscall_name(nr);

	if (s)
		snprintf(buf, n, "%s%s", pre, s);
	else if (nr != OFFCPU_NO_SYSCALL)
		snprintf(buf, n, "%ssyscall %u", pre, nr);
	else
		snprintf(buf, n, "%s", pre);
}

void node_vitals_get(struct node_vitals *nv, int tgid, char state,
		     struct node_vital *out)
{
	struct nv_proc p = { 0 };
	int have = 0, best = -1, r;
	long nr;

	out->syscalls_s = -1;
	out->why[0] = 0;
	if (nv && nv->started) {
		const struct nv_proc *q;
		const struct nv_proc *t;

		pthread_mutex_lock(&nv->lock);
		q = nv_find(nv->pub, tgid, 0);
		if (q) {
			p = *q;
			have = 1;
		}
		if (nv->v && nv->sys_known) {
			t = nv_find(nv->sys, tgid, 0);
			out->syscalls_s = t ? t->sys_s : 0;
		}
		pthread_mutex_unlock(&nv->lock);
	}
	for (r = 0; have && r < OFFCPU_NREASONS; r++)
		if (p.off_ns[r] && (best < 0 || p.off_ns[r] > p.off_ns[best]))
			best = r;
	if (best >= 0) {
		char pre[24];

		snprintf(pre, sizeof(pre), "%s ", offcpu_reason_name(best));
		if (best == OFFCPU_RUNQ || p.nr[best] == OFFCPU_NO_SYSCALL)
			snprintf(out->why, sizeof(out->why), "%s",
				 offcpu_reason_name(best));
		else
			nv_name(out->why, sizeof(out->why), pre, p.nr[best]);
		return;
	}
	/* no span ended: a sleeper in one long wait (or no BPF) */
	if (state != 'S' && state != 'D')
		return;
	nr = propel_proc_syscall(tgid);
	if (nr >= 0)
		nv_name(out->why, sizeof(out->why), "in ", (unsigned)nr);
}
