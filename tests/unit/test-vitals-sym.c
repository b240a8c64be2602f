/*
 * tests/unit/test-vitals-sym.c - user-stack names for vital-sign samples
 * (engine/vitals-sym.h), in the symbolizer's quick mode, which the
 * collector enters when its time for an epoch is up:
 *
 *   quick, file unread   an address in a file whose symbols were never
 *                        read stays "0x..." (no file is read);
 *   quick, file known    once a file was read, its addresses are named in
 *                        quick mode too (before: every late frame was an
 *                        address, 4,107 of 6,702 samples in one loaded run);
 *   a new process        a child running the same program is named in
 *                        quick mode: its maps are read (they go with it),
 *                        its file is known;
 *   after its exit       the child's maps stay: an address sampled before
 *                        it exited is still named (a last epoch is
 *                        symbolized after the end of its processes);
 *   not cached as hex    an address left raw in quick mode is named when
 *                        asked again out of quick mode;
 *   an exec chain        a child's maps read while it was a fork of this
 *                        program, then two execs (a shell, then taskset,
 *                        then the program, as a test starts a spinner):
 *                        a PC of each new image is named (before: one
 *                        re-read, and the last image's frames stayed
 *                        addresses);
 *   gone keeps its maps  after its exit, a PC of no mapping (a re-read
 *                        that fails) leaves the maps it had: an address
 *                        of its last image is still named.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/vitals-sym.h"
#include "tests/unit/check.h"

__attribute__((noinline)) int vsym_probe_one(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int vsym_probe_two(int x)
{
	return x * 5 + 2;
}

static int is_hex(const char *s)
{
	return s[0] == '0' && s[1] == 'x';
}

/* The exec chain's child: argv[1] "hop" execs this program again with
 * "stay" (fd: the pipe to the parent); "stay" writes the address of
 * vsym_probe_one in this image, then waits for the pipe's other end. */
