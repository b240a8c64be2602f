#!/usr/bin/env bash
# tests/e2e/harm-sessions.sh - one propel session's end never switches off
# another session's agent (issue 30; inject/tracer.c maps_session).
#
# Session A is `propel record --follow` of a client (svc client, one
# connection) that follows into an untraced server (svc backend: A's agent
# goes into it, its map file in A's propeld directory).  The user then
# switches A's agent in the server off (`propel detach SERVER`) and traces
# the server in a session of its own, B (`propel attach SERVER`).  A's
# propeld then switches off every agent of A's directory -- once because A's
# propel is killed with SIGKILL (propeld's pd_lost), once because A ends
# as it should (propeld's STOP) -- and must leave B's alone: the server's
# pid is named by a map file of A's directory and maps the agent library,
# which is all the old tracer_traced_pids looked at.
# Each round (kill, end):
#   ROUND/other-on       B's agent in the server is still on once A's
#                        propeld has ended: its map file in B's directory
#                        has no X line, and its lease thread runs
#   ROUND/other-records  B records the server's requests made after that
#                        (30 requests of an untraced client: at least 30
#                        calls of read_line in B's session)
#   ROUND/other-ends     B's own end (SIGINT) exits 0, the server's text
#                        equals its file after it, and every request was
#                        answered right
#   ROUND/own-off        A's own agents are switched off: kill: the
#                        recorded shell's map file in A's directory ends
#                        "X n" within 3 s (its code restored by A's
#                        propeld; the lease alone leaves "X 0 inert");
#                        end: A exits 0
# And a process that still maps an old session's files (an agent leaves
# its comm position files mapped after its session: a daemon followed
# before holds them) but holds none open and has no ring of the new
# session yet (Debian's python3, idle in a sleep) is the new session's:
#   stale/lasts     `propel attach --duration 2` of it traces for its 2 s
#                   (the old rule took it for another session's: the
#                   attach ended at its first count, after ~50 ms)
#   stale/restored  its text equals its file after the attach
# Needs root (ptrace).  About 25 s.
# propel-test: takes 20
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 10
need_root harm-sessions || exit 0
t=$(tmpdir)
srv= a= b= apid=
cleanup() {
	touch "$t"/*/end-a 2>/dev/null
	[ -n "$a" ] && kill -9 "$a" 2>/dev/null
	[ -n "$b" ] && kill -9 "$b" 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1

# -O0: read_line, the function counted, stays a function
if ! gcc -O0 -g -o "$t/svc" "$PROPEL_TOP/tests/fixtures/follow/svc.c"; then
	for r in kill end; do
		for c in other-on other-records other-ends own-off; do
			fail "$r/$c" "cannot build tests/fixtures/follow/svc.c"
		done
	done
	exit 1
fi

# until CMD succeeds, every 50 ms, at most SECS s
poll_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
has_map() { ls "$1"/"$2".*.map >/dev/null 2>&1; }
map_off() { # DIR PID: every map file of PID in DIR ends switched off
	local m
	has_map "$1" "$2" || return 1
	for m in "$1"/"$2".*.map; do
		grep -q '^X ' "$m" || return 1
	done
}
restored() { # DIR PID: PID's agent in DIR switched off, its code restored
	local m
	has_map "$1" "$2" || return 1
	for m in "$1"/"$2".*.map; do
		tail -1 "$m" | grep -qE '^X [0-9]+$' || return 1
	done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
lease_thread() { grep -qx propel-lease /proc/"$1"/task/*/comm 2>/dev/null; }

