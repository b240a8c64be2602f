#!/usr/bin/env bash
# tests/e2e/flows-auto.sh - issue 32 items 1-3 on two differently shaped
# systems of tests/apps: the batch system (batch-*: a submitter sends
# several jobs over one TCP connection to a scheduler that forks a shadow
# per job, the Condor case) and the distributed scenario (dist-*: a client
# that waits for each reply, a front end with a child, a back end, a
# logger and a UDP monitor).  The daemons run untraced; propel follows.
#
#   stdio/pipe         `record --follow -- batch-submit | cat`: cat is not
#                      traced, one line "not following pipe:N: propel's own
#                      output" (once), the jobs done
#   stdio/harness      a python3 harness reading propel's output through a
#                      pipe: the harness (propel's parent) is not traced,
#                      the line is said
#   stdio/follow-stdio `--follow-stdio ... | cat`: cat is traced, no line
#   stdio/kept         the session keeps the pipe (meta stdio_chans =
#                      pipe:N of the line) and report's rule is still the
#                      client's
#   batch/flows        no --start: rule "client", one flow per job starting
#                      in queue_job with the events and pids of `--start
#                      queue_job`'s, and one more for the end-of-cluster
#                      marker (batch_write_all, submitter and schedd only)
#                      whose events are the rest of --start's last flow
#   batch/crash-suspects  a shadow crashes (its job runs twice), no
#                      --start, no reference: fail_stop names it in
#                      shadow_crash and its flow (3) ranks first, "why":
#                      "fail-stop"; --start queue_job ranks the same
#   batch/crash-rootcause  --rootcause, no --start: anomalous 3,
#                      shadow_crash within the first five paths
#   batch/steady       the good run, unsupervised: no fail-stop (the idle
#                      daemons are not), one-time paths left out of the
#                      first job's profile: the first job's flow scores 0
#                      and ranks below every flow that scores above 0
#   batch/stall        the log daemon stops reading the startd, no --start,
#                      no reference: fail_stop is the startd blocked in its
#                      write, the stalled job's flow (2) ranks first
#   dist/flows         `record --follow -- dist-client -n 8`, no --start:
#                      rule "client", 8 flows starting in client_request,
#                      the same as --start client_request (events, pids)
#   dist/steady        unsupervised suspects: one-time paths left out, the
#                      first request is not ranked first
#   dist/server-attach `attach --follow` to the front end while an
#                      untraced client sends 6 requests: rule "server", a
#                      flow per request, each through the front end and the
#                      back end
#   flow-map/auto      the exports' flow map (engine/flow-map.c, on the
#                      cuts; the client rule's on every event) gives every
#                      event the flow report gives it, on the client-rule
#                      and the server-rule sessions (tests/unit/test-flow-map)
# propel-test: takes 30
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 13
t=$(tmpdir)
cleanup() {
	for d in "$t"/b-* ; do
		[ -f "$d/pids" ] && "$PROPEL_TOP/tests/apps/batch-run.sh" stop "$d" >/dev/null 2>&1
	done
	[ -f "$t/dist/pids" ] && bash "$PROPEL_TOP/tests/apps/dist-run.sh" stop "$t/dist" >/dev/null 2>&1
	[ -f "$t/dsrv/pids" ] && bash "$PROPEL_TOP/tests/apps/dist-run.sh" stop "$t/dsrv" >/dev/null 2>&1
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1
brun=$PROPEL_TOP/tests/apps/batch-run.sh
drun=$PROPEL_TOP/tests/apps/dist-run.sh
apps=$PROPEL_TOP/$O/apps

# j FILE EXPR: EXPR holds of the JSON in FILE (j); n(f) strips clone suffixes
j() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); n=lambda f: (f or "").split(".")[0]; sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"
}
rep() { # DB OUT ARGS...
	local db=$1 out=$2
	shift 2
	"$PROPEL" report --format=json "$@" "$db" >"$out" 2>"$out.err"
}
exes() { sqlite3 "$1" "SELECT exe FROM processes" 2>/dev/null | tr '\n' ' '; }

