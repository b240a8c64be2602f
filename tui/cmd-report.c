/*
 * tui/cmd-report.c - `propel report --flows | --suspects [--by flow|process]
 * | --rootcause [--flow N] [--normal M] [--reference DB]...
 * [--format=text|json] [DB]`: flows, suspect scores and root-cause paths of
 * a recorded session.  Options and printing only: the session is read by
 * engine/analysis-load.c, the work is analysis/ (flows, profiles,
 * suspects, rootcause).
 *
 * Flow ids are 1-based, in order of their start.  The JSON shapes are a
 * contract (README.md, "propel report"); text is for people.
 *
 *   --rootcause without --flow: the flow of the process that stopped first
 *   (fail-stop) is anomalous, else the top suspect (by flow); the
 *   normal flow is --normal M, else its nearest neighbour among the
 *   session's other flows, or with --reference, among the reference
 *   sessions' flows (M then numbers the first reference's flows).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/flows.h"
#include "analysis/hang.h"
#include "analysis/profiles.h"
#include "analysis/rootcause.h"
#include "analysis/suspects.h"
#include "engine/variance.h"
#include "analysis/trace.h"
#include "engine/analysis-load.h"
#include "engine/directives.h"
#include "engine/hang-load.h"
#include "engine/session.h"
#include "engine/untraced.h"
#include "share/json.h"
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/opt.h"

enum { REPORT_FLOWS = 1, REPORT_SUSPECTS, REPORT_ROOTCAUSE, REPORT_HANG,
       REPORT_VARIANCE };
#define REPORT_MAXREF 16
#define REPORT_MAXPATH 256

struct report_opts {
	int mode, json, by_process, profile, per_process;
	long flow, normal; /* 1-based, 0 = not given */
	const char *ref[REPORT_MAXREF];
	size_t nref;
	const char *start;
	int64_t precision_ns, window_ns;
	struct directives dirs; /* --directive(s): instead of the session's */
	int have_dirs;
};

/* One loaded session: its trace, flows, units and profiles. */
struct report_run {
	const char *path;
	struct trace *t;
	struct flows *f;
	uint32_t *unit_of; /* by process: own array; by flow: f->of */
	int64_t *pids;
	size_t nunits;
	struct profile *prof;
	char *start; /* the session's flow start (record --start) */
	struct directives dirs; /* the session's (record --directive) */
	struct hang_load hl; /* hangs (not for references): hl.h, or NULL */
	struct analysis_skip skip; /* propel's own stdio channels */
};

static void cmd_report_run_release(struct report_run *r)
{
	profiles_free(r->prof, r->nunits);
	hang_load_release(&r->hl);
	if (r->f && r->unit_of != r->f->of)
		free(r->unit_of);
	free(r->pids);
	flows_free(r->f);
	trace_free(r->t);
	free(r->start);
	directives_release(&r->dirs);
	analysis_skip_release(&r->skip);
	memset(r, 0, sizeof(*r));
}

