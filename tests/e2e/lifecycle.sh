#!/usr/bin/env bash
# tests/e2e/lifecycle.sh - process life cycles under propel: daemons that
# outlive their parents, exits the agent does not see, exec and vfork.
#
#   record/daemon        tests/fixtures/lifecycle/daemon.c (double fork +
#                        setsid, the daemon works 300 ms after its parents
#                        are gone) recorded 20 times: every session holds
#                        the daemon's daemon_work -> daemon_leaf, the status
#                        is main's (5), the daemon's output is there when
#                        record returns
#   record/lingering     a traced background process outlives CMD: record
#                        waits for it, and SIGTERM ends the wait and stores
#                        the session (status: CMD's; a process still running
#                        is not counted as killed)
#   record/clean/*       real programs (git, sqlite3 CLI, python3 through
#                        whatever shims are on PATH) and the exec/fork
#                        fixtures exit cleanly: no "ended without a clean
#                        exit" warning; record/killed: a kill -9 still warns
#   record/clearenv      tests/fixtures/lifecycle/clearenv.c empties its
#                        environment and execs the exec fixture: the new
#                        images are traced all the same
#   record/vfork         tests/fixtures/lifecycle/vfork.c: a real vfork (the
#                        child's store is seen by the parent), fork events
#                        marked "vfork":true, the exec'd image traced even
#                        with an environment of its own, the parent's trace
#                        intact after the vforks and its exit its own
#   attach/exec          tests/fixtures/lifecycle/attach-exec.c under
#                        `propel attach`: after the exec the new image's main
#                        -> child_work -> child_leaf are in the session (the
#                        agent injected again at main), the process runs as
#                        untraced, no warning, attach ends when it exits
#   attach/exec-static   the same exec'ing a static program: one warning
#                        line, the program runs unharmed
#   attach/reattach      tests/fixtures/lifecycle/spawner.c (-O2), a main
#                        loop that never returns and calls tick() every
#                        100 ms, attached three times in a row; then one
#                        whose tick forks + execs /bin/true, attached four
#                        times (the last three --follow): every session
#                        holds the loop's tick calls, and with --follow
#                        the exec'd images
#                        (after the first, the thread returns through the
#                        earlier session's stubs: they lead back to main)
# Fixture programs are built into a temporary directory.
# propel-test: takes 45
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 15
t=$(tmpdir)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures
build() { # NAME SRC [FLAGS...]
	local n=$1 src=$2
	shift 2
	$cc -O0 -g "$@" -o "$t/$n" "$src" || { fail "build/$n" "cannot build $src"; return 1; }
}
build daemon "$fix/lifecycle/daemon.c"
build exec "$fix/capture/exec.c"
build fork "$fix/capture/fork.c"
build vfork "$fix/lifecycle/vfork.c"
build clearenv "$fix/lifecycle/clearenv.c"
build attach-exec "$fix/lifecycle/attach-exec.c"
build spawner "$fix/lifecycle/spawner.c" -O2
printf '#include <stdio.h>\nint main(void){puts("static ok");return 0;}\n' >"$t/st.c"
$cc -static -o "$t/static" "$t/st.c" 2>/dev/null || rm -f "$t/static"

# ---- daemons: record ends when the last traced descendant has ----
bad=
for i in $(seq 1 20); do
	rm -f "$t/daemon.out"
	"$PROPEL" record -o "$t/d.db" -- "$t/daemon" "$t/daemon.out" >/dev/null 2>"$t/d.err"
	rc=$?
	if [ $rc -ne 5 ]; then bad="run $i: status $rc, want 5"; break; fi
	if ! grep -q 'daemon 42' "$t/daemon.out" 2>/dev/null; then
		bad="run $i: the daemon had not finished when record returned"; break
	fi
	"$PROPEL" replay --format=jsonl "$t/d.db" >"$t/d.jsonl" 2>"$t/d.err2"
	if ! grep -q '"func":"daemon_leaf"' "$t/d.jsonl"; then
		bad="run $i: no daemon_leaf in the session; $(head -c 200 "$t/d.err")"; break
	fi
done
[ -z "$bad" ] && pass record/daemon || fail record/daemon "$bad"

# a descendant that stays: record waits, SIGTERM stops the wait
"$PROPEL" record -o "$t/l.db" -- sh -c 'sleep 30 & echo $!' >"$t/l.out" 2>"$t/l.err" &
rp=$!
sleep 1.5
if kill -0 $rp 2>/dev/null; then
	kill -TERM $rp
	for i in $(seq 1 40); do kill -0 $rp 2>/dev/null || break; sleep 0.05; done
	if kill -0 $rp 2>/dev/null; then
		fail record/lingering "record did not stop on SIGTERM"
	else
		wait $rp
		rc=$?
		# the session is stored; the sleep still runs: not a kill
		if [ $rc -eq 0 ] && "$PROPEL" replay "$t/l.db" >/dev/null 2>&1 &&
			! grep -q 'without a clean exit' "$t/l.err"; then
			pass record/lingering
		else
			fail record/lingering "status $rc; $(head -c 200 "$t/l.err")"
		fi
	fi
