#!/usr/bin/env bash
# tests/e2e/dist.sh - the distributed scenario programs (tests/apps/dist-*.c)
# and their launcher (tests/apps/dist-run.sh), untraced: they work, their
# summaries agree end to end, and their self-check can fail.
#
#   untraced/one-host     start the daemons, two clients (12 requests, then 8
#                         with --stop): every program exits by itself with
#                         "ok"; requests agree everywhere (20) and the bytes
#                         of each channel agree at both ends (client<->front,
#                         front<->back, front<->child, front->logger,
#                         front->monitor); no heartbeat lost
#   untraced/sigterm      `dist-run.sh stop` (SIGTERM) after 5 requests: every
#                         daemon prints its summary and exits ok
#   corrupt/request       a client that changes one byte of request 3 after
#                         its checksum: the front end says which byte and
#                         fails, the client fails
#   corrupt/front         a front end that changes its messages of request 2:
#                         the back end says which byte and fails
#   all/one-parent        dist-all (one parent starts everything, for
#                         `propel record`): status 0, six summaries, its pids
#                         line names six distinct processes; with --corrupt
#                         it fails and says which byte
#   netns/three-hosts     (root) three network namespaces joined by veth
#                         pairs: the client on A, the front end and logger on
#                         B, the back end and monitor on C, each through the
#                         launcher's per-host prefix (ip netns exec): the
#                         same agreement as one-host, over 10.x addresses
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 6
run=$PROPEL_TOP/tests/apps/dist-run.sh
bin=$PROPEL_TOP/$O/apps
t=$(tmpdir)
ns=pdist$$
cleanup() {
	for d in "$t"/*/; do [ -f "$d/pids" ] && bash "$run" stop "$d" >/dev/null 2>&1; done
	for h in A B C; do ip netns del "$ns$h" 2>/dev/null; done
	rm -rf "$t"
}
trap cleanup EXIT
for p in client front back logger monitor all; do
	[ -x "$bin/dist-$p" ] || { fail dist/build "no $bin/dist-$p (make)"; exit 1; }
done

# val FILE PROGRAM KEY: the number after KEY in PROGRAM's summary line
val() {
	grep -h "^$2: " "$1" | grep -v ': ready ' | tail -1 |
		awk -v k="$3" '{for (i = 2; i < NF; i++) if ($i == k) {print $(i + 1); exit}}'
}

# agree NAME DIR CLIENT-OUTS... : the summaries of one run agree
agree() {
	local name=$1 d=$2 cs=0 cr=0 n=0 probs=() f
	shift 2
	for f in "$@"; do
		cs=$((cs + $(val "$f" dist-client sent)))
		cr=$((cr + $(val "$f" dist-client recv)))
		n=$((n + $(val "$f" dist-client requests)))
	done
	eq() { [ "$2" = "$3" ] || probs+=("$1: $2 != $3"); }
	eq "front requests" "$(val "$d/front.out" dist-front requests)" $n
	eq "back requests" "$(val "$d/back.out" dist-back requests)" $n
	eq "child requests" "$(val "$d/front.out" dist-child requests)" $n
	eq "logger lines" "$(val "$d/logger.out" dist-logger lines)" $n
	eq "monitor beats" "$(val "$d/monitor.out" dist-monitor beats)" $n
	eq "client->front" $cs "$(val "$d/front.out" dist-front client-recv)"
	eq "front->client" "$(val "$d/front.out" dist-front client-sent)" $cr
	eq "front->back" "$(val "$d/front.out" dist-front back-sent)" \
		"$(val "$d/back.out" dist-back recv)"
	eq "back->front" "$(val "$d/back.out" dist-back sent)" \
		"$(val "$d/front.out" dist-front back-recv)"
	eq "front->child" "$(val "$d/front.out" dist-front child-sent)" \
		"$(val "$d/front.out" dist-child recv)"
	eq "child->front" "$(val "$d/front.out" dist-child sent)" \
		"$(val "$d/front.out" dist-front child-recv)"
	eq "front->logger" "$(val "$d/front.out" dist-front log-sent)" \
		"$(val "$d/logger.out" dist-logger recv)"
	eq "front->monitor" "$(val "$d/front.out" dist-front beat-bytes)" \
		"$(val "$d/monitor.out" dist-monitor recv)"
	eq "heartbeats lost" "$(val "$d/monitor.out" dist-monitor lost)" 0
	[ "$n" -gt 0 ] || probs+=("no requests")
	for f in front back logger monitor; do
		grep -q ' ok$' "$d/$f.out" || probs+=("$f: no ok: $(tail -1 "$d/$f.out")")
	done
	if [ ${#probs[@]} -eq 0 ]; then
		pass "$name"
	else
		fail "$name" "${probs[*]}"
	fi
}

# gone DIR: every daemon of DIR has exited (within 10 s)
gone() {
	local i role pid alive
	for ((i = 0; i < 200; i++)); do
		alive=0
		while read -r role pid; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done <"$1/pids"
		[ $alive = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# ---- one host, stopped by the last client ----
d=$t/one
if bash "$run" start "$d" >"$t/one.start" 2>&1 &&
	bash "$run" client "$d" -n 12 >"$t/c1" 2>&1 &&
	bash "$run" client "$d" -n 8 --first 13 --stop >"$t/c2" 2>&1; then
	if ! gone "$d"; then
		fail untraced/one-host "the daemons did not stop on the client's stop"
	else
		agree untraced/one-host "$d" "$t/c1" "$t/c2"
	fi
else
	fail untraced/one-host "$(cat "$t/one.start" "$t/c1" "$t/c2" 2>/dev/null | head -c 400)"
fi
bash "$run" stop "$d" >/dev/null 2>&1

# ---- stopped by SIGTERM ----
d=$t/term
if bash "$run" start "$d" >/dev/null 2>&1 && bash "$run" client "$d" -n 5 >"$t/c3" 2>&1 &&
	bash "$run" stop "$d" >"$t/term.stop" 2>&1; then
	agree untraced/sigterm "$d" "$t/c3"
else
	fail untraced/sigterm "$(head -c 400 "$t/term.stop" "$t/c3")"
fi

# ---- corrupted payloads ----
d=$t/bad1
if bash "$run" start "$d" >/dev/null 2>&1; then
	bash "$run" client "$d" -n 5 --corrupt 3 >"$t/c4" 2>&1
	rc=$?
	gone "$d" >/dev/null # (the front end only)
	if [ $rc -ne 0 ] &&
		grep -qE '^dist-front: request message 3: byte [0-9]+ changed' "$d/front.out" &&
		! grep -q 'dist-front: requests' "$d/front.out"; then
		pass corrupt/request
	else
		fail corrupt/request "client status $rc; front: $(head -c 300 "$d/front.out")"
	fi
	bash "$run" stop "$d" >/dev/null 2>&1
else
	fail corrupt/request "cannot start the daemons"
fi
d=$t/bad2
if DIST_FRONT_ARGS="--corrupt 2" bash "$run" start "$d" >/dev/null 2>&1; then
	bash "$run" client "$d" -n 4 >"$t/c5" 2>&1
	rc=$?
	if [ $rc -ne 0 ] &&
		grep -qE '^dist-back: back-request message 2: byte [0-9]+ changed' "$d/back.out" &&
		! grep -q 'dist-back: requests' "$d/back.out"; then
		pass corrupt/front
	else
		fail corrupt/front "client status $rc; back: $(head -c 300 "$d/back.out")"
	fi
	bash "$run" stop "$d" >/dev/null 2>&1
else
	fail corrupt/front "cannot start the daemons"
fi

# ---- one parent ----
mkdir -p "$t/all"
timeout 60 "$bin/dist-all" "$t/all" -n 15 >"$t/all.out" 2>&1
rc=$?
pids=$(grep '^dist-all: pids' "$t/all.out" | tr ' ' '\n' | grep -E '^[0-9]+$' | sort -u | wc -l)
if [ $rc -eq 0 ] && [ "$(grep -c ' ok$' "$t/all.out")" = 6 ] && [ "$pids" = 6 ] &&
	[ "$(val "$t/all.out" dist-back requests)" = 15 ]; then
	timeout 60 "$bin/dist-all" "$t/all" -n 6 --corrupt 4 >"$t/all2.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && grep -qE 'request message 4: byte [0-9]+ changed' "$t/all2.out"; then
		pass all/one-parent
	else
		fail all/one-parent "--corrupt: status $rc: $(head -c 300 "$t/all2.out")"
	fi
else
	fail all/one-parent "status $rc, $pids pids: $(head -c 400 "$t/all.out")"
fi

# ---- three hosts: network namespaces ----
if ! is_root || ! command -v ip >/dev/null; then
	skip netns/three-hosts "needs root and iproute2"
elif ! ip netns add "${ns}A" 2>/dev/null; then
	skip netns/three-hosts "cannot make a network namespace"
else
	ip netns add "${ns}B" && ip netns add "${ns}C" &&
		ip link add "${ns}ab" netns "${ns}A" type veth peer name "${ns}ba" netns "${ns}B" &&
		ip link add "${ns}bc" netns "${ns}B" type veth peer name "${ns}cb" netns "${ns}C" &&
		ip -n "${ns}A" addr add 10.201.1.1/24 dev "${ns}ab" &&
		ip -n "${ns}B" addr add 10.201.1.2/24 dev "${ns}ba" &&
		ip -n "${ns}B" addr add 10.201.2.2/24 dev "${ns}bc" &&
		ip -n "${ns}C" addr add 10.201.2.3/24 dev "${ns}cb"
	ok=$?
	for h in A B C; do
		for l in lo $(ip -n "$ns$h" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
			ip -n "$ns$h" link set "$l" up
		done
	done
	d=$t/netns
	if [ $ok -ne 0 ]; then
		fail netns/three-hosts "cannot set up the namespaces"
	elif DIST_PREFIX_CLIENT="ip netns exec ${ns}A" DIST_PREFIX_FRONT="ip netns exec ${ns}B" \
		DIST_PREFIX_BACK="ip netns exec ${ns}C" DIST_PREFIX_MONITOR="ip netns exec ${ns}C" \
		DIST_FRONT_ADDR=10.201.1.2 DIST_BACK_ADDR=10.201.2.3 DIST_MONITOR_ADDR=10.201.2.3 \
		bash "$run" start "$d" >"$t/ns.start" 2>&1 &&
		DIST_PREFIX_CLIENT="ip netns exec ${ns}A" bash "$run" client "$d" -n 10 --stop \
			>"$t/c6" 2>&1 && gone "$d"; then
		# the client reached the front end from another namespace
		if grep -q '^dist-front: ready 10.201.1.2 ' "$d/front.out" &&
			grep -q '^dist-back: ready 10.201.2.3 ' "$d/back.out" &&
			! ip netns exec "${ns}A" bash -c "exec 3<>/dev/tcp/10.201.2.3/9" 2>/dev/null; then
			agree netns/three-hosts "$d" "$t/c6"
		else
			fail netns/three-hosts "not on the namespaces' addresses: $(cat "$d/pids")"
		fi
	else
		fail netns/three-hosts "$(head -c 400 "$t/ns.start" "$t/c6" 2>/dev/null)"
	fi
	bash "$run" stop "$d" >/dev/null 2>&1
fi
