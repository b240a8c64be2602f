#!/usr/bin/env bash
# tests/e2e/bad-input.sh - every bad input of issue 30 (item 5) is refused at
# once: a non-zero status (not a crash, not timeout's 124), exactly one line
# on stderr, "propel: ..." naming the problem, within 10 s.
#   directives/*     record --directives FILE: /dev/zero (was a spin for
#                    ever), a file holding a NUL byte, a directory
#   attach-duration/*  attach --duration nan, 1e400, inf, -1 (was a trace
#                    for ever); --buffer-size 1e400
#   vitals-*/*       vitals record --duration -1, 0, abc (was a run until
#                    a signal); --epoch -1, 0, abc, nan; vitals report
#                    --scale abc (was taken for 0)
#   unreadable/*     replay, export (chrome, otlp, dot) and report on a
#                    session whose every chunk has flipped bytes (replay
#                    and export exited 0); one damaged chunk of eight is
#                    still read (unreadable/one-chunk-read)
#   reference/*      report --reference /nonexistent (ignored with --flows)
#   output/*         record -o -- -- true (made a file "--"), -o '', -o
#                    missing
#   dir/*            replay, report, export, tui DIR (said "disk I/O error")
#   otlp-once        export --format=otlp of a session with one damaged
#                    chunk says it once (it walks three times: said thrice)
#   attach-mntns     attach into a process with its own /dev/shm (unshare
#                    -m; root) says that /dev/shm is why
# Sessions: gen-session (tests/fixtures/tui/tui-lib.sh) writes a chunked
# one; the sqlite3 shell flips bytes in its chunks (as replay-errors.sh).
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 37
[ -x "$PROPEL" ] || { fail bad-input "no $PROPEL"; exit 1; }
t=$(tmpdir)
bgpids=()
cleanup() {
	local p
	for p in "${bgpids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$t"
}
trap cleanup EXIT

# refused NAME PATTERN CMD...: CMD (propel's arguments) fails within 10 s
# with one line on stderr, "propel: ", matching the ERE PATTERN.  A
# timeout, a status of 0 or a crash (a signal: >= 125), no line or more
# than one are each a FAIL.
refused() {
	local name=$1 pat=$2 rc n
	shift 2
	timeout -k 2 10 "$PROPEL" "$@" >"$t/out" 2>"$t/err" </dev/null
	rc=$?
	n=$(wc -l <"$t/err")
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail "$name" "timed out after 10 s: propel $*"
	elif [ $rc -eq 0 ]; then
		fail "$name" "exit status 0: propel $*; stderr: $(head -c 300 "$t/err")"
	elif [ $rc -ge 125 ]; then
		fail "$name" "status $rc (a crash?): propel $*"
	elif [ "$n" -ne 1 ]; then
		fail "$name" "$n lines on stderr, want 1: $(head -c 400 "$t/err")"
	elif ! grep -q '^propel: ' "$t/err"; then
		fail "$name" "not 'propel: ...': $(cat "$t/err")"
	elif ! grep -Eq -- "$pat" "$t/err"; then
		fail "$name" "got '$(cat "$t/err")', want /$pat/"
	else
		pass "$name"
	fi
}

# 1. the directive file parser
refused directives/dev-zero "--directives: /dev/zero: not a regular file" \
	record -o "$t/d.db" --directives /dev/zero -- true
printf 'a:entry,arg0 -> b:entry,arg0\n\0\n' >"$t/nul.txt"
refused directives/nul-byte "nul.txt: not a text file" \
	record -o "$t/d.db" --directives "$t/nul.txt" -- true
refused directives/directory "--directives: $t: is a directory" \
	record -o "$t/d.db" --directives "$t" -- true

# 2. attach's numbers (parsed before any process is touched)
sleep 60 &
target=$!
bgpids+=("$target")
for v in nan 1e400 inf -1; do
	refused "attach-duration/$v" "attach: --duration $v: seconds from" \
		attach -o "$t/a.db" --duration "$v" "$target"
done
refused attach-buffer-size/1e400 "attach: --buffer-size 1e400: a size in KiB" \
	attach -o "$t/a.db" --buffer-size 1e400 "$target"

# 3. vitals record's numbers (before the collector starts)
for v in -1 0 abc; do
	refused "vitals-duration/$v" "vitals record: --duration $v: seconds from" \
		vitals record -o "$t/v.db" --duration "$v"
done
for v in -1 0 abc nan; do
	refused "vitals-epoch/$v" "vitals record: --epoch $v: seconds from" \
		vitals record -o "$t/v.db" --epoch "$v" --duration 1
done
refused vitals-report-scale/abc "vitals report: --scale must be 0, 300, 3600 or 86400" \
	vitals report --scale abc "$t/none.db"

