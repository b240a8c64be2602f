#!/usr/bin/env bash
# tests/demo-build.sh - build the bundled demo program (tests/apps/demo/demo.c)
# into $O/demo/demo (O defaults to build), -O2 -g -fno-inline so every
# pipeline stage stays a visible call.  Incremental; prints the binary's path.
# Called by tests/demo.sh (make demo).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) out=$O/demo ;; *) out=$top/$O/demo ;; esac
src=$top/tests/apps/demo/demo.c
mkdir -p "$out"
if [ ! -x "$out/demo" ] || [ "$src" -nt "$out/demo" ] || [ "$0" -nt "$out/demo" ]; then
	${CC:-gcc} -O2 -g -fno-inline -Wall -Wextra -pthread -o "$out/demo" "$src"
fi
echo "$out/demo"
