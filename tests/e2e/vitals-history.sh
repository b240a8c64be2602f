#!/usr/bin/env bash
# tests/e2e/vitals-history.sh - a week of vital-sign history (issue 36):
# the collector summarizes the epochs older than its raw window
# (engine/vitals-summary.c), keeps the file under --max-size by dropping
# the oldest summaries, and `vitals report` reads any window of it.
# PROPEL_VITALS_WARP (engine/vitals-collect.h) stores every time 10080
# times as far from the start as it is: 60 s of collecting are a week.
# Two collectors side by side: one with room for the week (64 MiB, the
# default), one with --max-size 0.25 MiB, which must rotate (its busiest
# vitals off, so that one raw epoch of a busy machine is far below that).
# The ring's epochs are a quarter as long: a summarized epoch of a quiet
# machine is ~200 bytes, and the week's 300 of 0.2 s fit beside the
# schema's ~120 KiB in CI (span 603442 s: not rotated); its 1200 do not.
# propel-test: takes 75
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 14
need_bpf vitals-history
d=$(tmpdir); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$d"' EXIT
gcc -O1 -g -fno-omit-frame-pointer -o "$d/vitals-load" \
	"$PROPEL_TOP/tests/fixtures/vitals/vitals-load.c" -lpthread -lm ||
	{ fail vitals-history-build "cannot build the fixture"; exit 1; }

week=604800
PROPEL_VITALS_WARP=10080 "$PROPEL" vitals record -o "$d/week.db" --duration 60 \
	--epoch 0.2 2>"$d/week.err" &
rw=$!
PROPEL_VITALS_WARP=10080 "$PROPEL" vitals record -o "$d/ring.db" --duration 60 \
	--epoch 0.05 --max-size 0.25 --disable umem,kmem,syscall 2>"$d/ring.err" &
rr=$!
wait_vitals "$d/week.err" $rw; wait_vitals "$d/ring.err" $rr
# something for the rules to flag: a spinner, a signal storm, the first
# 20 s (two days and a third of the week; the checks want them in some
# summarized epoch, and for 58 s they were a core of a run's CPU)
"$d/vitals-load" spin 20 & "$d/vitals-load" signals 20 "$d" &
maxsz=0
while kill -0 $rr 2>/dev/null; do
	s=$(stat -c %s "$d/ring.db" 2>/dev/null || echo 0)
	[ "$s" -gt "$maxsz" ] && maxsz=$s
	sleep 0.5
done
# every vital on, a busy machine: the first epochs alone pass 0.25 MiB,
# so only the hard limit (not retention after the fact) keeps the file
# under it (the vitals schema is half of that)
"$PROPEL" vitals record -o "$d/busy.db" --duration 3 --epoch 0.2 --max-size 0.25 \
	2>"$d/busy.err" || fail vitals-history-busy-record "$(tail -2 "$d/busy.err")"
num_le vitals-history-busy-max-size "$(stat -c %s "$d/busy.db" 2>/dev/null)" $((256 * 1024))
wait $rw || fail vitals-history-record "exit $?: $(tail -2 "$d/week.err")"
wait $rr || fail vitals-history-record-ring "exit $?: $(tail -2 "$d/ring.err")"
wait

# the whole week is there, summarized (the raw window is a minute of
# warped time: the last epoch or two)
read -r first last nsum <<<"$(sqlite3 -separator ' ' "$d/week.db" \
	"SELECT min(start_ns), max(end_ns), (SELECT count(*) FROM vitals_summary)
	 FROM (SELECT start_ns, end_ns FROM vitals_summary UNION ALL
	       SELECT start_ns, end_ns FROM vitals_epochs)")"
span=$(( (${last:-0} - ${first:-0}) / 1000000000 ))
num_ge vitals-history-week-span "$span" $((week * 95 / 100))
num_ge vitals-history-summarized "$nsum" 50

# report over windows: all of it, one day in the middle, the last hour,
# by day; a window before the history is an error that says so
"$PROPEL" vitals report --format=jsonl "$d/week.db" >"$d/all.jsonl" ||
	echo "report failed" >>"$d/report.err"
"$PROPEL" vitals report --format=jsonl --from -4d --to -3d "$d/week.db" >"$d/day.jsonl" ||
	echo "report failed" >>"$d/report.err"
"$PROPEL" vitals report --format=jsonl --from -1h "$d/week.db" >"$d/hour.jsonl" ||
	echo "report failed" >>"$d/report.err"
"$PROPEL" vitals report --scale 86400 "$d/week.db" >"$d/days.txt" ||
	echo "report failed" >>"$d/report.err"
