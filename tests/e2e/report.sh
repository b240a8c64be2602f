#!/usr/bin/env bash
# tests/e2e/report.sh - `propel report` (issue 10) on real recordings of
# tests/fixtures/report/farm.c: a server, 3 forked workers and a submitter
# over pipes, 8 requests; request 4 (flow 5) is the odd one.
#
#   record/MODE/LVL      the farm runs under `propel record` (exit 0, the
#                        same requests served as untraced)
#   flows/LVL            --flows --format=json: one flow per request, in
#                        request order, pids = {server, the worker farm
#                        says served it, submitter}, start/events/duration
#                        equal to flows rebuilt from the replay JSONL by
#                        tests/e2e/report-check.py
#   flows/can-fail       the checker rejects the report with one flow's
#                        event count off by one and with two pids swapped
#   suspects/rare/LVL    --suspects: the odd flow ranks first with a score
#                        above every other, its top path ends in the rare
#                        branch (quota_exceeded); no fail-stop
#   rootcause/rare/LVL   --rootcause: anomalous = the odd flow, normal
#                        another; a path through quota_exceeded within the
#                        first five by time; delta_raw > delta_kept > 0;
#                        ranks 1..n both ways
#   rootcause/text       the text form prints the reduction line and the
#                        path
#   reference/suspects   --reference OK.db (a known-good run): every flow
#                        but the odd one scores 0 (flows 6-8 differ from
#                        the rest only as they do in a good run)
#   reference/process    --by process --reference OK.db: the worker that
#                        served the odd request ranks first
#   reference/rootcause  --rootcause --reference OK.db: the odd flow
#                        against a reference flow; quota_exceeded in the
#                        first five paths
#   reference/untraced   the session with compute (on every request's
#                        path) marked untraced by the budget (a `rate` row
#                        of table untraced, as attach writes it), the
#                        reference without: compute is left out of both,
#                        no path of the delta goes through it (only the
#                        session's left out, the reference flow's
#                        handle_request > compute was a difference)
#   rootcause/untraced-one-worker  the session alone with compute marked
#                        untraced in the odd request's worker only: left
#                        out of every worker's flows alike (it was a
#                        difference of the normal flow, in another worker)
#   failstop/hang        a worker blocked for ever (then killed): fail_stop
#                        names it, last_func read, the text stack goes
#                        through wait_for_lock; its flow ranks first and
#                        the anomalous path to wait_for_lock is within the
#                        first five by time (issue 10's bar: the normal
#                        flow's compute, at the same point of the other
#                        request, may come a few microseconds earlier)
#   failstop/crash       a worker dies of SIGSEGV: fail_stop names it and
#                        corrupt_record
#   errors/*             one line and a non-zero exit each: no session, a
#                        corrupt file, a session without events, --flow
#                        out of range, a reference of another program,
#                        --directive naming values the session did not
#                        record (tests/e2e/directives.sh: the rest); a session
#                        without communication
#                        falls back to one flow per process with a note
#   help                 --help prints the usage, exit 0
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 29
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures/report
checker=$PROPEL_TOP/tests/e2e/report-check.py
N=8
W=3
ODD=$((N / 2 + 1)) # flow id of request N/2

# pytest FILE EXPR -> exit 0 when EXPR holds, j = the JSON; n(f) is a
# function name without gcc's clone suffix (quota_exceeded.isra.0 at -O2)
pytest() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); n=lambda f: f.split(".")[0]; sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"
}
# one line on stderr, nothing on stdout, a non-zero status
one_line_error() { # NAME PATTERN CMD...
	local name=$1 pat=$2
	shift 2
	"$@" >"$t/err.out" 2>"$t/err.err"
	local rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$t/err.err")" -eq 1 ] &&
		grep -q "^propel: report: .*$pat" "$t/err.err" && [ ! -s "$t/err.out" ]; then
		pass "$name"
	else
		fail "$name" "status $rc, stderr: $(head -c 300 "$t/err.err")"
	fi
}

record() { # MODE LVL -> $t/MODE-LVL.db, .out
	local m=$1 lvl=$2 name=record/$1/$2
	if ! timeout 60 "$t/farm-$lvl" "$m" $N $W >"$t/$m-$lvl.plain" 2>&1; then
		fail "$name" "the fixture fails untraced"
		return 1
	fi
	timeout 120 "$PROPEL" record -o "$t/$m-$lvl.db" -- "$t/farm-$lvl" "$m" $N $W \
		>"$t/$m-$lvl.out" 2>"$t/$m-$lvl.err"
	local rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name" "status $rc: $(head -c 300 "$t/$m-$lvl.err")"
		return 1
	fi
	if [ "$(grep -c '^req' "$t/$m-$lvl.out")" -ne $N ]; then
		fail "$name" "not $N requests served: $(head -c 300 "$t/$m-$lvl.out")"
		return 1
	fi
	pass "$name"
}

