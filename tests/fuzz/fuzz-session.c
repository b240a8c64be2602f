/*
 * tests/fuzz/fuzz-session.c - the session loader (engine/session.c): the
 * input is a session file, opened as `propel replay|report|tui` open one,
 * then read by each of their readers: replay (with the kernel's events),
 * the analysis load (report) and reconstruction (the TUI), the process
 * and thread lists and the directives kept in its meta.
 */
#include "analysis/trace.h"
#include "engine/analysis-load.h"
#include "engine/directives.h"
#include "engine/reconstruct.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "tests/fuzz/fuzz.h"

static int session_count_ev(const struct replay_event *ev, void *arg)
{
	(*(int64_t *)arg)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_filter f = { .kernel = 1 };
	struct session_proc *procs = NULL;
	struct session_thread *threads = NULL;
	struct directives ds;
	struct session *s = NULL;
	struct trace *t = NULL;
	struct recon *r = NULL;
	char path[128], *cause = NULL;
	int64_t seen = 0;
	size_t n;

	if (!fuzz_dir())
		return 0;
	snprintf(path, sizeof(path), "%s/session.db", fuzz_dir());
	if (fuzz_write(path, data, size))
		return 0;
	if (session_open(path, SESSION_READ, &s, &cause))
		goto out;
	replay_walk(s, &f, session_count_ev, &seen, &cause);
	free(cause);
	cause = NULL;
	if (session_processes(s, &procs, &n, &cause) == 0)
		session_processes_free(procs, n);
	free(cause);
	cause = NULL;
	if (session_threads(s, &threads, &n, &cause) == 0)
		session_threads_free(threads, n);
	free(cause);
	cause = NULL;
	if (analysis_load(s, &t, &cause) == 0)
		trace_free(t);
	free(cause);
	cause = NULL;
	if (recon_load(s, &r, &cause) == 0)
		recon_free(r);
	free(cause);
	cause = NULL;
	memset(&ds, 0, sizeof(ds));
	directives_load(s, &ds, &cause);
	directives_release(&ds);
out:
	free(cause);
	session_close(s);
	return 0;
}
