#!/usr/bin/env bash
# tests/e2e/follow-lease.sh - under --follow, a host's tracer (propeld)
# killed while its agents run must cost the traced program nothing more
# than the agents' switch-off (issue 30: wrk saw 2 s timeouts after a
# propeld kill: every process's first send on a new channel waited
# PROPEL_PROPAGATE_MS for an answer nobody would give).
#
#   send-after-kill   `propel record --follow -- python3 CLIENT`: the client
#                     waits until this script has killed propeld with
#                     SIGKILL, then opens a new TCP connection to a listener
#                     and sends: that first send (a propagation request)
#                     takes under 300 ms (it took 1.0 s: the wait for an
#                     answer)
#   agent-off         the client's agent switches off within the lease
#                     (its map file's X line, 2.6 s after the kill at most:
#                     before, it recorded on until propel ended)
#   client-ok         the client ran to its end (exit 0, its echo read back)
#   send-while-stopping  the session's end began (the tracer made
#                     PROPEL_STOPPING_FILE in the directory, as
#                     tracer_detach_all does before it switches the agents
#                     off): a client's first send on a new channel takes
#                     under 300 ms with its peer's injection made 2.5 s
#                     slower (PROPEL_TEST_PEER_DELAY_MS): no request, no
#                     wait (it waited for the injection: an attach's end,
#                     detaching one process after another, answered
#                     nobody, and a backend's reply waited past its own
#                     switch-off: three-tier slow's fail-stop)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
t=$(tmpdir)
trap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
# the interpreter itself (python3 may be a wrapper script, pyenv's)
py=$(python3 -c 'import sys; print(sys.executable)')

# an echo listener, untraced
"$py" - "$t/port" >/dev/null 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    d = c.recv(64)
    c.sendall(d)
    c.close()
EOF
for ((i = 0; i < 100; i++)); do [ -s "$t/port" ] && break; sleep 0.05; done
port=$(cat "$t/port" 2>/dev/null)
[ -n "$port" ] || { fail send-after-kill "the listener did not start"; exit 1; }

cat >"$t/client.py" <<EOF
import os, socket, sys, time
# until the test has killed propeld (it creates the file)
for _ in range(400):
    if os.path.exists("$t/killed"):
        break
    time.sleep(0.025)
else:
    sys.exit(3)
time.sleep(0.1)
s = socket.create_connection(("127.0.0.1", $port))
t0 = time.monotonic()
s.sendall(b"ping")
took = time.monotonic() - t0
print("send %.3f" % took, flush=True)
ok = s.recv(64) == b"ping"
time.sleep(3) # while the test looks at its agent
sys.exit(0 if ok else 4)
EOF
"$PROPEL" record --follow -o "$t/s.db" -- "$py" "$t/client.py" >"$t/out" 2>"$t/err" &
rp=$!
pd=
for ((i = 0; i < 200; i++)); do
	pd=$(pgrep -P "$rp" -x propeld | head -1)
	cpid=$(pgrep -f "^$py $t/client.py" | head -1)
	[ -n "$pd" ] && [ -n "$cpid" ] && break
	sleep 0.05
done
sdir=
for ((i = 0; i < 100; i++)); do
	sdir=$(ls -d /dev/shm/propel/d"$pd"-* 2>/dev/null | head -1)
	[ -n "$sdir" ] && ls "$sdir"/"$cpid".*.map >/dev/null 2>&1 && break
	sleep 0.05
done
sleep 0.3
kill -9 "$pd"
t0=$EPOCHREALTIME
touch "$t/killed"
# the agent switched off within the lease (PROPEL_LEASE_MS, 2 s: the
# keeper ends with propeld), while the client still runs
m=$(ls "$sdir"/"$cpid".*.map 2>/dev/null | head -1) off=
for ((i = 0; i < 60; i++)); do
	# (when the agent wrote it: the file's time, not when this loop,
	# slowed by a loaded machine, saw it)
	[ -n "$m" ] && grep -q '^X ' "$m" && { off=$(awk -v a="$t0" -v b="$(stat -c %.9Y "$m")" 'BEGIN { printf "%.2f", b - a }'); break; }
	sleep 0.05
done
if [ -z "$m" ]; then fail agent-off "the client's map file not found in ${sdir:-(no directory)}"
elif [ -z "$off" ]; then fail agent-off "no X line in $m 3 s after the kill"
else num_le agent-off "$off" 2.6 "switch-off after the kill (s)"; fi
wait "$rp"
rc=$?
took=$(awk '/^send / { print $2 }' "$t/out")
num_lt send-after-kill "$took" 0.3 "first send after the kill (s)"
if [ "$rc" -eq 0 ]; then pass client-ok
else fail client-ok "propel record exited $rc: $(tail -2 "$t/err")"; fi
rm -rf "$sdir"

# ---- the session's end began: no wait for a peer ----
cat >"$t/client2.py" <<EOF
import os, socket, sys, time
for _ in range(400):
    if os.path.exists("$t/go"):
        break
    time.sleep(0.025)
else:
    sys.exit(3)
s = socket.create_connection(("127.0.0.1", $port))
t0 = time.monotonic()
s.sendall(b"ping")
print("send %.3f" % (time.monotonic() - t0), flush=True)
sys.exit(0 if s.recv(64) == b"ping" else 4)
EOF
PROPEL_TEST_PEER_DELAY_MS=2500 timeout 60 "$PROPEL" record --follow -o "$t/s2.db" -- \
	"$py" "$t/client2.py" >"$t/out2" 2>"$t/err2" &
rp=$!
sdir=
for ((i = 0; i < 200; i++)); do
	cpid=$(pgrep -f "^$py $t/client2.py" | head -1)
	[ -n "$cpid" ] && sdir=$(grep -o '/dev/shm/propel/[^ ]*\.ring' "/proc/$cpid/maps" 2>/dev/null | head -1)
	[ -n "$sdir" ] && break
	sleep 0.05
done
sdir=${sdir%/*}
[ -n "$sdir" ] && : >"$sdir/stopping"
touch "$t/go"
wait "$rp"
rc=$?
took=$(awk '/^send / { print $2 }' "$t/out2")
if [ -z "$sdir" ]; then
	fail send-while-stopping "the client's agent directory not found"
elif [ "$rc" -ne 0 ]; then
	fail send-while-stopping "propel record exited $rc: $(tail -2 "$t/err2")"
else
	num_lt send-while-stopping "$took" 0.3 "first send once the end began (s)"
fi
