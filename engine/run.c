/*
 * engine/run.c - one capture run (engine/run.h): the start/poll/stop of
 * `record` and `attach`, each with a local backend and a --follow one.
 *
 *   record, local:   CMD forked with the agent preloaded into the
 *       session directory; propel is a child subreaper, so orphaned
 *       descendants are reaped here; the run ends when CMD has ended
 *       and no traced descendant is left (capture_traced_left).
 *   record, follow:  CMD writes into this host's propeld's directory with
 *       PROPEL_FOLLOW=1; propeld (and, through ssh, other hosts') inject
 *       the peers; the run ends when CMD has ended.
 *   attach, local:   the targets injected (inject_agent_start), their
 *       execs followed (inject/tracer.c); the run ends at --duration or
 *       when no process traces into the session any more.
 *   attach, follow:  the targets injected through this host's propeld;
 *       the run ends at --duration or when every target has exited.
 *
 * In --mode full a local run drains the rings while it goes
 * (share/drain.c); --follow's propelds drain their own.  --vitals starts
 * the kernel collectors (engine/vitals-trace.h) on the targets and on
 * what they fork, and, under --follow, on the peers of every host that
 * shares this kernel as they come (run_vitals_follow).  At the end every
 * agent is switched off (tracer_detach_all, the one detach-all that
 * propeld uses too) before the session is stored.  run_snapshot reads
 * the rings so far into a scratch session, for the live console.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/analysis-load.h"
#include "engine/capture.h"
#include "engine/follow.h"
#include "engine/ingest.h"
#include "engine/ingest-live.h"
#include "engine/ingest-warm.h"
#include "engine/run.h"
#include "engine/session.h"
#include "engine/symbols.h"
#include "engine/transport.h"
#include "engine/vitals-host.h"
#include "engine/vitals-trace.h"
#include "inject/inject.h"
#include "inject/tracer.h"
#include "share/agent-abi.h"
#include "share/clock.h"
#include "share/drain.h"
#include "share/log.h"
#include "share/ring.h"

#define RUN_SCAN_S 0.5     /* progress: the rings' headers read this often */
#define RUN_VITALS_S 0.1   /* --follow: new peers given to --vitals */
#define RUN_LEFT_FAST_S 0.01 /* record: CMD's traced descendants checked */
#define RUN_LEFT_SLOW_S 0.1  /*   this often, then (after 100) this */
#define RUN_LEFT_CHECK_S 0.05 /* attach: processes left checked */

struct run {
	struct run_opts *o;
	struct capture cap;
	uint32_t flags;           /* PROPEL_START_* of an injection */
	struct drain *dr;         /* local, --mode full */
	struct ingest_warm *warm; /* local: symbols looked up as it runs */
	struct tracer *tr;        /* attach, local: execs followed */
	struct follow *fl;        /* --follow */
	struct vitals_trace *vt;  /* --vitals */
	double t0;
	int ended;
	int following;            /* attach, local: tracer_poll's count */
	int pidfd;                /* record: CMD's, -1 without */
	int checks;               /* record: descendant checks after CMD */
	double next_check, next_scan, next_vitals, cmd_end;
	struct run_progress pr;
};

static double run_now(void)
{
	return propel_mono_s();
}

static void run_nap(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

void run_opts_init(struct run_opts *o, enum run_kind kind)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->verb = kind == RUN_RECORD ? "record" : "attach";
	o->db = PROPEL_SESSION_DEFAULT;
	o->full = kind == RUN_RECORD;
	o->exact = kind == RUN_RECORD;
	o->budget = kind == RUN_ATTACH;
	o->budget_pct = BUDGET_PCT_DEFAULT;
	o->leaf_insns = BUDGET_LEAF_DEFAULT;
}

void run_opts_release(struct run_opts *o)
{
	free(o->pids);
	o->pids = NULL;
	o->npids = 0;
	directives_release(&o->dirs);
}

int run_timing_parse(const char *s)
{
	if (!strcmp(s, "exact"))
		return 1;
	if (!strcmp(s, "sampled"))
		return 0;
	return -1;
}

int run_vitals_parse(const char *s)
{
	return !s || !strcmp(s, "all") ? 0 : -1;
}

