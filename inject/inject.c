/*
 * inject/inject.c - the high-level operations of `propel attach`: load the
 * agent into a live process and start or stop it, each in one hold of
 * inject/hijack.c.
 *
 * inject_agent_start:
 *   attach -> dynamically linked? -> dlopen(agent, RTLD_NOW) with the other
 *   threads running (the loader and malloc locks may be held by one of
 *   them) -> on failure dlerror() in the same thread ->
 *   propel_agent_lease(dir) with the others running (the agent's thread
 *   watching this propel process, before anything is patched) -> resolve
 *   propel_agent_start in the agent's mapping (all threads stopped again)
 *   -> thread hints -> propel_agent_start(dir, hints, n, flags) with every
 *   other thread stopped -> propel_agent_lease(NULL) (a lease the start
 *   found, if none runs yet) -> detach.  Every call returns the safe way
 *   (hijack_set_return): a propel killed at any moment of this leaves the
 *   target running, its agent off within the lease.  A call whose thread
 *   came back by itself (propel late at the pad: hijack_call_escaped)
 *   leaves it wherever the program had taken it: looked at again
 *   (inject_safe_point) before the next call, its errno read anew
 *   (inject_errno).  inject_agent_start_held is the same work in a hold
 *   the caller owns (inject/tracer.c injects a new image, stopped at main,
 *   in a hold adopted from its PTRACE_O_TRACEEXEC seize).
 * inject_agent_stop:   attach -> find the mapped agent -> propel_agent_stop()
 *   -> detach.
 * An agent is recognised by a mapped file whose name contains
 * "propel-agent" (libpropel-agent.so, test fakes) and that exports the
 * symbols of share/agent-abi.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/hijack.h"
#include "inject/inject.h"
#include "share/agent-abi.h"
#include "share/log.h"
#include "share/proc.h"

#define PR_DOMAIN "inject"

#define INJECT_RTLD_NOW 2
#define INJECT_RTLD_DLOPEN 0x80000000u /* __libc_dlopen_mode's flag */
#define INJECT_AGENT_TAG "propel-agent"
#define INJECT_LDSO "ld-linux-x86-64.so.2"
#define INJECT_YOUNG_MS 30000 /* a process this young may still be starting */

struct inject_loaded_q {
	char **path;
	int found;
};

static int inject_loaded_step(const struct propel_map *m, void *arg)
{
	struct inject_loaded_q *q = arg;
	const char *base = strrchr(m->path, '/');

	if (m->path[0] != '/' || !strstr(base + 1, INJECT_AGENT_TAG) ||
	    !strstr(base + 1, ".so"))
		return 0;
	q->found = m->deleted ? 2 : 1;
	if (q->path && !(*q->path = strdup(m->path)))
		q->found = -ENOMEM;
	return 1;
}

int inject_agent_loaded(pid_t pid, char **path)
{
	struct inject_loaded_q q = { path, 0 };

	if (propel_maps_each(pid, inject_loaded_step, &q) < 0)
		return -ESRCH;
	return q.found;
}

static int inject_so_step(const struct propel_map *m, void *arg)
{
	return !m->deleted && strcmp(m->path, arg) == 0;
}

/* 1 if the file so (a path as given to dlopen) is mapped in pid. */
static int inject_so_mapped(pid_t pid, const char *so)
{
	char real[PATH_MAX];

	return propel_maps_each(pid, inject_so_step,
				realpath(so, real) ? real : (char *)so) == 1;
}

/* errno text for an agent's -errno, with the ABI's special meanings. */
static int inject_agent_err(int r, const char *what, char **cause)
{
	if (r == -EBUSY)
		return propel_cause(cause, r, "already being traced by propel");
	return propel_cause(cause, r, "%s failed in the target: %s", what,
			    strerror(-r));
}

/* Calls into the loaded agent so return through its pad (share/agent-abi.h
 * PROPEL_AGENT_RETURN_SYM): safe if propel dies during them.  An agent
 * without one (a test's fake) is called the plain way. */
