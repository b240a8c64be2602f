#!/usr/bin/env bash
# tests/apps/dist-run.sh - start, drive and stop the distributed scenario
# (tests/apps/dist-*.c) untraced, on one host or across network namespaces.
#
#   dist-run.sh start DIR           logger, monitor, back end, front end (and
#                                   its child) as daemons; waits until each
#                                   listens; prints "ROLE PID" lines (also in
#                                   DIR/pids) and writes DIR/front (ADDR:PORT)
#   dist-run.sh client DIR [ARG...] one client against the front end
#                                   (dist-client's options: -n N --first SEQ
#                                   --stop --corrupt SEQ); its status
#   dist-run.sh stop DIR            SIGTERM to every daemon still running,
#                                   wait for each; prints their summary lines
#                                   (DIR/ROLE.out); status 1 if one failed
#
# Or source it and call dist_start / dist_client / dist_stop with the same
# arguments.  A client's --stop stops every daemon by itself (the front end
# passes the stop on); `stop` then only collects what they printed.
#
# Where each program runs (a per-host command prefix, e.g. "ip netns exec
# hostB"; empty = here) and the address it listens on or is reached at:
#   DIST_PREFIX_CLIENT   DIST_PREFIX_FRONT (also the logger: it is local to
#   the front end, over a UNIX socket)   DIST_PREFIX_BACK   DIST_PREFIX_MONITOR
#   DIST_FRONT_ADDR DIST_BACK_ADDR DIST_MONITOR_ADDR    (default 127.0.0.1)
#   DIST_FRONT_PORT DIST_BACK_PORT DIST_MONITOR_PORT    (default 0: picked)
#   DIST_FRONT_ARGS      more options for dist-front (e.g. --corrupt 2)
#   DIST_BIN             the programs (default: build/apps of this tree, or
#                        $O/apps)
# Each daemon's stdout and stderr go to DIR/ROLE.out.
_dist_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

_dist_bin() {
	local o=${O:-build}
	case $o in /*) ;; *) o=$_dist_top/$o ;; esac
	echo "${DIST_BIN:-$o/apps}"
}

# _dist_wait_ready DIR ROLE: the ready line of DIR/ROLE.out, within 10 s
_dist_wait_ready() {
	local i line
	for ((i = 0; i < 200; i++)); do
		line=$(grep -m1 ': ready ' "$1/$2.out" 2>/dev/null) &&
			{ echo "$line"; return 0; }
		sleep 0.05
	done
	echo "dist-run: $2 did not start: $(head -c 300 "$1/$2.out" 2>/dev/null)" >&2
	return 1
}

# _dist_daemon DIR ROLE PREFIX PROGRAM ARG...: start one, print its ready line
_dist_daemon() {
	local dir=$1 role=$2 prefix=$3 prog=$4
	shift 4
	# shellcheck disable=SC2086 # the prefix is words
	$prefix "$(_dist_bin)/$prog" "$@" >"$dir/$role.out" 2>&1 &
	_dist_wait_ready "$dir" "$role"
}

dist_start() {
	local dir=$1 line port fa=${DIST_FRONT_ADDR:-127.0.0.1}
	local ba=${DIST_BACK_ADDR:-127.0.0.1} ma=${DIST_MONITOR_ADDR:-127.0.0.1}
	local back mon pid child
	[ -n "$dir" ] || { echo "usage: dist-run.sh start DIR" >&2; return 2; }
	mkdir -p "$dir" || return 1
	: >"$dir/pids"
	line=$(_dist_daemon "$dir" logger "${DIST_PREFIX_FRONT:-}" dist-logger \
		"$dir/log.sock") || return 1
	echo "logger $(echo "$line" | awk '{print $5}')" >>"$dir/pids"
	line=$(_dist_daemon "$dir" monitor "${DIST_PREFIX_MONITOR:-}" dist-monitor \
		-l "$ma:${DIST_MONITOR_PORT:-0}") || return 1
	read -r _ _ _ port _ pid <<<"$line"
	mon=$ma:$port
	echo "monitor $pid" >>"$dir/pids"
	line=$(_dist_daemon "$dir" back "${DIST_PREFIX_BACK:-}" dist-back \
		-l "$ba:${DIST_BACK_PORT:-0}") || return 1
	read -r _ _ _ port _ pid <<<"$line"
	back=$ba:$port
	echo "back $pid" >>"$dir/pids"
	# shellcheck disable=SC2086 # more options are words
	line=$(_dist_daemon "$dir" front "${DIST_PREFIX_FRONT:-}" dist-front \
		-l "$fa:${DIST_FRONT_PORT:-0}" --back "$back" --log "$dir/log.sock" \
		--monitor "$mon" ${DIST_FRONT_ARGS:-}) || return 1
	read -r _ _ _ port _ pid _ child <<<"$line"
	echo "$fa:$port" >"$dir/front"
	echo "front $pid" >>"$dir/pids"
	echo "child $child" >>"$dir/pids"
	cat "$dir/pids"
}

dist_client() {
	local dir=$1
	shift
	# shellcheck disable=SC2086 # the prefix is words
	${DIST_PREFIX_CLIENT:-} "$(_dist_bin)/dist-client" "$(cat "$dir/front")" "$@"
}

dist_stop() {
	local dir=$1 role pid i bad=0 alive
	[ -f "$dir/pids" ] || { echo "dist-run: no $dir/pids" >&2; return 2; }
	# the front end first, and gone before the others are told: what it
	# sent to the back end, the logger and the monitor is theirs to count
	# (all at once, a loaded machine could stop the monitor before it
	# read the front end's last heartbeats)
	pid=$(awk '$1 == "front" { print $2 }' "$dir/pids")
	if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
		for ((i = 0; i < 200; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
	fi
	while read -r role pid; do
		case $role in child | front) continue ;; esac # (the child stops with the front end)
		kill -TERM "$pid" 2>/dev/null
	done <"$dir/pids"
	for ((i = 0; i < 200; i++)); do
		alive=0
		while read -r role pid; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done <"$dir/pids"
		[ $alive = 0 ] && break
		sleep 0.05
	done
	for role in front back logger monitor; do
		grep -h '^dist-[a-z]*: [a-z]* [0-9]' "$dir/$role.out" | grep -v ': ready '
		grep -q ' ok$' "$dir/$role.out" || bad=1
	done
	[ $alive = 0 ] || { echo "dist-run: daemons still running" >&2; bad=1; }
	return $bad
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	cmd=$1
	shift
	case $cmd in
	start) dist_start "$@" ;;
	client) dist_client "$@" ;;
	stop) dist_stop "$@" ;;
	*)
		sed -n '2,/^_dist_top/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
fi
