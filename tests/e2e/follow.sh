#!/usr/bin/env bash
# tests/e2e/follow.sh - propagation on one host (issue 9, items 3-4):
# inject/propeld.c, inject/peer.c, inject/agent/propagate.c,
# engine/transport.c, engine/follow.c, `attach --follow`, `record --follow`.
#
# The service (tests/fixtures/follow/svc.c), started untraced before
# propel: a client -> TCP front end -> TCP back end; the front end hands
# each answer to a worker child over a pipe, logs over a UNIX stream to a
# logger and sends it a UDP heartbeat per request.  Every part checks every
# byte it gets and prints "ROLE ok N bad M".
#
#   attach/local       `propel attach --follow <client>`: the five
#                      processes are in the session, each with this host's
#                      name; every recv from the first traced send on is
#                      matched (tests/e2e/comm-check.py --late), over tcp,
#                      pipe, unix and udp; no part saw a bad byte
#   attach/detached    after the session, `propel detach PID` finds the
#                      agent already off in every process (every patched
#                      byte was restored), no thread is ptraced, and a new
#                      client is served right
#   record/local       `propel record --follow -- client`: status 0, the
#                      five processes traced, every recv matched (no
#                      --late: each peer was injected before its first
#                      byte came), all four kinds, payloads right, detached
#   record/unix-before-accept  `propel record --follow -- svc uclient`
#                      against an untraced `svc ulazy` that accepts each
#                      UNIX stream connection 300 ms after it waits: the
#                      client writes on two connections before they are
#                      accepted (one it closes at once); the server is
#                      found through the listener's accept queue and
#                      traced; every recv matched, the stream offsets
#                      from 0 (no byte missed), the server's recv bytes
#                      on each channel equal the client's send bytes
#   attach/late-tcp    a busy TCP stream (tests/fixtures/comm/stream.c, both
#                      socket buffers full), `attach --follow CLIENT` only:
#                      the server is reached by propagation; both ends
#                      unharmed; matching exact (--within, and each end's
#                      offsets end at the totals the programs report)
#   fault/not-permitted  the requester (an unprivileged user, made here)
#                      follows its client into a back end owned by root:
#                      one line "may not trace", the others traced, the
#                      back end never injected and unharmed
#   fault/peer-exits   peers that exit while being injected (a fifo reader
#                      that lives 0-60 ms): propel's status is the
#                      writer's, every line propel prints is one
#                      "propel: ..." line, nothing crashed
#   record/pipe-reader-starting  25 x `record --follow -- sh -c 'echo hi |
#                      cat'`: the pipe's reader is asked for while it may be
#                      in its dynamic loader; every run status 0, "hi"
#                      printed, nothing faulted, cat's recv matched
#   record/not-propel  the traced program's stderr shared with propel's
#                      own down one pipe to cat, --follow-stdio (without
#                      it propel's own pipeline is not followed:
#                      tests/e2e/flows-auto.sh stdio/*): cat is followed;
#                      propel, propeld and its keeper are never traced
#   fault/propeld-killed  kill -9 of this host's propeld mid-session: the
#                      coordinator says the host was lost; the agents kept
#                      recording until their lease ended (events after the
#                      kill are in the session); the processes unharmed
#                      and, after the lease, detached
#   fault/coordinator-killed  kill -9 of propel: the service goes on
#                      unharmed, propeld switched the agents off, and
#                      `propel recover` makes a session of the rings
#   fault/peer-closed  sends on UNIX streams whose far end is closed (a
#                      socketpair whose other process exited; a connection
#                      whose listener closed before accepting it): nothing
#                      to follow, and that is no failure -- propel's status
#                      is the program's, one line per channel says the peer
#                      closed its end, no "follow ...: no process holds"
#                      line (sshd/record in follow-real.sh failed so once
#                      under load: ssh was gone before propeld looked)
# propel-test: takes 55
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 12
t=$(tmpdir)
chmod 755 "$t"
user=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	pkill -TERM -P $$ 2>/dev/null
	rm -rf "$t"
	# the user this run made (its own name: another run may be going on)
	if [ -n "$user" ] && id "$user" >/dev/null 2>&1; then
		userdel "$user" 2>/dev/null || { sleep 1; userdel -f "$user"; }
	fi
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
checker=$PROPEL_TOP/tests/e2e/comm-check.py
if ! is_root; then
	skip follow "needs root (ptrace of other users' processes, useradd)"
	exit 77
