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
 *                        asked again out of quick mode.
 */
#include <signal.h>
#include <stdint.h>
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

int main(void)
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

	CHECKS_EXPECT(6);
	if (!vs) {
		printf("FAIL vitals-sym: no memory\n");
		return 1;
	}
	vitals_sym_set_quick(vs, 1);
	n = vitals_sym_user(vs, me, one, buf, sizeof(buf));
	CHECK("quick-unread-file", is_hex(n),
	      "an unread file's address named in quick mode: %s\n", n);

	vitals_sym_set_quick(vs, 0);
	n = vitals_sym_user(vs, me, one, buf, sizeof(buf));
	CHECK("named-out-of-quick", !strcmp(n, "vsym_probe_one"),
	      "the address left raw is now %s\n", n);

	vitals_sym_set_quick(vs, 1);
	n = vitals_sym_user(vs, me, two, buf, sizeof(buf));
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
	n = vitals_sym_user(vs, (uint32_t)child, two, buf, sizeof(buf));
	CHECK("quick-new-process", !strcmp(n, "vsym_probe_two"),
	      "a new process's address in quick mode: %s\n", n);

	close(pipefd[1]); /* the child exits */
	waitpid(child, NULL, 0);
	n = vitals_sym_user(vs, (uint32_t)child, one, buf, sizeof(buf));
	CHECK("after-exit", !strcmp(n, "vsym_probe_one"),
	      "an exited process's address: %s\n", n);

	/* a never-seen pid: no maps, an address, never a crash */
	n = vitals_sym_user(vs, 0x7ffffff0u, one, buf, sizeof(buf));
	CHECK("unknown-pid", is_hex(n), "a pid that is no process: %s\n", n);
	vitals_sym_free(vs);
	return failures ? 1 : 0;
}
