#!/usr/bin/env bash
# tests/bench-tui.sh - the TUI on a synthetic session of 10 million events
# (PROPEL_BENCH_EVENTS to change): time to first screen (with its parts:
# session open, reconstruction, first draw), the slowest and mean of 1,000
# random moves (each a random jump, then one of the eight moves, then a full
# redraw; measured inside propel, PROPEL_TUI_BENCH=N), and peak RSS.
# Goals: first screen < 2 s, every step < 50 ms.  Run by `make bench`
# (tests/bench.sh) or alone: O=build tests/bench-tui.sh
. "$(dirname "$0")/fixtures/tui/tui-lib.sh"
command -v tmux >/dev/null || { echo "bench-tui: tmux not installed, skipped"; exit 0; }
n=${PROPEL_BENCH_EVENTS:-10000000}
tui_build || exit 1
db=$PROPEL_TOP/$O/tests/big-$n.db
if [ ! -s "$db" ]; then
	echo "bench-tui: generating $n events into $db ..."
	"$TUI_GEN" big "$db" "$n" || exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"; tui_stop' EXIT
cat "$db" >/dev/null # warm the page cache: we measure propel, not the disk
tui_start 200 50 "PROPEL_TUI_BENCH=1 $PROPEL tui $db 2>$out"
tui_wait_for "event " 120
tui_keys q
tui_wait_for EXITED 10
tui_start 200 50 "PROPEL_TUI_BENCH=1000 $PROPEL tui $db 2>>$out"
tui_wait_for EXITED 300
sed 's/^propel-tui-bench: /tui: /' "$out"
first=$(sed -n 's/.*first_screen_s=\([0-9.]*\).*/\1/p' "$out" | head -1)
worst=$(sed -n 's/.*worst_step_ms=\([0-9.]*\).*/\1/p' "$out" | head -1)
echo "tui: $n events: first screen ${first:-?} s (goal < 2), worst of 1000 steps ${worst:-?} ms (goal < 50)"