else
	fail record/lingering "record ended while a traced descendant still ran"
fi
kill "$(cat "$t/l.out")" 2>/dev/null

# ---- clean exits are not kills ----
clean() { # NAME CMD...: status 0 (or as given by WANT), no warning
	local name=$1
	shift
	"$PROPEL" record -o "$t/c.db" -- "$@" >"$t/c.out" 2>"$t/c.err"
	local rc=$?
	if grep -q 'without a clean exit' "$t/c.err"; then
		fail "record/clean/$name" "$(head -c 300 "$t/c.err")"
	elif [ $rc -ne "${WANT:-0}" ]; then
		fail "record/clean/$name" "status $rc; $(head -c 300 "$t/c.err")"
	else
		pass "record/clean/$name"
	fi
}
for prog in git sqlite3 python3; do
	command -v $prog >/dev/null || { skip "record/clean/$prog" "$prog not installed"; continue; }
	case $prog in
	git) clean git git --version ;;
	sqlite3) clean sqlite3 sqlite3 :memory: 'select 1;' ;;
	python3) clean python3 python3 -c 'print(1)' ;;
	esac
done
command -v git >/dev/null && WANT=128 clean git-fails git -C / status
clean exec "$t/exec"
clean fork "$t/fork"
clean shell sh -c 'x=$(echo a | tr a b); [ "$x" = b ] && true'
"$PROPEL" record -o "$t/k.db" -- sh -c 'sleep 5 & sleep 0.5; kill -9 $!; wait' >/dev/null 2>"$t/k.err"
grep -q '1 process(es) ended without a clean exit' "$t/k.err" && pass record/killed ||
	fail record/killed "no warning for a kill -9: $(head -c 300 "$t/k.err")"

# ---- an emptied environment still hands the agent on ----
"$PROPEL" record -o "$t/ce.db" -- "$t/clearenv" "$t/exec" >"$t/ce.out" 2>"$t/ce.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$t/ce.out")" = "exec child 3" ] &&
	"$PROPEL" replay --format=jsonl "$t/ce.db" | grepq '"func":"after_exec"'; then
	pass record/clearenv
else
	fail record/clearenv "status $rc, output $(head -c 100 "$t/ce.out"), no after_exec in the session? $(head -c 200 "$t/ce.err")"
fi

# ---- vfork is traced as vfork ----
"$PROPEL" record -o "$t/v.db" -- "$t/vfork" >"$t/v.out" 2>"$t/v.err"
rc=$?
"$PROPEL" replay --format=jsonl "$t/v.db" >"$t/v.jsonl" 2>>"$t/v.err"
python3 - "$t/v.jsonl" "$t/v.out" $rc >"$t/v.why" <<'PY'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
out = open(sys.argv[2]).read().strip()
why = []
if sys.argv[3] != "0" or out != "vfork shared=7 exec=0 exit=3":
    why.append("status %s, output %r" % (sys.argv[3], out))
forks = [e for e in evs if e["kind"] == "fork"]
if len(forks) != 2 or not all(e.get("vfork") is True for e in forks):
    why.append("fork events: %r" % forks)
parent = forks[0]["pid"] if forks else None
if forks:
    child = forks[0]["child"]
    if not any(e["pid"] == child and e.get("func") == "child_leaf" for e in evs):
        why.append("the exec'd image (pid %d) is not traced" % child)
exits = [e for e in evs if e["kind"] == "process_exit" and e["pid"] == parent]
if [e["status"] for e in exits] != [0]:
    why.append("parent's process_exit events: %r" % exits)
mine = [e for e in evs if e["pid"] == parent and e["kind"] in ("entry", "exit")]
seq = [(e["kind"], e["func"], e["depth"]) for e in mine]
want = [("entry", "after_vfork", 2), ("entry", "child_leaf", 3),
        ("exit", "child_leaf", 3), ("exit", "after_vfork", 2),
        ("exit", "spawn", 1)]
if not any(seq[i:i + len(want)] == want for i in range(len(seq))):
    why.append("parent's trace after the vforks: %r" % seq[-8:])
if why:
    print("; ".join(why))
PY
pyrc=$?
if [ $pyrc -ne 0 ] || [ -s "$t/v.why" ]; then
	fail record/vfork "checker status $pyrc: $(cat "$t/v.why") $(head -c 200 "$t/v.err")"
else
	pass record/vfork
fi

