#!/usr/bin/env bash
# tests/e2e/tui-flows.sh - the flows and root-cause panes
# (tui/view-flows.c, tui/view-rootcause.c) under tmux at 80x24, on a real
# recording of tests/fixtures/report/farm.c in its rare mode (request 4 of
# 8, flow 5, takes an error branch):
#   tui-flows/list       `:view flows`: the odd flow ranked first with the
#                        longest bar, as `propel report --suspects` ranks it
#   tui-flows/open       Enter: only that flow's events, as many as
#                        `report --flows` counts, the first the server's recv
#   tui-flows/goto       Enter on an event: the cursor is there (status line:
#                        the server's pid and read), the trace pane focused
#   tui-flows/back       Backspace returns to the ranked list
#   tui-flows/background the ranking runs on its own thread: with it made
#                        to take 3 s (PROPEL_TEST_BG_DELAY_MS), `:view
#                        flows` shows "ranking the flows" at once, the trace
#                        pane still moves (Tab, j: the status line's event
#                        changes), then the ranked list appears by itself
#   tui-rootcause/list   `:view rootcause`: the reduction line and the rare
#                        path within the first five by time (issue 10's bar,
#                        as report.sh's: the normal flow's compute, at the
#                        same point of the other request, comes first when
#                        the odd request waited longer for its worker, as
#                        on a loaded machine): its values (time from the
#                        flow's start, 5 frames) apart from its ranks
#   tui-rootcause/as-report  the pane compares the same two flows as
#                        `propel report --rootcause` (the normal one: the
#                        neighbour that set the odd flow's score, not its
#                        nearest) and ranks its first path the same
#   tui-rootcause/sides  the anomalous side's rows red, the normal side's
#                        green (colour pairs: SGR 31 and 32, capture-pane -e)
#   tui-rootcause/goto   Enter: the cursor at the path's first occurrence,
#                        quota_exceeded in the odd request's worker, and the
#                        message says which flow and process it went to
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 9
command -v tmux >/dev/null || { skip tui-flows "tmux not installed"; exit 77; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
export PROPEL_TEST_QUIET=1
${CC:-gcc} -O0 -g -o "$d/farm" "$PROPEL_TOP/tests/fixtures/report/farm.c" ||
	{ fail tui-flows "cannot build the farm"; exit 1; }
if ! timeout 120 "$PROPEL" record -o "$d/s.db" -- "$d/farm" rare 8 3 >"$d/farm.out" 2>"$d/rec.err"; then
	fail tui-flows "record: $(head -c 300 "$d/rec.err")"
	exit 1
fi
server=$(awk '$1 == "server" { print $2 }' "$d/farm.out")
odd=$(awk '$1 == "req" && $2 == 4 { print $4 }' "$d/farm.out")
"$PROPEL" report --flows --format=json "$d/s.db" >"$d/flows.json"
nev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["flows"][4]["events"])' "$d/flows.json")
top=$("$PROPEL" report --suspects --format=json "$d/s.db" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["scores"][0]["id"])')

tui_start 80 24 "$PROPEL" tui "$d/s.db"
tui_wait_for "event 1/" 10
tui_cmd view flows
tui_wait_for "RANK FLOW" 30 # (ranked on its own thread)
scr=$(tui_screen)
row1=$(grep -m1 -E '^ +1 +[0-9]+ ' <<<"$scr")
if [ "$top" = 5 ] && grep -qE '^ +1 +5 +[0-9.]+ █{16} ' <<<"$row1" &&
	grep -q "$server,$odd" <<<"$row1"; then
	pass tui-flows/list
else
	fail tui-flows/list "report top $top, row: $row1 | $(head -4 <<<"$scr" | tr '\n' '|')"
fi

tui_keys Enter
scr=$(tui_screen)
if grep -q "^flow 5: $nev events" <<<"$scr" &&
	grep -qE "^ +$server +\+0\.000ms +recv 12 bytes" <<<"$(sed -n 3p <<<"$scr")"; then
	pass tui-flows/open
else
	fail tui-flows/open "want $nev events: $(head -4 <<<"$scr" | tr '\n' '|')"
fi

tui_keys Enter
if tui_status | grepq -E "^ *$server:$server +read " &&
	tui_screen | grepq -E '^ trace' && tui_screen | grepq 'recv fd='; then
	pass tui-flows/goto
else
	fail tui-flows/goto "status: $(tui_status)"
fi

