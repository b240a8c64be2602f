/*
 * tests/apps/dist-all.c - the whole distributed scenario on one host from
 * one parent, for `propel record -- dist-all DIR` (every process a
 * descendant, so all are traced from their start).  Starts the logger
 * (UNIX socket DIR/log.sock), the monitor, the back end and the front end
 * (with its child), each on a port it picks, waiting for each one's ready
 * line; then runs the client for REQUESTS requests with --stop, which
 * stops them all; relays every program's output lines, and exits 0 only
 * when every program exited 0.  First it prints
 *   dist-all: pids logger P monitor P back P front P child P client P
 *
 *   dist-all DIR [-n REQUESTS] [--corrupt SEQ]   (SEQ: the client's)
 *
 * The programs are looked for beside this one.  tests/apps/dist-run.sh
 * starts the same programs as daemons, one by one, on any hosts.
 */
#include <limits.h>
#include <sys/wait.h>

#include "tests/apps/dist.h"

static char bindir[PATH_MAX];

/* Start bindir/argv[0] with its stdout into a pipe; returns the read end. */
static int spawn(char **argv, pid_t *pid)
{
	char path[PATH_MAX + 64];
	int p[2];

	snprintf(path, sizeof(path), "%s/%s", bindir, argv[0]);
	if (pipe(p) < 0)
		dist_die("pipe: %s", strerror(errno));
	fflush(stdout);
	*pid = fork();
	if (*pid < 0)
		dist_die("fork: %s", strerror(errno));
	if (*pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(path, argv);
		fprintf(stderr, "dist-all: cannot run %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	close(p[1]);
	return p[0];
}

/* One line from fd (without its newline); 0 at EOF before any byte. */
static int read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	char ch;

	while (n + 1 < size) {
		ssize_t r = read(fd, &ch, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (ch == '\n') {
			buf[n] = 0;
			return 1;
		}
		buf[n++] = ch;
	}
	buf[n] = 0;
	return n > 0;
}

/* Wait for "NAME: ready ..." on fd; returns the line (static). */
static const char *ready(int fd, const char *name)
{
	static char line[512];

	while (read_line(fd, line, sizeof(line))) {
		if (strstr(line, ": ready "))
			return line;
		puts(line);
	}
	dist_die("%s never said it was ready", name);
	return NULL;
}

static void relay(int fd)
{
	char line[512];

	while (read_line(fd, line, sizeof(line)))
		puts(line);
	close(fd);
}

int main(int argc, char **argv)
{
	char sock[PATH_MAX], back[64], mon[64], front[64],
	    nreq[32] = "10", corrupt[32] = "0", *slash;
	pid_t pl, pm, pb, pf, pc, pchild = 0;
	int fl, fm, fb, ff, fc, i, bad = 0, port;
	const char *l;

	dist_self = "dist-all";
	if (argc < 2)
		dist_die("usage: dist-all DIR [-n REQUESTS] [--corrupt SEQ]%s",
			 "");
	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			snprintf(nreq, sizeof(nreq), "%s", argv[i + 1]);
		else if (strcmp(argv[i], "--corrupt") == 0)
			snprintf(corrupt, sizeof(corrupt), "%s", argv[i + 1]);
		else
			dist_die("unknown option %s", argv[i]);
	}
	if (readlink("/proc/self/exe", bindir, sizeof(bindir) - 1) < 0 ||
	    !(slash = strrchr(bindir, '/')))
		dist_die("cannot find my own directory%s", "");
	*slash = 0;
	snprintf(sock, sizeof(sock), "%s/log.sock", argv[1]);

	fl = spawn((char *[]){"dist-logger", sock, NULL}, &pl);
	ready(fl, "dist-logger");
	fm = spawn((char *[]){"dist-monitor", NULL}, &pm);
	l = ready(fm, "dist-monitor");
	if (sscanf(l, "dist-monitor: ready %*s %d", &port) != 1)
		dist_die("bad ready line: %s", l);
	snprintf(mon, sizeof(mon), "127.0.0.1:%d", port);
	fb = spawn((char *[]){"dist-back", NULL}, &pb);
	l = ready(fb, "dist-back");
	if (sscanf(l, "dist-back: ready %*s %d", &port) != 1)
		dist_die("bad ready line: %s", l);
	snprintf(back, sizeof(back), "127.0.0.1:%d", port);
	ff = spawn((char *[]){"dist-front", "-l", "127.0.0.1:0", "--back", back,
			      "--log", sock, "--monitor", mon, NULL},
		   &pf);
	l = ready(ff, "dist-front");
	if (sscanf(l, "dist-front: ready %*s %d pid %*d child %d", &port,
		   &pchild) != 2)
		dist_die("bad ready line: %s", l);
	snprintf(front, sizeof(front), "127.0.0.1:%d", port);
	fc = spawn((char *[]){"dist-client", front, "-n", nreq, "--stop",
			      "--corrupt", corrupt, NULL},
		   &pc);
	printf("dist-all: pids logger %d monitor %d back %d front %d child %d "
	       "client %d\n",
	       (int)pl, (int)pm, (int)pb, (int)pf, (int)pchild, (int)pc);
	fflush(stdout);
	{
		pid_t all[] = {pc, pf, pb, pm, pl};
		int fds[] = {fc, ff, fb, fm, fl};

		for (i = 0; i < 5; i++) {
			int status = 0;

			relay(fds[i]);
			while (waitpid(all[i], &status, 0) < 0 &&
			       errno == EINTR)
				;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				fprintf(stderr,
					"dist-all: pid %d: status 0x%x\n",
					(int)all[i], status);
				/* the client or the front end failed: the
				 * stop will not come, the daemons are told */
				if (!bad && i < 2)
					for (int k = 2; k < 5; k++)
						kill(all[k], SIGTERM);
				bad = 1;
			}
		}
	}
	return bad;
}