/* ---- --vitals: the kernel collectors beside the trace ---- */

/* Start the collectors beside the trace of db and say in one line what
 * runs and what does not; r->vt stays NULL when nothing could run (the
 * trace records either way). */
static void run_vitals_begin(struct run *r)
{
	struct vitals_trace_opts vo = {0};
	const char *ms = getenv("PROPEL_OFFCPU_MIN_US");
	char *cause = NULL, line[128], *l = NULL;
	int err;

	vo.all = r->o->vitals_scope != NULL;
	if (ms && atol(ms) > 0)
		vo.min_ns = (uint64_t)atol(ms) * 1000;
	err = vitals_trace_start(r->o->db, &vo, &r->vt, &cause);
	snprintf(line, sizeof(line), "%s: --vitals", r->o->verb);
	if (err) {
		propel_report(line, err, cause);
		free(cause);
		r->vt = NULL;
		return;
	}
	if (r->o->follow &&
	    asprintf(&l,
		     "%s; --follow: the processes of this host and of the "
		     "hosts on its kernel (network namespaces); a host on "
		     "another kernel: its propeld's collectors",
		     vitals_trace_summary(r->vt)) > 0) {
		propel_report(line, 0, l);
		free(l);
		return;
	}
	propel_report(line, 0, vitals_trace_summary(r->vt));
}

static void run_vitals_add(void *arg, pid_t pid)
{
	vitals_trace_add(arg, pid, 0);
}

static void run_vitals_scan(struct vitals_trace *vt, const char *dir)
{
	if (vt)
		capture_each_map(dir, run_vitals_add, vt);
}

/* the hosts on another kernel said so far, each in one line once (a
 * process's runs share the list) */
static char **run_told;
static size_t run_ntold;

static int run_tell(const char *host)
{
	char **n;

	for (size_t i = 0; i < run_ntold; i++)
		if (!strcmp(run_told[i], host))
			return 0;
	n = realloc(run_told, (run_ntold + 1) * sizeof(*n));
	if (!n || !(n[run_ntold] = strdup(host))) {
		if (n)
			run_told = n;
		return 0; /* out of memory: said never rather than always */
	}
	run_told = n;
	run_ntold++;
	return 1;
}

static void run_vitals_host(void *arg, const char *host, const char *dir,
			    int this_kernel)
{
	struct run *r = arg;
	char line[128], why[160];

	if (this_kernel) {
		run_vitals_scan(r->vt, dir);
		return;
	}
	if (!run_tell(host))
		return;
	snprintf(line, sizeof(line), "%s: --vitals", r->o->verb);
	snprintf(why, sizeof(why),
		 "host %s runs another kernel: its propeld runs the "
		 "collectors there", host);
	propel_report(line, 0, why);
}

/* --follow: the processes traced so far on every host that shares this
 * kernel go into the collectors' set; a host on another kernel is said
 * once and not covered. */
static void run_vitals_follow(struct run *r, double now)
{
	if (!r->vt || !r->fl || now < r->next_vitals)
		return;
	r->next_vitals = now + RUN_VITALS_S;
	follow_each_host(r->fl, run_vitals_host, r);
}

/* After the session is stored: --vitals' history into it (one line on
 * failure). */
static void run_vitals_end(struct run *r)
{
	char *cause = NULL, line[128];
	int err;

	if (!r->vt)
		return;
	err = vitals_trace_store(r->vt, r->o->db, &cause);
	if (err) {
		snprintf(line, sizeof(line), "%s: --vitals", r->o->verb);
		propel_report(line, err, cause);
		free(cause);
	}
}

/* After run_vitals_end: the vital signs of the hosts on another kernel
 * (engine/vitals-host.h), each said in one line; their files removed. */
static void run_vitals_hosts(struct run *r, struct follow_vitals *v,
			     size_t n, int store)
{
	char *cause = NULL, *sum = NULL, line[160];
	int err;

	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%s: --vitals: host %s",
			 r->o->verb, v[i].host);
		err = store ? vitals_host_merge(r->o->db, v[i].path,
						v[i].host, v[i].offset_ns,
						&sum, &cause)
			    : 0;
		if (store)
			propel_report(line, err,
				      err ? cause : sum ? sum : "?");
		free(cause);
		free(sum);
		cause = sum = NULL;
		unlink(v[i].path);
	}
	free(v);
}

