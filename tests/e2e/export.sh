#!/usr/bin/env bash
# tests/e2e/export.sh - `propel export --format=dot` (engine/export-dot.c) on
# a real recording of the distributed scenario (tests/apps/dist-all: six
# processes over TCP, a pipe, a UNIX socket and UDP, five of them exec'd
# and one forked), checked against the session's own replay
# (tests/e2e/export-check.py).
#
#   dot/renders           graphviz `dot -Tsvg` reads the output (stdout and
#                         -o FILE give the same text) and draws an svg
#   dot/matches-replay    nodes = the pids with events, labelled with their
#                         command; message edges = the matched recvs per
#                         (sender, receiver, kind) with their count and
#                         bytes; forks = the fork events; a wait for every
#                         child (all are reaped); one cluster, the host
#   dot/hosts             the same session with two processes moved to
#                         another host (processes.host): two clusters, each
#                         node in its host's
#   check/can-fail        the checker rejects the diagram with one edge
#                         dropped and with one byte count changed
#   errors/*              unknown format, no format, unwritable output, a
#                         missing session, a file that is no session: one
#                         line "propel: export: ...", non-zero, and an
#                         existing output file left as it was
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 11
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT
checker=$PROPEL_TOP/tests/e2e/export-check.py
bin=$PROPEL_TOP/$O/apps
[ -x "$bin/dist-all" ] || { fail export/build "no $bin/dist-all (make)"; exit 1; }

mkdir -p "$t/run"
if ! timeout 120 "$PROPEL" record -o "$t/s.db" -- "$bin/dist-all" "$t/run" -n 12 \
	>"$t/rec.out" 2>"$t/rec.err"; then
	fail export/record "$(head -c 300 "$t/rec.err" "$t/rec.out")"
	exit 1
fi
"$PROPEL" replay --format=jsonl "$t/s.db" >"$t/s.jsonl" 2>"$t/replay.err" ||
	{ fail export/replay "$(head -c 200 "$t/replay.err")"; exit 1; }

# ---- renders ----
"$PROPEL" export --format=dot "$t/s.db" >"$t/stdout.dot" 2>"$t/e1"
rc1=$?
"$PROPEL" export --format dot -o "$t/g.dot" "$t/s.db" >"$t/o1" 2>"$t/e2"
rc2=$?
if ! command -v dot >/dev/null; then
	skip dot/renders "graphviz not installed"
elif [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
	fail dot/renders "status $rc1/$rc2: $(cat "$t/e1" "$t/e2")"
elif ! cmp -s "$t/stdout.dot" "$t/g.dot" || [ -s "$t/o1" ]; then
	fail dot/renders "stdout and -o differ"
elif dot -Tsvg "$t/g.dot" -o "$t/g.svg" 2>"$t/dot.err" && [ ! -s "$t/dot.err" ] &&
	grep -q '<svg' "$t/g.svg" && grep -q '>dist&#45;front<\|>dist-front<' "$t/g.svg"; then
	pass dot/renders
else
	fail dot/renders "dot: $(head -c 300 "$t/dot.err")"
fi

# ---- the diagram is the session ----
host=$(sqlite3 "$t/s.db" "SELECT host FROM processes LIMIT 1" 2>/dev/null)
if out=$(python3 "$checker" "$t/g.dot" "$t/s.jsonl" --waits 2>&1); then
	# every node names its command; the cluster is the recording host
	front=$(awk '/^dist-all: pids/ {print $10}' "$t/rec.out")
	if grep -q "\"p$front\" \[label=\"dist-front\\\\npid $front (exec)\\\\nexit 0\"" "$t/g.dot" &&
		grep -q "label=\"host $host\"" "$t/g.dot" &&
		[ "$(grep -c '^dist-[a-z]*: .* ok$' "$t/rec.out")" = 6 ]; then
		pass dot/matches-replay
	else
		fail dot/matches-replay "front $front, host $host: $(grep -m3 'label=' "$t/g.dot")"
	fi
else
	fail dot/matches-replay "$(echo "$out" | head -5)"
fi

# ---- two hosts ----
back=$(awk '/^dist-all: pids/ {print $8}' "$t/rec.out")
mon=$(awk '/^dist-all: pids/ {print $6}' "$t/rec.out")
cp "$t/s.db" "$t/h.db"
sqlite3 "$t/h.db" "UPDATE processes SET host='hostC' WHERE pid IN ($back, $mon)"
"$PROPEL" export --format=dot -o "$t/h.dot" "$t/h.db" 2>"$t/e3"
if out=$(python3 "$checker" "$t/h.dot" "$t/s.jsonl" \
	--hosts "0=$host,$back=hostC,$mon=hostC" 2>&1) &&
	[ "$(grep -c 'subgraph "cluster_' "$t/h.dot")" = 2 ]; then
	pass dot/hosts
else
	fail dot/hosts "$(echo "$out" | head -3) $(cat "$t/e3")"
fi

# ---- the checker can fail ----
awk '/ -> .*tcp: / && !done {done = 1; next} {print}' "$t/g.dot" >"$t/bad1.dot"
sed -E '0,/(udp: [0-9]+ msgs, )([0-9]+)/s//\1999999/' "$t/g.dot" >"$t/bad2.dot"
if ! cmp -s "$t/g.dot" "$t/bad1.dot" && ! cmp -s "$t/g.dot" "$t/bad2.dot" &&
	! python3 "$checker" "$t/bad1.dot" "$t/s.jsonl" >/dev/null 2>&1 &&
	! python3 "$checker" "$t/bad2.dot" "$t/s.jsonl" >/dev/null 2>&1; then
	pass check/can-fail
else
	fail check/can-fail "the checker accepted a wrong diagram"
fi

# ---- bad input: one line each ----
# expect NAME STATUS PATTERN ARGS...
expect() {
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	out=$("$PROPEL" export "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -ne "$want" ]; then
		fail "$name" "status $rc, want $want: $out"
	elif [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
		fail "$name" "not one line: $out"
	elif ! [[ $out =~ ^propel:\ export.*$pat ]]; then
		fail "$name" "got '$out', want /$pat/"
	else
		pass "$name"
	fi
}
expect errors/unknown-format 2 'unknown format \(known: dot, chrome, folded, otlp\)' --format=svg "$t/s.db"
expect errors/no-format 2 'no --format given \(known: dot, chrome, folded, otlp\)' "$t/s.db"
expect errors/unwritable-output 1 "$t/nodir/x.dot: No such file" --format=dot -o "$t/nodir/x.dot" "$t/s.db"
: >"$t/file"
expect errors/output-under-a-file 1 "$t/file/x.dot: Not a directory" --format=dot -o "$t/file/x.dot" "$t/s.db"
expect errors/missing-session 1 "$t/nope.db: No such file" --format=dot "$t/nope.db"
printf 'not a database, only text\n%.0s' {1..50} >"$t/text.db"
echo keep >"$t/keep.dot"
expect errors/not-a-session 1 'not a propel session' --format=dot -o "$t/keep.dot" "$t/text.db"
if [ "$(cat "$t/keep.dot")" = keep ] && ! ls "$t"/keep.dot.tmp* >/dev/null 2>&1; then
	pass errors/output-untouched
else
	fail errors/output-untouched "the output was changed by a failed export"
fi
