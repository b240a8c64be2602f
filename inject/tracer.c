/*
 * inject/tracer.c - follow an attach session's processes across exec (see
 * inject/tracer.h).
 *
 * One followed exec, each transition naming the function that makes it:
 *
 *   <pid>.<tid>.exec appears (inotify)  --tr_request--> SEIZED: the thread
 *       is PTRACE_SEIZE'd with PTRACE_O_TRACEEXEC, the file removed (the
 *       agent waits for that, then calls execve)
 *   SEIZED --PTRACE_EVENT_EXEC (tr_event)--> tr_follow, synchronously:
 *       the new image, stopped before its first instruction:
 *       run to its entry point (AT_ENTRY: the dynamic loader has run, libc
 *       is initialised), then to __libc_start_main (its first argument is
 *       main), then to main (tr_run_to: one int3 at a time, the original
 *       byte put back and rip rewound at each stop), and there inject the
 *       agent in a hold built on the stopped thread (hijack_adopt,
 *       inject_agent_start_held, hijack_detach): the agent instruments main
 *       from the thread's pc, so main and everything it calls is traced.
 *   SEIZED --exit, or no exec within TR_EXEC_WAIT_MS (the exec failed and
 *       the thread runs on)--> released (tr_release)
 * Meanwhile the seized thread's signals are passed on at once, and a
 * group-stop is honoured (PTRACE_LISTEN).  Every failure ends in
 * tr_release with the process running as it would have, and one warning.
 * A statically linked new image cannot load the agent: warned, let go.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "inject/hijack.h"
#include "inject/inject.h"
#include "inject/tracer.h"
#include "share/agent-abi.h"
#include "share/clock.h"
#include "share/log.h"
#include "share/proc.h"

#define PR_DOMAIN "tracer"

#define TR_EXEC_WAIT_MS 2000 /* seized, no exec: it failed */
#define TR_STEP_MS 10000     /* from one breakpoint to the next */
#define TR_MAX_EXECS 4       /* execs in a row before main */

struct tr_watch {
	pid_t pid, tid;
	uint64_t since_ms;
};

struct tracer {
	char dir[512];
	char agent[PATH_MAX];
	uint32_t flags;
	int ino, wd; /* the inotify descriptor, its watch of the session dir */
	struct tr_watch *w;
	size_t nw, cap;
	tracer_warn_fn warn;
	void *arg;
	tracer_peer_fn peer;
	void *peer_arg;
	int followed, failed;
};

static void tr_warn(struct tracer *tr, pid_t pid, int err, const char *cause)
{
	tr->failed++;
	pr_dbg("exec of %d not followed: %s", (int)pid, cause ? cause : "?");
	if (tr->warn)
		tr->warn(pid, err, cause, tr->arg);
}

static int tr_is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* Wait for tid's next state change, up to ms.  0 with *st, -ESRCH if it
 * is gone, -ETIMEDOUT. */
static int tr_wait(pid_t tid, int ms, int *st)
{
	uint64_t end = propel_mono_ms() + (uint64_t)ms;
	struct hijack_nap nap = { 0 };

	for (;;) {
		pid_t r = waitpid(tid, st, WNOHANG | __WALL);

		if (r == tid)
			return WIFSTOPPED(*st) ? 0 : -ESRCH;
		if (r < 0 && errno != EINTR)
			return -ESRCH;
		if (propel_mono_ms() >= end)
			return -ETIMEDOUT;
		hijack_nap(&nap);
	}
}

/* Let go of a seized thread, in whatever state it is: stop it first if it
 * runs (PTRACE_DETACH needs a stop), hand back a signal it was about to
 * receive. */
static void tr_release(pid_t tid, int running)
{
	int st, sig = 0;

	if (running) {
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
			return;
		if (tr_wait(tid, 1000, &st))
			return;
		if ((st >> 16) == 0)
			sig = WSTOPSIG(st);
	}
	if (ptrace(PTRACE_DETACH, tid, 0, sig) < 0)
		pr_dbg("detach %d: %s", (int)tid, strerror(errno));
}

