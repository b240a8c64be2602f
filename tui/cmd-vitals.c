/*
 * tui/cmd-vitals.c - `propel vitals record|report|tui`: collect the kernel's
 * vital signs into a session, print them, or browse them.
 *
 *   record [-o DB] [--duration S] [--epoch S] [--max-size MB] [--proc]
 *          [--disable V,V] [--profile]  collect until the duration or ^C
 *          (--profile: BPF run-time statistics, then a line per program;
 *          --max-size, alias --budget: the file's limit, default 64 MiB)
 *   report [--format=text|jsonl] [--scale S] [--vital V] [--no-samples]
 *          [--from T] [--to T] [DB]   T: ns since 1970, -N[smhd] before
 *          the history's end, or YYYY-MM-DD[THH:MM[:SS]] (UTC)
 *          jsonl: {"kind":"value",...} per (epoch, vital, process),
 *          {"kind":"sample",...,"stack":[...]} per sample,
 *          {"kind":"flag",...} per rule that fired, {"kind":"status",...}
 *   tui [DB] [--live]           the vitals view (tui/view-vitals.c)
 *   host DIR [--all]            what propeld runs on a host of another
 *          kernel under `--follow --vitals` (engine/vitals-host.h): the
 *          collectors over the processes traced into DIR until stdin ends
 *
 * Only this layer prints and exits (via its return value).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/vitals-rules.h"
#include "engine/session.h"
#include "engine/vitals-collect.h"
#include "engine/vitals-host.h"
#include "engine/vitals-store.h"
#include "engine/vitals-summary.h"
#include "share/clock.h"
#include "share/json.h"
#include "share/log.h"
#include "tui/cmd-vitals.h"
#include "tui/cmd.h"
#include "tui/opt.h"

static volatile sig_atomic_t cmd_vitals_stop;

static void cmd_vitals_on_signal(int sig)
{
	cmd_vitals_stop = 1;
}

static const char cmd_vitals_usage[] =
	"record [-o DB] [--duration S] [--epoch S] [--max-size MB] [--proc] "
	"[--disable V,...] [--profile]\n"
	"       propel vitals report [--format=text|jsonl] [--scale 0|300|3600|86400] "
	"[--vital V] [--no-samples] [--from T] [--to T] [DB]\n"
	"       propel vitals tui [--live] [DB]";

static int cmd_vitals_record(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "budget", required_argument, NULL, 'b' },
		{ "max-size", required_argument, NULL, 'b' },
		{ "proc", no_argument, NULL, 'p' },
		{ "disable", required_argument, NULL, 'x' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "profile", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct vitals_collect_opts o = { 0 };
	struct vitals_collect_stats stats = { 0 };
	struct vitals_collect *vc = NULL;
	struct session *s = NULL;
	const char *path = PROPEL_SESSION_DEFAULT;
	double duration = 0, epoch = 1, budget;
	char *cause = NULL;
	int c, err, quiet = 0;
	struct sigaction sa = { 0 };
	double t0;
	sigset_t stopsigs, waitmask;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:d:e:b:pq", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (opt_output("vitals record", "-o", optarg, 0))
				return 2;
			path = optarg;
			break;
		case 'd':
			if (opt_number("vitals record", "--duration", optarg,
				       0.001, OPT_DURATION_MAX, "seconds",
				       &duration))
				return 2;
			break;
		case 'e':
			if (opt_number("vitals record", "--epoch", optarg, 0.05,
				       3600, "seconds", &epoch))
				return 2;
			break;
		case 'b':
			if (opt_number("vitals record", "--max-size", optarg, 0.1,
				       1 << 20, "MiB", &budget))
				return 2;
			o.budget_bytes = (uint64_t)(budget * 1048576);
			break;
		case 'p': o.proc_only = 1; break;
		case 'x': o.disable = optarg; break;
		case 'q': quiet = 1; break;
		case 'P': o.profile = 1; break;
		default:
			opt_bad("vitals record", c, argv);
			return 2;
		}
	}
	o.epoch_ms = (unsigned)(epoch * 1000);
	err = session_open(path, access(path, F_OK) == 0 ? SESSION_WRITE
							 : SESSION_CREATE,
			   &s, &cause);
	if (err)
		goto out;
	/* SIGINT and SIGTERM are blocked but while this thread sleeps in
	 * ppoll (the collector thread inherits the mask): one wake-up at the
	 * end, none on a clock */
	sigemptyset(&stopsigs);
	sigaddset(&stopsigs, SIGINT);
	sigaddset(&stopsigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stopsigs, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sa.sa_handler = cmd_vitals_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = vitals_collect_start(s, &o, &vc, &cause);
	if (err)
		goto out;
	if (!quiet)
		fprintf(stderr, "propel: %s\n", vitals_collect_summary(vc));
	t0 = propel_mono_s();
	while (!cmd_vitals_stop) {
		double left = 3600;
		struct timespec ts;

		if (duration > 0) {
			left = duration - (propel_mono_s() - t0);
			if (left <= 0)
				break;
		}
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		ppoll(NULL, 0, &ts, &waitmask);
	}
	err = vitals_collect_stop(vc, &stats, &cause);
	vc = NULL;
	if (!quiet) {
		double wall = stats.wall_ns / 1e9;

		fprintf(stderr,
			"propel: vitals: %" PRIu64 " epochs, %" PRIu64
			" samples (%" PRIu64 " with user frames unnamed for time) in %.1f s;"
			" collector cpu %.3f%% (bpf %.3f%%, "
			"thread %.3f%%) of %u cores; kernel maps %" PRIu64
			" KiB (%" PRIu64 " KiB per vital); file %" PRIu64 " KiB\n",
			stats.epochs, stats.samples, stats.unsymbolized, wall,
			wall > 0 ? 100.0 * (stats.bpf_run_ns + stats.user_run_ns) /
					   (stats.wall_ns * (double)stats.ncpus)
				 : 0,
			wall > 0 ? 100.0 * stats.bpf_run_ns /
					   (stats.wall_ns * (double)stats.ncpus)
				 : 0,
			wall > 0 ? 100.0 * stats.user_run_ns /
					   (stats.wall_ns * (double)stats.ncpus)
				 : 0,
			stats.ncpus, stats.kernel_bytes >> 10,
			stats.kernel_bytes_vital >> 10, stats.file_bytes >> 10);
		if (stats.epochs_full)
			fprintf(stderr,
				"propel: vitals: %" PRIu64 " epochs not stored: the"
				" file was at --max-size\n",
				stats.epochs_full);
		for (c = 0; c < stats.nprogs; c++) {
			const struct vitals_prog_stat *ps = &stats.progs[c];

			fprintf(stderr,
				"propel: vitals: prog %-26s %-8s runs %10" PRIu64
				" time %9.3f ms %6.0f ns/run\n",
				ps->name, vitals_name(ps->vital), ps->run_cnt,
				ps->run_ns / 1e6,
				ps->run_cnt ? (double)ps->run_ns / ps->run_cnt : 0);
		}
	}
out:
	if (vc)
		vitals_collect_stop(vc, NULL, NULL);
	if (s)
		session_close(s);
	if (err) {
		propel_report("vitals record", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

/* ---- report --------------------------------------------------------------- */

static void json_frames(FILE *f, const char *frames, int *first)
{
	const char *p = frames;

	while (p && *p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char buf[512];

		snprintf(buf, sizeof(buf), "%.*s", (int)n, p);
		if (!*first)
			fputc(',', f);
		*first = 0;
		json_str(f, buf);
		p = e ? e + 1 : NULL;
	}
}

int cmd_vitals_rules_epochs(const struct vitals_hist *h,
			    struct vitals_rules_epoch **out)
{
	return vitals_hist_rules_epochs(h, out);
}

int cmd_vitals_flags(const struct vitals_hist *h, struct vitals_rules_flag **f,
		     size_t *nf)
{
	return vitals_hist_flags(h, f, nf);
}

/*
 * A time of --from/--to: ns since 1970, -N[smhd] before the history's end
 * (last_ns), or YYYY-MM-DD[THH:MM[:SS]] in UTC.  0 or -EINVAL.
 */
static int cmd_vitals_when(const char *arg, uint64_t last_ns, uint64_t *out)
{
	struct tm tm = { 0 };
	char *end;
	double n;
	const char *rest;

	if (arg[0] == '-') {
		n = strtod(arg + 1, &end);
		if (end == arg + 1 || n < 0)
			return -EINVAL;
		if (!strcmp(end, "m"))
			n *= 60;
		else if (!strcmp(end, "h"))
			n *= 3600;
		else if (!strcmp(end, "d"))
			n *= 86400;
		else if (strcmp(end, "s") && *end)
			return -EINVAL;
		*out = n * 1e9 >= (double)last_ns ? 0
						  : last_ns - (uint64_t)(n * 1e9);
		return 0;
	}
	if (strchr(arg, '-')) {
		rest = strptime(arg, "%Y-%m-%d", &tm);
		if (rest && *rest == 'T')
			rest = strptime(rest + 1, "%H:%M", &tm);
		if (rest && *rest == ':')
			rest = strptime(rest + 1, "%S", &tm);
		if (!rest || *rest)
			return -EINVAL;
		*out = (uint64_t)timegm(&tm) * 1000000000ull;
		return 0;
	}
	*out = strtoull(arg, &end, 10);
	return *end || end == arg ? -EINVAL : 0;
}

struct report_ctx {
	FILE *f;
	int jsonl;
	size_t n;
};

static int report_sample(void *arg, const struct vitals_hsample *s)
{
	struct report_ctx *rc = arg;
	FILE *f = rc->f;
	int first = 1;

	rc->n++;
	if (rc->jsonl) {
		fprintf(f, "{\"kind\":\"sample\",\"vital\":\"%s\",\"epoch_start_ns\":%" PRIu64
			   ",\"ts_ns\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"uid\":%u,\"comm\":",
			s->vital, s->epoch_start_ns, s->ts_ns, s->pid, s->tid, s->uid);
		json_str(f, s->comm);
		fprintf(f, ",\"weight\":%" PRIu64 ",\"n\":%" PRIu64
			   ",\"data\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%" PRIu64 "],\"stack\":[",
			s->weight, s->n, s->d[0], s->d[1], s->d[2], s->d[3]);
		json_frames(f, s->kstack, &first);
		json_frames(f, s->ustack, &first);
		fputs("],\"kstack\":[", f);
		first = 1;
		json_frames(f, s->kstack, &first);
		fputs("],\"ustack\":[", f);
		first = 1;
		json_frames(f, s->ustack, &first);
		fputs("]}\n", f);
	} else {
		const char *p;

		fprintf(f, "  sample %-7s pid %-7u %-16s weight %-8" PRIu64 " ",
			s->vital, s->pid, s->comm, s->weight);
		if (s->n > 1)
			fprintf(f, "x%-4" PRIu64 " ", s->n);
		p = s->ustack ? s->ustack : s->kstack;
		if (p) {
			const char *e = strchr(p, '\n');

			fprintf(f, "%.*s", e ? (int)(e - p) : (int)strlen(p), p);
			if (s->kstack && s->ustack) {
				e = strchr(s->kstack, '\n');
				fprintf(f, " <- kernel %.*s",
					e ? (int)(e - s->kstack)
					  : (int)strlen(s->kstack),
					s->kstack);
			}
		}
		fputc('\n', f);
	}
	return 0;
}

/* A summarized epoch's totals and quantiles per vital. */
static void report_summary(const struct vitals_hepoch *e, const char *vital,
			   int jsonl)
{
	int v;

	for (v = 0; v < PROPEL_VITAL_NR; v++) {
		const struct vitals_htotal *t = &e->tot[v];
		const char *name = vitals_rules_name(v);

		if (!t->events || (vital && strcmp(vital, name)))
			continue;
		if (jsonl)
			printf("{\"kind\":\"summary\",\"vital\":\"%s\","
			       "\"epoch_start_ns\":%" PRIu64 ",\"epoch_end_ns\":%" PRIu64
			       ",\"events\":%" PRIu64 ",\"weight\":%" PRIu64
			       ",\"sampled\":%" PRIu64 ",\"p50\":%" PRIu64
			       ",\"p90\":%" PRIu64 ",\"p99\":%" PRIu64 "}\n",
			       name, e->start_ns, e->end_ns, t->events, t->weight,
			       t->sampled, t->q[0], t->q[1], t->q[2]);
		else
			printf("  %-7s %12" PRIu64 " in %" PRIu64 " events, %" PRIu64
			       " sampled; sample weights p50 %" PRIu64 " p90 %" PRIu64
			       " p99 %" PRIu64 "\n",
			       name, t->weight, t->events, t->sampled, t->q[0],
			       t->q[1], t->q[2]);
	}
}

static int cmd_vitals_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "scale", required_argument, NULL, 's' },
		{ "vital", required_argument, NULL, 'v' },
		{ "no-samples", no_argument, NULL, 'n' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = PROPEL_SESSION_DEFAULT, *vital = NULL;
	const char *from_arg = NULL, *to_arg = NULL;
	uint64_t from_ns = 0, to_ns = UINT64_MAX >> 1, first_ns, last_ns;
	struct session *s = NULL;
	struct vitals_store *st = NULL;
	struct vitals_hist h = { 0 };
	struct vitals_rules_flag *fl = NULL;
	size_t nfl = 0, i, j;
	unsigned scale = 0;
	int c, err, jsonl = 0, samples = 1;
	char *cause = NULL;
	struct report_ctx rc = { stdout, 0, 0 };

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:s:v:n", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "jsonl") == 0)
				jsonl = 1;
			else if (strcmp(optarg, "text") != 0) {
				propel_report("vitals report", 0,
					      "--format must be text or jsonl");
				return 2;
			}
			break;
		case 's': /* atoi took "abc" for 0 */
			scale = !strcmp(optarg, "0")	   ? 0
				: !strcmp(optarg, "300")   ? 300
				: !strcmp(optarg, "3600")  ? 3600
				: !strcmp(optarg, "86400") ? 86400
							   : 1;
			break;
		case 'v': vital = optarg; break;
		case 'n': samples = 0; break;
		case 'F': from_arg = optarg; break;
		case 'T': to_arg = optarg; break;
		default:
			propel_report("vitals report", 0, "bad option (see --help)");
			return 2;
		}
	}
	if (scale == 1) {
		propel_report("vitals report", 0, "--scale must be 0, 300, 3600 or 86400");
		return 2;
	}
	if (optind < argc)
		path = argv[optind];
	rc.jsonl = jsonl;
	err = session_open(path, SESSION_READ, &s, &cause);
	if (err)
		goto out;
	err = vitals_store_new(s, &st, &cause);
	if (err) {
		/* a read-only file: the tables may already be there */
		free(cause);
		cause = NULL;
		err = propel_cause(&cause, -EIO, "%s: no vital signs in this session",
				   path);
		goto out;
	}
	vitals_store_span(st, &first_ns, &last_ns);
	if ((from_arg && cmd_vitals_when(from_arg, last_ns, &from_ns)) ||
	    (to_arg && cmd_vitals_when(to_arg, last_ns, &to_ns))) {
		err = propel_cause(&cause, -EINVAL,
				   "--from/--to: want ns, -N[smhd] or "
				   "YYYY-MM-DD[THH:MM[:SS]]");
		goto out;
	}
	err = vitals_store_load_window(st, scale, from_ns, to_ns, &h, &cause);
	if (err)
		goto out;
	if (h.n == 0 && (from_arg || to_arg) && first_ns) {
		err = propel_cause(&cause, -ENOENT,
				   "%s: no vital signs in that window (the history"
				   " holds %" PRIu64 " to %" PRIu64 ")",
				   path, first_ns, last_ns);
		goto out;
	}
	if (h.n == 0) {
		err = propel_cause(&cause, -ENOENT,
				   "%s: no vital signs in this session", path);
		goto out;
	}
	err = cmd_vitals_flags(&h, &fl, &nfl);
	if (err)
		goto out;
	if (jsonl) {
		for (i = 0; i < (size_t)h.nstatus; i++) {
			printf("{\"kind\":\"status\",\"vital\":\"%s\",\"state\":\"%s\",\"why\":",
			       h.status[i].vital, h.status[i].state);
			json_str(stdout, h.status[i].why);
			printf(",\"source\":\"%s\"}\n", h.source);
		}
	} else {
		printf("vitals: %zu epochs of %u ms via %s%s%s\n", h.n, h.epoch_ms,
		       h.source, h.notes[0] ? "; " : "", h.notes);
		for (i = 0; i < (size_t)h.nstatus; i++)
			if (strcmp(h.status[i].state, "on"))
				printf("  %-7s %s: %s\n", h.status[i].vital,
				       h.status[i].state, h.status[i].why);
	}
	for (i = 0; i < h.n; i++) {
		const struct vitals_hepoch *e = &h.ep[i];

		if (!jsonl)
			printf("epoch %zu start %" PRIu64 " (%.2f s)%s\n", i,
			       e->start_ns, (e->end_ns - e->start_ns) / 1e9,
			       e->summarized ? " summarized: the top processes" : "");
		if (e->summarized)
			report_summary(e, vital, jsonl);
		for (j = 0; j < e->nrows; j++) {
			const struct vitals_hrow *r = &e->rows[j];

			if (vital && strcmp(vital, r->vital))
				continue;
			if (jsonl) {
				printf("{\"kind\":\"value\",\"vital\":\"%s\",\"epoch_start_ns\":%" PRIu64
				       ",\"epoch_end_ns\":%" PRIu64 ",\"pid\":%u,\"uid\":%u,\"comm\":",
				       r->vital, e->start_ns, e->end_ns, r->pid, r->uid);
				json_str(stdout, r->comm);
				printf(",\"value\":%.0f,\"count\":%" PRIu64 "}\n", r->value,
				       r->count);
			} else if (j < 400) {
				printf("  %-7s pid %-7u %-16s %12.0f (%" PRIu64 " events)\n",
				       r->vital, r->pid, r->comm, r->value, r->count);
			}
		}
		if (samples && !scale && !jsonl && e->id > 0)
			vitals_store_samples(st, e->id, vital, 1, report_sample, &rc);
		for (j = 0; j < nfl; j++) {
			if (fl[j].epoch != i)
				continue;
			if (jsonl) {
				printf("{\"kind\":\"flag\",\"rule\":\"%s\",\"epoch_start_ns\":%" PRIu64
				       ",\"pid\":%u,\"comm\":",
				       fl[j].rule, e->start_ns, fl[j].pid);
				json_str(stdout, fl[j].comm);
				printf(",\"why\":");
				json_str(stdout, fl[j].why);
				printf("}\n");
			} else {
				printf("  FLAG %s pid %u %s: %s\n", fl[j].rule, fl[j].pid,
				       fl[j].comm, fl[j].why);
			}
		}
	}
	if (samples && !scale && jsonl)
		vitals_store_samples_window(st, 0, vital, 0, from_ns, to_ns,
					    report_sample, &rc);
	fflush(stdout);
out:
	free(fl);
	vitals_hist_release(&h);
	vitals_store_free(st);
	if (s)
		session_close(s);
	if (err) {
		propel_report("vitals report", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

/* `vitals host DIR [--all]`: started by propeld (inject/propeld.c), not
 * by hand; its stdin is propeld's pipe. */
static int cmd_vitals_host(int argc, char **argv)
{
	char *cause = NULL;
	int err, all = argc == 3 && !strcmp(argv[2], "--all");

	if (argc < 2 || argc > 3 || (argc == 3 && !all)) {
		propel_report("vitals host", 0, "usage: vitals host DIR [--all]");
		return 2;
	}
	signal(SIGINT, SIG_IGN); /* the end is propeld's: stdin closed */
	err = vitals_host_run(argv[1], all, &cause);
	if (err) {
		propel_report("vitals host", err, cause);
		free(cause);
		return 1;
	}
	return 0;
}

static int cmd_vitals_exec(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: propel vitals %s\n", cmd_vitals_usage);
		return 2;
	}
	if (strcmp(argv[1], "record") == 0)
		return cmd_vitals_record(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return cmd_vitals_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "tui") == 0)
		return cmd_vitals_tui(argc - 1, argv + 1);
	if (strcmp(argv[1], "host") == 0)
		return cmd_vitals_host(argc - 1, argv + 1);
	propel_report("vitals", 0, "unknown subcommand (record, report, tui)");
	return 2;
}

const struct propel_cmd cmd_vitals_entry = {
	.name = "vitals",
	.usage = cmd_vitals_usage,
	.summary = "collect the kernel's vital signs (chopstix on eBPF), report "
		   "them, browse them",
	.exec = cmd_vitals_exec,
};