checker vitals-history-windows python3 - "$d" "$last" <<'PY'
import json, sys
d, last = sys.argv[1], int(sys.argv[2])
def load(name):
    return [json.loads(l) for l in open(f"{d}/{name}.jsonl")]
def ok(name, cond, why):
    print(("PASS %s" % name) if cond else ("FAIL %s: %s" % (name, why)))
allr, day, hour = load("all"), load("day"), load("hour")
eps = lambda rs: sorted({(o["epoch_start_ns"], o["epoch_end_ns"]) for o in rs if o["kind"] == "value"})
ea, ed, eh = eps(allr), eps(day), eps(hour)
D = 86400 * 10**9
def overlap(lo, hi):
    return [e for e in ea if e[0] < hi and e[1] > lo]
import os
bad = os.path.exists(f"{d}/report.err")
ok("vitals-history-report-all", not bad and len(ea) >= 50 and
   any(o["kind"] == "summary" for o in allr), f"{len(ea)} epochs with values")
# a window holds exactly the epochs that overlap it
want = overlap(last - 4 * D, last - 3 * D)
# (where the collector fell behind: the longest wall time between two
# epoch starts, PROPEL_VITALS_WARP undone, and where in the run it was)
gaps = [((ea[i + 1][0] - ea[i][0]) / 10080e9, (ea[i][0] - ea[0][0]) / 10080e9)
        for i in range(len(ea) - 1)] or [(0, 0)]
gap = max(gaps)
ok("vitals-history-report-day", ed == want and len(ed) >= 5,
   f"{len(ed)} epochs, want the {len(want)} of the whole history in that day "
   f"(of {len(ea)} in all; the longest wall gap between epochs {gap[0]:.2f} s, "
   f"{gap[1]:.1f} s into the run; the collector said: "
   f"{(open(f'{d}/week.err').read().strip().splitlines() or [''])[-1]})")
want = overlap(last - 3600 * 10**9, last)
ok("vitals-history-report-hour", eh == want and len(eh) >= 1,
   f"{len(eh)} epochs in the last hour, want {len(want)}")
# the spinner among the top processes of summarized epochs (of the week:
# on a machine whose other work also takes whole cores, a day may not
# show it; the summary keeps each vital's top 3)
summ = {o["epoch_start_ns"] for o in allr if o["kind"] == "summary"}
spin = [o for o in allr if o["kind"] == "value" and o["comm"] == "vitals-load"
        and o["vital"] in ("cpu", "sched") and o["epoch_start_ns"] in summ]
ok("vitals-history-summary-spinner", spin, "the spinner is not among the top processes of any summarized epoch")
flags = {o["rule"] for o in allr if o["kind"] == "flag"}
ok("vitals-history-rules", "busy-loop" in flags, f"rules over the week: {sorted(flags)}")
sm = [o for o in allr if o["kind"] == "sample"]
ok("vitals-history-kept-samples", sm and any("load_spin" in f for o in sm for f in o["stack"]),
   f"{len(sm)} samples kept, none of the spinner's load_spin")
PY
n=$(grep -c "^epoch" "$d/days.txt")
num_ge vitals-history-report-by-day "$n" 7
"$PROPEL" vitals report --from 1000000000 --to 2000000000 "$d/week.db" >/dev/null 2>"$d/e"
[ $? -ne 0 ] && grep -q "no vital signs in that window" "$d/e" &&
	pass vitals-history-report-empty-window ||
	fail vitals-history-report-empty-window "$(cat "$d/e")"

# the ring: never over --max-size, the newest days kept
num_le vitals-history-ring-max-size "$maxsz" $((256 * 1024))
read -r rfirst rlast <<<"$(sqlite3 -separator ' ' "$d/ring.db" \
	"SELECT min(start_ns), max(end_ns) FROM (SELECT start_ns, end_ns FROM vitals_summary
	 UNION ALL SELECT start_ns, end_ns FROM vitals_epochs)")"
rspan=$(( (${rlast:-0} - ${rfirst:-0}) / 1000000000 ))
# rotated (the week does not fit); what is left is the newest part, and
num_lt vitals-history-ring-rotated "$rspan" $((week * 95 / 100))
"$PROPEL" vitals report --format=jsonl --from -1d "$d/ring.db" | grep -c '"kind":"value"' >"$d/n"
# the report reads it (how much is left depends on the largest epoch the
# machine made: room for it is kept free)
num_ge vitals-history-ring-report "$(cat "$d/n")" 3 "value rows in the last day (the ring kept $(sqlite3 -separator ' ' "$d/ring.db" \
	"SELECT (SELECT count(*) FROM vitals_epochs), 'epochs,', (SELECT count(*) FROM vitals_summary), 'summarized'" 2>&1), $(stat -c %s "$d/ring.db") bytes)"