/* A watch's thread is in a stop that is not ours: pass it on. */
static void tr_pass(pid_t tid, int st)
{
	int ev = st >> 16, sig = WSTOPSIG(st);

	if (ev == 0)
		ptrace(PTRACE_CONT, tid, 0, sig);
	else if (ev == PTRACE_EVENT_STOP && tr_is_stop_sig(sig))
		ptrace(PTRACE_LISTEN, tid, 0, 0);
	else
		ptrace(PTRACE_CONT, tid, 0, 0);
}

static int tr_auxv(pid_t pid, unsigned long type, uint64_t *val)
{
	char path[64];
	uint64_t v[2];
	int fd, err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (read(fd, v, sizeof(v)) == (ssize_t)sizeof(v) && v[0] != AT_NULL)
		if (v[0] == type) {
			*val = v[1];
			err = 0;
			break;
		}
	close(fd);
	return err;
}

/*
 * Run the stopped thread pid until it reaches addr: an int3 there, the
 * original byte back at the stop, rip rewound onto addr.  Signals on the
 * way are delivered.  0 with *regs at addr (the thread stopped there),
 * -EAGAIN if it exec'd again, -ESRCH if it exited, -ETIMEDOUT.
 */
static int tr_run_to(pid_t pid, uint64_t addr, struct user_regs_struct *regs,
		     char **cause)
{
	uint64_t end = propel_mono_ms() + TR_STEP_MS;
	long word;
	int st, err;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, 0);
	if (errno)
		return propel_cause(cause, -errno, "cannot read %#llx: %s",
				    (unsigned long long)addr, strerror(errno));
	if (ptrace(PTRACE_POKETEXT, pid, (void *)addr,
		   (void *)((word & ~0xffL) | 0xcc)) < 0)
		return propel_cause(cause, -errno, "cannot write %#llx: %s",
				    (unsigned long long)addr, strerror(errno));
	ptrace(PTRACE_CONT, pid, 0, 0);
	for (;;) {
		int left = (int)(end - propel_mono_ms());

		err = tr_wait(pid, left > 0 ? left : 0, &st);
		if (err == -ESRCH)
			return propel_cause(cause, err, "exited before main");
		if (err) {
			ptrace(PTRACE_INTERRUPT, pid, 0, 0);
			if (tr_wait(pid, 1000, &st) == 0) {
				ptrace(PTRACE_POKETEXT, pid, (void *)addr,
				       (void *)word);
				if ((st >> 16) == 0)
					ptrace(PTRACE_DETACH, pid, 0,
					       WSTOPSIG(st));
				else
					ptrace(PTRACE_DETACH, pid, 0, 0);
			}
			return propel_cause(cause, -ETIMEDOUT,
					    "did not reach main within %d s",
					    TR_STEP_MS / 1000);
		}
		if ((st >> 16) == PTRACE_EVENT_EXEC)
			return -EAGAIN; /* a new image: the int3 went with the old */
		if ((st >> 16) == 0 && WSTOPSIG(st) == SIGTRAP &&
		    ptrace(PTRACE_GETREGS, pid, 0, regs) == 0 &&
		    regs->rip == addr + 1)
			break;
		tr_pass(pid, st);
	}
	if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)word) < 0)
		return propel_cause(cause, -errno, "cannot restore %#llx",
				    (unsigned long long)addr);
	regs->rip = addr;
	if (ptrace(PTRACE_SETREGS, pid, 0, regs) < 0)
		return propel_cause(cause, -errno, "cannot rewind to %#llx",
				    (unsigned long long)addr);
	return 0;
}

/*
 * The new image of pid, stopped at its exec event: run it to main and
 * inject the agent there.  The thread is released (or exited) on return.
 */