static const char *cmd_report_base(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/* The functions the budget untraced in the session or any reference:
 * left out of all of them alike (engine/untraced.h untraced_marks_names),
 * else a function one session's budget untraced after a while and the
 * other's kept puts a difference in every request's path below it.
 * NULL: none (or a session that does not open: said by its load). */
static struct untraced_marks *cmd_report_untraced(const char *db,
						  const struct report_opts *o)
{
	struct session *s[1 + REPORT_MAXREF] = { NULL };
	sqlite3 *dbs[1 + REPORT_MAXREF];
	struct untraced_marks *m;
	size_t i, n = 0;

	for (i = 0; i <= o->nref && i < 1 + REPORT_MAXREF; i++) {
		char *cause = NULL;

		if (session_open(i ? o->ref[i - 1] : db, SESSION_READ, &s[n],
				 &cause) == 0)
			dbs[n] = session_db(s[n]), n++;
		free(cause);
	}
	m = untraced_marks_names(dbs, n);
	for (i = 0; i < n; i++)
		session_close(s[i]);
	return m;
}

static int cmd_report_load(const char *path, const struct report_opts *o,
			   int by_process, int quiet, struct profiles_space *sp,
			   const struct untraced_marks *also,
			   struct report_run *r, char **cause)
{
	struct flows_opts fo = { 0 };
	struct session *s = NULL;
	size_t i, ncomm = 0;
	int err;

	r->path = path;
	err = session_open(path, SESSION_READ, &s, cause);
	if (err)
		return err;
	if (!o->start) /* as given at trace time */
		r->start = analysis_flow_start(s);
	err = directives_load(s, &r->dirs, cause);
	for (i = 0; !err && o->have_dirs && i < o->dirs.n; i++)
		if (!directives_recorded(&r->dirs, &o->dirs.d[i]))
			err = propel_cause(cause, -EINVAL,
					   "--directive '%s': %s did not "
					   "record the values it compares "
					   "(give it to record or attach)",
					   o->dirs.spec[i], path);
	if (!err)
		err = analysis_stdio_chans(s, &r->skip);
	if (!err)
		err = analysis_load_also(s, also, &r->t, cause);
	if (!err && !quiet && o->mode != REPORT_FLOWS) /* hangs rank first */
		err = hang_load(s, r->t, o->precision_ns, &r->hl, cause);
	session_close(s);
	if (err)
		return err;
	/* every chunk damaged: refused in analysis_load's replay_walk
	 * (chunk_store_check), as in replay and export */
	if (!r->t->nev)
		return propel_cause(cause, -ENODATA,
				    "%s: the session holds no events", path);
	for (i = 0; i < r->t->nev; i++)
		ncomm += r->t->ev[i].kind == TK_SEND ||
			 r->t->ev[i].kind == TK_RECV;
	fo.start_func = o->start ? o->start : r->start;
	fo.per_process = o->per_process;
	fo.skip_chan = (const char *const *)r->skip.chan;
	fo.nskip = r->skip.n;
	fo.dir = o->have_dirs ? o->dirs.d : r->dirs.d;
	fo.ndir = o->have_dirs ? o->dirs.n : r->dirs.n;
	err = flows_build(r->t, &fo, &r->f);
	if (err)
		return propel_cause(cause, err, "%s: out of memory", path);
	if (fo.start_func && !r->f->n)
		return propel_cause(cause, -ENOENT,
				    "%s: --start %s: no call of it in the "
				    "session",
				    path, fo.start_func);
	if (r->f->per_process && !o->per_process && !quiet)
		fprintf(stderr,
			"propel: report: %s: %s; one flow per process\n", path,
			ncomm ? "no request received or message sent by "
				"the first process"
			      : "no communication recorded");
	if (by_process) {
		err = profiles_units_by_process(r->t, &r->unit_of, &r->pids,
						&r->nunits);
	} else {
		r->unit_of = r->f->of;
		r->nunits = r->f->n;
	}
	if (!err)
		err = profiles_build(sp, r->t, r->unit_of, r->nunits, &r->prof);
	if (err)
		return propel_cause(cause, err, "%s: out of memory", path);
	return 0;
}

/* A reference must be a run of the same program. */
static int cmd_report_same_program(const struct report_run *a,
				   const struct report_run *b, char **cause)
{
	const struct trace_process *pa = trace_process_get(a->t, a->t->first_pid);
	const struct trace_process *pb = trace_process_get(b->t, b->t->first_pid);
	const char *ea, *eb;

	if (!pa || !pb || !pa->exe || !pb->exe)
		return 0;
	ea = cmd_report_base(trace_str(a->t, pa->exe));
	eb = cmd_report_base(trace_str(b->t, pb->exe));
	if (strcmp(ea, eb) == 0)
		return 0;
	return propel_cause(cause, -EINVAL,
			    "--reference %s: a session of another program "
			    "(%s, not %s)",
			    b->path, eb, ea);
}

/* JSON */

static void cmd_report_jpath(const struct trace *t, uint32_t path)
{
	const char *fn[REPORT_MAXPATH];
	size_t n = trace_path_funcs(t, path, fn, REPORT_MAXPATH), i;

	putchar('[');
	for (i = 0; i < n && i < REPORT_MAXPATH; i++) {
		if (i)
			putchar(',');
		json_str(stdout, fn[i]);
	}
	putchar(']');
}

static void cmd_report_tpath(const struct trace *t, uint32_t path)
{
	const char *fn[REPORT_MAXPATH];
	size_t n = trace_path_funcs(t, path, fn, REPORT_MAXPATH), i;

	if (!n)
		fputs("?", stdout);
	for (i = 0; i < n && i < REPORT_MAXPATH; i++)
		printf("%s%s", i ? " > " : "", fn[i]);
}

static const char *cmd_report_start_func(const struct trace *t, uint32_t ev)
{
	uint32_t p = t->ev[ev].path;

	if (t->ev[ev].kind == TK_ENTRY || t->ev[ev].kind == TK_EXIT)
		return trace_str(t, t->ev[ev].func);
	return p ? trace_str(t, t->path[p].func) : NULL;
}

static void cmd_report_flows(const struct report_run *r, int json)
{
	const struct trace *t = r->t;
	size_t i, j;

	if (json) {
		printf("{\"rule\": \"%s\", \"rule_pid\": %" PRId64
		       ", \"flows\": [",
		       flows_rule_name(r->f->rule), t->first_pid);
		for (i = 0; i < r->f->n; i++) {
			const struct flows_flow *fl = &r->f->flow[i];
			const struct trace_event *e = &t->ev[fl->start];
			const char *fn = cmd_report_start_func(t, fl->start);

			printf("%s\n {\"id\": %zu, \"start\": {\"pid\": %" PRId64
			       ", \"tid\": %" PRId64 ", \"ts_ns\": %" PRId64
			       ", \"func\": ",
			       i ? "," : "", i + 1, e->pid, e->tid, e->ts_ns);
			if (fn)
				json_str(stdout, fn);
			else
				fputs("null", stdout);
			fputs("}, \"pids\": [", stdout);
			for (j = 0; j < fl->npids; j++)
				printf("%s%" PRId64, j ? ", " : "", fl->pids[j]);
			printf("], \"events\": %zu, \"duration_ns\": %" PRId64 "}",
			       fl->nevents, fl->last_ts - fl->first_ts);
		}
		fputs("\n]}\n", stdout);
		return;
	}
	if (r->f->per_process)
		printf("# %zu flows, one per process\n", r->f->n);
	else if (r->f->rule == FLOWS_RULE_FUNC && r->f->n)
		printf("# %zu flows, from each call of %s\n", r->f->n,
		       trace_str(t, t->ev[r->f->flow[0].start].func));
	else if (r->f->rule == FLOWS_RULE_SERVER)
		printf("# %zu flows, from each request the first process (pid "
		       "%" PRId64 ") receives (automatic: server rule)\n",
		       r->f->n, t->first_pid);
	else
		printf("# %zu flows, from each message the first process (pid "
		       "%" PRId64 ") sends on a connection it opened (automatic: "
		       "client rule)\n",
		       r->f->n, t->first_pid);
	printf("#  ID  START PID/TID      FUNCTION              EVENTS    "
	       "DURATION  PIDS\n");
	for (i = 0; i < r->f->n; i++) {
		const struct flows_flow *fl = &r->f->flow[i];
		const struct trace_event *e = &t->ev[fl->start];
		const char *fn = cmd_report_start_func(t, fl->start);
		char pt[48];

		snprintf(pt, sizeof(pt), "%" PRId64 "/%" PRId64, e->pid, e->tid);
		printf("%5zu  %-16s %-20.20s %7zu %9.3f ms ", i + 1, pt,
		       fn ? fn : "?", fl->nevents,
		       (double)(fl->last_ts - fl->first_ts) / 1e6);
		for (j = 0; j < fl->npids; j++)
			printf("%s%" PRId64, j ? "," : " ", fl->pids[j]);
		putchar('\n');
	}
}

static void cmd_report_failstop(const struct trace *t,
				const struct rootcause_failstop *fs, int json,
				int64_t precision_ns)
{
	if (json) {
		if (!fs->found) {
			fputs("null", stdout);
			return;
		}
		printf("{\"pid\": %" PRId64 ", \"tid\": %" PRId64
		       ", \"last_func\": ",
		       fs->pid, fs->tid);
		if (fs->last_func)
			json_str(stdout, trace_str(t, fs->last_func));
		else
			fputs("null", stdout);
		printf(", \"ts_ns\": %" PRId64 "}", fs->ts_ns);
		return;
	}
	if (!fs->found) {
		printf("fail-stop: none (no process that failed stopped "
		       "%.3f ms or one deviation before the mean of %zu last "
		       "timestamps)\n",
		       (double)precision_ns / 1e6, fs->nproc);
		return;
	}
	printf("fail-stop: pid %" PRId64 " (tid %" PRId64 ") stopped first, "
	       "%.3f s before the mean last timestamp (deviation %.3f s); "
	       "last in %s\n  stack: ",
	       fs->pid, fs->tid, (fs->mean_ns - (double)fs->ts_ns) / 1e9,
	       fs->sd_ns / 1e9,
	       fs->last_func ? trace_str(t, fs->last_func) : "?");
	if (fs->stack)
		cmd_report_tpath(t, fs->stack);
	else
		fputs("(no call open at its end)", stdout);
	putchar('\n');
}

/* The path of space index k, from p or else q (whichever has it). */
static void cmd_report_kpath(const struct profile *p, const struct profile *q,
			     uint32_t k, int json)
{
	const struct profiles_entry *e = k == TRACE_NONE ? NULL
							: profiles_find(p, k);
	const struct profile *from = p;

	if ((!e || e->path == TRACE_NONE) && q && k != TRACE_NONE) {
		e = profiles_find(q, k);
		from = q;
	}
	if (!e || e->path == TRACE_NONE) {
		fputs(json ? "[]" : "-", stdout);
		return;
	}
	if (json)
		cmd_report_jpath(from->t, e->path);
	else
		cmd_report_tpath(from->t, e->path);
}

/* The unit a hang ranks first (analysis/hang.h): by process its first
 * chain's head, by flow the flow of its chain's flow_ev (where it hung);
 * SIZE_MAX when there is no hang. */
static size_t cmd_report_hang_unit(const struct report_run *r, int by_process)
{
	const struct hang_chain *c;
	size_t i;

	if (!r->hl.h || !r->hl.h->nchain)
		return SIZE_MAX;
	c = &r->hl.h->chain[0];
	if (by_process) {
		for (i = 0; i < r->nunits; i++)
			if (r->pids[i] == c->head_pid)
				return i;
		return SIZE_MAX;
	}
	return suspects_unit_back(r->t, r->unit_of, r->nunits, c->flow_ev);
}

static void cmd_report_hang_member(const struct report_run *r,
				   const struct hang_member *m)
{
	const struct hang *h = r->hl.h;
	static const char *const wait[] = { NULL, "unread", "reply", "blocked" };
	static const char *const state[] = { "running", "stopped", "exited",
					     "killed" };
	const char *name = m->name ? strrchr(trace_str(r->t, m->name), '/') : NULL;

	name = name ? name + 1 : m->name ? trace_str(r->t, m->name) : NULL;
	printf("{\"pid\": %" PRId64 ", \"name\": ", m->pid);
	if (name)
		json_str(stdout, name);
	else
		fputs("null", stdout);
	printf(", \"state\": \"%s\", \"state_ns\": %" PRId64, state[m->state],
	       m->state_ns);
	if (m->state == HANG_EXITED || m->state == HANG_KILLED)
		printf(", \"%s\": %d",
		       m->state == HANG_EXITED ? "status" : "signal", m->status);
	if (m->state == HANG_STOPPED || m->blocked_here) {
		const struct hang_thread *b = &h->blocked[m->thread];

		printf(", \"tid\": %" PRId64 ", \"func\": ", b->tid);
		json_str(stdout, trace_str(r->t, b->func));
		printf(", \"since_ns\": %" PRId64, b->since_ns);
	}
	fputs(", \"wait\": ", stdout);
	if (m->wait == HANG_NONE) {
		fputs("null}", stdout);
		return;
	}
	printf("{\"kind\": \"%s\", \"chan\": ", wait[m->wait]);
	if (m->chan < r->hl.in.nchan)
		json_str(stdout, r->hl.in.chan[m->chan]);
	else
		fputs("null", stdout);
	printf(", \"since_ns\": %" PRId64 ", \"wait_ns\": %" PRId64
	       ", \"blocked\": %s",
	       m->wait_since_ns, h->end_ns - m->wait_since_ns,
	       m->blocked_here ? "true" : "false");
	if (m->wait == HANG_UNREAD && m->unread >= 0)
		printf(", \"unread_bytes\": %" PRId64, m->unread);
	fputs("}}", stdout);
}

/* `report --hang`: the threads stopped inside a call, the chains. */
static void cmd_report_hang(const struct report_run *r, int json)
{
	const struct hang *h = r->hl.h;
	char text[2048];
	size_t i, j, u;

	if (json) {
		printf("{\"end_ns\": %" PRId64 ", \"stopped\": [", h->end_ns);
		for (i = 0; i < h->nblocked; i++) {
			const struct hang_thread *b = &h->blocked[i];

			printf("%s\n {\"pid\": %" PRId64 ", \"tid\": %" PRId64
			       ", \"func\": ",
			       i ? "," : "", b->pid, b->tid);
			json_str(stdout, trace_str(r->t, b->func));
			printf(", \"since_ns\": %" PRId64 ", \"last_ns\": %" PRId64
			       ", \"stopped_ns\": %" PRId64 "}",
			       b->since_ns, b->last_ns, h->end_ns - b->last_ns);
		}
		fputs("],\n\"chains\": [", stdout);
		for (i = 0; i < h->nchain; i++) {
			const struct hang_chain *c = &h->chain[i];

			u = r->f && c->flow_ev < r->t->nev ? r->f->of[c->flow_ev]
							   : TRACE_NONE;
			printf("%s\n {\"head\": %" PRId64 ", \"cycle\": %s, "
			       "\"since_ns\": %" PRId64 ", \"flow\": ",
			       i ? "," : "", c->head_pid,
			       c->cycle ? "true" : "false", c->since_ns);
			if (u != TRACE_NONE && u < r->f->n)
				printf("%zu", u + 1);
			else
				fputs("null", stdout);
			fputs(", \"text\": ", stdout);
			json_str(stdout, hang_chain_text(&r->hl.in, h, c, text,
							 sizeof(text)));
			fputs(", \"members\": [", stdout);
			for (j = 0; j < c->n; j++) {
				fputs(j ? ", " : "", stdout);
				cmd_report_hang_member(r, &c->m[j]);
			}
			fputs("]}", stdout);
		}
		fputs("\n]}\n", stdout);
		return;
	}
	printf("stopped inside a call (no event in the last %.3f ms of the "
	       "session): %zu thread(s)\n",
	       (double)h->floor_ns / 1e6, h->nblocked);
	for (i = 0; i < h->nblocked; i++) {
		const struct hang_thread *b = &h->blocked[i];

		printf("  pid %" PRId64 " tid %" PRId64 " in %s since +%.3f s, "
		       "last event +%.3f s (%.3f s before the end)\n",
		       b->pid, b->tid, trace_str(r->t, b->func),
		       (double)(b->since_ns - h->start_ns) / 1e9,
		       (double)(b->last_ns - h->start_ns) / 1e9,
		       (double)(h->end_ns - b->last_ns) / 1e9);
	}
	if (!h->nchain)
		printf("hang: none (no process waits on a stopped one, none "
		       "stopped in a write)\n");
	for (i = 0; i < h->nchain; i++) {
		const struct hang_chain *c = &h->chain[i];

		u = r->f && c->flow_ev < r->t->nev ? r->f->of[c->flow_ev]
						   : TRACE_NONE;
		printf("hang %zu%s: %s", i + 1, c->cycle ? " (deadlock)" : "",
		       hang_chain_text(&r->hl.in, h, c, text, sizeof(text)));
		if (u != TRACE_NONE && u < r->f->n)
			printf(" [flow %zu]", u + 1);
		putchar('\n');
	}
}

/* What --suspects and --rootcause rank by (analysis/suspects.h): by flow,
 * each flow against those of its kind (start function), in steady state;
 * the unit of the fail-stop process first. */
struct report_scores {
	struct rootcause_failstop fs;
	struct suspects_score *sc;
	struct profile *T, *N; /* compared: steady copies, or r's (by process) */
	size_t m, nkinds, ndropped;
	size_t failstop;       /* its unit, (size_t)-1 none */
	size_t hang;	       /* the hang's unit, above it; SIZE_MAX none */
	char htext[1024];      /* the hang's first chain in words */
	uint32_t *group, *ngroup;
	uint8_t *cut;	       /* flows the window cut (suspects_cut) */
};

static void cmd_report_scores_release(struct report_scores *rs,
				      const struct report_run *r)
{
	if (rs->group)
		profiles_free(rs->T, r->nunits);
	else
		free(rs->T);
	profiles_free(rs->N, rs->group ? rs->m : 0); /* else r's entries */
	free(rs->sc);
	free(rs->group);
	free(rs->ngroup);
	free(rs->cut);
	memset(rs, 0, sizeof(*rs));
}

/* Kind numbers by start function name across the sessions. */
static int cmd_report_kind(const char **names, size_t *nn, const char *name)
{
	size_t i;

	for (i = 0; i < *nn; i++)
		if (!strcmp(names[i], name))
			return (int)i;
	names[*nn] = name;
	return (int)(*nn)++;
}

static int cmd_report_scores(const struct report_run *r,
			     const struct report_run *ref, size_t nref,
			     const struct report_opts *o,
			     struct report_scores *rs)
{
	const char **names = NULL;
	struct profile *raw = NULL;
	size_t i, j, k, nn = 0, nd = 0;
	int err = 0, kinds = !o->by_process && !r->f->per_process;

	memset(rs, 0, sizeof(*rs));
	rs->hang = SIZE_MAX;
	rootcause_failstop(r->t, o->precision_ns, ROOTCAUSE_Z, &rs->fs);
	for (i = 0; i < nref; i++)
		rs->m += ref[i].nunits;
	rs->sc = calloc(r->nunits + 1, sizeof(*rs->sc));
	rs->cut = calloc(r->nunits + 1, 1);
	raw = calloc(rs->m + 1, sizeof(*raw));
	if (kinds) {
		rs->group = calloc(r->nunits + 1, sizeof(*rs->group));
		rs->ngroup = calloc(rs->m + 1, sizeof(*rs->ngroup));
		names = calloc(r->nunits + rs->m + 1, sizeof(*names));
	}
	if (!rs->sc || !raw || !rs->cut ||
	    (kinds && (!rs->group || !rs->ngroup || !names))) {
		err = -ENOMEM;
		goto out;
	}
	/* flows the window cut rank after the complete ones */
	if (kinds)
		err = suspects_cut(r->t, r->f, rs->cut);
	if (err)
		goto out;
	for (i = 0, k = 0; i < nref; i++)
		for (j = 0; j < ref[i].nunits; j++, k++) {
			raw[k] = ref[i].prof[j];
			if (kinds)
				rs->ngroup[k] = (uint32_t)cmd_report_kind(
					names, &nn,
					ref[i].f->per_process
						? ""
						: trace_str(ref[i].t,
							    flows_start_func(
								    ref[i].t,
								    ref[i].f, j)));
		}
	for (i = 0; kinds && i < r->nunits; i++)
		rs->group[i] = (uint32_t)cmd_report_kind(
			names, &nn,
			trace_str(r->t, flows_start_func(r->t, r->f, i)));
	if (kinds) {
		/* in steady state, the references as the session */
		err = suspects_steady_cut(r->prof, r->nunits, rs->group,
					  rs->cut, &rs->T, &rs->ndropped);
		for (i = 0, k = 0; !err && i < nref; i++) {
			struct profile *st = NULL;

			err = suspects_steady(ref[i].prof, ref[i].nunits,
					      rs->ngroup + k, &st, &nd);
			if (err) { /* the rest are the references' own */
				for (j = k; j < rs->m; j++)
					raw[j].e = NULL;
				break;
			}
			memcpy(raw + k, st, ref[i].nunits * sizeof(*st));
			free(st); /* its entries now raw's */
			k += ref[i].nunits;
		}
		rs->N = raw;
		raw = NULL;
		if (err)
			goto out;
		for (i = 0; i < r->nunits; i++) {
			for (j = 0; j < i && rs->group[j] != rs->group[i]; j++)
				;
			rs->nkinds += j == i;
		}
	} else {
		rs->T = calloc(r->nunits + 1, sizeof(*rs->T));
		if (!rs->T) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(rs->T, r->prof, r->nunits * sizeof(*rs->T));
		rs->N = raw;
		raw = NULL;
		rs->nkinds = 1;
	}
	err = suspects_score_cut(rs->T, r->nunits, rs->group, rs->N, rs->m,
				 rs->ngroup, o->profile, rs->cut, rs->sc);
	rs->failstop = (size_t)-1;
	if (!err && rs->fs.found) {
		if (o->by_process) {
			for (i = 0; i < r->nunits && r->pids[i] != rs->fs.pid; i++)
				;
			rs->failstop = i < r->nunits ? i : (size_t)-1;
		} else {
			rs->failstop = suspects_unit_back(
				r->t, r->unit_of, r->nunits,
				rootcause_failstop_event(r->t, &rs->fs));
		}
		suspects_failstop_first(rs->sc, r->nunits, rs->failstop);
	}
	rs->hang = err ? SIZE_MAX : cmd_report_hang_unit(r, o->by_process);
	if (rs->hang != SIZE_MAX) { /* a hang's head above fail-stop */
		/* "why" says hang where it moved another unit than the
		 * fail-stop one; where both agree, fail-stop (the JSON's
		 * "hang" names the chain) */
		suspects_failstop_first(rs->sc, r->nunits, rs->hang);
		if (rs->hang != rs->failstop)
			rs->sc[rs->hang].why = SUSPECTS_HANG;
		hang_chain_text(&r->hl.in, r->hl.h, &r->hl.h->chain[0],
				rs->htext, sizeof(rs->htext));
	}
out:
	free(raw);
	free(names);
	return err;
}

static int cmd_report_suspects(struct report_run *r, struct report_run *ref,
			       size_t nref, const struct report_opts *o)
{
	struct report_scores rs;
	struct rootcause_failstop *fs = &rs.fs;
	size_t m, i, *order;
	int err;

	err = cmd_report_scores(r, ref, nref, o, &rs);
	m = rs.m;
	order = calloc(r->nunits + 1, sizeof(*order));
	if (!err && !order)
		err = -ENOMEM;
	if (err)
		goto out;
	for (i = 0; i < r->nunits; i++)
		order[rs.sc[i].rank - 1] = i;
	if (o->json) {
		printf("{\"by\": \"%s\", \"fail_stop\": ",
		       o->by_process ? "process" : "flow");
		cmd_report_failstop(r->t, fs, 1, o->precision_ns);
		fputs(", \"hang\": ", stdout);
		if (rs.hang != SIZE_MAX) {
			printf("{\"head\": %" PRId64 ", \"%s\": %" PRId64
			       ", \"text\": ",
			       r->hl.h->chain[0].head_pid,
			       o->by_process ? "pid" : "id",
			       o->by_process ? r->pids[rs.hang]
					     : (int64_t)rs.hang + 1);
			json_str(stdout, rs.htext);
			putchar('}');
		} else {
			fputs("null", stdout);
		}
		printf(", \"kinds\": %zu, \"steady_dropped\": %zu, "
		       "\"scores\": [",
		       rs.nkinds, rs.ndropped);
	} else {
		cmd_report_failstop(r->t, fs, 0, o->precision_ns);
		if (rs.hang != SIZE_MAX)
			printf("hang: %s -- %s %" PRId64 " ranks first\n",
			       rs.htext, o->by_process ? "pid" : "flow",
			       o->by_process ? r->pids[rs.hang]
					     : (int64_t)rs.hang + 1);
		printf("suspects by %s (%s profiles, k = |kind|/4 of %zu, %zu "
		       "kind(s) of request, %zu one-time path(s) of first "
		       "requests left out, %zu reference profile(s))\n",
		       o->by_process ? "process" : "flow",
		       profiles_kind_name(o->profile), r->nunits, rs.nkinds,
		       rs.ndropped, m);
		printf("%4s %8s %10s  %-9s %-3s %s\n", "RANK",
		       o->by_process ? "PID" : "FLOW", "SCORE", "WHY", "CUT",
		       "TOP PATH (largest delta component)");
	}
	for (i = 0; i < r->nunits; i++) {
		size_t u = order[i];
		const struct profile *nb = NULL;
		uint32_t k = TRACE_NONE;
		const char *why = rs.sc[u].why == SUSPECTS_HANG	    ? "hang"
				  : rs.sc[u].why == SUSPECTS_FAILSTOP ? "fail-stop"
								      : "k-NN";

		if (rs.sc[u].nb_ref == 0)
			nb = &rs.T[rs.sc[u].nb];
		else if (rs.sc[u].nb_ref == 1)
			nb = &rs.N[rs.sc[u].nb];
		if (nb)
			k = profiles_max_delta(&rs.T[u], nb, o->profile, NULL);
		if (o->json) {
			printf("%s\n {\"%s\": %" PRId64 ", \"score\": %.6g, "
			       "\"rank\": %zu, \"why\": \"%s\", \"cut\": %s, "
			       "\"top_path\": ",
			       i ? "," : "", o->by_process ? "pid" : "id",
			       o->by_process ? r->pids[u] : (int64_t)u + 1,
			       rs.sc[u].score, rs.sc[u].rank, why,
			       rs.sc[u].cut ? "true" : "false");
			cmd_report_kpath(&rs.T[u], nb, k, 1);
			putchar('}');
		} else {
			printf("%4zu %8" PRId64 " %10.4f  %-9s %-3s ",
			       rs.sc[u].rank,
			       o->by_process ? r->pids[u] : (int64_t)u + 1,
			       rs.sc[u].score, why, rs.sc[u].cut ? "cut" : "");
			cmd_report_kpath(&rs.T[u], nb, k, 0);
			putchar('\n');
		}
	}
	if (o->json) {
		fputs("\n]}\n", stdout);
	} else if (o->by_process && r->nunits) {
		int64_t w0, w1, pid = fs->found ? fs->pid : r->pids[order[0]];
		int64_t win = o->window_ns;

		if (!win) /* 1/32 of the session, at least 1 ms */
			win = (r->t->end_ts - r->t->ev[0].ts_ns) / 32;
		if (win < 1000000)
			win = 1000000;
		if (rootcause_window(r->t, pid, win, &w0, &w1) == 0)
			printf("earliest anomalous window of pid %" PRId64
			       ": ts %" PRId64 " .. %" PRId64 " (%.3f ms "
			       "windows)\n",
			       pid, w0, w1, (double)win / 1e6);
	}
out:
	cmd_report_scores_release(&rs, r);
	free(order);
	return err;
}

/* The flows the normal one is drawn from, which tell a normal variation
 * in coverage (analysis/rootcause.h): the references' flows, else the
 * session's; of the anomalous flow's kind (the function its start event
 * is in) when the flows have kinds.  NULL with *n 0 when out of memory
 * (the paths are then ranked without). */
static const struct profile **cmd_report_others(const struct report_run *r,
						size_t ai,
						const struct report_run *ref,
						size_t nref, size_t *n)
{
	const struct report_run *runs = nref ? ref : r;
	size_t nruns = nref ? nref : 1, i, j, m = 0;
	const struct profile **o;
	const char *kind = r->f->per_process
				   ? NULL
				   : trace_str(r->t, flows_start_func(r->t, r->f,
								      ai));

	*n = 0;
	for (i = 0; i < nruns; i++)
		m += runs[i].nunits;
	o = calloc(m + 1, sizeof(*o));
	if (!o)
		return NULL;
	for (i = 0; i < nruns; i++)
		for (j = 0; j < runs[i].nunits; j++)
			if (!kind || runs[i].f->per_process ||
			    !strcmp(kind, trace_str(runs[i].t,
						    flows_start_func(runs[i].t,
								     runs[i].f,
								     j))))
				o[(*n)++] = &runs[i].prof[j];
	return o;
}

static int cmd_report_rootcause(struct report_run *r, struct report_run *ref,
				size_t nref, struct profiles_space *sp,
				const struct report_opts *o, char **cause)
{
	const struct profile *a, *nm = NULL;
	const struct report_run *nrun = r;
	struct rootcause rc = { 0 };
	size_t ai, ni = 0, i, j, nb = SIZE_MAX;
	int err;

	if (r->nunits < 1)
		return propel_cause(cause, -ENOENT, "%s: no flows", r->path);
	if (o->flow) {
		if (o->flow < 1 || (size_t)o->flow > r->nunits)
			return propel_cause(cause, -ENOENT,
					    "--flow %ld: no such flow (%s has "
					    "%zu)",
					    o->flow, r->path, r->nunits);
		ai = (size_t)o->flow - 1;
	} else { /* the top suspect: the fail-stop process's flow first */
		struct report_scores rs;

		err = cmd_report_scores(r, ref, nref, o, &rs);
		for (ai = 0; !err && ai < r->nunits && rs.sc[ai].rank != 1;
		     ai++)
			;
		/* its normal: the neighbour that set its score (§5.2), not
		 * the nearest flow, which may be another like it (one slow
		 * request in 20: the nearest of one is another slow one) */
		if (!err && ai < r->nunits && rs.sc[ai].nb_ref == 0 &&
		    rs.sc[ai].why == SUSPECTS_KNN && rs.sc[ai].nb != ai) {
			size_t g = 0; /* with k = 1 it is the nearest */

			for (i = 0; i < r->nunits; i++)
				g += !rs.group || rs.group[i] == rs.group[ai];
			if (suspects_k(g) >= 2)
				nb = rs.sc[ai].nb;
		}
		cmd_report_scores_release(&rs, r);
		if (err)
			return err;
	}
	a = &r->prof[ai];
	if (nref) {
		nrun = &ref[0];
		if (o->normal) {
			if (o->normal < 1 || (size_t)o->normal > ref[0].nunits)
				return propel_cause(cause, -ENOENT,
						    "--normal %ld: no such flow "
						    "(%s has %zu)",
						    o->normal, ref[0].path,
						    ref[0].nunits);
			ni = (size_t)o->normal - 1;
		} else {
			/* the reference flow of the most similar coverage
			 * (self-propelled §5: "the anomalous flow with the most
			 * similar coverage"): the fewest paths in one and not
			 * the other, so that what differs is the problem and
			 * not a request that took another branch early (a
			 * fresh connection's, a cache miss's, ranked first by
			 * time); of those, the nearest by the profile */
			double bc = -1, bd = -1;

			for (i = 0; i < nref; i++)
				for (j = 0; j < ref[i].nunits; j++) {
					double c = profiles_distance(
						a, &ref[i].prof[j],
						PROFILES_COVERAGE);
					double d = profiles_distance(
						a, &ref[i].prof[j], o->profile);

					if (bc < 0 || c < bc ||
					    (c == bc && d < bd)) {
						bc = c;
						bd = d;
						nrun = &ref[i];
						ni = j;
					}
				}
		}
		if (!nrun->nunits)
			return propel_cause(cause, -ENOENT,
					    "--reference %s: no flows",
					    nrun->path);
	} else if (o->normal) {
		if (o->normal < 1 || (size_t)o->normal > r->nunits)
			return propel_cause(cause, -ENOENT,
					    "--normal %ld: no such flow (%s has "
					    "%zu)",
					    o->normal, r->path, r->nunits);
		ni = (size_t)o->normal - 1;
	} else {
		ni = nb < r->nunits ? nb
				    : suspects_nearest(r->prof, r->nunits, ai,
						       o->profile);
		if (ni == r->nunits)
			return propel_cause(cause, -ENOENT,
					    "%s: one flow only: nothing to "
					    "compare it with (give --reference)",
					    r->path);
	}
	nm = &nrun->prof[ni];
	{
		/* the flows a normal variation is seen in: the references',
		 * else the session's -- unless --normal names the normal flow
		 * (the flows are classified already, as in §5.1): the others
		 * of the session are not known normal, and a fault they share
		 * (condor's perbatch: every job but the first) read as a
		 * variation and ranked last */
		size_t nothers = 0;
		const struct profile **others =
			o->normal && !nref
				? NULL
				: cmd_report_others(r, ai, ref, nref, &nothers);

		err = rootcause_paths_among(sp, a, nm, others, nothers, &rc);
		free(others);
	}
	if (err)
		return err;
	if (o->json) {
		printf("{\"anomalous\": %zu, \"normal\": %zu, \"delta_raw\": %zu, "
		       "\"delta_kept\": %zu, \"paths\": [",
		       ai + 1, ni + 1, rc.delta_raw, rc.n);
		for (i = 0; i < rc.n; i++) {
			const struct rootcause_path *p = &rc.p[i];

			printf("%s\n {\"path\": ", i ? "," : "");
			cmd_report_jpath(p->t, p->path);
			fputs(", \"merged_last\": [", stdout);
			for (j = 0; j < p->nlast; j++) {
				if (j)
					putchar(',');
				json_str(stdout, trace_str(p->t, p->last[j]));
			}
			printf("], \"side\": \"%s\", \"rank_time\": %zu, "
			       "\"rank_length\": %zu, \"first_ts_ns\": %" PRId64
			       ", \"variation\": %s, \"seen\": %zu}",
			       p->side ? "normal" : "anomalous", p->rank_time,
			       p->rank_length, p->first_ts,
			       p->variation ? "true" : "false", p->seen);
		}
		fputs("\n]}\n", stdout);
	} else {
		printf("anomalous: flow %zu of %s; normal: flow %zu of %s\n",
		       ai + 1, r->path, ni + 1, nrun->path);
		printf("delta: %zu paths (only in one of the two), %zu after "
		       "prefix pruning, %zu after merging\n",
		       rc.delta_raw, rc.delta_pruned, rc.n);
		printf("(SEEN: how many other flows took the path; a normal "
		       "variation -- a path another flow took too, or one few "
		       "flows take -- ranks last)\n");
		printf("%5s %5s %-9s %12s %5s  %s\n", "TIME", "LEN", "SIDE",
		       "FIRST(+ms)", "SEEN", "PATH");
		for (i = 0; i < rc.n; i++) {
			const struct rootcause_path *p = &rc.p[i];
			const char *fn[REPORT_MAXPATH];
			size_t n = trace_path_funcs(p->t, p->path, fn,
						    REPORT_MAXPATH);

			printf("%5zu %5zu %-9s %12.3f %4zu%c  ", p->rank_time,
			       p->rank_length, p->side ? "normal" : "anomalous",
			       (double)p->rel_ts / 1e6, p->seen,
			       p->variation ? '~' : ' ');
			for (j = 0; j + 1 < n && j < REPORT_MAXPATH; j++)
				printf("%s > ", fn[j]);
			if (p->nlast > 1) {
				putchar('[');
				for (j = 0; j < p->nlast; j++)
					printf("%s%s", j ? ", " : "",
					       trace_str(p->t, p->last[j]));
				puts("]");
			} else {
				puts(p->nlast ? trace_str(p->t, p->last[0]) : "?");
			}
		}
	}
	rootcause_release(&rc);
	return 0;
}

static int cmd_report_num(const char *opt, const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < 1) {
		char what[64];

		snprintf(what, sizeof(what), "report: %s %s", opt, s);
		propel_report(what, 0, "not a positive number");
		return -1;
	}
	*out = v;
	return 0;
}

