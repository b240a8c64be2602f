/*
 * analysis/waits.c - waits by name (see analysis/waits.h).
 */
#include <string.h>

#include "analysis/waits.h"

static const char *const readiness[] = {
	"poll", "ppoll", "select", "pselect", "pselect6",
	"epoll_wait", "epoll_pwait", "epoll_pwait2",
};

static const char *const input[] = {
	"accept", "accept4", "read", "readv", "recv", "recvfrom", "recvmsg",
	"recvmmsg", "wait", "waitpid", "wait4", "waitid", "sigwait",
	"sigwaitinfo", "sigtimedwait", "sigsuspend", "msgrcv", "mq_receive",
	"io_getevents", "io_uring_enter",
};

static int waits_in(const char *fn, const char *const *v, size_t n)
{
	for (size_t i = 0; fn && i < n; i++)
		if (!strcmp(fn, v[i]))
			return 1;
	return 0;
}

int waits_readiness(const char *fn)
{
	return waits_in(fn, readiness, sizeof(readiness) / sizeof(*readiness));
}

int waits_input(const char *fn)
{
	return waits_readiness(fn) ||
	       waits_in(fn, input, sizeof(input) / sizeof(*input));
}