static int tr_follow(struct tracer *tr, pid_t pid, char **cause)
{
	struct user_regs_struct regs;
	struct hijack *h = NULL;
	uint64_t entry = 0, start_main = 0, at;
	int err, dyn, tries = 0, e2;

again:
	dyn = hijack_exe_dynamic(pid);
	if (dyn <= 0) {
		err = dyn == 0 ? propel_cause(cause, -ENOEXEC,
					      "the new image is statically "
					      "linked: cannot load the agent")
			       : propel_cause(cause, dyn, "cannot read the new "
							  "image: %s",
					      strerror(-dyn));
		goto release;
	}
	err = tr_auxv(pid, AT_ENTRY, &entry);
	if (err) {
		propel_cause(cause, err, "no entry point in /proc/%d/auxv",
			     (int)pid);
		goto release;
	}
	err = tr_run_to(pid, entry, &regs, cause);
	if (!err && !hijack_sym_noexec(pid, "libc.so.6", "__libc_start_main",
				       &start_main, NULL)) {
		err = tr_run_to(pid, start_main, &regs, cause);
		/* __libc_start_main(main, argc, argv, ...) */
		if (!err && (at = regs.rdi) != 0)
			err = tr_run_to(pid, at, &regs, cause);
	}
	/* else: no glibc start; inject at the entry point */
	if (err == -EAGAIN && ++tries < TR_MAX_EXECS)
		goto again;
	if (err == -EAGAIN)
		propel_cause(cause, err, "exec'd %d times before main", tries);
	if (err == -ESRCH || err == -ETIMEDOUT)
		return err; /* gone, or already let go */
	if (err)
		goto release;
	pr_dbg("exec of %d: the agent goes in at %#llx (%s)", (int)pid,
	       (unsigned long long)regs.rip,
	       start_main && regs.rip != start_main ? "main" : "its entry point");
	err = hijack_adopt(pid, pid, &h, cause);
	if (err)
		return err; /* the adoption let go of everything */
	err = inject_agent_start_held(h, tr->agent, tr->dir, tr->flags, cause);
	e2 = hijack_detach(h);
	if (!err && e2)
		err = propel_cause(cause, e2, "detach: %s", strerror(-e2));
	return err;
release:
	tr_release(pid, 0);
	return err;
}

static struct tr_watch *tr_find(struct tracer *tr, pid_t r)
{
	size_t i;

	for (i = 0; i < tr->nw; i++)
		if (tr->w[i].tid == r)
			return &tr->w[i];
	/* an exec by a thread that was not the leader: reported with the
	 * process's id (the thread took the leader's) */
	for (i = 0; i < tr->nw; i++)
		if (tr->w[i].pid == r)
			return &tr->w[i];
	return NULL;
}

static void tr_drop(struct tracer *tr, struct tr_watch *w)
{
	*w = tr->w[--tr->nw];
}

/* "<pid>.<tid>.exec": seize the thread, then remove the file (the agent
 * goes on once it is gone). */
static void tr_request(struct tracer *tr, const char *name)
{
	char path[1024], *end;
	long pid, tid;
	struct tr_watch *nw;

	pid = strtol(name, &end, 10);
	if (*end != '.')
		return;
	tid = strtol(end + 1, &end, 10);
	if (strcmp(end, ".exec") || pid <= 0 || tid <= 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", tr->dir, name);
	/* a test switch: a coordinator slow to answer, as on a loaded host
	 * (tests/e2e/golden.sh, PROPEL_EXEC_HANDOFF_MS) */
	propel_test_delay("PROPEL_TEST_EXEC_DELAY_MS");
	if (access(path, F_OK))
		return; /* served already, or the agent gave up */
	if (tr->nw == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 8;

		nw = realloc(tr->w, cap * sizeof(*nw));
		if (!nw) {
			unlink(path);
			return;
		}
		tr->w = nw;
		tr->cap = cap;
	}
	if (ptrace(PTRACE_SEIZE, (pid_t)tid, 0, (void *)PTRACE_O_TRACEEXEC) < 0) {
		char why[128];
		int err = -errno;

		unlink(path);
		snprintf(why, sizeof(why), "cannot follow its exec: %s",
			 strerror(-err));
		tr_warn(tr, (pid_t)pid, err, why);
		return;
	}
	tr->w[tr->nw].pid = (pid_t)pid;
	tr->w[tr->nw].tid = (pid_t)tid;
	tr->w[tr->nw].since_ms = propel_mono_ms();
	tr->nw++;
	unlink(path);
	pr_dbg("following the exec of %ld (thread %ld)", pid, tid);
}

/* "<pid>.<tid>.<chan>.peer": a propagation request (tracer.h). */
static void tr_peer(struct tracer *tr, const char *name)
{
	struct tracer_peer req;
	char path[1024], taken[1040], *end, *nl;
	ssize_t n;
	int fd;

	memset(&req, 0, sizeof(req));
	req.pid = (pid_t)strtol(name, &end, 10);
	if (*end != '.' || req.pid <= 0)
		return;
	req.tid = (pid_t)strtol(end + 1, &end, 10);
	if (*end != '.' || strlen(name) >= sizeof(req.name))
		return;
	snprintf(req.name, sizeof(req.name), "%s", name);
	snprintf(path, sizeof(path), "%s/%s", tr->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* served already, or the agent gave up */
	n = read(fd, req.line, sizeof(req.line) - 1);
	close(fd);
	req.line[n > 0 ? n : 0] = 0;
	if ((nl = strchr(req.line, '\n')))
		*nl = 0;
	if (!tr->peer || n <= 0) {
		unlink(path);
		return;
	}
	/* taken: the agent waits for an injection under way longer (tracer.h) */
	snprintf(taken, sizeof(taken), "%s.taken", path);
	if (rename(path, taken) < 0)
		return; /* the agent gave up meanwhile */
	pr_dbg("peer request %s: %s", name, req.line);
	tr->peer(&req, tr->peer_arg);
}

void tracer_set_peer(struct tracer *tr, tracer_peer_fn fn, void *arg)
{
	tr->peer = fn;
	tr->peer_arg = arg;
}

void tracer_peer_done(struct tracer *tr, const char *name)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", tr->dir, name);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.taken", tr->dir, name);
	unlink(path);
}