static void inject_agent_return(struct hijack *h, const char *so)
{
	uint64_t pad, res;

	if (!hijack_sym(h, so, PROPEL_AGENT_RETURN_SYM, &pad, NULL) &&
	    !hijack_sym(h, so, PROPEL_AGENT_RESULT_SYM, &res, NULL))
		hijack_set_return(h, pad, res);
}

/*
 * The call thread's errno, kept across a hold's calls.  They open, map and
 * fail (dlopen's search path, the agent's start and stop), and the call
 * thread may have been stopped between a call of its own that failed and
 * its look at errno: it saw ENOENT or EEXIST instead of EINTR
 * (tests/e2e/signal-errno.sh; an event loop such as redis's panics on
 * epoll_wait failing with anything but EINTR).  Where errno lives is
 * read, not asked by a call (a call the plain way would kill the target
 * if propel died during it; the safe way loses rax): glibc's
 * __errno_location is `mov TPOFF(%rip), %rax; add %fs:0, %rax; ret`, so
 * errno is at the call thread's fs_base + the offset in that GOT slot.
 * The value goes back with one write before the detach.  A libc whose
 * code is another (or a static target) is left as it was.
 *
 * A call into the agent may come back by itself (propel late at its pad:
 * hijack_call_escaped): the thread returns to the program straight from
 * the agent, and the program runs on, held again only later.  So the value
 * is also written before each call into the agent (inject_agent_run:
 * dlopen's clobber undone), whose entry points hand back the errno they
 * were called with (inject/agent/agent.c): a call that comes back by itself
 * leaves the program its own.  After one, the program's errno is its own
 * again, perhaps a fresh one it is about to look at (EINTR from
 * epoll_wait): it is read anew at the thread's new stop, never the stale
 * value written over it (tests/e2e/harm-errno-escape.sh).
 */
struct inject_errno {
	uint64_t at;
	int32_t v;
};

static void inject_errno_save(struct hijack *h, struct inject_errno *e)
{
	static const uint8_t add_fs[] = { 0x64, 0x48, 0x03, 0x04, 0x25,
					  0,    0,    0,    0,    0xc3 };
	uint8_t code[4 + 7 + sizeof(add_fs)];
	uint64_t fn, off, tp = hijack_call_thread_tp(h);
	size_t i = 0;
	int32_t rel;

	e->at = 0;
	if (!tp || hijack_sym(h, "libc.so.6", "__errno_location", &fn, NULL) ||
	    hijack_read(h, fn, code, sizeof(code)))
		return;
	if (memcmp(code, "\xf3\x0f\x1e\xfa", 4) == 0)
		i = 4; /* endbr64 */
	if (code[i] != 0x48 || code[i + 1] != 0x8b || code[i + 2] != 0x05 ||
	    memcmp(code + i + 7, add_fs, sizeof(add_fs)) != 0)
		return;
	memcpy(&rel, code + i + 3, sizeof(rel));
	if (hijack_read(h, fn + i + 7 + (uint64_t)(int64_t)rel, &off, sizeof(off)) ||
	    hijack_read(h, tp + off, &e->v, sizeof(e->v)))
		return;
	e->at = tp + off;
}

static void inject_errno_restore(struct hijack *h, const struct inject_errno *e)
{
	if (e->at)
		hijack_write(h, e->at, &e->v, sizeof(e->v));
}

/* A call into the agent (inject_agent_return's way back) with the call
 * thread's errno as the program had it (inject_errno): written before it,
 * read anew after a call whose thread came back by itself. */
static int inject_agent_run(struct hijack *h, struct inject_errno *e,
			    uint64_t fn, const uint64_t *args, int nargs,
			    unsigned flags, uint64_t *ret, char **cause)
{
	int err;

	inject_errno_restore(h, e);
	err = hijack_call(h, fn, args, nargs, flags, ret, cause);
	if (hijack_call_escaped(h) && e->at &&
	    hijack_read(h, e->at, &e->v, sizeof(e->v)))
		e->at = 0; /* unknown now: better left alone than made stale */
	return err;
}

