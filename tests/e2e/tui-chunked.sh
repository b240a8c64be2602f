#!/usr/bin/env bash
# tests/e2e/tui-chunked.sh - the TUI on a chunked session of several chunks
# per thread (gen-session chunked: 400,000 events, five threads, written
# through engine/chunk.c's writer as ingest writes them), under tmux at
# 80x24: the first screen is the crash; Home and End reach the first and
# last event; a step backward across a chunk boundary lands on the event
# before it with the call stack that replay's events give (bt); a gap is
# marked on its line and in the status, and the frames open before it are
# not matched after it; a chunk with flipped bytes is said on the message
# line, its events show as a damaged gap, and the TUI goes on; the
# in-process bench (PROPEL_TUI_BENCH, at bench-tui's 200x50) times an End
# from the first event to the last.  Then the same walk on a real
# recording (fib(24) at -O2, ingest's chunks).
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 15
[ -x "$PROPEL" ] || { fail tui-chunked "no $PROPEL"; exit 1; }
command -v tmux >/dev/null || { skip tui-chunked "tmux not installed"; exit 77; }
command -v sqlite3 >/dev/null || { skip tui-chunked "sqlite3 not installed"; exit 77; }
tui_build || { fail tui-chunked/build "cannot build the fixtures"; exit 1; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
# the writer's chunk size (engine/chunk.h): the boundaries walked below
CH=$(awk '$1 == "#define" && $2 == "CHUNK_WRITE_EVENTS" { print $3 }' "$PROPEL_TOP/engine/chunk.h")
[ -n "$CH" ] || { fail tui-chunked/chunk-size "no CHUNK_WRITE_EVENTS in engine/chunk.h"; exit 1; }
db=$d/chunked.db
"$TUI_GEN" chunked "$db" 400000 || { fail tui-chunked/gen "gen-session failed"; exit 1; }
"$PROPEL" replay --format=jsonl "$db" >"$d/all.jsonl" 2>"$d/err" ||
	{ fail tui-chunked/replay "$(head -2 "$d/err")"; exit 1; }

# expectations from replay: thread 600's count and first id, the stack at
# id $CH (the last event of its first chunk), the gap in thread 602
python3 - "$d/all.jsonl" "$CH" >"$d/expect" <<'EOF' || { fail tui-chunked/expect "python3"; exit 1; }
import json, sys
first = {}; count = {}; stack = []; bt = None; gap = None; gcfirst = None
CH = int(sys.argv[2])
sid = 0  # ids are the order written: thread after thread
for line in open(sys.argv[1]):
    e = json.loads(line); sid += 1
    t = e["tid"]
    first.setdefault(t, sid); count[t] = count.get(t, 0) + 1
    if t == 600 and sid <= CH:
        k = e["kind"]
        if sid == CH:
            if k == "entry": fr = stack + [e["func"]]
            else: fr = list(stack)
            bt = (len(fr), fr[-1], fr[-2])
        if k == "entry": stack.append(e["func"])
        elif k == "exit": stack.pop()
    if t == 602 and e["kind"] == "lost" and gap is None:
        gap = sid
print(count[600], bt[0], bt[1], bt[2], gap, gap - first[602] + 1, first[602])
EOF
read -r n600 btn bt0 bt1 gapid gapidx gcfirst <"$d/expect"

tui_start 80 24 "$PROPEL" tui "$db"
if tui_wait_for "event " 10 && tui_status | grepq "event $n600/$n600 .*\[fault\]" &&
	tui_screen | grepq "SIGSEGV"; then
	pass tui-chunked/first-screen-at-crash
else
	fail tui-chunked/first-screen-at-crash "$(tui_status)"
fi
# a failed run of processes that talked opens on its ranked flows: Tab
# goes to the trace
tui_screen | grepq "flows ranked by suspect score" && tui_keys Tab
tui_keys Home
tui_status | grepq "event 1/$n600" && pass tui-chunked/home ||
	fail tui-chunked/home "$(tui_status)"
tui_keys End
tui_status | grepq "event $n600/$n600" && pass tui-chunked/end ||
	fail tui-chunked/end "$(tui_status)"

# across the boundary between the first and the second chunk
tui_cmd goto $((CH + 1))
tui_status | grepq "event $((CH + 1))/$n600" || fail tui-chunked/goto "$(tui_status)"
tui_keys S
tui_cmd bt
if tui_status | grepq "event $CH/$n600" &&
	tui_message | grepq "^bt: $btn frames: #0 $bt0 #1 $bt1"; then
	pass tui-chunked/reverse-step-across-chunks
else
	fail tui-chunked/reverse-step-across-chunks "want bt $btn $bt0 $bt1; $(tui_status) / $(tui_message)"
fi
tui_keys s
tui_status | grepq "event $((CH + 1))/$n600" && pass tui-chunked/step-back-across ||
	fail tui-chunked/step-back-across "$(tui_status)"

# the gap: marked, and a barrier
tui_cmd goto "$gapid"
if tui_status | grepq "event $gapidx/.*\[gap\]" &&
	tui_screen | grepq "~~~ gap: 5000 records lost"; then
	pass tui-chunked/gap-marked
else
	fail tui-chunked/gap-marked "$(tui_status)"
fi
tui_cmd goto $((gapid + 3)) # the exit of gc_cycle, opened before the gap
tui_keys N
tui_status | grepq "event $((gapidx + 2))/" && pass tui-chunked/gap-exit-unmatched ||
	fail tui-chunked/gap-exit-unmatched "reverse-next went to $(tui_status)"
tui_cmd goto $((gcfirst + 1)) # the first gc_cycle entry: its exit is past the gap
tui_keys n
tui_message | grepq "never returns" && pass tui-chunked/gap-entry-unmatched ||
	fail tui-chunked/gap-entry-unmatched "$(tui_status) / $(tui_message)"
tui_keys q
tui_wait_for EXITED 3

# the in-process bench (PROPEL_TUI_BENCH, tests/bench-tui.sh) times End
# from the first event in the trace pane, whichever pane the session opens
# focused (this one opens on its flows, whose list took Home and End)
tui_start 200 50 "PROPEL_TUI_BENCH=20 $PROPEL tui $db 2>$d/bench.err"
tui_wait_for EXITED 60
if grep -q "end_events=1\.\.$n600/$n600 " "$d/bench.err"; then
	pass tui-chunked/bench-end-from-home
else
	fail tui-chunked/bench-end-from-home "want end_events=1..$n600/$n600: $(grep -o 'end_ms=.*' "$d/bench.err" | head -1)"
fi

# a damaged chunk: thread 600's second
cp "$db" "$d/flip.db"
sqlite3 "$d/flip.db" "UPDATE chunk_data SET body = substr(body, 1, 100) ||
	X'5a5a5a5a' || substr(body, 105) WHERE id = (SELECT id FROM chunks
	WHERE tid = 600 ORDER BY first_seq LIMIT 1 OFFSET 1)"
tui_start 80 24 "$PROPEL" tui "$d/flip.db"
tui_wait_for "event " 10
tui_cmd goto $((CH + 164))
# (nothing written on the terminal behind curses' back: the flows view's
# background analysis said the damaged chunk on stderr, "propel: ..." in
# the middle of the drawing, and the pane's gap lines under it, 1 run in 3
# of fresh-clone runs; tui/screen.c now holds stderr while the TUI runs)
if tui_wait_for "damaged chunk" 10 &&
	tui_message | grepq "thread 600/600: $CH events lost (ids $((CH + 1))\.\." &&
	! tui_screen | grepq "propel: "; then
	pass tui-chunked/damaged-chunk
else
	fail tui-chunked/damaged-chunk "$(tui_status) / $(tui_message)"
fi
tui_keys End
tui_keys q
tui_wait_for EXITED 3 && tui_screen | grepq "EXITED 0" && pass tui-chunked/damaged-goes-on ||
	fail tui-chunked/damaged-goes-on "$(tui_screen | tail -3)"

# a real recording: fib(24), 300,000 events in chunks of one thread
cc -O2 -o "$d/fib" "$PROPEL_TOP/tests/fixtures/capture/bench-fib.c" &&
	"$PROPEL" record -o "$d/fib.db" -- "$d/fib" 24 >/dev/null 2>&1 ||
	{ fail tui-chunked/record "cannot record fib 24"; exit 1; }
"$PROPEL" replay --format=jsonl "$d/fib.db" >"$d/fib.jsonl" 2>"$d/err"
python3 - "$d/fib.jsonl" "$CH" >"$d/fexpect" <<'EOF2' || { fail tui-chunked/fib-expect "python3"; exit 1; }
import json, sys
n = 0; stack = []; bt = None; match = {}; up = {}; ev = {}
CH = int(sys.argv[2])
for line in open(sys.argv[1]):
    e = json.loads(line); n += 1; k = e["kind"]; ev[n] = k
    if n == CH:
        names = [x[1] for x in stack]
        fr = names + [e["func"]] if k == "entry" else names
        bt = (len(fr), fr[-1], fr[-2])
    if k == "entry":
        up[n] = stack[-1][0] if stack else None
        stack.append((n, e["func"]))
    elif k == "exit":
        en = stack.pop()[0]; match[en] = n; match[n] = en
    else:
        up[n] = stack[-1][0] if stack else None
# finish from CH: the exit of its frame (of the caller's at an exit)
i = CH
f = i if ev[i] == "entry" else (up[match[i]] if ev[i] == "exit" else up[i])
print(n, bt[0], bt[1], bt[2], match.get(f, 0))
EOF2
read -r nfib fbtn fbt0 fbt1 ffin <"$d/fexpect"
tui_start 80 24 "$PROPEL" tui "$d/fib.db"
tui_wait_for "event " 10
tui_status | grepq "event 1/$nfib" && pass tui-chunked/fib-first-screen ||
	fail tui-chunked/fib-first-screen "$(tui_status)"
tui_keys End
tui_status | grepq "event $nfib/$nfib" && pass tui-chunked/fib-end ||
	fail tui-chunked/fib-end "$(tui_status)"
tui_cmd goto $((CH + 1))
tui_keys S
tui_cmd bt
if tui_status | grepq "event $CH/$nfib" &&
	tui_message | grepq "^bt: $fbtn frames: #0 $fbt0 #1 $fbt1"; then
	pass tui-chunked/fib-reverse-step-across-chunks
else
	fail tui-chunked/fib-reverse-step-across-chunks "want bt $fbtn $fbt0 $fbt1; $(tui_status) / $(tui_message)"
fi
tui_keys f # finish: the exit of the frame, in a later chunk or this one
tui_status | grepq "event $ffin/$nfib" && pass tui-chunked/fib-finish ||
	fail tui-chunked/fib-finish "want event $ffin; $(tui_status) / $(tui_message)"
tui_keys q
tui_wait_for EXITED 3
