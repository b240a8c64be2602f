#!/usr/bin/env bash
# tests/e2e/drain-live.sh - record stores the session while the program
# runs (engine/ingest-live.h): the drained sub-buffers are walked into the
# session as they come, the rest when the program ends.
#
#   drain-live/stored   a program that calls for ~1 s (40 rounds of
#                       fib(18), 20 ms apart; tests/fixtures/capture/
#                       bench-fib.c): record's store log (PROPEL_DEBUG=store)
#                       says sub-buffers were stored as the run went
#   drain-live/same     its replay (pid, tid and times left out) is the
#                       same line for line as the session stored after
#                       the run only (PROPEL_NO_LIVE_INGEST=1)
#   drain-live/count    the session holds every fib call the program made
#   drain-live/kill9    propel killed (SIGKILL) once the live ingest has
#                       begun: its session directory holds the live
#                       session file beside the rings, and `propel
#                       recover -o DB DIR` stores the rings all the same
#                       (every fib entry the spool holds), and removes DIR
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 4
t=$(tmpdir)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
$cc -O2 -g -o "$t/fib" "$PROPEL_TOP/tests/fixtures/capture/bench-fib.c" ||
	{ fail build bench-fib; exit 1; }

# replay without what differs between two runs: pid, tid, ts_ns
norm() { "$PROPEL" replay --format=jsonl "$1" | cut -d, -f1,5- | md5sum; }
fib_entries() {
	"$PROPEL" replay --format=jsonl "$1" |
		grep -c '"kind":"entry".*"func":"fib[".]'
}

PROPEL_LOG="$t/live.log" PROPEL_DEBUG=store "$PROPEL" record -o "$t/l.db" \
	-- "$t/fib" 18 40 20 >"$t/l.out" 2>"$t/l.err"
n=$(sed -n 's/.*live: \([0-9]*\) sub-buffer(s) stored as the run went.*/\1/p' "$t/live.log")
if [ -n "$n" ] && [ "$n" -gt 0 ]; then
	pass drain-live/stored
else
	fail drain-live/stored "no sub-buffer stored while the run went: $(grep live "$t/live.log" | tr '\n' ' ')$(head -c 200 "$t/l.err")"
fi
echo "live: ${n:-0} sub-buffer(s) stored as the run went"

PROPEL_NO_LIVE_INGEST=1 "$PROPEL" record -o "$t/a.db" \
	-- "$t/fib" 18 40 20 >"$t/a.out" 2>"$t/a.err"
a=$(norm "$t/a.db")
l=$(norm "$t/l.db")
if [ -s "$t/a.db" ] && [ "$a" = "$l" ]; then
	pass drain-live/same
else
	fail drain-live/same "replays differ: after the run $a, live $l"
fi

want=$(sed -n 's/.* calls \([0-9]*\)$/\1/p' "$t/l.out")
got=$(fib_entries "$t/l.db")
if [ -n "$want" ] && [ "$got" = "$want" ]; then
	pass drain-live/count
else
	fail drain-live/count "the program made ${want:-?} calls, the session holds $got"
fi

# --- propel killed while the live ingest goes
PROPEL_LOG="$t/k.log" PROPEL_DEBUG=store "$PROPEL" record -o "$t/k.db" \
	-- "$t/fib" 18 400 20 >"$t/k.out" 2>"$t/k.err" &
rp=$!
for i in $(seq 1 200); do
	grep -q 'live: begun' "$t/k.log" 2>/dev/null && break
	sleep 0.05
done
sleep 0.3
dir=$(ls -d /dev/shm/propel/"$rp"-* 2>/dev/null | head -1)
live=no
[ -n "$dir" ] && [ -f "$dir/live.db" ] && live=yes
cpid=$(pgrep -P $rp)
kill -9 $rp
wait $rp 2>/dev/null
[ -n "$cpid" ] && kill -9 $cpid 2>/dev/null
"$PROPEL" recover -o "$t/r.db" "$dir" >"$t/r.out" 2>&1
rc=$?
got=$(fib_entries "$t/r.db" 2>/dev/null)
if [ $live = yes ] && [ $rc -eq 0 ] && [ "${got:-0}" -gt 0 ] && [ ! -e "$dir" ]; then
	pass drain-live/kill9
else
	fail drain-live/kill9 "live session file: $live; recover $rc ($(head -c 200 "$t/r.out")); $got fib entries; dir ${dir:-none} left: $([ -e "$dir" ] && echo yes || echo no)"
fi
