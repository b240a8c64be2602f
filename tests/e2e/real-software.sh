#!/usr/bin/env bash
# tests/e2e/real-software.sh - issue 7, "What it must show", on Debian's own
# packages, installed by tests/install-deps.sh test:
#
#   nginx (1 worker, own config in a temp dir) under wrk, attached 3 s:
#     nginx/request-path   ngx_http_static_handler entered below
#                          ngx_http_process_request_line, with
#                          ngx_http_core_run_phases and
#                          ngx_http_core_content_phase between them
#     nginx/functions      >= 60 distinct functions    nginx/depth  >= 6
#     nginx/no-errors      wrk: no non-2xx response, no socket error
#     throughput           wrk req/s while attached / untraced, both measured
#                          with wrk for 3 s in this run, is printed here and
#                          judged by `make bench` (tests/bench-real.sh): a
#                          speed, measured by a benchmark, not a timed test
#                          on a shared 2-core machine.  The issue's floor is
#                          0.8 (goal 0.95); see the closing note for today's
#   redis-server (no persistence, temp dir) under redis-benchmark, attached 3 s:
#     redis/functions >= 40   redis/depth >= 5
#     redis/named          no function without a name (`?@0x...`), and, when
#                          tests/real/redis-debug.sh has its debug info, none
#                          named only `module+0x...` either (else how many
#                          is printed, with why there is no debug info)
#     redis/no-errors      redis-benchmark (which exits at the first error)
#                          still running, no error reply counted by the server
#     throughput           commands/s (server's total_commands_processed) in
#                          the 3 s from starting `propel attach` / the 3 s
#                          just before, printed (judged by make bench)
#   100 attach/detach cycles (--duration 0.1) on each under load:
#     */cycles             every attach exits 0, the same process lives on,
#                          untraced (TracerPid 0), no worker died (nginx log)
#     */cycles-no-errors   no client error during the cycles
#     */data-intact        nginx: a 1 MiB random file served byte-identical
#                          after; redis: 1,000 keys, a hash and a list
#                          written before read back identical after
#   propel record of stripped /usr/bin/gzip -c on a 300 KB file (1.3
#   million events; 3 MB made 13 million, the same 61 functions, and
#   ~15 s of a run's CPU went to replaying and reading them):
#     gzip/identical       output byte-identical to untraced gzip's
#     gzip/functions >= 15  gzip/depth >= 3
#
# nginx's request-path functions are static: not in .dynsym, named only by
# debug info, and Debian's debug archive is not reachable here.
# tests/real/nginx-debug.sh gets the debug info honestly (a byte-identical
# rebuild of Debian's source package, cached in /var/cache/propel-tests):
# when it succeeds the nginx run is that Debian package's binary, otherwise
# the installed one, and the line starting "nginx:" says which.  The same
# for redis-server's static functions (tests/real/redis-debug.sh; the line
# starting "redis:").
#
# Needs root (ptrace of servers, the debug files).  Takes about 2-3 min, plus
# 1-3 min the first time nginx-debug.sh builds on a machine and 2-3 min the
# first time redis-debug.sh does.
# propel-test: takes 100
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
want() { [ -z "${REAL_ONLY:-}" ] || [[ " $REAL_ONLY " == *" $1 "* ]]; } # REAL_ONLY="redis gzip"
nginx_checks=(attach request-path functions depth no-errors cycles cycles-no-errors data-intact)
redis_checks=(attach no-errors functions depth named cycles cycles-no-errors data-intact)
gzip_checks=(identical functions depth)
n=0
want nginx && n=$((n + ${#nginx_checks[@]}))
want redis && n=$((n + ${#redis_checks[@]}))
want gzip && n=$((n + ${#gzip_checks[@]}))
expect_checks $n
# skip_group GROUP WHY: each check of GROUP skipped, by name
skip_group() {
	local c arr="$1_checks[@]"
	for c in "${!arr}"; do skip "$1/$c" "$2"; done
}
. "$PROPEL_TOP/tests/real/servers.sh"
stats=$PROPEL_TOP/tests/real/trace-stats.py
cycles=${REAL_CYCLES:-100}
secs=3

if ! is_root; then
	skip real-software "needs root (ptrace of the servers, /usr/lib/debug)"
	exit 77
fi
"$PROPEL_TOP/tests/install-deps.sh" test >/dev/null 2>&1 ||
	echo "real-software: tests/install-deps.sh test failed; missing tools skip" >&2
t=$(tmpdir)
chmod 755 "$t"
attach_pid=
cleanup() {
	[ -n "$attach_pid" ] && kill "$attach_pid" 2>/dev/null
	real_cleanup
	rm -rf "$t"
}
trap cleanup EXIT
T0=$(date +%s)
elapsed() { echo "$(($(date +%s) - T0)) s"; }

# ratio_ok A B MIN: A/B >= MIN (prints the ratio in $ratio)
ratio_ok() {
	ratio=$(awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')
	awk -v r="$ratio" -v m="$3" 'BEGIN { exit !(r != "n/a" && r + 0 >= m) }'
}
# field LINE KEY: KEY=value out of a trace-stats line
field() { sed -n 's/.*\b'"$2"'=\([0-9-]*\).*/\1/p' <<<"$1"; }
atleast() { # NAME WHAT VALUE MIN
	if [ -n "$3" ] && [ "$3" -ge "$4" ]; then pass "$1"; echo "  $2 = $3 (>= $4)"
	else fail "$1" "$2 = ${3:-none}, want >= $4"; fi
}

# attach_under_load PID DB OUT: `propel attach --duration $secs PID` in the
# background (attach_pid); the caller drives the load, then attach_wait.
attach_start() {
	timeout -k 5 $((secs + 120)) "$PROPEL" attach -o "$2" --duration "$secs" "$1" >"$3" 2>&1 &
	attach_pid=$!
}
attach_wait() {
	wait "$attach_pid"
	local rc=$?
	attach_pid=
	return $rc
}

# cycle_loop PID LOG: $cycles attach/detach cycles; prints "ok N" and the
# first failure; stops early if PID dies.
cycle_loop() {
	local pid=$1 log=$2 ok=0 i rc first= prev=
	for ((i = 1; i <= cycles; i++)); do
		timeout -k 5 60 "$PROPEL" attach -o "$t/cycle.db" --buffer-size 64 --duration 0.1 "$pid" \
			>"$t/cycle.out" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			ok=$((ok + 1))
		elif [ -z "$first" ]; then
			first="cycle $i: status $rc: $(grep -m1 -v warning "$t/cycle.out")"
			[ -n "$prev" ] && first="$first (cycle $((i - 1)) said: $prev)"
		fi
		prev=$(head -c 300 "$t/cycle.out" | tr '\n' ' ')
		cat "$t/cycle.out" >>"$log"
		kill -0 "$pid" 2>/dev/null || { first="${first:+$first; }process $pid died at cycle $i"; break; }
	done
	echo "$ok"
	echo "$first"
}
tracer_of() { awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# ------------------------------------------------------------------ nginx
nginx_tests() {
	local dbg why st path a u
	dbg=$("$PROPEL_TOP/tests/real/nginx-debug.sh" 2>"$t/nginx-debug.err")
	if [ -n "$dbg" ] && [ -x "$dbg" ]; then
		NGINX_BIN=$dbg
		echo "nginx: Debian's $(cat "$(dirname "$dbg")/../../../verified" 2>/dev/null | head -1)"
	else
		NGINX_BIN=/usr/sbin/nginx
		why=$(tr '\n' ' ' <"$t/nginx-debug.err")
		echo "nginx: the installed $(dpkg-query -W -f='${Package} ${Version}' nginx 2>/dev/null), no debug info: $why"
	fi
	if ! nginx_start "$t/nginx" 2>"$t/nginx-start.err"; then
		fail nginx/start "$(cat "$t/nginx-start.err")"
		return
	fi
	echo "nginx: master $NGINX_MASTER, worker $NGINX_WORKER, 127.0.0.1:$NGINX_PORT ($(elapsed))"
	wrk_run 1 "$t/wrk-warm"
	wrk_run $secs "$t/wrk-untraced"
	attach_start "$NGINX_WORKER" "$t/nginx.db" "$t/nginx-attach.out"
	wrk_run $secs "$t/wrk-traced"
	if attach_wait; then
		pass nginx/attach
	else
		fail nginx/attach "status $?: $(head -c 300 "$t/nginx-attach.out")"
	fi
	"$PROPEL" replay --format=jsonl "$t/nginx.db" >"$t/nginx.jsonl" 2>"$t/nginx-replay.err" ||
		fail nginx/replay "$(head -c 300 "$t/nginx-replay.err")"
	st=$(python3 "$stats" "$t/nginx.jsonl" --path ngx_http_process_request_line ngx_http_static_handler \
		ngx_http_core_run_phases ngx_http_core_content_phase)
	echo "nginx trace: $(head -1 <<<"$st")"
	path=$(sed -n 's/^path=//p' <<<"$st")
	case $path in
	"" | none*) fail nginx/request-path "${path:-no trace}" ;;
	*) pass nginx/request-path; echo "  $path" ;;
	esac
	atleast nginx/functions "distinct functions" "$(field "$st" funcs)" 60
	atleast nginx/depth "max depth" "$(field "$st" maxdepth)" 6
	a=$(wrk_errors "$t/wrk-traced") u=$(wrk_errors "$t/wrk-untraced")
	if [ "$a" = 0 ] && [ "$u" = 0 ]; then
		pass nginx/no-errors
	else
		fail nginx/no-errors "wrk errors: untraced ${u:-no report}, attached ${a:-no report}: $(grep -h propel-wrk "$t/wrk-untraced" "$t/wrk-traced")"
	fi
	a=$(wrk_field "$t/wrk-traced" rps) u=$(wrk_field "$t/wrk-untraced" rps)
	ratio_ok "${a:-0}" "${u:-0}" 0.8 || :
	echo "  throughput (judged by make bench): wrk ${secs}s req/s: untraced ${u:-n/a}, attached ${a:-n/a}, ratio $ratio"

	# cycles under load (a load at nice 19: tests/real/servers.sh)
	cp "$t/nginx/www/blob.bin" "$t/blob.orig"
	nginx_get blob.bin "$t/blob.before" || fail nginx/serves-before "cannot fetch blob.bin"
	REAL_LOAD_NICE=19 wrk_bg_start "$t/wrk-cycles" $((cycles * 2 + 60))
	sleep 0.5
	local c0 res ok first
	c0=$(date +%s%N)
	res=$(cycle_loop "$NGINX_WORKER" "$t/nginx-cycles.log")
	ok=$(head -1 <<<"$res") first=$(sed -n 2p <<<"$res")
	sleep 0.3
	wrk_bg_stop
	echo "nginx: $cycles cycles in $((($(date +%s%N) - c0) / 1000000)) ms"
	if [ "$ok" -eq "$cycles" ] && kill -0 "$NGINX_WORKER" 2>/dev/null && [ "$(tracer_of "$NGINX_WORKER")" = 0 ] &&
		[ "$(pgrep -P "$NGINX_MASTER")" = "$NGINX_WORKER" ] && [ -z "$(nginx_signals)" ]; then
		pass nginx/cycles
	else
		fail nginx/cycles "$ok/$cycles attaches ok; worker $NGINX_WORKER $(kill -0 "$NGINX_WORKER" 2>/dev/null && echo alive || echo gone), tracer $(tracer_of "$NGINX_WORKER"), workers now $(pgrep -P "$NGINX_MASTER" | tr '\n' ' ')$(nginx_signals | head -2); $first"
	fi
	a=$(wrk_errors "$t/wrk-cycles")
	if [ "$a" = 0 ]; then
		pass nginx/cycles-no-errors
		echo "  $(grep propel-wrk "$t/wrk-cycles")"
	else
		fail nginx/cycles-no-errors "wrk errors ${a:-no report}: $(grep propel-wrk "$t/wrk-cycles")"
	fi
	if nginx_get blob.bin "$t/blob.after" && cmp -s "$t/blob.orig" "$t/blob.after" &&
		cmp -s "$t/blob.orig" "$t/blob.before" && nginx_get index.html "$t/index.after" &&
		cmp -s "$t/nginx/www/index.html" "$t/index.after"; then
		pass nginx/data-intact
	else
		fail nginx/data-intact "blob.bin or index.html not served byte-identical after the cycles"
	fi
	nginx_stop
}

# ------------------------------------------------------------------ redis
redis_tests() {
	local st u a c0 c1 c2 c3 s0 s1 s2 s3 e0 res ok first dbg why
	dbg=$("$PROPEL_TOP/tests/real/redis-debug.sh" 2>"$t/redis-debug.err")
	if [ -n "$dbg" ] && [ -x "$dbg" ]; then
		REDIS_BIN=$dbg
		echo "redis: Debian's $(head -1 "$(dirname "$dbg")/../../../verified" 2>/dev/null)"
	else
		REDIS_BIN=/usr/bin/redis-server dbg=
		why=$(tr '\n' ' ' <"$t/redis-debug.err" | sed 's/ *$//')
		echo "redis: the installed $(dpkg-query -W -f='${Package} ${Version}' redis-server 2>/dev/null), no debug info: $why"
	fi
	if ! redis_start "$t/redis" 2>"$t/redis-start.err"; then
		fail redis/start "$(cat "$t/redis-start.err")"
		return
	fi
	echo "redis: pid $REDIS_PID, 127.0.0.1:$REDIS_PORT ($(elapsed))"
	e0=$(redis_info total_error_replies)
	redis_bench_start "$t/bench.out"
	sleep 1
	c0=$(redis_info total_commands_processed) s0=$(now_ns)
	sleep $secs
	c1=$(redis_info total_commands_processed) s1=$(now_ns)
	s2=$(now_ns) c2=$(redis_info total_commands_processed)
	attach_start "$REDIS_PID" "$t/redis.db" "$t/redis-attach.out"
	sleep $secs
	c3=$(redis_info total_commands_processed) s3=$(now_ns)
	if attach_wait; then
		pass redis/attach
	else
		fail redis/attach "status $?: $(head -c 300 "$t/redis-attach.out")"
	fi
	sleep 0.3
	if redis_bench_stop && [ -z "$(redis_bench_errors "$t/bench.out")" ] &&
		[ "$(redis_info total_error_replies)" = "$e0" ] && [ "$(redis_info rejected_connections)" = 0 ]; then
		pass redis/no-errors
	else
		fail redis/no-errors "redis-benchmark ended or reported errors: $(redis_bench_errors "$t/bench.out" | head -2); error replies $e0 -> $(redis_info total_error_replies)"
	fi
	u=$(((c1 - c0) * 1000000000 / (s1 - s0)))
	a=$(((c3 - c2) * 1000000000 / (s3 - s2)))
	ratio_ok "$a" "$u" 0.8 || :
	echo "  throughput (judged by make bench): redis-benchmark ${secs}s commands/s: untraced $u, attached $a, ratio $ratio"
	"$PROPEL" replay --format=jsonl "$t/redis.db" >"$t/redis.jsonl" 2>"$t/redis-replay.err" ||
		fail redis/replay "$(head -c 300 "$t/redis-replay.err")"
	st=$(python3 "$stats" "$t/redis.jsonl")
	echo "redis trace: $st"
	atleast redis/functions "distinct functions" "$(field "$st" funcs)" 40
	atleast redis/depth "max depth" "$(field "$st" maxdepth)" 5
	if [ -n "$dbg" ]; then
		if [ "$(field "$st" unnamed)" = 0 ] && [ "$(field "$st" modoff)" = 0 ] && [ "$(field "$st" funcs)" -gt 0 ]; then
			pass redis/named
		else
			fail redis/named "with debug info, $(field "$st" unnamed) of $(field "$st" funcs) functions have no name, $(field "$st" modoff) only module+0xOFFSET: $(grep -oE '"func":"(\?@[^"]*|[^"?]*\+0x[0-9a-fA-F]+)"' "$t/redis.jsonl" | sort -u | head -8 | tr '\n' ' ')"
		fi
	elif [ "$(field "$st" unnamed)" = 0 ] && [ "$(field "$st" funcs)" -gt 0 ]; then
		pass redis/named
		echo "  note: module+0xOFFSET names allowed: no debug info for $REDIS_BIN ($why)"
	else
		fail redis/named "$(field "$st" unnamed) of $(field "$st" funcs) functions have no name: $(grep -o '"func":"?@[^"]*"' "$t/redis.jsonl" | sort -u | head -5 | tr '\n' ' ')"
	fi
	echo "  $(field "$st" modoff) of $(field "$st" funcs) functions named only module+0xOFFSET"

	# cycles under load, with data written before and read back after
	python3 - "$t/keys" <<'EOF'
import os, sys
d = sys.argv[1]
with open(d + ".cmd", "w") as c, open(d + ".want", "w") as w:
    for i in range(1000):
        v = os.urandom(24).hex()
        c.write("SET propel:check:%d %s\n" % (i, v))
        w.write(v + "\n")
    c.write("DEL propel:hash propel:list\n")
    for i in range(100):
        c.write("HSET propel:hash f%d %s\n" % (i, os.urandom(8).hex()))
        c.write("RPUSH propel:list %s\n" % os.urandom(8).hex())
EOF
	redis_read() { # OUT: every checked value, in a fixed order
		{
			redis-cli -p "$REDIS_PORT" --raw mget $(seq -f 'propel:check:%g' 0 999)
			redis-cli -p "$REDIS_PORT" --raw hgetall propel:hash | paste - - | sort
			redis-cli -p "$REDIS_PORT" --raw lrange propel:list 0 -1
		} >"$1" 2>&1
	}
	redis-cli -p "$REDIS_PORT" <"$t/keys.cmd" >/dev/null 2>&1
	redis_read "$t/redis.before"
	e0=$(redis_info total_error_replies)
	REAL_LOAD_NICE=19 redis_bench_start "$t/bench-cycles.out"
	sleep 0.5
	c0=$(date +%s%N)
	res=$(cycle_loop "$REDIS_PID" "$t/redis-cycles.log")
	ok=$(head -1 <<<"$res") first=$(sed -n 2p <<<"$res")
	sleep 0.3
	echo "redis: $cycles cycles in $((($(date +%s%N) - c0) / 1000000)) ms"
	if [ "$ok" -eq "$cycles" ] && kill -0 "$REDIS_PID" 2>/dev/null && [ "$(tracer_of "$REDIS_PID")" = 0 ]; then
		pass redis/cycles
	else
		fail redis/cycles "$ok/$cycles attaches ok; redis $(kill -0 "$REDIS_PID" 2>/dev/null && echo alive || echo gone), tracer $(tracer_of "$REDIS_PID"); $first"
	fi
	if redis_bench_stop && [ -z "$(redis_bench_errors "$t/bench-cycles.out")" ] &&
		[ "$(redis_info total_error_replies)" = "$e0" ]; then
		pass redis/cycles-no-errors
	else
		fail redis/cycles-no-errors "redis-benchmark ended or reported errors: $(redis_bench_errors "$t/bench-cycles.out" | head -2); error replies $e0 -> $(redis_info total_error_replies)"
	fi
	redis_read "$t/redis.after"
	if [ "$(redis-cli -p "$REDIS_PORT" ping 2>&1)" = PONG ] && [ "$(wc -l <"$t/redis.before")" -eq 1200 ] &&
		cmp -s "$t/redis.before" "$t/redis.after" &&
		cmp -s <(head -1000 "$t/redis.after") "$t/keys.want"; then
		pass redis/data-intact
	else
		fail redis/data-intact "keys read back after the cycles differ: $(diff "$t/redis.before" "$t/redis.after" | head -3 | tr '\n' ' ')"
	fi
	redis_stop
}

# ------------------------------------------------------------------ gzip
gzip_tests() {
	local st rc
	{ seq 1 30000; head -c 104858 /dev/urandom | base64; } >"$t/gz.in"
	gzip -c "$t/gz.in" >"$t/gz.ref"
	timeout -k 5 120 "$PROPEL" record -o "$t/gzip.db" -- /usr/bin/gzip -c "$t/gz.in" >"$t/gz.out" 2>"$t/gz.err"
	rc=$?
	if [ $rc -eq 0 ] && cmp -s "$t/gz.ref" "$t/gz.out"; then
		pass gzip/identical
	else
		fail gzip/identical "status $rc, output $(cmp "$t/gz.ref" "$t/gz.out" 2>&1 | head -1); $(head -c 200 "$t/gz.err")"
	fi
	"$PROPEL" replay --format=jsonl "$t/gzip.db" >"$t/gzip.jsonl" 2>/dev/null
	st=$(python3 "$stats" "$t/gzip.jsonl")
	echo "gzip trace: $st"
	atleast gzip/functions "distinct functions" "$(field "$st" funcs)" 15
	atleast gzip/depth "max depth" "$(field "$st" maxdepth)" 3
}

missing() { local c m=; for c; do command -v "$c" >/dev/null || m="$m $c"; done; echo "$m"; }
m=$(missing nginx wrk python3 pgrep)
[ -x /usr/sbin/nginx ] || m="$m /usr/sbin/nginx"
if ! want nginx; then :; elif [ -n "$m" ]; then skip_group nginx "not installed:$m"; else nginx_tests; fi
m=$(missing redis-server redis-cli redis-benchmark python3)
if ! want redis; then :; elif [ -n "$m" ]; then skip_group redis "not installed:$m"; else redis_tests; fi
if ! want gzip; then :; elif [ -x /usr/bin/gzip ]; then gzip_tests; else skip_group gzip "no /usr/bin/gzip"; fi
echo "real-software: $(elapsed)"