/* dlopen of the agent in the target. */
static int inject_dlopen(struct hijack *h, const char *so, char **cause)
{
	uint64_t fn, err_fn, path, args[2], ret = 0;
	int legacy = 0, err;
	char *msg = NULL;

	err = hijack_sym(h, "libc.so.6", "dlopen", &fn, NULL);
	if (err) {
		err = hijack_sym(h, "libc.so.6", "__libc_dlopen_mode", &fn,
				 cause);
		if (err)
			return err;
		legacy = 1;
	}
	err = hijack_stage(h, so, strlen(so) + 1, &path);
	if (err)
		return propel_cause(cause, err, "cannot place the agent path on "
						"the target's stack");
	args[0] = path;
	args[1] = INJECT_RTLD_NOW | (legacy ? INJECT_RTLD_DLOPEN : 0);
	/* back through glibc's __restore_rt: a propel killed during the
	 * dlopen leaves the thread to put itself back (hijack-ret.c); rax
	 * is lost on that way, the maps tell whether the agent came */
	hijack_set_return(h, hijack_restore_rt(h), 0);
	err = hijack_call(h, fn, args, 2, HIJACK_OTHERS_RUN, &ret, cause);
	hijack_set_return(h, 0, 0);
	if (err)
		return err;
	if (ret || inject_so_mapped(hijack_pid(h), so))
		return 0;
	/* failed: dlerror() in the same thread (its error state is
	 * thread-local) */
	if (!legacy && !hijack_sym(h, "libc.so.6", "dlerror", &err_fn, NULL) &&
	    !hijack_call(h, err_fn, NULL, 0, 0, &ret, NULL) && ret &&
	    !hijack_read_str(h, ret, 512, &msg)) {
		msg[strcspn(msg, "\n")] = 0;
		err = propel_cause(cause, -ENOENT, "dlopen in the target failed: %s",
				   msg);
		free(msg);
		return err;
	}
	return propel_cause(cause, -ENOENT, "dlopen of %s in the target failed",
			    so);
}

static int inject_check_dynamic(struct hijack *h, char **cause)
{
	char *libc = NULL;
	int dyn = hijack_exe_dynamic(hijack_pid(h));

	if (dyn == 0)
		return propel_cause(cause, -ENOEXEC,
				    "statically linked: cannot load the agent "
				    "(no dlopen)");
	if (hijack_find_lib(hijack_pid(h), "libc.so.6", &libc))
		return propel_cause(cause, -ENOEXEC,
				    "no libc.so.6 mapped: cannot load the agent "
				    "(no dlopen)");
	free(libc);
	return 0;
}

/* The agent's path as the target must see it: absolute. */
static void inject_abs_path(const char *agent_so, char *so, size_t n)
{
	char cwd[PATH_MAX / 2];

	if (!realpath(agent_so, so)) {
		if (agent_so[0] == '/' || !getcwd(cwd, sizeof(cwd)))
			snprintf(so, n, "%s", agent_so);
		else
			snprintf(so, n, "%s/%s", cwd, agent_so);
	}
}

/* Syscalls glibc's malloc makes in the middle of its work. */
static int inject_alloc_syscall(long nr)
{
	switch (nr) {
	case 9:  /* mmap */
	case 10: /* mprotect */
	case 11: /* munmap */
	case 12: /* brk */
	case 25: /* mremap */
	case 28: /* madvise */
		return 1;
	}
	return 0;
}

/*
 * Whether the thread that will run our calls (dlopen, the agent's entry
 * points; they allocate) stopped where such calls are safe.  Not:
 *   - in the dynamic loader: the program is starting (its libc not
 *     relocated yet) or loading a library; a dlopen would break the
 *     loader's state;
 *   - in user code inside the allocator -- an object that defines malloc:
 *     libc, or one interposed on it (jemalloc under redis-server,
 *     tcmalloc) -- or in one of malloc's own syscalls there: it may be
 *     half-way through malloc.  glibc's malloc takes no lock in a
 *     single-threaded process, so the call would walk a heap in the
 *     middle of a change (abort() in sshd's re-exec'd connection process,
 *     which propeld injects while it starts up); jemalloc's would wait on
 *     a lock the thread itself holds, for ever.
 * A thread blocked in any other syscall (read, poll, futex...) holds no
 * such state.  -EAGAIN: let the process run a moment and ask again.
 */