/* ---- progress: the rings' headers ---- */

static void run_scan_dir(struct run_progress *p, const char *dir)
{
	struct propel_ring_hdr h;
	struct dirent *de;
	char path[1024];
	DIR *d;

	if (!dir || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		int fd;

		if (len > 4 && !strcmp(de->d_name + len - 4, ".map")) {
			p->processes++;
			continue;
		}
		if (len <= 5 || strcmp(de->d_name + len - 5, ".ring"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
		    !memcmp(h.magic, PROPEL_RING_MAGIC, sizeof(h.magic))) {
			p->threads++;
			p->events += h.commits * h.sub_recs;
			p->drops += h.dropped;
		}
		close(fd);
	}
	closedir(d);
}

static void run_scan_host(void *arg, const char *host, const char *dir,
			  int this_kernel)
{
	(void)host;
	if (this_kernel)
		run_scan_dir(arg, dir);
}

static void run_scan(struct run *r, double now)
{
	struct run_progress *p = &r->pr;

	if (now < r->next_scan)
		return;
	r->next_scan = now + RUN_SCAN_S;
	p->processes = p->threads = 0;
	p->events = p->drops = 0;
	if (r->fl)
		follow_each_host(r->fl, run_scan_host, p);
	else
		run_scan_dir(p, r->cap.dir);
	if (r->fl)
		follow_counts(r->fl, &p->processes, &p->hosts);
}

struct run_pid_set {
	pid_t *out;
	int n, max;
};

static void run_pid_add(void *arg, pid_t pid)
{
	struct run_pid_set *ps = arg;
	int i;

	for (i = 0; i < ps->n; i++)
		if (ps->out[i] == pid)
			return; /* an image per exec: one pid */
	if (ps->n < ps->max)
		ps->out[ps->n++] = pid;
}

static void run_pids_host(void *arg, const char *host, const char *dir,
			  int this_kernel)
{
	(void)host;
	if (this_kernel)
		capture_each_map(dir, run_pid_add, arg);
}

int run_pids(const struct run *r, pid_t *out, int max)
{
	struct run_pid_set ps = { out, 0, max };

	if (r->fl)
		follow_each_host(r->fl, run_pids_host, &ps);
	else
		capture_each_map(r->cap.dir, run_pid_add, &ps);
	return ps.n;
}

void run_progress(const struct run *r, struct run_progress *p)
{
	*p = r->pr;
	p->elapsed_s = run_now() - r->t0;
	if (r->fl)
		follow_counts(r->fl, &p->processes, &p->hosts);
}

/* ---- start ---- */

static uint32_t run_flags(const struct run_opts *o)
{
	return (o->libc ? PROPEL_START_TRACE_LIBC : 0) |
	       (o->exact ? PROPEL_START_EXACT_TIME : 0) |
	       (o->full ? PROPEL_START_KEEP_ALL : 0) |
	       (o->budget ? PROPEL_START_BUDGET : 0) |
	       (o->adaptive ? PROPEL_START_ADAPTIVE : 0) |
	       capture_ring_flags(o->ring_kb);
}

/* An exec that could not be followed: one line, tracing goes on. */
static void run_warn_exec(pid_t pid, int err, const char *cause, void *arg)
{
	char what[64];

	(void)arg;
	snprintf(what, sizeof(what), "warning: exec in %d", (int)pid);
	propel_report(what, err, cause);
}

/* Inject the targets (each failure said, its pid zeroed); how many. */
static int run_inject(struct run *r)
{
	struct run_opts *o = r->o;
	int i, err, n = 0;

	for (i = 0; i < o->npids; i++) {
		char what[64], *cause = NULL;

		snprintf(what, sizeof(what), "attach %d", (int)o->pids[i]);
		err = r->fl ? follow_attach(r->fl, o->pids[i], &cause)
			    : inject_agent_start(o->pids[i], r->cap.agent,
						 r->cap.dir, r->flags, &cause);
		if (err) {
			propel_report(what, err, cause);
			o->pids[i] = 0;
		} else {
			n++;
		}
		free(cause);
	}
	return n;
}

/* record: fork CMD with the agent preloaded, writing into dir. */
static int run_fork(struct run *r, const char *dir)
{
	struct run_opts *o = r->o;
	const char *old = getenv("LD_PRELOAD");
	char *preload = NULL;
	pid_t pid;

	if (asprintf(&preload, "%s%s%s", r->cap.agent, old && *old ? ":" : "",
		     old ? old : "") < 0)
		return -ENOMEM;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		free(preload);
		propel_report(o->verb, err, NULL);
		return err;
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		capture_agent_env(dir, o->ring_kb, o->libc, o->full);
		if (o->follow)
			setenv("PROPEL_FOLLOW", "1", 1);
		execvp(o->argv[0], o->argv);
		fprintf(stderr, "propel: record: %s: %s\n", o->argv[0],
			strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	free(preload);
	r->pr.child = pid;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* --vitals: CMD is in the collectors' set (it was forked by a
	 * parent-only propel); what propel forks later is not (the
	 * background removal of the raw trace after capture_end) */
	vitals_trace_forget(r->vt, getpid());
	return 0;
}

/* The backends' starts, once the session directory is made: 0, or
 * -errno said (r's parts made so far are undone by the caller). */
static int run_start_follow(struct run *r)
{
	struct run_opts *o = r->o;
	char *cause = NULL, what[32];
	int err;

	/* the session's files come from the hosts' propelds at the end */
	capture_remove_dir(r->cap.dir);
	transport_set_values(o->dirs.values); /* every host's agents */
	err = follow_begin(r->flags, &r->fl, &cause);
	if (!err && !o->follow_stdio && follow_own_stdio(r->fl, &cause)) {
		/* then propel's own pipeline may be followed: said, not fatal */
		propel_report(o->verb, 0, cause);
		free(cause);
		cause = NULL;
	}
	if (err) {
		snprintf(what, sizeof(what), "%s --follow", o->verb);
		propel_report(what, err, cause);
		free(cause);
		r->fl = NULL;
		return err;
	}
	if (o->vitals) /* hosts on another kernel: their propelds' */
		follow_set_vitals(r->fl, o->vitals_scope != NULL);
	if (o->kind == RUN_RECORD) {
		/* --vitals: after propeld is up (not one of ours to trace);
		 * CMD and what it forks from its start, the peers propeld
		 * injects here as they come (run_vitals_follow) */
		if (o->vitals && (run_vitals_begin(r), r->vt))
			vitals_trace_add(r->vt, getpid(), 1);
		return run_fork(r, follow_local_dir(r->fl));
	}
	/* --vitals: the targets, then the peers as they come */
	if (o->vitals && (run_vitals_begin(r), r->vt))
		for (int i = 0; i < o->npids; i++)
			vitals_trace_add(r->vt, o->pids[i], 0);
	r->pr.attached = run_inject(r);
	return r->pr.attached ? 0 : -ESRCH;
}

static int run_start_local(struct run *r)
{
	struct run_opts *o = r->o;
	char *cause = NULL;
	int err;

	if (o->full && (err = drain_start(r->cap.dir, &r->dr, &cause))) {
		propel_report(o->verb, err, cause);
		free(cause);
		r->dr = NULL;
		return err;
	}
	/* record, drained: the session stored as the run goes (its symbol
	 * work too); else the ingest's symbol work while the run goes:
	 * without either, the ingest does it all at the end */
	if (o->kind == RUN_RECORD && r->dr &&
	    !getenv("PROPEL_NO_LIVE_INGEST") &&
	    ingest_live_start(r->cap.dir, &r->cap.live))
		r->cap.live = NULL;
	if (!r->cap.live && ingest_warm_start(r->cap.dir, &r->warm))
		r->warm = NULL;
	if (o->kind == RUN_RECORD) {
		/* orphaned descendants are re-parented to us, not to init */
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
		/* --vitals: propel's children (CMD, and what CMD forks) are
		 * traced by the kernel collectors from their first
		 * instruction */
		if (o->vitals && (run_vitals_begin(r), r->vt))
			vitals_trace_add(r->vt, getpid(), 1);
		return run_fork(r, r->cap.dir);
	}
	/* --vitals: the targets are in the kernel collectors' set before
	 * the agent goes in, with what they fork from then on */
	if (o->vitals && (run_vitals_begin(r), r->vt))
		for (int i = 0; i < o->npids; i++)
			vitals_trace_add(r->vt, o->pids[i], 0);
	/* the exec requests' watch before the agent goes in: a request made
	 * between its start and the watch was never seen (the program's
	 * first exec went on untraced after the agent's wait, as propeld,
	 * which watched first, never lost one) */
	err = tracer_new(r->cap.dir, r->cap.agent, r->flags, run_warn_exec,
			 NULL, &r->tr, &cause);
	if (err) {
		/* execs will not be followed; tracing goes on */
		propel_report("warning", err, cause);
		free(cause);
		r->tr = NULL;
	}
	r->pr.attached = run_inject(r);
	/* a test switch: a coordinator that is slow to reach its loop after
	 * the injection, as on a loaded host (tests/e2e/golden.sh) */
	propel_test_delay("PROPEL_TEST_AFTER_INJECT_MS");
	return r->pr.attached ? 0 : -ESRCH;
}

/* The cost budget's parameters for the agents (share/agent-abi.h
 * PROPEL_BUDGET_FILE). */
static int run_budget_write(const struct run_opts *o, const char *dir,
			    char **cause)
{
	char path[1024], line[64];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, PROPEL_BUDGET_FILE);
	n = snprintf(line, sizeof(line), "%u %u\n", o->budget_pct,
		     o->leaf_insns);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return propel_cause(cause, -errno, "%s: %s", path,
				    strerror(errno));
	if (write(fd, line, (size_t)n) != n)
		err = -EIO;
	if (close(fd) != 0)
		err = -EIO;
	return err ? propel_cause(cause, err, "%s: cannot write", path) : 0;
}

