#!/usr/bin/env bash
# tests/e2e/tui-demo.sh - the TUI on a real recording of the PIE demo
# (tests/apps/demo/demo.c, `make demo`), under tmux at 80x24: it opens at
# the faulting line of apply_discount (118, the dereference; not 115, the
# function's first line, which is what a pc read without the module's load
# bias gives), and one press of F (reverse-finish) lands in the caller,
# price_order, at the line that calls apply_discount, with the status line
# naming price_order.
#
#   demo-is-pie        the demo is a PIE (the load bias matters)
#   record/crash-path  one recording (no retry): the crashing thread's
#                      innermost traced frame is apply_discount
#   signal-site-is-faulting-line, 80x24/fault-line-N,
#   80x24/one-F-lands-in-caller-at-call-line, quit  as above
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 6
command -v tmux >/dev/null || { skip tui-demo "tmux not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail tui-demo "no $PROPEL"; exit 1; }
demo=$("$PROPEL_TOP/tests/demo-build.sh") || { fail tui-demo/build "cannot build the demo"; exit 1; }
src=$PROPEL_TOP/tests/apps/demo/demo.c
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
fault=$(grep -n 'return cents - cents \* p->discount_pct' "$src" | cut -d: -f1)
decl=$(grep -n '^long apply_discount' "$src" | cut -d: -f1)
call=$(grep -n 'long net = apply_discount(p, base);' "$src" | cut -d: -f1)

if readelf -h "$demo" | grep -q 'Type: *DYN'; then
	pass tui-demo/demo-is-pie
else
	fail tui-demo/demo-is-pie "$(readelf -h "$demo" | grep Type)"
fi
# One recording, no second try: its crashing thread's innermost traced
# frame is apply_discount.  (Before 56bf285 it was process_order in 13 to 20
# runs of 50: a function whose call-site window had another worker inside
# it at its first patch was marked ready anyway and never patched again, so
# none of process_order's calls was recorded, in any thread.)
"$PROPEL" record -o "$d/demo.db" -- "$demo" >"$d/out" 2>"$d/err"
rc=$?
[ $rc -eq 139 ] || { fail tui-demo/record "status $rc: $(tail -2 "$d/err")"; exit 1; }
"$PROPEL" replay --format=jsonl "$d/demo.db" >"$d/demo.jsonl" 2>/dev/null
stid=$(grep '"kind":"signal"' "$d/demo.jsonl" | sed -n '1s/.*"tid":\([0-9]*\).*/\1/p')
last=$(grep "^{\"kind\":\"entry\",\"pid\":[0-9]*,\"tid\":${stid:-none}," "$d/demo.jsonl" |
	tail -1 | sed -n 's/.*"func":"\([^"]*\)".*/\1/p')
if [ "$last" = apply_discount ]; then
	pass tui-demo/record/crash-path
else
	fail tui-demo/record/crash-path "the fault's innermost traced frame is '$last', not apply_discount (thread '$stid')"
fi

# the session itself: the signal's site is the faulting line
got=$(grep '"kind":"signal"' "$d/demo.jsonl" | sed -n 's/.*"line":\([0-9]*\).*/\1/p')
[ "$got" = "$fault" ] && pass tui-demo/signal-site-is-faulting-line ||
	fail tui-demo/signal-site-is-faulting-line "line '$got', want $fault (decl $decl)"

tui_start 80 24 "$PROPEL" tui "$d/demo.db"
if tui_wait_for "[fault]" 10 && tui_status | grep -q "  apply_discount  demo.c:$fault  event" &&
   tui_screen | grep -q "^ *$fault>.*p->discount_pct"; then
	pass tui-demo/80x24/fault-line-$fault
else
	fail tui-demo/80x24/fault-line-$fault "$(tui_screen | tr '\n' '|')"
fi
tui_keys F
if tui_status | grep -q "  price_order  demo.c:$call  event" &&
   tui_screen | grep -q "^ *$call>.*apply_discount(p, base)"; then
	pass tui-demo/80x24/one-F-lands-in-caller-at-call-line
else
	fail tui-demo/80x24/one-F-lands-in-caller-at-call-line "$(tui_screen | tr '\n' '|')"
fi
tui_keys q
tui_wait_for "EXITED 0" 3 && pass tui-demo/quit || fail tui-demo/quit "did not exit"
tui_stop
