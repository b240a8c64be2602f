#!/usr/bin/env bash
# tests/e2e/fuzz-corpus.sh - every fuzz target (tests/fuzz/fuzz-<name>.c)
# replayed on every file of its corpus tests/fuzz/corpus/<name>/ by its
# gcc-built driver $O/tests/fuzz/replay-<name> (tests/fuzz/replay-main.c),
# one process per input with a time limit: one "PASS fuzz-corpus/<name>"
# per target, or FAIL with the input that crashed or hung.  Fails closed:
# a target without a driver or without seeds fails.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
cd "$PROPEL_TOP" || exit 1
targets=(tests/fuzz/fuzz-*.c)
[ -f "${targets[0]}" ] || { expect_checks 1; fail fuzz-corpus "no targets in tests/fuzz"; exit 1; }
# one check per target
expect_checks ${#targets[@]}
limit=${FUZZ_INPUT_TIMEOUT:-30}
n=0
for src in "${targets[@]}"; do
	name=${src#tests/fuzz/fuzz-}
	name=${name%.c}
	n=$((n + 1))
	drv=$O/tests/fuzz/replay-$name dir=tests/fuzz/corpus/$name
	if ! [ -x "$drv" ]; then
		fail "fuzz-corpus/$name" "no driver $drv"
		continue
	fi
	files=()
	[ -d "$dir" ] && mapfile -t files < <(find "$dir" -type f | sort)
	if [ ${#files[@]} -eq 0 ]; then
		fail "fuzz-corpus/$name" "no seeds in $dir"
		continue
	fi
	bad=
	for f in "${files[@]}"; do
		timeout -k 5 "$limit" "$drv" "$f" >/dev/null 2>"$O/fuzz-corpus-$name.err"
		rc=$?
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			bad="$f: hung (over ${limit}s)"
		elif [ $rc -ne 0 ]; then
			bad="$f: exited $rc"
			grep -E 'ERROR|runtime error|SUMMARY' "$O/fuzz-corpus-$name.err" | head -3
		fi
		[ -n "$bad" ] && break
	done
	if [ -n "$bad" ]; then
		fail "fuzz-corpus/$name" "$bad"
	else
		pass "fuzz-corpus/$name"
		echo "fuzz-corpus/$name: ${#files[@]} inputs"
	fi
done