round() { # kill | end
	local r=$1 port d=$t/$1 pd adir bdir sh n why out rc
	mkdir -p "$d"
	port=$(free_port)
	"$t/svc" backend "$port" >"$d/be.out" 2>&1 &
	srv=$!
	if ! poll_for 5 grep -q ready "$d/be.out"; then
		for c in other-on other-records other-ends own-off; do
			fail "$r/$c" "the server did not start"
		done
		return
	fi
	# A: the client's one connection, then a wait until $d/end-a
	"$PROPEL" record --follow -o "$d/a.db" -- sh -c \
		"'$t/svc' client 127.0.0.1 $port 20 20 >'$d/cl-a.out'; while [ ! -e '$d/end-a' ]; do sleep 0.05; done" \
		>"$d/a.out" 2>&1 &
	a=$! apid=$!
	poll_for 10 eval 'pd=$(pgrep -P "$a" -x propeld | head -1); [ -n "$pd" ]'
	adir=
	poll_for 10 eval 'adir=$(ls -d /dev/shm/propel/d"$pd"-* 2>/dev/null | head -1); [ -n "$adir" ] && has_map "$adir" "$srv"'
	sh=$(pgrep -P "$a" -x sh | head -1)
	poll_for 10 grep -q "client ok" "$d/cl-a.out"
	echo "  $r: A (propel $a, propeld $pd) traced the server $srv: $(ls "$adir" 2>/dev/null | grep -c "^$srv\..*\.map") map file(s)"
	# the user takes the server out of A and into a session of its own
	"$PROPEL" detach "$srv" >"$d/detach.out" 2>&1
	echo "  $r: $(tail -1 "$d/detach.out")"
	"$PROPEL" attach -o "$d/b.db" "$srv" >"$d/b.out" 2>&1 &
	b=$!
	bdir=
	poll_for 10 eval 'bdir=$(ls -d /dev/shm/propel/"$b"-* 2>/dev/null | head -1); [ -n "$bdir" ] && has_map "$bdir" "$srv"'
	poll_for 5 lease_thread "$srv"
	# A's propeld switches off every agent of A's directory
	if [ "$r" = kill ]; then
		kill -9 "$a"
	else
		touch "$d/end-a"
	fi
	wait "$a" 2>/dev/null
	rc=$?
	a=
	poll_for 10 gone "$pd"
	sleep 0.3
	why=
	[ -n "$bdir" ] || why="$why B traced nothing;"
	gone "$pd" || why="$why A's propeld still runs;"
	[ -n "$bdir" ] && map_off "$bdir" "$srv" && why="$why B's map file of the server ends with '$(grep '^X ' "$bdir"/"$srv".*.map | tail -1)';"
	lease_thread "$srv" || why="$why no lease thread in the server;"
	if [ -n "$why" ]; then fail "$r/other-on" "$why"; else pass "$r/other-on"; fi
	if [ "$r" = kill ]; then
		if [ -n "$sh" ] && poll_for 3 restored "$adir" "$sh"; then
			pass "$r/own-off"
		else
			fail "$r/own-off" "A's recorded shell (pid ${sh:-none}): $(tail -1 "$adir"/"${sh:-none}".*.map 2>/dev/null)"
		fi
	elif [ "$rc" -eq 0 ]; then
		pass "$r/own-off"
	else
		fail "$r/own-off" "A exited $rc: $(tail -1 "$d/a.out")"
	fi
	# B goes on recording the server
	"$t/svc" client 127.0.0.1 "$port" 30 0 >"$d/cl-b.out" 2>&1
	kill -INT "$b"
	wait "$b"
	rc=$?
	b=
	n=$("$PROPEL" replay --format=jsonl "$d/b.db" 2>/dev/null |
		grep -c "\"kind\":\"entry\",\"pid\":$srv,.*\"func\":\"read_line\"")
	num_ge "$r/other-records" "$n" 30 "calls of read_line B recorded in the server"
	why=
	[ "$rc" -eq 0 ] || why="$why B exited $rc: $(tail -1 "$d/b.out");"
	out=$(text_restored "$srv") || why="$why the server's text after B: $out;"
	grep -q "client ok 20 bad 0" "$d/cl-a.out" || why="$why A's client: $(tail -1 "$d/cl-a.out");"
	grep -q "client ok 30 bad 0" "$d/cl-b.out" || why="$why the client after: $(tail -1 "$d/cl-b.out");"
	if [ -n "$why" ]; then fail "$r/other-ends" "$why"; else pass "$r/other-ends"; fi
	# A's shell outlives a killed propel: its loop ends here
	touch "$d/end-a"
	[ -z "$sh" ] || poll_for 5 gone "$sh"
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
	rm -rf "$adir" "$bdir" /dev/shm/propel/"$apid"-* 2>/dev/null
}

round kill
round end

# stale: python3 maps a file of an old session's directory, closes and
# unlinks it (as the agent does its position files) and sleeps (ctypes:
# the mmap module would keep a descriptor of the file)
stale() {
	local d=$t/stale old py t0 t1 ms out why=
	mkdir -p "$d"
	old=$(mktemp -d /dev/shm/propel/d999999-1-XXXXXX)
	/usr/bin/python3 -c '
import ctypes, os, sys, time
p = sys.argv[1] + "/chan.tmp.1.1"
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600); os.ftruncate(fd, 4096)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
a = libc.mmap(None, 4096, 3, 1, fd, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED
if a in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap: " + os.strerror(ctypes.get_errno()))
os.close(fd); os.unlink(p)
print("ready", flush=True)
time.sleep(60)' "$old" >"$d/py.out" 2>&1 &
	py=$!
	srv=$py
	if ! poll_for 10 grep -q ready "$d/py.out"; then
		fail stale/lasts "python3 did not start: $(tail -1 "$d/py.out")"
		fail stale/restored "python3 did not start"
		return
	fi
	t0=$(date +%s%N)
	out=$("$PROPEL" attach -o "$d/s.db" --duration 2 "$py" 2>&1)
	rc=$?
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	[ "$rc" -eq 0 ] || why="$why attach exited $rc: $(echo "$out" | tail -1);"
	[ "$ms" -ge 2000 ] || why="$why attach ended after $ms ms of --duration 2;"
	if [ -n "$why" ]; then fail stale/lasts "$why"; else pass stale/lasts; fi
	if out=$(text_restored "$py"); then
		pass stale/restored
	else
		fail stale/restored "python3's text after the attach: $out"
	fi
	kill "$py" 2>/dev/null
	wait "$py" 2>/dev/null
	srv=
	rm -rf "$old"
}
stale
