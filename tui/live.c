/*
 * tui/live.c - the capture run of the live console (tui/live.h): one
 * engine/run.h run on the process the operator picked, polled from the
 * TUI's loop (run_poll(r, 0): it never blocks), stopped by `x`, `q` or a
 * hang-up.
 *
 * Files, in the current directory: the session, propel-PID-DATE.db (PID
 * the target's), and its log, propel-PID-DATE.log: while curses owns the
 * terminal fd 2 goes to the log, so the run's "propel: ..." lines (and
 * propeld's, which inherits it) never smear the screen; a refusal at the
 * start is read back from it for the status line.
 *
 * The flows while the run goes: the rings are read in a child process
 * (fork; nice 10) every LIVE_SNAP_S once the previous snapshot is done:
 * run_snapshot ingests what the rings hold so far into a scratch session
 * in $TMPDIR, view_flows_rank ranks its flows as the flows pane does and
 * writes them as text into a pipe the TUI reads without blocking.  So
 * the TUI's own loop does no analysis (its CPU stays that of the process
 * view plus the run's polling), the pane shows flows that completed
 * within the last few seconds, re-ranked at each snapshot, and says how
 * old they are.  With --follow, hosts on another kernel are not read
 * here: the pane says how many were left out.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/run.h"
#include "engine/session.h"
#include "share/log.h"
#include "tui/live.h"
#include "tui/screen.h"
#include "tui/view.h"

#define LIVE_FIRST_SNAP_S 1.0 /* the first snapshot after the attach */
#define LIVE_MAXFLOWS 4096

struct tui_live {
	struct run_opts o;
	struct run *r;
	char *argv[2];
	char pidstr[16];
	int pid, follow, running;
	char comm[64];
	char db[256], log[256];
	int saved_err; /* fd 2 before the log, -1 when not redirected */
	struct run_progress p;
	/* snapshots */
	char scratch[512];
	pid_t snap_pid;
	int snap_fd;
	char *buf;
	size_t len, cap;
	double next_snap, snap_t, shown_t, took_s;
	struct live_flow *flows;
	int nflows; /* -1 before the first snapshot */
	uint64_t snap_events;
	char note[200];
};

static double live_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A fresh session name in the current directory, and its log's. */
static void live_names(struct tui_live *l)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	struct stat st;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (int i = 0; i < 100; i++) {
		snprintf(l->db, sizeof(l->db), "propel-%d-%s%s%.0d.db", l->pid,
			 stamp, i ? "-" : "", i);
		if (stat(l->db, &st) < 0)
			break;
	}
	snprintf(l->log, sizeof(l->log), "%.*s.log",
		 (int)strlen(l->db) - 3, l->db);
}

