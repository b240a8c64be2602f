#!/usr/bin/env bash
# tests/e2e/follow-netns.sh - propagation across hosts (issue 9, items 3-4)
# on real network namespaces (tests/netns-lib.sh): hosts A, B, C and D,
# each its own address, host name and sshd (D: no sshd), propel reaching
# B and C with `ssh HOST propeld --stdio` (PROPEL_SSH names a generated
# ssh_config; root's ~/.ssh is not used).  An ssh login here can take
# seconds (the login shell's start-up files under load): the clients run
# 12 s so that the hops reached late still carry traffic.
#
# The service (tests/fixtures/follow/svc.c), started untraced: a client on
# A -> TCP front end on B -> TCP back end on C; on B the front end's worker
# child (pipe), logger (UNIX stream) and UDP heartbeats; and a second
# client on A talking to a back end on D.  ssh to D is slow: PROPEL_SSH is
# a wrapper that, for D's address, waits 8 s and fails as an unanswered
# ssh would.  Then, on A, `propel attach --follow <client2> <client>`
# (client2 first: the coordinator starts reaching D before B):
#
#   multi/attach       status 0; the client (A), front end, worker, logger
#                      (B) and back end (C) are in one session, each with
#                      its host's name; every recv from the first traced
#                      send on is matched (comm-check.py --late) over tcp,
#                      pipe, unix and udp, the TCP hops A->B and B->C
#                      included (send and recv on different hosts)
#   multi/clock        the session meta holds each remote host's clock line
#                      (PROPEL_CLOCK_EXCHANGE=1: measured by the exchange,
#                      error bound under 20 ms)
#   multi/unreachable  D (no sshd) is reported in one line "cannot reach
#                      host <D's address>", its back end is not in the
#                      session, the second client is unharmed
#   multi/slow-host    while ssh to D hangs, the coordinator goes on: B's
#                      front end is traced before D's failure is reported
#                      (the line "traced pid <front end>" comes first)
#   multi/detached     afterwards every traced process has its agent off
#                      (`propel detach` says so) and a new client is served
#                      right
#   multi/propeld-killed  a second session (a new client on A); once the
#                      back end on C is traced, kill -9 of B's propeld: the
#                      coordinator says in one line "host B lost"; the
#                      front end's agent (B) kept recording until its
#                      lease ended (its events after the kill are in the
#                      session: one kernel here, so B's rings are read in
#                      place), C's events are
#                      collected as usual; the client unharmed; after the
#                      lease every agent is off and no thread ptraced
#   multi/coordinator-killed  a third session; once C's back end is traced,
#                      kill -9 of propel on A: the client goes on unharmed;
#                      B's and C's propeld switch their agents off (no
#                      agent on, nothing ptraced) and keep their rings:
#                      `propel recover` of B's and of C's directory makes a
#                      session holding the front end, the back end
#   multi/vitals       a fourth session, `attach --follow --vitals`: B and C
#                      share A's kernel, so their processes are covered: the
#                      front end (B) and the back end (C) have off-CPU spans
#                      (socket waits between the client's requests)
#   multi/unharmed     after all four sessions no part saw a bad byte
# (multi/clock holds the clock exchange's error bound under 100 us: once
# the best of 8 round trips, 1.7 ms beside other suites at -j2, so this
# ran alone; the exchange now takes more round trips while the best is
# slow, 32 us beside them in a fresh clone's run, fcr8)
. "$(dirname "$0")/../lib.sh"
. "$PROPEL_TOP/tests/netns-lib.sh"
set -uo pipefail
expect_checks 9
need_root multi
CLOCK_ERR_NS=100000	# multi/clock: "tens of µs", so under 100 µs
t=$(tmpdir)
chmod 755 "$t"
cleanup() {
	local m
	netns_down
	kill $(jobs -p) 2>/dev/null
	# a propeld that lost its coordinator keeps its rings for `propel
	# recover` (by design); this test's are of no use once it is over
	for m in /dev/shm/propel/*/*.map; do
		grep -q "^P .* $t/svc\$" "$m" 2>/dev/null && rm -rf "$(dirname "$m")"
	done
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1
checker=$PROPEL_TOP/tests/e2e/comm-check.py
if ! ${CC:-gcc} -O2 -g -Wall -o "$t/svc" "$PROPEL_TOP/tests/fixtures/follow/svc.c"; then
	fail build/svc "cannot build svc.c"
	exit 1
fi
if ! netns_up "$t/net" A B C D 2>"$t/netns.err"; then
	fail multi "root, but cannot make the hosts: $(head -c 200 "$t/netns.err")"
	exit 1
fi
netns_nossh D
# ssh to D: 8 s of nothing, then the failure an unanswered ssh reports
cat >"$t/slowssh" <<EOF
#!/bin/sh
for a; do
	[ "\$a" = "${NETNS_ADDR[D]}" ] || continue
	sleep 8
	echo "ssh: connect to host \$a port 22: Connection timed out" >&2
	exit 255
done
exec $NETNS_SSH "\$@"
EOF
chmod 755 "$t/slowssh"
port=7001
d=$t/run
mkdir -p "$d"
chmod 777 "$d"

netns_bg C "$t/svc" backend $port >"$d/be.out" 2>&1
be=$NETNS_PID
netns_bg D "$t/svc" backend $port >"$d/be-d.out" 2>&1
bd=$NETNS_PID
netns_bg B "$t/svc" logger "$d/log.sock" $((port + 2)) >"$d/lg.out" 2>&1
lg=$NETNS_PID
for i in $(seq 1 100); do [ "$(cat "$d/be.out" "$d/lg.out" "$d/be-d.out" 2>/dev/null | grep -c ready)" = 3 ] && break; sleep 0.05; done
netns_bg B "$t/svc" front $((port + 1)) ${NETNS_ADDR[C]} $port "$d/log.sock" 127.0.0.1 $((port + 2)) \
	>"$d/fe.out" 2>&1
fe=$NETNS_PID
for i in $(seq 1 100); do grep -q ready "$d/fe.out" 2>/dev/null && break; sleep 0.05; done
wk=$(pgrep -P $fe | head -1)
netns_bg A "$t/svc" client ${NETNS_ADDR[B]} $((port + 1)) 600 20 >"$d/cl.out" 2>&1
cl=$NETNS_PID
netns_bg A "$t/svc" client ${NETNS_ADDR[D]} $port 600 20 >"$d/cl2.out" 2>&1
cl2=$NETNS_PID
sleep 0.5

netns_run A env PROPEL_SSH="$t/slowssh" PROPEL_CLOCK_EXCHANGE=1 \
	timeout 120 "$PROPEL" attach --follow -o "$d/s.db" $cl2 $cl >"$d/attach.out" 2>&1
arc=$?
wait $cl
crc=$?
wait $cl2
crc2=$?

host_of() { sqlite3 "$d/s.db" "SELECT host FROM processes WHERE pid=$1 LIMIT 1"; }
hosts_ok() {
	local p h want
	for p in "$cl:A" "$fe:B" "$wk:B" "$lg:B" "$be:C"; do
		h=$(host_of ${p%%:*})
		want=${p##*:}
		[ "$h" = "$want" ] || { echo "pid ${p%%:*} on host '$h', want $want"; return 1; }
	done
}
if [ $arc -ne 0 ]; then
	fail multi/attach "attach: status $arc: $(head -c 400 "$d/attach.out")"
elif [ $crc -ne 0 ]; then
	fail multi/attach "the client was harmed: $(cat "$d/cl.out")"
elif ! why=$(hosts_ok); then
	fail multi/attach "$why; $(head -c 400 "$d/attach.out")"
elif ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
	fail multi/attach "replay: $(head -c 200 "$d/replay.err")"
elif ! out=$(python3 "$checker" "$d/s.jsonl" --late --kinds tcp,pipe,unix,udp 2>&1); then
	fail multi/attach "$(echo "$out" | head -5)"
elif ! python3 - "$d/s.jsonl" $cl $fe $be >"$d/cross.out" <<'EOF'
import json, sys
path, cl, fe, be = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ev = [json.loads(l) for l in open(path)]
# matched recvs whose send is on another host: A->B, B->A, B->C, C->B
hops = set()
for e in ev:
    m = e.get("match")
    if e["kind"] == "recv" and m and m["pid"] != e["pid"]:
        hops.add((m["pid"], e["pid"]))
want = {(cl, fe), (fe, cl), (fe, be), (be, fe)}
sys.exit(0 if want <= hops else 1)
EOF
then
	fail multi/attach "not every cross-host hop is matched (A<->B, B<->C)"
else
	pass multi/attach
fi

clock=$(sqlite3 "$d/s.db" "SELECT key || ' ' || value FROM meta WHERE key LIKE 'clock.%'" 2>/dev/null)
echo "  multi/clock: $(echo $clock)"
# README "Clocks": the error bound is half the best of 8 round trips over
# the ssh line, "typically tens of µs" (here a veth pair on one machine)
eb=$(echo "$clock" | sed -n 's/^clock.B .*err_ns=\([0-9]*\).*/\1/p')
ec=$(echo "$clock" | sed -n 's/^clock.C .*err_ns=\([0-9]*\).*/\1/p')
if ! echo "$clock" | grepq '^clock.B offset_ns=-\?[0-9]* err_ns=[0-9]* method=exchange'; then
	fail multi/clock "no clock line for B: $clock"
elif ! is_num "$eb" || ! is_num "$ec"; then
	fail multi/clock "no error bound for B ('$eb') or C ('$ec'): $clock"
elif [ "$eb" -gt "$CLOCK_ERR_NS" ] || [ "$ec" -gt "$CLOCK_ERR_NS" ]; then
	fail multi/clock "error bound above $CLOCK_ERR_NS ns: $clock"
else
	pass multi/clock
fi

nd=$(grep -c "cannot reach host ${NETNS_ADDR[D]}" "$d/attach.out")
if [ "$nd" -ne 1 ]; then
	fail multi/unreachable "want one line 'cannot reach host ${NETNS_ADDR[D]}', got $nd: $(head -c 400 "$d/attach.out")"
elif [ -n "$(sqlite3 "$d/s.db" "SELECT pid FROM processes WHERE pid=$bd")" ]; then
	fail multi/unreachable "D's back end is in the session"
elif [ $crc2 -ne 0 ]; then
	fail multi/unreachable "the second client was harmed: $(cat "$d/cl2.out")"
else
	pass multi/unreachable
fi
lfe=$(grep -n "traced pid $fe " "$d/attach.out" | head -1 | cut -d: -f1)
ld=$(grep -n "cannot reach host ${NETNS_ADDR[D]}" "$d/attach.out" | head -1 | cut -d: -f1)
if [ -z "$lfe" ] || [ -z "$ld" ]; then
	fail multi/slow-host "no line for the front end or D: $(head -c 400 "$d/attach.out")"
elif [ "$lfe" -gt "$ld" ]; then
	fail multi/slow-host "B's front end traced only after D's ssh gave up: $(head -c 400 "$d/attach.out")"
else
	pass multi/slow-host
fi


bad=
why=$(detached $fe $wk $lg $be) || bad=$why # (the client has ended)
netns_run A "$t/svc" client ${NETNS_ADDR[B]} $((port + 1)) 10 0 >"$d/after.out" 2>&1 ||
	bad="a client after the session: $(cat "$d/after.out")"
if [ -n "$bad" ]; then
	fail multi/detached "$bad"
else
	pass multi/detached
fi

# propeld_on HOST: the pid of the `propeld --stdio` serving on HOST (its
# network namespace is the one of a process known there)
propeld_on() {
	local ref=$2 p
	for p in $(pgrep -x propeld); do
		[ "$(readlink /proc/$p/ns/net)" = "$(readlink /proc/$ref/ns/net)" ] &&
			grep -q -- --stdio /proc/$p/cmdline 2>/dev/null && { echo $p; return; }
	done
}

# a session of a new client on A until C's back end is traced; sets cl ap
follow_session() {
	local name=$1
	netns_bg A "$t/svc" client ${NETNS_ADDR[B]} $((port + 1)) 500 20 >"$d/$name-cl.out" 2>&1
	cl=$NETNS_PID
	sleep 0.3
	netns_bg A env PROPEL_SSH="$NETNS_SSH" "$PROPEL" attach --follow --duration 90 \
		-o "$d/$name.db" $cl >"$d/$name.out" 2>&1
	ap=$NETNS_PID
	for i in $(seq 1 400); do grep -q "traced pid $be " "$d/$name.out" 2>/dev/null && break; sleep 0.05; done
	sleep 0.5
}

# ---- B's propeld killed mid-session ----
name=multi/propeld-killed
follow_session pdkill
pdb=$(propeld_on B $fe)
killed_ns=$(awk '{printf "%d", $1 * 1e9}' /proc/uptime)
[ -n "$pdb" ] && kill -9 $pdb
wait $ap
arc=$?
wait $cl
crc=$?
sleep 2.5 # the agents' lease
if [ -z "$pdb" ]; then
	fail $name "no propeld on B: $(head -c 300 "$d/pdkill.out")"
elif [ $arc -ne 0 ]; then
	fail $name "attach: status $arc: $(head -c 400 "$d/pdkill.out")"
elif [ "$(grep -c 'host B lost' "$d/pdkill.out")" -ne 1 ]; then
	fail $name "want one line 'host B lost': $(head -c 400 "$d/pdkill.out")"
elif [ $crc -ne 0 ]; then
	fail $name "the client was harmed: $(cat "$d/pdkill-cl.out")"
elif ! "$PROPEL" replay --format=jsonl "$d/pdkill.db" >"$d/pdkill.jsonl" 2>"$d/replay.err"; then
	fail $name "replay: $(head -c 200 "$d/replay.err")"
elif ! out=$(python3 - "$d/pdkill.jsonl" $fe $be $killed_ns <<'EOF'
import json, sys
path, fe, be, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
after = {fe: 0, be: 0}
for l in open(path):
    e = json.loads(l)
    if e["kind"] == "send" and e["pid"] in after and e["ts_ns"] > t:
        after[e["pid"]] += 1
if after[fe] < 10 or after[be] < 10:
    print("sends after the kill: front end %d, back end %d" % (after[fe], after[be]))
    sys.exit(1)
EOF
); then
	fail $name "$out"
elif ! why=$(detached $fe $wk $lg $be); then
	fail $name "after the lease: $why"
else
	pass $name
fi

# ---- the coordinator killed ----
name=multi/coordinator-killed
since=$(date +%s)
follow_session cokill
pdb=$(propeld_on B $fe)
pdc=$(propeld_on C $be)
dirb=$(ring_dir "$pdb" "$since" d)
dirc=$(ring_dir "$pdc" "$since" d)
kill -9 $ap
wait $ap 2>/dev/null
wait $cl
crc=$?
sleep 1
if [ -z "$dirb" ] || [ -z "$dirc" ]; then
	fail $name "no session directory of B's or C's propeld ($pdb, $pdc)"
elif [ $crc -ne 0 ]; then
	fail $name "the client was harmed: $(cat "$d/cokill-cl.out")"
elif ! why=$(detached $fe $wk $lg $be); then
	fail $name "$why"
elif ! netns_run B "$PROPEL" recover -o "$d/rb.db" "$dirb" >"$d/recover-b.out" 2>&1; then
	fail $name "recover $dirb: $(head -c 300 "$d/recover-b.out")"
elif ! netns_run C "$PROPEL" recover -o "$d/rc.db" "$dirc" >"$d/recover-c.out" 2>&1; then
	fail $name "recover $dirc: $(head -c 300 "$d/recover-c.out")"
elif [ -z "$(sqlite3 "$d/rb.db" "SELECT pid FROM processes WHERE pid=$fe")" ] ||
	[ -z "$(sqlite3 "$d/rc.db" "SELECT pid FROM processes WHERE pid=$be")" ]; then
	fail $name "the recovered sessions lack the front end or the back end"
else
	pass $name
fi
rm -rf "$dirb" "$dirc"

# ---- vital signs on the hosts reached ----
# B and C are network namespaces of this kernel: `attach --follow --vitals`
# covers their processes from A (engine/follow.h follow_each_host).  The
# client naps 20 ms between requests, so the front end (B) and the back end
# (C) each wait in a socket read: off-CPU spans with reason socket, which
# the collector's scope (the traced processes) keeps only if it has them.
name=multi/vitals
# (400 requests, 8 s, and a 6-s window: the follow reaches C through B's
# propeld and an ssh login, seconds on a loaded host -- with 100 requests
# (2 s) and 3 s fcr17 saw no socket wait of C's back end, with 250 (5 s)
# fcr23 none of C's processes at all)
netns_bg A "$t/svc" client ${NETNS_ADDR[B]} $((port + 1)) 400 20 >"$d/vit-cl.out" 2>&1
cl=$NETNS_PID
sleep 0.3
netns_run A env PROPEL_SSH="$NETNS_SSH" timeout 120 "$PROPEL" attach --follow --vitals \
	--duration 6 -o "$d/vit.db" $cl >"$d/vit.out" 2>&1
arc=$?
wait $cl
crc=$?
spans() { sqlite3 "$d/vit.db" "SELECT count(*) FROM offcpu WHERE pid=$1 AND reason='socket'" 2>/dev/null; }
sfe=$(spans $fe) sbe=$(spans $be)
if nobpf=$(bpf_missing) && [ -n "$nobpf" ]; then
	skip $name "$nobpf"
elif grep -q 'off-CPU spans off' "$d/vit.out"; then
	fail $name "BPF here, but: $(grep -m1 -- --vitals "$d/vit.out")"
elif [ $arc -ne 0 ] || [ $crc -ne 0 ]; then
	fail $name "attach: status $arc, client $crc: $(head -c 300 "$d/vit.out") ... $(tail -n 3 "$d/vit.out" | tr '\n' ' ')"
elif ! grep -q 'attach: --vitals: .*--follow: the processes of this host and of the hosts on its kernel' "$d/vit.out"; then
	fail $name "no line saying which hosts are covered: $(head -c 400 "$d/vit.out")"
elif ! is_num "$sfe" || ! is_num "$sbe" || [ "$sfe" -lt 5 ] || [ "$sbe" -lt 5 ]; then
	fail $name "socket waits: front end (B) '$sfe', back end (C) '$sbe' off-CPU spans; traced: $(grep -oE '[A-Z]: traced pid [0-9]+ \([^)]*\)' "$d/vit.out" | tr '\n' ' '); back end $be; spans: $(sqlite3 "$d/vit.db" "SELECT pid, reason, count(*) FROM offcpu GROUP BY 1, 2" 2>&1 | tr '\n' ' ')"
else
	pass $name
fi

kill -TERM $fe $lg $be $bd 2>/dev/null
wait $fe $lg $be $bd 2>/dev/null
sleep 0.2
grep -h ' bad ' "$d"/be.out "$d"/fe.out "$d"/lg.out >"$d/all.out"
if [ "$(grep -c ' bad 0$' "$d/all.out")" -lt 4 ] || grep -v ' bad 0$' "$d/all.out" | grepq .; then
	fail multi/unharmed "a part saw a bad byte: $(tr '\n' ';' <"$d/all.out")"
else
	pass multi/unharmed
fi
