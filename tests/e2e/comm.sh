#!/usr/bin/env bash
# tests/e2e/comm.sh - communication events and exact matching (issue 9,
# part 1): inject/agent/comm.c, engine/chan.c, engine/match.c, the
# send/recv fields of `propel replay` (DESIGN.md, "Command line").
#
#   record/talk/O0|O2|O3  tests/fixtures/comm/talk.c (a server and its
#                         forked client over TCP, a pipe, a UNIX stream,
#                         UDP and a UNIX datagram socket, every call of the
#                         send/recv family, sendfile and splice; then a
#                         helper forked by the client shares its TCP socket
#                         and pipe; each checks every byte it gets)
#                         under `propel record`: exit status 0 and output
#                         as untraced; every recv carries chan/peer/bytes
#                         and a match naming a send of its channel whose
#                         bytes hold the recv's whole range (the fixture
#                         never reads across two sends, so an offset off by
#                         any amount shows; datagrams: same length); every
#                         stream direction's offsets cover
#                         [0, total) without gap; each process's event
#                         bytes per channel kind equal what it reports
#                         (tests/e2e/comm-check.py)
#   record/talk/text      the text replay names the channel, offset and sender
#   check/can-fail        the checker rejects a replay with one recv's
#                         offset moved by one byte and one match removed
#   attach/late-tcp       tests/fixtures/comm/stream.c: a client and a server
#                         (two processes) in the middle of a busy TCP stream
#                         (both socket buffers full), then `propel attach
#                         --mode full SERVER CLIENT` until they exit: both
#                         unharmed (every byte checked by them), every recv
#                         after the sender's first traced byte matched, and
#                         each end's offsets end exactly at the totals the
#                         programs report (absolute offsets, both directions)
#   attach/late-pipe      stream.c's pipe mode: a writer and its reader in the
#                         middle of a busy pipe; the writer is injected
#                         first, the reader later (it takes its position
#                         from the writer's count and the backlog): both
#                         unharmed, every recv after the first traced write
#                         matched and wholly inside its write
#   attach/late-pipe-again  the writer traced alone by a first `attach
#                         --duration 1` (its agent counts the pipe's bytes
#                         in that session's positions file), then both in
#                         a second session: the second one's counts are
#                         its own (comm_start forgets the first session's
#                         files), every recv after the writer's first
#                         traced send matched and wholly inside its write
#   attach/late-pipe-blocked  the same with a writer that pauses 200 ms
#                         after each chunk, the reader attached first, while
#                         it waits inside read(): that read is adopted in
#                         flight (recorded at its return), the reader takes
#                         its position from the writer's even though the
#                         writer's count began after the reader's injection,
#                         and every byte sent after the writer's first
#                         traced send is in a traced recv
#   record/tcp6/dual|v6   tests/fixtures/comm/tcp6.py (the distribution's
#                         python3, whose socket calls are its own): a
#                         dual-stack server and an IPv4 client agree on the
#                         channel (the IPv4-mapped address named as IPv4),
#                         and IPv6 on ::1: every recv matched, offsets
#                         cover the stream
#   record/churn          tests/fixtures/comm/churn.c: 5,000 UNIX stream
#                         connections (two positions files each): the
#                         client gains at most 8,192 + 64 mappings
#                         (COMM_CTR_MAPS: each file stays mapped, and a
#                         process has vm.max_map_count in all), every byte
#                         comes back, record says once that the offsets of
#                         new channels are off, and the session replays
#   hot/plain-read        reads of a regular file: the agent looks at the
#                         descriptor once (one fstat), not per call
# propel-test: takes 35
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 13
t=$(tmpdir)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures/comm
checker=$PROPEL_TOP/tests/e2e/comm-check.py