# ---- exec under attach: the new image is traced from main ----
# injected PID APID: the agent is mapped in PID and no thread of it is
# ptraced (attach's injection is over); fails if either process is gone
injected() {
	local i s tracer
	for ((i = 0; i < 400; i++)); do
		if grep -q propel-agent "/proc/$1/maps" 2>/dev/null; then
			tracer=0
			for s in /proc/"$1"/task/*/status; do
				[ "$(awk '/^TracerPid:/ {print $2}' "$s" 2>/dev/null)" = 0 ] || tracer=1
			done
			[ $tracer = 0 ] && return 0
		fi
		kill -0 "$2" 2>/dev/null && kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# attach_exec NAME [ENV...]: run attach-exec under attach; sets rc, arc
attach_exec() {
	local name=$1 pid ap
	shift
	rm -f "$t/go"
	env "$@" "$t/attach-exec" "$t/go" >"$t/$name.out" 2>&1 &
	pid=$!
	sleep 0.2
	# --all: the check follows the new image down to child_leaf, a
	# 2-instruction leaf the cost budget's static rule leaves untraced
	timeout 60 "$PROPEL" attach --all -o "$t/$name.db" "$pid" 2>"$t/$name.err" &
	ap=$!
	injected "$pid" "$ap" || echo "never injected" >>"$t/$name.err"
	touch "$t/go"
	wait "$ap"
	arc=$?
	wait "$pid"
	rc=$?
	apid=$pid
}
attach_exec ae
"$PROPEL" replay --format=jsonl "$t/ae.db" >"$t/ae.jsonl" 2>>"$t/ae.err"
python3 - "$t/ae.jsonl" "$apid" >"$t/ae.why" <<'PY'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
pid = int(sys.argv[2])
mine = [e for e in evs if e["pid"] == pid]
ex = [i for i, e in enumerate(mine) if e["kind"] == "exec"]
if not ex:
    print("no exec event for %d" % pid)
else:
    after = [(e["func"], e["depth"]) for e in mine[ex[-1]:] if e["kind"] == "entry"]
    want = [("main", 0), ("child_work", 1), ("child_leaf", 2)]
    if [a for a in after if a in want][:3] != want:
        print("after the exec: %r" % after[:12])
PY
pyrc=$?
if [ $pyrc -ne 0 ] || [ $rc -ne 0 ] || [ "$(cat "$t/ae.out")" != "exec child 42" ] || [ $arc -ne 0 ] ||
	[ -s "$t/ae.err" ] || [ -s "$t/ae.why" ]; then
	fail attach/exec "checker $pyrc, status $rc, attach $arc, output $(head -c 100 "$t/ae.out"); $(cat "$t/ae.why") $(head -c 300 "$t/ae.err")"
else
	pass attach/exec
fi
if [ -x "$t/static" ]; then
	attach_exec as STATIC="$t/static"
	if [ $rc -eq 0 ] && [ "$(cat "$t/as.out")" = "static ok" ] && [ $arc -eq 0 ] &&
		[ "$(wc -l <"$t/as.err")" -eq 1 ] &&
		grep -q "^propel: warning: exec in $apid: .*statically linked" "$t/as.err"; then
		pass attach/exec-static
	else
		fail attach/exec-static "status $rc, attach $arc, output $(head -c 100 "$t/as.out"); stderr: $(head -c 300 "$t/as.err")"
	fi
else
	skip attach/exec-static "no static libc"
fi

# ---- attached again: a main loop that never returns ----
# reattach MODE FOLLOW...: SESSIONS attaches of `spawner MODE`, each 2 s,
# the last ones with --follow as FOLLOW says (0/1 per session); sets bad
reattach() {
	local mode=$1 sp k=0 f n
	shift
	"$t/spawner" $mode 2>"$t/sp-$mode.err" &
	sp=$!
	sleep 0.3
	for f in "$@"; do
		k=$((k + 1))
		[ $f = 1 ] && f=--follow || f=
		timeout 60 "$PROPEL" attach $f --duration 2 -o "$t/sp$mode$k.db" $sp \
			>"$t/sp$mode$k.out" 2>&1
		n=$("$PROPEL" replay --format=jsonl "$t/sp$mode$k.db" 2>/dev/null | python3 -c "
import json,sys
ev=[json.loads(l) for l in sys.stdin]
calls=sum(1 for e in ev if e['kind']=='entry' and e['pid']==$sp and (e.get('func') or '').split('.')[0]=='tick')
execs=sum(1 for e in ev if e['kind']=='exec')
print(calls, execs)")
		set -- $n
		if [ "${1:-0}" -lt 5 ] || { [ -n "$f" ] && [ "${2:-0}" -lt 5 ]; }; then
			bad="spawner $mode, session $k ${f:-(plain)}: ${1:-0} tick calls, ${2:-0} execs followed (want >= 5 each in 2 s); $(head -c 200 "$t/sp$mode$k.out")"
			break
		fi
	done
	kill -0 $sp 2>/dev/null || bad="${bad:-the spawner died}"
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	[ -s "$t/sp-$mode.err" ] && bad="${bad:-$(head -c 200 "$t/sp-$mode.err")}"
}
bad=
reattach tick 0 0 0
[ -z "$bad" ] && reattach spawn 0 1 1 1
if [ -n "$bad" ]; then fail attach/reattach "$bad"; else pass attach/reattach; fi