int tracer_fd(const struct tracer *tr)
{
	return tr->ino;
}

static int tr_ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && !strcmp(s + n - m, suf);
}

static void tr_name(struct tracer *tr, const char *name)
{
	if (tr_ends(name, ".exec"))
		tr_request(tr, name);
	else if (tr_ends(name, ".peer"))
		tr_peer(tr, name);
}

static void tr_scan(struct tracer *tr)
{
	DIR *d = opendir(tr->dir);
	struct dirent *e;
	size_t n;

	(void)n;
	while (d && (e = readdir(d)))
		tr_name(tr, e->d_name);
	if (d)
		closedir(d);
}

static void tr_event(struct tracer *tr, pid_t r, int st)
{
	struct tr_watch *w = tr_find(tr, r);
	char *cause = NULL;
	pid_t pid;
	int err;

	if (!w)
		return;
	if (!WIFSTOPPED(st)) {
		tr_drop(tr, w); /* exited (the exec failed, or killed) */
		return;
	}
	if ((st >> 16) != PTRACE_EVENT_EXEC) {
		tr_pass(r, st);
		return;
	}
	pid = w->pid;
	tr_drop(tr, w);
	err = tr_follow(tr, pid, &cause);
	if (err && err != -ESRCH)
		tr_warn(tr, pid, err, cause);
	else if (!err)
		tr->followed++;
	free(cause);
}

int tracer_new(const char *session_dir, const char *agent_so, uint32_t flags,
	       tracer_warn_fn warn, void *arg, struct tracer **out,
	       char **cause)
{
	struct tracer *tr = calloc(1, sizeof(*tr));

	*out = NULL;
	if (!tr)
		return propel_cause(cause, -ENOMEM, "out of memory");
	snprintf(tr->dir, sizeof(tr->dir), "%s", session_dir);
	snprintf(tr->agent, sizeof(tr->agent), "%s", agent_so);
	tr->flags = flags;
	tr->warn = warn;
	tr->arg = arg;
	tr->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (tr->ino < 0 ||
	    (tr->wd = inotify_add_watch(tr->ino, session_dir,
					IN_CREATE | IN_MOVED_TO)) < 0) {
		int err = -errno;

		if (tr->ino >= 0)
			close(tr->ino);
		free(tr);
		return propel_cause(cause, err, "inotify on %s: %s", session_dir,
				    strerror(-err));
	}
	*out = tr;
	return 0;
}

