/*
 * tests/apps/dist-logger.c - the logger of the distributed scenario: reads
 * the front end's log messages from a UNIX stream socket
 * (tests/apps/dist-front.c) and checks each one (tests/apps/dist.h).
 * Serves one connection at a time until a STOP message or SIGTERM.
 *
 *   dist-logger PATH
 *
 * The ready line:   dist-logger: ready PATH pid PID
 * At the end:       dist-logger: lines N recv BYTES ok
 */
#include <sys/un.h>

#include "tests/apps/dist.h"

static long lines;
static size_t got;

/* One log message: 1 read, 0 the connection is gone, -1 stop. */
__attribute__((noinline)) static int logger_line(int fd)
{
	int type;
	uint32_t seq;
	size_t r = dist_recv(fd, DK_LOG, 0, DT_REQ, &type, &seq);

	got += r;
	if (!r)
		return 0;
	if (type == DT_STOP)
		return -1;
	lines++;
	return 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	int lfd, stop = 0;

	dist_self = "dist-logger";
	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path))
		dist_die("usage: dist-logger PATH%s", "");
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 4) < 0)
		dist_die("cannot listen at %s", argv[1]);
	dist_signals();
	printf("dist-logger: ready %s pid %d\n", argv[1], (int)getpid());
	fflush(stdout);
	while (!stop && !dist_stop) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), r;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			dist_die("accept: %s", strerror(errno));
		}
		while ((r = logger_line(fd)) > 0)
			;
		stop = r < 0;
		close(fd);
	}
	unlink(argv[1]);
	printf("dist-logger: lines %ld recv %zu ok\n", lines, got);
	return 0;
}
