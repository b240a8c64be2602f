#!/usr/bin/env bash
# tests/demo.sh - `make demo`: the batch system of tests/apps/batch-*.c
# (shaped like the Condor case of the self-propelled paper) with a fault:
# the shadow of job 2 crashes right after writing its completion record,
# so the scheduler runs the job twice.  The daemons start untraced; the
# submission runs under `propel record --follow --start queue_job`, which
# follows it into the scheduler, the execution daemon, the log daemon and
# every child; then the ranked flows and root-cause paths (propel report),
# and the TUI, which opens a failed run on its suspects (when there is a
# terminal).  DEMO_FAULT=perbatch|crash|stall picks another fault.
# The single-program demo (tests/apps/demo/demo.c) is tests/demo-build.sh.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) ob=$O ;; *) ob=$top/$O ;; esac
PROPEL=$ob/propel
run=$top/tests/apps/batch-run.sh
fault=${DEMO_FAULT:-crash}
dir=$ob/demo-batch
db=$ob/demo.db
export O BATCH_FAULT=$fault
rm -rf "$dir" "$db"
echo "== the daemons (BATCH_FAULT=$fault): batch-logd, batch-startd, batch-schedd"
"$run" start "$dir" || exit 1
trap '"$run" stop "$dir" >/dev/null 2>&1' EXIT
echo "== propel record --follow --start queue_job -o $db -- batch-submit (5 jobs)"
"$PROPEL" record --follow --start queue_job -o "$db" -- \
	"$ob/apps/batch-submit" "$(cat "$dir/schedd")" 5 "$dir/out"
echo "== the job log ($dir/job.log):"
"$run" stop "$dir" >/dev/null 2>&1
trap - EXIT
cat "$dir/job.log"
echo "== propel report --suspects $db"
"$PROPEL" report --suspects "$db"
echo "== propel report --rootcause $db (first 12 paths)"
"$PROPEL" report --rootcause "$db" | head -n 15
if [ -t 0 ] && [ -t 1 ]; then
	echo "== opening the TUI on the ranked flows (q quits, ? helps)..."
	sleep 1
	exec "$PROPEL" tui "$db"
fi
echo "== no terminal: open it yourself with  $PROPEL tui $db"