fi
if ! $cc -O2 -g -Wall -o "$t/svc" "$PROPEL_TOP/tests/fixtures/follow/svc.c"; then
	fail build/svc "cannot build svc.c"
	exit 1
fi
chmod 755 "$t/svc"
# back end PORT, front end PORT+1, logger PORT+2 (UDP)
port=$(free_port 3) || { fail follow "no free ports"; exit 1; }

# start_service DIR: back end, logger, front end (with its worker), untraced;
# sets be lg fe wk
start_service() {
	local d=$1
	mkdir -p "$d"
	chmod 777 "$d"
	"$t/svc" backend $port >"$d/be.out" 2>&1 &
	be=$!
	"$t/svc" logger "$d/log.sock" $((port + 2)) >"$d/lg.out" 2>&1 &
	lg=$!
	for i in $(seq 1 100); do grep -q ready "$d/be.out" "$d/lg.out" 2>/dev/null &&
		[ "$(cat "$d/be.out" "$d/lg.out" | grep -c ready)" = 2 ] && break; sleep 0.05; done
	"$t/svc" front $((port + 1)) 127.0.0.1 $port "$d/log.sock" 127.0.0.1 $((port + 2)) \
		>"$d/fe.out" 2>&1 &
	fe=$!
	for i in $(seq 1 100); do grep -q ready "$d/fe.out" 2>/dev/null && break; sleep 0.05; done
	wk=$(pgrep -P $fe | head -1)
}

# stop_service DIR: SIGTERM the servers; fails unless each says bad 0
stop_service() {
	local d=$1
	kill -TERM $be $lg $fe 2>/dev/null
	wait $be $lg $fe 2>/dev/null
	sleep 0.2
	grep -h ' bad ' "$d"/*.out >"$d/all.out"
	[ "$(grep -c ' bad 0$' "$d/all.out")" -ge 4 ] && ! grep -v ' bad 0$' "$d/all.out" | grepq .
}

# detached PID...: the agent is off in each (propel detach says it was, or
# that it had switched itself off -- inert, after its lease -- and restores
# its code) and no thread is ptraced
detached() {
	local p s out
	for p in "$@"; do
		out=$("$PROPEL" detach "$p" 2>&1)
		echo "$out" | grepq -E 'already off|had switched itself off' || { echo "agent still on in $p: $out"; return 1; }
		for s in /proc/"$p"/task/*/status; do
			[ "$(awk '/^TracerPid:/ {print $2}' "$s")" = 0 ] || { echo "$p still ptraced"; return 1; }
		done
	done
}

# traced DB PID...: each pid is a process of the session with this host's name
traced() {
	local db=$1 p h
	shift
	for p in "$@"; do
		h=$(sqlite3 "$db" "SELECT host FROM processes WHERE pid=$p LIMIT 1")
		[ "$h" = "$(uname -n)" ] || { echo "pid $p not traced (host '$h')"; return 1; }
	done
}

# ---- attach --follow ----
d=$t/attach
start_service "$d"
"$t/svc" client 127.0.0.1 $((port + 1)) 150 20 >"$d/cl.out" 2>&1 &
cl=$!
sleep 0.5
timeout 120 "$PROPEL" attach --follow -o "$d/s.db" $cl >"$d/attach.out" 2>&1
arc=$?
wait $cl
crc=$?
"$t/svc" client 127.0.0.1 $((port + 1)) 10 0 >"$d/after.out" 2>&1
arc2=$?
if [ $arc -ne 0 ]; then
	fail attach/local "attach: status $arc: $(head -c 300 "$d/attach.out")"
elif [ $crc -ne 0 ]; then
	fail attach/local "the client was harmed: $(cat "$d/cl.out")"
elif ! why=$(traced "$d/s.db" $cl $fe $wk $be $lg); then
	fail attach/local "$why; $(head -c 300 "$d/attach.out")"
elif ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
	fail attach/local "replay: $(head -c 200 "$d/replay.err")"
