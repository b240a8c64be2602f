#!/usr/bin/env bash
# tests/e2e/vitals-trace.sh - vital signs beside a trace: `propel record
# --vitals -- offcpu DIR` (tests/fixtures/vitals/offcpu.c sleeps, reads a
# slow pipe, fsyncs, waits on a contended mutex) stores off-CPU spans that
# replay jsonl puts inside each of those calls, on the right thread, with
# the right reason (tests/e2e/vitals-trace-check.py); only the traced
# processes unless --vitals=all; samples of the same processes; attach
# --vitals; and bad input: not root, BPF refused, tracefs missing, a bad
# scope -- the trace still records, with one line saying what is missing.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 31
d=$(tmpdir); chmod 777 "$d"; trap 'kill $bg 2>/dev/null; rm -rf "$d"' EXIT
bg=
check=$PROPEL_TOP/tests/e2e/vitals-trace-check.py
gcc -O0 -g -o "$d/offcpu" "$PROPEL_TOP/tests/fixtures/vitals/offcpu.c" -lpthread ||
	{ fail vitals-trace/build "gcc failed"; exit 1; }

"$PROPEL" record -o "$d/x.db" --vitals=host -- /bin/true 2>"$d/e"
[ $? -eq 2 ] && grep -q "^propel: record: --vitals: unknown scope" "$d/e" &&
	pass vitals-trace/bad-scope || fail vitals-trace/bad-scope "$(cat "$d/e")"

need_bpf vitals-trace

# a process that is not traced, sleeping all along
(while :; do sleep 0.02; done) & bg=$!

(cd "$d" && "$PROPEL" record -o "$d/s.db" --vitals -- "$d/offcpu" "$d") >"$d/out" 2>"$d/e"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^propel: record: --vitals: off-CPU spans of the traced processes' "$d/e")" = 1 ] &&
	pass vitals-trace/record || fail vitals-trace/record "exit $rc: $(cat "$d/e")"
"$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" ||
	fail vitals-trace/replay "replay failed"
checker vitals-trace/record-check python3 "$check" record "$d/s.jsonl"

