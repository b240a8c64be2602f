/*
 * analysis/suspects.h - suspect scores (anomaly-diagnosis §4.2.2).
 *
 * Unsupervised: the score of h in T is its distance to its k-th nearest
 * neighbour in T (itself excluded), k = |T|/4 (at least 1, at most
 * |T| - 1): a profile needs k close neighbours to score low (eq. 4).
 * One-class, with reference profiles N (known-good runs, or earlier
 * unrelated failures, which then stop generic symptoms from scoring):
 * min(d(h, h_k), d(h, n_1)) (eq. 6).  A lone profile without reference
 * scores 0.  Rank 1 is the highest score; ties keep the units' order.
 * Each score names the neighbour that set it (the one the delta vector is
 * taken against, §5.2).  Pure.
 */
#ifndef PROPEL_ANALYSIS_SUSPECTS_H
#define PROPEL_ANALYSIS_SUSPECTS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profiles.h"

enum { SUSPECTS_KNN, SUSPECTS_FAILSTOP, SUSPECTS_HANG /* analysis/hang.h */ };

struct suspects_score {
	double score;
	size_t nb;	/* neighbour that set the score (index in T or N) */
	int nb_ref;	/* 1: nb indexes N; -1: no neighbour */
	size_t rank;	/* 1 = most suspect */
	int cut;	/* 1: a unit the recording's window cut (suspects_cut):
			 * ranked after the complete ones, no one's neighbour */
	int why;	/* SUSPECTS_KNN, or SUSPECTS_FAILSTOP: ranked first as
			 * it holds the process that stopped first, or
			 * SUSPECTS_HANG: above that, a hang's (given by
			 * the caller: tui/cmd-report.c) */
};

/* k for |T| = n: n / 4, clamped to [1, n - 1] (0 when n < 2). */
size_t suspects_k(size_t n);

/*
 * Scores of the n profiles of T against T and the m profiles of N (m may
 * be 0), with k (0: suspects_k(n)).  out has n entries.  0 or -ENOMEM.
 */
int suspects_score(const struct profile *T, size_t n, const struct profile *N,
		   size_t m, int kind, size_t k, struct suspects_score *out);

/*
 * spTracer's order and its comparison of like with like (issue 32), the
 * steps suspects_rank takes:
 *
 * Kinds: group[i] numbers unit i's kind of request (flows: the function
 * its start event is in; NULL: all one kind), ngroup[j] reference j's in
 * the same numbering.  A unit is scored against the units of its kind
 * (k = |G|/4 of them) and, with references, against the nearest
 * reference of its kind (of any kind when none is of its kind): a
 * request is compared with requests of its own kind, not with an
 * end-of-stream marker.  A unit alone in its kind has no neighbour: 0
 * without references.
 *
 * Steady state: a program's first request of a kind does work no later
 * one does (connections opened, tables filled, code first resolved), and
 * misses work every later one does (a lookup that finds what the first
 * left): suspects_steady copies the profiles with, in the first unit of
 * each kind that has at least SUSPECTS_STEADY_MIN units, the paths no
 * other unit of that kind entered dropped and the paths every other unit
 * of it entered added (their mean time and comm), time and comm
 * renormalized; *ndropped counts those paths.  Every other unit is as it
 * was: an anomaly of a later request, or of the first one in a path
 * another request also takes, still scores.  With cut (suspects_cut:
 * the units the window cut; suspects_steady_cut), "every other unit"
 * is every other complete one, when the kind has one: a unit cut before
 * a process was reached lacks that process's paths, and with the first
 * two flows of a batch cut (propel reached the log daemon during the
 * second job) the first flow missed the daemon's paths that every
 * complete flow has (flows-auto batch/steady, 2 runs in 10 under load).
 *
 * Fail-stop first: suspects_failstop_first gives unit u rank 1 (why =
 * SUSPECTS_FAILSTOP), the others keep their order below it.
 */