elif ! out=$(python3 "$checker" "$d/s.jsonl" --late --kinds tcp,pipe,unix,udp 2>&1); then
	fail attach/local "$(echo "$out" | head -5)"
else
	pass attach/local
fi
if [ $arc2 -ne 0 ]; then
	fail attach/detached "a client after the session: $(cat "$d/after.out")"
elif ! why=$(detached $fe $wk $be $lg 2>&1); then
	fail attach/detached "$why"
elif ! stop_service "$d"; then
	fail attach/detached "a part saw a bad byte: $(cat "$d/all.out" | tr '\n' ';')"
else
	pass attach/detached
fi

# ---- record --follow ----
d=$t/record
start_service "$d"
timeout 120 "$PROPEL" record --follow -o "$d/s.db" -- "$t/svc" client 127.0.0.1 $((port + 1)) 100 0 \
	>"$d/cl.out" 2>"$d/record.err"
rrc=$?
if [ $rrc -ne 0 ]; then
	fail record/local "status $rrc: $(head -c 300 "$d/record.err") $(cat "$d/cl.out")"
elif ! why=$(traced "$d/s.db" $fe $wk $be $lg); then
	fail record/local "$why"
elif np=$(sqlite3 "$d/s.db" "SELECT count(DISTINCT pid) FROM processes" 2>&1)
	! { is_num "$np" && [ "$np" -eq 5 ]; }; then
	fail record/local "not five processes: $(sqlite3 "$d/s.db" 'SELECT pid, exe FROM processes' | tr '\n' ' ')"
elif ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
	fail record/local "replay: $(head -c 200 "$d/replay.err")"
elif ! out=$(python3 "$checker" "$d/s.jsonl" --kinds tcp,pipe,unix,udp 2>&1); then
	fail record/local "$(echo "$out" | head -5)"
elif ! why=$(detached $fe $wk $be $lg 2>&1); then
	fail record/local "not detached: $why"
elif ! stop_service "$d"; then
	fail record/local "a part saw a bad byte: $(cat "$d/all.out" | tr '\n' ';')"
else
	pass record/local
fi

# ---- UNIX stream connections written to before they are accepted ----
name=record/unix-before-accept
d=$t/ulazy
mkdir -p "$d"
"$t/svc" ulazy "$d/ul.sock" 300 >"$d/ul.out" 2>&1 &
ul=$!
for i in $(seq 1 100); do grep -q ready "$d/ul.out" 2>/dev/null && break; sleep 0.05; done
timeout 60 "$PROPEL" record --follow -o "$d/s.db" -- "$t/svc" uclient "$d/ul.sock" 50 \
	>"$d/uc.out" 2>"$d/record.err"
rrc=$?
kill -TERM $ul
wait $ul
if [ $rrc -ne 0 ]; then
	fail $name "status $rrc: $(head -c 300 "$d/record.err") $(cat "$d/uc.out")"
elif ! grep -q 'ulazy ok 100 bad 0' "$d/ul.out"; then
	fail $name "the server was harmed: $(cat "$d/ul.out")"
elif ! why=$(traced "$d/s.db" $ul); then
	fail $name "$why: $(head -c 300 "$d/record.err")"
elif ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
	fail $name "replay: $(head -c 200 "$d/replay.err")"
elif ! out=$(python3 "$checker" "$d/s.jsonl" --from-zero --kinds unix 2>&1); then
	fail $name "$(echo "$out" | head -5)"
elif ! out=$(python3 - "$d/s.jsonl" $ul <<'EOF'
import collections, json, sys
srv = int(sys.argv[2])
sent, got = collections.Counter(), collections.Counter()
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["kind"] == "send" and e["pid"] != srv:
        sent[e["chan"]] += e["bytes"]
    elif e["kind"] == "recv" and e["pid"] == srv:
        got[e["chan"]] += e["bytes"]
# two connections of 50 lines, the second with "end"
if len(sent) != 2 or sent != got or sorted(sent.values()) != [340, 344]:
    print("client sent %s, server got %s" % (dict(sent), dict(got)))
    sys.exit(1)
EOF
); then
	fail $name "$out"
else
	pass $name
fi