# the first five root-cause paths (by time) hold FUNC
rc_has() { # FILE FUNC
	pytest "$1" "any('$2' in [n(f) for f in p['path'] + p['merged_last']] for p in sorted(j['paths'], key=lambda p: p['rank_time'])[:5])"
}
rc_sane() { # FILE
	pytest "$1" "j['delta_raw'] > j['delta_kept'] > 0 and len(j['paths']) == j['delta_kept'] and sorted(p['rank_time'] for p in j['paths']) == list(range(1, len(j['paths']) + 1)) and sorted(p['rank_length'] for p in j['paths']) == list(range(1, len(j['paths']) + 1)) and all(p['side'] in ('anomalous', 'normal') and p['merged_last'] and p['path'][-1] == p['merged_last'][0] for p in j['paths'])"
}

for lvl in O0 O2; do
	$cc -$lvl -g -Wall -o "$t/farm-$lvl" "$fix/farm.c" ||
		{ fail "build/farm-$lvl" "cannot build"; continue; }
	record rare $lvl || continue
	db=$t/rare-$lvl.db

	# flows
	"$PROPEL" replay --format=jsonl "$db" >"$t/rare-$lvl.jsonl"
	if ! "$PROPEL" report --flows --format=json "$db" >"$t/flows-$lvl.json" 2>"$t/flows.err"; then
		fail flows/$lvl "report: $(head -c 300 "$t/flows.err")"
	elif out=$(python3 "$checker" "$t/rare-$lvl.jsonl" "$t/flows-$lvl.json" "$t/rare-$lvl.out" 2>&1); then
		pass flows/$lvl
	else
		fail flows/$lvl "$(echo "$out" | head -5)"
	fi

	# suspects
	"$PROPEL" report --suspects --format=json "$db" >"$t/sus-$lvl.json" 2>"$t/sus.err"
	if pytest "$t/sus-$lvl.json" "j['by'] == 'flow' and j['fail_stop'] is None and len(j['scores']) == $N and j['scores'][0]['id'] == $ODD and j['scores'][0]['rank'] == 1 and all(s['score'] < j['scores'][0]['score'] for s in j['scores'][1:]) and n(j['scores'][0]['top_path'][-1]) in ('quota_exceeded', 'log_error', 'format_log_line', 'append_log', 'format_error') and [s['rank'] for s in j['scores']] == list(range(1, $N + 1))"; then
		pass suspects/rare/$lvl
	else
		fail suspects/rare/$lvl "$(head -c 600 "$t/sus-$lvl.json") $(head -c 200 "$t/sus.err")"
	fi

	# root cause
	"$PROPEL" report --rootcause --format=json "$db" >"$t/rc-$lvl.json" 2>"$t/rc.err"
	if pytest "$t/rc-$lvl.json" "j['anomalous'] == $ODD and j['normal'] != $ODD and 1 <= j['normal'] <= $N" &&
		rc_has "$t/rc-$lvl.json" quota_exceeded && rc_sane "$t/rc-$lvl.json"; then
		pass rootcause/rare/$lvl
	else
		fail rootcause/rare/$lvl "$(head -c 800 "$t/rc-$lvl.json") $(head -c 200 "$t/rc.err")"
	fi
done

if [ -f "$t/flows-O2.json" ]; then
	python3 - "$t/flows-O2.json" "$t/bad1.json" "$t/bad2.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["flows"][2]["events"] += 1
json.dump(j, open(sys.argv[2], "w"))
j["flows"][2]["events"] -= 1
a, b = j["flows"][0]["pids"], j["flows"][1]["pids"]
j["flows"][0]["pids"], j["flows"][1]["pids"] = b, a
json.dump(j, open(sys.argv[3], "w"))
EOF
	if ! python3 "$checker" "$t/rare-O2.jsonl" "$t/bad1.json" "$t/rare-O2.out" >/dev/null &&
		! python3 "$checker" "$t/rare-O2.jsonl" "$t/bad2.json" "$t/rare-O2.out" >/dev/null; then
		pass flows/can-fail
	else
		fail flows/can-fail "the checker accepted a wrong report"
	fi
	"$PROPEL" report --rootcause "$t/rare-O2.db" >"$t/rc.txt" 2>&1
	if grep -qE '^delta: [0-9]+ paths \(only in one of the two\), [0-9]+ after prefix pruning, [0-9]+ after merging$' "$t/rc.txt" &&
		grep -qE 'anomalous .*handle_request[^ ]* > check_quota[^ ]* > quota_exceeded' "$t/rc.txt"; then
		pass rootcause/text
	else
		fail rootcause/text "$(head -c 600 "$t/rc.txt")"
	fi
