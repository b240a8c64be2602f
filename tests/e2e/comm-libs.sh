#!/usr/bin/env bash
# tests/e2e/comm-libs.sh - communication made inside a library the agent
# does not trace: the C library's communication functions are hooked at
# their entries (inject/agent/comm.c comm_hook_libc), so stdio's writes,
# libcurl's sends and the reads under them are events like any other.
#
#   record/stdio-pipeline  `propel record --follow -- sh -c 'seq 1 20000 |
#                          sort -rn | wc -c > OUT'` (Debian's stripped
#                          coreutils; seq and sort write through stdio):
#                          OUT says 108894; seq's sends and sort's recvs,
#                          sort's sends and wc's recvs each total 108894
#                          bytes, every recv matched to a send whose byte
#                          range holds its first byte
#                          (tests/e2e/comm-libs-check.py)
#   record/exec-program    its exec events name their programs (jsonl
#                          "program": seq, sort, wc)
#   record/libcurl         a python3 http.server and Debian's curl (libcurl)
#                          under one `record --follow`: curl's request (sent
#                          inside libcurl) is matched by the server's recv,
#                          the server's response by curl's recvs, bytes
#                          agreeing; the file curl saved equals the served
#                          one
#   record/threaded-server  python3's http.server (a thread per
#                          connection) started before propel, then `record
#                          --follow -- curl` twice: the server is injected
#                          while its new thread waits inside recv for the
#                          request; that recv (adopted in flight,
#                          inject/agent/callback.c) is matched to curl's
#                          request, the response to curl's recvs, bytes
#                          agreeing, in both rounds (the second injects the
#                          agent loaded by the first again); the server lives
#   record/slow-injection  a third round with the peer's injection made
#                          1.2 s slower (PROPEL_TEST_PEER_DELAY_MS, as a large
#                          process on a loaded host: python3 takes 0.6-0.9
#                          s idle): curl's agent waits for the request the
#                          tracer took past PROPEL_PROPAGATE_MS (1 s), so
#                          the server's recv is still matched (with a 1 s
#                          wait it was not: "curl>python3.11: 0 sends").
#                          (2 s slower went past the 5-s bound of a taken
#                          request, PROPEL_PROPAGATE_TAKEN_MS, when the
#                          injection itself took over 3 s at a load of 12)
#   record/held-send       the third round's session holds curl's request
#                          as held (table holds) >= 1.2 s, up to the send
#                          itself: propel's time, which the analyses leave
#                          out of the thread's (analysis/trace.h
#                          trace_away)
#   record/posix-spawn     a program starting 20 `seq 1 1000` by posix_spawnp
#                          with their stdout dup2'd onto its pipe (the spawn
#                          child runs libc's dup2 and close on the parent's
#                          memory): it reads all 77860 bytes, every one
#                          matched to a seq's send
#   attach/stdio-again     a program writing through fprintf into a pipe,
#                          attached with --follow twice, one session after
#                          the other: each session holds its sends on the
#                          pipe (the hooks are put back in a second
#                          session) and recvs of the reader (cat) matched
#                          to them; both processes unharmed
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 8
t=$(tmpdir)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
check_py=$PROPEL_TOP/tests/e2e/comm-libs-check.py
cc=${CC:-gcc}
export PROPEL_TEST_QUIET=1