for lvl in O0 O2 O3; do
	$cc -$lvl -g -Wall -o "$t/talk-$lvl" "$fix/talk.c" ||
		{ fail "build/talk-$lvl" "cannot build"; continue; }
	name=record/talk/$lvl
	d=$t/$lvl
	mkdir -p "$d"
	if ! timeout 60 "$t/talk-$lvl" "$d" 40 >"$d/plain.out" 2>"$d/plain.err"; then
		fail "$name" "the fixture fails untraced: $(head -c 200 "$d/plain.err")"
		continue
	fi
	timeout 120 "$PROPEL" record -o "$d/s.db" -- "$t/talk-$lvl" "$d" 40 \
		>"$d/rec.out" 2>"$d/rec.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name" "status $rc under record: $(head -c 300 "$d/rec.err")"
		continue
	fi
	if ! diff <(sort "$d/plain.out") <(sort "$d/rec.out") >"$d/diff"; then
		fail "$name" "output differs under record: $(head -c 300 "$d/diff")"
		continue
	fi
	if ! "$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>"$d/replay.err"; then
		fail "$name" "replay: $(head -c 200 "$d/replay.err")"
		continue
	fi
	if out=$(python3 "$checker" "$d/s.jsonl" --report "$d/rec.out" --from-zero \
		--within --kinds tcp,pipe,unix,udp,unixd 2>&1); then
		pass "$name"
	else
		fail "$name" "$(echo "$out" | head -5)"
	fi
done

# the text form, from the -O2 session
if [ -f "$t/O2/s.db" ]; then
	"$PROPEL" replay "$t/O2/s.db" >"$t/text" 2>&1
	if grep -qE '/\* recv: fd [0-9]+, [0-9]+ bytes from 127\.0\.0\.1:[0-9]+, tcp:127\.0\.0\.1:[0-9]+>127\.0\.0\.1:[0-9]+ @[0-9]+, sent by [0-9]+/[0-9]+ \*/' "$t/text" &&
		grep -qE '/\* send: fd [0-9]+, [0-9]+ bytes to pipe, pipe:[0-9]+ @[0-9]+ \*/' "$t/text"; then
		pass record/talk/text
	else
		fail record/talk/text "no readable send/recv lines: $(grep -m2 -E 'send:|recv:' "$t/text")"
	fi
	# the checker must be able to fail: one offset moved, one match gone
	python3 - "$t/O2/s.jsonl" "$t/bad1.jsonl" "$t/bad2.jsonl" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
def mutate(out, fn):
    done = False
    with open(out, "w") as f:
        for l in lines:
            e = json.loads(l)
            if not done and e["kind"] == "recv" and "offset" in e and e["bytes"] > 1:
                fn(e)
                done = True
            f.write(json.dumps(e) + "\n")
def shift(e):
    # past the end of its send: the recv's first byte is another send's
    e["offset"] += 100000
mutate(sys.argv[2], shift)
mutate(sys.argv[3], lambda e: e.pop("match"))
EOF
	if ! python3 "$checker" "$t/bad1.jsonl" >/dev/null 2>&1 &&
		! python3 "$checker" "$t/bad2.jsonl" >/dev/null 2>&1; then
		pass check/can-fail
	else
		fail check/can-fail "the checker accepted a broken replay"
	fi
fi

# ---- attach in the middle of a busy TCP stream ----
name=attach/late-tcp
if ! $cc -O2 -g -o "$t/stream" "$fix/stream.c"; then
	fail "$name" "cannot build stream.c"
else
	"$t/stream" server "$t/port" 0 >"$t/server.out" 2>&1 &
	sp=$!
	for i in $(seq 1 50); do [ -s "$t/port" ] && break; sleep 0.05; done
	"$t/stream" client "$(cat "$t/port")" 3 >"$t/client.out" 2>&1 &
	cp=$!
	sleep 1
	timeout 60 "$PROPEL" attach --mode full -o "$t/a.db" "$sp" "$cp" >"$t/attach.out" 2>&1
	arc=$?
	wait $sp; src=$?
	wait $cp; crc=$?
	if [ $arc -ne 0 ]; then
		fail "$name" "attach: status $arc: $(head -c 300 "$t/attach.out")"
	elif [ $src -ne 0 ] || [ $crc -ne 0 ] || ! grep -q ' ok$' "$t/server.out" ||
		! grep -q ' ok$' "$t/client.out"; then
		fail "$name" "the programs were harmed: $(cat "$t/server.out" "$t/client.out" | head -c 300)"
	elif ! "$PROPEL" replay --format=jsonl "$t/a.db" >"$t/a.jsonl" 2>"$t/a.err"; then
		fail "$name" "replay: $(head -c 200 "$t/a.err")"
	else
		read -r _ _ s_recv _ s_sent _ <"$t/server.out"
		read -r _ _ c_sent _ c_recv _ <"$t/client.out"
		if out=$(python3 "$checker" "$t/a.jsonl" --late --within --kinds tcp \
			--end "$sp:recv:$s_recv" --end "$sp:send:$s_sent" \
			--end "$cp:send:$c_sent" --end "$cp:recv:$c_recv" 2>&1); then
			pass "$name"
		else
			fail "$name" "$(echo "$out" | head -5)"
		fi
	fi