fi

# reference: a known-good run of the same program
if [ -f "$t/rare-O2.db" ] && record ok O2; then
	ok=$t/ok-O2.db db=$t/rare-O2.db
	"$PROPEL" report --suspects --reference "$ok" --format=json "$db" >"$t/ref.json" 2>"$t/ref.err"
	if pytest "$t/ref.json" "j['scores'][0]['id'] == $ODD and j['scores'][0]['score'] > 0 and all(s['score'] == 0 for s in j['scores'][1:])"; then
		pass reference/suspects
	else
		fail reference/suspects "$(head -c 600 "$t/ref.json") $(head -c 200 "$t/ref.err")"
	fi
	oddpid=$(awk -v r=$((N / 2)) '$1 == "req" && $2 == r { print $4 }' "$t/rare-O2.out")
	"$PROPEL" report --suspects --by process --reference "$ok" --format=json "$db" >"$t/refp.json" 2>"$t/ref.err"
	if pytest "$t/refp.json" "j['by'] == 'process' and j['scores'][0]['pid'] == $oddpid and j['scores'][0]['score'] > j['scores'][1]['score']"; then
		pass reference/process
	else
		fail reference/process "want pid $oddpid: $(head -c 600 "$t/refp.json") $(head -c 200 "$t/ref.err")"
	fi
	"$PROPEL" report --rootcause --reference "$ok" --format=json "$db" >"$t/refrc.json" 2>"$t/ref.err"
	if pytest "$t/refrc.json" "j['anomalous'] == $ODD" && rc_has "$t/refrc.json" quota_exceeded &&
		rc_sane "$t/refrc.json"; then
		pass reference/rootcause
	else
		fail reference/rootcause "$(head -c 600 "$t/refrc.json") $(head -c 200 "$t/ref.err")"
	fi
	cp "$db" "$t/untr.db"
	sqlite3 "$t/untr.db" "CREATE TABLE IF NOT EXISTS untraced(proc INTEGER,
		func INTEGER, reason TEXT, ts_ns INTEGER, insns INTEGER, rate INTEGER,
		mean_ns INTEGER, sites INTEGER); INSERT INTO untraced SELECT f.proc,
		f.id, 'rate', 1000000, 0, 50000, 20, 1 FROM functions f
		WHERE f.name LIKE 'compute%'" 2>"$t/ref.err"
	"$PROPEL" report --rootcause --reference "$ok" --format=json "$t/untr.db" >"$t/untr.json" 2>>"$t/ref.err"
	if [ "$(sqlite3 "$t/untr.db" "SELECT count(*) FROM untraced")" -gt 0 ] &&
		pytest "$t/untr.json" "j['anomalous'] == $ODD and not any(n(f) == 'compute' for p in j['paths'] for f in p['path'] + p['merged_last'])" &&
		rc_has "$t/untr.json" quota_exceeded; then
		pass reference/untraced
	else
		fail reference/untraced "$(head -c 600 "$t/untr.json") $(head -c 200 "$t/ref.err")"
	fi
	# within one session alike: a function the budget untraced in one
	# worker only (the odd request's) is left out of every worker's flows
	cp "$db" "$t/untr1.db"
	sqlite3 "$t/untr1.db" "CREATE TABLE IF NOT EXISTS untraced(proc INTEGER,
		func INTEGER, reason TEXT, ts_ns INTEGER, insns INTEGER, rate INTEGER,
		mean_ns INTEGER, sites INTEGER); INSERT INTO untraced SELECT f.proc,
		f.id, 'rate', 1000000, 0, 50000, 20, 1 FROM functions f
		JOIN processes p ON p.id = f.proc
		WHERE f.name LIKE 'compute%' AND p.pid = ${oddpid:-0}" 2>"$t/ref.err"
	"$PROPEL" report --rootcause --format=json "$t/untr1.db" >"$t/untr1.json" 2>>"$t/ref.err"
	if [ "$(sqlite3 "$t/untr1.db" "SELECT count(*) FROM untraced")" -gt 0 ] &&
		pytest "$t/untr1.json" "j['anomalous'] == $ODD and not any(n(f) == 'compute' for p in j['paths'] for f in p['path'] + p['merged_last'])" &&
		rc_has "$t/untr1.json" quota_exceeded; then
		pass rootcause/untraced-one-worker
	else
		fail rootcause/untraced-one-worker "$(head -c 600 "$t/untr1.json") $(head -c 200 "$t/ref.err")"
	fi