int run_start(struct run_opts *o, struct run **out)
{
	struct run *r = calloc(1, sizeof(*r));
	char *cause = NULL;
	int err;

	*out = NULL;
	if (!r) {
		propel_report(o->verb, -ENOMEM, NULL);
		return -ENOMEM;
	}
	r->o = o;
	r->pidfd = -1;
	r->flags = run_flags(o);
	r->pr.flows = -1;
	r->pr.hosts = 1;
	r->t0 = run_now();
	if (o->kind == RUN_RECORD) { /* CMD's agents read them */
		setenv("PROPEL_TIMING", o->exact ? "exact" : "sampled", 1);
		setenv("PROPEL_BUDGET", o->budget ? "1" : "0", 1);
	}
	err = capture_begin(&r->cap, o->db, &cause);
	if (!err && !o->follow)
		err = directives_write(&o->dirs, r->cap.dir, &cause);
	if (!err && o->budget)
		err = run_budget_write(o, r->cap.dir, &cause);
	if (err) {
		propel_report(o->verb, err, cause);
		free(cause);
		capture_abort(&r->cap);
		free(r);
		return err;
	}
	err = o->follow ? run_start_follow(r) : run_start_local(r);
	if (err) {
		vitals_trace_abort(r->vt);
		if (r->fl)
			follow_abort(r->fl);
		drain_stop(r->dr, NULL);
		symbols_free(ingest_warm_stop(r->warm));
		tracer_free(r->tr);
		capture_abort(&r->cap);
		if (r->pidfd >= 0)
			close(r->pidfd);
		free(r);
		return err;
	}
	r->t0 = run_now(); /* --duration counts from the targets' injection */
	*out = r;
	return 0;
}

