#!/usr/bin/env bash
# tests/e2e/bench-short.sh - every benchmark of `make bench` (tests/bench-*.sh)
# in its short mode (PROPEL_BENCH_SHORT=1: one repetition, small inputs,
# short durations, each peer run when installed), so that a benchmark that
# breaks fails `make test` instead of waiting for the next `make bench`.
# No figure is judged; per benchmark, bench-short/NAME passes when the script
#   - exits 0 within its time (BENCH_SHORT_TIMEOUT s, default 150),
#   - prints no error line of its own ("bench-NAME: ..." other than
#     "generating"), and
#   - prints its last figure (the line below, after `end`): a script that
#     stops early, or prints nothing, fails.
# A benchmark that needs root, or tmux, says so and counts as skipped.
# BENCH_SHORT_ONLY="tui export" runs only those.
# Each script's output follows its result, indented.  About 2 min here.
# propel-test: takes 110
#   (seconds, alone.  Not run alone: it judges no figure, so a suite beside
#   it skews nothing it checks; alone it left one core idle for ~2 min of
#   every `make test -j2`.  `make bench` measures, with nothing beside it.)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
# one check per benchmark of the list at the end (or of BENCH_SHORT_ONLY)
n=$(sed -n "/^done <<'EOF'$/,/^EOF$/p" "$0" | grep -c '|')
[ -n "${BENCH_SHORT_ONLY:-}" ] && n=$(wc -w <<<"$BENCH_SHORT_ONLY")
expect_checks $n
[ -x "$PROPEL" ] || { fail bench-short "no $PROPEL"; exit 1; }
d=$(tmpdir)
trap 'rm -rf "$d"' EXIT
export PROPEL_BENCH_SHORT=1
lim=${BENCH_SHORT_TIMEOUT:-150}

# name | the line that ends its output (an extended regex)
while IFS='|' read -r name end; do
	[ -n "$name" ] || continue
	[ -n "${BENCH_SHORT_ONLY:-}" ] && [[ " $BENCH_SHORT_ONLY " != *" $name "* ]] && continue
	out=$d/$name.out
	t0=$EPOCHREALTIME
	timeout -k 10 "$lim" bash "$PROPEL_TOP/tests/bench-$name.sh" >"$out" 2>&1 </dev/null
	rc=$?
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
	errs=$(grep -E "^bench-$name: " "$out" | grep -v "^bench-$name: generating " | head -3 | tr '\n' ' ')
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail "bench-short/$name" "timed out after $lim s${errs:+: $errs}"
	elif [ $rc -ne 0 ]; then
		fail "bench-short/$name" "exit status $rc${errs:+: $errs}$([ -z "$errs" ] && tail -1 "$out")"
	elif grep -qE "needs root|SKIP \(needs root\)|tmux not installed" "$out"; then
		skip "bench-short/$name" "$(head -1 "$out")"
	elif [ -n "$errs" ]; then
		fail "bench-short/$name" "$errs"
	elif [ ! -s "$out" ]; then
		fail "bench-short/$name" "printed nothing"
	elif ! grep -qE -- "$end" "$out"; then
		fail "bench-short/$name" "no line /$end/ (stopped early?): $(tail -1 "$out")"
	else
		pass "bench-short/$name"
	fi
	echo "  | bench-$name.sh, short: ${took} s, exit status $rc"
	sed 's/^/  | /' "$out"
done <<'EOF'
trace|^attach latency ms, [0-9]+ functions \(gdb\) 
real|^  propel: throughput with propel attached
budget|^  untraced after the budget's decisions: [0-9]+ functions
console|^console: [0-9]+ processes at 80x24: first screen
tui|^tui: [0-9]+ events \(chunked\): first screen [0-9.]+ s
vitals|^  [0-9]+ of 1000 sites sampled: coverage
follow|^exec following \(ms per fork\+exec\) 
analysis|^paths: rootcause [0-9.]+ s
export|^figure \(ping-pong, [0-9]+ events
EOF