# the same facts in sqlite: only the traced processes (the fixture and its
# child), and the vital-sign samples of those only
pids=$(python3 -c '
import json,sys
print(" ".join(sorted({str(json.loads(l)["pid"]) for l in open(sys.argv[1])})))' "$d/s.jsonl")
checker vitals-trace/only-traced python3 - "$d/s.db" "$pids" "$bg" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
traced = set(int(p) for p in sys.argv[2].split())
span_pids = {r[0] for r in db.execute("SELECT DISTINCT pid FROM offcpu")}
ok = span_pids and span_pids <= traced
print(("PASS" if ok else "FAIL") + " vitals-trace/only-traced-spans" +
      ("" if ok else ": spans of %s, traced %s" % (span_pids, traced)))
smp = {r[0] for r in db.execute("SELECT DISTINCT pid FROM vitals_samples")}
ok = smp and smp <= traced
print(("PASS" if ok else "FAIL") + " vitals-trace/only-traced-samples" +
      ("" if ok else ": samples of %s, traced %s" % (smp, traced)))
bgpid = int(sys.argv[3])
ok = not db.execute("SELECT 1 FROM offcpu WHERE pid = ?", (bgpid,)).fetchone()
print(("PASS" if ok else "FAIL") + " vitals-trace/untraced-sleeper-absent")
PY

# --vitals=all: the untraced sleeper (its sleep children) is there too
(cd "$d" && "$PROPEL" record -o "$d/all.db" --vitals=all -- "$d/offcpu" "$d") >/dev/null 2>"$d/e"
checker vitals-trace/all-has-others python3 - "$d/all.db" "$bg" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
bg = int(sys.argv[2])
# the loop's own shell, or the sleep processes it forks
n = db.execute("SELECT count(*) FROM offcpu WHERE pid != (SELECT min(pid) FROM processes)"
               " AND pid NOT IN (SELECT pid FROM processes)").fetchone()[0]
ok = n > 0
print(("PASS" if ok else "FAIL") + " vitals-trace/all-has-others" +
      ("" if ok else ": no span of an untraced process"))
PY
grep -q "off-CPU spans of every process" "$d/e" && pass vitals-trace/all-says ||
	fail vitals-trace/all-says "$(cat "$d/e")"

# without --vitals: nothing of the kind
(cd "$d" && "$PROPEL" record -o "$d/plain.db" -- "$d/offcpu" "$d") >/dev/null 2>&1
"$PROPEL" replay --format=jsonl "$d/plain.db" | grepq '"kind":"offcpu"' &&
	fail vitals-trace/plain-none "offcpu events without --vitals" ||
	pass vitals-trace/plain-none

# attach --vitals to a process that naps (60 ms each) until the attach's
# second is over: as many naps as a minute holds, killed after the attach
# (40 naps, 2.4 s, ended before an injection slowed by a loaded machine
# had traced 5 of them)
"$d/offcpu" "$d" loop 1000 >"$d/loop.out" & lp=$!
sleep 0.3
"$PROPEL" attach -o "$d/att.db" --vitals --duration 1 $lp 2>"$d/e"
kill $lp 2>/dev/null
wait $lp
grep -q "^propel: attach: --vitals: off-CPU spans of the traced processes" "$d/e" &&
	pass vitals-trace/attach || fail vitals-trace/attach "$(cat "$d/e")"
"$PROPEL" replay --format=jsonl "$d/att.db" >"$d/att.jsonl"
checker vitals-trace/loop-check python3 "$check" loop "$d/att.jsonl" 5

# bad input: the trace records without the kernel's view, one line says why
if command -v setpriv >/dev/null; then
	(cd "$d" && setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PROPEL" record -o "$d/user.db" --vitals -- "$d/offcpu" "$d") >/dev/null 2>"$d/e"
	if [ "$(grep -c -- '--vitals' "$d/e")" = 1 ] &&
	   grep -q "^propel: record: --vitals: off-CPU spans off: .*permitted" "$d/e" &&
	   "$PROPEL" replay --format=jsonl "$d/user.db" | grepq '"func":"contend"'; then
		pass vitals-trace/not-root
	else
		fail vitals-trace/not-root "$(cat "$d/e")"
	fi
	(cd "$d" && setpriv --inh-caps=-all --bounding-set=-bpf,-sys_admin,-perfmon \
		"$PROPEL" record -o "$d/nocap.db" --vitals -- "$d/offcpu" "$d") >/dev/null 2>"$d/e"
	if [ "$(grep -c -- '--vitals' "$d/e")" = 1 ] &&
	   grep -q "^propel: record: --vitals: off-CPU spans off" "$d/e" &&
	   "$PROPEL" replay --format=jsonl "$d/nocap.db" | grepq '"func":"contend"'; then
		pass vitals-trace/bpf-refused
	else
		fail vitals-trace/bpf-refused "$(cat "$d/e")"
	fi
else
	skip vitals-trace/not-root "setpriv missing"
fi
if command -v unshare >/dev/null; then
	unshare -m sh -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null;
		mount -t tmpfs none /sys/kernel/tracing; cd '$d' &&
		exec '$PROPEL' record -o '$d/notrace.db' --vitals -- '$d/offcpu' '$d'" >/dev/null 2>"$d/e"
	"$PROPEL" replay --format=jsonl "$d/notrace.db" >"$d/nt.jsonl" 2>/dev/null
	if [ "$(grep -c -- '--vitals' "$d/e")" = 1 ] && grep -q '"func":"contend"' "$d/nt.jsonl" &&
	   grep -q "tracefs" "$d/e" && grep -q '"kind":"offcpu"' "$d/nt.jsonl"; then
		pass vitals-trace/no-tracefs
	else
		fail vitals-trace/no-tracefs "$(cat "$d/e")"
	fi
fi

# a tracepoint missing (PROPEL_VITALS_FAKE_MISSING, as vitals-badinput):
# the tracer runs without kernel-lock reasons and says so; futex waits are
# still locks (they come from the syscall)
(cd "$d" && PROPEL_VITALS_FAKE_MISSING=contention_begin "$PROPEL" record -o "$d/nolock.db" \
	--vitals -- "$d/offcpu" "$d") >/dev/null 2>"$d/e"
"$PROPEL" replay --format=jsonl "$d/nolock.db" >"$d/nl.jsonl"
if [ "$(grep -c -- '--vitals' "$d/e")" = 1 ] &&
   grep -q "kernel lock contention unavailable" "$d/e" &&
   grep -q '"reason":"lock","syscall":"futex"' "$d/nl.jsonl"; then
	pass vitals-trace/missing-tracepoint
else
	fail vitals-trace/missing-tracepoint "$(cat "$d/e")"
fi

# record --vitals: propel is in the collectors' set only to hand CMD its
# place (parent-only); once CMD is forked, what propel forks (the raw
# trace's background removal after the session is stored) is not traced:
# read the kernel's set of traced tgids while CMD sleeps
if command -v bpftool >/dev/null; then
	"$PROPEL" record -o "$d/fk.db" --vitals -- \
		sh -c "echo \$\$ >'$d/fk.pid'; sleep 4" >/dev/null 2>"$d/fk.e" & rp=$!
	for i in $(seq 100); do [ -s "$d/fk.pid" ] && break; sleep 0.05; done
	sp=$(cat "$d/fk.pid" 2>/dev/null)
	# propel's own maps (their ids from its descriptors: other suites'
	# collectors come and go meanwhile), the one named tgids dumped; until
	# it holds CMD (read once after a fixed 0.3 s it was empty at a load of
	# 19), while CMD sleeps
	for i in $(seq 30); do
		keys=$(for id in $(sed -n 's/^map_id:[[:space:]]*//p' /proc/$rp/fdinfo/* 2>/dev/null | sort -u); do
			bpftool map show id "$id" 2>/dev/null | grep -q " name tgids " &&
				bpftool map dump id "$id" -j 2>/dev/null
		done | python3 -c 'import json, sys
for line in sys.stdin.read().replace("][", "]\n[").splitlines():
    for e in json.loads(line) if line.strip() else []:
        print(e["formatted"]["key"])')
		[ -n "$sp" ] && grep -qx "$sp" <<<"$keys" && break
		sleep 0.1
	done
	wait $rp
	if [ -n "$sp" ] && grep -qx "$sp" <<<"$keys" && ! grep -qx "$rp" <<<"$keys"; then
		pass vitals-trace/propel-forks-untraced
	else
		fail vitals-trace/propel-forks-untraced "propel $rp, CMD ${sp:-?}, traced tgids: $(echo $keys)"
	fi
else
	fail vitals-trace/propel-forks-untraced "bpftool missing (tests/install-deps.sh installs it)"
fi

# record --follow --vitals: the peers propeld injects on this host
# (tests/fixtures/follow/svc.c: client -> front end -> back end, a worker
# on a pipe, a logger) get their spans too, and nothing else does (propeld)
if gcc -O2 -g -o "$d/svc" "$PROPEL_TOP/tests/fixtures/follow/svc.c"; then
	f=$d/follow; mkdir -p "$f"; chmod 777 "$f"
	port=$(free_port 3)
	"$d/svc" backend $port >"$f/be.out" 2>&1 & sb=$!
	"$d/svc" logger "$f/log.sock" $((port + 2)) >"$f/lg.out" 2>&1 & sl=$!
	for i in $(seq 100); do [ "$(cat "$f/be.out" "$f/lg.out" | grep -c ready)" = 2 ] && break; sleep 0.05; done
	"$d/svc" front $((port + 1)) 127.0.0.1 $port "$f/log.sock" 127.0.0.1 $((port + 2)) \
		>"$f/fe.out" 2>&1 & sf=$!
	for i in $(seq 100); do grep -q ready "$f/fe.out" 2>/dev/null && break; sleep 0.05; done
	PROPEL_TEST_QUIET=1 timeout 120 "$PROPEL" record --follow --vitals -o "$f/s.db" -- \
		"$d/svc" client 127.0.0.1 $((port + 1)) 20 20 >/dev/null 2>"$f/e"
	kill $sb $sl $sf 2>/dev/null; wait $sb $sl $sf 2>/dev/null
	checker vitals-trace/follow-peers python3 - "$f/s.db" $sf $sb <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
procs = {r[0] for r in db.execute("SELECT pid FROM processes")}
spans = {r[0] for r in db.execute("SELECT DISTINCT pid FROM offcpu")}
peers = {int(sys.argv[2]), int(sys.argv[3])}
ok = len(procs) >= 4 and spans <= procs and peers <= spans
print(("PASS" if ok else "FAIL") + " vitals-trace/follow-peers" +
      ("" if ok else ": processes %s, spans of %s, front/back %s" % (procs, spans, peers)))
PY
	grep -q "^propel: record: --vitals: off-CPU spans of the traced processes.*--follow: the processes of this host and of the hosts on its kernel" "$f/e" &&
		pass vitals-trace/follow-says || fail vitals-trace/follow-says "$(cat "$f/e")"
fi
