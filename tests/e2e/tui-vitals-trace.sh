#!/usr/bin/env bash
# tests/e2e/tui-vitals-trace.sh - the kernel's view in the TUI at 80x24 under
# tmux: `propel record --vitals -- offcpu DIR` (tests/fixtures/vitals/
# offcpu.c), then at each long call (break FUNC, c) the threads pane's strip
# splits the call into on-CPU and off-CPU time with the right reason, and a
# thread's line says what the kernel does to it (the lock holder sleeping
# while main waits).  A session without --vitals shows no strip.
# propel-test: alone
#   (tests/run.sh runs it with nothing beside it: main()'s off-CPU reasons
#   must be its callees' (pipe, sleep, lock or I/O) within 80 columns; at
#   -j2 the run queue of a loaded machine came first and cut the fourth)
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 9
command -v tmux >/dev/null || { skip tui-vitals-trace "tmux not installed"; exit 77; }
need_bpf tui-vitals-trace
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
gcc -O0 -g -o "$d/offcpu" "$PROPEL_TOP/tests/fixtures/vitals/offcpu.c" -lpthread ||
	{ fail tui-vitals-trace/build "gcc failed"; exit 1; }
# fsync_off_us: how long the fixture's own fsync was off the CPU (wall -
# thread CPU time, its own clocks), in us
fsync_off_us() { awk '{ print $1 - $2 }' "$d/fsync.txt" 2>/dev/null; }
# the fsync-io check needs a disk that keeps fsync waiting: recorded again
# (at most 3 times) while the fixture's fsync was off the CPU < 5 ms
for try in 1 2 3; do
	(cd "$d" && "$PROPEL" record -o "$d/s.db" --vitals -- "$d/offcpu" "$d") >/dev/null 2>"$d/e"
	if grep -q "off-CPU spans off" "$d/e"; then
		fail tui-vitals-trace "BPF here, but: $(cat "$d/e")"; exit 1
	fi
	[ "$(fsync_off_us)" -ge 5000 ] 2>/dev/null && break
	echo "note: recording $try: the fixture's fsync was off the CPU $(fsync_off_us) us (< 5 ms: the disk did not keep it waiting)" >&2
done

tui_start 80 24 "$PROPEL" tui "$d/s.db"
tui_wait_for "event 1/" 5 || { fail tui-vitals-trace/open "$(tui_screen | tr '\n' '|')"; exit 1; }
# at main's entry (the trace opens at its first event: the program's
# constructors, frame_dummy, come before main): main() left the CPU for
# the reasons of its callees, each one's time, largest first.  Read at
# 120 columns: pipe, lock and I/O each take about 60 ms (I/O more on a
# busy disk), so at 80 the line may end before pipe ("sleep 219 ms, I/O
# 130 ms, lock 71 m")
tui_cmd "break main"
tui_keys c
tui_wait_for "  main  " 5
tui_cmd delete # (the forked child runs main too)
tmx resize-window -t t -x 120 -y 24 2>/dev/null
wait_until 5 eval 'tui_screen | grep -qE "^main\(\) .{81}"'
# (a run-queue wait, the machine's load, comes last: never before another)
tui_screen | grep -E "^main\(\) [0-9]+ ms: on-CPU .*, off-CPU [0-9]+ ms: " | grep "pipe [0-9]* ms" |
	grep -v "run queue [0-9.]* [mu]*s, " |
	grep "sleep [0-9]* ms" | grepq -E "(lock|I/O) [0-9]+( ms| m?$)" && pass tui-vitals-trace/main-by-reason ||
	fail tui-vitals-trace/main-by-reason "$(tui_screen | tail -6 | tr '\n' '|')"
tmx resize-window -t t -x 80 -y 24 2>/dev/null
wait_until 5 eval '! tui_screen | grep -qE "^.{81}"'
# the strip: "FUNC() DUR: on-CPU X, off-CPU Y: WHY", Y >= 40 ms
strip_ok() { # FUNC WHY
	tui_screen | grep -E "^$1\(\) [0-9]+ ms: on-CPU [0-9]+ [mu]s, off-CPU ([4-9][0-9]|[1-9][0-9][0-9]) ms: $2" >/dev/null
}
at() { # FUNC [times c]
	local n=${2:-1}
	tui_cmd "break $1"
	while [ "$n" -gt 0 ]; do tui_keys c; n=$((n - 1)); done
	tui_status | grepq "  $1  " 
}
# the reason, or the reasons by time, the run queue's last, when a
# run-queue wait fell inside it too under load ("pipe 61 ms, run queue 1 ms")
at nap && strip_ok nap "sleep (in (clock_)?nanosleep|[0-9]+ ms, )" && pass tui-vitals-trace/nap-sleep ||
	fail tui-vitals-trace/nap-sleep "$(tui_screen | tail -6 | tr '\n' '|')"
