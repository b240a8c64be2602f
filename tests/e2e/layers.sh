#!/usr/bin/env bash
# tests/e2e/layers.sh - the layers point one way (DESIGN.md): `make
# check-layers` passes on the tree (no file under inject/ includes an
# engine/ or tui/ header) and fails, naming the file, on a copy of inject/
# given one such include.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 3
root=$(cd "$(dirname "$0")/../.." && pwd)
t=$(tmpdir)
trap 'rm -rf "$t"' EXIT

check layers-tree make -s -C "$root" --no-print-directory check-layers

mkdir -p "$t/inject/agent"
cp "$root"/inject/*.[ch] "$t/inject/"
printf '#include "engine/session.h"\n' >"$t/inject/agent/bad.c"
out=$(make -s -C "$root" --no-print-directory check-layers LAYERS_ROOT="$t" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then pass layers-bad-fails; else fail layers-bad-fails "exit 0"; fi
if grepq 'inject/agent/bad.c:1:' <<<"$out"; then
	pass layers-bad-named
else
	fail layers-bad-named "got: $out"
fi
