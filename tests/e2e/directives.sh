#!/usr/bin/env bash
# tests/e2e/directives.sh - mapping directives (self-propelled §3.2) from
# `propel record|attach --directive` to `propel report --flows`, on
# tests/fixtures/report/jobq.c: N requests read by the main thread and
# enqueue()d, each dequeue()d and run by a worker thread; nothing but the
# queue (memory) links a request to the worker's part of it.
#
#   values/LVL           record --directive 'enqueue:entry,arg1 ->
#                        dequeue:exit,ret' (-O0, -O2): replay jsonl has
#                        "value" on each enqueue entry (the job ids 1001..
#                        100N, then -1) and each dequeue exit (the same, in
#                        order), and on no other event
#   with/LVL             report --flows --format=json (the directive kept in
#                        the session): one flow per request, each with the
#                        worker's part of its job (its run_job), event
#                        counts equal to the flows rebuilt from the replay
#                        by tests/e2e/directives-check.py
#   with/can-fail        the checker rejects that report under the rules
#                        without the directive
#   without/LVL          the same program recorded without the directive:
#                        no "value" anywhere; no flow holds the worker's
#                        work (the checker's rules without the directive)
#   report/none          report --directives /dev/null on the recording made
#                        with the directive: the flows without it
#   report/not-recorded  report --directive naming a value the session did
#                        not record: one line, exit 1
#   export/flow          export --format=folded --counts --flow 2 holds the
#                        worker's run_job (flows numbered as report does)
#   follow               record --follow --directive: the values reach the
#                        agents through propeld (replay has them)
#   attach               attach --directive to a running jobq: the values
#                        of the jobs enqueued while attached
#   errors/*             a malformed SPEC (record, attach, report), a
#                        missing --directives FILE, a bad line in one (its
#                        number said), two arguments of one entry: one line
#                        and a non-zero exit each, no session written
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 18
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
src=$PROPEL_TOP/tests/fixtures/report/jobq.c
checker=$PROPEL_TOP/tests/e2e/directives-check.py
N=4
DIR='enqueue:entry,arg1 -> dequeue:exit,ret'

# pyl JSONL CODE: exit 0 when CODE (python; ev = the events) sets ok true
pyl() {
	python3 -c 'import json,sys; ev=[json.loads(l) for l in open(sys.argv[1])]; ok=False; exec(sys.argv[2]); sys.exit(0 if ok else 1)' "$@"
}
# one line on stderr, nothing on stdout, a non-zero status, no DB
one_line() { # NAME VERB PATTERN DB CMD...
	local name=$1 verb=$2 pat=$3 db=$4
	shift 4
	"$@" >"$t/e.out" 2>"$t/e.err"
	local rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <"$t/e.err")" -eq 1 ] &&
		grep -q "^propel: $verb: .*$pat" "$t/e.err" && [ ! -s "$t/e.out" ] &&
		{ [ "$db" = - ] || [ ! -e "$db" ]; }; then
		pass "$name"
	else
		fail "$name" "status $rc, stderr: $(head -c 300 "$t/e.err")"
	fi
}

ids="[1000 + k for k in range(1, $N + 1)] + [-1]"
for lvl in O0 O2; do
	if ! $cc -$lvl -g -o "$t/jobq-$lvl" "$src" -lpthread; then
		fail build/$lvl "cannot build the fixture"
		continue
	fi
	db=$t/with-$lvl.db
	if ! timeout 60 "$PROPEL" record -o "$db" --directive "$DIR" -- "$t/jobq-$lvl" $N \
		>"$t/with-$lvl.out" 2>"$t/with-$lvl.err" ||
		! grep -q "^$N jobs" "$t/with-$lvl.out"; then
		fail values/$lvl "record: $(head -c 300 "$t/with-$lvl.err")"
		continue
	fi
	"$PROPEL" replay --format=jsonl "$db" >"$t/with-$lvl.jsonl"
	if pyl "$t/with-$lvl.jsonl" "
