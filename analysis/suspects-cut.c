/*
 * analysis/suspects-cut.c - suspects_cut (analysis/suspects.h): the flows
 * the recording's window cut, which the suspect scores leave out of the
 * k-NN comparison and rank after the complete ones.  Called by
 * tui/cmd-report.c (`report --suspects`, --rootcause's default flow) and
 * suspects_rank_flows (the TUI's views).  Pure.
 *
 * One pass per thread keeps a stack of the calls open (an exit with the
 * stack empty returns from a call entered before the thread's first kept
 * event); one pass over the sends and recvs finds each channel's traced
 * processes (two at most: a channel shared by more has no one peer), the
 * requests answered, and the messages a peer did not record outside its
 * window, and the flows whose send was held while propel injected its
 * peer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows.h"
#include "analysis/suspects.h"

struct sc_state {
	const struct trace *t;
	const struct flows *f;
	uint8_t *cut, *open, *answered, *ended, *born, *msend;
	uint8_t *sent;		 /* per chan: the first process sent on it */
	uint32_t *thp;		 /* thread -> process index */
	const int64_t *pid;	 /* process index -> pid */
	int64_t *first, *last;	 /* per process: kept events' bounds */
	int32_t (*chp)[2];	 /* per chan: its processes, -2 many */
	size_t np;
};

/* Processes of the threads, their windows, whether they ended. */
static void sc_procs(struct sc_state *s, const int64_t *pid)
{
	const struct trace *t = s->t;
	size_t i, j;

	for (i = 0; i < t->nth; i++) {
		const struct trace_thread *th = &t->th[i];
		const struct trace_process *p;

		for (j = 0; j < s->np && pid[j] != th->pid; j++)
			;
		if (j == s->np) {
			p = trace_process_get(t, th->pid);
			s->first[j] = INT64_MAX;
			s->last[j] = INT64_MIN;
			s->ended[j] = p && (p->exited || p->signal);
			((int64_t *)pid)[s->np++] = th->pid;
		}
		s->thp[i] = (uint32_t)j;
		if (th->n && t->ev[th->first].ts_ns < s->first[j])
			s->first[j] = t->ev[th->first].ts_ns;
		if (th->n && t->ev[th->first + th->n - 1].ts_ns > s->last[j])
			s->last[j] = t->ev[th->first + th->n - 1].ts_ns;
	}
}

/* Calls returned that began before the window (in a thread the window
 * began: not one started or forked in it, whose first events return from
 * its creator's calls), calls open at its end. */
static int sc_calls(struct sc_state *s, uint32_t *stack)
{
	const struct trace *t = s->t;
	size_t i, x, sp;
	/* per path: the thread (+1) in which a call of it returned */
	uint32_t *ret = calloc(t->npath + 1, sizeof(*ret));

	if (!ret)
		return -ENOMEM;

	for (x = 0; x < t->nev; x++) /* a fork's child began in the window */
		if (t->ev[x].kind == TK_FORK)
			for (i = 0; i < t->nth; i++)
				if (t->th[i].pid == t->ev[x].arg)
					s->born[s->thp[i]] = 1;
	for (i = 0; i < t->nth; i++) {
		const struct trace_thread *th = &t->th[i];
		int by_window, began = th->n && !s->born[s->thp[i]] &&
				      t->ev[th->first].kind != TK_THREAD_START;

		sp = 0;
		for (x = th->first; x < th->first + th->n; x++) {
			const struct trace_event *e = &t->ev[x];
			uint32_t F = s->f->of[x];

			if (e->kind == TK_ENTRY) {
				stack[sp++] = (uint32_t)x;
			} else if (e->kind == TK_EXIT) {
				int before = !sp || t->ev[stack[sp - 1]].rebuilt;

				if (sp) {
					sp--;
					if (t->ev[stack[sp]].path < t->npath)
						ret[t->ev[stack[sp]].path] =
							(uint32_t)i + 1;
				}
				if (began && before && F < s->f->n)
					s->cut[F] = 1;
			}
		}
		by_window = th->n && !s->ended[s->thp[i]] &&
			    t->ev[th->first + th->n - 1].kind != TK_THREAD_EXIT &&
			    t->ev[th->first + th->n - 1].kind != TK_PROCESS_EXIT;
		while (by_window && sp--) {
			const struct trace_event *e = &t->ev[stack[sp]];
			uint32_t F = s->f->of[stack[sp]];

			/* a call of a path that returned before in the
			 * thread is its loop's wait for work: idle */
			if (!e->rebuilt && F < s->f->n &&
			    !(e->path < t->npath && ret[e->path] == i + 1))
				s->open[F] = 1;
		}
	}
	free(ret);
	return 0;
}

/* A process --follow reached (not the first process, not born in the
 * window), whose recording began after the flow did: the message its
 * first matched recv read was held while propel injected it (the agent
 * holds a send to a process it follows until that process's agent runs):
 * the sender's flow holds propel's time, not the program's.  One flow a
 * process at most. */