# 4 and 8. a session whose every chunk is unreadable; one with one damaged
have_sessions=0
if ! command -v sqlite3 >/dev/null; then
	skip unreadable "no sqlite3 shell"
elif ! tui_build; then
	fail unreadable "cannot build $TUI_GEN"
elif ! "$TUI_GEN" chunked "$t/ok.db" 100000 >/dev/null 2>&1 ||
	[ "$(sqlite3 "$t/ok.db" "SELECT count(*) FROM chunks")" -lt 2 ] 2>/dev/null; then
	fail unreadable "gen-session chunked: no session of several chunks"
else
	have_sessions=1
	flip="UPDATE chunk_data SET body = substr(body, 1, 100) || X'5a5a5a5a' ||
		substr(body, 105)"
	cp "$t/ok.db" "$t/all.db"
	cp "$t/ok.db" "$t/one.db"
	sqlite3 "$t/all.db" "$flip"
	sqlite3 "$t/one.db" "$flip WHERE id = (SELECT id FROM chunks ORDER BY first_seq LIMIT 1)"
	unread="all.db: the session holds no readable events: all [0-9]+ chunks .* damaged"
	refused unreadable/replay "^propel: replay: .*$unread" replay "$t/all.db"
	refused unreadable/replay-jsonl "^propel: replay: .*$unread" \
		replay --format=jsonl "$t/all.db"
	for f in chrome otlp dot; do
		refused "unreadable/export-$f" "^propel: export: .*$unread" \
			export --format=$f "$t/all.db"
	done
	refused unreadable/report "^propel: report: .*$unread" report --flows "$t/all.db"
	# not refused: what is left of one.db is read
	n=$(timeout 10 "$PROPEL" replay --format=jsonl "$t/one.db" 2>"$t/err" | wc -l)
	[ "$n" -gt 0 ] && [ "$(wc -l <"$t/err")" -eq 1 ] && grep -q "events lost" "$t/err" &&
		pass unreadable/one-chunk-read ||
		fail unreadable/one-chunk-read "$n events, stderr: $(head -c 300 "$t/err")"
	timeout 10 "$PROPEL" export --format=otlp "$t/one.db" >"$t/out" 2>"$t/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail otlp-once "status $rc: $(head -c 300 "$t/err")"
	elif [ "$(wc -l <"$t/err")" -ne 1 ] || ! grep -q "^propel: .*one.db: .*events lost" "$t/err"; then
		fail otlp-once "want one line naming the lost events, got: $(head -c 600 "$t/err")"
	else
		pass otlp-once
	fi
fi

# 5. report --reference
if [ $have_sessions = 1 ]; then
	for m in flows suspects rootcause; do
		refused "reference/$m" "^propel: report: --reference: /nonexistent: No such file" \
			report --$m --reference /nonexistent "$t/ok.db"
	done
else
	skip reference "no session (see unreadable)"
fi

# 6. an output name that is missing or an option
mkdir -p "$t/cwd"
(cd "$t/cwd" && refused output/dashdash "record: -o '--': an output file name, not an option" \
	record -o -- -- true)
[ ! -e "$t/cwd/--" ] && pass output/dashdash-no-file ||
	fail output/dashdash-no-file "a file named -- was made"
refused output/empty "record: -o '': an output file name, not empty" record -o '' -- true
refused output/missing "record: -o: needs a value" record -o
refused output/attach-dash "attach: -o '-x': an output file name" attach -o -x "$target"

# 7. a directory given as the session, by every command that opens one
mkdir -p "$t/dir.db"
refused dir/replay "^propel: replay: .*dir.db: is a directory" replay "$t/dir.db"
refused dir/report "^propel: report: .*dir.db: is a directory" report --flows "$t/dir.db"
refused dir/export "^propel: export: .*dir.db: is a directory" export --format=chrome "$t/dir.db"
refused dir/tui "^propel: tui: .*dir.db: is a directory" tui "$t/dir.db"

# 9. a target with a /dev/shm of its own
if ! is_root; then
	skip attach-mntns "needs root (unshare -m, mount)"
elif ! command -v unshare >/dev/null; then
	skip attach-mntns "no unshare"
else
	unshare -m --propagation private sh -c 'mount -t tmpfs none /dev/shm && exec sleep 60' &
	ns=$!
	bgpids+=("$ns")
	for _ in $(seq 100); do
		[ "$(cat /proc/$ns/comm 2>/dev/null)" = sleep ] && break
		sleep 0.05
	done
	if [ "$(cat /proc/$ns/comm 2>/dev/null)" != sleep ]; then
		fail attach-mntns "the target did not start (unshare -m; mount tmpfs)"
	else
		refused attach-mntns "attach $ns: its /dev/shm is not the one propel writes its rings in" \
			attach -o "$t/ns.db" --duration 1 "$ns"
	fi
fi
exit 0