/* ---- poll ---- */

/* record: reap CMD and the orphans handed to us; CMD's end is kept. */
static void run_reap(struct run *r, int *reaped)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == r->pr.child) {
			r->pr.child = 0;
			r->pr.cmd_done = 1;
			r->pr.cmd_status = st;
			r->cmd_end = run_now();
			if (r->pidfd >= 0)
				close(r->pidfd);
			r->pidfd = -1;
		} else if (reaped) {
			(*reaped)++;
		}
	}
}

/* record, local: CMD, then its traced descendants left. */
static int run_poll_record(struct run *r, int ms)
{
	double now;
	int reaped = 0, left;
	pid_t one = 0;

	if (r->pr.child > 0) {
		if (r->pidfd >= 0) {
			struct pollfd pf = { r->pidfd, POLLIN, 0 };

			poll(&pf, 1, ms);
		} else {
			run_nap(ms / 1e3 < RUN_LEFT_FAST_S ? ms / 1e3
							   : RUN_LEFT_FAST_S);
		}
		run_reap(r, NULL);
		if (r->pr.child > 0)
			return 1;
		r->next_check = r->cmd_end;
	}
	now = run_now();
	if (now < r->next_check) {
		double wait = r->next_check - now;

		run_nap(wait < ms / 1e3 ? wait : ms / 1e3);
		if (run_now() < r->next_check)
			return 1;
	}
	/* a process reaped after the count may have handed us children the
	 * count did not see: count again */
	left = capture_traced_left(&r->cap, &one);
	run_reap(r, &reaped);
	r->pr.left_pid = left > 0 ? one : 0;
	r->pr.left_s = run_now() - r->cmd_end;
	if (left <= 0 && !reaped)
		return 0;
	/* a quick end for the usual short-lived descendants, then a lighter
	 * pace for a daemon that stays */
	r->next_check = run_now() + (++r->checks > 100 ? RUN_LEFT_SLOW_S
						       : RUN_LEFT_FAST_S);
	return 1;
}

