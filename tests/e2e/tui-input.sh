#!/usr/bin/env bash
# tests/e2e/tui-input.sh - the TUI on bad and unusual input: a corrupt or
# truncated session, a newer format, no terminal, a missing source file
# (message + disassembly), a wrapped ring, a hang snapshot, `propel DB`.
# Each bad case must give one clear line and a non-zero exit, never a crash.
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 10
[ -x "$PROPEL" ] || { fail tui-input "no $PROPEL"; exit 1; }
tui_build || { fail tui-input/build "cannot build the fixtures"; exit 1; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
tui_crash_db "$d/crash.db" >/dev/null

# expect_error NAME PATTERN CMD...: exit 1 (not a signal), message matches
expect_error() {
	local name=$1 pat=$2 out rc; shift 2
	out=$("$@" 2>&1 </dev/null); rc=$?
	if [ $rc -ge 1 ] && [ $rc -lt 128 ] && grep -q "^propel: tui: .*$pat" <<<"$out" &&
	   [ "$(wc -l <<<"$out")" -eq 1 ]; then
		pass "$name"
	else
		fail "$name" "rc=$rc out=$out"
	fi
}
head -c 3000 /dev/urandom >"$d/corrupt.db"
tui_start 80 24 "$PROPEL" tui "$d/corrupt.db"
tui_wait_for EXITED 3
tui_screen | grepq "propel: tui: .*not a propel session" && tui_screen | grepq "EXITED 1" &&
	pass tui-input/corrupt || fail tui-input/corrupt "$(tui_screen | head -3)"
size=$(stat -c %s "$d/crash.db")
head -c $((size / 2)) "$d/crash.db" >"$d/trunc.db"
tui_start 80 24 "$PROPEL" tui "$d/trunc.db"
tui_wait_for EXITED 3
tui_screen | grepq "propel: tui: .*\(corrupt\|truncated\|malformed\)" && tui_screen | grepq "EXITED 1" &&
	pass tui-input/truncated || fail tui-input/truncated "$(tui_screen | head -3)"
"$TUI_GEN" newer "$d/newer.db"
tui_start 80 24 "$PROPEL" tui "$d/newer.db"
tui_wait_for EXITED 3
tui_screen | grepq "propel: tui: .*newer" && pass tui-input/newer-format ||
	fail tui-input/newer-format "$(tui_screen | head -3)"
expect_error tui-input/no-terminal "not a terminal" "$PROPEL" tui "$d/crash.db"
expect_error tui-input/missing-file "No such file" "$PROPEL" tui "$d/nope.db"

# missing source: the session names a file that is not there
cp "$TUI_SRC" "$d/gone.c"
cc -g -O0 -no-pie -pthread -o "$d/gone" "$d/gone.c"
line=$(grep -n '/\* @fault \*/' "$TUI_SRC" | cut -d: -f1)
pc=$(objdump --dwarf=decodedline "$d/gone" | awk -v l="$line" '$1=="gone.c" && $2==l {print $3; exit}')
"$TUI_GEN" crash "$d/gone.db" "$d/gone.c" "$d/gone" "${pc:-0}" >/dev/null
rm "$d/gone.c"
tui_start 80 24 "$PROPEL" "$d/gone.db"
tui_wait_for "event 17/17" 5
if tui_screen | grepq "source not found: .*gone.c:23" &&
   tui_screen | grepq "lookup: 0x"; then
	pass tui-input/missing-source-disassembly
else
	fail tui-input/missing-source-disassembly "$(tui_screen | head -6 | tr '\n' '|')"
fi
tui_keys q
tui_wait_for "EXITED 0" 3 && pass tui-input/propel-DB-form || fail tui-input/propel-DB-form "no exit"

# wrapped ring: first events are exits; rebuilt frames shown at depth
"$TUI_GEN" wrapped "$d/wrapped.db"
tui_start 80 24 "$PROPEL" tui "$d/wrapped.db"
tui_wait_for "event" 5
tui_keys Home
if tui_screen | grepq "run() {   (entry lost: ring wrapped)" &&
   tui_screen | grepq "^ *} /\* work \*/" && tui_status | grepq "event -2/8"; then
	pass tui-input/wrapped-ring
else
	fail tui-input/wrapped-ring "$(tui_screen | tr '\n' '|')"
fi
tui_stop
# hang snapshot: threads pane focused, one line per thread
"$TUI_GEN" hang "$d/hang.db"
tui_start 80 24 "$PROPEL" tui "$d/hang.db"
tui_wait_for "hang snapshot" 5
n=$(tui_screen | grep -c "^[* ] [0-9] 9:")
[ "$n" -eq 3 ] && tui_screen | grepq "in lock_a" && tui_screen | grepq "in lock_b" &&
	pass tui-input/hang-one-line-per-thread || fail tui-input/hang-one-line-per-thread "$n lines"
tui_stop
out=$("$PROPEL" tui --help); [ $? -eq 0 ] && grep -q "usage: propel tui" <<<"$out" &&
	pass tui-input/help || fail tui-input/help "$out"
