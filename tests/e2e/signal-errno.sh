#!/usr/bin/env bash
# tests/e2e/signal-errno.sh - the agent never changes a traced thread's
# errno (issue 30: redis-benchmark, traced by --follow, panicked
# 'aeApiPoll: epoll_wait' when propel was killed and the agent switched
# itself off; its event loop accepts only EINTR from a failed epoll_wait).
# The fixture tests/fixtures/signal/epoll-errno.c runs two event loops
# that exit with a BAD line on any other errno, a thread that checks errno
# across traced calls (where the agent's quiesce SIGTRAPs and patch traps
# land), and SIGALRMs without SA_RESTART to every thread.
#
#   detach/eintr-only    3 rounds of `propel attach --duration 1`: the
#                        program lives, no BAD line, its waits went on
#                        (EINTRs and checked calls counted during them)
#   switch-off/eintr-only 3 rounds of `propel attach` killed with SIGKILL at
#                        0.4-1.4 s: the agent switches itself off within
#                        the lease (no propel-lease thread 3.5 s after the
#                        kill), the program lives, no BAD line
#   traced               the rounds traced the checking thread's calls
#                        (mix and step in a replay): the check ran
#                        through the agent, not beside it
#   control/clobber      the same program whose own handler sets errno
#                        reports it (the check itself can fail)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
t=$(tmpdir)
trap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
src=$PROPEL_TOP/tests/fixtures/signal/epoll-errno.c
$cc -O2 -g -Wall -Wextra -o "$t/ee" "$src" -lpthread || { fail build "cannot build $src"; exit 1; }

# counts: "EINTRS CALLS" of the fixture's last count file
counts() { awk '{ print $2, $4 }' "$t/out.count" 2>/dev/null; }
# wait_count: until the count file has been written anew (1 s period)
wait_count() {
	local i c0
	c0=$(counts)
	for ((i = 0; i < 30; i++)); do
		sleep 0.1
		[ "$(counts)" != "$c0" ] && return 0
	done
	return 1
}
# judge NAME E0 C0 EXTRA: the program alive, no BAD line, counts moved
judge() {
	local e c
	wait_count
	read -r e c <<<"$(counts)"
	if ! kill -0 "$ep" 2>/dev/null; then fail "$1" "the program died: $(head -3 "$t/out" 2>/dev/null | tr '\n' ';')"
	elif [ -s "$t/out" ]; then fail "$1" "$(head -3 "$t/out" | tr '\n' ';')"
	elif ! [[ ${e:-} =~ ^[0-9]+$ && ${c:-} =~ ^[0-9]+$ ]] || [ "$e" -le "$2" ] || [ "$c" -le "$3" ]; then fail "$1" "the loops did not go on (eintr $2 -> ${e:-?}, calls $3 -> ${c:-?})"
	elif [ -n "$4" ]; then fail "$1" "$4"
	else pass "$1"; fi
}
lease_gone() { # PID: no propel-lease thread within 3.5 s
	local i
	for ((i = 0; i < 35; i++)); do
		grep -qx propel-lease /proc/"$1"/task/*/comm 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

"$t/ee" "$t/out" &
ep=$!
wait_count
read -r e0 c0 <<<"$(counts)"
why=
for r in 1 2 3; do
	if ! o=$("$PROPEL" attach -o "$t/d$r.db" --duration 1 "$ep" 2>&1); then
		why="attach $r: $(echo "$o" | tail -1)"
		break
	fi
	kill -0 "$ep" 2>/dev/null || break
done
judge detach/eintr-only "${e0:-0}" "${c0:-0}" "$why"

read -r e0 c0 <<<"$(counts)"
why=
for r in 1 2 3; do
	"$PROPEL" attach -o "$t/k$r.db" "$ep" >"$t/k$r.out" 2>&1 &
	pp=$!
	sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.4 + (r % 1000) / 1000 }')"
	kill -9 "$pp" 2>/dev/null
	wait "$pp" 2>/dev/null
	lease_gone "$ep" || { why="round $r: the agent did not switch off within the lease"; break; }
	# the killed recorder's rings (kept for `propel recover`): ours, by pid
	rm -rf /dev/shm/propel/"$pp"-*
	kill -0 "$ep" 2>/dev/null || break
done
judge switch-off/eintr-only "${e0:-0}" "${c0:-0}" "$why"

n=$("$PROPEL" replay "$t/d1.db" 2>/dev/null | grep -cwE 'mix|step')
# (num_gt: PASS, or FAIL when n is empty or 0)
num_gt traced "${n:-}" 0 "lines of a replay naming mix or step"
kill -9 "$ep" 2>/dev/null
wait "$ep" 2>/dev/null

# the control: errno set by the program's own handler is seen
"$t/ee" "$t/ctl" clobber &
cp=$!
for ((i = 0; i < 50; i++)); do
	[ -s "$t/ctl" ] && break
	sleep 0.1
done
if grep -q '^BAD errno' "$t/ctl" 2>/dev/null; then pass control/clobber
else fail control/clobber "a handler that sets errno went unseen for 5 s"; fi
kill -9 "$cp" 2>/dev/null
wait "$cp" 2>/dev/null
exit 0