# ---- stdio through a pipeline of Debian's programs ----
if "$PROPEL" record --follow -o "$t/sq.db" -- \
	sh -c "seq 1 20000 | sort -rn | wc -c > $t/sq.out" > "$t/sq.err" 2>&1 &&
   "$PROPEL" replay --format=jsonl "$t/sq.db" > "$t/sq.jsonl"; then
	out=$(/usr/bin/python3 "$check_py" "$t/sq.db" "$t/sq.jsonl" \
		'seq>sort=108894' 'sort>wc=108894' 2>&1)
	echo "$out" | sed 's/^/  /'
	if [ "$(cat "$t/sq.out")" = 108894 ] && ! echo "$out" | grepq -v '^ok'; then
		pass record/stdio-pipeline
	else
		fail record/stdio-pipeline "wc says '$(cat "$t/sq.out")'; $(echo "$out" | grep -v '^ok' | head -2)"
	fi
	# and each exec event names the program it started
	progs=$(/usr/bin/python3 -c '
import json, os, sys
print(" ".join(sorted(os.path.basename(e.get("program", "?"))
                      for e in map(json.loads, open(sys.argv[1]))
                      if e["kind"] == "exec")))' "$t/sq.jsonl")
	[ "$progs" = "seq sort wc" ] && pass record/exec-program ||
		fail record/exec-program "exec events name: '$progs' (want seq sort wc)"
else
	fail record/stdio-pipeline "$(tail -2 "$t/sq.err")"
fi

# ---- libcurl against a python http.server ----
py=$(basename "$(readlink -f /usr/bin/python3)")
if ! command -v curl > /dev/null; then
	skip record/libcurl "no curl (tests/install-deps.sh test installs it)"
else
	mkdir -p "$t/www"
	head -c 300000 /dev/urandom > "$t/www/blob"
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	cat > "$t/web.sh" <<EOF
cd "$t/www" || exit 1
/usr/bin/python3 -m http.server $port --bind 127.0.0.1 > "$t/web.log" 2>&1 &
s=\$!
for i in \$(seq 100); do
	(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
	sleep 0.1
done
curl -s -o "$t/blob.out" http://127.0.0.1:$port/blob
rc=\$?
kill \$s
exit \$rc
EOF
	if timeout 60 "$PROPEL" record --follow -o "$t/cu.db" -- bash "$t/web.sh" > "$t/cu.err" 2>&1 &&
	   "$PROPEL" replay --format=jsonl "$t/cu.db" > "$t/cu.jsonl"; then
		out=$(/usr/bin/python3 "$check_py" "$t/cu.db" "$t/cu.jsonl" \
			"curl>$py" "$py>curl" 2>&1)
		echo "$out" | sed 's/^/  /'
		if cmp -s "$t/www/blob" "$t/blob.out" && ! echo "$out" | grepq -v '^ok'; then
			pass record/libcurl
		else
			fail record/libcurl "file $(cmp -s "$t/www/blob" "$t/blob.out" && echo same || echo differs); $(echo "$out" | grep -v '^ok' | head -2)"
		fi
	else
		fail record/libcurl "$(tail -2 "$t/cu.err")"
	fi
fi

# ---- a thread-per-connection server started before propel ----
if command -v curl > /dev/null; then
	port2=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	(cd "$t/www" && exec /usr/bin/python3 -m http.server "$port2" --bind 127.0.0.1 > "$t/web2.log" 2>&1) &
	web2=$!
	for i in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/$port2) 2>/dev/null && break
		sleep 0.1
	done
	ok=1 why= slow=1 slow_why=
	for round in 1 2 3; do
		rm -f "$t/blob2.out"
		delay=0
		[ $round = 3 ] && delay=1200
		if ! PROPEL_TEST_PEER_DELAY_MS=$delay timeout 60 \
			"$PROPEL" record --follow -o "$t/ts$round.db" -- \
			curl -s -o "$t/blob2.out" "http://127.0.0.1:$port2/blob" > "$t/ts.err" 2>&1 ||
		   ! "$PROPEL" replay --format=jsonl "$t/ts$round.db" > "$t/ts.jsonl"; then
			why="round $round: $(tail -2 "$t/ts.err")"
			[ $round = 3 ] && slow=0 slow_why=$why || ok=0
			break
		fi
		out=$(/usr/bin/python3 "$check_py" "$t/ts$round.db" "$t/ts.jsonl" \
			"curl>$py" "$py>curl" 2>&1)
		echo "$out" | sed "s/^/  round $round: /"
		if ! cmp -s "$t/www/blob" "$t/blob2.out" || echo "$out" | grepq -v '^ok'; then
			why="round $round: file $(cmp -s "$t/www/blob" "$t/blob2.out" && echo same || echo differs); $(echo "$out" | grep -v '^ok' | head -2)"
			[ $round = 3 ] && slow=0 slow_why=$why || ok=0
			break
		fi
	done
	kill -0 $web2 2>/dev/null || { ok=0 slow=0 why="the server died" slow_why=$why; }
	kill $web2 2>/dev/null
	[ $ok = 1 ] && pass record/threaded-server || fail record/threaded-server "$why"
	[ $ok = 1 ] || slow=0 slow_why=${slow_why:-"rounds 1-2 failed"}
	[ $slow = 1 ] && pass record/slow-injection || fail record/slow-injection "$slow_why"
	# the third round's hold: curl's request waited for the injection
	held=$(sqlite3 "$t/ts3.db" "SELECT h.dur_ns, h.ts_ns + h.dur_ns = (SELECT
		min(c.ts_ns) FROM comm c WHERE c.pid = h.pid AND c.kind = 10)
		FROM holds h JOIN processes p ON p.pid = h.pid
		WHERE p.exe LIKE '%/curl' ORDER BY h.dur_ns DESC LIMIT 1" 2>&1)
	if [ ! -s "$t/ts3.db" ]; then
		fail record/held-send "the third round did not run ($slow_why)"
	elif [ "${held#*|}" = 1 ] && [ "${held%|*}" -ge 1200000000 ] 2>/dev/null; then
		pass record/held-send
	else
		fail record/held-send "curl's longest hold (ns|ends at its first send): '$held'"
	fi
fi

# ---- posix_spawn: its child runs libc's dup2/close on our memory ----
cat > "$t/spawn.c" <<'EOF'
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(void)
{
	char buf[4096], *argv[] = { "seq", "1", "1000", NULL };
	long tot = 0;
	int p[2];

	if (pipe(p))
		return 1;
	for (int i = 0; i < 20; i++) {
		posix_spawn_file_actions_t fa;
		ssize_t n;
		pid_t c;

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		posix_spawn_file_actions_addclose(&fa, p[0]);
		if (posix_spawnp(&c, "seq", &fa, NULL, argv, environ))
			return 2;
		posix_spawn_file_actions_destroy(&fa);
		waitpid(c, NULL, 0);
		while (tot < (i + 1) * 3893L && (n = read(p[0], buf, sizeof(buf))) > 0)
			tot += n;
	}
	printf("%ld\n", tot);
	return tot != 20 * 3893L;
}
EOF
if $cc -O2 -g -o "$t/spawn" "$t/spawn.c" &&
   "$PROPEL" record --follow -o "$t/sp.db" -- "$t/spawn" > "$t/sp.out" 2> "$t/sp.err" &&
   "$PROPEL" replay --format=jsonl "$t/sp.db" > "$t/sp.jsonl"; then
	out=$(/usr/bin/python3 "$check_py" "$t/sp.db" "$t/sp.jsonl" 'seq>spawn=77860' 2>&1)
	echo "$out" | sed 's/^/  /'
	echo "$out" | grepq '^ok' && [ "$(cat "$t/sp.out")" = 77860 ] &&
		pass record/posix-spawn || fail record/posix-spawn "$(cat "$t/sp.out"); $out"
else
	fail record/posix-spawn "status $?: $(tail -2 "$t/sp.err")"
fi

# ---- attach twice to a stdio writer ----
cat > "$t/writer.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) static void burst(int n)
{
	for (int i = 0; i < 200; i++)
		fprintf(stdout, "burst %d line %d\n", n, i);
	fflush(stdout);
}
int main(void)
{
	for (int n = 0;; n++) {
		burst(n);
		usleep(20000);
	}
}
EOF
$cc -O2 -g -o "$t/writer" "$t/writer.c" || { fail build writer; exit 1; }
( "$t/writer" | cat > /dev/null ) &
sleep 0.3
wp=$(pgrep -f "^$t/writer" | head -1)
cp=$(pgrep -P "$(ps -o ppid= -p "$wp" | tr -d ' ')" -x cat | head -1)
bad=
for round in 1 2; do
	# 2 s: the writer's first send waits for cat's injection (again in
	# the second session), which can take most of a 1-s session under
	# load (4 sends instead of ~46 in one fresh clone's make test J=2)
	if ! "$PROPEL" attach --follow -o "$t/a$round.db" --duration 2 "$wp" > "$t/a$round.err" 2>&1 ||
	   ! "$PROPEL" replay --format=jsonl "$t/a$round.db" > "$t/a$round.jsonl"; then
		bad="session $round: $(tail -1 "$t/a$round.err")"; break
	fi
	res=$(/usr/bin/python3 - "$t/a$round.jsonl" "$wp" "$cp" <<'EOF'
import json, sys
w, c = int(sys.argv[2]), int(sys.argv[3])
sends = {}
nrecv = matched = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == "send" and e["pid"] == w and e.get("chan", "").startswith("pipe:"):
        sends[(e["pid"], e["tid"], e["ts_ns"])] = e
    elif e["kind"] == "recv" and e["pid"] == c and e.get("chan", "").startswith("pipe:"):
        nrecv += 1
        m = e.get("match")
        s = sends.get((m["pid"], m["tid"], m["ts_ns"])) if m else None
        if s and s["offset"] <= e["offset"] < s["offset"] + s["bytes"]:
            matched += 1
print(len(sends), nrecv, matched)
EOF
)
	echo "  session $round: writer's sends, cat's recvs, matched: $res"
	set -- $res
	if [ "${1:-0}" -lt 5 ] || [ "${3:-0}" -lt 5 ]; then
		bad="session $round: $res (sends, recvs, matched; want >= 5 sends and matched recvs)"; break
	fi
done
sleep 0.2
if [ -z "$bad" ] && kill -0 "$wp" 2>/dev/null && kill -0 "$cp" 2>/dev/null; then
	pass attach/stdio-again
else
	fail attach/stdio-again "${bad:-writer or cat died}"
fi
kill "$wp" "$cp" 2>/dev/null
exit 0
