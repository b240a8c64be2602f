#!/usr/bin/env bash
# tests/e2e/harm-detach-status.sh - an attach whose detach leaves an agent
# on fails, in one line (issue 30: a soak's last attach exited 0 with a
# warning for its detach, and the bytes it left patched were found only by
# comparing the text afterwards).
#
# A small program is traced by `propel attach --duration 2`; one second in,
# another tracer (a holder: PTRACE_SEIZE, as strace -p or gdb -p would)
# takes the process, so the detach cannot hold its threads.
#   held/exit        the attach exits non-zero (it exited 0), its last
#                    line "propel: detach PID: ..." names the process
#   held/session     the session is stored all the same (replay reads it)
#   held/detach      once the holder is gone, `propel detach PID` exits 0
#                    and the program's text equals its file
#   clean/exit       an attach whose detach restores everything exits 0
#                    and the text equals the file (no false failure)
# Needs root (ptrace).  About 8 s.
# propel-test: takes 8
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
need_root harm-detach-status || exit 0
t=$(tmpdir)
pid= hold=
cleanup() {
	[ -n "$hold" ] && kill -9 "$hold" 2>/dev/null
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1

cat >"$t/loop.c" <<'EOF'
#include <unistd.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}
int main(void)
{
	volatile int s = 0;
	for (;;) {
		s += work(1000);
		usleep(1000);
	}
}
EOF
# the holder: seizes PID (it runs on, traced), ends when FILE appears
cat >"$t/hold.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 3 || ptrace(PTRACE_SEIZE, atoi(argv[1]), 0, 0) < 0) {
		perror("seize");
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	while (access(argv[2], F_OK) != 0)
		usleep(20000);
	return 0;
}
EOF
if ! gcc -O0 -g -o "$t/loop" "$t/loop.c" || ! gcc -O2 -o "$t/hold" "$t/hold.c"; then
	for c in held/exit held/session held/detach clean/exit; do
		fail "$c" "cannot build the test programs"
	done
	exit 1
fi
"$t/loop" &
pid=$!

# ---- held: another tracer has the process at the detach ----
"$PROPEL" attach -o "$t/h.db" --duration 2 "$pid" >"$t/h.out" 2>&1 &
ap=$!
sleep 1
"$t/hold" "$pid" "$t/let-go" >"$t/hold.out" 2>&1 &
hold=$!
wait "$ap"
rc=$?
echo "  attach exited $rc; holder: $(head -1 "$t/hold.out")"
tail -2 "$t/h.out" | sed 's/^/  /'
if [ "$rc" -ne 0 ] && tail -1 "$t/h.out" | grep -q "^propel: detach $pid: "; then
	pass held/exit
else
	fail held/exit "status $rc, last line: $(tail -1 "$t/h.out")"
fi
n=$("$PROPEL" replay "$t/h.db" 2>/dev/null | grep -c 'leaf')
num_gt held/session "$n" 0 "lines of replay naming leaf"
touch "$t/let-go"
wait "$hold" 2>/dev/null
hold=
out=$("$PROPEL" detach "$pid" 2>&1)
rc=$?
echo "  $out"
r=$(text_restored "$pid")
if [ "$rc" -eq 0 ] && [ "${r%% *}" = 0 ]; then
	pass held/detach
else
	fail held/detach "detach status $rc ($out); text: $r"
fi

# ---- clean ----
"$PROPEL" attach -o "$t/c.db" --duration 1 "$pid" >"$t/c.out" 2>&1
rc=$?
r=$(text_restored "$pid")
if [ "$rc" -eq 0 ] && [ "${r%% *}" = 0 ]; then
	pass clean/exit
else
	fail clean/exit "status $rc ($(tail -1 "$t/c.out")); text: $r"
fi
