#!/usr/bin/env bash
# tests/e2e/timing.sh - how call records are dated (record|attach --timing):
# tests/fixtures/timing/timing.c at -O0 and -O2, recorded with
# --timing=exact (record's default) and --timing=sampled (attach's).
#
#   MODE.LVL/order      every thread's events in time order, and call
#                       events dated apart (sampled: the ones between two
#                       stamps spread between them, not piled on one; a
#                       pure libc call's entry and exit, one CALL record,
#                       share a time)
#   MODE.LVL/blocking   each usleep and poll (untraced code that may block;
#                       poll takes no callback: the lean way) takes its 30
#                       and 20 ms, and nap around them, in both modes: such
#                       calls are stamped exactly
#   MODE.LVL/leaves     memcpy and strlen (one CALL record each) are an
#                       entry and its exit, inside copy, one deeper
#   MODE.LVL/rounds     each round (2000 dense calls, burn, nap) lasts its
#                       70 ms and more
#   exact.LVL/compute   burn, 20 ms of computing with no call of its own,
#                       takes its 20 ms (sampled dates it only between the
#                       stamps around it: README "Timing")
#   errors/timing       --timing=bogus: one line, exit 2, nothing written
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
# per level (O0, O2): exact order, blocking, leaves, rounds, compute;
# sampled the same without compute; and errors/timing
expect_checks $((2 * (5 + 4) + 1))
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
for lvl in O0 O2; do
	gcc -$lvl -g -o "$t/timing.$lvl" "$PROPEL_TOP/tests/fixtures/timing/timing.c" ||
		{ fail "build/$lvl" "cannot build the fixture"; continue; }
	for mode in exact sampled; do
		n=$mode.$lvl
		if ! "$PROPEL" record -o "$t/$n.db" --timing=$mode -- "$t/timing.$lvl" >"$t/$n.out" 2>"$t/$n.err"; then
			fail "$n/record" "$(head -3 "$t/$n.err")"
			continue
		fi
		"$PROPEL" replay --format=jsonl "$t/$n.db" >"$t/$n.jsonl" ||
			{ fail "$n/replay" "replay failed"; continue; }
		checker "$n/check" python3 - "$t/$n.jsonl" "$n" "$mode" <<'PY'
import json, sys
path, name, mode = sys.argv[1:4]
ev = [json.loads(l) for l in open(path)]
def res(check, ok, why=""):
    print(("PASS %s/%s" % (name, check)) if ok else ("FAIL %s/%s: %s" % (name, check, why)))
calls = [e for e in ev if e["kind"] in ("entry", "exit")]
# order
back = sum(1 for a, b in zip(ev, ev[1:]) if a["tid"] == b["tid"] and b["ts_ns"] < a["ts_ns"])
same = sum(1 for a, b in zip(calls, calls[1:]) if b["ts_ns"] == a["ts_ns"] and
           not (a["kind"] == "entry" and b["kind"] == "exit" and a["func"] == b["func"] and mode == "sampled"))
# (exact: rdtsc here reads in steps of ~10 ns, consecutive stamps may tie)
res("order", back == 0 and (mode == "exact" or same <= len(calls) // 100),
    "%d events earlier than the one before, %d of %d call events on the time of the one before" % (back, same, len(calls)))
# calls: (func, depth, t0, t1, parent)
stack, done = [], []
for e in calls:
    if e["kind"] == "entry":
        stack.append([e["func"], e["depth"], e["ts_ns"], None, stack[-1][0] if stack else None])
    elif stack:
        c = stack.pop()
        c[3] = e["ts_ns"]
        done.append(c)
def durs(f):
    return [(c[3] - c[2]) / 1e6 for c in done if c[0] == f]
us, po, naps = durs("usleep"), durs("poll"), durs("nap")
res("blocking", len(us) == 3 and len(po) == 3 and len(naps) == 3 and all(30 <= d < 500 for d in us) and
    all(20 <= d < 500 for d in po) and all(50 <= d < 500 for d in naps),
    "usleep %s ms, poll %s ms, nap %s ms" % (us, po, naps))
lv = [c for c in done if c[0] in ("memcpy", "strlen")]
okl = len(lv) >= 3 * 2000 * 2 and all(c[4] == "copy" for c in lv)
res("leaves", okl, "%d memcpy/strlen calls, parents %s" % (len(lv), sorted(set(c[4] for c in lv))))
# rounds: from each burn's end back to the round's first tiny, through nap's end
tiny0 = [c[2] for c in done if c[0] == "tiny"]
nap_end = sorted(c[3] for c in done if c[0] == "nap")
starts = [min(tiny0)] + [min(t for t in tiny0 if t > e) for e in nap_end[:-1]] if tiny0 and len(nap_end) == 3 else []
rounds = [(e - s) / 1e6 for s, e in zip(starts, nap_end)]
res("rounds", len(rounds) == 3 and all(d >= 70 for d in rounds), "rounds %s ms" % rounds)
if mode == "exact":
    b = durs("burn")
    res("compute", len(b) == 3 and all(19 <= d < 500 for d in b), "burn %s ms" % b)
PY
	done
done
# bad input
if "$PROPEL" record -o "$t/bad.db" --timing=bogus -- true >"$t/bad.out" 2>"$t/bad.err"; then
	fail errors/timing "accepted"
else
	rc=$?
	if [ $rc -eq 2 ] && [ "$(wc -l <"$t/bad.err")" -eq 1 ] && grep -q "^propel: record: --timing" "$t/bad.err" && [ ! -e "$t/bad.db" ]; then
		pass errors/timing
	else
		fail errors/timing "exit $rc: $(cat "$t/bad.err")"
	fi
fi
