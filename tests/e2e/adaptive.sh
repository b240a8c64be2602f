#!/usr/bin/env bash
# tests/e2e/adaptive.sh - variance-driven instrumentation (issue 34 item 2:
# `attach --adaptive`, inject/agent/adaptive.c; `report --variance`,
# engine/variance.c) on tests/apps/vserver-gen.py's server (513 functions,
# a request handler tree 8 levels deep), under its own client's load:
#   fault/attach     attach --adaptive --duration 30 exits 0 (the fault:
#                    s1_lrlrlr, depth 7 below handle_request, 5 ms more
#                    in 1 request of 20)
#   fault/first      report --variance --format=json names s1_lrlrlr
#                    first, with a share above 0.5
#   fault/in-time    it was traced within 60 s of the attach
#                    (patched_at_ns)
#   fault/deepened   ... and found by deepening, not traced from the
#                    start: its patched_at_ns is at least one controller
#                    period (ADAPT_CYCLE_MS, 2 s) after the attach, and it
#                    was enabled by the controller (level > ADAPT_DEPTH0:
#                    a + line in the session's table adaptive, no p line)
#                    -- a frame on a stack at attach deep in a request
#                    made a root traced the fault's subtree from the start
#   fault/few        at most 15% of the program's functions ever traced
#                    (patched / total)
#   fault/shape      the JSON has groups (path, flows, cv, p95_ns) and
#                    functions (func, share, calls, patched_at_ns)
#   clean/names-none the same server without the fault: no function with
#                    a share above noise (0.2, analysis/variance.h)
#   options/refused  --adaptive with --all, and record --adaptive, are
#                    refused with one line and exit 2
# Needs root (ptrace of a server).  About 80 s.
# propel-test: takes 80
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 8
need_root || exit 0
t=$(tmpdir)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT

python3 "$PROPEL_TOP/tests/apps/vserver-gen.py" >"$t/vserver.c" &&
	gcc -O2 -g -o "$t/vserver" "$t/vserver.c" || {
	echo "FAIL vserver: cannot build tests/apps/vserver-gen.py's server"
	exit 1
}

# run NAME [FAULT]: the server under load, attached --adaptive 30 s
run() {
	local port=$((20000 + RANDOM % 20000))
	"$t/vserver" serve $port ${2:-} >"$t/$1.srv" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		grep -q ready "$t/$1.srv" 2>/dev/null && break
		sleep 0.05
	done
	"$t/vserver" client $port 34 >"$t/$1.cli" 2>&1 &
	local cli=$!
	sleep 1
	"$PROPEL" attach --adaptive -o "$t/$1.db" --duration 30 "$srv" \
		>"$t/$1.attach" 2>&1
	local rc=$?
	wait $cli
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	srv=
	"$PROPEL" report --variance "$t/$1.db" | sed 's/^/  /' | head -12
	"$PROPEL" report --variance --format=json "$t/$1.db" >"$t/$1.json"
	return $rc
}

run fault s1_lrlrlr
check fault/attach test $? -eq 0
q() { python3 -c "import json,sys; d=json.load(open('$t/$1.json')); sys.exit(0 if ($2) else 1)"; }
check fault/first q fault "d['functions'] and d['functions'][0]['func'] == 's1_lrlrlr' and d['functions'][0]['share'] > 0.5"
check fault/in-time q fault "d['functions'][0]['patched_at_ns'] is not None and d['functions'][0]['patched_at_ns'] <= 60e9"
# how the function came to be traced: "+" (the controller), "p" (near a
# root), "+,p" (both)
how() {
	python3 - "$t/$1.db" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(",".join(sorted(r[0] for r in db.execute(
    "SELECT DISTINCT a.what FROM adaptive a JOIN functions f ON f.id = a.func"
    " WHERE f.name = ? AND a.what IN ('p', '+')", (sys.argv[2],)))))
PY
}
check fault/deepened eval "q fault \"d['functions'] and d['functions'][0]['func'] == 's1_lrlrlr' and (d['functions'][0]['patched_at_ns'] or 0) >= 2e9\" && [ \"\$(how fault s1_lrlrlr)\" = + ]"
check fault/few q fault "d['total'] >= 300 and 0 < d['patched'] <= 0.15 * d['total']"
check fault/shape q fault "all(set(g) >= {'path','flows','cv','p95_ns'} for g in d['groups']) and all(set(f) >= {'func','share','calls','patched_at_ns'} for f in d['functions'])"

run clean
check clean/names-none q clean "d['groups'] and not [f for f in d['functions'] if f['share'] >= 0.2]"

"$PROPEL" attach --adaptive --all 1 >"$t/o1" 2>&1; r1=$?
"$PROPEL" record --adaptive -- true >"$t/o2" 2>&1; r2=$?
check options/refused eval "[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ \$(wc -l <'$t/o1') -eq 1 ] && [ \$(wc -l <'$t/o2') -eq 1 ]"