int tracer_poll(struct tracer *tr, int timeout_ms)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd pfd = { tr->ino, POLLIN, 0 };
	uint64_t now;
	ssize_t n;
	pid_t r;
	int st;
	size_t i;

	/* seized threads report by SIGCHLD, not on the inotify fd */
	if (tr->nw && timeout_ms > 2)
		timeout_ms = 2;
	if (poll(&pfd, 1, timeout_ms) > 0) {
		while ((n = read(tr->ino, buf, sizeof(buf))) > 0) {
			for (char *p = buf; p < buf + n;) {
				struct inotify_event *ev = (void *)p;

				if (ev->mask & IN_Q_OVERFLOW)
					tr_scan(tr);
				else if (ev->len)
					tr_name(tr, ev->name);
				p += sizeof(*ev) + ev->len;
			}
		}
	}
	while (tr->nw && (r = waitpid(-1, &st, WNOHANG | __WALL)) > 0)
		tr_event(tr, r, st);
	now = propel_mono_ms();
	for (i = 0; i < tr->nw;) {
		if (now - tr->w[i].since_ms < TR_EXEC_WAIT_MS) {
			i++;
			continue;
		}
		/* seized, and no exec came: it failed; the thread goes on */
		tr_release(tr->w[i].tid, 1);
		tr_drop(tr, &tr->w[i]);
	}
	return (int)tr->nw;
}

void tracer_counts(const struct tracer *tr, int *followed, int *failed)
{
	if (followed)
		*followed = tr->followed;
	if (failed)
		*failed = tr->failed;
}

void tracer_free(struct tracer *tr)
{
	if (!tr)
		return;
	while (tr->nw) {
		tr_release(tr->w[0].tid, 1);
		tr_drop(tr, &tr->w[0]);
	}
	/* the watch first: closing a descriptor that still holds one waits
	 * for an RCU grace period, ~16 ms here (0.3 ms this way) */
	inotify_rm_watch(tr->ino, tr->wd);
	close(tr->ino);
	free(tr->w);
	free(tr);
}

/* ---- the processes tracing into a session directory ---- */

#define TR_STARTUP_MS 3000 /* exec to the agent's load, at most */

/*
 * 1 if pid has just exec'd a program that is about to load the agent: its
 * environment preloads it and the dynamic loader is mapped or about to be
 * (the program has a PT_INTERP: the kernel maps its segments before the
 * loader's, and a look between the two sees no loader -- a
 * record/lingering run at load 6 ended while its traced `sleep` was
 * there, 7 looks in 60 runs; a static program never loads it), or the exec is still
 * under way (the new image's environment is not set up yet:
 * /proc/PID/environ is empty), and the exec was less than TR_STARTUP_MS
 * ago (one whose agent failed to load is let go after that).
 */
int tracer_exec_pending(pid_t pid, const char *agent, int dynamic)
{
	char path[64], env[16384], *p;
	int n, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = propel_read_small(path, env, sizeof(env));
	if (n < 0)
		return 0;
	for (p = env; p < env + n; p += strlen(p) + 1) {
		if (!strncmp(p, "LD_PRELOAD=", 11) && strstr(p, agent))
			found = 1;
	}
	if (n > 0 && (!found || (!dynamic && hijack_exe_dynamic(pid) != 1)))
		return 0; /* n == 0: not set up yet */
	/* the process's start is its fork; the exec came after, so this
	 * bounds the wait from above */
	return propel_proc_younger(pid, TR_STARTUP_MS);
}

/*
 * Whose agent a process holds.  An agent library mapped is no proof that
 * the agent is this session's: a process this session traced (a map file
 * of its pid in dir) may since have been switched off (`propel detach`)
 * and attached by another propel, whose session must not be switched off
 * by this one's end (issue 30).  An agent's files say whose it is: an
 * active agent holds its map file open and maps its threads' rings, both
 * in its session directory, and nothing in another's.
 */
struct maps_session_q {
	char pre[600];
	const char *agent;
	int lines, dynamic;
	int ours;   /* maps or holds open a file of dir */
	int other;  /* ... of another session directory */
	int loaded; /* maps the agent library */
};

/* Count path as a file of dir (q->pre), of another session's directory
 * (PROPEL_SHM_ROOT/<session>/...), or the agent library. */
