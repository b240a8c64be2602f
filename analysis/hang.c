/*
 * analysis/hang.c - see analysis/hang.h.
 *
 * Three passes: the threads (each walked once with a stack of open
 * entries by depth: the call each is in at its end, and the longest
 * returned call of every function), the channels (the comm records
 * sorted by channel and time: what each process sent and read on each,
 * the waits that ended, then the waits still open at the end), and the
 * processes (their state, their oldest wait, the chains).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hang.h"

#define HANG_MAXPARTY 16

struct hg_proc {
	int64_t pid;
	int prog;	   /* index in the program names */
	uint32_t exe;
	enum hang_state state;
	int status;
	int64_t last_ns, state_ns;
	uint32_t last_ev;  /* its last event (a fatal signal's first) */
	int64_t last_ev_ns;
	int last_sig;
	size_t thread;	   /* earliest stopped thread, SIZE_MAX none */
	/* the oldest wait (has_edge: on a traced process, to) */
	int has_edge;
	struct hang_member w;
	int64_t to;
	int nin, seen;
};

struct hg {
	const struct hang_input *in;
	const struct trace *t;
	struct hang *h;
	struct hg_proc *p;
	size_t np;
	const char **prog;
	size_t nprog;
	int64_t *maxwait; /* [kind 0/1][prog a][prog b] */
	int64_t floor;	  /* the shortest stop or wait that counts */
	int64_t *maxcall; /* per interned function */
	size_t *tstop;	  /* per thread: index in h->blocked, SIZE_MAX */
	uint32_t *order;  /* comm indices by channel, time */
	uint32_t *msend;  /* hg_matched: one channel's matched sends */
	size_t nmsend, mfor;
	int msend_ok;
};

static int hg_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static const char *hg_base(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;

	return b ? b + 1 : p;
}

int hang_is_send_call(const char *name)
{
	static const char *const calls[] = {
		"write",    "writev",	"pwrite",     "pwrite64", "pwritev",
		"pwritev2", "send",	"sendto",     "sendmsg",  "sendmmsg",
		"sendfile", "sendfile64", "splice",   NULL,
	};
	size_t i;
	int more = 1;

	if (!name)
		return 0;
	while (more) { /* __GI___libc_write -> write */
		more = 0;
		while (*name == '_')
			name++, more = 1;
		if (!strncmp(name, "GI_", 3) || !strncmp(name, "libc_", 5)) {
			name += name[0] == 'G' ? 3 : 5;
			more = 1;
		}
	}
	for (i = 0; calls[i]; i++)
		if (!strcmp(name, calls[i]))
			return 1;
	return 0;
}