static int cmd_report_mode(struct report_opts *o, int mode)
{
	if (o->mode && o->mode != mode) {
		propel_report("report", 0,
			      "--flows, --suspects, --rootcause and --hang "
			      "exclude each other");
		return -1;
	}
	o->mode = mode;
	return 0;
}

static int cmd_report_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "flows", no_argument, NULL, 'F' },
		{ "suspects", no_argument, NULL, 'S' },
		{ "rootcause", no_argument, NULL, 'R' },
		{ "hang", no_argument, NULL, 'H' },
		{ "variance", no_argument, NULL, 'v' },
		{ "by", required_argument, NULL, 'b' },
		{ "flow", required_argument, NULL, 'n' },
		{ "normal", required_argument, NULL, 'm' },
		{ "reference", required_argument, NULL, 'r' },
		{ "format", required_argument, NULL, 'f' },
		{ "profile", required_argument, NULL, 'p' },
		{ "start", required_argument, NULL, 's' },
		{ "per-process", no_argument, NULL, 'P' },
		{ "clock-precision", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "directive", required_argument, NULL, 'd' },
		{ "directives", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_opts o = { 0 };
	struct report_run run = { 0 }, ref[REPORT_MAXREF];
	struct profiles_space sp = { 0 };
	struct untraced_marks *also = NULL;
	const char *db = PROPEL_SESSION_DEFAULT;
	char *cause = NULL, what[320];
	int c, err = 0, ret = 0;
	long v;
	size_t i;
	static char obuf[1 << 16];

	memset(ref, 0, sizeof(ref));
	o.profile = PROFILES_COVERAGE;
	o.precision_ns = ROOTCAUSE_PRECISION_NS;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
		case 'S':
		case 'R':
		case 'H':
		case 'v':
			if (cmd_report_mode(&o, c == 'F'   ? REPORT_FLOWS
						: c == 'S' ? REPORT_SUSPECTS
						: c == 'H' ? REPORT_HANG
						: c == 'v' ? REPORT_VARIANCE
							   : REPORT_ROOTCAUSE))
				return 2;
			break;
		case 'b':
			if (strcmp(optarg, "flow") && strcmp(optarg, "process")) {
				propel_report("report: --by", 0,
					      "flow or process");
				return 2;
			}
			o.by_process = !strcmp(optarg, "process");
			break;
		case 'n':
		case 'm':
			if (cmd_report_num(c == 'n' ? "--flow" : "--normal",
					   optarg, c == 'n' ? &o.flow : &o.normal))
				return 2;
			break;
		case 'r':
			if (o.nref == REPORT_MAXREF) {
				propel_report("report: --reference", 0,
					      "at most 16 reference sessions");
				return 2;
			}
			if (session_check_path(optarg, &cause)) {
				propel_report("report: --reference", 0, cause);
				free(cause);
				return 2;
			}
			o.ref[o.nref++] = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				snprintf(what, sizeof(what), "report: --format=%s",
					 optarg);
				propel_report(what, 0, "unknown format (text or json)");
				return 2;
			}
			o.json = !strcmp(optarg, "json");
			break;
		case 'p':
			o.profile = profiles_kind_parse(optarg);
			if (o.profile < 0) {
				snprintf(what, sizeof(what), "report: --profile %s",
					 optarg);
				propel_report(what, 0,
					      "coverage, time, comm or composite");
				return 2;
			}
			break;
		case 's':
			o.start = optarg;
			break;
		case 'P':
			o.per_process = 1;
			break;
		case 'c':
		case 'w':
			if (cmd_report_num(c == 'c' ? "--clock-precision"
						    : "--window",
					   optarg, &v))
				return 2;
			if (c == 'c')
				o.precision_ns = (int64_t)v * 1000000;
			else
				o.window_ns = (int64_t)v * 1000000;
			break;
		case 'd':
		case 'D':
			/* instead of the session's: only values it recorded
			 * (cmd_report_load); an empty FILE: none */
			o.have_dirs = 1;
			if (opt_directive("report", c == 'D', optarg, &o.dirs))
				return 2;
			break;
		case 'h': /* tui/propel.c answers --help before exec */
			printf("usage: propel report %s\n\n%s\n",
			       cmd_report_entry.usage, cmd_report_entry.summary);
			return 0;
		default:
			propel_report("report", 0,
				      "bad option (see propel report --help)");
			return 2;
		}
	}
	if (optind < argc)
		db = argv[optind++];
	if (optind < argc) {
		propel_report("report", 0,
			      "too many arguments (see propel report --help)");
		return 2;
	}
	if (!o.mode) {
		propel_report("report", 0,
			      "say --flows, --suspects, --rootcause, --hang or "
			      "--variance");
		return 2;
	}
	if ((o.flow || o.normal) && o.mode != REPORT_ROOTCAUSE) {
		propel_report("report", 0, "--flow and --normal go with --rootcause");
		return 2;
	}
	if (o.nref && (o.mode == REPORT_FLOWS || o.mode == REPORT_HANG)) {
		propel_report("report", 0,
			      "--reference goes with --suspects or "
			      "--rootcause");
		return 2;
	}
	if (o.by_process && o.mode != REPORT_SUSPECTS) {
		propel_report("report", 0, "--by goes with --suspects");
		return 2;
	}
	if (o.mode == REPORT_VARIANCE) { /* engine/variance.c */
		if (o.nref || o.flow || o.normal || o.by_process || o.have_dirs) {
			propel_report("report", 0, "--variance takes only "
				      "--format and DB");
			return 2;
		}
		err = variance_report(db, o.json, &cause);
		if (err)
			propel_report("report", err, cause);
		free(cause);
		return err ? 1 : 0;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if (o.nref && o.mode != REPORT_FLOWS)
		also = cmd_report_untraced(db, &o);
	err = cmd_report_load(db, &o, o.by_process, 0, &sp, also, &run,
			      &cause);
	for (i = 0; !err && i < o.nref && o.mode != REPORT_FLOWS; i++) {
		err = cmd_report_load(o.ref[i], &o, o.by_process, 1, &sp, also,
				      &ref[i], &cause);
		if (!err)
			err = cmd_report_same_program(&run, &ref[i], &cause);
	}
	if (!err && o.flow && (size_t)o.flow > run.nunits)
		err = propel_cause(&cause, -ENOENT,
				   "--flow %ld: no such flow (%s has %zu)",
				   o.flow, db, run.nunits);
	if (!err) {
		switch (o.mode) {
		case REPORT_FLOWS:
			cmd_report_flows(&run, o.json);
			break;
		case REPORT_SUSPECTS:
			err = cmd_report_suspects(&run, ref, o.nref, &o);
			break;
		case REPORT_HANG:
			cmd_report_hang(&run, o.json);
			break;
		default:
			err = cmd_report_rootcause(&run, ref, o.nref, &sp, &o,
						   &cause);
			break;
		}
	}
	if (fflush(stdout) != 0 && !err)
		err = -EIO;
	if (err) {
		propel_report("report", err, cause);
		ret = 1;
	}
	free(cause);
	cmd_report_run_release(&run);
	for (i = 0; i < o.nref; i++)
		cmd_report_run_release(&ref[i]);
	profiles_space_release(&sp);
	untraced_marks_free(also);
	directives_release(&o.dirs);
	return ret;
}