fi

# ---- attach in the middle of a busy pipe ----
# late_pipe NAME PAUSE_MS ORDER: stream.c's pipe mode, attached in ORDER
# ("wr": the writer first; "rw": the reader first); with "rw" the reader
# waits in read() at its injection (PAUSE_MS > 0), and every byte the writer
# sent after its first traced send must be in a traced recv (that read's
# too: it is adopted in flight)
late_pipe() {
	local name=$1 pause=$2 order=$3 d=$t/$2$3 rp wp arc rrc out
	[ -x "$t/stream" ] || return
	mkdir -p "$d"
	"$t/stream" pipe "$d/wpid" "${4:-3}" $pause >"$d/pipe.out" 2>&1 &
	rp=$!
	for i in $(seq 1 50); do [ -s "$d/wpid" ] && break; sleep 0.05; done
	wp=$(cat "$d/wpid")
	sleep 0.7
	if [ $order = again ]; then
		timeout 60 "$PROPEL" attach --duration 1 --mode full \
			-o "$d/first.db" "$wp" >"$d/first.out" 2>&1 ||
			{ fail "$name" "the first attach: $(tail -1 "$d/first.out")"; wait $rp; return; }
		order=wr
	fi
	if [ $order = wr ]; then set -- "$wp" "$rp"; else set -- "$rp" "$wp"; fi
	timeout 60 "$PROPEL" attach --mode full -o "$d/p.db" "$@" >"$d/attach.out" 2>&1
	arc=$?
	wait $rp; rrc=$?
	if [ $arc -ne 0 ]; then
		fail "$name" "attach: status $arc: $(head -c 300 "$d/attach.out")"
	elif [ $rrc -ne 0 ] || [ "$(grep -c ' ok$' "$d/pipe.out")" -ne 2 ]; then
		fail "$name" "the programs were harmed: $(head -c 300 "$d/pipe.out")"
	elif ! "$PROPEL" replay --format=jsonl "$d/p.db" >"$d/p.jsonl" 2>"$d/p.err"; then
		fail "$name" "replay: $(head -c 200 "$d/p.err")"
	elif ! out=$(python3 "$checker" "$d/p.jsonl" --late --within --kinds pipe 2>&1); then
		fail "$name" "$(echo "$out" | head -5)"
	elif [ $order = rw ] && ! out=$(python3 -c '
import json, sys
ev = [e for e in map(json.loads, open(sys.argv[1]))
      if e["kind"] in ("send", "recv") and e.get("chan", "").startswith("pipe:")]
s = sum(e["bytes"] for e in ev if e["kind"] == "send")
at = min([e["offset"] for e in ev if e["kind"] == "send"] or [0])
r = sum(e["bytes"] for e in ev if e["kind"] == "recv" and e["offset"] >= at)
print("sent %d bytes from offset %d, received %d of them in traced recvs" % (s, at, r))
sys.exit(0 if s == r and s > 0 else 1)' "$d/p.jsonl"); then
		fail "$name" "$out"
	else
		pass "$name"
	fi
}
late_pipe attach/late-pipe 0 wr
late_pipe attach/late-pipe-again 0 again 5
late_pipe attach/late-pipe-blocked 200 rw

# ---- a process's positions files are bounded ----
if $cc -O2 -g -Wall -o "$t/churn" "$fix/churn.c"; then
	d=$t/churn.d
	mkdir -p "$d"
	timeout 120 "$PROPEL" record -o "$d/c.db" -- "$t/churn" "$d" 5000 \
		>"$d/out" 2>"$d/err"
	rc=$?
	maps=$(awk '$1 == "mappings" { print $2 }' "$d/out")
	said=$(grep -c "offsets of new pipes and UNIX streams off: 8192 positions files mapped" "$d/err")
	if [ $rc -ne 0 ] || ! grep -qx ok "$d/out"; then
		fail record/churn "status $rc: $(tail -2 "$d/out" "$d/err" | tr '\n' ' ')"
	elif ! [ "${maps:-999999}" -le $((8192 + 64)) ]; then
		fail record/churn "the client gained ${maps:-no count of} mappings in 5000 connections (at most $((8192 + 64)))"
	elif [ "$said" -ne 1 ]; then
		fail record/churn "record said $said times that the offsets are off: $(head -c 300 "$d/err")"
	elif ! "$PROPEL" replay "$d/c.db" >/dev/null 2>"$d/replay.err"; then
		fail record/churn "replay: $(head -c 200 "$d/replay.err")"
	else
		pass record/churn
	fi
else
	fail record/churn "cannot build tests/fixtures/comm/churn.c"
fi

# ---- IPv6 and dual stack ----
py=/usr/bin/python3
for m in dual v6; do
	name=record/tcp6/$m
	if [ ! -x $py ]; then
		skip "$name" "no $py"
		continue
	fi
	"$PROPEL" record -o "$t/$m.db" -- $py "$fix/tcp6.py" $m >"$t/$m.out" 2>"$t/$m.err"
	if ! grep -q '^got 2190$' "$t/$m.out"; then
		fail "$name" "the program: $(head -c 200 "$t/$m.out" "$t/$m.err")"
	elif ! "$PROPEL" replay --format=jsonl "$t/$m.db" >"$t/$m.jsonl" 2>/dev/null; then
		fail "$name" "replay failed"
	elif out=$(python3 "$checker" "$t/$m.jsonl" --kinds tcp --from-zero 2>&1); then
		want='"chan":"tcp:127\.0\.0\.1:[0-9]+>127\.0\.0\.1:[0-9]+"'
		[ $m = v6 ] && want='"chan":"tcp:\[::1\]:[0-9]+>\[::1\]:[0-9]+"'
		if grep -qE "$want" "$t/$m.jsonl"; then
			pass "$name"
		else
			fail "$name" "no channel like $want"
		fi
	else
		fail "$name" "$(echo "$out" | head -3)"
	fi
done

# ---- reads of a regular file: one look at the descriptor ----
name=hot/plain-read
if ! command -v strace >/dev/null; then
	skip "$name" "no strace"
else
	cat >"$t/reads.c" <<'EOF'
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	char b[64];
	int fd = dup2(open(argv[1], O_RDONLY), 100), i;

	for (i = 0; i < 2000; i++)
		if (pread(fd, b, 1, 0) < 0 || read(fd, b, 0) < 0)
			return 1;
	return 0;
}
EOF
	$cc -O2 -o "$t/reads" "$t/reads.c"
	strace -f -qq -e trace=execve,fstat,newfstatat,getsockopt,ioctl \
		-o "$t/strace" "$PROPEL" record -o "$t/r.db" -- "$t/reads" \
		"$t/reads.c" >/dev/null 2>&1
	# looks at descriptor 100 by the traced program (its pid: its execve)
	pid=$(grep -m1 'execve("[^"]*/reads", ' "$t/strace" | awk '{print $1}')
	n=$(grep "^$pid " "$t/strace" | grep -cE '(fstat|newfstatat|getsockopt|ioctl)\(100,')
	reads=$("$PROPEL" replay --format=jsonl "$t/r.db" 2>/dev/null | grep -c '"kind":"entry".*"func":"read"')
	if [ "$reads" -lt 2000 ]; then
		fail "$name" "$reads read calls traced, want 2000"
	elif [ -n "$pid" ] && [ "$n" -ge 1 ] && [ "$n" -le 2 ]; then
		pass "$name"
	else
		fail "$name" "$n fstat calls on the file for 2000 reads"
	fi
fi