tui_cmd view flows
tui_keys BSpace
if tui_screen | grepq "RANK FLOW"; then
	pass tui-flows/back
else
	fail tui-flows/back "$(tui_screen | head -3 | tr '\n' '|')"
fi

tui_stop
tui_start 80 24 env PROPEL_TEST_BG_DELAY_MS=3000 "$PROPEL" tui "$d/s.db"
tui_wait_for "event 1/" 10
tui_cmd view flows
busy=$(tui_screen)
ev0=$(tui_status | grep -o 'event [0-9]*')
tui_keys Tab j j
ev1=$(tui_status | grep -o 'event [0-9]*')
still=$(tui_screen)
if grep -q "ranking the flows" <<<"$busy" && grep -q "ranking the flows" <<<"$still" &&
	[ -n "$ev0" ] && [ -n "$ev1" ] && [ "$ev0" != "$ev1" ] &&
	tui_wait_for "RANK FLOW" 10; then
	pass tui-flows/background
else
	fail tui-flows/background "at once: $(head -3 <<<"$busy" | tr '\n' '|'); status $ev0 -> $ev1; later: $(tui_screen | head -3 | tr '\n' '|')"
fi
tui_stop
tui_start 80 24 "$PROPEL" tui "$d/s.db"
tui_wait_for "event 1/" 10

tui_cmd view rootcause
tui_wait_for "#T  #L SIDE" 30
scr=$(tui_screen)
# (the rows: the anomalous side's first; the rare path's row number, its
# rank by time)
rare=$(grep -E '^ *[0-9.]+ (ns|us|ms|s) +[0-9]+ +[0-9]+ +[0-9]+ (anom|norm) ' <<<"$scr" |
	grep -nE '^ *[0-9.]+ (ns|us|ms|s) +5 +[0-9]+ +[0-9]+ anom +(main > worker_loop > handle_request|…( > worker_loop)?( > handle_request)?) > check_quota > quota_exceeded *$' |
	head -1)
rrow=${rare%%:*} rrank=$(awk '{ print $4 }' <<<"${rare#*:}")
if grep -qE '^flow 5 \(anomalous\) vs flow [0-9]+: [0-9]+ paths differ, [0-9]+ pruned, [0-9]+ kept' <<<"$scr" &&
	[ -n "$rare" ] && [ "$rrank" -ge 1 ] && [ "$rrank" -le 5 ]; then
	pass tui-rootcause/list
else
	fail tui-rootcause/list "$(head -5 <<<"$scr" | tr '\n' '|')"
fi
# the same comparison as report --rootcause
"$PROPEL" report --rootcause --format=json "$d/s.db" >"$d/rc.json" 2>"$d/rc.err"
want=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["anomalous"], j["normal"])' "$d/rc.json" 2>/dev/null)
got=$(grep -oE '^flow [0-9]+ \(anomalous\) vs flow [0-9]+' <<<"$scr" | awk '{ print $2, $6 }')
if [ -n "$want" ] && [ "$got" = "$want" ]; then
	pass tui-rootcause/as-report
else
	fail tui-rootcause/as-report "the pane compares '${got:-?}', report --rootcause '${want:-?}' ($(head -c 200 "$d/rc.err"))"
fi
# the sides in colour pairs: anomalous red (SGR 31), normal green (32)
scre=$(tmx capture-pane -e -p -t t)
if grep -aE 'anom ' <<<"$scre" | grep -qaE $'\e\\[([0-9;]*;)?31m(\e\\[[0-9;]*m)*anom ' &&
	grep -aE 'norm ' <<<"$scre" | grep -qaE $'\e\\[([0-9;]*;)?32m(\e\\[[0-9;]*m)*norm '; then
	pass tui-rootcause/sides
else
	fail tui-rootcause/sides "$(grep -aE '(anom|norm) ' <<<"$scre" | head -3 | cat -v | tr '\n' '|')"
fi
for ((i = 1; i < ${rrow:-1}; i++)); do tui_keys j; done
tui_keys Enter
if tui_status | grepq -E "^ *$odd:$odd +quota_exceeded " &&
	tui_screen | grepq -E '^>.*quota_exceeded\(\) \{' &&
	tui_message | grepq -E "^flow 5 \(anomalous\), process $odd \([a-z-]+\) thread $odd"; then
	pass tui-rootcause/goto
else
	fail tui-rootcause/goto "want $odd in quota_exceeded: $(tui_status)"
fi
tui_keys q