static int hg_pid_cmp(const void *a, const void *b)
{
	const struct hg_proc *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static struct hg_proc *hg_proc(struct hg *g, int64_t pid)
{
	struct hg_proc key = { .pid = pid };

	return bsearch(&key, g->p, g->np, sizeof(*g->p), hg_pid_cmp);
}

static int hg_blocked_cmp(const void *a, const void *b)
{
	const struct hang_thread *x = a, *y = b;

	if (x->last_ns != y->last_ns)
		return x->last_ns < y->last_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Where process pid's recording ended: the session's end, or before it
 * when its tracing was switched off earlier (trace_process stop_ns: the
 * end of an attach stops the processes one after another, 0.7 s apart
 * on a loaded host): it cannot be seen to read, answer or return after
 * that, so a stop or a wait is judged up to there. */
static int64_t hg_end(const struct hg *g, int64_t pid)
{
	const struct trace_process *pr = trace_process_get(g->t, pid);

	if (pr && pr->stop_ns > 0 && pr->stop_ns < g->h->end_ns)
		return pr->stop_ns;
	return g->h->end_ns;
}

/* The processes, their programs, and each thread's end. */
static int hg_threads(struct hg *g)
{
	const struct trace *t = g->t;
	struct hang *h = g->h;
	uint32_t *st = NULL;
	size_t cap = 0, k, i, j;

	g->p = calloc(t->nth + 1, sizeof(*g->p));
	g->prog = calloc(t->nth + 1, sizeof(*g->prog));
	g->maxcall = calloc(t->nstr + 1, sizeof(*g->maxcall));
	g->tstop = malloc((t->nth + 1) * sizeof(*g->tstop));
	h->blocked = calloc(t->nth + 1, sizeof(*h->blocked));
	if (!g->p || !g->prog || !g->maxcall || !g->tstop || !h->blocked)
		return -ENOMEM;
	h->start_ns = t->nev ? t->ev[0].ts_ns : 0;
	h->end_ns = t->nev ? t->end_ts : 0;
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].ts_ns < h->start_ns)
			h->start_ns = t->ev[i].ts_ns;
	/* the processes' recordings end one after another (each agent is
	 * switched off in turn): a stop shorter than 1/20 of the session
	 * cannot be told from that */
	g->floor = (h->end_ns - h->start_ns) / 20;
	if (g->floor < g->in->precision_ns)
		g->floor = g->in->precision_ns;
	h->floor_ns = g->floor;
	for (k = 0; k < t->nth; k++) {
		const struct trace_thread *th = &t->th[k];
		const struct trace_event *last;
		size_t top = 0;
		int ended = 0;

		g->tstop[k] = SIZE_MAX;
		for (j = 0; j < g->np && g->p[j].pid != th->pid; j++)
			;
		if (j == g->np) {
			g->p[g->np].pid = th->pid;
			g->p[g->np].last_ns = INT64_MIN;
			g->p[g->np].last_ev_ns = INT64_MIN;
			g->p[g->np++].thread = SIZE_MAX;
		}
		if (!th->n)
			continue;
		last = &t->ev[th->first + th->n - 1];
		if (last->ts_ns > g->p[j].last_ns)
			g->p[j].last_ns = last->ts_ns;
		{ /* its last event: a thread that ended in a signal's */
			int sig = last->kind == TK_SIGNAL;

			if (sig > g->p[j].last_sig ||
			    (sig == g->p[j].last_sig &&
			     last->ts_ns >= g->p[j].last_ev_ns)) {
				g->p[j].last_ev = (uint32_t)(th->first + th->n - 1);
				g->p[j].last_ev_ns = last->ts_ns;
				g->p[j].last_sig = sig;
			}
		}
		for (i = th->first; i < th->first + th->n; i++) {
			const struct trace_event *e = &t->ev[i];
			size_t d = e->depth < 0 ? 0 : (size_t)e->depth;

			if (e->kind == TK_PROCESS_EXIT) {
				g->p[j].state = HANG_EXITED;
				g->p[j].status = (int)e->arg;
			}
			if (e->kind == TK_THREAD_EXIT || e->kind == TK_PROCESS_EXIT)
				ended = 1;
			if (e->kind == TK_ENTRY) {
				if (d + 1 > cap) {
					size_t nc = (d + 1) * 2;
					uint32_t *n = realloc(st, nc * sizeof(*n));

					if (!n) {
						free(st);
						return -ENOMEM;
					}
					st = n;
					cap = nc;
				}
				st[d] = (uint32_t)i;
				top = d + 1;
			} else if (e->kind == TK_EXIT) {
				if (top > d && t->ev[st[d]].func == e->func &&
				    e->func < t->nstr) {
					int64_t dur = e->ts_ns - t->ev[st[d]].ts_ns;

					if (dur > g->maxcall[e->func])
						g->maxcall[e->func] = dur;
				}
				if (top > d)
					top = d;
			}
		}
		if (last->kind == TK_SIGNAL && g->p[j].state != HANG_EXITED) {
			g->p[j].state = HANG_KILLED; /* may be handled: the
						      * process record decides */
			g->p[j].status = (int)last->arg;
		}
		if (ended || !top || hg_end(g, th->pid) - last->ts_ns <= g->floor)
			continue;
		g->tstop[k] = h->nblocked;
		h->blocked[h->nblocked].pid = th->pid;
		h->blocked[h->nblocked].tid = th->tid;
		h->blocked[h->nblocked].entry = st[top - 1];
		h->blocked[h->nblocked].func = t->ev[st[top - 1]].func;
		h->blocked[h->nblocked].since_ns = t->ev[st[top - 1]].ts_ns;
		h->blocked[h->nblocked++].last_ns = last->ts_ns;
	}
	free(st);
	/* by time of stop; tstop follows */
	{
		struct hang_thread *copy = malloc((h->nblocked + 1) * sizeof(*copy));

		if (!copy)
			return -ENOMEM;
		memcpy(copy, h->blocked, h->nblocked * sizeof(*copy));
		qsort(h->blocked, h->nblocked, sizeof(*h->blocked), hg_blocked_cmp);
		for (k = 0; k < t->nth; k++) {
			if (g->tstop[k] == SIZE_MAX)
				continue;
			for (i = 0; i < h->nblocked; i++)
				if (h->blocked[i].tid == copy[g->tstop[k]].tid &&
				    h->blocked[i].pid == copy[g->tstop[k]].pid)
					break;
			g->tstop[k] = i;
		}
		free(copy);
	}
	qsort(g->p, g->np, sizeof(*g->p), hg_pid_cmp);
	for (j = 0; j < g->np; j++) {
		const struct trace_process *pr = trace_process_get(t, g->p[j].pid);
		const char *name;

		if (pr) { /* what the session saw of its end wins */
			g->p[j].exe = pr->name ? pr->name : pr->exe;
			if (pr->signal) {
				g->p[j].state = HANG_KILLED;
				g->p[j].status = pr->signal;
			} else if (pr->exited) {
				g->p[j].state = HANG_EXITED;
				g->p[j].status = pr->status;
			} else if (g->p[j].state == HANG_KILLED) {
				g->p[j].state = HANG_RUNNING;
			}
		}
		name = hg_base(g->p[j].exe ? trace_str(t, g->p[j].exe) : NULL);
		for (i = 0; i < g->nprog; i++)
			if (name ? g->prog[i] && !strcmp(g->prog[i], name)
				 : !g->prog[i])
				break;
		if (i == g->nprog)
			g->prog[g->nprog++] = name;
		g->p[j].prog = (int)i;
	}
	for (i = 0; i < h->nblocked; i++) {
		struct hg_proc *p = hg_proc(g, h->blocked[i].pid);

		if (p && p->thread == SIZE_MAX && p->state < HANG_EXITED) {
			p->thread = i; /* the earliest */
			p->state = HANG_STOPPED;
		}
	}
	for (j = 0; j < g->np; j++) {
		if (g->p[j].state == HANG_STOPPED)
			g->p[j].state_ns = h->blocked[g->p[j].thread].since_ns;
		else
			g->p[j].state_ns = g->p[j].last_ns;
	}
	g->maxwait = calloc(2 * g->nprog * g->nprog + 1, sizeof(*g->maxwait));
	return g->maxwait ? 0 : -ENOMEM;
}

