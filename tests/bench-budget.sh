#!/usr/bin/env bash
# tests/bench-budget.sh - what the agent's cost budget (inject/agent/
# budget.c, issue 34) buys on Debian's nginx (1 worker, a 4 KiB file,
# wrk -t1 -c16), in one run, three states alternated BENCH_BUDGET_REPS
# (default 5) times:
#   untraced   wrk for BENCH_BUDGET_SECS (default 3) s
#   budget     `propel attach` (the default budget): wrk 1.5 s to let it
#              decide (it does every 0.5 s), then wrk BENCH_BUDGET_SECS s
#   all        the same with `propel attach --all` (every call traced)
#   adaptive   the same with `propel attach --adaptive` (variance-driven:
#              the functions near each request's root, deeper where the
#              variance is; inject/agent/adaptive.c; goal >= 0.97)
# Two figures per state, each the median over the reps of its ratio to
# the untraced window of the same rep:
#   req/s      wrk's requests per second (what bench-real.sh reports; on a
#              loaded 2-core machine it mostly measures the scheduler)
#   cpu/req    the worker's CPU time (utime + stime, /proc/PID/stat) per
#              request served: the agent's cost itself, far less moved by
#              other load; the ratio is untraced / traced (1.0 = free)
# Needs root, wrk and nginx; about 15 s a rep.  Run it with `nice`.
# PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): one rep of 1 s, the
# installed (stripped) nginx (no rebuild of its debug info).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export PROPEL_TOP=$top
O=${O:-build}
case $O in /*) out=$O ;; *) out=$top/$O ;; esac
PROPEL=${PROPEL:-$out/propel}
. "$top/tests/lib.sh"
. "$top/tests/real/servers.sh"
short=${PROPEL_BENCH_SHORT:-}
secs=${BENCH_BUDGET_SECS:-${short:+1}}
secs=${secs:-3}
reps=${BENCH_BUDGET_REPS:-${short:+1}}
reps=${reps:-5}
t=$(mktemp -d /tmp/propel-bench-budget.XXXXXX)
chmod 755 "$t"
ap=
cleanup() {
	[ -n "$ap" ] && kill "$ap" 2>/dev/null
	real_cleanup
	rm -rf "$t"
}
trap cleanup EXIT
is_root || { echo "bench-budget: needs root; n/a"; exit 0; }
command -v wrk >/dev/null || { echo "bench-budget: no wrk; n/a"; exit 0; }

ticks() { awk '{ print $14 + $15 }' "/proc/$NGINX_WORKER/stat"; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "n/a" }'; }

# measure NAME: wrk for $secs s; appends "rps cpu_ns_per_req" to $t/NAME
measure() {
	local c0 c1 rps req
	c0=$(ticks)
	wrk_run "$secs" "$t/w"
	c1=$(ticks)
	rps=$(wrk_field "$t/w" rps) req=$(wrk_field "$t/w" requests)
	[ "$(wrk_errors "$t/w")" = 0 ] || { echo "bench-budget: wrk errors ($1)"; exit 1; }
	echo "${rps:-0} $(awk -v c=$((c1 - c0)) -v r="${req:-0}" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (r > 0) printf "%.0f", c * 1e9 / hz / r; else print 0 }')" >>"$t/$1"
}

# traced NAME OPTS...: attach with OPTS, settle, measure, detach
traced() {
	local name=$1
	shift
	timeout -k 5 $((secs + 60)) "$PROPEL" attach "$@" -o "$t/$name.db" \
		--duration $((secs + 3)) "$NGINX_WORKER" >>"$t/attach.log" 2>&1 &
	ap=$!
	wrk_run 1 "$t/settle" # (wrk_run takes whole seconds) and the injection
	measure "$name"
	wait "$ap" || { echo "bench-budget: attach failed: $(tail -2 "$t/attach.log")"; exit 1; }
	ap=
}

NGINX_BIN=/usr/sbin/nginx
[ -z "$short" ] && dbg=$("$top/tests/real/nginx-debug.sh" 2>/dev/null) && NGINX_BIN=$dbg
nginx_start "$t/nginx" 2>"$t/nginx.err" || { echo "bench-budget: nginx: $(cat "$t/nginx.err")"; exit 1; }
wrk_run 1 "$t/warm"
for ((i = 0; i < reps; i++)); do
	measure untraced
	traced budget
	traced all --all
	traced adaptive --adaptive
done
printf '%-10s %10s %12s %10s %12s\n' state req/s ratio cpu/req ratio
for s in untraced budget all adaptive; do
	paste "$t/untraced" "$t/$s" | awk '{ print $3 / $1, $2 / $4 }' >"$t/$s.r"
	printf '%-10s %10s %12s %10s %12s\n' "$s" "$(awk '{ print $1 }' "$t/$s" | median)" \
		"$(awk '{ print $1 }' "$t/$s.r" | median)" "$(awk '{ print $2 }' "$t/$s" | median)ns" \
		"$(awk '{ print $2 }' "$t/$s.r" | median)"
	echo "  $s: req/s ratios $(awk '{ printf "%.3f ", $1 }' "$t/$s.r")"
done
echo "  $NGINX_BIN, $reps reps of ${secs}s; ratios to the untraced window of the same rep"
echo "  untraced after the budget's decisions: $("$PROPEL" replay "$t/budget.db" 2>/dev/null | grep -c '^#   pid') functions"
