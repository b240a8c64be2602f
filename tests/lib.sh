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
# text_restored PID: the executable text of PID in memory equals its file's
# (every byte an agent patched is back); prints how many bytes differ
text_restored() {
	python3 - "$1" <<'EOF'
import sys, os
pid = sys.argv[1]
exe = os.readlink(f"/proc/{pid}/exe")
diff = total = 0
with open(f"/proc/{pid}/maps") as m, open(f"/proc/{pid}/mem", "rb") as mem, open(exe, "rb") as f:
    for line in m:
        p = line.split()
        if len(p) < 6 or p[5] != exe or "x" not in p[1]:
            continue
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        off = int(p[2], 16)
        mem.seek(lo); a = mem.read(hi - lo)
        f.seek(off); b = f.read(hi - lo)
        n = min(len(a), len(b))
        total += n
        diff += sum(1 for i in range(n) if a[i] != b[i])
print(f"{diff} of {total} bytes differ")
sys.exit(1 if diff or not total else 0)
EOF
}