static void tr_session_file(struct maps_session_q *q, const char *path)
{
	size_t root = strlen(PROPEL_SHM_ROOT);

	if (!strncmp(path, q->pre, strlen(q->pre)))
		q->ours = 1;
	else if (!strncmp(path, PROPEL_SHM_ROOT "/", root + 1) &&
		 strchr(path + root + 1, '/'))
		q->other = 1;
	else if (strstr(path, q->agent))
		q->loaded = 1;
}

static int maps_session_step(const struct propel_map *m, void *arg)
{
	struct maps_session_q *q = arg;

	q->lines++;
	q->dynamic |= strstr(m->path, "/ld-linux") != NULL;
	tr_session_file(q, m->path);
	return 0;
}

/* The map files pid holds open, counted as its mappings are: an active
 * agent holds its session's open (one whose threads have no ring yet holds
 * nothing else); no other file of a session stays open in a program. */
static void fds_session(pid_t pid, struct maps_session_q *q)
{
	char path[64], link[PATH_MAX];
	struct dirent *e;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && !q->ours && !q->other && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", (int)pid,
			 e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (n > 4 && !strcmp(link + n - 4, ".map"))
			tr_session_file(q, link);
	}
	if (d)
		closedir(d);
}

/*
 * 1 if dir holds a map file of pid ("<pid>.<nonce>.map") whose agent has
 * not said it detached: its last line is not "X n".  An agent that
 * switched itself off beside running threads ("X 0 inert", or a detach
 * cut short) left its code for a detach: still this session's to end.
 */
static int map_file_live(const char *dir, pid_t pid)
{
	char pre[24], path[PATH_MAX], tail[128], *nl;
	struct dirent *e;
	int live = 0;
	DIR *d = opendir(dir);

	snprintf(pre, sizeof(pre), "%d.", (int)pid);
	while (d && !live && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		ssize_t n;
		off_t end;
		int fd;

		if (strncmp(e->d_name, pre, strlen(pre)) || l < 5 ||
		    strcmp(e->d_name + l - 4, ".map"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		end = lseek(fd, 0, SEEK_END);
		n = end > 0 ? pread(fd, tail, sizeof(tail) - 1,
				    end > (off_t)sizeof(tail) - 1
					    ? end - (off_t)sizeof(tail) + 1
					    : 0)
			    : 0;
		close(fd);
		tail[n > 0 ? n : 0] = 0;
		while (n > 0 && tail[n - 1] == '\n')
			tail[--n] = 0;
		nl = strrchr(tail, '\n');
		nl = nl ? nl + 1 : tail;
		live = strncmp(nl, "X ", 2) || strstr(nl, " inert");
	}
	if (d)
		closedir(d);
	return live;
}

/*
 * 1 if pid is alive and this session's: it maps files under dir/ and
 * none of another session; or it holds a file of dir open (an active
 * agent holds its map file open, and one session's at a time); or,
 * holding no session's file open, it maps a file of dir, or has the agent
 * library mapped and its map file in dir does not say it detached (an
 * agent switched off beside running threads, its code left for a detach;
 * an agent whose map file the program closed); or it is about to load the
 * agent (tracer_exec_pending).  Mappings of other sessions' files alone
 * prove nothing: an agent leaves its comm position files mapped after
 * its session (comm-stream.c, a thread may still hold one), so a daemon
 * followed before holds old sessions' files -- and was taken for another
 * session's: an attach of it ended at once, its code left patched (CI,
 * soak batch-follow/restored).  A child of ours (child non-zero)
 * whose memory is already gone but that is not a zombie yet is exiting:
 * its own children are about to be handed to us, so it counts until it
 * is a zombie.
 */
static int maps_session(pid_t pid, const char *dir, const char *agent,
			int child)
{
	struct maps_session_q q = { .agent = agent };
	unsigned long flags;
	char state;

	snprintf(q.pre, sizeof(q.pre), "%s/", dir);
	if (propel_maps_each((int)pid, maps_session_step, &q) < 0)
		return 0;
	if (q.ours && !q.other)
		return 1;
	if (q.loaded) {
		struct maps_session_q f = { .agent = agent };

		memcpy(f.pre, q.pre, sizeof(f.pre));
		fds_session(pid, &f);
		if (f.ours)
			return 1;
		if (f.other)
			return 0; /* an agent of another session, active */
	}
	if (q.ours || (q.loaded && map_file_live(dir, pid)))
		return 1;
	/* no mappings: not set up yet (forked, not run), or in the middle
	 * of an exec (the old mm gone, the new one not shown yet): alive
	 * unless a zombie or a kernel thread (a pid reused) */
	if (!q.lines && propel_proc_stat(pid, &state, &flags) == 0)
		return state != 'Z' && state != 'X' &&
		       (child || !(flags & PROPEL_PF_KTHREAD));
	return q.lines && tracer_exec_pending(pid, agent, q.dynamic);
}

/* The caller's children, from /proc/self/task/TID/children (one thread:
 * propel's coordinator), else from a scan of /proc. */
static size_t my_children(pid_t *out, size_t max)
{
	char path[64], buf[8192], *p, *end;
	pid_t me = getpid();
	size_t n = 0;
	ssize_t r;
	DIR *d;
	struct dirent *e;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)me);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[r > 0 ? r : 0] = 0;
		for (p = buf; n < max; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			out[n++] = (pid_t)v;
		}
		return n;
	}
	d = opendir("/proc");
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		int pid = atoi(e->d_name), ppid = 0;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			sscanf(p + 1, " %*c %d", &ppid);
		fclose(f);
		if (ppid == me)
			out[n++] = pid;
	}
	closedir(d);
	return n;
}