static int inject_safe_point(struct hijack *h, char **cause)
{
	char path[PATH_MAX];
	uint64_t fn;
	long nr;

	if (!hijack_call_thread_file(h, path, sizeof(path)))
		path[0] = 0;
	if (path[0] && !strcmp(strrchr(path, '/') + 1, INJECT_LDSO))
		return propel_cause(cause, -EAGAIN, "it stays in its dynamic "
						    "loader (starting up)");
	/* called by it: a library's constructor, run before main (the
	 * agent would find no function of the program on the stack, and
	 * main is called from libc); looked for in a young process only */
	if (propel_proc_younger(hijack_pid(h), INJECT_YOUNG_MS) &&
	    hijack_call_thread_calls_from(h, INJECT_LDSO))
		return propel_cause(cause, -EAGAIN, "it stays in its dynamic "
						    "loader's constructors "
						    "(starting up)");
	nr = hijack_call_thread_syscall(h);
	pr_dbg("pid %d: thread %d stopped in %s, syscall %ld",
	       (int)hijack_pid(h), (int)hijack_call_thread(h),
	       path[0] ? path : "anonymous memory", nr);
	if (!path[0] ||
	    hijack_sym_noexec(hijack_pid(h), path, "malloc", &fn, NULL))
		return 0;
	if (nr < 0 || inject_alloc_syscall(nr))
		return propel_cause(cause, -EAGAIN, "it stays busy in its memory "
						    "allocator (%s)",
				    strrchr(path, '/') + 1);
	return 0;
}

/* 1 if pid's pid namespace is propel's (the agent sees the coordinator a
 * session directory names: PROPEL_START_NEED_LEASE) */
static int inject_same_pidns(pid_t pid)
{
	char a[64], b[64], p[64];
	ssize_t na, nb;

	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	na = readlink("/proc/self/ns/pid", a, sizeof(a) - 1);
	nb = readlink(p, b, sizeof(b) - 1);
	return na > 0 && na == nb && !memcmp(a, b, (size_t)na);
}

static int inject_start(struct hijack *h, const char *agent_so,
			const char *session_dir, uint32_t flags,
			struct inject_errno *e, char **cause)
{
	char so[PATH_MAX + 64];
	struct propel_thread_hint *hints = NULL;
	uint64_t fn, ahints, adir, args[4], ret = 0;
	size_t n = 0;
	int err, escaped;