static int hg_comm_cmp_arg(const void *a, const void *b, void *arg)
{
	const struct hg *g = arg;
	const struct hang_comm *x = &g->in->comm[*(const uint32_t *)a];
	const struct hang_comm *y = &g->in->comm[*(const uint32_t *)b];
	const struct trace_event *ex = &g->t->ev[x->ev], *ey = &g->t->ev[y->ev];

	if (x->chan != y->chan)
		return x->chan < y->chan ? -1 : 1;
	if (ex->ts_ns != ey->ts_ns)
		return ex->ts_ns < ey->ts_ns ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int64_t *hg_maxwait(struct hg *g, int kind, int a, int b)
{
	return &g->maxwait[((size_t)kind * g->nprog + (size_t)a) * g->nprog +
			   (size_t)b];
}

struct hg_party {
	struct hg_proc *p;
	int64_t sent_end, recv_end, pending;
	size_t last, last_send, last_recv, nsend, nrecv; /* group positions */
	int offsets; /* its sends carry offsets */
};

/* Whether a recv of g->order[a .. b) matched send ev.  The channel's
 * matched sends are sorted once per channel (g->msend). */
static int hg_matched(struct hg *g, size_t a, size_t b, uint32_t ev)
{
	size_t lo = 0, hi, i;

	if (g->mfor != a || !g->msend_ok) {
		g->nmsend = 0;
		for (i = a; i < b; i++) {
			const struct trace_event *e =
				&g->t->ev[g->in->comm[g->order[i]].ev];

			if (e->kind == TK_RECV && e->match != TRACE_NONE)
				g->msend[g->nmsend++] = e->match;
		}
		qsort(g->msend, g->nmsend, sizeof(*g->msend), hg_u32_cmp);
		g->mfor = a;
		g->msend_ok = 1;
	}
	hi = g->nmsend;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->msend[mid] < ev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nmsend && g->msend[lo] == ev;
}

/* One channel's records g->order[a .. b): the waits that ended, then the
 * open one of each process that spoke last. */
static void hg_channel(struct hg *g, size_t a, size_t b)
{
	const struct trace *t = g->t;
	struct hg_party pt[HANG_MAXPARTY];
	size_t np = 0, i, x, y, first = SIZE_MAX; /* first: who spoke first */
	size_t client = SIZE_MAX; /* who opened it, when the engine knows */

	for (i = a; i < b; i++) {
		const struct hang_comm *c = &g->in->comm[g->order[i]];
		const struct trace_event *e = &t->ev[c->ev];
		struct hg_proc *p = hg_proc(g, e->pid);
		int64_t end = c->offset >= 0 ? c->offset + e->bytes : -1;

		if (!p)
			continue;
		for (x = 0; x < np && pt[x].p != p; x++)
			;
		if (x == np) {
			if (np == HANG_MAXPARTY)
				return; /* a socket shared by many: no order */
			memset(&pt[np], 0, sizeof(pt[np]));
			pt[np].p = p;
			pt[np].pending = -1;
			pt[np].last_send = pt[np].last_recv = SIZE_MAX;
			pt[np++].offsets = 1;
		}
		pt[x].last = i;
		if (c->client == 1 && client == SIZE_MAX)
			client = x;
		if (e->kind == TK_SEND) {
			for (y = 0; y < np; y++) /* a reply ends their wait */
				if (y != x && pt[y].pending >= 0) {
					int64_t *m = hg_maxwait(g, 1, pt[y].p->prog,
								p->prog);

					if (e->ts_ns - pt[y].pending > *m)
						*m = e->ts_ns - pt[y].pending;
					pt[y].pending = -1;
				}
			if (pt[x].pending < 0)
				pt[x].pending = e->ts_ns;
			if (first == SIZE_MAX)
				first = x;
			pt[x].last_send = i;
			pt[x].nsend++;
			if (end < 0)
				pt[x].offsets = 0;
			else if (end > pt[x].sent_end)
				pt[x].sent_end = end;
		} else {
			pt[x].last_recv = i;
			pt[x].nrecv++;
			if (end > pt[x].recv_end)
				pt[x].recv_end = end;
			if (e->match != TRACE_NONE) { /* bytes read: their wait */
				const struct trace_event *s = &t->ev[e->match];
				struct hg_proc *sp = hg_proc(g, s->pid);

				if (sp && e->ts_ns > s->ts_ns) {
					int64_t *m = hg_maxwait(g, 0, sp->prog,
								p->prog);

					if (e->ts_ns - s->ts_ns > *m)
						*m = e->ts_ns - s->ts_ns;
				}
			}
		}
	}
	for (x = 0; x < np; x++) {
		struct hg_party *A = &pt[x], *B = NULL;
		const struct hang_comm *ls;
		enum hang_wait w = HANG_NONE;
		size_t since = SIZE_MAX;
		int64_t unread = -1, age, *m;

		if (!A->nsend || A->last != A->last_send)
			continue; /* it read last: it had its answer */
		ls = &g->in->comm[g->order[A->last_send]];
		for (i = a; i < b && !B; i++) { /* the reader of its last send */
			const struct trace_event *e = &t->ev[g->in->comm[g->order[i]].ev];

			if (e->kind == TK_RECV && e->match == ls->ev)
				for (y = 0; y < np; y++)
					if (pt[y].p->pid == e->pid && y != x)
						B = &pt[y];
		}
		for (y = 0; y < np && !B; y++) /* else the latest other */
			if (y != x && (!B || pt[y].last > B->last))
				B = &pt[y];
		if (!B || (B->nsend && B->last_send > A->last_send))
			continue; /* no traced peer; or it answered */
		if (A->offsets && B->nrecv) {
			/* the send holding the first byte B did not read */
			for (i = a; i < b; i++) {
				const struct hang_comm *c = &g->in->comm[g->order[i]];
				const struct trace_event *e = &t->ev[c->ev];

				if (e->kind == TK_SEND && e->pid == A->p->pid &&
				    c->offset + e->bytes > B->recv_end) {
					since = i;
					break;
				}
			}
			if (since != SIZE_MAX) {
				w = HANG_UNREAD;
				unread = A->sent_end - B->recv_end;
			}
		} else if (!hg_matched(g, a, b, ls->ev)) {
			/* no offsets (or B read nothing): its trailing sends
			 * that no recv matched */
			since = A->last_send;
			for (i = A->last_send; i-- > a;) {
				const struct hang_comm *c = &g->in->comm[g->order[i]];
				const struct trace_event *e = &t->ev[c->ev];

				if (e->pid != A->p->pid)
					continue;
				if (e->kind != TK_SEND || hg_matched(g, a, b, c->ev))
					break;
				since = i;
			}
			w = HANG_UNREAD;
		}
		if (w == HANG_NONE && (B->nsend || x == client) &&
		    x == (client != SIZE_MAX ? client : first)) {
			/* a request not answered: the requester is the one
			 * that opened the channel (else that spoke first: a
			 * recording that began mid-conversation can mislead
			 * it).  A channel B never answered on is a
			 * request/reply one only when A is known to have
			 * opened it: a client's first request on a new
			 * connection (nginx's to an upstream that hung
			 * reading redis: without it, the chain through nginx
			 * began at a later request's unread bytes, and redis's
			 * unread reply came first, three-tier fcr6) */
			for (i = B->nsend ? B->last_send + 1 : a; i < b; i++)
				if (t->ev[g->in->comm[g->order[i]].ev].pid ==
					    A->p->pid &&
				    t->ev[g->in->comm[g->order[i]].ev].kind == TK_SEND)
					break;
			if (i >= b)
				continue;
			since = i;
			w = HANG_REPLY;
		} else if (w == HANG_NONE) {
			continue; /* a one-way channel read to its end */
		}
		{
			const struct hang_comm *c = &g->in->comm[g->order[since]];
			const struct trace_event *e = &t->ev[c->ev];

			/* B is seen to read or answer until its end */
			age = hg_end(g, B->p->pid) - e->ts_ns;
			m = hg_maxwait(g, w == HANG_REPLY, A->p->prog, B->p->prog);
			if (age <= g->floor || age <= 2 * *m)
				continue;
			/* the thread that sent stopped in the wait: after a
			 * request, in any call; with bytes unread, in a write */
			size_t ts = g->tstop[e->thread];
			int here = ts != SIZE_MAX &&
				   (w == HANG_REPLY ||
				    hang_is_send_call(trace_str(t, g->h->blocked[ts].func)));

			/* a wait that stops something: B stopped (or ended),
			 * or A's thread stuck in it; bytes a running reader
			 * never read (it closed the channel) are none */
			if (B->p->state == HANG_RUNNING && !here)
				continue;
			/* its wait: the one its stopped thread is in, else the
			 * oldest */
			if (A->p->has_edge &&
			    (A->p->w.blocked_here > here ||
			     (A->p->w.blocked_here == here &&
			      A->p->w.wait_since_ns <= e->ts_ns)))
				continue;
			A->p->has_edge = 1;
			A->p->to = B->p->pid;
			memset(&A->p->w, 0, sizeof(A->p->w));
			A->p->w.wait = w;
			A->p->w.chan = c->chan;
			A->p->w.wait_ev = c->ev;
			A->p->w.wait_since_ns = e->ts_ns;
			A->p->w.unread = unread;
			A->p->w.thread = ts;
			A->p->w.blocked_here = here;
		}
	}
}

static int hg_channels(struct hg *g)
{
	size_t i, a;

	if (!g->in->ncomm)
		return 0;
	g->order = malloc(g->in->ncomm * sizeof(*g->order));
	g->msend = malloc(g->in->ncomm * sizeof(*g->msend));
	if (!g->order || !g->msend)
		return -ENOMEM;
	for (i = 0; i < g->in->ncomm; i++)
		g->order[i] = (uint32_t)i;
	qsort_r(g->order, g->in->ncomm, sizeof(*g->order), hg_comm_cmp_arg, g);
	for (a = 0; a < g->in->ncomm; a = i) {
		uint32_t ch = g->in->comm[g->order[a]].chan;

		for (i = a; i < g->in->ncomm && g->in->comm[g->order[i]].chan == ch;
		     i++)
			;
		hg_channel(g, a, i);
	}
	for (i = 0; i < g->np; i++)
		if (g->p[i].has_edge) {
			struct hg_proc *to = hg_proc(g, g->p[i].to);

			if (to)
				to->nin++;
			g->h->nedges++;
		}
	return 0;
}

/* The member a process is in a chain: its state and its wait. */
static struct hang_member hg_member(struct hg *g, struct hg_proc *p)
{
	struct hang_member m;

	if (p->has_edge) {
		m = p->w;
		if (!m.blocked_here)
			m.thread = p->thread;
	} else {
		memset(&m, 0, sizeof(m));
		m.chan = UINT32_MAX;
		m.thread = p->thread;
	}
	m.pid = p->pid;
	m.name = p->exe;
	m.state = p->state;
	m.status = p->status;
	m.state_ns = p->state_ns;
	if (m.blocked_here && p->state < HANG_EXITED) {
		m.state = HANG_STOPPED;
		m.state_ns = g->h->blocked[m.thread].since_ns;
	}
	m.stop_ev = TRACE_NONE;
	if (m.state == HANG_STOPPED) {
		m.stop_ev = g->h->blocked[m.thread].entry;
		m.stop_ns = g->h->blocked[m.thread].last_ns;
	} else if (m.state == HANG_EXITED || m.state == HANG_KILLED) {
		m.stop_ev = p->last_ev;
		m.stop_ns = p->last_ns;
	}
	return m;
}

static int hg_push(struct hang_chain *c, size_t *cap, struct hang_member m)
{
	if (c->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		struct hang_member *n = realloc(c->m, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->m = n;
		*cap = nc;
	}
	c->m[c->n++] = m;
	return 0;
}

static int hg_add_chain(struct hang *h, struct hang_chain *c)
{
	struct hang_chain *n = realloc(h->chain, (h->nchain + 1) * sizeof(*n));
	size_t i;

	if (!n)
		return -ENOMEM;
	h->chain = n;
	c->since_ns = INT64_MAX;
	for (i = 0; i < c->n; i++)
		if (c->m[i].wait != HANG_NONE && c->m[i].wait_since_ns < c->since_ns) {
			c->since_ns = c->m[i].wait_since_ns;
			c->flow_ev = c->m[i].wait_ev;
		}
	/* the request that hung: where the member that stopped first
	 * stopped (its call, its crash), else the oldest wait's send */
	{
		int64_t first = INT64_MAX;

		for (i = 0; i < c->n; i++)
			if (c->m[i].stop_ev != TRACE_NONE && c->m[i].stop_ns < first) {
				first = c->m[i].stop_ns;
				c->flow_ev = c->m[i].stop_ev;
			}
	}
	c->head_pid = c->m[c->n - 1].pid;
	h->chain[h->nchain++] = *c;
	return 0;
}

/* Walk from p along the edges; a pure cycle (tail == 0) is rotated so
 * that the member that stopped first is its head, last. */
static int hg_walk(struct hg *g, struct hg_proc *p, int tail)
{
	struct hang_chain c = { 0 };
	struct hg_proc **path = NULL;
	size_t cap = 0, np = 0, i;
	int err = 0;

	while (p) {
		struct hg_proc **n;

		for (i = 0; i < np && path[i] != p; i++)
			;
		if (i < np) {
			c.cycle = 1;
			break;
		}
		n = realloc(path, (np + 1) * sizeof(*n));
		if (!n) {
			free(path);
			return -ENOMEM;
		}
		path = n;
		path[np++] = p;
		p->seen = 1;
		p = p->has_edge ? hg_proc(g, p->to) : NULL;
	}
	if (!tail && c.cycle && np) { /* the head: stopped first */
		size_t hd = 0, r;

		for (i = 1; i < np; i++) {
			int64_t a = path[i]->state == HANG_STOPPED
					    ? g->h->blocked[path[i]->thread].last_ns
					    : path[i]->w.wait_since_ns;
			int64_t b = path[hd]->state == HANG_STOPPED
					    ? g->h->blocked[path[hd]->thread].last_ns
					    : path[hd]->w.wait_since_ns;

			if (a < b)
				hd = i;
		}
		for (r = 0; !err && r < np; r++)
			err = hg_push(&c, &cap, hg_member(g, path[(hd + 1 + r) % np]));
	} else {
		for (i = 0; !err && i < np; i++)
			err = hg_push(&c, &cap, hg_member(g, path[i]));
	}
	if (!c.cycle && c.n) { /* the head waits on nobody traced */
		c.m[c.n - 1].wait = HANG_NONE;
		c.m[c.n - 1].chan = UINT32_MAX;
		c.m[c.n - 1].blocked_here = 0;
	}
	free(path);
	if (!err)
		err = hg_add_chain(g->h, &c);
	if (err)
		free(c.m);
	return err;
}

/* A thread stopped in a send-family call with no wait named: one. */
static int hg_alone(struct hg *g, struct hg_proc *p)
{
	const struct hang_thread *b = &g->h->blocked[p->thread];
	const struct trace *t = g->t;
	struct hang_chain c = { 0 };
	struct hang_member m;
	int64_t dur = hg_end(g, p->pid) - b->since_ns, last = INT64_MIN;
	size_t cap = 0, i;
	int err;

	if (p->state != HANG_STOPPED ||
	    !hang_is_send_call(trace_str(t, b->func)) ||
	    dur <= g->floor || dur <= 2 * g->maxcall[b->func])
		return 0;
	m = hg_member(g, p);
	m.wait = HANG_BLOCKED;
	m.blocked_here = 1;
	m.wait_ev = b->entry;
	m.wait_since_ns = b->since_ns;
	for (i = 0; i < g->in->ncomm; i++) { /* the channel it wrote last */
		const struct trace_event *e = &t->ev[g->in->comm[i].ev];

		if (e->kind == TK_SEND && e->tid == b->tid && e->pid == b->pid &&
		    e->ts_ns >= last) {
			last = e->ts_ns;
			m.chan = g->in->comm[i].chan;
		}
	}
	err = hg_push(&c, &cap, m);
	if (!err)
		err = hg_add_chain(g->h, &c);
	if (err)
		free(c.m);
	return err;
}

static int hg_chain_cmp(const void *a, const void *b)
{
	const struct hang_chain *x = a, *y = b;

	if (x->since_ns != y->since_ns)
		return x->since_ns < y->since_ns ? -1 : 1;
	return x->head_pid < y->head_pid ? -1 : x->head_pid > y->head_pid;
}

int hang_find(const struct hang_input *in, struct hang **out)
{
	struct hg g = { 0 };
	size_t i;
	int err;

	*out = NULL;
	g.in = in;
	g.t = in->t;
	g.h = calloc(1, sizeof(*g.h));
	if (!g.h)
		return -ENOMEM;
	err = hg_threads(&g);
	if (!err)
		err = hg_channels(&g);
	for (i = 0; !err && i < g.np; i++) /* tails first */
		if (g.p[i].has_edge && !g.p[i].nin)
			err = hg_walk(&g, &g.p[i], 1);
	for (i = 0; !err && i < g.np; i++) /* what is left: cycles */
		if (g.p[i].has_edge && !g.p[i].seen)
			err = hg_walk(&g, &g.p[i], 0);
	for (i = 0; !err && i < g.np; i++)
		if (!g.p[i].has_edge && !g.p[i].nin && g.p[i].thread != SIZE_MAX)
			err = hg_alone(&g, &g.p[i]);
	if (!err && g.h->nchain > 1) /* (no chain: a NULL array) */
		qsort(g.h->chain, g.h->nchain, sizeof(*g.h->chain), hg_chain_cmp);
	free(g.p);
	free(g.prog);
	free(g.maxwait);
	free(g.maxcall);
	free(g.tstop);
	free(g.order);
	free(g.msend);
	if (err) {
		hang_free(g.h);
		return err;
	}
	*out = g.h;
	return 0;
}

void hang_free(struct hang *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->nchain; i++)
		free(h->chain[i].m);
	free(h->chain);
	free(h->blocked);
	free(h);
}

/* text */

struct hg_buf {
	char *b;
	size_t len, at;
};

static void hg_put(struct hg_buf *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void hg_put(struct hg_buf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->at + 1 >= o->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->b + o->at, o->len - o->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->at = o->at + (size_t)n < o->len ? o->at + (size_t)n : o->len - 1;
}

static void hg_dur(struct hg_buf *o, int64_t ns)
{
	if (ns >= 1000000000)
		hg_put(o, "%.1f s", (double)ns / 1e9);
	else
		hg_put(o, "%.1f ms", (double)ns / 1e6);
}

static const char *hg_chan(const struct hang_input *in, uint32_t c)
{
	return c < in->nchan && in->chan[c] ? in->chan[c] : "?";
}

static void hg_name(struct hg_buf *o, const struct trace *t,
		    const struct hang_member *m)
{
	const char *n = m->name ? hg_base(trace_str(t, m->name)) : NULL;

	hg_put(o, "%s %lld", n && *n ? n : "pid", (long long)m->pid);
}

char *hang_chain_text(const struct hang_input *in, const struct hang *h,
		      const struct hang_chain *c, char *buf, size_t len)
{
	const struct trace *t = in->t;
	struct hg_buf o = { buf, len, 0 };
	size_t i;

	if (len)
		buf[0] = 0;
	for (i = 0; i < c->n; i++) {
		const struct hang_member *m = &c->m[i];
		const char *fn = m->state == HANG_STOPPED || m->blocked_here
					 ? trace_str(t, h->blocked[m->thread].func)
					 : NULL;
		int64_t wait = h->end_ns - m->wait_since_ns;

		if (i)
			hg_put(&o, ", which ");
		else
			hg_name(&o, t, m), hg_put(&o, " ");
		switch (m->wait) {
		case HANG_UNREAD:
			if (m->blocked_here) {
				hg_put(&o, "%sblocked ", i ? "is " : "");
				hg_dur(&o, h->end_ns - h->blocked[m->thread].since_ns);
				hg_put(&o, " in %s to %s, read by ", fn,
				       hg_chan(in, m->chan));
			} else {
				hg_put(&o, "%s", i ? "has " : "has ");
				if (m->unread >= 0)
					hg_put(&o, "%lld bytes", (long long)m->unread);
				else
					hg_put(&o, "bytes");
				hg_put(&o, " unread on %s for ", hg_chan(in, m->chan));
				hg_dur(&o, wait);
				hg_put(&o, " by ");
			}
			break;
		case HANG_REPLY:
			if (m->blocked_here) {
				hg_put(&o, "%sblocked ", i ? "is " : "");
				hg_dur(&o, h->end_ns - h->blocked[m->thread].since_ns);
				hg_put(&o, " in %s, waiting ", fn);
			} else {
				hg_put(&o, "waits ");
			}
			if (m->blocked_here)
				hg_dur(&o, wait);
			else
				hg_dur(&o, wait);
			hg_put(&o, " for a reply on %s from ", hg_chan(in, m->chan));
			break;
		case HANG_BLOCKED:
			hg_put(&o, "%sblocked ", i ? "is " : "");
			hg_dur(&o, wait);
			hg_put(&o, " in %s", fn);
			if (m->chan != UINT32_MAX)
				hg_put(&o, " (its last write: %s; no traced reader)",
				       hg_chan(in, m->chan));
			else
				hg_put(&o, " (no channel named)");
			continue;
		case HANG_NONE:
			switch (m->state) {
			case HANG_STOPPED:
				hg_put(&o, "is in %s() since +%.3f s", fn,
				       (double)(m->state_ns - h->start_ns) / 1e9);
				break;
			case HANG_EXITED:
				hg_put(&o, "exited (status %d) at +%.3f s", m->status,
				       (double)(m->state_ns - h->start_ns) / 1e9);
				break;
			case HANG_KILLED:
				hg_put(&o, "was killed by signal %d at +%.3f s",
				       m->status,
				       (double)(m->state_ns - h->start_ns) / 1e9);
				break;
			default:
				hg_put(&o, "is running (its last event at +%.3f s)",
				       (double)(m->state_ns - h->start_ns) / 1e9);
				break;
			}
			continue;
		}
		hg_name(&o, t, i + 1 < c->n ? &c->m[i + 1] : &c->m[0]);
		if (i + 1 == c->n)
			hg_put(&o, " again (a cycle: deadlock)");
	}
	return buf;
}
