#!/usr/bin/env bash
# tests/e2e/export-trace.sh - `propel export --format=chrome|folded`
# (engine/export-chrome.c, engine/export-folded.c) on a real recording of
# the distributed scenario (tests/apps/dist-all: seven processes over TCP,
# a pipe, a UNIX socket and UDP), checked against the same session's
# replay (tests/e2e/export-trace-check.py) and loaded by a real consumer.
#
#   chrome/*              valid JSON; a B or X per entry, an instant per
#                         other event; every call's parent in the trace is
#                         the replay's; every matched recv is one arrow
#                         (s at its send, f at the recv, ids once); every
#                         process named; stdout and -o give the same bytes
#   chrome/pid            --pid P holds P's calls only, as many as the
#                         replay's --pid P entries
#   folded/*              --counts: the weights add up to the entries and
#                         the merged stacks equal those rebuilt from the
#                         replay; time: each process's self time adds up
#                         to the time its threads spent inside calls
#   check/can-fail        the checker rejects a trace with one arrow and
#                         one E dropped, and folded counts with one changed
#   speedscope/chrome     speedscope (npm) under headless Chromium imports
#                         the chrome export: one profile per thread, and
#                         its table (Sandwich view) names every function of
#                         the first thread; a screenshot is kept
#   speedscope/folded     the same for the folded export: the functions
#                         with the most self time are in its table
#   errors/*              an option the format does not take, --pid of no
#                         process, an unwritable output: one line, non-zero
. "$(dirname "$0")/../lib.sh"
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT
checker=$PROPEL_TOP/tests/e2e/export-trace-check.py
bin=$PROPEL_TOP/$O/apps
js=${PROPEL_JS:-/opt/propel-js}
[ -x "$bin/dist-all" ] || { fail export-trace/build "no $bin/dist-all (make)"; exit 1; }

mkdir -p "$t/run"
if ! timeout 120 "$PROPEL" record -o "$t/s.db" -- "$bin/dist-all" "$t/run" -n 12 \
	>"$t/rec.out" 2>"$t/rec.err"; then
	fail export-trace/record "$(head -c 300 "$t/rec.err" "$t/rec.out")"
	exit 1
fi
"$PROPEL" replay --format=jsonl "$t/s.db" >"$t/s.jsonl" 2>"$t/replay.err" ||
	{ fail export-trace/replay "$(head -c 200 "$t/replay.err")"; exit 1; }

# ---- chrome ----
"$PROPEL" export --format=chrome "$t/s.db" >"$t/c.json" 2>"$t/e1"
rc1=$?
"$PROPEL" export --format=chrome -o "$t/o.json" "$t/s.db" >"$t/o1" 2>"$t/e2"
rc2=$?
if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
	fail chrome/export "status $rc1/$rc2: $(cat "$t/e1" "$t/e2")"
elif ! cmp -s "$t/c.json" "$t/o.json" || [ -s "$t/o1" ]; then
	fail chrome/export "stdout and -o differ"
else
	pass chrome/export
fi
python3 "$checker" chrome "$t/s.jsonl" "$t/c.json"

