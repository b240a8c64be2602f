#!/usr/bin/env bash
# tests/demo.sh - `make demo`: build the bundled demo (a worker pool that
# crashes on one rare order), record it with propel, show the end of its
# trace, and open the session in the TUI (when there is a terminal).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) ob=$O ;; *) ob=$top/$O ;; esac
PROPEL=$ob/propel
demo=$("$top/tests/demo-build.sh") || exit 1
db=$ob/demo.db
echo "== propel record -o $db -- $demo"
"$PROPEL" record -o "$db" -- "$demo"
status=$?
echo "== the demo exited with status $status (139 = SIGSEGV: the bug it carries)"
echo "== the last calls before the crash (propel replay, last 25 lines):"
"$PROPEL" replay "$db" | tail -n 25
if [ -t 0 ] && [ -t 1 ]; then
	echo "== opening the TUI (q quits, ? helps)..."
	sleep 1
	exec "$PROPEL" tui "$db"
fi
echo "== no terminal: open it yourself with  $PROPEL tui $db"