# ---- item 1: propel's own stdio ----
d=$t/b-stdio
if BATCH_FAULT=none "$brun" start "$d" >/dev/null; then
	sched=$(cat "$d/schedd")
	BATCH_FAULT=none timeout 120 "$PROPEL" record --follow -o "$t/p.db" -- \
		"$apps/batch-submit" "$sched" 3 "$d/out" 2>"$t/p.err" | cat >"$t/p.out"
	nl=$(grep -c "not following pipe:[0-9]*: propel's own output" "$t/p.err")
	if [ "$nl" = 1 ] && ! exes "$t/p.db" | grep -q '/cat ' &&
		grep -q '^cluster 1: 3 done' "$t/p.out" && exes "$t/p.db" | grep -q batch-schedd; then
		pass stdio/pipe
	else
		fail stdio/pipe "$nl lines; traced: $(exes "$t/p.db"); $(head -c 300 "$t/p.err")"
	fi
	python3 - "$PROPEL" "$t/h.db" "$apps/batch-submit" "$sched" "$d/out" >"$t/h.out" 2>"$t/h.err" <<'EOF'
import subprocess, sys
propel, db, submit, sched, out = sys.argv[1:]
r = subprocess.run([propel, "record", "--follow", "-o", db, "--", submit, sched, "2", out],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stdout.write(r.stdout.decode()); sys.stderr.write(r.stderr.decode())
sys.exit(r.returncode)
EOF
	hrc=$?
	if [ $hrc = 0 ] && grep -q "not following pipe:[0-9]*: propel's own output" "$t/h.err" &&
		! exes "$t/h.db" | grep -q python3; then
		pass stdio/harness
	else
		fail stdio/harness "status $hrc, traced: $(exes "$t/h.db"); $(head -c 300 "$t/h.err")"
	fi
	BATCH_FAULT=none timeout 120 "$PROPEL" record --follow --follow-stdio -o "$t/f.db" -- \
		"$apps/batch-submit" "$sched" 3 "$d/out" 2>"$t/f.err" | cat >"$t/f.out"
	if exes "$t/f.db" | grep -q '/cat ' && ! grep -q "not following" "$t/f.err"; then
		pass stdio/follow-stdio
	else
		fail stdio/follow-stdio "traced: $(exes "$t/f.db"); $(head -c 300 "$t/f.err")"
	fi
	chan=$(grep -o "not following pipe:[0-9]*" "$t/p.err" | head -1 | sed 's/not following //')
	kept=$(sqlite3 "$t/p.db" "SELECT value FROM meta WHERE key='stdio_chans'" 2>&1)
	rep "$t/p.db" "$t/p.flows" --flows
	if [ -n "$chan" ] && [ "$kept" = "$chan" ] && j "$t/p.flows" "j['rule'] == 'client' and len(j['flows']) == 4"; then
		pass stdio/kept
	else
		fail stdio/kept "line '$chan', meta '$kept': $(head -c 300 "$t/p.flows")"
	fi
	"$brun" stop "$d" >/dev/null 2>&1
else
	for c in stdio/pipe stdio/harness stdio/follow-stdio stdio/kept; do
		fail $c "the batch daemons did not start"
	done
fi

# ---- items 2, 3 on the batch system ----
N=5
record_batch() { # MODE -> $t/MODE.db
	local m=$1 d=$t/b-$1
	BATCH_FAULT=$m "$brun" start "$d" >/dev/null || return 1
	BATCH_FAULT=$m timeout 120 "$PROPEL" record --follow -o "$t/$m.db" -- \
		"$apps/batch-submit" "$(cat "$d/schedd")" $N "$d/out" >"$t/$m.out" 2>"$t/$m.err"
	"$brun" stop "$d" >/dev/null 2>&1
	mv "$d/pids" "$d/pids.keep"
	[ -s "$t/$m.db" ]
}

if record_batch none; then
	rep "$t/none.db" "$t/none.auto" --flows
	rep "$t/none.db" "$t/none.func" --flows --start queue_job
	sub=$(sqlite3 "$t/none.db" "SELECT pid FROM processes WHERE exe LIKE '%batch-submit' LIMIT 1")
	sch=$(awk '$1 == "schedd" { print $2 }' "$t/b-none/pids.keep")
	if python3 - "$t/none.auto" "$t/none.func" "$sub" "$sch" $N <<'EOF'
import json, sys
a = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
sub, sch, n = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
A, F = a["flows"], f["flows"]
ok = a["rule"] == "client" and a["rule_pid"] == sub and f["rule"] == "start-func"
ok = ok and len(A) == n + 1 and len(F) == n
for i in range(n - 1):
    ok = ok and A[i]["start"] == F[i]["start"] and A[i]["pids"] == F[i]["pids"] and A[i]["events"] == F[i]["events"]
ok = ok and A[n - 1]["start"] == F[n - 1]["start"]
ok = ok and A[n - 1]["events"] + A[n]["events"] == F[n - 1]["events"]
ok = ok and A[n]["start"]["func"].startswith("batch_write_all") and set(A[n]["pids"]) <= {sub, sch}
sys.exit(0 if ok else 1)
EOF
	then
		pass batch/flows
	else
		fail batch/flows "auto: $(head -c 500 "$t/none.auto") -- start: $(head -c 300 "$t/none.func")"
	fi
	rep "$t/none.db" "$t/none.sus" --suspects
	if j "$t/none.sus" "j['fail_stop'] is None and j['steady_dropped'] > 0 and [s['score'] for s in j['scores'] if s['id'] == 1] == [0] and all(s['score'] == 0 for s in j['scores'] if s['rank'] > [x['rank'] for x in j['scores'] if x['id'] == 1][0])"; then
		pass batch/steady
	else
		fail batch/steady "$(tr -d "\n" <"$t/none.sus" | head -c 1500)"
	fi
else
	fail batch/flows "record: $(head -c 300 "$t/none.err")"
	fail batch/steady "no recording"
fi

if record_batch crash; then
	rep "$t/crash.db" "$t/crash.sus" --suspects
	rep "$t/crash.db" "$t/crash.sus2" --suspects --start queue_job
	if j "$t/crash.sus" "j['fail_stop'] is not None and n(j['fail_stop']['last_func']) == 'shadow_crash' and j['scores'][0]['id'] == 3 and j['scores'][0]['why'] == 'fail-stop' and all(s['why'] == 'k-NN' for s in j['scores'][1:])" &&
		j "$t/crash.sus2" "j['scores'][0]['id'] == 3 and j['scores'][0]['why'] == 'fail-stop'"; then
		pass batch/crash-suspects
	else
		fail batch/crash-suspects "$(head -c 600 "$t/crash.sus") -- $(head -c 200 "$t/crash.sus2")"
	fi
	rep "$t/crash.db" "$t/crash.rc" --rootcause
	if j "$t/crash.rc" "j['anomalous'] == 3 and any('shadow_crash' in [n(f) for f in p['path'] + p['merged_last']] for p in sorted(j['paths'], key=lambda p: p['rank_time'])[:5])"; then
		pass batch/crash-rootcause
	else
		fail batch/crash-rootcause "$(head -c 600 "$t/crash.rc")"
	fi
else
	fail batch/crash-suspects "record: $(head -c 300 "$t/crash.err")"
	fail batch/crash-rootcause "no recording"
fi

if record_batch stall; then
	startd=$(awk '$1 == "startd" { print $2 }' "$t/b-stall/pids.keep")
	rep "$t/stall.db" "$t/stall.sus" --suspects
	if j "$t/stall.sus" "j['fail_stop'] is not None and j['fail_stop']['pid'] == int('${startd:-0}') and j['scores'][0]['id'] == 2 and j['scores'][0]['why'] == 'fail-stop'"; then
		pass batch/stall
	else
		fail batch/stall "startd $startd: $(head -c 600 "$t/stall.sus")"
	fi
else
	fail batch/stall "record: $(head -c 300 "$t/stall.err")"
fi

# ---- items 2, 3 on the distributed scenario ----
d=$t/dist
if bash "$drun" start "$d" >/dev/null 2>&1; then
	timeout 120 "$PROPEL" record --follow -o "$t/dist.db" -- \
		"$apps/dist-client" "$(cat "$d/front")" -n 8 >"$t/dist.out" 2>"$t/dist.err"
	bash "$drun" stop "$d" >/dev/null 2>&1
	rm -f "$d/pids"
	rep "$t/dist.db" "$t/dist.auto" --flows
	rep "$t/dist.db" "$t/dist.func" --flows --start client_request
	if j "$t/dist.auto" "j['rule'] == 'client' and len(j['flows']) == 8 and all(f['start']['func'] == 'client_request' for f in j['flows'])" &&
		python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["flows"]; f=json.load(open(sys.argv[2]))["flows"]; sys.exit(0 if [(x["start"],x["pids"],x["events"]) for x in a] == [(x["start"],x["pids"],x["events"]) for x in f] else 1)' "$t/dist.auto" "$t/dist.func"; then
		pass dist/flows
	else
		fail dist/flows "$(head -c 500 "$t/dist.auto") -- $(head -c 200 "$t/dist.err")"
	fi
	rep "$t/dist.db" "$t/dist.sus" --suspects
	if j "$t/dist.sus" "j['steady_dropped'] > 0 and j['scores'][0]['id'] != 1"; then
		pass dist/steady
	else
		fail dist/steady "$(head -c 600 "$t/dist.sus")"
	fi
else
	fail dist/flows "the dist daemons did not start"
	fail dist/steady "the dist daemons did not start"
fi

d=$t/dsrv
if bash "$drun" start "$d" >/dev/null 2>&1; then
	front=$(awk '$1 == "front" { print $2 }' "$d/pids")
	back=$(awk '$1 == "back" { print $2 }' "$d/pids")
	timeout 120 "$PROPEL" attach --follow --duration 8 -o "$t/srv.db" "$front" >"$t/srv.out" 2>&1 &
	apid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q libpropel-agent "/proc/$front/maps" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.3
	bash "$drun" client "$d" -n 6 >"$t/srv.cl" 2>&1
	crc=$?
	wait $apid
	arc=$?
	bash "$drun" stop "$d" >/dev/null 2>&1
	rm -f "$d/pids"
	rep "$t/srv.db" "$t/srv.flows" --flows
	if [ $crc = 0 ] && [ $arc = 0 ] &&
		j "$t/srv.flows" "j['rule'] == 'server' and j['rule_pid'] == int('${front:-0}') and len(j['flows']) == 6 and all(int('${back:-0}') in f['pids'] for f in j['flows'])"; then
		pass dist/server-attach
	else
		fail dist/server-attach "client $crc attach $arc front $front back $back: $(head -c 500 "$t/srv.flows") $(head -c 200 "$t/srv.out")"
	fi
else
	fail dist/server-attach "the dist daemons did not start"
fi

fm=$PROPEL_TOP/$O/tests/unit/test-flow-map
if [ -s "$t/dist.db" ] && [ -s "$t/srv.db" ] && "$fm" "$t/dist.db" >"$t/fm1" 2>&1 &&
	"$fm" "$t/srv.db" >"$t/fm2" 2>&1; then
	pass flow-map/auto
else
	fail flow-map/auto "$(grep FAIL "$t/fm1" "$t/fm2" 2>/dev/null | head -3)"
fi