ok = [e['value'] for e in ev if e['kind'] == 'entry' and e['func'] == 'enqueue'] == $ids
ok = ok and [e['value'] for e in ev if e['kind'] == 'exit' and e['func'] == 'dequeue'] == $ids
ok = ok and all(e['func'] in ('enqueue', 'dequeue') and (e['kind'] == 'entry') == (e['func'] == 'enqueue') for e in ev if 'value' in e)"; then
		pass values/$lvl
	else
		fail values/$lvl "$(grep '"value"' "$t/with-$lvl.jsonl" | head -c 600)"
	fi
	"$PROPEL" report --flows --format=json "$db" >"$t/with-$lvl.json" 2>"$t/with-$lvl.rerr"
	if why=$(python3 "$checker" "$t/with-$lvl.jsonl" "$t/with-$lvl.json" with) &&
		python3 -c "import json,sys; sys.exit(0 if len(json.load(open(sys.argv[1]))['flows']) == $N else 1)" "$t/with-$lvl.json"; then
		pass with/$lvl
	else
		fail with/$lvl "$why $(head -c 300 "$t/with-$lvl.rerr")"
	fi
	if [ $lvl = O0 ]; then
		if python3 "$checker" "$t/with-$lvl.jsonl" "$t/with-$lvl.json" without >/dev/null; then
			fail with/can-fail "the checker took the directive's flows as flows without it"
		else
			pass with/can-fail
		fi
		"$PROPEL" report --flows --format=json --directives /dev/null "$db" >"$t/none.json" 2>"$t/none.err"
		if why=$(python3 "$checker" "$t/with-$lvl.jsonl" "$t/none.json" without); then
			pass report/none
		else
			fail report/none "$why $(head -c 300 "$t/none.err")"
		fi
		one_line report/not-recorded report "did not record the values" - \
			"$PROPEL" report --flows --directive 'enqueue:entry,arg0 -> dequeue:exit,ret' "$db"
		if "$PROPEL" export --format=folded --counts --flow 2 -o "$t/f2.folded" "$db" 2>"$t/f2.err" &&
			grep -q ';run_job' "$t/f2.folded" && grep -q ';enqueue' "$t/f2.folded"; then
			pass export/flow
		else
			fail export/flow "$(head -c 300 "$t/f2.err") $(head -c 300 "$t/f2.folded")"
		fi
	fi
	db=$t/without-$lvl.db
	if ! timeout 60 "$PROPEL" record -o "$db" -- "$t/jobq-$lvl" $N >/dev/null 2>"$t/without-$lvl.err"; then
		fail without/$lvl "record: $(head -c 300 "$t/without-$lvl.err")"
		continue
	fi
	"$PROPEL" replay --format=jsonl "$db" >"$t/without-$lvl.jsonl"
	"$PROPEL" report --flows --format=json "$db" >"$t/without-$lvl.json" 2>"$t/without-$lvl.rerr"
	if ! grep -q '"value"' "$t/without-$lvl.jsonl" &&
		why=$(python3 "$checker" "$t/without-$lvl.jsonl" "$t/without-$lvl.json" without); then
		pass without/$lvl
	else
		fail without/$lvl "$why $(head -c 300 "$t/without-$lvl.rerr")"
	fi
done

# --follow: propeld gets the values in HELLO and writes them for its agents
if [ -x "$t/jobq-O0" ]; then
	if timeout 60 "$PROPEL" record --follow -o "$t/follow.db" --directive "$DIR" -- "$t/jobq-O0" $N \
		>/dev/null 2>"$t/follow.err" &&
		"$PROPEL" replay --format=jsonl "$t/follow.db" >"$t/follow.jsonl" &&
		pyl "$t/follow.jsonl" "ok = [e['value'] for e in ev if e['kind'] == 'exit' and e['func'] == 'dequeue'] == $ids" &&
		python3 "$checker" "$t/follow.jsonl" <("$PROPEL" report --flows --format=json "$t/follow.db") with >"$t/follow.why"; then
		pass follow
	else
		fail follow "$(head -c 300 "$t/follow.err") $(cat "$t/follow.why" 2>/dev/null)"
	fi
