#!/usr/bin/env bash
# tests/bench-real.sh - throughput of real servers while propel is attached,
# beside the same figure untraced, measured in the same run (issue 7: must
# be >= 0.8 for the tests, the goal is >= 0.95; TraceBack reported 5% on
# Apache):
#
#   nginx   Debian's nginx, 1 worker, a 4 KiB static file; wrk -t1 -c16 for
#           BENCH_REAL_SECS (default 3) s untraced, then the same with
#           `propel attach --duration BENCH_REAL_SECS` started just before
#           it (the injection is inside the window, the detach after it).
#           req/s as wrk reports it.
#   redis   redis-server, no persistence; redis-benchmark -c16 looping over
#           SET GET INCR LPUSH RPOP HSET MSET; commands/s from the server's
#           total_commands_processed over BENCH_REAL_SECS s untraced, then
#           over the BENCH_REAL_SECS s that start with `propel attach`.
#
# Beside each throughput line, the server's CPU time per request (nginx's
# worker) or per command (redis-server), utime + stime of the whole
# process (the agent's lease thread included) over the same windows: the
# agent's cost itself, far less moved by other load on a shared machine
# than req/s; its ratio is untraced / attached (1.0 = free), the median of
# the per-pair ratios.
#
# BENCH_REAL_OPTS: more options for every `propel attach` (e.g. --all: no
# cost budget, inject/agent/budget.c; the default is attach's budget).
# Each pair is measured BENCH_REAL_REPS (default 3) times; the line shows
# the medians and the median of the per-pair ratios.  A second nginx line
# is the steady state, robust on a shared machine (nginx_steady below):
# the best of BENCH_REAL_WINDOWS (default 8) 1-s windows of each of two
# servers, one attached throughout, the windows alternated.  Output: "name
# propel peer ratio" as in tests/bench-trace.sh, peer = the same server
# untraced.  The nginx and redis-server binaries are the ones
# tests/e2e/real-software.sh uses (tests/real/nginx-debug.sh and
# tests/real/redis-debug.sh, if they have built their debug info on this
# machine, else /usr/sbin/nginx and /usr/bin/redis-server).  Needs root;
# takes ~1 min.  PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): one pair
# of 2-s runs each, 2 steady windows, the installed (stripped) servers
# (no rebuild of their debug info: 1-3 min each the first time), no goals.  A server that does not
# start, an attach that fails or a client that reports errors prints
# "bench-real: ..." and the script exits 1.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PROPEL_TOP=$top
O=${O:-build}
case $O in /*) out=$O ;; *) out=$top/$O ;; esac
PROPEL=${PROPEL:-$out/propel}
. "$top/tests/lib.sh"
. "$top/tests/real/servers.sh"
short=${PROPEL_BENCH_SHORT:-}
secs=${BENCH_REAL_SECS:-${short:+2}}
secs=${secs:-3}
reps=${BENCH_REAL_REPS:-${short:+1}}
reps=${reps:-3}
windows=${BENCH_REAL_WINDOWS:-${short:+2}}
windows=${windows:-8}
rc=0
oops() { echo "bench-real: $*"; rc=1; }
t=$(mktemp -d /tmp/propel-bench-real.XXXXXX)
chmod 755 "$t"
attach_pid=
cleanup() {
	[ -n "$attach_pid" ] && kill "$attach_pid" 2>/dev/null
	real_cleanup
	rm -rf "$t"
}
trap cleanup EXIT

row() { printf '%-44s %12s %12s %8s\n' "$@"; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.3f\n", a / b }'; }
# ticks PID: its CPU time so far (all threads), in clock ticks
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# per_ns TICKS N: ns of CPU per unit of work
per_ns() { awk -v c="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.0f\n", c * 1e9 / hz / n; else print "n/a" }'; }

if ! is_root; then
	echo "bench-real: needs root (ptrace of the servers); n/a"
	exit 0
fi
if [ ! -x "$PROPEL" ]; then
	echo "bench-real: no $PROPEL (make O=$O first)"
	exit 1
fi
row name propel peer ratio

# attach_bg PID DB: propel attach for $secs s in the background
attach_bg() {
	timeout -k 5 $((secs + 120)) "$PROPEL" attach ${BENCH_REAL_OPTS:-} -o "$2" --duration "$secs" "$1" >>"$t/attach.log" 2>&1 &
	attach_pid=$!
}
attach_done() {
	wait "$attach_pid"
	local rc=$?
	attach_pid=
	return $rc
}

# --- nginx ------------------------------------------------------------------
nginx_bench() {
	local dbg i a u c0 c1 cu ca bad=0
	NGINX_BIN=/usr/sbin/nginx
	[ -z "$short" ] && dbg=$("$top/tests/real/nginx-debug.sh" 2>/dev/null) && NGINX_BIN=$dbg
	nginx_start "$t/nginx" 2>"$t/nginx.err" || { oops "nginx: $(cat "$t/nginx.err")"; return; }
	wrk_run 1 "$t/warm"
	: >"$t/n.u"; : >"$t/n.a"; : >"$t/n.r"; : >"$t/nc.u"; : >"$t/nc.a"; : >"$t/nc.r"
	for ((i = 0; i < reps; i++)); do
		c0=$(ticks "$NGINX_WORKER")
		wrk_run "$secs" "$t/wu"
		c1=$(ticks "$NGINX_WORKER")
		cu=$(per_ns $((c1 - c0)) "$(wrk_field "$t/wu" requests)")
		c0=$(ticks "$NGINX_WORKER")
		attach_bg "$NGINX_WORKER" "$t/n.db"
		wrk_run "$secs" "$t/wa"
		c1=$(ticks "$NGINX_WORKER")
		attach_done || bad=1
		ca=$(per_ns $((c1 - c0)) "$(wrk_field "$t/wa" requests)")
		u=$(wrk_field "$t/wu" rps) a=$(wrk_field "$t/wa" rps)
		[ "$(wrk_errors "$t/wu")" = 0 ] && [ "$(wrk_errors "$t/wa")" = 0 ] || bad=1
		echo "${u:-0}" >>"$t/n.u"; echo "${a:-0}" >>"$t/n.a"; ratio "${a:-0}" "${u:-0}" >>"$t/n.r"
		echo "$cu" >>"$t/nc.u"; echo "$ca" >>"$t/nc.a"; ratio "$cu" "$ca" >>"$t/nc.r"
	done
	row "nginx req/s under wrk, ${secs}s, median of $reps" "$(median <"$t/n.a")" "$(median <"$t/n.u")" "$(median <"$t/n.r")"
	echo "  $NGINX_BIN; ratios $(tr '\n' ' ' <"$t/n.r")(goal >= 0.95)"
	row "nginx worker CPU ns/request (untraced/propel)" "$(median <"$t/nc.a")" "$(median <"$t/nc.u")" "$(median <"$t/nc.r")"
	echo "  ratios $(tr '\n' ' ' <"$t/nc.r")"
	[ $bad -eq 0 ] || oops "nginx: an attach failed or wrk reported errors (see tests/e2e/real-software.sh): $(tail -2 "$t/attach.log" | tr '\n' ' ')"
	nginx_steady
	nginx_stop
}

# nginx_steady: the steady state, robust on a shared machine: a second
# nginx (B) with propel attached for the whole run, and wrk windows of 1 s
# alternating between the first (untraced) and B, from 2 s after the
# attach started (the injection done); the best window of each.  Other
# work on the machine lowers some windows of both, not the best.
nginx_steady() {
	local w=$windows i r u=0 a=0 bad=0
	local port=$NGINX_PORT master=$NGINX_MASTER worker=$NGINX_WORKER bport bmaster
	nginx_start "$t/nginx-b" 2>"$t/nginx.err" || { oops "nginx: $(cat "$t/nginx.err")"; return; }
	bport=$NGINX_PORT bmaster=$NGINX_MASTER
	wrk_run 1 "$t/warm"
	timeout -k 5 $((2 * w + 120)) "$PROPEL" attach ${BENCH_REAL_OPTS:-} -o "$t/s.db" --duration $((2 * w + 4)) "$NGINX_WORKER" >>"$t/attach.log" 2>&1 &
	attach_pid=$!
	sleep 2
	for ((i = 0; i < w; i++)); do
		NGINX_PORT=$port wrk_run 1 "$t/su"
		NGINX_PORT=$bport wrk_run 1 "$t/sa"
		[ "$(wrk_errors "$t/su")" = 0 ] && [ "$(wrk_errors "$t/sa")" = 0 ] || bad=1
		r=$(wrk_field "$t/su" rps)
		u=$(awk -v a="$u" -v b="${r:-0}" 'BEGIN { print (b > a) ? b : a }')
		r=$(wrk_field "$t/sa" rps)
		a=$(awk -v a="$a" -v b="${r:-0}" 'BEGIN { print (b > a) ? b : a }')
	done
	attach_done || bad=1
	nginx_stop
	NGINX_PORT=$port NGINX_MASTER=$master NGINX_WORKER=$worker
	row "nginx req/s, steady, best 1-s window of $w" "$a" "$u" "$(ratio "$a" "$u")"
	echo "  two servers, one attached throughout, windows alternated (goal >= 0.95)"
	[ $bad -eq 0 ] || oops "nginx steady: the attach failed or wrk reported errors: $(tail -2 "$t/attach.log" | tr '\n' ' ')"
}

# --- redis ------------------------------------------------------------------
redis_bench() {
	local i a u c0 c1 s0 s1 p0 p1 cu ca dbg bad=0
	REDIS_BIN=/usr/bin/redis-server
	[ -z "$short" ] && dbg=$("$top/tests/real/redis-debug.sh" 2>/dev/null) && REDIS_BIN=$dbg
	redis_start "$t/redis" 2>"$t/redis.err" || { oops "redis: $(cat "$t/redis.err")"; return; }
	redis_bench_start "$t/rb.out"
	sleep 1
	: >"$t/r.u"; : >"$t/r.a"; : >"$t/r.r"; : >"$t/rc.u"; : >"$t/rc.a"; : >"$t/rc.r"
	for ((i = 0; i < reps; i++)); do
		c0=$(redis_info total_commands_processed) s0=$(now_ns) p0=$(ticks "$REDIS_PID")
		sleep "$secs"
		c1=$(redis_info total_commands_processed) s1=$(now_ns) p1=$(ticks "$REDIS_PID")
		u=$(((c1 - c0) * 1000000000 / (s1 - s0)))
		cu=$(per_ns $((p1 - p0)) $((c1 - c0)))
		s0=$(now_ns) c0=$(redis_info total_commands_processed) p0=$(ticks "$REDIS_PID")
		attach_bg "$REDIS_PID" "$t/r.db"
		sleep "$secs"
		c1=$(redis_info total_commands_processed) s1=$(now_ns) p1=$(ticks "$REDIS_PID")
		attach_done || bad=1
		a=$(((c1 - c0) * 1000000000 / (s1 - s0)))
		ca=$(per_ns $((p1 - p0)) $((c1 - c0)))
		echo "$u" >>"$t/r.u"; echo "$a" >>"$t/r.a"; ratio "$a" "$u" >>"$t/r.r"
		echo "$cu" >>"$t/rc.u"; echo "$ca" >>"$t/rc.a"; ratio "$cu" "$ca" >>"$t/rc.r"
		sleep 0.5
	done
	redis_bench_stop || bad=1
	row "redis commands/s under redis-benchmark, median" "$(median <"$t/r.a")" "$(median <"$t/r.u")" "$(median <"$t/r.r")"
	echo "  $REDIS_BIN; ratios $(tr '\n' ' ' <"$t/r.r")(goal >= 0.95)"
	row "redis CPU ns/command (untraced/propel)" "$(median <"$t/rc.a")" "$(median <"$t/rc.u")" "$(median <"$t/rc.r")"
	echo "  ratios $(tr '\n' ' ' <"$t/rc.r")"
	[ $bad -eq 0 ] || oops "redis: an attach failed or redis-benchmark stopped on an error: $(tail -2 "$t/attach.log" | tr '\n' ' ')"
	redis_stop
}

if command -v wrk >/dev/null && [ -x /usr/sbin/nginx ]; then nginx_bench; else echo "bench-real: no nginx or wrk: n/a"; fi
if command -v redis-benchmark >/dev/null && command -v redis-server >/dev/null; then redis_bench; else echo "bench-real: no redis: n/a"; fi
echo "  propel: throughput with propel attached; peer: the same server untraced, same run"
exit $rc
