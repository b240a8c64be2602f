#!/usr/bin/env bash
# tests/e2e/tui-vitals.sh - the vitals view (tui/view-vitals.c) on a real
# session: `propel vitals record` runs while three CPU spinners (named
# vvspin, from tests/fixtures/vitals/vitals-load.c) share 2 cores; the view
# is opened in tmux at 80x24 while the recording is still being written
# (live: new epochs appear), then checked with capture-pane: graph rows,
# a flagged epoch marked on the time axis, Enter -> samples naming vvspin,
# Enter -> its user and kernel stacks, Backspace back, q restores the
# terminal, and `propel tui DB` opens the same view for a vitals-only file.
# propel-test: alone
#   (tests/run.sh runs it with nothing beside it: the vitals are the whole
#   machine's, and the view must list the spinners' samples on its first
#   screen; at -j2 other suites' processes filled that screen)
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 8
need_bpf tui-vitals
command -v tmux >/dev/null || { skip tui-vitals "tmux missing"; exit 77; }
t=$(tmpdir); trap 'tui_stop; rm -rf "$t"' EXIT
gcc -O1 -g -fno-omit-frame-pointer -o "$t/vvspin" \
	"$PROPEL_TOP/tests/fixtures/vitals/vitals-load.c" -lpthread -lm ||
	{ fail tui-vitals-build "cannot build the spinner"; exit 1; }

"$PROPEL" vitals record -o "$t/v.db" --duration 4 --epoch 1 2>"$t/rec.err" &
rec=$!
# the spinners start once the collector is attached (loading its programs
# took 5 s at a load of 11: spinners started beside it were gone before)
for _ in $(seq 300); do grep -q "vitals via" "$t/rec.err" && break; sleep 0.1; done
# the spinners outlive the 4 s recording: their last epoch's stacks are
# symbolized from their maps at the epoch's end, and a process gone by
# then keeps only addresses (engine/vitals-sym.c)
for i in 1 2 3; do "$t/vvspin" spin 4.5 & echo $! >>"$t/pids"; done
# wait for the first epoch in the file, then open the view while recording
for _ in $(seq 40); do
	"$PROPEL" vitals report --no-samples "$t/v.db" 2>/dev/null | grepq '^epoch 0' && break
	sleep 0.1
done
if ! grep -q "vitals via bpf" "$t/rec.err"; then
	wait $rec; kill $(cat "$t/pids") 2>/dev/null
	fail tui-vitals "BPF here, but: $(head -1 "$t/rec.err")"; exit 1
fi
tui_start 80 24 "$PROPEL" vitals tui "$t/v.db"
if tui_wait_for "[live]" 3; then
	n0=$(tui_screen | sed -n 's/.* epoch [0-9]*\/\([0-9]*\).*/\1/p' | tail -1)
	n1=$n0
	for _ in $(seq 60); do # the recording ends within ~4 s
		sleep 0.1
		n1=$(tui_screen | sed -n 's/.* epoch [0-9]*\/\([0-9]*\).*/\1/p' | tail -1)
		[ "${n1:-0}" -gt "${n0:-0}" ] && break
	done
	if [ "${n1:-0}" -gt "${n0:-0}" ]; then pass tui-vitals-live
	else fail tui-vitals-live "epochs stayed at $n0 while recording"; fi
else
	fail tui-vitals-live "no [live] mark while recording: $(tui_screen | head -3)"
fi
wait $(cat "$t/pids")
wait $rec || fail tui-vitals-record "exit $?: $(cat "$t/rec.err")"
sleep 1.5 # one more refresh after the run ended
tui_keys Home

scr=$(tui_screen)
nrows=$(grep -cE '^ *[0-9]+\.[0-9]s ' <<<"$scr")
if [ "$nrows" -ge 2 ] && grep -q '█' <<<"$scr" && grep -q '◆' <<<"$scr"; then
	pass tui-vitals-graph
else
	fail tui-vitals-graph "$nrows graph rows: $(head -6 <<<"$scr")"
fi
if grep -qE '^ *[0-9]+\.[0-9]s +!' <<<"$scr"; then pass tui-vitals-flag-mark
else fail tui-vitals-flag-mark "no epoch marked '!': $(head -8 <<<"$scr")"; fi
grep -q 'live' <<<"$(tui_status)" &&
	fail tui-vitals-live-end "still live after the recording ended"

# Enter on epochs until one lists a vvspin sample
found=0
for _ in 1 2 3 4 5 6; do
	tui_keys Enter
	if tui_screen | grepq -E '^[a-z0-9]+ +[0-9]+ +[0-9]+ +vvspin '; then found=1; break; fi
	tui_keys BSpace
	tui_keys Right
done
if [ $found = 1 ] && tui_screen | grepq 'samples by weight'; then pass tui-vitals-samples
else fail tui-vitals-samples "no sample of vvspin: $(tui_screen | head -6)"; fi

# move to the first vvspin row, Enter: its stacks
pos=$(tui_screen | sed -n '3,$p' | grep -nE '^[a-z0-9]+ +[0-9]+ +[0-9]+ +vvspin ' | head -1 | cut -d: -f1)
for ((i = 1; i < ${pos:-1}; i++)); do tmx send-keys -t t Down; done
sleep 0.2
tui_keys Enter
tui_wait_for "kernel stack" 5 # the stacks are symbolized first: slow under load
scr=$(tui_screen)
if grep -q '^user stack' <<<"$scr" && grep -q '^kernel stack' <<<"$scr" &&
	grep -q 'vvspin' <<<"$scr" && grep -qE '#[0-9]+ +(load_spin|main)' <<<"$scr"; then
	pass tui-vitals-stack
else
	fail tui-vitals-stack "$(head -8 <<<"$scr") -- $(tail -1 "$t/rec.err")"
fi
tui_keys BSpace
tui_keys BSpace
if tui_screen | grepq 'epochs of'; then pass tui-vitals-back
else fail tui-vitals-back "Backspace twice did not return to the graph"; fi

tui_keys q
tui_wait_for "EXITED 0" 3
scr=$(tui_screen)
if grep -q 'EXITED 0' <<<"$scr" && ! grep -q 'epochs of' <<<"$scr"; then
	pass tui-vitals-quit
else
	fail tui-vitals-quit "terminal not restored: $(head -4 <<<"$scr")"
fi

# `propel tui DB` on a vitals-only session opens the same view
tui_start 80 24 "$PROPEL" tui "$t/v.db"
if tui_wait_for "epochs of" 3; then pass tui-vitals-from-tui
else fail tui-vitals-from-tui "$(tui_screen | head -3)"; fi
tui_keys q
tui_stop
exit 0