#define SUSPECTS_STEADY_MIN 3
int suspects_score_kinds(const struct profile *T, size_t n,
			 const uint32_t *group, const struct profile *N,
			 size_t m, const uint32_t *ngroup, int kind,
			 struct suspects_score *out);

/*
 * Cut flows.  A flow the recording's window cut is not compared as if it
 * were complete: suspects_cut marks cut[i] for each flow of f that
 *   began before the window: it holds the return of a call entered before
 *     its thread's first kept event (an exit with no entry in the trace,
 *     or of an entry rebuilt for a frame lost in a wrapped ring), or a
 *     message to or from a traced process before that process's first
 *     kept event that the process did not record (unmatched), or
 *     the send that a process --follow reached (not forked in the
 *     window) read first: the agent held it while propel injected that
 *     process, propel's time in the flow's profile (one flow a process);
 *   did not finish in it: a request (the server rule: a recv of the
 *     first process) with no answer on its channel in the flow; any other
 *     flow holding a call still open where its thread's recording ended
 *     (not by the thread's or the process's end; not a call of a path
 *     that returned before in the thread: its loop's wait for work, as
 *     rootcause.h's idle rule); or a message to or
 *     from a traced process after that process's last kept event that it
 *     did not record (each agent is switched off in turn: a process's
 *     window can end before its peers').
 * suspects_score_cut scores like suspects_score_kinds with cut units left
 * out of every unit's neighbours (each is still scored against the
 * complete ones of its kind) and ranks the cut units after the complete
 * ones (score order within each part); a fail-stop or hang unit still
 * goes first.  cut NULL: none.  0 or -ENOMEM.
 */
struct flows;
int suspects_cut(const struct trace *t, const struct flows *f, uint8_t *cut);
int suspects_score_cut(const struct profile *T, size_t n,
		       const uint32_t *group, const struct profile *N,
		       size_t m, const uint32_t *ngroup, int kind,
		       const uint8_t *cut, struct suspects_score *out);
/* *out: n profiles (profiles_free). 0 or -ENOMEM. */
int suspects_steady(const struct profile *T, size_t n, const uint32_t *group,
		    struct profile **out, size_t *ndropped);
int suspects_steady_cut(const struct profile *T, size_t n,
			const uint32_t *group, const uint8_t *cut,
			struct profile **out, size_t *ndropped);
void suspects_failstop_first(struct suspects_score *sc, size_t n, size_t u);
/* The unit of event ev (the fail-stop thread's last, rootcause.h), else
 * of the latest earlier event of its thread that has one; (size_t)-1
 * when none (ev TRACE_NONE too). */
size_t suspects_unit_back(const struct trace *t, const uint32_t *unit_of,
			  size_t nunits, uint32_t ev);
/* All three, for a view that shows ranks only: unit failstop ((size_t)-1:
 * none) first, cut units (NULL: none) after the complete ones.  0 or
 * -ENOMEM. */
int suspects_rank(const struct profile *T, size_t n, const uint32_t *group,
		  int kind, size_t failstop, struct suspects_score *out);
int suspects_rank_cut(const struct profile *T, size_t n,
		      const uint32_t *group, int kind, size_t failstop,
		      const uint8_t *cut, struct suspects_score *out);
/* suspects_rank of flows f (prof: their profiles, flows_kinds their
 * kinds), the flow of fs's fail-stop process first (rootcause.h; fs
 * filled in with the default precision), the cut flows last: the order
 * `report --suspects` gives, for the TUI's views.  0 or -ENOMEM. */
struct rootcause_failstop;
int suspects_rank_flows(const struct trace *t, const struct flows *f,
			const struct profile *prof, int kind,
			struct rootcause_failstop *fs,
			struct suspects_score *out);

/* The index of T's profile nearest to T[a] other than a (n < 2: n). */
size_t suspects_nearest(const struct profile *T, size_t n, size_t a, int kind);

#endif
