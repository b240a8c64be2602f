/*
 * share/proc.c - reading a small /proc file whole (share/proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "share/proc.h"

int propel_read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	buf[0] = 0;
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	if (r < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return (int)r;
	buf[r] = 0;
	return (int)r;
}
