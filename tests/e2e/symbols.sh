#!/usr/bin/env bash
# tests/e2e/symbols.sh - function names of real recordings when the binaries
# are stripped (engine/symbols.h): the PIE tests/fixtures/symbols/names.c
# and its shared library libnames.c, recorded three times --
#   unstripped       the reference names, from .symtab;
#   stripped         .dynsym names for the library's exported functions, and
#                    module+0xOFFSET for the rest, where `addr2line -f -e
#                    <unstripped twin> 0xOFFSET` gives the reference name (so
#                    the offset is the file address, the load bias removed);
#                    never "?" or "?@...";
#   MiniDebugInfo    .gnu_debugdata (xz'd symbol table) in both files: every
#                    name as in the reference.
# The same calls are traced in each run, so the runs are compared event by
# event (replay --format=jsonl, func of each entry).
# The symbol cache (engine/symcache.h): the unstripped program's functions
# rows (name, module, declaration) and call sites the same with the cache
# off, cold, warm, and with every cache file truncated.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 6
[ -x "$PROPEL" ] || { fail symbols "no $PROPEL"; exit 1; }
for t in gcc strip objcopy nm xz addr2line sqlite3; do
	command -v $t >/dev/null || { skip symbols "$t not installed"; exit 77; }
done
fx=$PROPEL_TOP/tests/fixtures/symbols
d=$(tmpdir); trap 'rm -rf "$d"' EXIT
mkdir -p "$d/full" "$d/strip" "$d/mini"
gcc -g -O1 -shared -fPIC -o "$d/full/libnames.so" "$fx/libnames.c" &&
	gcc -g -O1 -o "$d/full/names" "$fx/names.c" -L"$d/full" -lnames -Wl,-rpath,'$ORIGIN' ||
	{ fail symbols/build "cannot build the fixture"; exit 1; }
for f in names libnames.so; do
	strip --strip-all -o "$d/strip/$f" "$d/full/$f"
	# MiniDebugInfo as distributions make it (gdb manual, "MiniDebugInfo")
	(cd "$d/mini" &&
		nm -D "../full/$f" --format=posix --defined-only | awk '{print $1}' | sort >"$f.dyn" &&
		nm "../full/$f" --format=posix --defined-only | awk '$2 == "T" || $2 == "t" {print $1}' | sort >"$f.funcs" &&
		comm -13 "$f.dyn" "$f.funcs" >"$f.keep" &&
		objcopy --only-keep-debug "../full/$f" "$f.dbg" &&
		objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$f.keep" "$f.dbg" "$f.mini" &&
		xz -f "$f.mini" && strip --strip-all -R .comment -o "$f" "../full/$f" &&
		objcopy --add-section .gnu_debugdata="$f.mini.xz" "$f" && rm -f "$f.dbg") ||
		{ fail symbols/minidebuginfo "cannot make $f"; exit 1; }
done
readelf -S "$d/strip/names" | grepq '\.symtab' && { fail symbols/strip "still has .symtab"; exit 1; }

# funcs RUN: the func of every entry, one a line
funcs() {
	"$PROPEL" record -o "$d/$1.db" -- "$d/$1/names" >"$d/$1.out" 2>"$d/$1.err" || return 1
	"$PROPEL" replay --format=jsonl "$d/$1.db" |
		sed -n 's/^{"kind":"entry".*"func":"\([^"]*\)".*/\1/p' >"$d/$1.funcs"
}
for run in full strip mini; do
	funcs $run || { fail symbols/record-$run "$(tail -2 "$d/$run.err")"; exit 1; }
done
n=$(wc -l <"$d/full.funcs")
if [ "$n" -ge 9 ] && grep -qx lib_add "$d/full.funcs" && grep -qx leaf "$d/full.funcs"; then
	pass symbols/reference-names
else
	fail symbols/reference-names "$(tr '\n' ' ' <"$d/full.funcs")"
fi

