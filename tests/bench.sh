#!/usr/bin/env bash
# tests/bench.sh - `make bench`: every benchmark, each figure printed beside
# the same figure for the tool a user would pick instead, measured in the
# same run, as a ratio.
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/install-deps.sh" bench || echo "propel: could not install the bench peers" >&2
export O=${O:-build}
rc=0
for b in trace real budget tui console vitals follow analysis export; do
	echo "== bench-$b"
	bash "$top/tests/bench-$b.sh" || rc=1
done
exit $rc
