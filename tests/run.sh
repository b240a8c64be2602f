#!/usr/bin/env bash
# tests/run.sh [-j N] [-n] [PATTERN...] - run every test: unit programs
# ($O/tests/unit/*, O= the build directory, default build) and end-to-end
# scripts (tests/e2e/*.sh), optionally only those whose name contains one
# of the PATTERNs.  `make test` runs it (-j $(J), J= the cores the suites
# share; Makefile).  Each test prints lines "PASS name", "FAIL name:
# why" or "SKIP name: why" (tests/lib.sh helps) and declares how many it
# prints with lines "CHECKS N" (expect_checks in tests/lib.sh, CHECKS_EXPECT
# in tests/unit/check.h; several add up).  A test fails closed: one that
# declares no count, prints another number of results than it declared
# ("ran N of M checks"), exits non-zero or times out is a FAIL.  Exit
# status 77 means a feature is missing here (need_bpf, need_root): the
# declared checks it did not run count as skipped.
#
# -j N runs suites side by side on N cores (default 1: one after
# another).  Every suite keeps its names to itself (ports, namespaces,
# temp and ring directories, tmux sockets, users: tests/lib.sh), so any
# two can run side by side, except the ones that measure the machine: a
# suite (a unit test's .c or an e2e script) with the line
#     # propel-test: alone
# (benchmarks, throughput, CPU cost) runs with nothing else running; they
# go first.  Then the longest suites start first, so that the run ends
# soon after its longest suite, and the CPU-heavy ones early, while the
# suites that mostly wait leave room beside them (by wall plus CPU
# seconds: by wall alone the heavy ones, shorter, ended the run two at a
# time; in a model of a fresh clone's run, 447 s instead of 472): the
# time of each suite in the last run
# ($O/test-logs/.times), else in tests/suite-times (a run's .times kept
# with the sources, for a fresh clone), else the line
#     # propel-test: takes N
# in the suite (about N seconds alone), else by name after those.  A
# suite's share of a core is its CPU time over its wall time there (1
# when not known: a suite that mostly waits -- on its servers, sleeps,
# timeouts -- takes less), or N/100 for a suite with the line
#     # propel-test: share N
# (one whose load runs at nice 19 and takes whatever CPU the others
# leave: its CPU says nothing of its need); suites start while the shares
# of those running add up to at most N, at most 3N suites at a time (-j
# 1: one after another; a suite further down the list starts when the
# next one does not fit and it does).  The fixtures several suites share
# are built once, first (tests/build-fixtures.sh).
#
# -n prints the suites in the order they would start, and runs none.
#
# One line per suite, printed when it ends: its name, its result, its
# wall time in seconds and the CPU time its processes took (user + system
# of every process it waited for: a suite whose CPU is far below its wall
# time mostly waits; a failure adds its FAIL lines and the log's tail;
# the whole log is $O/test-logs/NAME.log).  Ends with the line
# "N passed, N failed, N skipped"; exits 1 on any failure.
cd "$(dirname "$0")/.." || exit 1
jobs=1 dry=
while [ $# -gt 0 ]; do
	case $1 in
	-n) dry=1; shift ;;
	-j) jobs=${2:-}; shift 2 || break ;;
	-j*) jobs=${1#-j}; shift ;;
	--) shift; break ;;
	*) break ;;
	esac
done
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
	echo "propel: tests/run.sh: -j wants a number of suites, not '$jobs'" >&2
	exit 2
fi
O=${O:-build}
export PROPEL_TOP=$PWD PROPEL=$PWD/$O/propel O
# the build's own symbol cache (engine/symcache.h): a fresh clone's run
# starts from an empty one, and the user's ~/.cache is left alone
export PROPEL_SYMBOL_CACHE=${PROPEL_SYMBOL_CACHE:-$PWD/$O/symbol-cache}
# the suites' python3 is Debian's (/usr/bin/python3, whose modules
# tests/install-deps.sh installs), also where a version manager's shim
# comes first on PATH: pyenv's is a chain of bash scripts that took
# ~300 ms a call beside the suites (~600 calls a run; Debian's: ~40 ms).
# The python3 first on the user's PATH stays a traced program's
# (PROPEL_PATH_PYTHON3: follow-real's server, an interpreter with symbols)
export PROPEL_PATH_PYTHON3=${PROPEL_PATH_PYTHON3:-$(command -v python3)}
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
	mkdir -p "$O/test-bin"
	ln -sfn /usr/bin/python3 "$O/test-bin/python3"
	export PATH=$PWD/$O/test-bin:$PATH