# stripped: every entry either the reference name (from .dynsym) or
# module+0xOFFSET that addr2line resolves to the reference name
bad=0 nmod=0 ndyn=0 why=
while IFS=$'\t' read -r ref got; do
	case $got in
	"$ref") ndyn=$((ndyn + 1)) ;;
	names+0x* | libnames.so+0x*)
		nmod=$((nmod + 1))
		a2l=$(addr2line -f -e "$d/full/${got%%+0x*}" "${got#*+}" | head -1)
		[ "$a2l" = "$ref" ] || { bad=$((bad + 1)); why="$got: addr2line says $a2l, want $ref"; } ;;
	*) bad=$((bad + 1)); why="$got (want $ref or module+0xOFFSET)" ;;
	esac
done < <(paste "$d/full.funcs" "$d/strip.funcs")
if [ "$(wc -l <"$d/strip.funcs")" -eq "$n" ] && [ $bad -eq 0 ] && [ $nmod -ge 6 ] && [ $ndyn -ge 2 ]; then
	pass symbols/stripped-module-offset-agrees-with-addr2line
else
	fail symbols/stripped-module-offset-agrees-with-addr2line "$bad bad ($why), $nmod module+0x, $ndyn named"
fi
grep -qx 'lib_sum' "$d/strip.funcs" && pass symbols/stripped-dynsym-names ||
	fail symbols/stripped-dynsym-names "$(tr '\n' ' ' <"$d/strip.funcs")"
if ! "$PROPEL" replay "$d/strip.db" | grepq '?' &&
   ! "$PROPEL" replay --format=jsonl "$d/strip.db" | grepq '"func":"?'; then
	pass symbols/stripped-never-question-mark
else
	fail symbols/stripped-never-question-mark "$("$PROPEL" replay "$d/strip.db" | grep '?' | head -2)"
fi

# MiniDebugInfo: the reference names
if diff -q "$d/full.funcs" "$d/mini.funcs" >/dev/null; then
	pass symbols/minidebuginfo-names
else
	fail symbols/minidebuginfo-names "$(diff "$d/full.funcs" "$d/mini.funcs" | head -4 | tr '\n' ' ')"
fi

# the symbol cache: the same rows off, cold, warm, over corrupt files
rows() { # rows CACHE NAME: the session's names and lines
	PROPEL_SYMBOL_CACHE=$1 "$PROPEL" record -o "$d/$2.db" -- "$d/full/names" \
		>/dev/null 2>"$d/$2.err" || return 1
	sqlite3 "$d/$2.db" "SELECT name, replace(module, '$d', ''), file, line
		FROM functions ORDER BY addr - (SELECT min(addr) FROM functions f2
		WHERE f2.module = functions.module), module;
		SELECT file, line FROM callsites ORDER BY id" >"$d/$2.rows"
}
why=
rows off c-off && rows "$d/sc" c-cold && rows "$d/sc" c-warm || why="record failed: $(tail -2 "$d"/c-*.err)"
nsc=$(ls "$d/sc" 2>/dev/null | grep -c '\.sym$')
for f in "$d"/sc/*.sym; do [ -f "$f" ] && truncate -s 100 "$f"; done
[ -z "$why" ] && { rows "$d/sc" c-bad || why="record over truncated files failed: $(tail -2 "$d/c-bad.err")"; }
for r in c-cold c-warm c-bad; do
	[ -z "$why" ] && ! cmp -s "$d/c-off.rows" "$d/$r.rows" &&
		why="$r differs from off: $(diff "$d/c-off.rows" "$d/$r.rows" | head -3 | tr '\n' ' ')"
done
[ -z "$why" ] && { [ "$nsc" -ge 2 ] && grepq '^main|/full/names|.*/names\.c|[0-9]' "$d/c-off.rows" &&
	grepq '^read|.*libc\.so\.6|' "$d/c-off.rows" ||
	why="$nsc cache files; rows: $(head -3 "$d/c-off.rows" | tr '\n' ' ')"; }
[ -z "$why" ] && pass symbols/cache-same-rows || fail symbols/cache-same-rows "$why"
