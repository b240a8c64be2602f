#!/usr/bin/env bash
# tests/demo.sh - `make demo`: the batch system of tests/apps/batch-*.c
# (shaped like the Condor case of the self-propelled paper) with a fault:
# the shadow of job 2 crashes right after writing its completion record,
# so the scheduler runs the job twice.  The daemons start untraced; the
# submission runs under `propel record --follow --start queue_job`, which
# follows it into the scheduler, the execution daemon, the log daemon and
# every child; then the ranked flows and root-cause paths (propel report),
# and the TUI, which opens a failed run on its suspects (when there is a
# terminal).  A good run first serves as the reference (--reference), as
# in the paper.  DEMO_FAULT=perbatch|crash|stall picks another fault.
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
export O
ok=$ob/demo-ok.db
rm -rf "$dir" "$db" "$ok"
# run FAULT DB: the daemons, one submission of 5 jobs followed, the job log
run() {
	BATCH_FAULT=$1 "$run" start "$dir" >/dev/null || exit 1
	trap '"$run" stop "$dir" >/dev/null 2>&1' EXIT
	echo "== BATCH_FAULT=$1: propel record --follow --start queue_job -o $2 -- batch-submit"
	BATCH_FAULT=$1 "$PROPEL" record --follow --start queue_job -o "$2" -- \
		"$ob/apps/batch-submit" "$(cat "$dir/schedd")" 5 "$dir/out" 2>&1 |
		grep -v '^propel: vm: traced pid'
	"$run" stop "$dir" >/dev/null 2>&1
	trap - EXIT
	echo "== the job log:"
	cat "$dir/job.log"
	rm -rf "$dir"
}
run none "$ok"
run "$fault" "$db"
echo "== propel report --suspects $db   (unsupervised: the first job's extra work stands out too)"
"$PROPEL" report --suspects "$db"
echo "== propel report --suspects --reference $ok $db   (a good run as reference, as in the paper's §5.2)"
"$PROPEL" report --suspects --reference "$ok" "$db" | grep -v -e '^fail-stop' -e '^  stack:'
echo "== propel report --rootcause $db"
"$PROPEL" report --rootcause "$db" | head -n 15
if [ -t 0 ] && [ -t 1 ]; then
	echo "== opening the TUI on the ranked flows (q quits, ? helps)..."
	sleep 1
	exec "$PROPEL" tui "$db"
fi
echo "== no terminal: open it yourself with  $PROPEL tui $db"
