/*
 * tui/cmd-replay.c - `propel replay [--format=text|jsonl] [--pid P] [--tid T]
 * [DB]`: print a recorded session's events.  Options and printing only; the
 * walk (order, leaf calls, durations, names) is engine/replay.c.
 *
 * text is uftrace's replay layout: "# DURATION     TID     FUNCTION", a leaf
 * call on one line ("foo();"), a nested one as "foo() {" ... "} (comment foo)",
 * durations in uftrace's units, other events as comment lines.
 * jsonl is one object per event with the fields DESIGN.md names, written
 * by the kind's descriptor (engine/event.c).  A session recorded with
 * --vitals adds each thread's off-CPU spans (kind offcpu) among its events.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/callvals.h"
#include "engine/chunk.h"
#include "engine/event.h"
#include "engine/replay.h"
#include "engine/session.h"
#include "engine/untraced.h"
#include "share/log.h"
#include "tui/cmd.h"

enum { REPLAY_TEXT, REPLAY_JSONL };

/* uftrace's duration column: 10 characters, truncated, us/ms/s. */
static void cmd_replay_dur(char *buf, size_t n, int64_t ns)
{
	static const char *const unit[] = { "us", "ms", " s" };
	uint64_t t, frac;
	int u = 0;

	if (ns < 0) {
		snprintf(buf, n, "%10s", "");
		return;
	}
	t = (uint64_t)ns / 1000;
	frac = (uint64_t)ns % 1000;
	while (t >= 1000 && u < 2) {
		frac = t % 1000;
		t /= 1000;
		u++;
	}
	snprintf(buf, n, "%3" PRIu64 ".%03" PRIu64 " %s", t, frac, unit[u]);
}

static const char *cmd_replay_signame(int signo)
{
	const char *s = sigabbrev_np(signo);

	return s ? s : "?";
}

static int cmd_replay_text(const struct replay_event *ev, void *arg)
{
	char dur[32], name[512];
	int ind = ev->depth > 0 ? ev->depth * 2 : 0;
	const char *fn, *out = NULL;

	if (ev->kind == SK_EXIT && ev->leaf)
		return 0;
	/* calls the cost budget left out inside this one (engine/untraced.h) */
	if (ev->kind == SK_ENTRY)
		out = untraced_marks_find(arg, ev->pid, ev->func);
	fn = ev->func ? replay_short_name(ev->func, name, sizeof(name)) : "?";
	cmd_replay_dur(dur, sizeof(dur),
		       ev->kind == SK_EXIT || ev->leaf ? ev->dur_ns : -1);
	printf(" %s [%6" PRId64 "] | %*s", dur, ev->tid, ind, "");
	switch (ev->kind) {
	case SK_ENTRY: { /* uftrace's form, values with --args */
		char a[512] = "", r[64];
		int ret = ev->leaf && ev->has_ret &&
			  callvals_ret(ev->cv, ev->func_id, ev->ret, r, sizeof(r));

		callvals_args(ev->cv, ev->func_id, ev->id, a, sizeof(a));
		printf(ev->leaf ? "%s(%s)%s%s;" : "%s(%s) {", fn, a,
		       ret ? " = " : "", ret ? r : "");
		if (out)
			printf(" /* untraced inside: %s */", out);
		putchar('\n');
		break;
	}
	case SK_EXIT: {
		char r[64];

		if (ev->has_arg[2] &&
		    callvals_ret(ev->cv, ev->func_id, ev->arg[2], r, sizeof(r)))
			printf("} = %s; /* %s */\n", r, fn);
		else
			printf("} /* %s */\n", fn);
		break;
	}
	case SK_SIGNAL:
		printf("/* signal: SIG%s (%" PRId64 ") addr=0x%" PRIx64
		       " pc=0x%" PRIx64 " */\n",
		       cmd_replay_signame((int)ev->arg[0]), ev->arg[0],
		       (uint64_t)ev->arg[1], (uint64_t)ev->arg[2]);
		break;
	case SK_FORK:
		printf("/* %s: child %" PRId64 " */\n",
		       ev->has_arg[1] && ev->arg[1] == 1 ? "vfork" : "fork",
		       ev->arg[0]);
		break;
	case SK_EXEC:
		if (ev->program)
			printf("/* exec: %s */\n", ev->program);
		else
			printf("/* exec */\n");
		break;
	case SK_PROCESS_EXIT:
		printf("/* process_exit: status %" PRId64 " */\n", ev->arg[0]);
		break;
	case SK_THREAD_START:
		printf("/* thread_start: parent %" PRId64 " */\n", ev->arg[0]);
		break;
	case SK_SEND:
	case SK_RECV:
		printf("/* %s: fd %" PRId64 ", %" PRId64 " bytes",
		       session_kind_name(ev->kind), ev->arg[0], ev->arg[1]);
		if (ev->peer)
			printf(" %s %s", ev->kind == SK_SEND ? "to" : "from",
			       ev->peer);
		if (ev->chan)
			printf(", %s", ev->chan);
		if (ev->has_offset)
			printf(" @%" PRId64, ev->offset);
		if (ev->matched)
			printf(", sent by %" PRId64 "/%" PRId64, ev->match_pid,
			       ev->match_tid);
		fputs(" */\n", stdout);
		break;
	case SK_LOST:
		printf("/* lost: %" PRId64 " records */\n", ev->arg[0]);
		break;
	case SK_KSIGNAL:
		printf("/* ksignal: SIG%s (%" PRId64 "), code %" PRId64 ", %s */\n",
		       cmd_replay_signame((int)ev->arg[0]), ev->arg[0], ev->arg[1],
		       ev->arg[2] ? "handled" : "default action");
		break;
	case SK_OFFCPU: {
		char d[32], q[32];

		cmd_replay_dur(d, sizeof(d), ev->dur_ns);
		cmd_replay_dur(q, sizeof(q), ev->runq_ns);
		printf("/* offcpu: %s%s%s for %s (run queue %s) */\n",
		       ev->reason, ev->op ? " in " : "", ev->op ? ev->op : "",
		       d + strspn(d, " "), q + strspn(q, " "));
		break;
	}
	default:
		printf("/* %s */\n", session_kind_name(ev->kind)
					     ? session_kind_name(ev->kind)
					     : "unknown");
		break;
	}
	return ferror(stdout) ? -EIO : 0;
}

