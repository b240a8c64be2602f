# tests/lib.sh - helpers for end-to-end test scripts (source it).
#   pass NAME | fail NAME WHY | skip NAME WHY | need_root NAME
#   check NAME CMD...        pass if CMD succeeds, fail otherwise
#   expect_diff NAME EXPECTED ACTUAL   pass if files are equal (diff shown)
: "${PROPEL_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${O:=build}"
: "${PROPEL:=$PROPEL_TOP/$O/propel}"
export O
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
is_root() { [ "$(id -u)" -eq 0 ]; }
tmpdir() { mktemp -d "${TMPDIR:-/tmp}/propel-test.XXXXXX"; }
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
