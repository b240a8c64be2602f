#!/usr/bin/env bash
# tests/apps/batch-run.sh - start and stop the batch system's daemons
# (tests/apps/batch-*.c, tests/apps/batch.h) untraced, as a Condor pool
# runs before anyone submits; a submission is then `batch-submit` (under
# `propel record --follow`, which follows it into the daemons).
#
#   batch-run.sh start DIR     batch-logd, batch-startd, batch-schedd, each
#                              waited for; prints "ROLE PID" lines (also in
#                              DIR/pids), writes DIR/schedd (ADDR:PORT);
#                              the job log is DIR/job.log, the log
#                              daemon's UNIX socket DIR/logd.sock
#   batch-run.sh submit DIR N  batch-submit of N jobs, output files in
#                              DIR/out; its status
#   batch-run.sh stop DIR      SIGTERM to each daemon, then SIGKILL to any
#                              left after 2 s (a stalled startd never
#                              returns from its write); their summary lines
#
# BATCH_FAULT (perbatch|crash|stall) and BATCH_FAULT_JOB are passed on in
# the environment (tests/apps/batch.h); DIST_BIN: the programs (default:
# build/apps of this tree, or $O/apps; tests/apps/dist-run.sh).  Or source
# it and call batch_start, batch_submit, batch_stop.
_batch_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# _dist_bin (the programs: DIST_BIN, else $O/apps) and _dist_wait_ready
. "$_batch_top/tests/apps/dist-run.sh"

# _batch_daemon DIR ROLE PROGRAM ARG...: start one, print its ready line
_batch_daemon() {
	local dir=$1 role=$2 prog=$3
	shift 3
	"$(_dist_bin)/$prog" "$@" >"$dir/$role.out" 2>&1 &
	_dist_wait_ready "$dir" "$role"
}

batch_start() {
	local dir=$1 line startd
	[ -n "$dir" ] || { echo "usage: batch-run.sh start DIR" >&2; return 2; }
	mkdir -p "$dir/out" || return 1
	: >"$dir/pids"
	: >"$dir/job.log"
	line=$(_batch_daemon "$dir" logd batch-logd -l "$dir/logd.sock" \
		-f "$dir/job.log") || return 1
	echo "logd ${line##* }" >>"$dir/pids"
	line=$(_batch_daemon "$dir" startd batch-startd -l 127.0.0.1:0 \
		--log "$dir/logd.sock") || return 1
	echo "startd ${line##* }" >>"$dir/pids"
	startd=$(echo "$line" | awk '{ print $3 ":" $4 }')
	line=$(_batch_daemon "$dir" schedd batch-schedd -l 127.0.0.1:0 \
		--startd "$startd" --log "$dir/logd.sock") || return 1
	echo "schedd ${line##* }" >>"$dir/pids"
	echo "$line" | awk '{ print $3 ":" $4 }' >"$dir/schedd"
	cat "$dir/pids"
}

batch_submit() {
	"$(_dist_bin)/batch-submit" "$(cat "$1/schedd")" "$2" "$1/out"
}

batch_stop() {
	local dir=$1 role pid
	[ -f "$dir/pids" ] || { echo "batch-run: no $dir/pids" >&2; return 2; }
	awk '{ print $2 }' "$dir/pids" | xargs -r kill -TERM 2>/dev/null
	while read -r role pid; do # 2 s each at most, then SIGKILL
		timeout 2 tail --pid="$pid" -f /dev/null 2>/dev/null ||
			kill -KILL "$pid" 2>/dev/null
	done <"$dir/pids"
	for role in schedd startd logd; do
		grep -h '^batch-[a-z]*: [a-z]* [0-9]' "$dir/$role.out" | grep -v ': ready '
	done
	return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	cmd=$1
	shift
	case $cmd in
	start) batch_start "$@" ;;
	submit) batch_submit "$@" ;;
	stop) batch_stop "$@" ;;
	*)
		sed -n '2,/^_batch_top/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
fi
