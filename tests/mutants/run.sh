#!/usr/bin/env bash
# tests/mutants/run.sh [NAME...] - `make test-mutants`: does the test suite
# catch a bug?  Each tests/mutants/NAME.patch is a small deliberate bug (an
# off-by-one in the TCP offset matcher, fail-stop ordering reversed, ...);
# its first line "suites: S..." names the suites (tests/run.sh patterns)
# that must catch it, the lines after it say what the bug is.
#
# The tree (tracked and untracked files, not ignored ones, as they are now)
# and its build directory ($O, default build) are copied to a temporary
# directory; the real tree is never written, so an interrupted run leaves
# nothing mutated (the copy is removed on exit).  In the copy: the build and
# the declared suites run once unmutated (a suite that fails there cannot
# catch anything: an error); then for each mutant, one at a time: the patch
# must apply exactly (git apply, no fuzz: a mutant that no longer applies is
# an error, never a pass), the tree is built, the declared suites run until
# one fails, and the patch is taken out again.
#
# Prints one line per mutant, "caught by SUITE" or "SURVIVED" (a test is
# missing: write it), and exits non-zero when any mutant survived or could
# not be applied or built.  Not part of `make test` (minutes per mutant).
# MUTANTS_KEEP=1 keeps the copy (its path is printed) for a look.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) ob=$O ;; *) ob=$top/$O ;; esac
mdir=$top/tests/mutants

names=("$@")
if [ ${#names[@]} = 0 ]; then
	for p in "$mdir"/*.patch; do
		n=${p##*/}
		names+=("${n%.patch}")
	done
fi
for n in "${names[@]}"; do
	[ -f "$mdir/$n.patch" ] || { echo "test-mutants: no mutant $n ($mdir/$n.patch)" >&2; exit 2; }
	head -1 "$mdir/$n.patch" | grep -q '^suites: [^ ]' ||
		{ echo "test-mutants: $n.patch: first line is not 'suites: SUITE...'" >&2; exit 2; }
	# checked (not applied) against the tree first: no copy, build or
	# baseline for a mutant that no longer applies
	(cd "$top" && git apply --check "$mdir/$n.patch") ||
		{ echo "test-mutants: ERROR: $n.patch no longer applies to the tree" >&2; exit 2; }
done
[ -x "$ob/propel" ] || { echo "test-mutants: no $ob/propel (make first)" >&2; exit 2; }

work=$(mktemp -d /tmp/propel-mutants.XXXXXX) || exit 2
done_() {
	if [ "${MUTANTS_KEEP:-0}" = 1 ]; then
		echo "test-mutants: the copy is kept in $work"
	else
		rm -rf "$work"
	fi
}
trap done_ EXIT
trap 'exit 130' INT TERM
tree=$work/tree
log=$work/logs
mkdir -p "$tree" "$log"

# the copy: every file git knows of or would add, as it is now; the build
# directory with its times kept, so a mutant rebuilds only what it touches
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$tree" || {
	echo "test-mutants: cannot copy the tree" >&2
	exit 2
}
cp -a "$ob" "$tree/build" || { echo "test-mutants: cannot copy $ob" >&2; exit 2; }
rm -rf "$tree/build/test-logs"

suites_of() { head -1 "$mdir/$1.patch" | sed 's/^suites: *//'; }

build() { # LOG
	make -C "$tree" -j2 O=build >"$1" 2>&1
}

# run_suite SUITE LOG: 0 when it passes (every check), 1 when it fails
run_suite() {
	(cd "$tree" && O=build PROPEL_TEST_QUIET=1 tests/run.sh "$1") >"$2" 2>&1
}

# which suites a run.sh output names as failed
failed_in() {
	awk '/^[^ ]/ && $2 == "FAIL" { print $1 }' "$1" | paste -sd' ' -
}

printf 'test-mutants: copy in %s\n' "$work"
if ! build "$log/base-build.log" || ! (cd "$tree" && O=build tests/build-fixtures.sh) >"$log/base-fixtures.log" 2>&1; then
	echo "test-mutants: the unmutated copy does not build:"
	tail -20 "$log/base-build.log" "$log/base-fixtures.log"
	exit 2
fi

# the declared suites, unmutated: each must pass, or it proves nothing
declare -A base_ok
for n in "${names[@]}"; do
	for s in $(suites_of "$n"); do
		[ -n "${base_ok[$s]:-}" ] && continue
		if run_suite "$s" "$log/base-${s//\//_}.log"; then
			base_ok[$s]=1
		else
			base_ok[$s]=0
			echo "test-mutants: suite $s fails unmutated ($(failed_in "$log/base-${s//\//_}.log")):"
			grep -E '^ +(FAIL|\|)' "$log/base-${s//\//_}.log" | head -8
		fi
	done
done

caught=0 survived=0 errors=0
report=()
for n in "${names[@]}"; do
	p=$mdir/$n.patch
	res=
	if ! (cd "$tree" && git apply --check "$p") 2>"$log/$n.apply"; then
		res="ERROR: does not apply: $(head -1 "$log/$n.apply")"
	elif ! (cd "$tree" && git apply "$p") 2>>"$log/$n.apply"; then
		res="ERROR: git apply failed: $(head -1 "$log/$n.apply")"
	elif ! build "$log/$n-build.log"; then
		res="ERROR: the mutant does not build: $(grep -m1 'error' "$log/$n-build.log")"
	else
		for s in $(suites_of "$n"); do
			if [ "${base_ok[$s]:-}" != 1 ]; then
				res="${res:+$res; }$s fails unmutated"
				continue
			fi
			slog=$log/$n-${s//\//_}.log
			if ! run_suite "$s" "$slog"; then
				why=$(grep -m1 -E '^ +FAIL ' "$slog" | sed 's/^ *FAIL //' | cut -c1-100)
				f=$(failed_in "$slog")
				res="caught by ${f:-$s}${why:+ ($why)}"
				break
			fi
		done
		case $res in
		"caught by"*) ;;
		"") res=SURVIVED ;;
		*) res="ERROR: $res" ;;
		esac
	fi
	# take the mutant out again (the build at the next mutant, or below,
	# makes what it touched anew)
	if (cd "$tree" && git apply -R --check "$p") 2>/dev/null; then
		(cd "$tree" && git apply -R "$p")
	fi
	case $res in
	"caught by"*) caught=$((caught + 1)) ;;
	SURVIVED) survived=$((survived + 1)) ;;
	*) errors=$((errors + 1)) ;;
	esac
	report+=("$(printf '%-22s %-32s %s' "$n" "[$(suites_of "$n")]" "$res")")
	printf '%s\n' "${report[-1]}"
done

echo "== test-mutants report"
printf '%s\n' "${report[@]}"
echo "$caught caught, $survived survived, $errors errors"
[ $survived = 0 ] && [ $errors = 0 ]