at pipe_read && strip_ok pipe_read "pipe (read|[0-9]+ ms, )" && pass tui-vitals-trace/pipe-read ||
	fail tui-vitals-trace/pipe-read "$(tui_screen | tail -6 | tr '\n' '|')"
# fsync's length is the disk's: the reason, whatever the time (I/O first
# when the run queue delayed it too); only when the fixture's own clocks
# say its fsync left the CPU for 5 ms or more
off=$(fsync_off_us)
if ! [ "${off:-0}" -ge 5000 ] 2>/dev/null; then
	at fsync
	skip tui-vitals-trace/fsync-io "3 recordings: the fixture's fsync was off the CPU ${off:-?} us at most (< 5 ms: a disk that does not keep fsync waiting)"
elif at fsync && tui_screen | grepq -E "^fsync\(\) [0-9.]+ [mu]?s: on-CPU .*, off-CPU .*: I/O (in fsync|[0-9]+ [mu]s)"; then
	pass tui-vitals-trace/fsync-io
else
	fail tui-vitals-trace/fsync-io "the fixture's fsync was off the CPU $off us: $(tui_screen | tail -6 | tr '\n' '|')"
fi
# pthread_mutex_lock: the holder thread's (uncontended) comes first, then
# main's, which waits: the lock its reason, or its largest one when a
# sub-ms wait of another kind fell inside it too ("lock 59 ms, sleep 864
# ns": the strip lists several, largest first)
at pthread_mutex_lock 2 && strip_ok pthread_mutex_lock "(lock wait in futex|lock ([4-9][0-9]|[1-9][0-9][0-9]) ms)" &&
	tui_status | grepq "^ \([0-9]*\):\1 " && pass tui-vitals-trace/mutex-lock ||
	fail tui-vitals-trace/mutex-lock "$(tui_screen | tail -6 | tr '\n' '|')"
# main's line: what the kernel does to it next
tui_screen | grepq -E "^\* 1 .* off-CPU [4-9][0-9] ms: waiting on a lock" &&
	pass tui-vitals-trace/thread-line-lock ||
	fail tui-vitals-trace/thread-line-lock "$(tui_screen | tail -6 | tr '\n' '|')"
# the holder, at the same time, sleeps
tui_cmd "thread 3"
tui_screen | grepq -E "^\* 3 .* off-CPU [4-9][0-9] ms: sleeping in (clock_)?nanos" &&
	pass tui-vitals-trace/thread-line-holder ||
	fail tui-vitals-trace/thread-line-holder "$(tui_screen | tail -6 | tr '\n' '|')"
# from the vitals pane: the heaviest sample of the epoch, `t`, and the
# cursor is on that sample's thread (the status line's pid:tid)
tui_cmd "view vitals"
tui_keys Enter
row=$(tui_screen | grep -A1 "^vital  *pid  *tid" | tail -1)
set -- $row
if [ -n "$3" ]; then
	tui_keys t
	if tui_status | grepq "^ $2:$3 " && tui_message | grepq "$1 sample of $2:$3"; then
		pass tui-vitals-trace/sample-to-trace
	else
		fail tui-vitals-trace/sample-to-trace "sample $row; $(tui_screen | tail -3 | tr '\n' '|')"
	fi
else
	fail tui-vitals-trace/sample-to-trace "no sample: $(tui_screen | head -8 | tr '\n' '|')"
fi
tui_stop

# without --vitals: no strip
(cd "$d" && "$PROPEL" record -o "$d/plain.db" -- "$d/offcpu" "$d") >/dev/null 2>&1
tui_start 80 24 "$PROPEL" tui "$d/plain.db"
tui_wait_for "event 1/" 5
tui_cmd "break nap"
tui_keys c
tui_screen | grepq "on-CPU" && fail tui-vitals-trace/plain-no-strip "$(tui_screen | tail -6 | tr '\n' '|')" ||
	pass tui-vitals-trace/plain-no-strip
tui_stop
