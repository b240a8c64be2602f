#!/usr/bin/env bash
# tests/e2e/harm-escape.sh - never harm the target (issue 30) when propel
# comes late to a call's pad and the call thread goes back to the program
# by itself (the pad yields ~0.4 s, then rt_sigreturn: inject/hijack-ret.c,
# inject/agent/tramp.S propel_agent_return).  propel then takes the thread
# back wherever it is by then, and its next call runs there.
#
# What it was (soak nginx-attach beside three-tier and real-software, load
# ~10 on 2 cores): the start's thread came back by itself, entered a slow
# path of the now active agent (ag_lock held) and was taken back there;
# propel_agent_lease(NULL), the next call, waited for ag_lock -- its own --
# for ever.  propel, killed during that call, left nginx's worker hung, its
# lease thread waiting for the same lock in lease_expire (no X line), and
# every later attach got "propel_agent_start failed in the target:
# Resource temporarily unavailable".
#
# Two test switches make it happen every time: PROPEL_TEST_PAD_LATE_MS
# (inject/hijack.c: propel comes to every agent call's pad that late, as
# a loaded machine keeps it off its CPU) and, in the program's
# environment, PROPEL_TEST_SLOW_HOLD_MS (inject/agent/slow.c: the first
# slow-path entry after a start keeps ag_lock that long, as a thread
# preempted there).  The program calls sigprocmask (interposed: a slow
# path) and sleeps 1 ms, and counts its passes in a file.
#   late/attach      `propel attach --duration 1` with every pad late exits
#                    0 within 9 s (it waited out the 10 s call timeout in
#                    propel_agent_lease), the text equals the file after
#                    it, the program runs on
#   killed/lease     propel killed 1 s after the agent's start (every pad
#                    late): within 6 s its lease thread has ended and its
#                    map file ends with an X line (the lease thread stayed,
#                    waiting on the lock, no X line)
#   killed/alive     the program still counts afterwards (it hung)
#   killed/attach-after   a new `propel attach --duration 1` exits 0 and
#                    the text equals the file after it (EAGAIN: ag_lock
#                    held for ever)
# Needs root (ptrace).  About 20 s.
# propel-test: takes 20
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
need_root harm-escape || exit 0
t=$(tmpdir)
pid= ap=
cleanup() {
	[ -n "$ap" ] && kill -9 "$ap" 2>/dev/null
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1

cat >"$t/mask.c" <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) void step(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigprocmask(SIG_BLOCK, &s, NULL);
}
int main(int argc, char **argv)
{
	unsigned long n = 0;
	FILE *f;

	for (;;) {
		step();
		usleep(1000);
		if (++n % 20 == 0 && (f = fopen(argv[1], "w"))) {
			fprintf(f, "%lu\n", n);
			fclose(f);
		}
	}
}
EOF
if ! gcc -O1 -g -o "$t/mask" "$t/mask.c"; then
	for c in late/attach killed/lease killed/alive killed/attach-after; do
		fail "$c" "cannot build the test program"
	done
	exit 1
fi
PROPEL_TEST_SLOW_HOLD_MS=1000 "$t/mask" "$t/count" &
pid=$!
wait_until 5 test -s "$t/count"

count() { cat "$t/count" 2>/dev/null || echo 0; }
# counting PID: the program's count moves within 1 s
counting() { counter_moves "$t/count"; }

# ---- late: an attach whose every call's thread comes back by itself ----
t0=${EPOCHREALTIME/./}
PROPEL_TEST_PAD_LATE_MS=1000 timeout 60 "$PROPEL" attach -o "$t/l.db" --duration 1 "$pid" >"$t/l.out" 2>&1
rc=$?
ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
r=$(text_restored "$pid")
echo "  late: attach exited $rc after $ms ms; text: $r"
if [ "$rc" -eq 0 ] && [ "$ms" -lt 9000 ] && [ "${r%% *}" = 0 ] && counting; then
	pass late/attach
else
	fail late/attach "status $rc after $ms ms ($(tail -1 "$t/l.out")); text: $r; counting: $(counting && echo yes || echo no)"
fi

# ---- killed: propel killed while it makes those calls ----
since=$(date +%s)
PROPEL_TEST_PAD_LATE_MS=1000 "$PROPEL" attach -o "$t/k.db" "$pid" >"$t/k.out" 2>&1 &
ap=$!
map=
wait_until 10 eval 'sd=$(ring_dir "$ap" "$since") && map=$(ls "$sd"/"$pid".*.map 2>/dev/null | head -1) && [ -n "$map" ]'
# the map file is the start's; propel takes the thread back 1 s later
# (the pad gave up after ~0.4 s, the thread is in its 1 s hold) and calls
# propel_agent_lease(NULL) there: killed during that call
sleep 1.6
kill -9 "$ap"
wait "$ap" 2>/dev/null
ap=
# lease_off: no propel-lease thread left, the map file ends switched off
lease_off() {
	! grep -qx propel-lease /proc/"$pid"/task/*/comm 2>/dev/null &&
		[ -n "$map" ] && grep -q '^X ' "$map"
}
if wait_until 6 lease_off; then
	pass killed/lease
else
	fail killed/lease "threads: $(cat /proc/"$pid"/task/*/comm | tr '\n' ' '); map ${map:-(none)}: $(tail -1 "${map:-/dev/null}" 2>/dev/null)"
	for task in /proc/"$pid"/task/*; do
		echo "  task ${task##*/} $(cat "$task"/comm) wchan $(cat "$task"/wchan) syscall $(cut -d' ' -f1 "$task"/syscall)"
	done
fi
if counting; then
	pass killed/alive
else
	fail killed/alive "the program's count stays at $(count)"
fi
out=$(timeout 60 "$PROPEL" attach -o "$t/a.db" --duration 1 "$pid" 2>&1)
rc=$?
r=$(text_restored "$pid")
if [ "$rc" -eq 0 ] && [ "${r%% *}" = 0 ]; then
	pass killed/attach-after
else
	fail killed/attach-after "status $rc ($(echo "$out" | tail -1)); text: $r"
fi
