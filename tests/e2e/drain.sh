#!/usr/bin/env bash
# tests/e2e/drain.sh - record keeps every call (issue 8): the rings are
# drained while the program runs (share/drain.c, share/ring.h).
#
#   drain/fib-O2, drain/fib-O0  record of fib(31) keeps every call: the
#                        count of fib entries is the program's own count
#   drain/threads        a 4-thread program: every thread's calls
#   drain/never-blocked  propel stopped (SIGSTOP: its drain cannot run)
#                        while a 2-thread program runs with 64 KiB rings:
#                        the program ends all the same
#   drain/dropped-exact  then: events kept + records dropped (record's
#                        line) = the events of a run that dropped nothing
#   drain/gaps           replay shows the gaps: "lost" events whose
#                        counts add up to the dropped total
#   drain/waits          propel stopped for 1 s only: the program's threads
#                        wait for the drain (record: at most 2 s at a time,
#                        share/agent-abi.h PROPEL_DRAIN_WAIT_MS), so nothing
#                        is dropped and every event of the reference run is
#                        kept
#   drain/tui-gap        the TUI marks a gap (a worker's last event here)
#   drain/flight         --mode flight keeps only the newest, says nothing
#   drain/bad-mode       --mode nonsense: one line, status 2
#   drain/bad-buffer-size  record's and attach's --buffer-size 12, 64x, a
#                        huge or a negative size: one line, status 2
#   drain/attach-full    attach --mode full to a live program
# propel-test: alone
#   (tests/run.sh runs it with nothing beside it: drain/fib-O0 holds the
#   drain to fib(31)'s 4.4 M calls with no record dropped, a throughput
#   that the suites beside it took: 2 M records dropped at -j2)
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 12
t=$(tmpdir)
trap 'tui_stop; kill -CONT $(jobs -p) 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures
for lvl in O0 O2; do
	$cc -$lvl -g -o "$t/fib-$lvl" "$fix/capture/bench-fib.c" || { fail build "bench-fib"; exit 1; }
done
$cc -O2 -g -pthread -o "$t/fibt" "$fix/drain/fib-threads.c" || { fail build "fib-threads"; exit 1; }
$cc -O2 -g -pthread -o "$t/spin" "$fix/capture/spin.c" || { fail build "spin"; exit 1; }

# entries of function $2 (or its clones, $2.*) in session $1: one count
# per thread, in increasing order (awk: a sed of '.*"tid":' over fib's 8.7
# million lines took 140 s here, backtracking on every line)
entries_by_tid() {
	"$PROPEL" replay --format=jsonl "$1" | awk -v f="\"func\":\"$2" '
		index($0, "\"kind\":\"entry\"") &&
		(index($0, f "\"") || index($0, f ".")) {
			split($0, a, "\"tid\":")
			split(a[2], b, ",")
			n[b[1]]++
		}
		END { for (t in n) print n[t] }' | sort -n
}

for lvl in O2 O0; do
	"$PROPEL" record -o "$t/f.db" -- "$t/fib-$lvl" 31 >"$t/f.out" 2>"$t/f.err"
	want=$(sed -n 's/.* calls \([0-9]*\)$/\1/p' "$t/f.out")
	got=$(entries_by_tid "$t/f.db" fib)
	if [ -n "$want" ] && [ "$got" = "$want" ] && ! grep -q dropped "$t/f.err"; then
		pass drain/fib-$lvl
	else
		fail drain/fib-$lvl "fib(31) made $want calls, the session holds ${got:-none}; $(head -c 200 "$t/f.err")"
	fi
	echo "fib-$lvl: $want calls, session $(stat -c %s "$t/f.db") bytes"
done

"$PROPEL" record -o "$t/t.db" -- "$t/fibt" 4 24 >"$t/t.out" 2>"$t/t.err"
want=$(sed -n 's/^thread [0-9]*: \([0-9]*\) calls$/\1/p' "$t/t.out" | sort -n)
got=$(entries_by_tid "$t/t.db" fib)
if [ "$(echo "$want" | wc -l)" -eq 4 ] && [ "$got" = "$want" ]; then
	pass drain/threads