# ---- late attach in a busy TCP stream, the server found by propagation ----
name=attach/late-tcp
d=$t/late
mkdir -p "$d"
if ! $cc -O2 -g -o "$t/stream" "$PROPEL_TOP/tests/fixtures/comm/stream.c"; then
	fail $name "cannot build stream.c"
else
	"$t/stream" server "$d/port" 0 >"$d/server.out" 2>&1 &
	sp=$!
	for i in $(seq 1 50); do [ -s "$d/port" ] && break; sleep 0.05; done
	"$t/stream" client "$(cat "$d/port")" 3 >"$d/client.out" 2>&1 &
	cp=$!
	sleep 1
	timeout 60 "$PROPEL" attach --follow --mode full -o "$d/a.db" "$cp" >"$d/attach.out" 2>&1
	arc=$?
	wait $sp; src=$?
	wait $cp; crc=$?
	if [ $arc -ne 0 ]; then
		fail $name "attach: status $arc: $(head -c 300 "$d/attach.out")"
	elif [ $src -ne 0 ] || [ $crc -ne 0 ] || ! grep -q ' ok$' "$d/server.out" ||
		! grep -q ' ok$' "$d/client.out"; then
		fail $name "the programs were harmed: $(cat "$d/server.out" "$d/client.out" | head -c 300)"
	elif ! why=$(traced "$d/a.db" $sp $cp); then
		fail $name "$why: $(head -c 300 "$d/attach.out")"
	elif ! "$PROPEL" replay --format=jsonl "$d/a.db" >"$d/a.jsonl" 2>"$d/a.err"; then
		fail $name "replay: $(head -c 200 "$d/a.err")"
	else
		read -r _ _ s_recv _ s_sent _ <"$d/server.out"
		read -r _ _ c_sent _ c_recv _ <"$d/client.out"
		if out=$(python3 "$checker" "$d/a.jsonl" --late --within --kinds tcp \
			--end "$sp:recv:$s_recv" --end "$cp:send:$c_sent" 2>&1); then
			pass $name
		else
			fail $name "$(echo "$out" | head -5)"
		fi
	fi
fi

# ---- a peer the requester may not trace (item 3's SO_PEERCRED) ----
name=fault/not-permitted
user=propeltest$$
useradd -M -s /bin/sh $user 2>"$t/useradd.err" || user=
if [ -z "$user" ]; then
	fail $name "root, but useradd failed: $(cat "$t/useradd.err")"
elif ! user_can_run $user; then
	skip $name "user $user cannot reach $PROPEL (a checkout in a private directory)"
else
	d=$t/perm
	mkdir -p "$d"
	chmod 777 "$d"
	# the back end is root's; the rest is the user's
	"$t/svc" backend $port >"$d/be.out" 2>&1 &
	be=$!
	su $user -s /bin/sh -c "'$t/svc' logger '$d/log.sock' $((port + 2)) >'$d/lg.out' 2>&1 & echo \$! >'$d/lg.pid'; wait" &
	sleep 0.5
	su $user -s /bin/sh -c "'$t/svc' front $((port + 1)) 127.0.0.1 $port '$d/log.sock' 127.0.0.1 $((port + 2)) >'$d/fe.out' 2>&1 & echo \$! >'$d/fe.pid'; wait" &
	for i in $(seq 1 100); do grep -q ready "$d/fe.out" 2>/dev/null && break; sleep 0.05; done
	lg=$(cat "$d/lg.pid") fe=$(cat "$d/fe.pid")
	su $user -s /bin/sh -c "'$t/svc' client 127.0.0.1 $((port + 1)) 100 20 >'$d/cl.out' 2>&1 & echo \$! >'$d/cl.pid'; wait" &
	sleep 0.5
	cl=$(cat "$d/cl.pid")
	# root's propeld on a socket: it sees every process, and injects
	# what the client's uid (SO_PEERCRED) may trace
	"$PROPEL_TOP/$O/propeld" --socket "$t/pd.sock" 2>"$d/propeld.err" &
	pdp=$!
	for i in $(seq 1 50); do [ -S "$t/pd.sock" ] && break; sleep 0.05; done
	su $user -s /bin/sh -c "cd '$d' && PROPEL_PROPELD_SOCKET='$t/pd.sock' timeout 60 '$PROPEL' attach --follow -o '$d/s.db' $cl" >"$d/attach.out" 2>&1
	arc=$?
	kill $pdp
	wait $pdp
	for i in $(seq 1 100); do kill -0 $cl 2>/dev/null || break; sleep 0.1; done
	nperm=$(grep -c 'may not trace' "$d/attach.out")
	if [ $arc -ne 0 ]; then
		fail $name "attach: status $arc: $(head -c 300 "$d/attach.out")"
	elif [ "$nperm" -ne 1 ] || ! grep 'may not trace' "$d/attach.out" | grepq "pid $be .*owned by uid 0"; then
		fail $name "want one 'may not trace' line naming pid $be: $(head -c 400 "$d/attach.out")"
	elif grep -q propel-agent /proc/$be/maps; then
		fail $name "the back end (root's) was injected"
	elif ! why=$(traced "$d/s.db" $cl $fe $lg); then
		fail $name "$why"
	elif [ -n "$(sqlite3 "$d/s.db" "SELECT pid FROM processes WHERE pid=$be")" ]; then
		fail $name "the back end is in the session"
	elif ! grep -q 'client ok 100 bad 0' "$d/cl.out"; then
		fail $name "the client was harmed: $(cat "$d/cl.out")"
	else
		be_ok=1
		kill -TERM $be $lg $fe
		wait $be
		sleep 0.2
		grep -q 'backend ok 100 bad 0' "$d/be.out" || be_ok=0
		if [ $be_ok = 1 ]; then pass $name; else fail $name "the back end: $(cat "$d/be.out")"; fi
	fi
	kill $be $lg $fe 2>/dev/null
