#!/usr/bin/env bash
# tests/run.sh [PATTERN...] - run every test: unit programs ($O/tests/unit/*,
# O= the build directory, default build) and end-to-end scripts
# (tests/e2e/*.sh), optionally only those whose name contains one of the
# PATTERNs.  Each test prints lines "PASS name", "FAIL name: why" or
# "SKIP name: why" (tests/lib.sh helps) and declares how many it prints with
# lines "CHECKS N" (expect_checks in tests/lib.sh, CHECKS_EXPECT in
# tests/unit/check.h; several add up).  A test fails closed: one that
# declares no count, prints another number of results than it declared
# ("ran N of M checks"), exits non-zero or times out is a FAIL.  Exit
# status 77 means a feature is missing here (need_bpf, need_root): the
# declared checks it did not run count as skipped.
# Each suite's line ends with its wall time in seconds.
# Ends with the line "N passed, N failed, N skipped"; exits 1 on any failure.
cd "$(dirname "$0")/.." || exit 1
tests/install-deps.sh test || echo "propel: could not install test packages; some tests will skip" >&2
O=${O:-build}
export PROPEL_TOP=$PWD PROPEL=$PWD/$O/propel O
pats=("$@")
pass=0 fail=0 skip=0
logdir=$O/test-logs
mkdir -p "$logdir"
run_one() {
	local name=$1; shift
	local log=$logdir/$name.log out rc
	mkdir -p "$(dirname "$log")"
	if [ ${#pats[@]} -gt 0 ]; then
		local p hit=
		for p in "${pats[@]}"; do
			[[ -z $p || $name == *$p* ]] && hit=1
		done
		[ -n "$hit" ] || return
	fi
	printf '%-40s ' "$name"
	local t0=$EPOCHREALTIME
	timeout -k 10 "${PROPEL_TEST_TIMEOUT:-600}" "$@" >"$log" 2>&1
	rc=$?
	local took
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0fs", b - a }')
	local p f s m n
	p=$(grep -c '^PASS' "$log"); f=$(grep -c '^FAIL' "$log"); s=$(grep -c '^SKIP' "$log")
	m=$(awk '/^CHECKS [0-9]+$/ { m += $2; d = 1 } END { print d ? m : "" }' "$log")
	n=$((p + f + s))
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		f=$((f + 1)); echo "FAIL $name: timed out" >>"$log"
	elif [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ "$f" -eq 0 ]; then
		f=$((f + 1)); echo "FAIL $name: exited with status $rc" >>"$log"
	fi
	if [ -z "$m" ]; then
		f=$((f + 1)); echo "FAIL $name: declares no check count (expect_checks N)" >>"$log"
	elif [ $rc -eq 77 ] && [ "$n" -lt "$m" ]; then
		s=$((s + m - n)); echo "SKIP $name: $((m - n)) of $m checks not run: $(grep -m1 '^SKIP' "$log")" >>"$log"
	elif [ "$n" -ne "$m" ]; then
		f=$((f + 1)); echo "FAIL $name: ran $n of $m checks" >>"$log"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" -gt 0 ]; then
		echo "FAIL ($p passed, $f failed, $s skipped) $took"
		grep -E '^(FAIL|SKIP)' "$log" | head -20 | sed 's/^/    /'
		tail -n 15 "$log" | sed 's/^/    | /'
	elif [ "$s" -gt 0 ]; then
		echo "ok ($p passed, $s skipped) $took"
		grep '^SKIP' "$log" | head -5 | sed 's/^/    /'
	else
		echo "ok ($p passed) $took"
	fi
}
for t in "$O"/tests/unit/*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	run_one "e2e/$(basename "$t" .sh)" bash "$t"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