	/* the target has its own cwd: give it an absolute path */
	inject_abs_path(agent_so, so, sizeof(so));
	err = inject_safe_point(h, cause);
	if (err)
		return err;
	err = inject_check_dynamic(h, cause);
	if (err)
		return err;
	/* the rings are files in session_dir: a target with a mount
	 * namespace of its own (unshare -m, a container) has another
	 * /dev/shm, where the agent would find no session */
	if (propel_proc_sees(hijack_pid(h), session_dir) == 0) {
		int shm = !strncmp(session_dir, "/dev/shm/", 9);

		return propel_cause(cause, -EXDEV,
				    "its %s is not the one propel writes its "
				    "rings in (a mount namespace of its own: "
				    "%s is not there)",
				    shm ? "/dev/shm" : "file system",
				    session_dir);
	}
	/* An agent stays loaded after a detach (threads may still return
	 * through its stubs).  One from another propel build -- its file
	 * replaced or elsewhere -- cannot be swapped for this one, and a
	 * second copy beside it would fight it over the same code. */
	{
		char *old = NULL;
		int l = inject_agent_loaded(hijack_pid(h), &old);

		if (access(so, R_OK) == 0 &&
		    (l == 2 || (l == 1 && old && strcmp(old, so) != 0))) {
			err = propel_cause(cause, -EEXIST,
					   "an agent of another propel build is "
					   "loaded (%s%s); restart the process "
					   "to trace it with this one",
					   old ? old : "?", l == 2 ? ", since replaced" : "");
			free(old);
			return err;
		}
		free(old);
	}
	err = inject_dlopen(h, so, cause);
	if (err)
		return err;
	inject_agent_return(h, so);
	/* the lease first (its thread needs the others running): a propel
	 * killed during the start leaves an agent that switches itself off */
	if (!hijack_sym(h, so, PROPEL_AGENT_LEASE_SYM, &fn, NULL) &&
	    !hijack_stage(h, session_dir, strlen(session_dir) + 1, &adir) &&
	    (args[0] = adir,
	     !inject_agent_run(h, e, fn, args, 1, HIJACK_OTHERS_RUN, &ret,
			       NULL)) &&
	    (int32_t)ret < 0)
		pr_dbg("lease in %d: %s", (int)hijack_pid(h),
		       strerror(-(int32_t)ret));
	/* a call thread that came back by itself (we were late at its pad)
	 * has run the program since and is held wherever it was then: the
	 * start runs there only where the first look would have let it */
	if (hijack_call_escaped(h)) {
		err = inject_safe_point(h, cause);
		if (err)
			return err;
	}
	err = hijack_sym(h, so, PROPEL_AGENT_START_SYM, &fn, cause);
	if (err)
		return err;
	err = hijack_threads(h, &hints, &n);
	if (err)
		return propel_cause(cause, err, "out of memory");
	err = hijack_stage(h, hints, n * sizeof(*hints), &ahints);
	if (!err)
		err = hijack_stage(h, session_dir, strlen(session_dir) + 1, &adir);
	if (err) {
		propel_cause(cause, err, "cannot place the arguments on the "
					 "target's stack");
		goto out;
	}
	args[0] = adir;
	args[1] = ahints;
	args[2] = n;
	args[3] = flags | (inject_same_pidns(hijack_pid(h))
				   ? PROPEL_START_NEED_LEASE : 0);
	err = inject_agent_run(h, e, fn, args, 4, 0, &ret, cause);
	escaped = hijack_call_escaped(h);
	if (err)
		goto out;
	if ((int32_t)ret < 0) {
		err = (int32_t)ret == -ESRCH
			      ? propel_cause(cause, -ESRCH,
					     "the propel that owns the session "
					     "ended during the injection (no "
					     "lease: the agent stays off)")
			      : inject_agent_err((int32_t)ret,
						 PROPEL_AGENT_START_SYM, cause);
		goto out;
	}
	/* the lease thread (it needs malloc's locks: the others run); an
	 * agent without it (a test's fake) goes on without a lease.  After
	 * a start whose thread came back by itself, not asked where that
	 * thread is now unless it is safe there (inside malloc, a thread
	 * made would wait on the arena lock it holds); inside the agent,
	 * the agent answers EAGAIN to a thread that holds its lock.  The
	 * lease taken before the start, if any, watches all the same. */
	args[0] = 0;
	if (escaped && inject_safe_point(h, NULL)) {
		pr_dbg("lease in %d: not asked again (the start's thread came "
		       "back by itself to where no call is safe)",
		       (int)hijack_pid(h));
	} else if (!hijack_sym(h, so, PROPEL_AGENT_LEASE_SYM, &fn, NULL) &&
		   !inject_agent_run(h, e, fn, args, 1, HIJACK_OTHERS_RUN,
				     &ret, NULL) &&
		   (int32_t)ret < 0) {
		pr_dbg("lease in %d: %s", (int)hijack_pid(h),
		       strerror(-(int32_t)ret));
	}
out:
	free(hints);
	return err;
}

/* (the call thread's errno as the hold found it, whatever the calls did:
 * inject_errno) */
int inject_agent_start_held(struct hijack *h, const char *agent_so,
			    const char *session_dir, uint32_t flags,
			    char **cause)
{
	struct inject_errno e;
	int err;

	inject_errno_save(h, &e);
	err = inject_start(h, agent_so, session_dir, flags, &e, cause);
	inject_errno_restore(h, &e);
	return err;
}

int inject_agent_start(pid_t pid, const char *agent_so, const char *session_dir,
		       uint32_t flags, char **cause)
{
	struct hijack *h = NULL;
	int err, e2;

	/* -EAGAIN: a thread of an earlier session's agent was stopped inside
	 * the agent's lock; let the process run a moment and ask again */
	for (int tries = 0;; tries++) {
		err = hijack_attach(pid, &h, cause);
		if (err)
			return err;
		err = inject_agent_start_held(h, agent_so, session_dir, flags,
					      cause);
		e2 = hijack_detach(h);
		h = NULL;
		if (err != -EAGAIN || tries == 200)
			break;
		if (cause) {
			free(*cause);
			*cause = NULL;
		}
		usleep(10000);
	}
	if (e2 && !err)
		err = propel_cause(cause, e2, "detach: %s", strerror(-e2));
	return err;
}