fi

# attach: a jobq that waits for its client (N=40, 20 ms apart: attached
# for the middle of it; an enqueue under way at the attach has its entry
# rebuilt, with no value recorded, and a dequeue under way its exit
# (made when the worker calls again: "rebuilt" too); an attach slowed by load that reaches
# the end sees the -1 that stops the worker, enqueued and dequeued)
if [ -x "$t/jobq-O0" ]; then
	"$t/jobq-O0" 40 >"$t/att.out" 2>&1 &
	app=$!
	sleep 0.2
	if timeout 60 "$PROPEL" attach -o "$t/att.db" --duration 0.4 --directive "$DIR" $app \
		>/dev/null 2>"$t/att.err" &&
		"$PROPEL" replay --format=jsonl "$t/att.db" >"$t/att.jsonl" &&
		pyl "$t/att.jsonl" "
en = [e['value'] for e in ev if e['kind'] == 'entry' and e['func'] == 'enqueue' and not e.get('rebuilt')]
de = [e['value'] for e in ev if e['kind'] == 'exit' and e['func'] == 'dequeue' and not e.get('rebuilt')]
ok = len(en) >= 3 and all(1001 <= v <= 1040 or v == -1 for v in en) and len(de) >= 3 and all(1001 <= v <= 1040 or v == -1 for v in de)"; then
		pass attach
	else
		fail attach "$(head -c 300 "$t/att.err") $(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
en = [(e.get("value"), e.get("rebuilt")) for e in ev if e["kind"] == "entry" and e["func"] == "enqueue"]
de = [(e.get("value"), e.get("unwound")) for e in ev if e["kind"] == "exit" and e["func"] == "dequeue"]
out = lambda v: [x for x in v if x[0] is None or not (1001 <= x[0] <= 1040 or x[0] == -1)]
print("enqueue", len(en), en[:2], out(en)[:4], "dequeue", len(de), de[:2], out(de)[:4])' "$t/att.jsonl" 2>&1 | head -c 400)"
	fi
	wait $app
fi

# errors
one_line errors/record-malformed record "--directive: directive 'enqueue -> dequeue': expected FUNC:entry,argN -> FUNC:exit,ret" "$t/e1.db" \
	"$PROPEL" record -o "$t/e1.db" --directive 'enqueue -> dequeue' -- true
one_line errors/attach-malformed attach "--directive: directive 'enqueue:entry,argx -> dequeue:exit,ret': expected" "$t/e2.db" \
	"$PROPEL" attach -o "$t/e2.db" --directive 'enqueue:entry,argx -> dequeue:exit,ret' $$
one_line errors/report-malformed report "--directive: directive 'enqueue:entry' *: expected" - \
	"$PROPEL" report --flows --directive 'enqueue:entry' "$t/with-O0.db"
one_line errors/no-file record "--directives: $t/none.txt: No such file" "$t/e3.db" \
	"$PROPEL" record -o "$t/e3.db" --directives "$t/none.txt" -- true
printf '# the queue\n%s\n\nenqueue:exit,arg1 -> dequeue:exit,ret\n' "$DIR" >"$t/dirs.txt"
one_line errors/file-line record "--directives: $t/dirs.txt:4: directive 'enqueue:exit,arg1 -> dequeue:exit,ret': expected" "$t/e4.db" \
	"$PROPEL" record -o "$t/e4.db" --directives "$t/dirs.txt" -- true
one_line errors/two-arguments record "enqueue:entry names arg1 and arg0; one argument per function" "$t/e5.db" \
	"$PROPEL" record -o "$t/e5.db" --directive "$DIR" --directive 'enqueue:entry,arg0 -> worker:exit,ret' -- true
