# tests/lib.sh - helpers for end-to-end test scripts (source it).
#
# How a suite is written (tests/run.sh holds every suite to this):
#   . "$(dirname "$0")/../lib.sh"
#   set -uo pipefail            # every suite; not -e: the helpers below
#                               # report a failed step as a FAIL by name
#   expect_checks 23            # before the first check: how many PASS/FAIL/
#                               # SKIP lines this suite prints.  A suite that
#                               # prints another number of them, or declares
#                               # none, is a FAIL "suite: ran N of M checks".
#                               # A count that varies (a loop over fixtures)
#                               # is computed: expect_checks $((3 + 2 * n)).
#                               # Several expect_checks lines add up.
#   need_bpf NAME | need_root NAME   a feature missing here: SKIP NAME and
#                               # exit 77; run.sh counts the checks not run as
#                               # skipped.  Only for a missing feature, named;
#                               # a feature present that fails is a FAIL.
# Every path of the suite prints each declared check once: where a step a
# check depends on failed, fail that check by name ("record failed"); never
# `exit 0` past checks.
#
#   pass NAME | fail NAME WHY | skip NAME WHY
#   check NAME CMD...        pass if CMD succeeds, fail otherwise
#   expect_diff NAME EXPECTED ACTUAL   pass if files are equal (diff shown)
#   num_le|num_lt|num_ge|num_gt|num_eq NAME VALUE LIMIT [WHAT]
#                            pass if VALUE is a number and compares so with
#                            LIMIT; an empty or non-numeric VALUE is a FAIL
#   checker NAME CMD...      run a checker script that prints PASS/FAIL/SKIP
#                            lines: they pass through; a checker that exits
#                            non-zero, times out or prints no result is a
#                            FAIL NAME saying so (CMD is a program, run
#                            under timeout: not a shell function)
#   run_ok NAME OUTVAR CMD... run CMD, its stdout into OUTVAR; status 0 with
#                            output returns 0, else FAIL NAME and return 1
#   CMD | grepq [OPTS] PATTERN   grep -q that reads all its input: under
#                            pipefail, grep -q leaving early kills a long
#                            writer with SIGPIPE and fails the pipeline
#   bpf_missing              prints why BPF cannot work here (empty: it can)
#   ring_dir PID SINCE [PREFIX]  the ring directory of the session of PID
#                            made since SINCE (not `ls -d ... | head -1`)
#   free_port [N]            a port P such that P..P+N-1 are free (TCP and
#                            UDP, 127.0.0.1): never a fixed port
#
# Suites run side by side (tests/run.sh -j): every name a suite makes is
# its own -- temp files under tmpdir, ports from free_port, ring
# directories by pid (ring_dir), tmux servers by socket name (tmux -L
# NAME-$$), users, namespaces and links named with $$.
: "${PROPEL_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${O:=build}"
: "${PROPEL:=$PROPEL_TOP/$O/propel}"
export O
# the build's symbol cache, as tests/run.sh sets it (a suite run alone)
: "${PROPEL_SYMBOL_CACHE:=$PROPEL_TOP/$O/symbol-cache}"
export PROPEL_SYMBOL_CACHE
AGENT_SO=$PROPEL_TOP/$O/libpropel-agent.so
export PROPEL_TOP PROPEL
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: ${2:-}"; }
skip() { echo "SKIP $1: ${2:-}"; }
check() {
	local name=$1; shift
	if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi
}
expect_diff() {
	if diff -u "$2" "$3"; then pass "$1"; else fail "$1" "output differs from $2"; fi
}
grepq() { grep -c "$@" >/dev/null; }
is_root() { [ "$(id -u)" -eq 0 ]; }
expect_checks() {
	case ${1:-} in
	'' | *[!0-9]*) echo "FAIL expect_checks: not a count: '${1:-}'" ;;
	*) echo "CHECKS $1" ;;
	esac
}
# is_num V: V is a decimal number (sign, digits, fraction, exponent)
is_num() { [[ ${1:-} =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; }
num_cmp() {
	local name=$1 op=$2 v=${3:-} lim=${4:-} what=${5:-value}
	if ! is_num "$v"; then
		fail "$name" "$what is not a number: '$v'"
	elif ! is_num "$lim"; then
		fail "$name" "limit is not a number: '$lim'"
	elif awk -v a="$v" -v b="$lim" -v op="$op" 'BEGIN {
		if (op == "le") r = a <= b; else if (op == "lt") r = a < b
		else if (op == "ge") r = a >= b; else if (op == "gt") r = a > b
		else r = a == b
		exit !r }'; then
		pass "$name"
	else
		fail "$name" "$what $v, want $op $lim"
	fi
}
num_le() { num_cmp "$1" le "${2:-}" "${3:-}" "${4:-}"; }
num_lt() { num_cmp "$1" lt "${2:-}" "${3:-}" "${4:-}"; }
num_ge() { num_cmp "$1" ge "${2:-}" "${3:-}" "${4:-}"; }
num_gt() { num_cmp "$1" gt "${2:-}" "${3:-}" "${4:-}"; }
num_eq() { num_cmp "$1" eq "${2:-}" "${3:-}" "${4:-}"; }
checker() {
	local name=$1 out rc; shift
	out=$(timeout -k 5 "${PROPEL_CHECKER_TIMEOUT:-300}" "$@")
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out"
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail "$name" "checker timed out: $*"
	elif [ $rc -ne 0 ] && ! grep -q '^FAIL' <<<"$out"; then
		fail "$name" "checker exited $rc: $*"
	elif ! grep -qE '^(PASS|FAIL|SKIP) ' <<<"$out"; then
		fail "$name" "checker printed no result: $*"
	fi
	return $rc
}
run_ok() {
	local name=$1 var=$2 out rc; shift 2
	out=$("$@")
	rc=$?
	printf -v "$var" '%s' "$out"
	if [ $rc -ne 0 ]; then
		fail "$name" "exited $rc: $*"; return 1
	elif [ -z "$out" ]; then
		fail "$name" "printed nothing: $*"; return 1
	fi
	return 0
}
# bpf_missing: why BPF programs cannot be loaded here, or nothing.  Each
# reason names the feature; on a machine that has them all a failure to
# load or attach is the product's, a FAIL.
bpf_missing() {
	local cap
	if ! is_root; then echo "no BPF: not root"; return; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then echo "no BPF: kernel lacks BTF (/sys/kernel/btf/vmlinux)"; return; fi
	cap=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
	# CAP_SYS_ADMIN is bit 21, CAP_BPF bit 39
	if [ -n "$cap" ] && ! (( (16#$cap >> 21 & 1) || (16#$cap >> 39 & 1) )); then
		echo "no BPF: no CAP_BPF or CAP_SYS_ADMIN (CapEff $cap)"; return
	fi
	if grep -q '\[confidentiality\]' /sys/kernel/security/lockdown 2>/dev/null; then
		echo "no BPF: kernel lockdown=confidentiality"; return
	fi
	if [ -n "${PROPEL_TEST_NO_BPF:-}" ]; then echo "no BPF: PROPEL_TEST_NO_BPF set"; return; fi
}
# need_bpf NAME / need_root NAME: SKIP NAME and exit 77 where the feature is
# missing (run.sh counts the suite's checks not run as skipped)
need_bpf() {
	local why
	why=$(bpf_missing)
	[ -z "$why" ] && return 0
	skip "$1" "$why"; exit 77
}
need_root() {
	is_root && return 0
	skip "$1" "needs root"; exit 77
}
# ring_dir PID SINCE [PREFIX]: the ring directory of the session whose
# recorder (or daemon, PREFIX d) has PID: /dev/shm/propel/PREFIX PID-HEXTIME
# (engine/capture.c, inject/propeld.c; propeld adds -SEQ) made at or after
# SINCE (epoch seconds, take $(date +%s) before starting it).  Exactly one,
# or nothing and status 1: an earlier run's directory of a reused PID is
# never taken for this one.
ring_dir() {
	local d=() g ts
	for g in /dev/shm/propel/${3:-}"$1"-*; do
		[ -d "$g" ] || continue
		ts=${g##*-}
		[[ $ts =~ ^[0-9a-f]+$ ]] && (( 16#$ts >= $2 )) && d+=("$g")
	done
	[ ${#d[@]} -eq 1 ] || return 1
	echo "${d[0]}"
}
tmpdir() { mktemp -d "${TMPDIR:-/tmp}/propel-test.XXXXXX"; }
# running PID: PID exists and has not ended.  An ended process is a
# zombie until its parent reaps it, and kill -0 still finds it: an orphan
# (a daemon, a server whose propel was killed) is reaped by init, on this
# machine up to 2 s later (1.5-1.8 s measured), which every wait for it to
# end with kill -0 paid in full
running() {
	local k v
	while read -r k v; do
		[ "$k" = State: ] && { [ "${v%% *}" != Z ]; return; }
	done 2>/dev/null </proc/"$1"/status
	return 1
}
# wait_until SECONDS CMD...: run CMD every 20 ms until it succeeds (0) or
# SECONDS (a decimal: 0.5) have passed (1): a wait for a condition instead
# of a fixed sleep
wait_until() {
	local s=${1%.*} f=0 end
	[[ $1 == *.* ]] && f=${1#*.}000000 && f=$((10#${f:0:6}))
	end=$((${EPOCHREALTIME/./} + ${s:-0} * 1000000 + f))
	shift
	until "$@"; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || return 1
		sleep 0.02
	done
}
# counter_moves FILE: the number a program keeps writing to FILE (its
# passes so far) changes within 1 s -- the program runs on
counter_moves() {
	local a
	a=$(cat "$1" 2>/dev/null || echo 0)
	wait_until 1 eval "[ \"\$(cat '$1' 2>/dev/null || echo 0)\" != '$a' ]"
}
# free_port [N]: N ports in a row (default 1) free now on 127.0.0.1, TCP
# and UDP, chosen at random below the kernel's ephemeral range (which the
# outgoing connections of a load generator beside this suite take from:
# a port the kernel chose, closed again, is no reservation)
free_port() {
	python3 - "${1:-1}" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    lo = int(f.read().split()[0])
for _ in range(2000):
    p = random.randrange(10000, max(lo, 10000 + 2 * n) - n)
    held = []
    try:
        for i in range(n):
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                s = socket.socket(socket.AF_INET, kind)
                held.append(s)
                s.bind(("127.0.0.1", p + i))
    except OSError:
        continue
    finally:
        for s in held:
            s.close()
    print(p)
    sys.exit(0)
sys.exit(1)
EOF
}
# wait_vitals ERRFILE PID: wait until `propel vitals record` (PID, stderr in
# ERRFILE) has attached and said so, or has exited; at most 30 s.
wait_vitals() {
	local i
	for i in $(seq 300); do
		grep -q "^propel: vitals via" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# text_restored PID: the executable text of PID in memory equals its file's
# (every byte an agent patched is back); prints how many bytes differ
text_restored() {
	python3 "$PROPEL_TOP/tests/soak/text-diff.py" --count "$1"
}
# user_can_run USER: USER may run this build's propel and read its agent (a
# checkout inside a private directory -- mktemp -d's mode 700 -- is out of
# other users' reach: a test of another user's attach then has nothing to
# run, and skips, naming why)
user_can_run() {
	setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
		test -x "$PROPEL" -a -r "$AGENT_SO" 2>/dev/null
}