/* Attach, find agent symbol sym, call it with all threads stopped; with
 * safe, only at a safe point (-EAGAIN otherwise: inject_safe_point). */
static int inject_agent_call(pid_t pid, const char *sym, int safe,
			     int32_t *res, char **cause)
{
	struct hijack *h = NULL;
	char *so = NULL;
	uint64_t fn, ret = 0;
	int err, e2;

	err = inject_agent_loaded(pid, &so);
	if (err < 0)
		return propel_cause(cause, err, "no such process");
	if (err == 0)
		return propel_cause(cause, -ENOENT, "propel agent not loaded");
	err = hijack_attach(pid, &h, cause);
	if (err)
		goto out_free;
	err = safe ? inject_safe_point(h, cause) : 0;
	if (!err)
		err = hijack_sym(h, so, sym, &fn, cause);
	if (!err) {
		struct inject_errno e;

		inject_errno_save(h, &e);
		inject_agent_return(h, so);
		err = inject_agent_run(h, &e, fn, NULL, 0, 0, &ret, cause);
		inject_errno_restore(h, &e);
	}
	if (!err)
		*res = (int32_t)ret;
	e2 = hijack_detach(h);
	if (e2 && !err)
		err = propel_cause(cause, e2, "detach: %s", strerror(-e2));
out_free:
	free(so);
	return err;
}

int inject_agent_stop(pid_t pid, char **cause)
{
	int32_t r = 0;
	int err;

	/* -EAGAIN: a thread was stopped while it patched code, or not at a
	 * safe point; let it go on (the process runs between tries) */
	for (int tries = 0;; tries++) {
		err = inject_agent_call(pid, PROPEL_AGENT_STOP_SYM, 1, &r, cause);
		if ((err != -EAGAIN && (err || r != -EAGAIN)) || tries == 200)
			break;
		if (cause) {
			free(*cause);
			*cause = NULL;
		}
		r = 0;
		usleep(10000);
	}
	if (err)
		return err;
	if (r < 0)
		return inject_agent_err(r, PROPEL_AGENT_STOP_SYM, cause);
	return r;
}

int inject_agent_status(pid_t pid, char **cause)
{
	int32_t r = 0;
	int err = inject_agent_loaded(pid, NULL);

	if (err <= 0)
		return err < 0 ? propel_cause(cause, err, "no such process") : 0;
	err = inject_agent_call(pid, PROPEL_AGENT_STATUS_SYM, 0, &r, cause);
	if (err)
		return err;
	return r == 1 || r == 2 ? r : 0;
}

int inject_find_agent(char *buf, size_t n, char **cause)
{
	const char *env = getenv("PROPEL_AGENT");
	char exe[PATH_MAX - 64];
	ssize_t len;
	char *slash;

	/* (and gcc -fsanitize=address sees buf is no null destination) */
	if (!buf || !n)
		return propel_cause(cause, -EINVAL, "no room for the agent's path");
	if (env && *env) {
		if (access(env, R_OK) != 0)
			return propel_cause(cause, -ENOENT,
					    "agent %s (PROPEL_AGENT): %s", env,
					    strerror(errno));
		if (!realpath(env, buf))
			snprintf(buf, n, "%s", env);
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return propel_cause(cause, -ENOENT, "cannot find this program's path");
	exe[len] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, n, "%s/libpropel-agent.so", exe);
	if (access(buf, R_OK) == 0)
		return 0;
	snprintf(buf, n, "%s/../lib/propel/libpropel-agent.so", exe);
	if (access(buf, R_OK) == 0)
		return 0;
	return propel_cause(cause, -ENOENT,
			    "cannot find libpropel-agent.so next to %s "
			    "(set PROPEL_AGENT)", exe);
}
