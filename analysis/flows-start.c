/*
 * analysis/flows-start.c - see analysis/flows-start.h.
 *
 * One pass over the first process's send and recv events in time order
 * (across its threads) gives each channel its role and each event its
 * part in a request; chan-indexed arrays (the chan strings are interned
 * in the trace's string table) hold the state.  The client's frame rule
 * then scans each thread once: back from each message to the previous
 * one (the frames open at the send, entered since), forward to the next
 * (which of them returned before it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/flows-start.h"

enum { ROLE_NONE, ROLE_CLIENT, ROLE_SERVER };

const char *flows_rule_name(int rule)
{
	static const char *const names[] = { "none", "start-func", "server",
					     "client" };

	return rule >= 0 && rule <= FLOWS_RULE_CLIENT ? names[rule] : "?";
}

static const struct trace *flows_start_trace;

/* events by time, then id */
static int flows_start_cmp(const void *a, const void *b)
{
	const struct trace_event *x = &flows_start_trace->ev[*(const uint32_t *)a];
	const struct trace_event *y = &flows_start_trace->ev[*(const uint32_t *)b];

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void flows_start_order(const struct trace *t, uint32_t *v, size_t n)
{
	flows_start_trace = t;
	qsort(v, n, sizeof(*v), flows_start_cmp);
}

/* by thread, then index (time within a thread) */
static int flows_start_thread_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint32_t ti = flows_start_trace->ev[i].thread;
	uint32_t tj = flows_start_trace->ev[j].thread;

	if (ti != tj)
		return ti < tj ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * The start of the message sent at s (client rule): the outermost frame
 * open at s entered after prev (none: the thread's start) that returned
 * before next (none: any frame), else s.  fr: scratch for the frames.
 */
static uint32_t flows_start_frame(const struct trace *t, uint32_t s,
				  int has_prev, uint32_t prev, int has_next,
				  uint32_t next, uint32_t *fr)
{
	const struct trace_thread *th = &t->th[t->ev[s].thread];
	size_t lo = has_prev ? prev + 1 : th->first, x, m = 0, closes = 0;
	size_t popped = 0, opens = 0;

	for (x = s; x-- > lo;) { /* innermost first */
		if (t->ev[x].kind == TK_EXIT)
			closes++;
		else if (t->ev[x].kind == TK_ENTRY && closes)
			closes--;
		else if (t->ev[x].kind == TK_ENTRY)
			fr[m++] = (uint32_t)x;
	}
	if (!has_next) {
		popped = m;
	} else {
		for (x = s + 1; x < next && popped < m; x++) {
			if (t->ev[x].kind == TK_ENTRY)
				opens++;
			else if (t->ev[x].kind == TK_EXIT && opens)
				opens--;
			else if (t->ev[x].kind == TK_EXIT)
				popped++;
		}
	}
	if (popped > m)
		popped = m;
	return popped ? fr[popped - 1] : s;
}

/* The client rule's starts from the message sends sel[0..n). */
static int flows_start_frames(const struct trace *t, uint32_t *sel, size_t n,
			      uint8_t *is_start, size_t *nstart)
{
	uint32_t *fr = malloc((t->nev + 1) * sizeof(*fr));
	size_t i;

	if (!fr)
		return -ENOMEM;
	flows_start_trace = t;
	qsort(sel, n, sizeof(*sel), flows_start_thread_cmp);
	for (i = 0; i < n; i++) {
		int hp = i > 0 && t->ev[sel[i - 1]].thread == t->ev[sel[i]].thread;
		int hn = i + 1 < n &&
			 t->ev[sel[i + 1]].thread == t->ev[sel[i]].thread;
		uint32_t s = flows_start_frame(t, sel[i], hp, hp ? sel[i - 1] : 0,
					       hn, hn ? sel[i + 1] : 0, fr);

		if (!is_start[s]) {
			is_start[s] = 1;
			(*nstart)++;
		}
	}
	free(fr);
	return 0;
}

int flows_start_auto(const struct trace *t, const uint32_t *skip,
		     size_t nskip, uint8_t *is_start, size_t *nstart,
		     int *rule)
{
	size_t nc = t->nstr + 1, i, np = 0, ns = 0, nct = 0, ncu = 0;
	uint8_t *role = calloc(nc, 1), *last = calloc(nc, 1);
	uint8_t *peer = calloc(nc, 1), *head = calloc(t->nev + 1, 1);
	uint32_t *lastm = malloc(nc * sizeof(*lastm));
	uint8_t *root = calloc(t->nev + 1, 1);
	uint32_t *pev = malloc((t->nev + 1) * sizeof(*pev));
	uint32_t *srv = malloc((t->nev + 1) * sizeof(*srv));
	uint32_t *ct = malloc((t->nev + 1) * sizeof(*ct));
	uint32_t *cu = malloc((t->nev + 1) * sizeof(*cu));
	int64_t P = t->first_pid;
	int err = 0;

	*nstart = 0;
	*rule = FLOWS_RULE_NONE;
	if (!role || !last || !peer || !head || !pev || !srv || !ct || !cu ||
	    !lastm || !root) {
		err = -ENOMEM;
		goto out;
	}
	memset(lastm, 0xff, nc * sizeof(*lastm));
	for (i = 0; i < nskip; i++)
		if (skip[i] && skip[i] < nc)
			role[skip[i]] = 0xff; /* no role */
	for (i = 0; i < t->nev; i++) {
		const struct trace_event *e = &t->ev[i];

		if (e->kind != TK_SEND && e->kind != TK_RECV)
			continue;
		if (e->kind == TK_RECV && e->match != TRACE_NONE)
			head[e->match] = 1;
		if (e->kind == TK_RECV && e->pid != P && e->arg > 0 &&
		    (size_t)e->arg < nc)
			peer[e->arg] = 1; /* a traced receiver on the channel */
		if (e->pid == P)
			pev[np++] = (uint32_t)i;
	}
	flows_start_order(t, pev, np);
	for (i = 0; i < np; i++) {
		const struct trace_event *e = &t->ev[pev[i]];
		size_t c = e->arg > 0 && (size_t)e->arg < nc ? (size_t)e->arg : 0;
		int r, prev, more;

		if (c && role[c] == 0xff)
			continue;
		if (c && !role[c])
			role[c] = e->kind == TK_SEND ? ROLE_CLIENT : ROLE_SERVER;
		r = c ? role[c] : e->kind == TK_SEND ? ROLE_CLIENT : ROLE_SERVER;
		prev = c ? last[c] : 0;
		/* the rest of the message the previous recv began */
		more = c && prev == TK_RECV && e->kind == TK_RECV &&
		       e->match != TRACE_NONE && e->match == lastm[c];
		if (e->bytes <= 0)
			continue; /* EAGAIN, EOF: neither asked nor answered */
		if (c)
			last[c] = e->kind;
		if (c && e->kind == TK_RECV)
			lastm[c] = e->match;
		if (r == ROLE_SERVER && e->kind == TK_RECV && !more &&
		    (e->match != TRACE_NONE || !c || prev != TK_RECV)) {
			/* after P answered on the channel: a new request,
			 * which no earlier flow takes in (the traced client
			 * that sent it continues from P's answer) */
			root[ns] = c && prev == TK_SEND;
			srv[ns++] = pev[i];
		}
		else if (r == ROLE_CLIENT && e->kind == TK_SEND && head[pev[i]])
			ct[nct++] = pev[i];
		else if (r == ROLE_CLIENT && e->kind == TK_SEND && c &&
			 !peer[c] && prev != TK_SEND)
			cu[ncu++] = pev[i];
	}
	if (ns) {
		*rule = FLOWS_RULE_SERVER;
		for (i = 0; i < ns; i++)
			is_start[srv[i]] = root[i] ? 2 : 1;
		*nstart = ns;
	} else if (nct || ncu) {
		*rule = FLOWS_RULE_CLIENT;
		err = nct ? flows_start_frames(t, ct, nct, is_start, nstart)
			  : flows_start_frames(t, cu, ncu, is_start, nstart);
	}
out:
	free(role);
	free(last);
	free(peer);
	free(head);
	free(pev);
	free(srv);
	free(ct);
	free(cu);
	free(lastm);
	free(root);
	return err;
}
