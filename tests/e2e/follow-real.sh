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
#   redis/after    redis-cli printed 1..400 in order (no byte of a command
#                  or reply changed) and exited 0; both processes untraced
#                  after the detach; redis answers PING
#
# Needs root (propeld injects the servers).  Takes ~15 s.
. "$(dirname "$0")/../lib.sh"
. "$PROPEL_TOP/tests/real/servers.sh"
check_py=$PROPEL_TOP/tests/e2e/comm-libs-check.py
checker=$PROPEL_TOP/tests/e2e/comm-check.py
export PROPEL_TEST_QUIET=1

if ! is_root; then
	skip follow-real "needs root (propeld injects the servers)"
	exit 0
fi
t=$(tmpdir)
chmod 755 "$t"
trap 'real_cleanup; kill -9 $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT

tracer() { awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# entries.py JSONL PID: distinct functions PID entered, one per line
cat >"$t/funcs.py" <<'EOF'
import json, sys
pid = int(sys.argv[2])
seen = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == "entry" and e["pid"] == pid:
        seen.add(e["func"])
print("\n".join(sorted(seen)))
EOF

# matched.py JSONL PID...: how many recvs of each PID carry a match
cat >"$t/matched.py" <<'EOF'
import json, sys
n = {int(p): 0 for p in sys.argv[2:]}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == "recv" and e["pid"] in n and "match" in e:
        n[e["pid"]] += 1
print(" ".join(str(n[int(p)]) for p in sys.argv[2:]))
EOF

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
			[ -z "$why" ] && echo "$out" | grep -qv '^ok' &&
				why=$(echo "$out" | grep -v '^ok' | head -2)
			[ -z "$why" ] && ! cmp -s "$t/nx/www/blob.bin" "$t/blob.out" &&
				why="the file curl saved differs"
			[ -z "$why" ] && [ "$nf" -lt 20 ] && why="the worker entered $nf functions (want >= 20)"
			[ -z "$why" ] && ! echo "$fns" | grep -qx ngx_http_write_filter &&
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
		redis-cli -p "$REDIS_PORT" -r 400 -i 0.01 incr counter >"$t/cli.out" 2>&1 &
		cli=$!
		# attach once the loop runs (its first replies are out)
		for i in $(seq 100); do [ -s "$t/cli.out" ] && break; sleep 0.05; done
		if timeout 60 "$PROPEL" attach --follow --mode full --duration 1.5 \
			-o "$t/rd.db" "$cli" >"$t/rd.err" 2>&1 &&
		   "$PROPEL" replay --format=jsonl "$t/rd.db" >"$t/rd.jsonl"; then
			out=$(python3 "$checker" "$t/rd.jsonl" --late --open-end --kinds tcp \
				--pids "$cli,$REDIS_PID" 2>&1)
			crc=$?
			echo "$out" | sed 's/^/  /'
			nm=$(python3 "$t/matched.py" "$t/rd.jsonl" "$cli" "$REDIS_PID")
			echo "  matched recvs (redis-cli, redis-server): $nm"
			why=
			grep -q "traced pid $REDIS_PID (redis-server)" "$t/rd.err" ||
				why="propel did not say it traced redis-server: $(tail -1 "$t/rd.err")"
			[ -z "$why" ] && [ $crc -ne 0 ] && why=$(echo "$out" | head -2)
			for n in $nm; do
				[ -z "$why" ] && [ "$n" -lt 50 ] &&
					why="matched recvs (redis-cli, redis-server): $nm (want >= 50 each in 1.5 s at 100 commands/s)"
			done
			[ -z "$why" ] && ! python3 "$t/path.py" "$t/rd.jsonl" "$REDIS_PID" \
				processCommand call incrCommand &&
				why="no incrCommand under call under processCommand in redis-server's trace"
			[ -z "$why" ] && pass redis/attach || fail redis/attach "$why"
		else
			fail redis/attach "attach --follow: $(tail -2 "$t/rd.err")"
		fi
		why=
		[ "$(tracer "$REDIS_PID")" = 0 ] || why="redis-server: TracerPid '$(tracer "$REDIS_PID")'"
		[ -z "$why" ] && { [ "$(tracer "$cli")" = 0 ] || why="redis-cli: TracerPid '$(tracer "$cli")'"; }
		wait "$cli"
		rc=$?
		[ -z "$why" ] && [ "$rc" -ne 0 ] && why="redis-cli exited $rc: $(tail -1 "$t/cli.out")"
		[ -z "$why" ] && ! seq 1 400 | cmp -s - "$t/cli.out" &&
			why="redis-cli's replies are not 1..400: $(seq 1 400 | cmp - "$t/cli.out" 2>&1 | head -1)"
		[ -z "$why" ] && [ "$(redis-cli -p "$REDIS_PORT" ping 2>&1)" != PONG ] &&
			why="redis does not answer PING"
		[ -z "$why" ] && pass redis/after || fail redis/after "$why"
		redis_stop
	fi
fi