fi

# ---- peers that exit during injection ----
name=fault/peer-exits
d=$t/exits
mkdir -p "$d"
bad=
for i in $(seq 1 10); do
	rm -f "$d/fifo"
	mkfifo "$d/fifo"
	# the reader holds the fifo open and exits 0..60 ms later, unread
	( exec sleep "0.0$((i % 7))" <"$d/fifo" ) &
	rp=$!
	timeout 60 "$PROPEL" record --follow -o "$d/s$i.db" -- \
		bash -c 'trap "" PIPE; exec 3>"$1"; sleep 0.0$(( $2 % 5 )); for k in 1 2 3; do echo x >&3 2>/dev/null; done; echo done' _ "$d/fifo" $i \
		>"$d/out$i" 2>"$d/err$i"
	rc=$?
	wait $rp
	if [ $rc -ne 0 ] || ! grep -q done "$d/out$i"; then
		bad="run $i: status $rc, $(head -c 200 "$d/err$i")"
		break
	fi
	if grep -v '^propel: ' "$d/err$i" | grepq .; then
		bad="run $i: a line not propel's: $(grep -v '^propel: ' "$d/err$i" | head -2)"
		break
	fi
done
if [ -n "$bad" ]; then fail $name "$bad"; else pass $name; fi

# ---- a pipe's reader that has just exec'd ----
# `sh -c 'echo hi | cat'`: the echo's first write asks for the pipe's
# reader while cat may still be in its dynamic loader (its preloaded agent
# not started, libc not relocated).  A dlopen there broke cat (~1 run in 5
# before the fix); now the reader is left to its own agent or waited for.
name=record/pipe-reader-starting
d=$t/pstart
mkdir -p "$d"
bad=
for i in $(seq 1 25); do
	timeout 60 "$PROPEL" record --follow -o "$d/s$i.db" -- sh -c 'echo hi | cat' \
		>"$d/out$i" 2>"$d/err$i"
	rc=$?
	if [ $rc -ne 0 ] || [ "$(cat "$d/out$i")" != hi ]; then
		bad="run $i: status $rc, out '$(head -c 100 "$d/out$i")', $(head -c 300 "$d/err$i")"
		break
	fi
	if grep -Eiq 'fault|segmentation|cannot load|loader' "$d/err$i"; then
		bad="run $i: $(head -c 300 "$d/err$i")"
		break
	fi
	m=$("$PROPEL" replay --format=jsonl "$d/s$i.db" 2>/dev/null | python3 -c "
import json,sys
ev=[json.loads(l) for l in sys.stdin]
ex={e['pid'] for e in ev if e['kind']=='exec'}
print(sum(1 for e in ev if e['kind']=='recv' and e['pid'] in ex and e.get('match') and e['bytes']==3))")
	if [ "$m" != 1 ]; then
		bad="run $i: cat's recv of the 3 bytes matched $m times (want 1)"
		break
	fi
done
if [ -n "$bad" ]; then fail $name "$bad"; else pass $name; fi

# ---- propel is never a peer ----
# The traced program's stderr is propel's own, and both go down one pipe:
# the writers of that pipe (propel, propeld, its lease keeper, the shell)
# are not its peers; only the pipe's reader is.
name=record/not-propel
d=$t/notself
mkdir -p "$d"
timeout 60 "$PROPEL" record --follow --follow-stdio -o "$d/s.db" -- sh -c 'echo out; echo err >&2' 2>&1 |
	cat >"$d/all.out"
exes=$(sqlite3 "$d/s.db" "SELECT group_concat(exe, ' ') FROM processes" 2>&1)
# the reader: cat, or the shell's child about to exec it when it was asked
# for ("traced pid N (bash)", fcr7), which the session holds as cat
rdr=$(grep -c 'traced pid [0-9]* (cat)' "$d/all.out")
echo " $exes " | grepq '/cat ' && rdr=$((rdr + 1))
if grep -Eq 'traced pid [0-9]* \(propel|propel.*myself' "$d/all.out"; then
	fail $name "propel traced its own: $(grep -E 'propel' "$d/all.out" | head -3 | tr '\n' ';')"
elif echo "$exes" | grepq 'propel'; then
	fail $name "the session holds propel's processes: $exes"
elif [ "$rdr" -lt 1 ] || ! grep -q '^out$' "$d/all.out" || ! grep -q '^err$' "$d/all.out"; then
	fail $name "the reader was not followed or output lost: $(head -c 300 "$d/all.out")"
else
	pass $name
fi

# ---- propeld killed mid-session ----
name=fault/propeld-killed
d=$t/pdkill
start_service "$d"
"$t/svc" client 127.0.0.1 $((port + 1)) 200 20 >"$d/cl.out" 2>&1 &
cl=$!
sleep 0.3
"$PROPEL" attach --follow --duration 60 -o "$d/s.db" $cl >"$d/attach.out" 2>&1 &
ap=$!
for i in $(seq 1 100); do grep -q 'traced pid' "$d/attach.out" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
pd=$(pgrep -P $ap -f 'propeld --stdio' | head -1)
killed_ns=$(awk '{printf "%d", $1 * 1e9}' /proc/uptime)
[ -n "$pd" ] && kill -9 $pd
wait $ap
arc=$?
wait $cl
crc=$?
sleep 2.5 # the agents' lease
if [ -z "$pd" ]; then
	fail $name "no propeld child of propel"
elif [ $arc -ne 0 ]; then
	fail $name "attach: status $arc: $(head -c 300 "$d/attach.out")"
elif ! grep -q "host $(uname -n) lost" "$d/attach.out"; then
	fail $name "the loss was not reported: $(head -c 300 "$d/attach.out")"
elif [ $crc -ne 0 ]; then
	fail $name "the client was harmed: $(cat "$d/cl.out")"
elif ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
	fail $name "replay: $(head -c 200 "$d/replay.err")"
elif ! n=$(python3 -c "
import json,sys
n=0
for l in open('$d/s.jsonl'):
    e=json.loads(l)
    if e['kind']=='send' and e['pid']==$fe and e['ts_ns']>$killed_ns: n+=1
print(n)") || ! is_num "$n" || [ "$n" -lt 10 ]; then
	fail $name "the front end recorded '${n:-}' sends (want >= 10) after propeld was killed"
elif ! why=$(detached $fe $be 2>&1); then
	fail $name "after the lease: $why"
elif ! stop_service "$d"; then
	fail $name "a part saw a bad byte: $(cat "$d/all.out" | tr '\n' ';')"
else
	pass $name
fi

# ---- the coordinator killed ----
name=fault/coordinator-killed
d=$t/cokill
start_service "$d"
"$t/svc" client 127.0.0.1 $((port + 1)) 200 20 >"$d/cl.out" 2>&1 &
cl=$!
sleep 0.3
since=$(date +%s)
"$PROPEL" attach --follow --duration 60 -o "$d/s.db" $cl >"$d/attach.out" 2>&1 &
ap=$!
for i in $(seq 1 100); do [ "$(grep -c 'traced pid' "$d/attach.out" 2>/dev/null)" -ge 4 ] && break; sleep 0.05; done
sleep 0.5
pd=$(pgrep -P $ap -f 'propeld --stdio' | head -1)
pdir=$(ring_dir "$pd" "$since" d)
kill -9 $ap
wait $cl
crc=$?
# propeld switches each agent off in turn (a ptrace stop and a call each),
# then ends; an agent it missed switches itself off 2 s later (the lease):
# each map file of fe and be in propeld's directory ends with its X line
# once that is done
off_in() { # PID: every map file of PID in $pdir ends "X ..."
	local m
	for m in "$pdir"/"$1".*.map; do
		[ -f "$m" ] && tail -1 "$m" | grep -q '^X ' || return 1
	done
}
agents_off() { ! running "$pd" && off_in $fe && off_in $be; }
wait_until 10 agents_off
if [ $crc -ne 0 ]; then
	fail $name "the client was harmed: $(cat "$d/cl.out")"
elif ! why=$(detached $fe $be 2>&1); then
	fail $name "$why (propeld $pd $(running "$pd" && echo "still runs" || echo ended); fe $fe be $be; $(for m in "$pdir"/$fe.*.map "$pdir"/$be.*.map; do echo "$(basename "$m"): $(tail -1 "$m" 2>/dev/null)"; done | tr '\n' ' '))"
elif ! (cd "$d" && timeout 60 "$PROPEL" recover -o "$d/r.db" "$pdir") >"$d/recover.out" 2>&1; then
	fail $name "recover $pdir: $(head -c 300 "$d/recover.out")"
elif ! why=$(traced "$d/r.db" $cl $fe $be); then
	fail $name "recovered session: $why"
elif ! stop_service "$d"; then
	fail $name "a part saw a bad byte: $(cat "$d/all.out" | tr '\n' ';')"
else
	pass $name
fi

# ---- a peer that closed its end: nothing to follow, no failure ----
name=fault/peer-closed
d=$t/closed
mkdir -p "$d"
cat >"$d/c.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct sockaddr_un sa = { AF_UNIX, "" };
	int sv[2], l, c, st;
	pid_t p;

	/* a socketpair whose other end's only holder exited */
	if (argc < 2 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || (p = fork()) < 0)
		return 1;
	if (p == 0)
		_exit(0);
	close(sv[1]);
	waitpid(p, &st, 0);
	printf("pair %zd\n", send(sv[0], "hello", 5, MSG_NOSIGNAL));
	/* a connection whose listener closed before accepting it */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		return 2;
	close(l);
	printf("queued %zd\n", send(c, "hello", 5, MSG_NOSIGNAL));
	return 7;
}
EOF
if ! $cc -O2 -o "$d/closed" "$d/c.c" 2>"$d/cc.err"; then
	fail $name "cannot build: $(head -c 200 "$d/cc.err")"
else
	timeout 60 "$PROPEL" record --follow -o "$d/s.db" -- "$d/closed" "$d/l.sock" \
		>"$d/out" 2>"$d/err"
	rc=$?
	said=$(grep -c 'its peer closed its end before propel looked: nothing to follow' "$d/err")
	if [ $rc -ne 7 ] || [ "$(tr '\n' ' ' <"$d/out")" != "pair -1 queued -1 " ]; then
		fail $name "status $rc (want 7), output '$(cat "$d/out")': $(head -c 300 "$d/err")"
	elif grep -q ': follow \|no process holds' "$d/err"; then
		fail $name "a closed peer taken for a failure: $(grep -m1 ': follow \|no process holds' "$d/err")"
	elif [ "$said" -ne 2 ] || [ "$(grep -vc '^propel: ' "$d/err")" -ne 0 ]; then
		fail $name "want 2 'peer closed its end' lines, got $said: $(head -c 300 "$d/err")"
	else
		pass $name
	fi
fi
