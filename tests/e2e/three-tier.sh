#!/usr/bin/env bash
# tests/e2e/three-tier.sh - diagnosis on a real three-tier stack propel was
# not built beside: Debian's nginx (one worker, proxy_pass to a keep-alive
# upstream of two servers) in front of tests/apps/tier-backend.c (a worker
# process per port, HTTP/1.1 keep-alive, RESP by hand) in front of Debian's
# redis-server, all on free ports of 127.0.0.1.  For each fault of the
# backend (TIER_FAULT) a fresh stack runs under wrk (GET /item/7, 4
# connections), `propel attach --follow --duration 8` is given nginx's
# worker alone (no --start): it follows nginx into the backend and redis.
# crash and hang are armed 3.5 s into the attach (TIER_FAULT_FILE); slow
# takes one /item request in 20 of each worker (>= 5 ms deep below
# render_item_slow).  Every check reads the JSON of `propel report`:
#
#   FAULT/flows      >= 90% of the requests nginx read from wrk's
#                    connections in the window (its recvs on them: wrk
#                    writes each request in one call) start a flow of
#                    their own that holds nginx, a backend worker and redis
#   FAULT/first      the faulty flow ranks first in --suspects (slow:
#                    --profile composite, a performance problem, with
#                    --reference a session of the same stack and load
#                    with no fault, both attached with --vitals, so that
#                    a request whose nginx waited 50 ms for a CPU is not
#                    slow; the others the default coverage,
#                    alone): slow and
#                    crash: the default --rootcause takes the top flow
#                    (and for crash the flow of the crashed worker's last
#                    event) and its delta holds the faulty function; hang:
#                    --suspects --by process ranks the worker that took the
#                    fault first, and `report --hang` names it as the head
#                    of the first chain, waited on by nginx (text and JSON)
#   FAULT/rootcause  the default --rootcause: a path through the faulty
#                    function (render_item_slow, item_cache_store,
#                    redis_await_async) within the first five by time
#   FAULT/requests   no request failed beyond the injected fault: wrk
#                    counts no error and no non-2xx response, nginx's
#                    access log no non-200 status (but the 499s of the
#                    requests in flight on wrk's connections when it
#                    stops, its last lines), the backend's workers no
#                    redis error (a crash, or a hang past nginx's 5 s read
#                    timeout, is retried on the other upstream server by
#                    nginx: proxy_next_upstream; 5 s, not less: on this
#                    loaded 2-core machine an injection can pause a worker
#                    for a second, and a server that failed once is left
#                    out for 60 s)
#   hang/tui         `propel tui` on the hang's session, `:view flows`
#                    (tmux, 200x40): the chain above the flows (its rows
#                    joined) names the worker that took the fault, in read()
#   FAULT/unharmed   after the detach: nginx, the backend and redis answer
#                    (GET /item/7 through nginx twice, redis PING), their
#                    pids alive, none traced (TracerPid 0), no nginx worker
#                    died, the backend's only death the injected crash
#
# The stacks run two at a time (the reference and crash first, then hang
# and slow as places free, slow once the reference is done): every check
# above held so on this 2-core machine under a load average of 15 (163 s
# instead of 303 s, the same run).
# propel-test: takes 170
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/real/servers.sh"
. "$PROPEL_TOP/tests/fixtures/tui/tui-lib.sh"
faults=(slow crash hang)
# THREE_TIER_FAULTS="hang": only those (a look at one; the count follows);
# THREE_TIER_KEEP=DIR: the sessions and logs are copied there (a run with
# a failed check keeps its sessions in /tmp/three-tier-failed anyway)
[ -n "${THREE_TIER_FAULTS:-}" ] && read -ra faults <<<"$THREE_TIER_FAULTS"
expect_checks $((5 * ${#faults[@]}))
[[ " ${faults[*]} " == *" hang "* ]] && expect_checks 1
t=$(tmpdir)
BACKEND_MASTER=
WRK_PID=
ATTACH_PID=
stack_stop() {
	[ -n "$WRK_PID" ] && { kill "$WRK_PID" 2>/dev/null; wait "$WRK_PID" 2>/dev/null; }
	WRK_PID=
	[ -n "$ATTACH_PID" ] && { kill -INT "$ATTACH_PID" 2>/dev/null; wait "$ATTACH_PID" 2>/dev/null; }
	ATTACH_PID=
	if [ -n "$BACKEND_MASTER" ]; then
		kill "$BACKEND_MASTER" 2>/dev/null
		for ((i = 0; i < 60; i++)); do kill -0 "$BACKEND_MASTER" 2>/dev/null || break; sleep 0.05; done
		# a hung worker ends on SIGTERM too (its read is not restarted)
		awk '$1 == "worker" { print $3 }' "$BACKEND_DIR/pids" 2>/dev/null |
			while read -r p; do kill -9 "$p" 2>/dev/null; done
		kill -9 "$BACKEND_MASTER" 2>/dev/null
		wait "$BACKEND_MASTER" 2>/dev/null
	fi
	BACKEND_MASTER=
	real_cleanup
}
# a failed check keeps the sessions (without the stacks' logs) for a look,
# in /tmp/three-tier-failed (the last failing run's; said on the line)
keep_failed() {
	grep -q '^FAIL' "$t"/*.out 2>/dev/null || return 0
	rm -rf /tmp/three-tier-failed && mkdir -p /tmp/three-tier-failed &&
		cp "$t"/*.db "$t"/*.out /tmp/three-tier-failed/ 2>/dev/null
	echo "three-tier: sessions of the failed run kept in /tmp/three-tier-failed"
}
trap 'tui_stop; stack_stop; keep_failed; [ -n "${THREE_TIER_KEEP:-}" ] && cp -r "$t"/. "$THREE_TIER_KEEP"/; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1

pytest() { # FILE EXPR [ARG...]: EXPR over the JSON j of FILE
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); a=sys.argv[3:]; sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"
}

# stack_start DIR FAULT: redis, the backend (two workers), nginx in front
stack_start() {
	local d=$1 fault=$2 p1
	BACKEND_DIR=$d/backend
	mkdir -p "$d/nginx" "$BACKEND_DIR"
	redis_start "$d/redis" || return 1
	redis-cli -p "$REDIS_PORT" set item:7 "a cup of tea" >/dev/null || return 1
	p1=$(free_port 2) || return 1
	BACKEND_PORTS="$p1,$((p1 + 1))"
	TIER_FAULT=$fault TIER_FAULT_FILE=$d/arm setsid "$PROPEL_TOP/$O/apps/tier-backend" \
		-l "$BACKEND_PORTS" -r "$REDIS_PORT" -P "$BACKEND_DIR/pids" \
		>"$BACKEND_DIR/out" 2>"$BACKEND_DIR/err" &
	BACKEND_MASTER=$!
	real_wait_port "$p1" && real_wait_port $((p1 + 1)) || return 1
	NGINX_PORT=$(real_port)
	NGINX_DIR=$d/nginx
	mkdir -p "$d/nginx/tmp"
	{
		nginx_conf_head "$d/nginx"
		cat <<EOF
	log_format tier '\$status \$upstream_addr \$upstream_status';
	access_log $d/nginx/access.log tier;
	upstream backend {
		server 127.0.0.1:$p1 max_fails=1 fail_timeout=60s;
		server 127.0.0.1:$((p1 + 1)) max_fails=1 fail_timeout=60s;
		keepalive 16;
	}
	server {
		listen 127.0.0.1:$NGINX_PORT;
		location / {
			proxy_pass http://backend;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_read_timeout 5s;
			proxy_next_upstream error timeout;
		}
	}
}
EOF
	} >"$d/nginx/nginx.conf"
	nginx_run "$d/nginx"
}

get_item() { # OUT: GET /item/7 through nginx, 200 and the value (the
	# slow path's answer, 1 in 20 under TIER_FAULT=slow, adds its checksum)
	python3 - "http://127.0.0.1:$NGINX_PORT/item/7" "$1" <<'EOF'
import re, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    body = r.read()
    open(sys.argv[2], "wb").write(body)
    ok = re.fullmatch(rb"item 7: a cup of tea( \([0-9a-f]{1,16}\))?", body)
    sys.exit(0 if r.status == 200 and ok else 1)
EOF
}

traced_by() { awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# flows_own DB FLOWS JSONL: the share of nginx's client requests (its recvs
# on wrk's connections, chan naming nginx's port) that start a flow holding
# nginx, a backend worker and redis; "N of M" on stderr
flows_own() {
	python3 - "$2" "$3" "$NGINX_WORKER" "$NGINX_PORT" "$REDIS_PID" "$BACKEND_DIR/pids" <<'EOF'
import json, sys
flows = json.load(open(sys.argv[1]))["flows"]
ngx, port, redis = int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
workers = {int(l.split()[2]) for l in open(sys.argv[6]) if l.startswith("worker ")}
reqs = set()
for line in open(sys.argv[2]):
    # (a line of another kind is not parsed: 1 in 250 is a recv, and
    # json.loads of the 1M others took 4 of the check's 4.5 s)
    if '"kind":"recv"' not in line:
        continue
    e = json.loads(line)
    if e["kind"] == "recv" and e["pid"] == ngx and e.get("bytes", 0) > 0:
        ends = e.get("chan", "")[4:].split(">")
        if any(x.endswith(":" + port) for x in ends):
            reqs.add((e["pid"], e["tid"], e["ts_ns"]))
own = 0
for f in flows:
    s = f["start"]
    if (s["pid"], s["tid"], s["ts_ns"]) in reqs and ngx in f["pids"] and \
            redis in f["pids"] and workers & set(f["pids"]):
        own += 1
print("%d of %d requests (%d flows)" % (own, len(reqs), len(flows)), file=sys.stderr)
print("%.4f" % (own / len(reqs) if reqs else 0))
EOF
}

# a path holding FUNC among the first five by time (rootcause JSON)
rc_has() { # FILE FUNC
	pytest "$1" "any(a[0] in [f.split('.')[0] for f in p['path'] + p['merged_last']] for p in sorted(j['paths'], key=lambda p: p['rank_time'])[:5])" "$2"
}

faulty_func() {
	case $1 in
	slow) echo render_item_slow ;;
	crash) echo item_cache_store ;;
	hang) echo redis_await_async ;;
	esac
}

# load_attach DIR DB FAULT: wrk through the stack for 14 s, and 1 s into it
# propel attach --follow to nginx's worker for 8 s; crash and hang are
# armed 4.5 s into the attach
load_attach() {
	local d=$1 db=$2 f=$3 vitals=()
	# slow, a performance problem, and its reference: --vitals, as an
	# operator diagnosing latency on a loaded host runs it (the time a
	# thread waited for a CPU is the host's, not the request's: README
	# "Diagnosis"); crash and hang, a change of control flow, without
	[ "$f" = slow ] || [ "$f" = none ] && vitals=(--vitals)
	# wrk stands for clients on other machines: it runs under a tracer of
	# its own (strace, its seccomp filter stopping no system call), so
	# propel's --follow may not inject it and says so in one line
	TIER_WRK_REPORT=$REAL_DIR/wrk-report.lua timeout -k 5 60 \
		strace -f --seccomp-bpf -e trace=none -e signal=none -qq -o /dev/null \
		wrk -t1 -c4 -d14s --timeout 10s -s "$PROPEL_TOP/tests/apps/tier-wrk.lua" \
		"http://127.0.0.1:$NGINX_PORT/item/7" >"$d/wrk.out" 2>&1 &
	WRK_PID=$!
	sleep 1
	timeout -k 5 90 "$PROPEL" attach --follow "${vitals[@]}" --mode full --duration 8 -o "$db" "$NGINX_WORKER" \
		>"$d/attach.out" 2>"$d/attach.err" &
	ATTACH_PID=$!
	if [ "$f" != slow ] && [ "$f" != none ]; then
		sleep 4.5
		: >"$d/arm"
	fi
	wait "$ATTACH_PID"
	echo "attach status $? $(grep -c . "$d/attach.err") lines on stderr" >"$d/attach.rc"
	ATTACH_PID=
	wait "$WRK_PID"
	WRK_PID=
}

# reference DIR: a session of the stack with no fault (the same load and
# attach), the known-good run the slow fault is compared with
reference() {
	local d=$1
	mkdir -p "$d"
	stack_start "$d" none 2>"$d/start.err" || { stack_stop; return 1; }
	load_attach "$d" "$d.db" none
	stack_stop
	[ -s "$d.db" ]
}

run_fault() {
	local f=$1 d=$t/$1 db=$t/$1.db why= ok fn taker rate errs prof
	fn=$(faulty_func "$f")
	mkdir -p "$d"
	if [ "$f" = slow ] && ! [ -e "$t/ref.ok" ]; then
		for c in flows first rootcause requests unharmed; do
			fail "$f/$c" "the reference stack did not run: $(head -c 300 "$t/ref/start.err") $(tail -n 2 "$t/ref/attach.err" 2>/dev/null)"
		done
		return
	fi
	if ! stack_start "$d" "$f" 2>"$d/start.err"; then
		for c in flows first rootcause requests unharmed; do
			fail "$f/$c" "the stack did not start: $(head -c 300 "$d/start.err") $(tail -n 3 "$d"/nginx/error.log 2>/dev/null)"
		done
		stack_stop
		return
	fi
	echo "$f: nginx worker $NGINX_WORKER :$NGINX_PORT, backend $BACKEND_MASTER :$BACKEND_PORTS ($(awk '$1 == "worker" { printf "%s ", $3 }' "$BACKEND_DIR/pids")), redis $REDIS_PID :$REDIS_PORT"
	load_attach "$d" "$db" "$f"
	taker=$(head -1 "$d/arm.taken" 2>/dev/null)
	[ "$f" = slow ] || echo "$f: worker $taker took the fault"

	"$PROPEL" report --flows --format=json "$db" >"$d/flows.json" 2>"$d/flows.err"
	"$PROPEL" replay --format=jsonl "$db" >"$d/replay.jsonl" 2>/dev/null
	# a slow path is a performance problem: the composite profile (time
	# and bytes), as self-propelled §4 says, against a known-good run of
	# the same stack (§5.2, Fig. 6b: the normal variations a run holds --
	# redis's timers, a new upstream connection -- are in it too); crash
	# and hang, a change of control flow, the default coverage, alone
	prof=()
	[ "$f" = slow ] && prof=(--profile composite --reference "$t/ref.db")
	"$PROPEL" report --suspects "${prof[@]}" --format=json "$db" >"$d/suspects.json" 2>"$d/suspects.err"
	"$PROPEL" report --suspects --by process --format=json "$db" >"$d/suspects-p.json" 2>/dev/null
	"$PROPEL" report --rootcause "${prof[@]}" --format=json "$db" >"$d/rc.json" 2>"$d/rc.err"
	"$PROPEL" report --hang --format=json "$db" >"$d/hang.json" 2>"$d/hang.err"
	"$PROPEL" report --hang "$db" >"$d/hang.txt" 2>&1

	# flows
	rate=$(flows_own "$db" "$d/flows.json" "$d/replay.jsonl" 2>"$d/flows.rate")
	echo "$f: flows: $(cat "$d/flows.rate")"
	num_ge "$f/flows" "$rate" 0.90 "share of requests with a flow of their own through nginx, backend and redis ($(cat "$d/flows.rate"); $(cat "$d/attach.rc"))"

	# first
	ok=0
	case $f in
	slow)
		pytest "$d/rc.json" "j['anomalous'] == json.load(open(a[0]))['scores'][0]['id']" "$d/suspects.json" &&
			rc_has "$d/rc.json" "$fn" && ok=1
		why="top flow $(pytest "$d/suspects.json" "print(j['scores'][:3]) or True") rootcause anomalous $(head -c 60 "$d/rc.json")"
		;;
	crash)
		# the flow of the crashed worker's last event, ranked first
		pytest "$d/suspects.json" "j['scores'][0]['id'] == json.load(open(a[0]))['anomalous'] and $taker in [f['pids'] for f in json.load(open(a[1]))['flows']][j['scores'][0]['id'] - 1]" \
			"$d/rc.json" "$d/flows.json" && rc_has "$d/rc.json" "$fn" && ok=1
		why="taker $taker; $(head -c 400 "$d/suspects.json")"
		;;
	hang)
		pytest "$d/suspects-p.json" "j['scores'][0]['pid'] == $taker" &&
			pytest "$d/hang.json" "j['chains'] and j['chains'][0]['head'] == $taker and any(m['pid'] == $NGINX_WORKER for m in j['chains'][0]['members'])" &&
			grepq -E "^hang 1: .*, which is in [a-z_]+\(\) since " "$d/hang.txt" && ok=1
		why="taker $taker; $(head -c 300 "$d/suspects-p.json"); $(head -c 600 "$d/hang.txt")"
		;;
	esac
	[ $ok = 1 ] && pass "$f/first" || fail "$f/first" "$why"
	[ "$f" = hang ] && head -3 "$d/hang.txt" | sed 's/^/  /'

	# rootcause
	if rc_has "$d/rc.json" "$fn"; then
		pass "$f/rootcause"
	else
		fail "$f/rootcause" "no path through $fn in the first five: $(head -c 900 "$d/rc.json") $(head -c 200 "$d/rc.err")"
	fi

	if [ "$f" = hang ] && ! command -v tmux >/dev/null; then
		skip hang/tui "tmux not installed"
	elif [ "$f" = hang ]; then
		tui_start 200 40 "$PROPEL" tui "$db"
		tui_wait_for "? for help" 60
		tui_cmd view flows
		if tui_wait_for "hang: " 120 &&
			tui_screen | awk -F'│' '{ sub(/^      /, "", $NF); printf "%s", $NF }' |
			grepq -E "hang: .*tier-backend ?$taker, which is in read\(\) since"; then
			pass hang/tui
		else
			fail hang/tui "$(tui_screen | head -8 | tr '\n' '|')"
		fi
		tui_stop
	fi

	# requests
	errs=$(wrk_errors "$d/wrk.out")
	# wrk stops at its duration with a request in flight on each of its 4
	# connections: nginx logs those 499 (client closed) as its last lines;
	# a 499 before them, or any other status, is a failed request
	bad=$(awk -v n="$(grep -c . "$d/nginx/access.log" 2>/dev/null)" \
		'$1 != 200 && !($1 == 499 && NR > n - 4)' "$d/nginx/access.log" 2>/dev/null | wc -l)
	berr=$(awk '/^tier-backend: worker/ { s += $NF } END { print s + 0 }' "$BACKEND_DIR/out")
	echo "$f: wrk $(grep '^propel-wrk' "$d/wrk.out"); nginx non-200: $bad; backend errors: $berr"
	if [ -n "$errs" ] && [ "$errs" = 0 ] && [ "$bad" = 0 ]; then
		requests_ok=1
	else
		requests_ok=0
	fi

	# unharmed (and the backend's summary lines come at its stop)
	ok=1
	why=
	get_item "$d/get1" && get_item "$d/get2" || { ok=0; why+="GET through nginx failed ($(cat "$d/get1" "$d/get2" 2>/dev/null)); "; }
	[ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] || { ok=0; why+="redis does not answer; "; }
	for p in "$NGINX_WORKER" "$REDIS_PID" "$BACKEND_MASTER" $(awk '$1 == "worker" { print $3 }' "$BACKEND_DIR/pids"); do
		[ "$p" = "$taker" ] && [ "$f" = crash ] && continue
		kill -0 "$p" 2>/dev/null || { ok=0; why+="pid $p gone; "; continue; }
		[ "$(traced_by "$p")" = 0 ] || { ok=0; why+="pid $p still traced; "; }
	done
	nginx_signals | grepq . && { ok=0; why+="nginx: $(nginx_signals | head -2); "; }
	deaths=$(grep -c 'died' "$BACKEND_DIR/err")
	want=0
	[ "$f" = crash ] && want=1
	[ "$deaths" = $want ] || { ok=0; why+="backend deaths $deaths (want $want): $(head -c 200 "$BACKEND_DIR/err"); "; }
	stack_stop
	berr=$(awk '/^tier-backend: worker/ { s += $NF } END { print s + 0 }' "$BACKEND_DIR/out")
	if [ $requests_ok = 1 ] && [ "$berr" = 0 ]; then
		pass "$f/requests"
	else
		fail "$f/requests" "wrk errors '${errs}', nginx non-200 $bad ($(awk '$1 != 200' "$d/nginx/access.log" | sort | uniq -c | head -3 | tr '\n' ' ')), backend errors $berr"
	fi
	[ $ok = 1 ] && pass "$f/unharmed" || fail "$f/unharmed" "$why"
}

# Two stacks at a time (each its own ports, directories, tmux socket): the
# reference beside the first fault, then the others, slow (compared with
# the reference) once the reference is done; each job's lines are printed
# in the usual order at the end.
declare -A job_pid
job() { # NAME CMD...: CMD in a subshell of its own, its output in $t/NAME.out
	local n=$1
	shift
	(
		TUI_SOCK=propel-tui-$BASHPID
		trap 'tui_stop; stack_stop' EXIT
		"$@"
	) >"$t/$n.out" 2>&1 &
	job_pid[$n]=$!
}
job_slot() { # wait until fewer than two jobs run
	while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
}
[[ " ${faults[*]} " == *" slow "* ]] && job ref eval 'reference "$t/ref" && : >"$t/ref.ok"'
for f in "${faults[@]}"; do
	[ "$f" = slow ] && continue
	job_slot
	job "$f" run_fault "$f"
done
if [[ " ${faults[*]} " == *" slow "* ]]; then
	wait "${job_pid[ref]}"
	job_slot
	job slow run_fault slow
fi
wait
for n in ref "${faults[@]}"; do
	[ -f "$t/$n.out" ] && cat "$t/$n.out"
done
