#!/usr/bin/env bash
# tests/e2e/replay-errors.sh - `propel replay` on bad input: each case must
# fail with one line "propel: replay: ..." naming the problem and a non-zero
# status.  Sessions are made with the sqlite3 shell (a test dependency).
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 11
[ -x "$PROPEL" ] || { fail replay-errors "no $PROPEL (make)"; exit 1; }
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT

# expect NAME PATTERN ARGS...: fails, one line, matching PATTERN
expect() {
	local name=$1 pat=$2 out rc
	shift 2
	out=$("$PROPEL" replay "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 0 ]; then
		fail "$name" "exit status 0"
	elif [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
		fail "$name" "not one line: $out"
	elif ! [[ $out =~ ^propel:\ replay:\ .*$pat ]]; then
		fail "$name" "got '$out', want /$pat/"
	else
		pass "$name"
	fi
}

expect replay-missing-file "No such file" "$t/nope.db"
(cd "$t" && expect replay-missing-default "propel.db: No such file")
printf 'hello, this is not a database at all, only some text\n%.0s' {1..100} >"$t/text.db"
expect replay-not-sqlite "not a propel session" "$t/text.db"

if command -v sqlite3 >/dev/null; then
	sqlite3 "$t/other.db" "CREATE TABLE t(x); INSERT INTO t VALUES(1);"
	expect replay-not-a-session "not a propel session" "$t/other.db"
	sqlite3 "$t/newer.db" "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
		INSERT INTO meta VALUES('format_version', '99');"
	expect replay-newer-format "newer" "$t/newer.db"
	# a real session, large enough to span many pages, then cut short
	sqlite3 "$t/full.db" "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
		INSERT INTO meta VALUES('format_version', '1');
		CREATE TABLE events(id INTEGER PRIMARY KEY, pid, tid, ts_ns, kind,
		  depth, func, site, arg0, arg1, arg2);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
		  WHERE i < 20000)
		INSERT INTO events SELECT i, 1, 1, i, 1, 0, NULL, NULL, i, i, i FROM n;
		CREATE TABLE threads(id INTEGER PRIMARY KEY, proc, pid, tid, name,
		  first_ns, last_ns, nevents, wrapped);
		INSERT INTO threads VALUES(1, 1, 1, 1, 't', 1, 20000, 20000, 0);
		CREATE TABLE functions(id INTEGER PRIMARY KEY, proc, addr, name,
		  module, file, line, flags);
		CREATE TABLE callsites(id INTEGER PRIMARY KEY, proc, addr, file, line);"
	# format 1 (one row per event) is still read
	n=$("$PROPEL" replay --format=jsonl "$t/full.db" 2>"$t/err" | wc -l)
	[ "$n" -eq 20000 ] && [ ! -s "$t/err" ] && pass replay-format1-read ||
		fail replay-format1-read "$n events, stderr: $(head -2 "$t/err")"
	size=$(stat -c %s "$t/full.db")
	cp "$t/full.db" "$t/trunc.db"
	truncate -s $((size / 2)) "$t/trunc.db"
	expect replay-truncated "corrupt or truncated" "$t/trunc.db"
	# a chunked session (fib(25): 485,577 events, eight chunks): a chunk
	# with flipped bytes is named on one line, the other one is read
	fib=$PROPEL_TOP/$O/fixtures/O2/bench-fib
	if [ -x "$fib" ] && "$PROPEL" record -o "$t/fib.db" -- "$fib" 25 >/dev/null 2>&1; then
		all=$("$PROPEL" replay --format=jsonl "$t/fib.db" | wc -l)
		first=$(sqlite3 "$t/fib.db" "SELECT count FROM chunks ORDER BY first_seq LIMIT 1")
		cp "$t/fib.db" "$t/flip.db"
		sqlite3 "$t/flip.db" "UPDATE chunk_data SET body = substr(body, 1, 100) ||
			X'5a5a5a5a' || substr(body, 105) WHERE id = (SELECT id FROM chunks
			ORDER BY first_seq LIMIT 1)"
		n=$("$PROPEL" replay --format=jsonl "$t/flip.db" 2>"$t/err" | wc -l)
		if [ "$(wc -l <"$t/err")" -eq 1 ] && grep -q "^propel: .*thread [0-9]*/[0-9]*: $first events lost (ids 1\.\.$first, ts_ns [0-9]*\.\.[0-9]*): chunk checksum mismatch" "$t/err" &&
		   [ "$n" -eq $((all - first)) ]; then
			pass replay-corrupt-chunk
		else
			fail replay-corrupt-chunk "$n of $all events, stderr: $(head -3 "$t/err")"
		fi
		# cut short: what is left is read, what is lost is named
		size=$(stat -c %s "$t/fib.db")
		cp "$t/fib.db" "$t/cut.db"
		truncate -s $((size * 19 / 20)) "$t/cut.db"
		n=$("$PROPEL" replay --format=jsonl "$t/cut.db" 2>"$t/err" | wc -l)
		rc=$?
		if [ "$n" -gt 0 ] && [ "$n" -lt "$all" ] && grep -q "events lost\|cut short" "$t/err" &&
		   ! grep -qv "^propel: " "$t/err"; then
			pass replay-truncated-chunks
		else
			fail replay-truncated-chunks "$n of $all events, stderr: $(head -3 "$t/err")"
		fi
	else
		skip replay-corrupt-chunk "no $fib or record failed"
		skip replay-truncated-chunks "no $fib or record failed"
	fi
else
	skip replay-not-a-session "no sqlite3 shell"
	skip replay-newer-format "no sqlite3 shell"
	skip replay-truncated "no sqlite3 shell"
	skip replay-format1-read "no sqlite3 shell"
fi

out=$("$PROPEL" replay --help 2>&1)
if [ $? -eq 0 ] && [[ $out == usage:\ propel\ replay* ]]; then
	pass replay-help
else
	fail replay-help "$out"
fi
expect replay-bad-option "bad option" --frobnicate "$t/nope.db"