fi
pats=("$@")
pass=0 fail=0 skip=0
logdir=$O/test-logs
mkdir -p "$logdir"
times=$logdir/.times

# the suites: NAME, its command, its source (for the markers)
names=()
declare -A cmd src
wanted() {
	local p
	[ ${#pats[@]} -eq 0 ] && return 0
	for p in "${pats[@]}"; do
		[[ -z $p || $1 == *$p* ]] && return 0
	done
	return 1
}
for t in "$O"/tests/unit/*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	n=unit/$(basename "$t")
	wanted "$n" || continue
	names+=("$n") cmd[$n]=$t src[$n]=tests/unit/$(basename "$t").c
done
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	n=e2e/$(basename "$t" .sh)
	wanted "$n" || continue
	names+=("$n") cmd[$n]="bash $t" src[$n]=$t
done
# marked NAME WORD: the suite's source has the line "# propel-test: WORD"
# (in a C file's comment: " * propel-test: WORD" or "// propel-test: WORD")
marked() { grep -qE "^[[:space:]/*#]*propel-test: $2[[:space:]]*(\*/)?[[:space:]]*\$" "${src[$1]}" 2>/dev/null; }
# takes NAME: N of the suite's line "# propel-test: takes N", or nothing
takes() { sed -nE 's/^[[:space:]/*#]*propel-test: takes ([0-9]+)[[:space:]]*(\*\/)?[[:space:]]*$/\1/p' "${src[$1]}" 2>/dev/null | head -1; }
# fixed_share NAME: N of the suite's line "# propel-test: share N", or nothing
fixed_share() { sed -nE 's/^[[:space:]/*#]*propel-test: share ([0-9]+)[[:space:]]*(\*\/)?[[:space:]]*$/\1/p' "${src[$1]}" 2>/dev/null | head -1; }
# the order: alone first (by name), then by wall plus CPU, largest first
declare -A last cpu_of share
for f in tests/suite-times "$times"; do
	[ -f "$f" ] || continue
	while read -r n s c; do
		[[ $n == '#'* ]] || last[$n]=$s cpu_of[$n]=$c
	done <"$f"
done
# share NAME: the suite's share of a core, in hundredths (1..100)
for n in "${names[@]}"; do
	share[$n]=100
	if fs=$(fixed_share "$n") && [ -n "$fs" ]; then
		share[$n]=$fs
	elif [ -n "${last[$n]:-}" ] && [ -n "${cpu_of[$n]:-}" ] && [ "${last[$n]}" -gt 0 ]; then
		share[$n]=$((cpu_of[$n] * 100 / last[$n]))
		[ "${share[$n]}" -gt 100 ] && share[$n]=100
		[ "${share[$n]}" -lt 1 ] && share[$n]=1
	fi
done
order=$(for n in "${names[@]}"; do
	if marked "$n" alone; then k=0
	elif [ -n "${last[$n]:-}" ]; then
		k=$((1000000 - last[$n] - ${cpu_of[$n]:-0}))
		# (a load at nice 19: its share, not its CPU)
		fs=$(fixed_share "$n") && [ -n "$fs" ] && k=$((1000000 - last[$n] - last[$n] * fs / 100))
	elif k=$(takes "$n") && [ -n "$k" ]; then k=$((1000000 - k))
	else k=1000000; fi
	printf '%d %s\n' "$k" "$n"
done | sort -k1,1n -k2,2 | cut -d' ' -f2)
if [ -n "$dry" ]; then
	for n in $order; do echo "$n$(marked "$n" alone && echo ' (alone)')"; done
	exit 0
fi
tests/install-deps.sh test || echo "propel: could not install test packages; some tests will skip" >&2
O=$O tests/build-fixtures.sh >"$logdir/.fixtures.log" 2>&1 ||
	echo "propel: tests/build-fixtures.sh failed ($logdir/.fixtures.log); the suites that need a fixture will fail" >&2

# report NAME RC SECONDS: judge a finished suite from its log, print its
# line, add its counts
report() {
	local name=$1 rc=$2 took="$3s${4:+ ($4s CPU)}" log=$logdir/$1.log
	local p f s m n
	p=$(grep -c '^PASS' "$log"); f=$(grep -c '^FAIL' "$log"); s=$(grep -c '^SKIP' "$log")
	m=$(awk '/^CHECKS [0-9]+$/ { m += $2; d = 1 } END { print d ? m : "" }' "$log")
	n=$((p + f + s))
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		f=$((f + 1)); echo "FAIL $name: timed out" >>"$log"
	elif [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$f" -eq 0 ]; then
		f=$((f + 1)); echo "FAIL $name: exited with status $rc" >>"$log"
	fi
	if [ -z "$m" ]; then
		f=$((f + 1)); echo "FAIL $name: declares no check count (expect_checks N)" >>"$log"
	elif [ "$rc" -eq 77 ] && [ "$n" -lt "$m" ]; then
		s=$((s + m - n)); echo "SKIP $name: $((m - n)) of $m checks not run: $(grep -m1 '^SKIP' "$log")" >>"$log"
	elif [ "$n" -ne "$m" ]; then
		f=$((f + 1)); echo "FAIL $name: ran $n of $m checks" >>"$log"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	[ "$f" -gt 0 ] && failed+=("$name: $(grep -m3 '^FAIL' "$log" | cut -c1-160 | paste -sd'|')")
	printf '%-40s ' "$name"
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

failed=()
# the running suites: pid -> name, start time
declare -A run_name run_t0
start() {
	local name=$1 log=$logdir/$1.log
	mkdir -p "$(dirname "$log")"
	# a session of its own (its id: the pid), so that an interrupted run
	# stops all of it, the process groups its own timeouts make too
	# (and bash's times: the CPU of the suite's processes, in $log.cpu)
	# shellcheck disable=SC2086 # cmd is a program and its arguments
	setsid -w bash -c 'timeout -k 10 "$1" "${@:3}"; rc=$?; times >"$2"; exit $rc' _ \
		"${PROPEL_TEST_TIMEOUT:-600}" "$log.cpu" ${cmd[$name]} >"$log" 2>&1 </dev/null &
	run_name[$!]=$name run_t0[$!]=$EPOCHREALTIME
}
# reap: wait for one suite to end and report it
reap() {
	local pid rc name took cpu
	wait -n -p pid "${!run_name[@]}"
	rc=$?
	[ -n "${pid:-}" ] && [ -n "${run_name[$pid]:-}" ] || return 1
	name=${run_name[$pid]}
	took=$(awk -v a="${run_t0[$pid]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
	unset "run_name[$pid]" "run_t0[$pid]"
	# times' second line: the children's user and system time, "0m1.5s"
	cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); c += a[1] * 60 + a[2] } printf "%.0f", c }' \
		"$logdir/$name.log.cpu" 2>/dev/null)
	rm -f "$logdir/$name.log.cpu"
	last[$name]=$took cpu_of[$name]=$cpu
	report "$name" "$rc" "$took" "$cpu"
}
stop_all() {
	local pid
	for pid in "${!run_name[@]}"; do pkill -TERM -s "$pid" 2>/dev/null; done
	wait
	exit 130
}
trap stop_all INT TERM
pending=()
for n in $order; do
	if marked "$n" alone; then
		while [ ${#run_name[@]} -gt 0 ]; do reap; done
		start "$n"
		reap
		continue
	fi
	pending+=("$n")
done
# at most 3N suites at a time (-j 1: one): 2N left a fresh clone's run
# at 1.6 of 2 cores with four mostly waiting suites (fcr8, 603 s; 558 s
# at 3N, fcr9)
most=$((jobs > 1 ? 3 * jobs : 1))
# busy: the shares of the running suites, in hundredths of a core
busy() {
	local pid b=0
	for pid in "${!run_name[@]}"; do b=$((b + share[${run_name[$pid]}])); done
	echo "$b"
}
# the next pending suite that fits beside the running ones (the first
# when nothing runs), started; status 1 when none fits
start_next() {
	local i b
	[ ${#run_name[@]} -lt "$most" ] || return 1
	b=$(busy)
	for i in "${!pending[@]}"; do
		if [ ${#run_name[@]} -eq 0 ] || [ $((b + share[${pending[$i]}])) -le $((100 * jobs)) ]; then
			start "${pending[$i]}"
			unset "pending[$i]"
			pending=("${pending[@]}")
			return 0
		fi
	done
	return 1
}
while [ ${#pending[@]} -gt 0 ]; do
	start_next || reap
done
while [ ${#run_name[@]} -gt 0 ]; do reap; done
# (only suites that still exist: a removed one's time goes with it)
for n in "${!last[@]}"; do [ -x "$O/tests/$n" ] || [ -f "tests/$n.sh" ] && echo "$n ${last[$n]} ${cpu_of[$n]:-}"; done | sort >"$times.new" && mv "$times.new" "$times"
# the failures again at the end (a log cut in the middle still names them)
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