pid=$(python3 -c '
import json, sys, collections
c = collections.Counter(json.loads(l)["pid"] for l in open(sys.argv[1])
                        if json.loads(l)["kind"] == "entry")
print(c.most_common()[1][0])' "$t/s.jsonl")
"$PROPEL" export --format=chrome --pid "$pid" "$t/s.db" >"$t/p.json" 2>"$t/e3"
"$PROPEL" replay --format=jsonl --pid "$pid" "$t/s.db" >"$t/p.jsonl" 2>/dev/null
if out=$(python3 - "$t/p.json" "$t/p.jsonl" "$pid" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
want = sum(1 for l in open(sys.argv[2]) if json.loads(l)["kind"] == "entry")
calls = [e for e in d if e["ph"] in ("B", "X")]
other = set(e["pid"] for e in d) - {int(sys.argv[3])}
if len(calls) != want or other or not want:
    print("%d calls, replay %d entries, other pids %s" % (len(calls), want, other))
    sys.exit(1)
PY
); then pass chrome/pid; else fail chrome/pid "$out $(cat "$t/e3")"; fi

# ---- folded ----
"$PROPEL" export --format=folded "$t/s.db" >"$t/t.folded" 2>"$t/e4" &&
	"$PROPEL" export --format=folded --counts "$t/s.db" >"$t/c.folded" 2>>"$t/e4" &&
	"$PROPEL" export --format=folded --counts --merged "$t/s.db" >"$t/m.folded" 2>>"$t/e4" ||
	fail folded/export "$(cat "$t/e4")"
python3 "$checker" folded "$t/s.jsonl" "$t/t.folded" "$t/c.folded" "$t/m.folded"

# ---- the checker can fail ----
python3 - "$t/c.json" "$t/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
i = next(i for i, e in enumerate(ev) if e["ph"] == "f")
del ev[i]
i = next(i for i, e in enumerate(ev) if e["ph"] == "E")
del ev[i]
json.dump(d, open(sys.argv[2], "w"))
PY
awk 'NR == 1 { $NF = $NF + 1 } { print }' "$t/m.folded" >"$t/bad.folded"
b1=$(python3 "$checker" chrome "$t/s.jsonl" "$t/bad.json" | grep -c '^FAIL')
b2=$(python3 "$checker" folded "$t/s.jsonl" "$t/t.folded" "$t/c.folded" "$t/bad.folded" |
	grep -c '^FAIL')
if [ "$b1" -ge 2 ] && [ "$b2" -ge 1 ]; then
	pass check/can-fail
else
	fail check/can-fail "chrome checker failed $b1 checks (want >= 2), folded $b2"
fi

# ---- speedscope under headless Chromium ----
speedscope() { # NAME PROFILE -> $t/NAME.out (one JSON line), $t/NAME.png
	NODE_PATH=$js/node_modules timeout 180 node \
		"$PROPEL_TOP/tests/e2e/speedscope-load.js" \
		"$js/node_modules/speedscope/dist/release" "$2" "$t/$1.png" \
		>"$t/$1.out" 2>"$t/$1.err"
}
if ! command -v chromium >/dev/null || ! command -v node >/dev/null ||
	! [ -d "$js/node_modules/speedscope" ]; then
	skip speedscope/chrome "chromium, node or speedscope missing (tests/install-deps.sh test)"
	skip speedscope/folded "chromium, node or speedscope missing"
else
	speedscope chrome "$t/c.json"
	if out=$(python3 - "$t/chrome.out" "$t/s.jsonl" "$t/chrome.png" <<'PY'
import json, os, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
ev = [json.loads(l) for l in open(sys.argv[2])]
threads = []
for e in ev:
    if (e["pid"], e["tid"]) not in threads:
        threads.append((e["pid"], e["tid"]))
first = threads[0]
want = set(e["func"] for e in ev if e["kind"] == "entry" and (e["pid"], e["tid"]) == first)
miss = want - set(r.get("names", []))
if r.get("error") or r.get("profiles") != "1/%d" % len(threads) or miss or \
        os.path.getsize(sys.argv[3]) < 10000:
    print("error %s, profiles %s (want 1/%d), missing %s" %
          (r.get("error"), r.get("profiles"), len(threads), sorted(miss)[:5]))
    sys.exit(1)
PY
	); then pass speedscope/chrome; else fail speedscope/chrome "$out $(head -c 200 "$t/chrome.err")"; fi

	speedscope folded "$t/t.folded"
	if out=$(python3 - "$t/folded.out" "$t/t.folded" "$t/folded.png" <<'PY'
import collections, json, os, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
self = collections.Counter()
for line in open(sys.argv[2]):
    stack, _, w = line.rstrip("\n").rpartition(" ")
    self[stack.split(";")[-1]] += int(w)
top = set(f for f, _ in self.most_common(10))
miss = top - set(r.get("names", []))
if r.get("error") or miss or os.path.getsize(sys.argv[3]) < 10000:
    print("error %s, missing %s" % (r.get("error"), sorted(miss)))
    sys.exit(1)
PY
	); then pass speedscope/folded; else fail speedscope/folded "$out $(head -c 200 "$t/folded.err")"; fi
	cp "$t/chrome.png" "$t/folded.png" "${PROPEL_ARTIFACTS:-$t}/" 2>/dev/null || true
fi

# ---- bad input: one line each ----
one_line() { # NAME WANT-PATTERN CMD...
	local name=$1 want=$2
	shift 2
	"$@" >"$t/bo" 2>"$t/be"
	local rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$t/be")" -eq 1 ] && grep -q "$want" "$t/be" &&
		[ ! -s "$t/bo" ]; then
		pass "$name"
	else
		fail "$name" "status $rc: $(head -c 200 "$t/be")"
	fi
}
one_line errors/option-not-taken "not taken by --format=chrome" \
	"$PROPEL" export --format=chrome --counts "$t/s.db"
one_line errors/no-such-pid "no such process" \
	"$PROPEL" export --format=folded --pid 999999 "$t/s.db"
one_line errors/bad-pid "not a positive number" \
	"$PROPEL" export --format=folded --pid x "$t/s.db"
one_line errors/unwritable "/nonexistent/dir/x.json" \
	"$PROPEL" export --format=chrome -o /nonexistent/dir/x.json "$t/s.db"
exit 0