static int sc_injected(struct sc_state *s)
{
	const struct trace *t = s->t;
	uint32_t *rv = malloc((s->np + 1) * sizeof(*rv));
	size_t x, q;

	if (!rv)
		return -ENOMEM;
	for (q = 0; q < s->np; q++)
		rv[q] = TRACE_NONE;
	for (x = 0; x < t->nev; x++) {
		const struct trace_event *e = &t->ev[x];

		q = s->thp[e->thread];
		if (e->kind == TK_RECV && e->match != TRACE_NONE &&
		    (rv[q] == TRACE_NONE || e->ts_ns < t->ev[rv[q]].ts_ns))
			rv[q] = (uint32_t)x;
	}
	for (q = 0; q < s->np; q++) {
		uint32_t m = rv[q] != TRACE_NONE ? t->ev[rv[q]].match : TRACE_NONE;
		uint32_t F = m != TRACE_NONE ? s->f->of[m] : TRACE_NONE;

		if (F < s->f->n && !s->born[q] && s->pid[q] != t->first_pid &&
		    s->thp[t->ev[m].thread] != q &&
		    s->f->flow[F].first_ts < s->first[q])
			s->cut[F] = 1;
	}
	free(rv);
	return 0;
}

/* The messages: channels' processes, answers, unrecorded messages. */
static void sc_messages(struct sc_state *s, size_t nc)
{
	const struct trace *t = s->t;
	size_t x;
	int w;

	for (x = 0; x < t->nev; x++) {
		const struct trace_event *e = &t->ev[x];
		int32_t p = (int32_t)s->thp[e->thread], *c;

		if (e->kind != TK_SEND && e->kind != TK_RECV)
			continue;
		if (e->kind == TK_RECV && e->match != TRACE_NONE)
			s->msend[e->match] = 1;
		if (e->arg <= 0 || (size_t)e->arg >= nc)
			continue;
		if (e->kind == TK_SEND && e->pid == t->first_pid)
			s->sent[e->arg] = 1;
		c = s->chp[e->arg];
		for (w = 0; w < 2 && c[w] != p; w++)
			if (c[w] == -1) {
				c[w] = p;
				break;
			}
		if (w == 2 && c[0] != -2)
			c[0] = c[1] = -2; /* many: no one peer */
	}
	for (x = 0; x < t->nev; x++) {
		const struct trace_event *e = &t->ev[x];
		uint32_t F = s->f->of[x];
		int32_t p = (int32_t)s->thp[e->thread], q, *c;
		const struct trace_event *st;
		int unrec;

		if ((e->kind != TK_SEND && e->kind != TK_RECV) || F >= s->f->n ||
		    e->bytes <= 0 || e->arg <= 0 || (size_t)e->arg >= nc)
			continue;
		st = &t->ev[s->f->flow[F].start];
		if (e->kind == TK_SEND && st->kind == TK_RECV &&
		    e->pid == st->pid && e->arg == st->arg &&
		    e->ts_ns >= st->ts_ns)
			s->answered[F] = 1;
		c = s->chp[e->arg];
		q = c[0] == p ? c[1] : c[0];
		if (q < 0)
			continue;
		if (s->ended[q])
			continue;
		unrec = e->kind == TK_SEND ? !s->msend[x] : e->match == TRACE_NONE;
		if (unrec && (e->ts_ns < s->first[q] || e->ts_ns > s->last[q]))
			s->cut[F] = 1;
	}
}

int suspects_cut(const struct trace *t, const struct flows *f, uint8_t *cut)
{
	struct sc_state s;
	size_t nc = t->nstr + 1, i;
	int64_t *pid = malloc((t->nth + 1) * sizeof(*pid));
	uint32_t *stack = malloc((t->nev + 1) * sizeof(*stack));
	int err = 0;

	memset(&s, 0, sizeof(s));
	s.t = t;
	s.f = f;
	s.cut = cut;
	s.open = calloc(f->n + 1, 1);
	s.answered = calloc(f->n + 1, 1);
	s.ended = calloc(t->nth + 1, 1);
	s.born = calloc(t->nth + 1, 1);
	s.msend = calloc(t->nev + 1, 1);
	s.thp = calloc(t->nth + 1, sizeof(*s.thp));
	s.first = calloc(t->nth + 1, sizeof(*s.first));
	s.last = calloc(t->nth + 1, sizeof(*s.last));
	s.chp = malloc(nc * sizeof(*s.chp));
	s.sent = calloc(nc, 1);
	if (!pid || !stack || !s.open || !s.answered || !s.ended || !s.born ||
	    !s.msend || !s.thp || !s.first || !s.last || !s.chp || !s.sent) {
		err = -ENOMEM;
		goto out;
	}
	memset(cut, 0, f->n);
	memset(s.chp, 0xff, nc * sizeof(*s.chp)); /* -1: none yet */
	s.pid = pid;
	sc_procs(&s, pid);
	err = sc_calls(&s, stack);
	if (err)
		goto out;
	sc_messages(&s, nc);
	err = sc_injected(&s);
	if (err)
		goto out;
	for (i = 0; i < f->n; i++) {
		const struct trace_event *st = &t->ev[f->flow[i].start];
		int request = f->rule == FLOWS_RULE_SERVER &&
			      st->kind == TK_RECV && st->arg > 0 &&
			      (size_t)st->arg < nc && s.sent[st->arg] &&
			      st->pid == t->first_pid;

		/* a request is finished when answered (on a channel the
		 * server answers on at all: not a pipe in, answered on
		 * another); any other flow when its calls returned */
		if (request ? !s.answered[i] : s.open[i])
			cut[i] = 1;
	}
out:
	free(pid);
	free(stack);
	free(s.open);
	free(s.answered);
	free(s.ended);
	free(s.born);
	free(s.msend);
	free(s.thp);
	free(s.first);
	free(s.last);
	free(s.chp);
	free(s.sent);
	return err;
}
