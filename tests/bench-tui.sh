#!/usr/bin/env bash
# tests/bench-tui.sh - the TUI on a chunked (format 2) session of 10 million
# events (PROPEL_BENCH_EVENTS to change), written by gen-session through
# engine/chunk.c's writer as ingest writes it: three processes, five
# threads (fib recursion, a shallow loop, a thread with a gap, a client whose
# requests the server receives, a 300-deep recursion), signals, a crash.
#
# Measured as a user waits, in a real terminal (tmux, 200x50):
#   first screen  from starting `propel tui DB` until the screen shows the
#                 status line (polled every 20 ms; propel's own figure, with
#                 its parts, beside it)
#   End           from pressing End (at the first event: Home before) until
#                 the status line shows the last event of the thread
#   steps         1,000 random moves, each a random jump then one of the
#                 eight moves then a full redraw, timed inside propel
#                 (PROPEL_TUI_BENCH=N): the worst, the 99th percentile, the
#                 mean, and the worst in CPU time (the machine may be shared)
#   memory        peak RSS of each run (getrusage)
# Goals (issue 8): first screen <= 1 s, End <= 1 s, worst of 1,000 random
# steps <= 20 ms, resident memory <= 200 MB.  There is no peer figure for
# the TUI (uftrace's TUI reads its own data format; not compared here).
# The session crashed after its processes talked, so it opens focused on
# its flows ranked by suspect score: `:view trace` before Home and End.
# PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): 100,000 events, 100
# steps, the same checks, no goals.  A failed check prints a line
# "bench-tui: ..." and exits 1.
# Run by `make bench` (tests/bench.sh) or alone: O=build tests/bench-tui.sh
. "$(dirname "$0")/fixtures/tui/tui-lib.sh"
command -v tmux >/dev/null || { echo "bench-tui: tmux not installed, skipped"; exit 0; }
short=${PROPEL_BENCH_SHORT:-}
n=${PROPEL_BENCH_EVENTS:-${short:+100000}}
n=${n:-10000000}
steps=${short:+100}
steps=${steps:-1000}
tui_build || exit 1
db=$PROPEL_TOP/$O/tests/big-chunked-$n.db
if [ ! -s "$db" ] || [ "$PROPEL_TOP/tests/fixtures/tui/gen-session.c" -nt "$db" ]; then
	echo "bench-tui: generating $n events (chunked) into $db ..."
	rm -f "$db"
	"$TUI_GEN" chunked "$db" "$n" || exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"; tui_stop' EXIT
cat "$db" >/dev/null # warm the page cache: we measure propel, not the disk
ms() { date +%s%N | cut -c1-13; }
# wait (20 ms polls) until the screen matches the regex $1; max $2 s
wait_re() {
	local i
	for ((i = 0; i < $2 * 50; i++)); do
		tui_screen | grep -qE -- "$1" && return 0
		sleep 0.02
	done
	return 1
}
tmx kill-server 2>/dev/null
t0=$(ms)
tmx new-session -d -s t -x 200 -y 50 "PROPEL_TUI_BENCH=1 $PROPEL tui $db 2>$out; echo EXITED \$?; sleep 60"
wait_re ' event [0-9]+/[0-9]+' 60 || { echo "bench-tui: no first screen"; tui_screen; exit 1; }
first_ms=$(( $(ms) - t0 ))
# the session opens at the crash, the server's last event, focused on
# its flows: to the trace pane, then Home
tmx send-keys -t t ":view trace" Enter
tmx send-keys -t t Home
wait_re ' event 1/[0-9]+' 30 || { echo "bench-tui: Home did not reach the first event"; tui_screen | tail -3; exit 1; }
t0=$(ms)
tmx send-keys -t t End
wait_re ' event ([0-9]+)/\1( |$)' 30 || { echo "bench-tui: End did not reach the last event"; tui_screen | tail -3; exit 1; }
end_ms=$(( $(ms) - t0 ))
tui_keys q
tui_wait_for EXITED 10
tui_start 200 50 "PROPEL_TUI_BENCH=$steps $PROPEL tui $db 2>>$out"
tui_wait_for EXITED 300 || { echo "bench-tui: $steps steps did not end in 300 s"; exit 1; }
tui_screen | grep -q "EXITED 0" || { echo "bench-tui: $(tui_screen | grep -v '^$' | tail -2)"; exit 1; }
sed 's/^propel-tui-bench: /tui: /' "$out"
sec() { awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }'; }
pfirst=$(sed -n 's/.*first_screen_s=\([0-9.]*\).*/\1/p' "$out" | head -1)
worst=$(sed -n 's/.*worst_step_ms=\([0-9.]*\).*/\1/p' "$out" | head -1)
p99=$(sed -n 's/.*p99_step_ms=\([0-9.]*\).*/\1/p' "$out" | head -1)
wcpu=$(sed -n 's/.*worst_step_cpu_ms=\([0-9.]*\).*/\1/p' "$out" | head -1)
rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$out" | sort -n | tail -1)
# propel's own End: from the first event of the thread to its last
ev=$(sed -n 's/.*end_events=\([0-9]*\)\.\.\([0-9]*\)\/\([0-9]*\) .*/\1 \2 \3/p' "$out" | head -1)
read -r ev_from ev_to ev_n <<<"${ev:-0 0 0}"
[ "$ev_from" = 1 ] && [ "$ev_to" = "$ev_n" ] && [ "$ev_n" -gt 0 ] ||
	{ echo "bench-tui: propel's own End went from event $ev_from to $ev_to of $ev_n"; exit 1; }
[ -n "$worst" ] && [ -n "$pfirst" ] && [ -n "$rss" ] ||
	{ echo "bench-tui: propel printed no figures"; exit 1; }
echo "tui: $n events (chunked): first screen $(sec "$first_ms") s under tmux (propel's own ${pfirst:-?} s) (goal <= 1)," \
	"End $(sec "$end_ms") s (goal <= 1)," \
	"worst of $steps steps ${worst:-?} ms (p99 ${p99:-?}, worst CPU ${wcpu:-?}) (goal <= 20)," \
	"RSS $(( ${rss:-0} / 1024 )) MB (goal <= 200)"
