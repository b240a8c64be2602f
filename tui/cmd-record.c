/*
 * tui/cmd-record.c - `propel record [-o DB] [--buffer-size KB] [--libc]
 * -- CMD [ARG...]`: run CMD with the agent preloaded, wait for it, store the
 * trace.  The exit status is CMD's (128+N when killed by signal N, as in a
 * shell); a crash is reported on stderr and its trace kept.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/ingest.h"
#include "engine/session.h"
#include "share/log.h"
#include "tui/cmd.h"

static volatile pid_t record_child;

/* SIGTERM/SIGHUP for propel are for CMD too; propel waits and keeps the
 * trace of what CMD did until then. */
static void record_forward(int sig)
{
	if (record_child > 0)
		kill(record_child, sig);
}

static int cmd_record_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "libc", no_argument, NULL, 'l' },
		{ "follow", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = PROPEL_SESSION_DEFAULT, *ring_kb = "8192";
	struct capture cap;
	char *cause = NULL, *preload = NULL;
	int c, err, status, ret, libc = 0;
	pid_t pid;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:b:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			db = optarg;
			break;
		case 'b':
			if (strtoul(optarg, NULL, 10) < 64) {
				propel_report("record", 0,
					      "--buffer-size: at least 64 (KiB)");
				return 2;
			}
			ring_kb = optarg;
			break;
		case 'l':
			libc = 1;
			break;
		case 'f':
			break; /* propagation across processes: default */
		default:
			fprintf(stderr, "usage: propel record %s\n",
				cmd_record_entry.usage);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: propel record %s\n", cmd_record_entry.usage);
		return 2;
	}
	err = capture_begin(&cap, db, &cause);
	if (err) {
		propel_report("record", err, cause);
		free(cause);
		capture_abort(&cap);
		return 1;
	}
	{
		const char *old = getenv("LD_PRELOAD");

		if (asprintf(&preload, "%s%s%s", cap.agent, old && *old ? ":" : "",
			     old ? old : "") < 0)
			return 1;
	}
	pid = fork();
	if (pid < 0) {
		propel_report("record", -errno, NULL);
		capture_abort(&cap);
		return 1;
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		setenv("PROPEL_SESSION_DIR", cap.dir, 1);
		setenv("PROPEL_RING_KB", ring_kb, 1);
		if (libc)
			setenv("PROPEL_TRACE_LIBC", "1", 1);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "propel: record: %s: %s\n", argv[optind],
			strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	free(preload);
	/* like time(1): the terminal's signals are for CMD */
	record_child = pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, record_forward);
	signal(SIGHUP, record_forward);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
		if (ret == 127 || ret == 126) {
			/* maybe exec failed: then there is no trace at all */
		}
	} else {
		ret = 128 + WTERMSIG(status);
		fprintf(stderr, "propel: record: %s killed by signal %d (%s)%s\n",
			argv[optind], WTERMSIG(status), strsignal(WTERMSIG(status)),
			WCOREDUMP(status) ? ", core dumped" : "");
	}
	err = capture_end(&cap, argc - optind, argv + optind, &cause);
	if (err) {
		propel_report("record", err, cause);
		free(cause);
		return ret ? ret : 1;
	}
	if (!WIFEXITED(status))
		fprintf(stderr, "propel: record: trace of the crash kept in %s\n",
			db);
	return ret;
}

const struct propel_cmd cmd_record_entry = {
	.name = "record",
	.usage = "[-o DB] [--buffer-size KB] [--libc] [--follow] -- CMD [ARG...]",
	.summary = "run CMD traced from its start (exit status = CMD's)\n"
		   "  -o DB             session file (default ./propel.db)\n"
		   "  --buffer-size KB  ring size per thread (default 8192)\n"
		   "  --libc            trace inside libc too",
	.exec = cmd_record_exec,
};
