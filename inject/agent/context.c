/*
 * inject/agent/context.c - user contexts (makecontext / swapcontext /
 * setcontext): which frames are open after a switch.
 *
 * A thread's shadow stack (agent.h struct athread) is the frames of the
 * context it runs.  A switch leaves those frames where they are -- on the
 * stack of the context left, to be resumed later -- and resumes others.
 * So the shadow stack goes with the context:
 *
 *   swapcontext(oucp, ucp), a traced call (slow.c enter_slow, after its
 *       own frame is pushed): ctx_switch saves the thread's frames under
 *       oucp, then, when ucp's were saved by an earlier swapcontext,
 *       makes them the thread's (the resumed context's swapcontext frame
 *       on top, closed as that call returns) and writes a SWITCH record,
 *       the depth's change, so replay shows each call at the depth of its
 *       own context.  A context never saved (a makecontext one, entered
 *       for the first time) runs on top of the frames as they are: its
 *       function is a call under the swapcontext that entered it.
 *   setcontext(ucp): the same without the save (the context left is
 *       abandoned).
 *   getcontext(ucp), makecontext(ucp, ...): ucp holds something new; the
 *       frames saved under it are dropped.  makecontext also notes ucp's
 *       stack and successor (uc_link).
 *   The function makecontext named returns (callback.c ag_on_fret: it was
 *       entered from libc's __start_context, untraced): when no frame of
 *       its stack is left, libc goes on to uc_link: ctx_end resumes the
 *       frames saved under it.
 * A swapcontext into a context whose frames this agent never saw (one
 * made before the attach) leaves the frames alone; the shadow stack's own
 * unwinding (hot.c shadow_unwind) closes what the program left.
 * The tables are the process's (a context may be resumed by any thread),
 * changed under ag_lock; calls of the four functions are slow-path calls
 * (F_SLOW: slow.c intercepts), never the hot path's.
 */
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "inject/agent/agent.h"

#define CTX_MAX 256 /* contexts with saved frames / made contexts */

static struct ctx_saved {
	uint64_t key;  /* the ucontext_t's address; 0: free */
	uint32_t depth;
	struct shadow *frames;
} saved[CTX_MAX];

static struct ctx_made {
	uint64_t key; /* 0: free */
	uint64_t lo, hi; /* its stack */
	uint64_t link;   /* uc_link */
} made[CTX_MAX];
static volatile int nmade; /* made[] entries ever used: a quick "none" */

static struct ctx_saved *saved_find(uint64_t key)
{
	for (int i = 0; i < CTX_MAX; i++)
		if (saved[i].key == key)
			return &saved[i];
	return NULL;
}

static void saved_drop(uint64_t key)
{
	struct ctx_saved *s = key ? saved_find(key) : NULL;

	if (!s)
		return;
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* The thread's frames, kept under key (replacing what was). */
static void saved_put(struct athread *t, uint64_t key)
{
	struct ctx_saved *s;
	struct shadow *fr = NULL;

	saved_drop(key);
	s = saved_find(0);
	if (!s || !key)
		return; /* full: that context's frames will be unwound */
	if (t->depth &&
	    !(fr = malloc(t->depth * sizeof(*fr))))
		return;
	if (t->depth)
		memcpy(fr, t->shadow, t->depth * sizeof(*fr));
	s->frames = fr;
	s->depth = t->depth;
	s->key = key;
}

/* Resume the frames saved under key, if any: the SWITCH record. */
static void saved_resume(struct athread *t, uint64_t key)
{
	struct ctx_saved *s = key ? saved_find(key) : NULL;
	int32_t delta;

	if (!s)
		return;
	delta = (int32_t)s->depth - (int32_t)t->depth;
	t->depth = 0;
	__asm__ volatile("" ::: "memory");
	if (s->depth)
		memcpy(t->shadow, s->frames, s->depth * sizeof(*s->frames));
	__asm__ volatile("" ::: "memory");
	t->depth = s->depth;
	if (delta && t->ring && t->gen == ag_gen && ag_active && !t->dead)
		rec_put(t, PROPEL_REC_SWITCH, 0, (uint32_t)delta);
	saved_drop(key);
}

static void made_put(const ucontext_t *uc)
{
	uint64_t key = (uint64_t)uc;
	int i, fr = -1;

	for (i = 0; i < nmade; i++) {
		if (made[i].key == key)
			break;
		if (!made[i].key && fr < 0)
			fr = i;
	}
	if (i == nmade) {
		if (fr >= 0)
			i = fr;
		else if (nmade < CTX_MAX)
			__atomic_store_n(&nmade, nmade + 1, __ATOMIC_RELEASE);
		else
			return;
	}
	made[i].lo = (uint64_t)uc->uc_stack.ss_sp;
	made[i].hi = made[i].lo + uc->uc_stack.ss_size;
	made[i].link = (uint64_t)uc->uc_link;
	made[i].key = key;
}

/* A traced call of swapcontext, setcontext, getcontext or makecontext,
 * its frame pushed (slow.c enter_slow); t may be NULL. */
void ctx_call(struct athread *t, uint32_t kind, const struct ag_frame *fr)
{
	sigset_t old;

	slow_lock(&old);
	switch (kind) {
	case IC_SWAPCONTEXT:
		if (t && !t->dead) {
			saved_put(t, fr->rdi);
			saved_resume(t, fr->rsi);
		}
		break;
	case IC_SETCONTEXT:
		if (t && !t->dead)
			saved_resume(t, fr->rdi);
		break;
	case IC_MAKECONTEXT:
		saved_drop(fr->rdi);
		if (fr->rdi)
			made_put((const ucontext_t *)fr->rdi);
		break;
	case IC_GETCONTEXT:
		saved_drop(fr->rdi);
		break;
	}
	slow_unlock(&old);
}

/* A function entered from untraced code returned through slot, its frame
 * closed (callback.c ag_on_fret, t busy): if it was the first frame of a
 * made context's stack, libc resumes that context's successor. */
void ctx_end(struct athread *t, uint64_t slot)
{
	int n = __atomic_load_n(&nmade, __ATOMIC_ACQUIRE);
	sigset_t old;

	if (!n)
		return;
	slow_lock(&old);
	for (int i = 0; i < n; i++) {
		struct ctx_made *m = &made[i];

		if (!m->key || slot < m->lo || slot >= m->hi)
			continue;
		/* frames of that stack still open: not its end */
		if (t->depth && t->shadow[t->depth - 1].slot >= m->lo &&
		    t->shadow[t->depth - 1].slot < m->hi)
			break;
		saved_drop(m->key); /* (it ended: nothing to resume) */
		if (m->link)
			saved_resume(t, m->link);
		break;
	}
	slow_unlock(&old);
}