fi

# fail-stop: a hung worker, a crashed worker
for m in hang crash; do
	[ -x "$t/farm-O2" ] || break
	record $m O2 || continue
	db=$t/$m-O2.db
	failed=$(awk '$1 == "failed" { print $2 }' "$t/$m-O2.out")
	want=read
	[ $m = crash ] && want=corrupt_record
	"$PROPEL" report --suspects --format=json "$db" >"$t/$m.json" 2>"$t/$m.rerr"
	"$PROPEL" report --suspects "$db" >"$t/$m.txt" 2>&1
	if [ -n "$failed" ] && pytest "$t/$m.json" "j['fail_stop'] is not None and j['fail_stop']['pid'] == $failed and j['fail_stop']['tid'] == $failed and n(j['fail_stop']['last_func']) == '$want' and j['fail_stop']['ts_ns'] > 0 and j['scores'][0]['id'] == $ODD" &&
		grep -qE "^fail-stop: pid $failed .*last in $want(\.[a-z]+\.[0-9]+)*\$" "$t/$m.txt" &&
		grep -qE "^  stack: main > worker_loop > handle_request > .*$want(\.[a-z]+\.[0-9]+)*\$" "$t/$m.txt"; then
		pass failstop/$m
	else
		fail failstop/$m "failed '$failed': $(head -c 500 "$t/$m.json") $(head -c 300 "$t/$m.txt")"
	fi
	if [ $m = hang ]; then
		"$PROPEL" report --rootcause --format=json "$db" >"$t/hrc.json" 2>/dev/null
		if pytest "$t/hrc.json" "j['anomalous'] == $ODD and any(p['side'] == 'anomalous' and p['rank_time'] <= 5 and 'wait_for_lock' in [n(f) for f in p['path'] + p['merged_last']] for p in j['paths'])" &&
			grep -qE "wait_for_lock[^ ]* > read" "$t/$m.txt"; then
			pass failstop/hang-rootcause
		else
			fail failstop/hang-rootcause "$(head -c 1500 "$t/hrc.json")"
		fi
	fi
done

# errors: one line each
one_line_error errors/no-session "No such file" "$PROPEL" report --flows "$t/none.db"
printf 'not a session at all\n' >"$t/corrupt.db"
one_line_error errors/corrupt "corrupt.db" "$PROPEL" report --suspects "$t/corrupt.db"
if [ -f "$t/rare-O2.db" ]; then
	one_line_error errors/flow-range "--flow 99: no such flow" \
		"$PROPEL" report --rootcause --flow 99 "$t/rare-O2.db"
	one_line_error errors/directive "--directive 'enQ:entry,arg0 -> deQ:exit,ret': .* did not record" \
		"$PROPEL" report --flows --directive 'enQ:entry,arg0 -> deQ:exit,ret' "$t/rare-O2.db"
	cp "$t/rare-O2.db" "$t/empty.db"
	sqlite3 "$t/empty.db" "DELETE FROM chunk_data; DELETE FROM chunks; DELETE FROM events;" 2>/dev/null
	one_line_error errors/empty "no events" "$PROPEL" report --flows "$t/empty.db"
fi
cat >"$t/alone.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) static int work(int x) { return x * 2; }
int main(void) { printf("%d\n", work(21)); return 0; }
EOF
if $cc -O0 -g -o "$t/alone" "$t/alone.c" &&
	timeout 60 "$PROPEL" record -o "$t/alone.db" -- "$t/alone" >/dev/null 2>&1; then
	"$PROPEL" report --flows --format=json "$t/alone.db" >"$t/alone.json" 2>"$t/alone.err"
	rc=$?
	if [ $rc -eq 0 ] && [ "$(wc -l <"$t/alone.err")" -eq 1 ] &&
		grep -q "no communication recorded; one flow per process" "$t/alone.err" &&
		pytest "$t/alone.json" "len(j['flows']) == 1 and j['flows'][0]['events'] > 0"; then
		pass errors/no-communication
	else
		fail errors/no-communication "status $rc: $(head -c 300 "$t/alone.err") $(head -c 300 "$t/alone.json")"
	fi
	[ -f "$t/rare-O2.db" ] &&
		one_line_error errors/other-program "a session of another program" \
			"$PROPEL" report --suspects --reference "$t/alone.db" "$t/rare-O2.db"
else
	fail errors/no-communication "cannot record a lone program"
fi

if "$PROPEL" report --help >"$t/help" 2>&1 && grep -q '^usage: propel report --flows' "$t/help" &&
	grep -q -- '--reference DB' "$t/help"; then
	pass help
else
	fail help "$(head -c 300 "$t/help")"
fi
