#!/usr/bin/env bash
# tests/e2e/tui-shlib.sh - a fault inside a shared library, on a real
# recording (tests/fixtures/symbols/names.c calling libnames.c, both PIC,
# each at its own load bias), in the TUI under tmux at 80x24: it opens at
# the library's faulting line with the status line naming lib_crash; one F
# lands in main at the line that calls lib_crash; with the library's source
# gone, the disassembly of lib_crash comes from the library (not the
# executable) and marks the faulting instruction.
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 3
command -v tmux >/dev/null || { skip tui-shlib "tmux not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail tui-shlib "no $PROPEL"; exit 1; }
fx=$PROPEL_TOP/tests/fixtures/symbols
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
cp "$fx/names.c" "$fx/libnames.c" "$d/"
(cd "$d" && gcc -g -O1 -shared -fPIC -o libnames.so libnames.c &&
	gcc -g -O1 -o names names.c -L. -lnames -Wl,-rpath,'$ORIGIN') ||
	{ fail tui-shlib/build "cannot build the fixture"; exit 1; }
fault=$(grep -n '@fault' "$fx/libnames.c" | cut -d: -f1)
call=$(grep -n '@call:lib_crash' "$fx/names.c" | cut -d: -f1)
"$PROPEL" record -o "$d/s.db" -- "$d/names" crash >"$d/out" 2>"$d/err"
rc=$?
[ $rc -eq 139 ] || { fail tui-shlib/record "status $rc: $(tail -2 "$d/err")"; exit 1; }

tui_start 80 24 "$PROPEL" tui "$d/s.db"
if tui_wait_for "[fault]" 10 && tui_status | grepq "  lib_crash  libnames.c:$fault  event" &&
   tui_screen | grepq "^ *$fault>.*return \*p + 1"; then
	pass tui-shlib/80x24/fault-line-in-library
else
	fail tui-shlib/80x24/fault-line-in-library "$(tui_screen | tr '\n' '|')"
fi
tui_keys F
if tui_status | grepq "  main  names.c:$call  event" &&
   tui_screen | grepq "^ *$call>.*lib_crash(NULL)"; then
	pass tui-shlib/80x24/F-lands-in-main-at-call-line
else
	fail tui-shlib/80x24/F-lands-in-main-at-call-line "$(tui_status)"
fi
tui_stop

# the library's source gone: disassembly from libnames.so, fault marked
addr=$(objdump --dwarf=decodedline "$d/libnames.so" |
	awk -v l="$fault" '$1=="libnames.c" && $2==l {print $3; exit}')
rm "$d/libnames.c"
tui_start 80 24 "$PROPEL" tui "$d/s.db"
tui_wait_for "[fault]" 10
if tui_screen | grepq "source not found: .*libnames.c:$fault" &&
   tui_screen | grepq "lib_crash: 0x" &&
   tmx capture-pane -e -p -t t | grep "$addr:" | grepq $'\e\[[0-9;]*7m'; then
	pass tui-shlib/80x24/disassembly-from-library-marks-fault
else
	fail tui-shlib/80x24/disassembly-from-library-marks-fault "addr $addr: $(tui_screen | head -8 | tr '\n' '|')"
fi
tui_stop
