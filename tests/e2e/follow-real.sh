#!/usr/bin/env bash
# tests/e2e/follow-real.sh - issue 9's propagation on Debian's own stripped
# servers, started untraced before propel (installed by tests/install-deps.sh
# test): the work is followed into a server that dispatches through function
# pointers, every message matched, the server unharmed.
#
#   nginx/record   `propel record --follow -- curl` of a 1 MiB random file
#                  from /usr/sbin/nginx (one worker): the worker is injected
#                  when curl connects; curl's request is matched by the
#                  worker's recv and every byte the worker sends (writev,
#                  sendfile) by curl's recvs, offsets agreeing
#                  (tests/e2e/comm-libs-check.py); the file curl saved is
#                  byte-identical; the worker's own calls are in the trace
#                  (>= 20 functions, ngx_http_write_filter among them)
#   nginx/after    the worker is untraced (TracerPid 0), the same process,
#                  serves the file byte-identical again; no worker died
#   nginx/attach-load  `propel attach --follow --mode full --duration 1` of a
#                  running wrk (8 connections, ~25K req/s here): the worker
#                  is injected under load; every request and response whose
#                  sender was traced matched (--late --open-end), >= 1000
#                  each way; wrk sees no error; the worker untraced after,
#                  serving, none died
#   redis/attach   `propel attach --follow --mode full` of a live redis-cli
#                  sending `INCR counter` every 10 ms to /usr/bin/redis-server:
#                  redis-server is injected; every command and every reply
#                  whose sender was traced matched, offsets agreeing (the
#                  first reply may have been sent before the server was
#                  injected, the last after its tracing ended:
#                  tests/e2e/comm-check.py --late --open-end), >= 50 of each
#                  in the 1.5 s; the server's request
#                  path is in the trace: incrCommand entered under call under
#                  processCommand
#   redis/after    redis-cli printed 1..600 in order (no byte of a command
#                  or reply changed) and exited 0; both processes untraced
#                  after the detach (redis-cli unless it has already exited);
#                  redis answers PING
#
#   sshd/record    `propel record --follow -- sftp` (its own ssh child) of a
#                  300 KB random file from /usr/sbin/sshd (tests/real/
#                  servers.sh sshd_setup: own config and keys, internal-sftp,
#                  libcrypto's key exchange and cipher): sshd's process for
#                  the connection is injected -- sshd re-execs itself for it,
#                  and ssh speaks while the connection still waits in the
#                  listener's queue --, the file arrives byte-identical, every
#                  TCP recv whose bytes a traced send sent is matched
#                  (--covered: sshd's banner goes out before the client
#                  speaks, and its sandboxed child sends with its agent
#                  stopped), >= 5 each for ssh and sshd, ssh's matched recvs
#                  hold >= the file's bytes, sshd's own calls are in the
#                  trace (>= 50 functions); the one peer propel may not
#                  trace, sshd's pre-authentication child in its seccomp
#                  sandbox, is said in one line, and no other peer is
#                  refused; no process ended without a clean exit
#   sshd/after     the listener untraced and alive serves the file again;
#                  sshd's log has no fatal error
#
#   python/record  `propel record --follow -- curl` of a 200 KB random file
#                  from python3 -m http.server (the python3 first on the
#                  user's PATH, $PROPEL_PATH_PYTHON3 under tests/run.sh:
#                  Debian's, or a version manager's such as pyenv's
#                  3.11, which keeps its symbols; the interpreter
#                  dispatches through its own function pointers, a thread
#                  per request): python3 is injected when curl
#                  connects; every recv matched, offsets agreeing; the file
#                  byte-identical; the interpreter's own calls are in the
#                  trace (>= 100 functions, _PyEval_EvalFrameDefault and
#                  sock_sendall among them)
#   python/after   the same server untraced (TracerPid 0), alive, serves the
#                  file byte-identical again
#
# tests/real/follow-sshd.sh repeats sshd/record N times.
#
# Needs root (propeld injects the servers).  Takes ~25 s.
# propel-test: takes 35
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 9
. "$PROPEL_TOP/tests/real/servers.sh"
check_py=$PROPEL_TOP/tests/e2e/comm-libs-check.py
checker=$PROPEL_TOP/tests/e2e/comm-check.py
export PROPEL_TEST_QUIET=1