/* record, follow: until CMD has ended. */
static int run_poll_record_follow(struct run *r, int ms)
{
	pid_t p = waitpid(r->pr.child, &r->pr.cmd_status, WNOHANG);

	if (p == r->pr.child || (p < 0 && errno != EINTR)) {
		r->pr.child = 0;
		r->pr.cmd_done = 1;
		if (r->pidfd >= 0)
			close(r->pidfd);
		r->pidfd = -1;
		return 0;
	}
	follow_poll(r->fl, ms);
	run_vitals_follow(r, run_now());
	return 1;
}

/* attach, local: until no process traces into the session. */
static int run_poll_attach(struct run *r, int ms)
{
	double now;

	if (r->tr)
		r->following = tracer_poll(r->tr, ms);
	else
		run_nap(ms / 1e3);
	now = run_now();
	if (r->following > 0 || now < r->next_check)
		return 1;
	r->next_check = now + RUN_LEFT_CHECK_S;
	return capture_traced_left(&r->cap, NULL) != 0;
}

/* attach, follow: until every target has exited. */
static int run_poll_attach_follow(struct run *r, int ms)
{
	int alive = 0;

	follow_poll(r->fl, ms);
	run_vitals_follow(r, run_now());
	for (int i = 0; i < r->o->npids; i++)
		alive += r->o->pids[i] > 0 && kill(r->o->pids[i], 0) == 0;
	return alive > 0;
}

int run_poll(struct run *r, int ms, struct run_progress *p)
{
	const struct run_opts *o = r->o;

	if (!r->ended && o->kind == RUN_ATTACH && o->duration > 0 &&
	    run_now() - r->t0 >= o->duration)
		r->ended = 1;
	if (!r->ended) {
		int on;

		if (o->kind == RUN_RECORD)
			on = o->follow ? run_poll_record_follow(r, ms)
				       : run_poll_record(r, ms);
		else
			on = o->follow ? run_poll_attach_follow(r, ms)
				       : run_poll_attach(r, ms);
		r->ended = !on;
	}
	run_scan(r, run_now());
	if (p)
		run_progress(r, p);
	return !r->ended;
}

/* ---- snapshot ---- */

struct run_snap {
	struct session *s;
	int err, other;
	char *cause;
};

static void run_snap_host(void *arg, const char *host, const char *dir,
			  int this_kernel)
{
	struct run_snap *sn = arg;
	struct ingest_stats st;

	if (sn->err)
		return;
	if (!this_kernel) {
		sn->other++;
		return;
	}
	memset(&st, 0, sizeof(st));
	sn->err = ingest_dir_host(sn->s, dir, host, 0, &st, &sn->cause);
}