/* fd 2 into the log (kept for the run's whole life). */
static int live_log_open(struct tui_live *l, char **cause)
{
	int fd = open(l->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return propel_cause(cause, -errno, "%s: %s", l->log,
				    strerror(errno));
	l->saved_err = fcntl(screen_stderr_fd(), F_DUPFD_CLOEXEC, 3);
	dup2(fd, 2);
	close(fd);
	return 0;
}

static void live_log_close(struct tui_live *l)
{
	if (l->saved_err < 0)
		return;
	screen_stderr_back(l->saved_err);
	close(l->saved_err);
	l->saved_err = -1;
}

/* The last line of the log (what the run said last), without its
 * "propel: ", into a cause. */
static int live_log_cause(struct tui_live *l, int err, char **cause)
{
	char line[512], last[512] = "";
	FILE *f = fopen(l->log, "re");

	while (f && fgets(line, sizeof(line), f))
		if (line[0] != '\n')
			snprintf(last, sizeof(last), "%s", line);
	if (f)
		fclose(f);
	last[strcspn(last, "\n")] = 0;
	if (!last[0])
		return propel_cause(cause, err, "attach %d (%s): %s", l->pid,
				    l->comm, strerror(-err));
	return propel_cause(cause, err, "%s",
			    strncmp(last, "propel: ", 8) ? last : last + 8);
}

int live_start(int pid, const char *comm, int follow, struct tui_live **out,
	       char **cause)
{
	struct tui_live *l = calloc(1, sizeof(*l));
	const char *tmp = getenv("TMPDIR");
	int err;

	*out = NULL;
	if (!l)
		return propel_cause(cause, -ENOMEM, "out of memory");
	l->pid = pid;
	l->follow = follow;
	l->saved_err = -1;
	l->snap_fd = -1;
	l->nflows = -1;
	snprintf(l->comm, sizeof(l->comm), "%s", comm);
	live_names(l);
	snprintf(l->scratch, sizeof(l->scratch), "%s/propel-live-%d.db",
		 tmp && *tmp ? tmp : "/tmp", (int)getpid());
	err = live_log_open(l, cause);
	if (err) {
		free(l);
		return err;
	}
	run_opts_init(&l->o, RUN_ATTACH);
	l->o.db = l->db;
	l->o.follow = follow;
	l->o.pids = malloc(sizeof(*l->o.pids));
	if (!l->o.pids) {
		live_log_close(l);
		free(l);
		return propel_cause(cause, -ENOMEM, "out of memory");
	}
	l->o.pids[0] = pid;
	l->o.npids = 1;
	snprintf(l->pidstr, sizeof(l->pidstr), "%d", pid);
	l->argv[0] = l->pidstr;
	l->o.argc = 1;
	l->o.argv = l->argv;
	err = run_start(&l->o, &l->r);
	if (err) {
		live_log_cause(l, err, cause);
		live_log_close(l);
		unlink(l->log); /* its one line is on the status line */
		run_opts_release(&l->o);
		free(l);
		return err;
	}
	l->running = 1;
	l->next_snap = live_now() + LIVE_FIRST_SNAP_S;
	run_progress(l->r, &l->p);
	*out = l;
	return 0;
}

/* ---- snapshots ---- */

/* In the child: the rings so far -> scratch session -> ranked flows on
 * fd; never returns. */
static void live_snap_child(struct tui_live *l, int fd)
{
	struct session *s = NULL;
	char *cause = NULL;
	FILE *out = fdopen(fd, "w");
	int other = 0, err;

	setpriority(PRIO_PROCESS, 0, 10);
	if (!out)
		_exit(1);
	err = run_snapshot(l->r, l->scratch, &other, &cause);
	if (!err)
		err = session_open(l->scratch, SESSION_READ, &s, &cause);
	if (!err)
		err = view_flows_rank(s, out, &cause);
	session_close(s);
	unlink(l->scratch);
	if (err)
		fprintf(out, "error %s\n", cause ? cause : strerror(-err));
	else if (other)
		fprintf(out, "other %d\n", other);
	fclose(out);
	_exit(0);
}

static void live_snap_start(struct tui_live *l, double now)
{
	int fds[2];
	pid_t p;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	p = fork();
	if (p < 0) {
		close(fds[0]);
		close(fds[1]);
		l->next_snap = now + LIVE_SNAP_S;
		return;
	}
	if (p == 0) {
		close(fds[0]);
		live_snap_child(l, fds[1]);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	l->snap_pid = p;
	l->snap_fd = fds[0];
	l->snap_t = now;
	l->len = 0;
}

/* The child's text into l->flows. */
static void live_snap_parse(struct tui_live *l)
{
	struct live_flow *fl = NULL;
	char *line, *save = NULL;
	int n = -1, cap = 0;
	unsigned long long nev = 0;

	if (!l->len) {
		snprintf(l->note, sizeof(l->note),
			 "flows: the snapshot failed (see the log)");
		return;
	}
	l->buf[l->len] = 0;
	l->note[0] = 0;
	for (line = strtok_r(l->buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct live_flow f;
		size_t nf;

		if (!strncmp(line, "error ", 6)) {
			snprintf(l->note, sizeof(l->note), "flows: %s", line + 6);
		} else if (!strncmp(line, "other ", 6)) {
			snprintf(l->note, sizeof(l->note),
				 "flows: %s host(s) on another kernel not read "
				 "live",
				 line + 6);
		} else if (sscanf(line, "flows %zu %llu", &nf, &nev) == 2) {
			n = 0;
		} else if (n >= 0 && n < LIVE_MAXFLOWS &&
			   sscanf(line, "%d %lf %ld %lf %63s %95[^\n]", &f.rank,
				  &f.score, &f.nevents, &f.span_ms, f.pids,
				  f.func) == 6) {
			if (n == cap) {
				struct live_flow *m;

				cap = cap ? 2 * cap : 64;
				m = realloc(fl, cap * sizeof(*fl));
				if (!m)
					break;
				fl = m;
			}
			fl[n++] = f;
		}
	}
	if (n < 0) {
		free(fl);
		return; /* the note says why; the last flows stay shown */
	}
	free(l->flows);
	l->flows = fl;
	l->nflows = n;
	l->snap_events = nev;
	l->shown_t = l->snap_t;
}

static void live_snap_reap(struct tui_live *l, int parse)
{
	if (l->snap_fd >= 0)
		close(l->snap_fd);
	l->snap_fd = -1;
	if (l->snap_pid > 0) {
		if (!parse)
			kill(l->snap_pid, SIGKILL);
		waitpid(l->snap_pid, NULL, 0);
		if (!parse)
			unlink(l->scratch);
	}
	l->snap_pid = 0;
	if (parse)
		live_snap_parse(l);
}

/* Read what the child wrote; at its end, parse it. */
static void live_snap_read(struct tui_live *l, double now)
{
	for (;;) {
		ssize_t n;

		if (l->cap - l->len < 4096) {
			size_t nc = l->cap ? 2 * l->cap : 65536;
			char *b = realloc(l->buf, nc + 1);

			if (!b) {
				live_snap_reap(l, 0);
				return;
			}
			l->buf = b;
			l->cap = nc;
		}
		n = read(l->snap_fd, l->buf + l->len, l->cap - l->len);
		if (n > 0) {
			l->len += n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		live_snap_reap(l, 1);
		l->took_s = now - l->snap_t;
		l->next_snap = now + LIVE_SNAP_S;
		return;
	}
}

int live_poll(struct tui_live *l)
{
	double now = live_now();

	if (!l->r)
		return 0;
	if (l->running)
		l->running = run_poll(l->r, 0, &l->p);
	else
		run_progress(l->r, &l->p);
	if (l->snap_fd >= 0)
		live_snap_read(l, now);
	else if (now >= l->next_snap)
		live_snap_start(l, now);
	return l->running;
}

int live_stop(struct tui_live *l, char **cause)
{
	int err;

	if (!l->r)
		return 0;
	live_snap_reap(l, 0);
	run_progress(l->r, &l->p);
	err = run_stop(l->r);
	l->r = NULL;
	l->running = 0;
	if (err)
		return live_log_cause(l, err, cause);
	return 0;
}

void live_free(struct tui_live *l, int say)
{
	char *cause = NULL;
	int err;
	struct stat st;

	if (!l)
		return;
	err = live_stop(l, &cause);
	live_log_close(l);
	if (stat(l->log, &st) == 0 && st.st_size == 0)
		unlink(l->log);
	if (say && err)
		propel_report("attach", 0, cause);
	else if (say)
		fprintf(stderr, "propel: attach %d (%s): session stored in %s%s%s\n",
			l->pid, l->comm, l->db,
			access(l->log, F_OK) == 0 ? ", messages in " : "",
			access(l->log, F_OK) == 0 ? l->log : "");
	free(cause);
	run_opts_release(&l->o);
	free(l->flows);
	free(l->buf);
	free(l);
}

/* ---- for the live pane ---- */

const char *live_db(const struct tui_live *l)
{
	return l->db;
}

const char *live_log(const struct tui_live *l)
{
	return l->log;
}

void live_target(const struct tui_live *l, int *pid, const char **comm,
		 int *follow)
{
	*pid = l->pid;
	*comm = l->comm;
	*follow = l->follow;
}

int live_running(const struct tui_live *l)
{
	return l->r && l->running;
}

void live_progress(const struct tui_live *l, struct run_progress *p)
{
	*p = l->p;
}

int live_pids(const struct tui_live *l, pid_t *out, int max)
{
	return l->r ? run_pids(l->r, out, max) : 0;
}

int live_flows(const struct tui_live *l, const struct live_flow **flows,
	       uint64_t *events, double *age_s, double *took_s,
	       const char **note)
{
	*took_s = l->took_s;
	*flows = l->flows;
	*events = l->snap_events;
	*age_s = l->nflows >= 0 ? live_now() - l->shown_t : 0;
	*note = l->note[0] ? l->note : NULL;
	return l->nflows;
}
