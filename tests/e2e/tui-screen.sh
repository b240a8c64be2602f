#!/usr/bin/env bash
# tests/e2e/tui-screen.sh - the TUI under tmux at 80x24 and 200x50 on
# synthetic sessions (tests/fixtures/tui/gen-session.c) of the real crashy
# fixture: opens at the faulting line, one reverse-finish (F) lands in the
# caller at the call line and the status line names the caller,
# bt at every step matches replay's depth, folding hides exactly the
# callee's events, two threads interleave in time order, resizing and a
# too-small terminal, and quitting restores the terminal.
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 30
command -v tmux >/dev/null || { skip tui/screen "tmux not installed"; exit 77; }
command -v objdump >/dev/null || { skip tui/screen "objdump not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail tui/screen "no $PROPEL"; exit 1; }
tui_build || { fail tui/build "cannot build the fixtures"; exit 1; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
db=$d/crash.db
tui_crash_db "$db" >/dev/null || { fail tui/gen "gen-session failed"; exit 1; }

for size in 80x24 200x50; do
	w=${size%x*} h=${size#*x}
	tui_start "$w" "$h" "$PROPEL" tui "$db"
	if tui_wait_for "event 17/17" 5 && tui_screen | grepq ' 23>.*return e->value' &&
	   tui_status | grepq '4242:4242  lookup  crashy.c:23'; then
		pass "tui/$size/opens-at-faulting-line"
	else
		fail "tui/$size/opens-at-faulting-line" "$(tui_screen | tr '\n' '|')"
	fi
	tui_screen | grepq 'SIGSEGV' && tui_screen | grepq 'handle() {' &&
		tui_screen | grepq 'lookup() {' && pass "tui/$size/stack-expanded" ||
		fail "tui/$size/stack-expanded" "no stack"
	# one press of F (gdb's reverse-finish): in the caller, handle, at the
	# line that calls lookup; the status line names the caller
	tui_keys F
	if tui_screen | grepq ' 31>.*return lookup(e)' &&
	   tui_status | grepq '4242:4242  handle  crashy.c:31  event 16/17'; then
		pass "tui/$size/reverse-finish-lands-in-caller"
	else
		fail "tui/$size/reverse-finish-lands-in-caller" "$(tui_status)"
	fi
	tui_cmd bt
	tui_message | grepq '^bt: 2 frames: #0 handle #1 main' &&
		pass "tui/$size/bt-after-reverse-finish" ||
		fail "tui/$size/bt-after-reverse-finish" "$(tui_message)"
	tui_keys F
	tui_status | grepq 'main  crashy.c:59' && tui_screen | grepq ' 59>.*return handle' &&
		pass "tui/$size/reverse-finish-again" || fail "tui/$size/reverse-finish-again" "$(tui_status)"
	tui_keys s
	tui_status | grepq 'handle  crashy.c:59' &&
		pass "tui/$size/step-enters-the-call" || fail "tui/$size/step-enters-the-call" "$(tui_status)"
	tui_cmd reverse-finish
	tui_status | grepq 'main  crashy.c:59' &&
		pass "tui/$size/reverse-finish-command" || fail "tui/$size/reverse-finish-command" "$(tui_status)"
	tui_keys q
	if tui_wait_for "EXITED 0" 3 && ! tui_screen | grepq "threads at the cursor" &&
	   [ "$(tmx display -p -t t '#{alternate_on}')" = 0 ]; then
		pass "tui/$size/quit-restores-terminal"
	else
		fail "tui/$size/quit-restores-terminal" "$(tui_screen | tail -3 | tr '\n' '|')"
	fi
done

# bt at every step of the main thread vs replay's depth
"$PROPEL" replay --format=jsonl --tid 4242 "$db" >"$d/replay.jsonl" 2>"$d/replay.err"
if [ ! -s "$d/replay.jsonl" ]; then
	sqlite3 "$db" "SELECT CASE kind WHEN 1 THEN 'entry' WHEN 2 THEN 'exit' ELSE 'other' END, depth FROM events WHERE tid=4242 ORDER BY id" |
		awk -F'|' '{printf "{\"kind\":\"%s\",\"depth\":%s}\n",$1,$2}' >"$d/replay.jsonl"
fi
tui_start 80 24 "$PROPEL" tui "$db"
tui_wait_for "event 17/17" 5
tui_keys Home
bad=0 n=0 k=0
while read -r line; do
	k=$((k + 1))
	kind=$(sed -n 's/.*"kind":"\([a-z_]*\)".*/\1/p' <<<"$line")
	depth=$(sed -n 's/.*"depth":\([0-9]*\).*/\1/p' <<<"$line")
	if [ "$kind" = entry ] || [ "$kind" = exit ]; then
		tui_cmd bt
		got=$(tui_message | sed -n 's/^bt: \([0-9]*\) frame.*/\1/p')
		n=$((n + 1))
		[ "$got" = $((depth + 1)) ] || { bad=$((bad + 1)); echo "event $k $kind depth $depth: bt $got"; }
	fi
	tui_keys Down
done <"$d/replay.jsonl"
[ "$bad" -eq 0 ] && [ "$n" -ge 12 ] && pass tui/bt-matches-replay-depth-every-step ||
	fail tui/bt-matches-replay-depth-every-step "$bad of $n differ"
tui_stop

# folding hides exactly the callee's events (200x50: all fits)
tui_start 200 50 "$PROPEL" tui "$db"
tui_wait_for "event 17/17" 5
tui_keys Home
tui_keys Down   # first send_request() {
before=$(tui_screen | grep -c '[{}]')
tui_keys Enter
after=$(tui_screen | grep -c '[{}]')
if tui_screen | grepq '+ send_request() { ... }  4 events' && [ $((before - after)) -eq 3 ]; then
	pass tui/fold-hides-exactly-the-callee
else
	fail tui/fold-hides-exactly-the-callee "before $before after $after"
fi
tui_keys Space
[ "$(tui_screen | grep -c '[{}]')" -eq "$before" ] && pass tui/unfold || fail tui/unfold "lines differ"
tui_keys Up
tui_keys -l -
folded=$(tui_screen | grep -c '+ [a-z_]*() { ... }')
tui_keys +
[ "$folded" -eq 3 ] && ! tui_screen | grepq '() { ... }' && pass tui/fold-all-descendants ||
	fail tui/fold-all-descendants "folded $folded"

# two threads interleaved in time order
tui_keys a
exp=$(sqlite3 "$db" "SELECT tid FROM events ORDER BY ts_ns, id" | tr '\n' ' ')
got=$(tui_screen | sed -n 's/^ *\(424[23]\) .*/\1/p' | tr '\n' ' ')
if tui_screen | grepq 'all threads by time' && [ "$got" = "$exp" ]; then
	pass tui/interleaving-in-time-order
else
	fail tui/interleaving-in-time-order "expected [$exp] got [$got]"
fi
tui_keys a

# a send steps into its receiver; S comes back
tui_cmd goto 14
tui_keys s
tui_status | grepq '4242:4243  read' && tui_screen | grepq '>.*recv fd=3' &&
	pass tui/step-into-receiver || fail tui/step-into-receiver "$(tui_status)"
tui_keys S
tui_status | grepq '4242:4242  write' && pass tui/reverse-step-back-to-sender ||
	fail tui/reverse-step-back-to-sender "$(tui_status)"

# command line, help, search
tui_cmd break printf
tui_keys c
tui_status | grepq 'printf' && pass tui/break-continue || fail tui/break-continue "$(tui_status)"
tui_cmd nosuch
tui_message | grepq 'undefined command' && pass tui/unknown-command || fail tui/unknown-command "$(tui_message)"
tui_keys '?'
tui_screen | grepq 'reverse-step' && pass tui/help || fail tui/help "no help"
tui_keys Escape
tui_keys / h a n d l e Enter
tui_status | grepq ' handle ' && pass tui/search || fail tui/search "$(tui_status)"

# resize: too small says so, back to normal works
tmx resize-window -t t -x 30 -y 8 2>/dev/null || tmx resize-pane -t t -x 30 -y 8
sleep 0.3
tui_screen | grepq 'terminal too small' && pass tui/too-small || fail tui/too-small "$(tui_screen | head -2)"
tmx resize-window -t t -x 80 -y 24 2>/dev/null
sleep 0.3
tui_status | grepq 'event' && pass tui/resize-back || fail tui/resize-back "$(tui_screen | tail -2)"
tui_keys q
tui_wait_for "EXITED 0" 3 && pass tui/quit || fail tui/quit "did not exit"
tui_stop
