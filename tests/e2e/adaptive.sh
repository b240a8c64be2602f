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
#                    a share above noise (0.2, share/variance-stat.h)
#   batch/deepened   another shape: the generator's --stages 2 --fanout 3
#                    --depth 5 tree (740 functions) run by a batch loop
#                    in main (`vserver batch`: no socket, the loop two
#                    calls from main), the fault s1_mrlml at depth 6:
#                    the controller enabled it (a + line, no p line) at
#                    least one period after the attach and within 60 s,
#                    and kept it (not pruned after), with at most 15% of
#                    the functions ever traced (the report's flows are
#                    the whole loop there, one flow: the session's
#                    adaptive table is the evidence)
#   options/refused  --adaptive with --all, and record --adaptive, are
#                    refused with one line and exit 2
# The three sessions (fault, clean, batch: each its own program, port and
# files) are recorded side by side, then judged: 30 s of waiting once, not
# three times.  Needs root (ptrace of a server).  About 45 s.
# propel-test: takes 45
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 9
need_root || exit 0
t=$(tmpdir)
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	rm -rf "$t"
}
trap cleanup EXIT

python3 "$PROPEL_TOP/tests/apps/vserver-gen.py" >"$t/vserver.c" &&
	gcc -O2 -g -o "$t/vserver" "$t/vserver.c" &&
	python3 "$PROPEL_TOP/tests/apps/vserver-gen.py" --stages 2 --fanout 3 \
		--depth 5 >"$t/vbatch.c" &&
	gcc -O2 -g -o "$t/vbatch" "$t/vbatch.c" || {
	echo "FAIL vserver: cannot build tests/apps/vserver-gen.py's programs"
	exit 1
}

# run NAME [FAULT]: the server under load, attached --adaptive 30 s; the
# attach's status in $t/NAME.rc, what to print in $t/NAME.out
run() {
	local port srv cli rc
	port=$(free_port 1) # (a random port collided with another suite's)
	"$t/vserver" serve $port ${2:-} >"$t/$1.srv" 2>&1 &
	srv=$!
	trap 'kill $srv 2>/dev/null' EXIT
	for _ in $(seq 100); do
		grep -q ready "$t/$1.srv" 2>/dev/null && break
		sleep 0.05
	done
	"$t/vserver" client $port 34 >"$t/$1.cli" 2>&1 &
	cli=$!
	sleep 1
	"$PROPEL" attach --adaptive -o "$t/$1.db" --duration 30 "$srv" \
		>"$t/$1.attach" 2>&1
	rc=$?
	[ $rc -eq 0 ] || sed "s/^/  $1 attach ($rc): /" "$t/$1.attach" "$t/$1.srv"
	wait $cli
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	"$PROPEL" report --variance "$t/$1.db" | sed 's/^/  /' | head -12
	"$PROPEL" report --variance --format=json "$t/$1.db" >"$t/$1.json"
	echo $rc >"$t/$1.rc"
}

# the batch shape: the loop runs 34 s, attached 30 s from its second
batch() {
	local srv
	"$t/vbatch" batch 34 s1_mrlml >"$t/batch.out" 2>&1 &
	srv=$!
	trap 'kill $srv 2>/dev/null' EXIT
	sleep 1
	"$PROPEL" attach --adaptive -o "$t/batch.db" --duration 30 "$srv" \
		>"$t/batch.attach" 2>&1
	wait $srv
}

run fault s1_lrlrlr >"$t/fault.out" 2>&1 &
run clean >"$t/clean.out" 2>&1 &
batch >"$t/batch.log" 2>&1 &
wait
cat "$t/fault.out"
check fault/attach test "$(cat "$t/fault.rc" 2>/dev/null)" = 0
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

cat "$t/clean.out"
check clean/names-none q clean "d['groups'] and not [f for f in d['functions'] if f['share'] >= 0.2]"

cat "$t/batch.log"
batch_ok() {
	python3 - "$t/batch.db" s1_mrlml <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT a.what, a.ts_ns FROM adaptive a JOIN functions f"
                  " ON f.id = a.func WHERE f.name = ? ORDER BY a.ts_ns, a.rowid",
                  (sys.argv[2],)).fetchall()
total = db.execute("SELECT sum(level) FROM adaptive WHERE what = 't'").fetchone()[0]
ever = db.execute("SELECT count(DISTINCT func) FROM adaptive"
                  " WHERE what IN ('p', '+')").fetchone()[0]
first = [ts for w, ts in rows if w == '+']
print("batch: %s; %d of %s functions ever traced" % (rows, ever, total))
sys.exit(0 if first and not [w for w, _ in rows if w == 'p'] and
         2e9 <= first[0] <= 60e9 and rows[-1][0] == '+' and
         total >= 300 and ever <= 0.15 * total else 1)
PY
}
check batch/deepened batch_ok

"$PROPEL" attach --adaptive --all 1 >"$t/o1" 2>&1; r1=$?
"$PROPEL" record --adaptive -- true >"$t/o2" 2>&1; r2=$?
check options/refused eval "[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ \$(wc -l <'$t/o1') -eq 1 ] && [ \$(wc -l <'$t/o2') -eq 1 ]"