static int cmd_replay_jsonl(const struct replay_event *ev, void *arg)
{
	printf("{\"kind\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
	       ",\"ts_ns\":%" PRId64,
	       event_kind(ev->kind)->name, ev->pid, ev->tid, ev->ts_ns);
	event_json_fields(ev, stdout);
	fputs("}\n", stdout);
	return ferror(stdout) ? -EIO : 0;
}

/* After the trace: what the agent's cost budget left out (engine/
 * untraced.h), as comments. */
static int cmd_replay_untraced(const struct untraced_row *r, void *arg)
{
	char line[512];
	int *first = arg;

	if (!*first)
		printf("# untraced by the cost budget (propel attach --help):\n");
	*first = 1;
	untraced_format(r, line, sizeof(line));
	printf("#   %s\n", line);
	return ferror(stdout) ? -EIO : 0;
}

static int cmd_replay_num(const char *opt, const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || !*s || *end || v <= 0) {
		char what[64];

		snprintf(what, sizeof(what), "replay: %s %s", opt, s);
		propel_report(what, 0, "not a positive number");
		return -1;
	}
	*out = v;
	return 0;
}

static int cmd_replay_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* the kernel's events too: off-CPU spans of a --vitals recording */
	struct replay_filter filt = { 0, 0, 1 };
	struct session *s = NULL;
	struct untraced_marks *marks;
	const char *db = PROPEL_SESSION_DEFAULT;
	char *cause = NULL, what[64];
	int fmt = REPLAY_TEXT, c, err;
	static char obuf[1 << 16];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+f:p:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") == 0) {
				fmt = REPLAY_TEXT;
			} else if (strcmp(optarg, "jsonl") == 0) {
				fmt = REPLAY_JSONL;
			} else {
				snprintf(what, sizeof(what), "replay: --format=%s",
					 optarg);
				propel_report(what, 0,
					      "unknown format (text or jsonl)");
				return 2;
			}
			break;
		case 'p':
		case 't':
			if (cmd_replay_num(c == 'p' ? "--pid" : "--tid", optarg,
					   c == 'p' ? &filt.pid : &filt.tid) < 0)
				return 2;
			break;
		case 'h': /* tui/propel.c answers --help before exec */
			printf("usage: propel replay %s\n\n%s\n",
			       cmd_replay_entry.usage, cmd_replay_entry.summary);
			return 0;
		default:
			propel_report("replay", 0,
				      "bad option (see propel replay --help)");
			return 2;
		}
	}
	if (optind < argc)
		db = argv[optind++];
	if (optind < argc) {
		propel_report("replay", 0,
			      "too many arguments (see propel replay --help)");
		return 2;
	}
	err = session_open(db, SESSION_READ, &s, &cause);
	if (!err)
		err = chunk_session_check(s, &cause); /* before the header */
	if (err) {
		session_close(s);
		propel_report("replay", err, cause);
		free(cause);
		return 1;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if (fmt == REPLAY_TEXT)
		printf("# DURATION     TID     FUNCTION\n");
	marks = fmt == REPLAY_TEXT ? untraced_marks_load(session_db(s), filt.pid)
				   : NULL;
	err = replay_walk(s, &filt,
			  fmt == REPLAY_TEXT ? cmd_replay_text : cmd_replay_jsonl,
			  marks, &cause);
	untraced_marks_free(marks);
	if (!err && fmt == REPLAY_TEXT && !filt.tid) {
		int first = 0;
		int u = untraced_each(session_db(s), filt.pid,
				      cmd_replay_untraced, &first);

		err = u == -ENOENT ? 0 : u;
	}
	if (fflush(stdout) != 0 && !err)
		err = -EIO;
	session_close(s);
	if (err) {
		propel_report("replay", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

const struct propel_cmd cmd_replay_entry = {
	.name = "replay",
	.usage = "[--format=text|jsonl] [--pid P] [--tid T] [DB]",
	.summary = "print a session's events, thread by thread (default DB "
		   "./propel.db)\n"
		   "  --format=text   uftrace-like call tree with durations "
		   "(default)\n"
		   "  --format=jsonl  one JSON object per event\n"
		   "  --pid P, --tid T  only that process / thread",
	.exec = cmd_replay_exec,
};
