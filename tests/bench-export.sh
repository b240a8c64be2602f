#!/usr/bin/env bash
# tests/bench-export.sh - `propel export` on a large session beside uftrace's
# own exporter on a recording of the same program, measured in the same run.
#
#   $O/fixtures/O2/bench-fib N (default N=32: 7,049,155 calls, ~14M events)
#   recorded by `propel record` and by `uftrace record -P .`; then, timed
#   with /usr/bin/time (wall seconds and peak RSS, output to /dev/null... a
#   file in /dev/shm, as a user would write it):
#     chrome   propel export --format=chrome   vs  uftrace dump --chrome
#     folded   propel export --format=folded   vs  uftrace dump --flame-graph
#     otlp     propel export --format=otlp     (uftrace has no OTLP)
#   Goal (issue 12): a 10M-event session exports in <= 20 s with <= 200 MB.
#
# Output: "name  propel  uftrace  ratio" per figure (ratio = propel/peer).
# PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): fib(18) and 2,000
# ping-pong trips, the same figures, no goals.  An export or a recording
# of propel's that fails prints "bench-export: ..." and the script exits 1.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
O=${O:-build}
case $O in /*) out=$O ;; *) out=$top/$O ;; esac
PROPEL=${PROPEL:-$out/propel}
short=${PROPEL_BENCH_SHORT:-}
fibn=${BENCH_EXPORT_FIB_N:-${short:+18}}
fibn=${fibn:-32}
rc=0
work=$(mktemp -d /dev/shm/propel-bench-export.XXXXXX)
trap 'rm -rf "$work"' EXIT

tests/build-fixtures.sh >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; echo "bench-export: no fixtures" >&2; exit 1; }
fib=$out/fixtures/O2/bench-fib

# wall s and peak RSS MB of a command: "S MB", or "n/a n/a"
measure() {
	if /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err"; then
		awk '{ printf "%.2f %.0f\n", $1, $2 / 1024 }' "$work/time"
	else
		echo "n/a n/a"
		head -c 200 "$work/err" >&2
	fi
}
# propel's figure: n/a is the script's failure
pcheck() { # WHAT FIGURE
	[ "$2" != n/a ] && return
	echo "bench-export: $1 failed"
	rc=1
}
row() { # NAME PROPEL PEER
	awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN {
		r = (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "n/a"
		printf "%-44s %10s %10s %7s\n", n, a, b, r }'
}

if ! "$PROPEL" record -o "$work/s.db" -- "$fib" "$fibn" >/dev/null 2>"$work/rec.err"; then
	echo "bench-export: propel record failed: $(head -c 200 "$work/rec.err")"
	exit 1
fi
events=$(sqlite3 "$work/s.db" "SELECT sum(count) FROM chunks" 2>/dev/null)
have_uftrace=0
if command -v uftrace >/dev/null &&
	uftrace record -d "$work/u.data" -P . "$fib" "$fibn" >/dev/null 2>&1; then
	have_uftrace=1
fi

printf "%-44s %10s %10s %7s\n" "figure (fib($fibn), $events events)" propel uftrace ratio
read -r pc pcm < <(measure "$PROPEL" export --format=chrome -o "$work/c.json" "$work/s.db")
uc=n/a ucm=n/a uf=n/a ufm=n/a
if [ $have_uftrace = 1 ]; then
	read -r uc ucm < <(measure sh -c "uftrace dump -d '$work/u.data' --chrome >'$work/u.json'")
fi
pcheck "propel export --format=chrome" "$pc"
row "export chrome: seconds (goal <= 20)" "$pc" "$uc"
row "export chrome: peak RSS MB (goal <= 200)" "$pcm" "$ucm"
rm -f "$work/c.json" "$work/u.json"
read -r pf pfm < <(measure "$PROPEL" export --format=folded -o "$work/f.txt" "$work/s.db")
if [ $have_uftrace = 1 ]; then
	read -r uf ufm < <(measure sh -c "uftrace dump -d '$work/u.data' --flame-graph >'$work/u.txt'")
fi
pcheck "propel export --format=folded" "$pf"
row "export folded: seconds" "$pf" "$uf"
row "export folded: peak RSS MB" "$pfm" "$ufm"
rm -f "$work/f.txt" "$work/u.txt"
read -r po pom < <(measure "$PROPEL" export --format=otlp -o "$work/o.json" "$work/s.db")
pcheck "propel export --format=otlp" "$po"
row "export otlp: seconds (no uftrace peer)" "$po" n/a
row "export otlp: peak RSS MB" "$pom" n/a

# A session that is mostly messages, the worst case of the otlp export's
# flow map (it holds the communication events, engine/flow-map.h): two
# processes ping-pong over a pair of pipes, a call around each message.
trips=${BENCH_EXPORT_TRIPS:-${short:+2000}}
trips=${trips:-100000}
cat >"$work/pp.c" <<'C'
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) static void msg(int fd, char *b, int out)
{
	if ((out ? write(fd, b, 8) : read(fd, b, 8)) != 8)
		_exit(1);
}
__attribute__((noinline)) static void trip(int r, int w, char *b, int first)
{
	if (first) { msg(w, b, 1); msg(r, b, 0); }
	else { msg(r, b, 0); msg(w, b, 1); }
}
int main(int argc, char **argv)
{
	int a[2], c[2], n = atoi(argv[1]), i, child;
	char b[8] = "pingpong";
	if (pipe(a) || pipe(c))
		return 1;
	child = fork() == 0;
	for (i = 0; i < n; i++)
		trip(child ? a[0] : c[0], child ? c[1] : a[1], b, !child);
	return 0;
}
C
if gcc -O2 -g -o "$work/pp" "$work/pp.c" &&
	"$PROPEL" record -o "$work/pp.db" -- "$work/pp" "$trips" >/dev/null 2>"$work/rec.err"; then
	ppev=$(sqlite3 "$work/pp.db" "SELECT sum(count) FROM chunks" 2>/dev/null)
	ppcomm=$(sqlite3 "$work/pp.db" "SELECT count(*) FROM comm" 2>/dev/null)
	printf "%-44s %10s %10s %7s\n" "figure (ping-pong, $ppev events, $ppcomm messages)" propel "" ""
	read -r pp ppm < <(measure "$PROPEL" export --format=otlp -o "$work/o.json" "$work/pp.db")
	pcheck "propel export --format=otlp (ping-pong)" "$pp"
	row "export otlp: seconds" "$pp" n/a
	row "export otlp: peak RSS MB" "$ppm" n/a
else
	echo "bench-export: ping-pong session: $(head -c 200 "$work/rec.err")"
	rc=1
fi
exit $rc
