#!/usr/bin/env bash
# tests/bench-vitals.sh - overhead of the vital-sign collector, each figure
# beside the same figure for `perf record -a -g` in the same run:
#   1. a syscall-heavy microbenchmark (getppid loop): time without, with
#      `propel vitals record`, with `perf record -a -g` (ratios to baseline)
#   2. nginx on loopback under wrk: requests/s, same three ways
#   3. collector CPU share, kernel memory of its maps, disk per hour of
#      history, beside perf's CPU share and perf.data per hour.
# Anchors (chopstix): < 1% CPU, 256 KB RAM, 16 MB disk per day.
# Called by tests/bench.sh (make bench); needs root.
cd "$(dirname "$0")/.." || exit 1
O=${O:-build}
PROPEL=${PROPEL:-$PWD/$O/propel}
[ "$(id -u)" -eq 0 ] || { echo "bench-vitals: SKIP (needs root)"; exit 0; }
d=$(mktemp -d /tmp/propel-bench-vitals.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$d"' EXIT
DUR=${BENCH_VITALS_SECONDS:-6}

cat >"$d/sysloop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, i;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
C
gcc -O2 -o "$d/sysloop" "$d/sysloop.c" || exit 1

start_vitals() {
	"$PROPEL" vitals record -o "$d/v.db" --duration 600 --epoch 1 2>"$d/v.err" &
	vpid=$!
	sleep 1.5
}
stop_vitals() {
	kill -INT $vpid; wait $vpid
}
start_perf() {
	perf record -a -g -o "$d/perf.data" -- sleep 600 >/dev/null 2>"$d/p.err" &
	ppid=$!
	sleep 1.5
}
stop_perf() {
	kill -INT $ppid; wait $ppid 2>/dev/null
}
cpu_ticks() { awk '{print $14+$15+$16+$17}' /proc/$1/stat 2>/dev/null || echo 0; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== syscall microbenchmark (ns per getppid, median of 5)"
base=$(for i in 1 2 3 4 5; do "$d/sysloop"; done | median)
start_vitals
vit=$(for i in 1 2 3 4 5; do "$d/sysloop"; done | median)
stop_vitals
start_perf
prf=$(for i in 1 2 3 4 5; do "$d/sysloop"; done | median)
stop_perf
awk -v b="$base" -v v="$vit" -v p="$prf" 'BEGIN {
	printf "  baseline %.1f ns   vitals %.1f ns (x%.2f)   perf -a -g %.1f ns (x%.2f)   vitals/perf %.2f\n",
		b, v, v / b, p, p / b, v / p }'

echo "== nginx on loopback under wrk (requests/s, ${DUR}s each)"
if command -v nginx >/dev/null && command -v wrk >/dev/null; then
	mkdir -p "$d/www" "$d/ngx"
	head -c 1400 /dev/zero | tr '\0' x >"$d/www/index.html"
	cat >"$d/nginx.conf" <<NGX
worker_processes 2;
pid $d/ngx/nginx.pid;
error_log $d/ngx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $d/ngx; proxy_temp_path $d/ngx;
	fastcgi_temp_path $d/ngx; uwsgi_temp_path $d/ngx; scgi_temp_path $d/ngx;
	server { listen 127.0.0.1:18089; root $d/www; }
}
NGX
	nginx -c "$d/nginx.conf" -p "$d" 2>/dev/null
	sleep 0.5
	rps() { wrk -t2 -c64 -d${DUR}s http://127.0.0.1:18089/ 2>/dev/null | awk '/Requests\/sec/ {print $2}'; }
	nb=$(rps)
	start_vitals; nv=$(rps); stop_vitals
	start_perf; np=$(rps); stop_perf
	kill "$(cat "$d/ngx/nginx.pid")" 2>/dev/null
	awk -v b="$nb" -v v="$nv" -v p="$np" 'BEGIN {
		printf "  baseline %.0f   vitals %.0f (x%.3f)   perf -a -g %.0f (x%.3f)   vitals/perf %.2f\n",
			b, v, v / b, p, p / b, v / p }'
else
	echo "  SKIP: nginx or wrk missing"
fi

echo "== collector cost, idle-ish machine with the syscall loop running, ${DUR}s"
rm -f "$d/v.db" "$d/perf.data"
"$d/sysloop" 100000000 >/dev/null & load=$!
start_vitals
t0=$(cpu_ticks $vpid); sleep "$DUR"; t1=$(cpu_ticks $vpid)
stop_vitals
grep "epochs" "$d/v.err" | sed 's/^propel: /  /'
vbytes=$(stat -c %s "$d/v.db")
start_perf
q0=$(cpu_ticks $ppid); sleep "$DUR"; q1=$(cpu_ticks $ppid)
stop_perf
kill $load 2>/dev/null
pbytes=$(stat -c %s "$d/perf.data" 2>/dev/null || echo 0)
hz=$(getconf CLK_TCK); n=$(nproc)
awk -v a=$((t1 - t0)) -v b=$((q1 - q0)) -v hz="$hz" -v n="$n" -v s="$DUR" \
	-v vb="$vbytes" -v pb="$pbytes" 'BEGIN {
	va = 100 * a / hz / s / n; pa = 100 * b / hz / s / n
	printf "  user-space CPU (process): vitals %.2f%%   perf %.2f%% of %d cores   ratio %.2f\n", va, pa, n, (pa > 0 ? va / pa : 0)
	printf "  disk per hour: vitals %.1f MB   perf %.1f MB   ratio %.3f   (chopstix: 16 MB/day = 0.7 MB/h)\n",
		vb * 3600 / s / 1e6, pb * 3600 / s / 1e6, (pb > 0 ? vb / pb : 0)
}'