int run_snapshot(const struct run *r, const char *db, int *other,
		 char **cause)
{
	struct run_snap sn = { 0 };
	struct ingest_stats st;
	int err;

	*other = 0;
	err = session_open(db, SESSION_CREATE, &sn.s, cause);
	if (err)
		return err;
	if (r->fl) {
		follow_each_host(r->fl, run_snap_host, &sn);
		err = sn.err;
		*cause = sn.cause;
		*other = sn.other;
	} else {
		memset(&st, 0, sizeof(st));
		err = ingest_dir(sn.s, r->cap.dir, &st, cause);
	}
	session_close(sn.s);
	return err;
}

/* ---- stop ---- */

/* A process whose agent the detach did not switch off (its code may be
 * left patched): one line, and the command fails (arg: their count). */
static void run_warn_detach(void *arg, pid_t pid, int err, const char *cause)
{
	char what[64];

	snprintf(what, sizeof(what), "detach %d", (int)pid);
	if (!cause)
		cause = strerror(-err);
	if (strstr(cause, "propel detach"))
		propel_report(what, err, cause);
	else
		propel_reportf(what, "%s: its agent is left on (`propel "
			       "detach %d` switches it off)", cause, (int)pid);
	(*(int *)arg)++;
}

/* --start FUNC, propel's own stdio channels, attach's targets and the
 * directives into the stored session. */
static int run_keep(const struct run_opts *o)
{
	char *cause = NULL;
	int err = 0;

	if (o->start)
		err = analysis_keep_flow_start(o->db, o->start, &cause);
	if (!err)
		err = analysis_keep_origin(o->db, o->pids,
					   o->kind == RUN_ATTACH ? o->npids : 0,
					   !o->follow_stdio, &cause);
	if (!err && o->dirs.n)
		err = directives_keep(o->db, &o->dirs, &cause);
	if (err) {
		propel_report(o->verb, err, cause);
		free(cause);
	}
	return err;
}

int run_stop(struct run *r)
{
	struct run_opts *o = r->o;
	struct follow_vitals *vit = NULL;
	struct drain_stats dst;
	char *cause = NULL;
	size_t nvit = 0;
	int err, left = 0;

	if (r->fl) {
		err = follow_end(r->fl, &r->cap, o->argc, o->argv, &vit, &nvit,
				 &cause);
	} else {
		tracer_free(r->tr);
		if (o->kind == RUN_ATTACH)
			tracer_detach_all(r->cap.dir, r->cap.agent,
					  run_warn_detach, &left);
		/* after the detach: the calls the trace saw end have their
		 * spans */
		vitals_trace_stop(r->vt);
		pr_log("store", "stop: traced ended");
		if (r->dr) {
			drain_stop(r->dr, &dst);
			drain_report(o->verb, &dst);
		}
		pr_log("store", "stop: drained");
		r->cap.sy = ingest_warm_stop(r->warm);
		r->warm = NULL;
		pr_log("store", "stop: warmed");
		err = capture_end(&r->cap, o->argc, o->argv, &cause);
		pr_log("store", "stop: stored");
	}
	if (r->fl)
		vitals_trace_stop(r->vt); /* after the peers are detached */
	if (r->pidfd >= 0)
		close(r->pidfd);
	if (err) {
		propel_report(o->verb, err, cause);
		free(cause);
		vitals_trace_abort(r->vt);
		run_vitals_hosts(r, vit, nvit, 0);
		free(r);
		return err;
	}
	run_vitals_end(r);
	run_vitals_hosts(r, vit, nvit, 1);
	free(r);
	err = run_keep(o);
	/* the session is kept; the exit status says an agent is left */
	return err ? err : left ? -EAGAIN : 0;
}

void run_abort(struct run *r)
{
	if (!r)
		return;
	if (r->fl) {
		follow_abort(r->fl);
	} else {
		tracer_free(r->tr);
		tracer_detach_all(r->cap.dir, r->cap.agent, NULL, NULL);
		drain_stop(r->dr, NULL);
		symbols_free(ingest_warm_stop(r->warm));
	}
	vitals_trace_abort(r->vt);
	capture_abort(&r->cap);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r);
}
