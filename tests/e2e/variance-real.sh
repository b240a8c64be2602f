#!/usr/bin/env bash
# tests/e2e/variance-real.sh - `report --variance` (engine/variance.c) on
# two real servers of different shape, Debian's redis-server (one event
# loop thread; a reply written in the next turn's beforeSleep, so a flow
# can hold the loop's epoll_wait) and nginx (a worker's epoll loop), each
# attached with exact timing (as --adaptive times) for 3 s under load:
#   redis/groups       the flows group into paths: a group of >= 30 flows
#   redis/waits        an event loop's readiness wait (epoll_wait, poll,
#                      select: analysis/waits.h) gets no share of any
#                      group's variance: it waits for the next request,
#                      not for this one (before: epoll_wait 89%)
#   nginx/groups       as redis/groups
#   nginx/waits        as redis/waits
#   redis/exact        attached with exact timing, the report counts no
#                      call record "dated between two stamps": records
#                      that share a stamp there were written at one moment
#                      (a return that also ends tail calls' frames), and
#                      were spread as sampled ones (32,809 on redis, 8% of
#                      an --adaptive nginx session's events)
#   nginx/exact        as redis/exact
#   redis/name         the session shows the server by the name ps shows
#                      (its main thread's comm, redis-server), not by its
#                      executable's (Debian's /usr/bin/redis-server is a
#                      symlink to redis-check-rdb: engine/session.c
#                      session_proc_name): the folded export's root frame
# Needs root (ptrace of the servers).
# propel-test: takes 40
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 7
need_root || exit 0
. "$PROPEL_TOP/tests/real/servers.sh"
"$PROPEL_TOP/tests/install-deps.sh" test >/dev/null 2>&1 ||
	echo "variance-real: tests/install-deps.sh test failed" >&2
: "${NGINX_BIN:=/usr/sbin/nginx}"
: "${REDIS_BIN:=/usr/bin/redis-server}"
NGINX_MASTER="" NGINX_WORKER="" NGINX_PORT="" NGINX_DIR=""
REDIS_PID="" REDIS_PORT="" REDIS_BENCH_PID= WRK_BG_PID=
t=$(tmpdir)
cleanup() {
	redis_bench_stop 2>/dev/null
	wrk_bg_stop
	real_cleanup
	[ -n "${VARIANCE_REAL_KEEP:-}" ] && echo "kept $t" || rm -rf "$t"
}
trap cleanup EXIT

# traced NAME PID: attach with exact timing 3 s under the load, then the
# checks (or each check failed with why)
traced() {
	sleep 0.5
	if ! "$PROPEL" attach --timing=exact -o "$t/$1.db" --duration 3 "$2" >"$t/$1.attach" 2>&1; then
		fail "$1/groups" "attach: $(tail -2 "$t/$1.attach")"
		fail "$1/waits" "attach failed"
		fail "$1/exact" "attach failed"
	elif ! "$PROPEL" report --variance --format=json "$t/$1.db" >"$t/$1.json" 2>"$t/$1.err"; then
		fail "$1/groups" "report --variance: $(head -c 200 "$t/$1.err")"
		fail "$1/waits" "report --variance failed"
		fail "$1/exact" "report --variance failed"
	else
		python3 - "$t/$1.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); name = sys.argv[2]
big = [g for g in d["groups"] if g["flows"] >= 30]
print(("PASS %s/groups" % name) if big else
      "FAIL %s/groups: no group of 30 flows: %s" % (name, [g["flows"] for g in d["groups"]][:8]))
waits = {"poll", "ppoll", "select", "pselect", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"}
bad = [(f["func"], f["share"]) for f in d["functions"] if f["func"] in waits and f["share"] > 0]
print(("PASS %s/waits" % name) if not bad else "FAIL %s/waits: %s" % (name, bad))
est = d.get("estimated_records")
print(("PASS %s/exact" % name) if est == 0 else
      "FAIL %s/exact: %s call records dated between two stamps" % (name, est))
PY
	fi
}

if redis_start "$t/redis" 2>"$t/redis.err"; then
	redis_bench_start "$t/bench.out"
	traced redis "$REDIS_PID"
	redis_bench_stop
	comm=$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)
	root=$("$PROPEL" export --format=folded "$t/redis.db" 2>&1 | head -1)
	if [ -n "$comm" ] && [[ $root == "$comm [$REDIS_PID];"* ]]; then
		pass redis/name
	else
		fail redis/name "ps says '$comm', the export's first root: ${root:0:80}"
	fi
else
	fail redis/groups "redis: $(cat "$t/redis.err")"
	fail redis/waits "redis did not start"
	fail redis/exact "redis did not start"
	fail redis/name "redis did not start"
fi
if nginx_start "$t/nginx" 2>"$t/nginx.err"; then
	wrk_bg_start "$t/wrk.out" 20
	traced nginx "$NGINX_WORKER"
	wrk_bg_stop
else
	fail nginx/groups "nginx: $(cat "$t/nginx.err")"
	fail nginx/waits "nginx did not start"
	fail nginx/exact "nginx did not start"
fi