if ! is_root; then
	skip follow-real "needs root (propeld injects the servers)"
	exit 77
fi
t=$(tmpdir)
chmod 755 "$t"
sshd_pid= py_pid=
trap 'real_cleanup; [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null; [ -n "$py_pid" ] && kill "$py_pid" 2>/dev/null; kill -9 $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT

tracer() { awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# entries.py JSONL PID: distinct functions PID entered, one per line
# (replay's entry lines read by a pattern, a name with an escape through
# json: json.loads of every line of a Python trace took ~7 s of CPU)
cat >"$t/funcs.py" <<'EOF'
import json, re, sys
pid = int(sys.argv[2])
entry = re.compile(r'\{"kind":"entry","pid":(\d+),"tid":\d+,"ts_ns":\d+,"func":"([^"\\]*)"')
seen = set()
for line in open(sys.argv[1]):
    if line.startswith('{"kind":"exit"'):
        continue
    m = entry.match(line)
    if m:
        if int(m.group(1)) == pid:
            seen.add(m.group(2))
        continue
    e = json.loads(line)
    if e["kind"] == "entry" and e["pid"] == pid:
        seen.add(e["func"])
print("\n".join(sorted(seen)))
EOF

# matched.py JSONL PID...: how many recvs of each PID carry a match; on a
# second line, the bytes of the first PID's matched TCP recvs
cat >"$t/matched.py" <<'EOF'
import json, sys
pids = [int(p) for p in sys.argv[2:]]
n = dict.fromkeys(pids, 0)
nbytes = 0
for line in open(sys.argv[1]):
    if line.startswith(('{"kind":"entry"', '{"kind":"exit"')):
        continue
    e = json.loads(line)
    if e["kind"] == "recv" and e["pid"] in n and "match" in e:
        n[e["pid"]] += 1
        if e["pid"] == pids[0] and e.get("chan", "").startswith("tcp:"):
            nbytes += e["bytes"]
print(" ".join(str(n[p]) for p in pids))
print(nbytes)
EOF

# messages_why MIN JSONL A B CHECK...: $why empty when comm-check.py JSONL
# CHECK... finds nothing wrong and A's and B's recvs carry >= MIN matches
# each, else why not; $nm their counts, $mb the bytes of A's matched TCP
# recvs
messages_why() {
	local min=$1 j=$2 a=$3 b=$4 out crc n
	shift 4
	out=$(python3 "$checker" "$j" "$@" 2>&1)
	crc=$?
	echo "$out" | tail -1 | sed 's/^/  /'
	{ read -r nm; read -r mb; } < <(python3 "$t/matched.py" "$j" "$a" "$b")
	echo "  matched recvs of $a, $b: $nm ($mb bytes of $a's)"
	why=
	if [ $crc -ne 0 ]; then
		why=$(echo "$out" | head -2)
		return
	fi
	if [ -z "$nm" ] || ! is_num "$mb"; then
		why="matched.py gave no counts: '$nm' '$mb'"
		return
	fi
	for n in $nm; do
		if ! is_num "$n" || [ "$n" -lt "$min" ]; then
			why="matched recvs of $a, $b: $nm (want >= $min each)"
			return
		fi
	done
}

# path.py JSONL PID A B C: some call of C has B as its caller and A as B's
# (each thread's entries and exits replayed on a stack)
cat >"$t/path.py" <<'EOF'
import json, sys
pid, want = int(sys.argv[2]), sys.argv[3:]
stacks = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["pid"] != pid or e["kind"] not in ("entry", "exit"):
        continue
    s = stacks.setdefault(e["tid"], [])
    del s[e["depth"]:]
    if e["kind"] == "entry":
        s.append(e["func"])
        if s[-len(want):] == want:
            sys.exit(0)
sys.exit(1)
EOF

# ---- nginx: record --follow of curl ----
if ! [ -x /usr/sbin/nginx ] || ! command -v curl >/dev/null; then
	skip nginx/record "no /usr/sbin/nginx or curl (tests/install-deps.sh test)"
else
	NGINX_BIN=/usr/sbin/nginx
	if ! nginx_start "$t/nx"; then
		fail nginx/record "nginx did not start"
	else
		worker=$NGINX_WORKER
		url=http://127.0.0.1:$NGINX_PORT/blob.bin
		if timeout 60 "$PROPEL" record --follow -o "$t/nx.db" -- \
			curl -s -o "$t/blob.out" "$url" >"$t/nx.err" 2>&1 &&
		   "$PROPEL" replay --format=jsonl "$t/nx.db" >"$t/nx.jsonl"; then
			out=$(python3 "$check_py" "$t/nx.db" "$t/nx.jsonl" \
				'curl>nginx' 'nginx>curl' 2>&1)
			echo "$out" | sed 's/^/  /'
			fns=$(python3 "$t/funcs.py" "$t/nx.jsonl" "$worker")
			nf=$(echo "$fns" | grep -c .)
			echo "  nginx worker $worker: $nf functions entered"
			why=
			grep -q "traced pid $worker (nginx)" "$t/nx.err" ||
				why="propel did not say it traced the worker: $(tail -1 "$t/nx.err")"
			[ -z "$why" ] && echo "$out" | grepq -v '^ok' &&
				why=$(echo "$out" | grep -v '^ok' | head -2)
			[ -z "$why" ] && ! cmp -s "$t/nx/www/blob.bin" "$t/blob.out" &&
				why="the file curl saved differs"
			[ -z "$why" ] && { ! is_num "$nf" || [ "$nf" -lt 20 ]; } && why="the worker entered $nf functions (want >= 20)"
			[ -z "$why" ] && ! echo "$fns" | grepq -x ngx_http_write_filter &&
				why="no ngx_http_write_filter in the worker's trace"
			[ -z "$why" ] && pass nginx/record || fail nginx/record "$why"
		else
			fail nginx/record "record --follow: $(tail -2 "$t/nx.err")"
		fi
		why=
		sleep 0.2 # the detach is done when record exits; let nginx settle
		[ "$(tracer "$worker")" = 0 ] || why="worker $worker: TracerPid '$(tracer "$worker")'"
		[ -z "$why" ] && [ "$(pgrep -P "$NGINX_MASTER" | head -1)" != "$worker" ] &&
			why="the worker is not the same process"
		[ -z "$why" ] && { nginx_get blob.bin "$t/blob2.out" && cmp -s "$t/nx/www/blob.bin" "$t/blob2.out"; } ||
			why=${why:-"nginx did not serve the file again byte-identical"}
		[ -z "$why" ] && [ -n "$(nginx_signals)" ] && why="$(nginx_signals | head -1)"
		[ -z "$why" ] && pass nginx/after || fail nginx/after "$why"

		# under load: attach --follow of a running wrk
		if ! command -v wrk >/dev/null; then
			skip nginx/attach-load "no wrk (tests/install-deps.sh test)"
		else
			wrk -t1 -c8 -d5s "http://127.0.0.1:$NGINX_PORT/index.html" >"$t/wrk.out" 2>&1 &
			wrk=$!
			sleep 1
			# (the session holds ~10M calls: only its messages are checked)
			if timeout 60 "$PROPEL" attach --follow --mode full --duration 1 \
				-o "$t/wk.db" "$wrk" >"$t/wk.err" 2>&1 &&
			   { "$PROPEL" replay --format=jsonl "$t/wk.db"; echo "replay $?"; } |
				grep -E '"kind":"(send|recv)"|^replay' >"$t/wk.jsonl" &&
			   grep -qx 'replay 0' "$t/wk.jsonl" && sed -i '$d' "$t/wk.jsonl"; then
				wait $wrk
				wrc=$?
				grep -E 'Requests/sec|Non-2xx|Socket errors' "$t/wrk.out" | sed 's/^/  wrk: /'
				# (>= 1000 each way in the 1 s under wrk)
				messages_why 1000 "$t/wk.jsonl" "$wrk" "$worker" \
					--late --open-end --kinds tcp --pids "$wrk,$worker"
				grep -q "traced pid $worker (nginx)" "$t/wk.err" ||
					why="propel did not say it traced the worker: $(tail -1 "$t/wk.err")"
				[ -z "$why" ] && { [ $wrc -ne 0 ] || grepq -E 'Non-2xx|Socket errors' "$t/wrk.out"; } &&
					why="wrk: status $wrc, $(grep -E 'Non-2xx|Socket errors' "$t/wrk.out" | head -1)"
				[ -z "$why" ] && [ "$(tracer "$worker")" != 0 ] && why="worker: TracerPid '$(tracer "$worker")'"
				[ -z "$why" ] && ! nginx_get index.html "$t/i.out" && why="nginx does not serve after"
				[ -z "$why" ] && [ -n "$(nginx_signals)" ] && why="$(nginx_signals | head -1)"
				[ -z "$why" ] && pass nginx/attach-load || fail nginx/attach-load "$why"
			else
				wait $wrk
				fail nginx/attach-load "attach --follow: $(tail -2 "$t/wk.err")"
			fi
		fi
		nginx_stop
	fi
fi

# ---- redis: attach --follow of a live redis-cli ----
if ! [ -x /usr/bin/redis-server ] || ! command -v redis-cli >/dev/null; then
	skip redis/attach "no redis-server or redis-cli (tests/install-deps.sh test)"
else
	REDIS_BIN=/usr/bin/redis-server
	if ! redis_start "$t/rd"; then
		fail redis/attach "redis-server did not start"
	else
		redis-cli -p "$REDIS_PORT" -r 600 -i 0.01 incr counter >"$t/cli.out" 2>&1 &
		cli=$!
		# attach once the loop runs (its first replies are out)
		for i in $(seq 100); do [ -s "$t/cli.out" ] && break; sleep 0.05; done
		if timeout 60 "$PROPEL" attach --follow --mode full --duration 1.5 \
			-o "$t/rd.db" "$cli" >"$t/rd.err" 2>&1 &&
		   "$PROPEL" replay --format=jsonl "$t/rd.db" >"$t/rd.jsonl"; then
			# (>= 50 each way in 1.5 s at 100 commands/s)
			messages_why 50 "$t/rd.jsonl" "$cli" "$REDIS_PID" \
				--late --open-end --kinds tcp --pids "$cli,$REDIS_PID"
			grep -q "traced pid $REDIS_PID (redis-server)" "$t/rd.err" ||
				why="propel did not say it traced redis-server: $(tail -1 "$t/rd.err")"
			[ -z "$why" ] && ! python3 "$t/path.py" "$t/rd.jsonl" "$REDIS_PID" \
				processCommand call incrCommand &&
				why="no incrCommand under call under processCommand in redis-server's trace"
			[ -z "$why" ] && pass redis/attach || fail redis/attach "$why"
		else
			fail redis/attach "attach --follow: $(tail -2 "$t/rd.err")"
		fi
		why=
		[ "$(tracer "$REDIS_PID")" = 0 ] || why="redis-server: TracerPid '$(tracer "$REDIS_PID")'"
		# (redis-cli may have finished on a slow host: its exit status and
		# replies below say whether it was harmed)
		tp=$(tracer "$cli")
		[ -z "$why" ] && [ -n "$tp" ] && [ "$tp" != 0 ] && why="redis-cli: TracerPid $tp"
		wait "$cli"
		rc=$?
		[ -z "$why" ] && [ "$rc" -ne 0 ] && why="redis-cli exited $rc: $(tail -1 "$t/cli.out")"
		[ -z "$why" ] && ! seq 1 600 | cmp -s - "$t/cli.out" &&
			why="redis-cli's replies are not 1..600: $(seq 1 600 | cmp - "$t/cli.out" 2>&1 | head -1)"
		[ -z "$why" ] && [ "$(redis-cli -p "$REDIS_PORT" ping 2>&1)" != PONG ] &&
			why="redis does not answer PING"
		[ -z "$why" ] && pass redis/after || fail redis/after "$why"
		redis_stop
	fi
fi

# ---- sshd: record --follow of sftp ----
if ! [ -x /usr/sbin/sshd ] || ! command -v sftp >/dev/null; then
	skip sshd/record "no /usr/sbin/sshd or sftp (openssh-server, openssh-client)"
else
	s=$t/ssh
	sshd_setup "$s"
	port=$SSHD_PORT
	if ! /usr/sbin/sshd -f "$s/sshd.conf" -E "$s/sshd.log" || ! real_wait_port "$port"; then
		fail sshd/record "sshd did not start: $(tail -2 "$s/sshd.log")"
	else
		sshd_pid=$(cat "$s/sshd.pid")
		if timeout 60 "$PROPEL" record --follow -o "$t/ssh.db" -- \
			sftp -q -F "$s/ssh_config" -b "$s/batch" 127.0.0.1 >"$t/ssh.out" 2>"$t/ssh.err" &&
		   "$PROPEL" replay --format=jsonl "$t/ssh.db" >"$t/ssh.jsonl"; then
			sed 's/^/  /' "$t/ssh.err"
			conn=$(sed -n 's/.*traced pid \([0-9]*\) (sshd), the peer at 127\.0\.0\.1:'"$port"'$/\1/p' "$t/ssh.err" | tail -1)
			ssh_pid=$(sqlite3 "$t/ssh.db" "select pid from processes where exe like '%/ssh' limit 1" 2>/dev/null)
			# ssh spoke while its connection still waited in the
			# listener's queue: propel traced the listener, its owner
			# then, and the connection's process is its child (fork,
			# re-exec), traced from it: the sshd process that received
			# on the connection (the run was judged on the listener's
			# one matched pipe recv: 'matched recvs 68 1' under load)
			if [ -n "$conn" ] && [ "$conn" = "$sshd_pid" ] && [ -n "$ssh_pid" ]; then
				conn=$(python3 - "$t/ssh.jsonl" "$ssh_pid" "$sshd_pid" <<'PYEOF'
import collections, json, sys
skip = {int(sys.argv[2]), int(sys.argv[3])}
n = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == "recv" and e["pid"] not in skip and e.get("chan", "").startswith("tcp:"):
        n[e["pid"]] += 1
print(n.most_common(1)[0][0] if n else "")
PYEOF
)
				echo "  the listener $sshd_pid was traced (the connection still queued); its connection's process: ${conn:-none}"
			fi
			nf=0
			[ -n "$conn" ] && nf=$(python3 "$t/funcs.py" "$t/ssh.jsonl" "$conn" | grep -c .)
			why=
			if [ -z "$conn" ] || [ -z "$ssh_pid" ]; then
				why="propel did not say it traced sshd's connection (ssh '$ssh_pid'): $(tail -1 "$t/ssh.err")"
			else
				messages_why 5 "$t/ssh.jsonl" "$ssh_pid" "$conn" --covered --kinds tcp
			fi
			echo "  sshd $conn entered $nf functions"
			[ -z "$why" ] && ! cmp -s "$s/data" "$s/got" && why="the file sftp got differs"
			[ -z "$why" ] && { ! is_num "$mb" || [ "$mb" -lt 300000 ]; } &&
				why="ssh's matched recvs hold $mb bytes (want >= the file's 300000)"
			[ -z "$why" ] && { ! is_num "$nf" || [ "$nf" -lt 50 ]; } && why="sshd entered $nf functions (want >= 50)"
			# a peer propel could not trace is said in one line, and the
			# only one here is sshd's sandboxed pre-authentication child
			bad=$(grep ': follow ' "$t/ssh.err" | grep -v 'runs in a seccomp sandbox, not traced')
			[ -z "$why" ] && [ -n "$bad" ] && why="a peer not traced for another reason: $bad"
			[ -z "$why" ] && grep -q 'without a clean exit' "$t/ssh.err" &&
				why="propel says: $(grep 'without a clean exit' "$t/ssh.err")"
			if [ -z "$why" ]; then
				pass sshd/record
			else
				# kept for a look: replay, propel's lines, sshd's log
				cp "$t/ssh.db" /tmp/follow-real-sshd.db 2>/dev/null
				cp "$t/ssh.err" /tmp/follow-real-sshd.err 2>/dev/null
				cp "$s/sshd.log" /tmp/follow-real-sshd.log 2>/dev/null
				fail sshd/record "$why (kept: /tmp/follow-real-sshd.{db,err,log})"
			fi
		else
			fail sshd/record "record --follow: $(tail -2 "$t/ssh.err")"
		fi
		why=
		rm -f "$s/got"
		sftp -q -F "$s/ssh_config" -b "$s/batch" 127.0.0.1 >/dev/null 2>"$t/ssh2.err" &&
			cmp -s "$s/data" "$s/got" || why="sftp after the session: $(tail -1 "$t/ssh2.err")"
		[ -z "$why" ] && ! kill -0 "$sshd_pid" 2>/dev/null && why="the sshd listener is gone"
		[ -z "$why" ] && [ "$(tracer "$sshd_pid")" != 0 ] && why="sshd: TracerPid '$(tracer "$sshd_pid")'"
		[ -z "$why" ] && grep -qiE 'fatal|segfault|signal 1[1]' "$s/sshd.log" &&
			why="sshd's log: $(grep -iE 'fatal|segfault|signal' "$s/sshd.log" | head -1)"
		[ -z "$why" ] && pass sshd/after || fail sshd/after "$why"
		kill "$sshd_pid" 2>/dev/null
	fi
fi

# ---- python3 -m http.server: record --follow of curl ----
p=$t/py
mkdir -p "$p"
head -c 200000 /dev/urandom >"$p/data"
port=$(real_port)
(cd "$p" && exec "${PROPEL_PATH_PYTHON3:-python3}" -m http.server "$port" --bind 127.0.0.1 >"$p/srv.log" 2>&1) &
py_pid=$!
if ! real_wait_port "$port"; then
	fail python/record "python3 -m http.server did not start: $(tail -2 "$p/srv.log")"
else
	if timeout 60 "$PROPEL" record --follow -o "$t/py.db" -- \
		curl -sS -o "$p/got" "http://127.0.0.1:$port/data" >"$t/py.out" 2>"$t/py.err" &&
	   "$PROPEL" replay --format=jsonl "$t/py.db" >"$t/py.jsonl"; then
		sed 's/^/  /' "$t/py.err"
		curl_pid=$(sqlite3 "$t/py.db" "select pid from processes where exe like '%/curl' limit 1" 2>/dev/null)
		nf=$(python3 "$t/funcs.py" "$t/py.jsonl" "$py_pid" | grep -c .)
		why=
		grep -q "traced pid $py_pid (python3)" "$t/py.err" ||
			why="propel did not say it traced python3: $(tail -1 "$t/py.err")"
		[ -z "$why" ] && messages_why 1 "$t/py.jsonl" "$curl_pid" "$py_pid" --kinds tcp
		echo "  python3 $py_pid entered $nf functions"
		[ -z "$why" ] && ! cmp -s "$p/data" "$p/got" && why="the file curl got differs"
		[ -z "$why" ] && { ! is_num "$mb" || [ "$mb" -lt 200000 ]; } &&
			why="curl's matched recvs hold $mb bytes (want >= the file's 200000)"
		[ -z "$why" ] && { ! is_num "$nf" || [ "$nf" -lt 100 ]; } && why="python3 entered $nf functions (want >= 100)"
		for fn in _PyEval_EvalFrameDefault sock_sendall; do
			[ -z "$why" ] && ! python3 "$t/funcs.py" "$t/py.jsonl" "$py_pid" | grepq -x "$fn" &&
				why="$fn is not among python3's functions"
		done
		[ -z "$why" ] && pass python/record || fail python/record "$why"
	else
		fail python/record "record --follow: $(tail -2 "$t/py.err")"
	fi
	why=
	rm -f "$p/got"
	curl -sS -o "$p/got" "http://127.0.0.1:$port/data" 2>"$t/py2.err" && cmp -s "$p/data" "$p/got" ||
		why="curl after the session: $(tail -1 "$t/py2.err")"
	[ -z "$why" ] && ! kill -0 "$py_pid" 2>/dev/null && why="the python3 server is gone"
	[ -z "$why" ] && [ "$(tracer "$py_pid")" != 0 ] && why="python3: TracerPid '$(tracer "$py_pid")'"
	[ -z "$why" ] && pass python/after || fail python/after "$why"
fi
kill "$py_pid" 2>/dev/null
