#!/usr/bin/env bash
# tests/build-fixtures.sh - build every fixture program of
# tests/fixtures/capture/ at -O0, -O2 and -O3 into $O/fixtures/O0/,
# $O/fixtures/O2/ and $O/fixtures/O3/ (O defaults to build).  Plain builds:
# -g, no -pg, no -finstrument-functions, the distribution's default PIE;
# exactly what a user would trace.  Incremental: a target is rebuilt only
# when its source, a header of the folder (golden-wait.h) or this script is
# newer.
#
#   *.c  -> NAME (gcc),  *.cc -> NAME (g++),  *.h are shared by fixtures;
#   fixlib.c is not a program: -> libfixlib.so, which shlib and ind_got
#   link (-L dir -lfixlib, rpath $ORIGIN so the fixture runs from anywhere).
#
# ORACLE=1 builds the same programs with -fpatchable-function-entry=5 into
# $O/fixtures-oracle/ for uftrace -P . (see tests/golden/README): the NOPs
# change no call, inlining or tail-call decision, unlike -pg.
# Called by tests/e2e/golden.sh and tests/bench-trace.sh; prints nothing
# unless it fails (V=1 shows the commands).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) out=$O ;; *) out=$top/$O ;; esac
src=$top/tests/fixtures/capture
self=$top/tests/build-fixtures.sh
extra=
if [ "${ORACLE:-0}" = 1 ]; then
	out=$out/fixtures-oracle
	extra=-fpatchable-function-entry=5
else
	out=$out/fixtures
fi
CC=${CC:-gcc}
CXX=${CXX:-g++}

stale() { # stale TARGET SOURCE...
	local t=$1 s
	shift
	[ -e "$t" ] || return 0
	for s in "$@" "$self"; do
		[ "$s" -nt "$t" ] && return 0
	done
	return 1
}
run() {
	[ "${V:-0}" = 1 ] && echo "$*"
	"$@"
}

headers=("$src"/*.h)
[ -e "${headers[0]}" ] || headers=()
# level LVL: every fixture at -LVL into $out/LVL (the three levels build
# side by side)
level() {
	local lvl=$1 d f b name
	local -a flags libs dep
	d=$out/$lvl
	mkdir -p "$d"
	flags=(-$lvl -g -Wall -Wextra $extra)
	if stale "$d/libfixlib.so" "$src/fixlib.c"; then
		run "$CC" "${flags[@]}" -fPIC -shared -o "$d/libfixlib.so" "$src/fixlib.c"
	fi
	for f in "$src"/*.c "$src"/*.cc; do
		[ -e "$f" ] || continue
		b=$(basename "$f")
		name=${b%.*}
		[ "$name" = fixlib ] && continue
		libs=()
		case $name in
		threads | cb_thread | cb_static) libs=(-pthread) ;;
		shlib | ind_got) libs=(-L"$d" -lfixlib -Wl,-rpath,'$ORIGIN') ;;
		cb_nested) libs=(-Wl,-z,execstack) ;; # its nested function's trampoline
		esac
		dep=()
		[ ${#libs[@]} -gt 1 ] && dep=("$d/libfixlib.so")
		stale "$d/$name" "$f" "${headers[@]}" "${dep[@]}" || continue
		case $f in
		*.cc) run "$CXX" "${flags[@]}" -o "$d/$name" "$f" "${libs[@]}" ;;
		*) run "$CC" "${flags[@]}" -o "$d/$name" "$f" "${libs[@]}" ;;
		esac
	done
}
pids=()
for lvl in O0 O2 O3; do
	level "$lvl" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit $rc