struct tr_cand {
	pid_t pid;
	int has_map; /* named by a map file (else: a child of ours) */
};

static int cand_cmp(const void *a, const void *b)
{
	const struct tr_cand *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return y->has_map - x->has_map; /* the one with a map file first */
}

int tracer_traced_pids(const char *dir, const char *agent, pid_t **out)
{
	struct tr_cand *v, *nv;
	pid_t kids[512], *res;
	size_t n, cap = 1024, i, k = 0;
	struct dirent *e;
	DIR *d;

	*out = NULL;
	n = my_children(kids, sizeof(kids) / sizeof(kids[0]));
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i].pid = kids[i];
		v[i].has_map = 0;
	}
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		const char *dot = strrchr(e->d_name, '.');
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0 || !dot || strcmp(dot, ".map"))
			continue;
		if (n == cap) {
			nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		v[n].pid = pid;
		v[n++].has_map = 1;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), cand_cmp);
	res = malloc((n ? n : 1) * sizeof(*res));
	if (!res) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (i && v[i].pid == v[i - 1].pid)
			continue;
		if (maps_session(v[i].pid, dir, agent, !v[i].has_map))
			res[k++] = v[i].pid;
	}
	free(v);
	*out = res;
	return (int)k;
}

int tracer_detach_all(const char *dir, const char *agent,
		      void (*warn)(void *arg, pid_t pid, int err,
				   const char *cause),
		      void *arg)
{
	pid_t *pids = NULL;
	int n, i, ok = 0, fd;
	char stop[PATH_MAX];

	/* no agent waits for an answer to a propagation request now */
	snprintf(stop, sizeof(stop), "%s/" PROPEL_STOPPING_FILE, dir);
	fd = open(stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	n = tracer_traced_pids(dir, agent, &pids);
	for (i = 0; i < n; i++) {
		char *cause = NULL;
		int err = inject_agent_stop(pids[i], &cause);

		/* a stop whose threads ran before its end (agent.c
		 * agent_others_held) leaves the agent inert, some of its
		 * code patched: not switched off */
		if (err >= 0 && inject_agent_status(pids[i], NULL) == 2) {
			free(cause);
			cause = NULL;
			propel_cause(&cause, -EAGAIN, "%d call sites restored, "
				     "the rest left patched (its threads ran "
				     "before the end): `propel detach %d` "
				     "restores them", err, (int)pids[i]);
			err = -EAGAIN;
		}
		if (err >= 0)
			ok++;
		else if (err != -ENOENT && err != -ESRCH && warn)
			warn(arg, pids[i], err, cause);
		free(cause);
	}
	free(pids);
	return n < 0 ? n : ok;
}