else
	fail drain/threads "per thread: program $(echo $want), session $(echo $got)"
fi

# --- a drain that cannot keep up: propel stopped while the program runs
events_kept() { # every event the program made: not the gaps, nor the
	# entries ingest rebuilt for frames whose entry records were dropped
	"$PROPEL" replay --format=jsonl "$1" | grep -v '"rebuilt":true' | grep -vc '"kind":"lost"'
}
# gated KB DB DONE [stop]: record of fibt 2 24 in the background ($rp),
# whose threads start when the test writes to the FIFO it holds, once the
# program is in main (its .ready file); with "stop", propel is stopped
# before that: the workers run their whole life with no drain, however
# fast they are on this machine (each worker's last event is its gap)
gated() {
	rm -f "$t/go" "$t/go.ready" "$3"
	mkfifo "$t/go"
	exec 3<>"$t/go"
	"$PROPEL" record --buffer-size "$1" -o "$2" -- "$t/fibt" 2 24 "$3" "$t/go" \
		>"$2.out" 2>"$2.err" 3>&- &
	rp=$!
	for i in $(seq 1 200); do [ -e "$t/go.ready" ] && break; sleep 0.05; done
	[ -n "${4:-}" ] && kill -STOP $rp
	echo go >&3
	exec 3>&-
}
gated 65536 "$t/ref.db" "$t/done-ref"
wait $rp
k0=$(events_kept "$t/ref.db")
gated 64 "$t/d.db" "$t/done" stop
for i in $(seq 1 600); do [ -e "$t/done" ] && break; sleep 0.1; done
if [ -e "$t/done" ]; then
	pass drain/never-blocked
else
	fail drain/never-blocked "the program did not finish in 60 s while propel was stopped"
fi
kill -CONT $rp
wait $rp
rc=$?
dropped=$(sed -n 's/.*: \([0-9]*\) record(s) dropped.*/\1/p' "$t/d.db.err")
k1=$(events_kept "$t/d.db")
echo "reference run: $k0 events (dropped: $(grep -c dropped "$t/ref.db.err")); stopped drain: $k1 kept, ${dropped:-0} dropped"
if [ $rc -eq 0 ] && [ -n "$dropped" ] && [ "$dropped" -gt 0 ] && ! grep -q dropped "$t/ref.db.err" &&
	[ $((k1 + dropped)) -eq "$k0" ]; then
	pass drain/dropped-exact
else
	fail drain/dropped-exact "status $rc; kept $k1 + dropped ${dropped:-none} != $k0; $(head -c 300 "$t/d.db.err")"
fi
gaps=$("$PROPEL" replay --format=jsonl "$t/d.db" | grep '"kind":"lost"' |
	sed 's/.*"count":\([0-9]*\).*/\1/' | awk '{ n++; s += $1 } END { print n + 0, s + 0 }')
set -- $gaps
if [ "$1" -gt 0 ] && [ "$2" -eq "${dropped:-0}" ]; then
	pass drain/gaps
else
	fail drain/gaps "$1 lost events, $2 records in them, $dropped dropped"
fi
"$PROPEL" replay "$t/d.db" | grep -m1 'lost' | sed 's/^/  a gap in replay: /'
gated 64 "$t/w.db" "$t/done-w" stop
sleep 1
kill -CONT $rp
wait $rp
rc=$?
kw=$(events_kept "$t/w.db")
if [ $rc -eq 0 ] && ! grep -q dropped "$t/w.db.err" && [ "$kw" = "$k0" ]; then
	pass drain/waits
else
	fail drain/waits "status $rc; kept $kw of $k0; $(head -c 300 "$t/w.db.err")"
