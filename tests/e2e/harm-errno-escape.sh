#!/usr/bin/env bash
# tests/e2e/harm-errno-escape.sh - never harm the target (issue 30): a
# call into the agent whose thread goes back to the program by itself
# (propel late at its pad: inject/hijack.c hijack_call_escaped, see
# harm-escape.sh) leaves the program its errno, and propel never writes
# an errno from before over the one the program has since.
#
# What it was: propel keeps the call thread's errno across a hold
# (inject/inject.c inject_errno: redis panics when epoll_wait fails with
# anything but EINTR, tests/e2e/signal-errno.sh) by reading it at the
# first stop and writing it back before the detach.  A call that came back
# by itself (1) handed the program the errno the agent's start or lease
# left (and dlopen's before it), and (2) the write before the detach put
# back the value of the first stop although the program had run since --
# over a fresh EINTR it was about to look at, say.
#
# The fixture tests/fixtures/signal/errno-escape.c sets errno to a mark of
# its own before each 1 ms sleep and reports a pass after which errno is
# not its mark: "other" (what a call left: 1) or "stale" (an earlier
# pass's mark, written back: 2).  PROPEL_TEST_PAD_LATE_MS=1000 makes every
# agent call come back by itself (the pad yields ~0.4 s), so the program
# makes ~200 passes in each, and the stop propel takes it back at is
# another pass's: the old code's write before the detach was stale in
# every hold (unless the thread was taken back between a pass's check and
# the next pass's mark -- mostly the fixture's count write, tens of µs
# every 100 passes -- where the next mark covers it; the checks below
# each look at two holds).  The start's escaped call left EEXIST every
# time here.
#   escape/attach    `propel attach --duration 1` with every pad late exits
#                    0, its calls came back by themselves (hijack's log),
#                    the program counts on, its text is restored
#   escape/own-errno no "other" pass in that attach: the agent's entry
#                    points keep the errno they are called with, and propel
#                    writes the program's before each call (after dlopen)
#   escape/no-stale  no "stale" pass in that attach (start's and stop's
#                    holds): errno read anew after an escaped call
#   detach/no-stale  nor in `propel detach` (status and stop holds, every
#                    pad late)
# Needs root (ptrace).  About 4 s.
# propel-test: takes 4
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
need_root harm-errno-escape || exit 0
t=$(tmpdir)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
src=$PROPEL_TOP/tests/fixtures/signal/errno-escape.c
if ! $cc -O2 -g -Wall -Wextra -o "$t/ee" "$src"; then
	for c in escape/attach escape/own-errno escape/no-stale detach/no-stale; do
		fail "$c" "cannot build $src"
	done
	exit 1
fi
"$t/ee" "$t/out" &
pid=$!
wait_until 5 test -s "$t/out.count"

count() { cat "$t/out.count" 2>/dev/null || echo 0; }
# counting: the program's count moves within 1 s
counting() { counter_moves "$t/out.count"; }
# wrong KIND: the fixture's lines of that kind so far (count, first one)
wrong() {
	local n
	n=$(grep -c "^WRONG $1 " "$t/out" 2>/dev/null)
	echo "${n:-0} $(grep -m1 "^WRONG $1 " "$t/out" 2>/dev/null)"
}

# ---- attach: its calls' threads come back by themselves ----
if [ -s "$t/out" ]; then
	echo "  before any attach: $(head -3 "$t/out" | tr '\n' ';')"
fi
: >"$t/out"
PROPEL_TEST_PAD_LATE_MS=1000 PROPEL_DEBUG=hijack PROPEL_LOG="$t/log" \
	timeout 60 "$PROPEL" attach -o "$t/a.db" --duration 1 "$pid" >"$t/a.out" 2>&1
rc=$?
esc=$(grep -c "came back by itself" "$t/log" 2>/dev/null)
r=$(text_restored "$pid")
echo "  attach exited $rc, calls that came back by themselves: ${esc:-0}; text: $r"
if [ "$rc" -eq 0 ] && [ "${esc:-0}" -ge 2 ] && [ "${r%% *}" = 0 ] && counting; then
	pass escape/attach
else
	fail escape/attach "status $rc ($(tail -1 "$t/a.out")); ${esc:-0} calls came back by themselves (2 or more wanted); text: $r; counting: $(counting && echo yes || echo no)"
fi
read -r n first <<<"$(wrong other)"
if [ "$n" = 0 ]; then
	pass escape/own-errno
else
	fail escape/own-errno "$n passes found another errno than their own after a call came back by itself (first: $first)"
fi
read -r n first <<<"$(wrong stale)"
if [ "$n" = 0 ]; then
	pass escape/no-stale
else
	fail escape/no-stale "$n passes found an earlier pass's errno written back over their own (first: $first)"
fi

# ---- detach: the status and stop holds, the same way ----
: >"$t/out"
PROPEL_TEST_PAD_LATE_MS=1000 PROPEL_DEBUG=hijack PROPEL_LOG="$t/dlog" \
	timeout 60 "$PROPEL" detach "$pid" >"$t/d.out" 2>&1
rc=$?
esc=$(grep -c "came back by itself" "$t/dlog" 2>/dev/null)
read -r n first <<<"$(wrong stale)"
echo "  detach exited $rc, calls that came back by themselves: ${esc:-0}"
if [ "$rc" -eq 0 ] && [ "${esc:-0}" -ge 1 ] && [ "$n" = 0 ] && counting; then
	pass detach/no-stale
else
	fail detach/no-stale "status $rc ($(tail -1 "$t/d.out")); ${esc:-0} calls came back by themselves; $n stale passes (first: $first); counting: $(counting && echo yes || echo no)"
fi
exit 0