const struct propel_cmd cmd_report_entry = {
	.name = "report",
	.usage = "--flows | --suspects [--by flow|process] | --rootcause "
		 "[--flow N] [--normal M] | --hang | --variance\n"
		 "       [--reference DB]... [--format=text|json] "
		 "[--profile coverage|time|comm|composite]\n"
		 "       [--start FUNC] [--per-process] [--clock-precision MS] "
		 "[--window MS]\n"
		 "       [--directive SPEC]... [--directives FILE] [DB]",
	.summary =
		"flows, suspect scores and root-cause call paths of a session\n"
		"  --flows          one flow per request: the events reachable "
		"from each request\n"
		"                   the first process receives, or each message "
		"it sends on a\n"
		"                   connection it opened (said which); --start "
		"FUNC: from each\n"
		"                   call of FUNC; --per-process, or no "
		"communication: one per\n"
		"                   process\n"
		"  --suspects       fail-stop (earliest last timestamp) first, "
		"then suspect\n"
		"                   scores (k-th nearest neighbour among flows of "
		"the same\n"
		"                   kind, in steady state, k = |kind|/4; with "
		"--reference:\n"
		"                   min(d(h,h_k), d(h,n_1))), by flow or by "
		"process\n"
		"  --rootcause      call paths only in the anomalous flow (--flow "
		"N, default the\n"
		"                   top suspect) or only in the normal one "
		"(--normal M, default\n"
		"                   its nearest neighbour, from the --reference "
		"sessions if any),\n"
		"                   prefix-pruned, merged, ranked by first "
		"occurrence and length\n"
		"  --hang           threads stopped inside a call and the "
		"wait-for chains to the\n"
		"                   process they wait on (the head ranks "
		"first in --suspects)\n"
		"  --variance       flows grouped by path, their CV and p95, "
		"the functions by\n"
		"                   the share of a problem group's variance "
		"they explain, and\n"
		"                   what attach --adaptive traced\n"
		"  --directive SPEC mapping directives instead of those the "
		"session was\n"
		"                   recorded with (record --directive), among "
		"the values it\n"
		"                   recorded; --directives FILE (empty: none)\n"
		"  --profile P      coverage (default), time, comm or composite\n"
		"  --clock-precision MS  fail-stop needs a larger lead (default "
		"10)\n"
		"  --format=json    the shapes README.md documents",
	.exec = cmd_report_exec,
};