fi
if command -v tmux >/dev/null; then
	tui_start 100 30 "$PROPEL" tui "$t/d.db"
	tui_wait_for "trace" 10
	# each worker's last event is its gap (gated, above): try each
	# (on a busy machine the screen can lag the keys: wait for the
	# cursor's line itself, not for any gap line on the screen)
	for k in 2 3 1; do
		tui_cmd thread $k
		tui_keys c
		for i in $(seq 1 100); do
			tui_screen | grepq "^>.*~~~ gap: [0-9]* records lost" && break 2
			sleep 0.05
		done
	done
	# (the line may be cut at the pane's width: the status says [gap])
	if tui_screen | grepq "^>.*~~~ gap: [0-9]* records lost" &&
		tui_status | grepq "\[gap\]"; then
		pass drain/tui-gap
	else
		fail drain/tui-gap "$(tui_screen | grep -v '^ *$' | tail -6 | tr '\n' '|')"
	fi
	tui_stop
else
	skip drain/tui-gap "no tmux"
fi

# --- flight mode: the newest only, no drain, no drops to report
"$PROPEL" record --mode flight --buffer-size 64 -o "$t/fl.db" -- "$t/fib-O2" 25 >/dev/null 2>"$t/fl.err"
kf=$(events_kept "$t/fl.db")
if [ "$kf" -gt 0 ] && [ "$kf" -lt 100000 ] && ! grep -q dropped "$t/fl.err"; then
	pass drain/flight
else
	fail drain/flight "$kf events kept; $(head -c 200 "$t/fl.err")"
fi
"$PROPEL" record --mode nonsense -o "$t/x.db" -- "$t/fib-O2" 3 >/dev/null 2>"$t/x.err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$t/x.err")" -eq 1 ] && grep -q -- '--mode' "$t/x.err"; then
	pass drain/bad-mode
else
	fail drain/bad-mode "status $rc: $(cat "$t/x.err")"
fi
# a size that is not one (record took "64x" as 64 and any huge number)
why=
for a in 12 64x 99999999999 -64; do
	"$PROPEL" record --buffer-size "$a" -o "$t/x.db" -- "$t/fib-O2" 3 >/dev/null 2>"$t/x.err"
	rc=$?
	"$PROPEL" attach --buffer-size "$a" -o "$t/x.db" 1073741823 >/dev/null 2>"$t/y.err"
	rc2=$?
	for v in "record $rc x" "attach $rc2 y"; do
		set -- $v
		[ "$2" -eq 2 ] && [ "$(wc -l <"$t/$3.err")" -eq 1 ] &&
			grep -q -- "^propel: $1: --buffer-size $a: " "$t/$3.err" ||
			why="$why $1 --buffer-size $a: status $2 $(head -c 100 "$t/$3.err");"
	done
done
if [ -z "$why" ]; then
	pass drain/bad-buffer-size
else
	fail drain/bad-buffer-size "$why"
fi

# --- attach --mode full
if is_root; then
	"$t/spin" >"$t/spin.out" 2>&1 &
	sp=$!
	sleep 0.3
	"$PROPEL" attach --mode full --duration 0.5 -o "$t/a.db" $sp >"$t/a.out" 2>"$t/a.err"
	rc=$?
	# spin makes millions of calls a second: look at the first ones only
	n=$("$PROPEL" replay --format=jsonl "$t/a.db" 2>/dev/null | head -10000 | grep -c '"func":"mix"')
	if [ $rc -eq 0 ] && [ "${n:-0}" -gt 0 ] && kill -0 $sp 2>/dev/null && ! grep -q BAD "$t/spin.out"; then
		pass drain/attach-full
	else
		fail drain/attach-full "status $rc, $n mix events; $(head -c 200 "$t/a.err")"
	fi
	echo "attach --mode full, 1 s: $n mix events in the first 10,000, session $(stat -c %s "$t/a.db") bytes"
	kill $sp
else
	skip drain/attach-full "needs root"
fi
