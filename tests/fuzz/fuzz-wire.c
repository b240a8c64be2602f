/*
 * tests/fuzz/fuzz-wire.c - propeld's frame decoder (share/wire.c) on any
 * byte stream: the input is what the other end of the pipe sent.  Byte 0
 * picks the reader's buffer size (small ones take the -EMSGSIZE skip) and
 * whether it reads with a deadline; frames are read until the stream ends
 * or breaks, as transport.c and propeld.c do.
 */
#include <errno.h>
#include <sys/mman.h>

#include "share/wire.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[WIRE_MAX + 1];
	static const size_t caps[] = { 1, 9, 64, 4096, WIRE_MAX + 1 };
	size_t cap;
	int fd, ms, type, n, frames = 0;

	if (size < 1)
		return 0;
	cap = caps[data[0] % 5];
	ms = data[0] & 0x80 ? 50 : -1;
	fd = memfd_create("fuzz-wire", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size > 1 &&
	    write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	while (frames++ < 1000) {
		n = wire_recv(fd, &type, buf, cap, ms);
		if (n == -EMSGSIZE)
			continue;
		if (n < 0)
			break;
		if (memchr(buf, 0, (size_t)n + 1) == NULL)
			__builtin_trap(); /* the payload is NUL-terminated */
		(void)wire_type_name(type);
	}
	close(fd);
	return 0;
}
