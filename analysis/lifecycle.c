/*
 * analysis/lifecycle.c - see analysis/lifecycle.h.  Called by
 * analysis/flows.c (flows_build) and the unit test
 * tests/unit/test-lifecycle.c.
 *
 * One pass per thread and image finds main's entry and the exit point.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/lifecycle.h"

int lifecycle_is_exit_call(const struct trace *t, uint32_t func)
{
	const char *s = trace_str(t, func);

	return strcmp(s, "main") && lifecycle_cut_name(s);
}

/* The function of an entry or exit: its own name, else its frame's. */
static uint32_t lc_func(const struct trace *t, const struct trace_event *e)
{
	if (e->func)
		return e->func;
	return e->path && e->path < t->npath ? t->path[e->path].func : 0;
}

static int lc_is_main(const struct trace *t, const struct trace_event *e)
{
	return !strcmp(trace_str(t, lc_func(t, e)), "main");
}

/* The exit point of image [s, e) given main's entry m ((size_t)-1:
 * not in it): teardown follows it; e when none. */
static size_t lc_exit_point(const struct trace *t, size_t s, size_t e,
			    size_t m)
{
	int32_t md = m != (size_t)-1 ? t->ev[m].depth : -1;
	size_t i;

	for (i = s; i < e; i++) {
		const struct trace_event *v = &t->ev[i];

		if (v->kind == TK_ENTRY && lifecycle_is_exit_call(t, v->func))
			return i;
		/* main returned (entered before the window too: a fork
		 * child's, an attached process's) */
		if (v->kind == TK_EXIT && lc_is_main(t, v) &&
		    (m == (size_t)-1 || (i > m && v->depth <= md)))
			return i;
		if (v->kind == TK_PROCESS_EXIT) {
			if (i + 1 < e && t->ev[i + 1].kind == TK_ENTRY &&
			    lifecycle_is_exit_call(t, t->ev[i + 1].func))
				return i + 1;
			return i;
		}
	}
	return e;
}

long lifecycle_mark(const struct trace *t, uint8_t *life)
{
	size_t k, i;
	long n = 0;

	memset(life, 0, t->nev);
	for (k = 0; k < t->nth; k++) {
		const struct trace_thread *th = &t->th[k];
		size_t s = th->first, end = th->first + th->n;

		while (s < end) {
			size_t e = s, m = (size_t)-1, x;

			while (e < end && t->ev[e].kind != TK_EXEC)
				e++;
			for (i = s; i < e && m == (size_t)-1; i++)
				if (t->ev[i].kind == TK_ENTRY &&
				    lc_is_main(t, &t->ev[i]))
					m = i;
			if (m != (size_t)-1) {
				for (i = s; i < m; i++)
					life[i] = LIFECYCLE_SETUP;
				n += (long)(m - s);
			}
			x = lc_exit_point(t, s, e, m);
			for (i = x + 1; i < e; i++) {
				life[i] = LIFECYCLE_TEARDOWN;
				n++;
			}
			s = e + 1; /* past the exec event (the call that made
				    * the image is its caller's): the next image */
		}
	}
	return n;
}

int lifecycle_cut_name(const char *func)
{
	static const char *const names[] = { "main", "exit", "quick_exit",
					     "_exit", "_Exit" };

	for (size_t i = 0; func && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(func, names[i]))
			return 1;
	return 0;
}

int lifecycle_cut_after(int kind, const char *func)
{
	return kind == TK_EXEC || kind == TK_PROCESS_EXIT ||
	       (kind == TK_EXIT && func && !strcmp(func, "main")) ||
	       (kind == TK_ENTRY && func && strcmp(func, "main") &&
		lifecycle_cut_name(func));
}