static int chain_child(char **argv)
{
	int fd = atoi(argv[2]), back = atoi(argv[3]);
	uint64_t a = (uint64_t)(uintptr_t)&vsym_probe_one + 1;
	char c;

	if (!strcmp(argv[1], "hop")) {
		/* this image's address first, then the next image */
		if (write(fd, &a, sizeof(a)) != sizeof(a) ||
		    read(back, &c, 1) != 1)
			_exit(1);
		execl("/proc/self/exe", argv[0], "stay", argv[2], argv[3],
		      (char *)NULL);
		_exit(1);
	}
	if (write(fd, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	a = (uint64_t)(uintptr_t)&vsym_probe_two + 1;
	if (write(fd, &a, sizeof(a)) != sizeof(a))
		_exit(1);
	(void)!read(back, &c, 1);
	_exit(0);
}

/* Fork a child that waits, then execs twice (above); its pid, the pipes. */
static pid_t chain_start(int *from, int *to)
{
	int up[2], down[2];
	pid_t pid;
	char a[16], b[16];

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		close(up[0]);
		close(down[1]);
		if (read(down[0], &c, 1) != 1) /* the parent read its maps */
			_exit(1);
		snprintf(a, sizeof(a), "%d", up[1]);
		snprintf(b, sizeof(b), "%d", down[0]);
		execl("/proc/self/exe", "test-vitals-sym", "hop", a, b,
		      (char *)NULL);
		_exit(1);
	}
	close(up[1]);
	close(down[0]);
	*from = up[0];
	*to = down[1];
	return pid;
}

/* Let the chain's child exec once more and read the address(es) its new
 * image writes, then wait past the re-read's millisecond.  0 or 1. */
static int chain_next(int to, int from, uint64_t *a, uint64_t *b,
		      const char *which)
{
	if (write(to, "x", 1) != 1 || read(from, a, sizeof(*a)) != sizeof(*a) ||
	    (b && read(from, b, sizeof(*b)) != sizeof(*b))) {
		printf("FAIL vitals-sym: the chain's %s exec\n", which);
		return 1;
	}
	usleep(2000);
	return 0;
}

int main(int argc, char **argv)
{
	char buf[128];
	const char *n;
	struct vitals_sym *vs = vitals_sym_new();
	uint32_t me = (uint32_t)getpid();
	uint64_t one = (uint64_t)(uintptr_t)&vsym_probe_one + 1;
	uint64_t two = (uint64_t)(uintptr_t)&vsym_probe_two + 1;
	int pipefd[2];
	pid_t child;
	char c;

	if (argc == 4)
		return chain_child(argv);
	CHECKS_EXPECT(9);
	if (!vs) {
		printf("FAIL vitals-sym: no memory\n");
		return 1;
	}
	vitals_sym_set_quick(vs, 1);
	n = vitals_sym_user(vs, me, one, 1, buf, sizeof(buf));
	CHECK("quick-unread-file", is_hex(n),
	      "an unread file's address named in quick mode: %s\n", n);

	vitals_sym_set_quick(vs, 0);
	n = vitals_sym_user(vs, me, one, 1, buf, sizeof(buf));
	CHECK("named-out-of-quick", !strcmp(n, "vsym_probe_one"),
	      "the address left raw is now %s\n", n);

	vitals_sym_set_quick(vs, 1);
	n = vitals_sym_user(vs, me, two, 1, buf, sizeof(buf));
	CHECK("quick-known-file", !strcmp(n, "vsym_probe_two"),
	      "a read file's address in quick mode: %s\n", n);

	/* a child of the same program (fork: same file, same addresses) */
	if (pipe(pipefd)) {
		printf("FAIL vitals-sym: pipe\n");
		return 1;
	}
	child = fork();
	if (child == 0) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1); /* until the parent says */
		_exit(0);
	}
	close(pipefd[0]);
	n = vitals_sym_user(vs, (uint32_t)child, two, 1, buf, sizeof(buf));
	CHECK("quick-new-process", !strcmp(n, "vsym_probe_two"),
	      "a new process's address in quick mode: %s\n", n);

	close(pipefd[1]); /* the child exits */
	waitpid(child, NULL, 0);
	n = vitals_sym_user(vs, (uint32_t)child, one, 1, buf, sizeof(buf));
	CHECK("after-exit", !strcmp(n, "vsym_probe_one"),
	      "an exited process's address: %s\n", n);

	/* a never-seen pid: no maps, an address, never a crash */
	n = vitals_sym_user(vs, 0x7ffffff0u, one, 1, buf, sizeof(buf));
	CHECK("unknown-pid", is_hex(n), "a pid that is no process: %s\n", n);

	/* an exec chain: maps read while a fork of this program, then a PC
	 * of each image it execs */
	{
		int from, to, st;
		uint64_t hop = 0, stay = 0, stay2 = 0;
		char n1[128], n2[128], n3[128];
		pid_t pid;

		vitals_sym_set_quick(vs, 0);
		pid = chain_start(&from, &to);
		if (pid < 0) {
			printf("FAIL vitals-sym: fork\n");
			return 1;
		}
		n = vitals_sym_user(vs, (uint32_t)pid, two, 1, buf, sizeof(buf));
		snprintf(n1, sizeof(n1), "%s", n); /* maps: the fork's */
		if (chain_next(to, from, &hop, NULL, "first"))
			return 1;
		n = vitals_sym_user(vs, (uint32_t)pid, hop, 1, buf, sizeof(buf));
		snprintf(n2, sizeof(n2), "%s", n);
		if (chain_next(to, from, &stay, &stay2, "second"))
			return 1;
		n = vitals_sym_user(vs, (uint32_t)pid, stay, 1, buf, sizeof(buf));
		snprintf(n3, sizeof(n3), "%s", n);
		CHECK("exec-chain", !strcmp(n1, "vsym_probe_two") &&
				   !strcmp(n2, "vsym_probe_one") &&
				   !strcmp(n3, "vsym_probe_one"),
		      "fork %s, first exec %s (0x%llx), second exec %s "
		      "(0x%llx)\n",
		      n1, n2, (unsigned long long)hop, n3,
		      (unsigned long long)stay);
		CHECK("exec-chain-moved", hop != stay,
		      "both images at 0x%llx: no exec seen\n",
		      (unsigned long long)hop);
		close(to); /* it exits */
		waitpid(pid, &st, 0);
		usleep(2000);
		n = vitals_sym_user(vs, (uint32_t)pid, 0x10, 1, buf, sizeof(buf));
		n = vitals_sym_user(vs, (uint32_t)pid, stay2, 1, buf, sizeof(buf));
		CHECK("gone-keeps-maps", !strcmp(n, "vsym_probe_two"),
		      "an exited process's last image, after a failed "
		      "re-read: %s\n", n);
		close(from);
	}
	vitals_sym_free(vs);
	return failures ? 1 : 0;
}
