#!/usr/bin/env bash
# tests/e2e/recover.sh - when propel itself dies: the agent's lease, `propel
# recover` and `propel detach`.
#
#   record/kill9       `propel record -- spin` (tests/fixtures/capture/spin.c:
#                      3 threads calling small functions, checking every
#                      result), propel killed with SIGKILL: the target runs
#                      on unharmed, its agent writes its "X" (switched off)
#                      line 2 s after the kill (PROPEL_LEASE_MS; 1.95-2.5 s),
#                      "X 0 inert" (no code written beside running threads),
#                      the "propel-lease" thread is gone; then `propel detach
#                      PID` restores the code: the target's executable text
#                      in /proc/PID/mem equals the file's bytes
#   record/recover     `propel recover -o DB` picks that directory, writes a
#                      session `propel replay` reads (mix -> sq, tri), and
#                      removes the directory (in a mount namespace where it
#                      is alone: other runs' directories may be newer)
#   record/fork        a traced parent and its fork child (both looping):
#                      after the kill each switches itself off (the child
#                      holds a lease of its own) and both texts are restored
#   record/lease-busy  15 rounds (three at a time) of a 4-thread loop of
#                      small calls, rings of 256 MB, propel killed: its
#                      drain is gone, so the rings fill and every call
#                      writes through the C path while the lease's
#                      thread stops the agent beside them; every
#                      round the program must live on and its agent write X
#                      (the rings were once unmapped under a thread still
#                      writing: SIGSEGV in ring_advance, ~1 round in 10)
#   attach/kill9       the same for `propel attach PID`; recover DIR
#   attach/normal      a normal `attach --duration 1`: no lease thread left,
#                      text restored, the session replays
#   detach/left        an agent without a lease (a session directory with no
#                      coordinator file): `propel detach PID` restores its
#                      code and says how many sites; again: already off
#   bad/*              detach of a pid without an agent, of no process;
#                      recover with no rings, of a directory of corrupt rings
# propel-test: takes 100
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 36
t=$(tmpdir)
trap 'kill -9 $(jobs -p) $pids 2>/dev/null; rm -rf "$t" $dirs' EXIT
pids= dirs=
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures
export PROPEL_TEST_QUIET=1

$cc -O2 -g -o "$t/spin" "$fix/capture/spin.c" -lpthread || { fail build "spin"; exit 1; }
cat > "$t/forker.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long work(long x) { return leaf(x) + leaf(x + 1); }
int main(void)
{
	volatile long s = 0;
	pid_t c = fork();
	for (long i = 0;; i++) {
		s += work(i);
		if ((i & 0xfffff) == 0)
			usleep(1000);
	}
	return c < 0;
}
EOF
$cc -O2 -g -o "$t/forker" "$t/forker.c" || { fail build "forker"; exit 1; }
cat > "$t/busy.c" <<'EOF'
#include <pthread.h>
__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long mid(long x) { return leaf(x) + leaf(x + 1); }
static void *loop(void *a)
{
	volatile long s = 0;
	for (long i = 0;; i++)
		s += mid(i);
	return a;
}
int main(void)
{
	pthread_t t;
	for (int i = 0; i < 3; i++)
		pthread_create(&t, 0, loop, 0);
	loop(0);
}
EOF
$cc -O2 -g -o "$t/busy" "$t/busy.c" -lpthread || { fail build "busy"; exit 1; }

has_lease_thread() { grep -qx propel-lease /proc/$1/task/*/comm 2>/dev/null; }
# wait_x DIR PID: until PID's map file has its X line (6 s at most)
wait_x() {
	local t0=$(date +%s.%N) i
	for i in $(seq 1 120); do
		grep -q '^X ' "$1"/$2.*.map 2>/dev/null && break
		sleep 0.05
	done
	grep -q '^X ' "$1"/$2.*.map 2>/dev/null || { echo 99; return; }
	echo ok
}
# traced PID: the agent has patched something (rings being written)
wait_traced() {
	local i
	for i in $(seq 1 100); do
		ls "$1"/$2.*.ring >/dev/null 2>&1 && grep -q '^S ' "$1"/$2.*.map 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# recover_alone DIR DB: `propel recover -o DB` (no DIR) in a private mount
# namespace where /dev/shm/propel holds a copy of DIR alone; it must take it
# and remove it; DIR itself is removed after
recover_alone() {
	local base
	base=$(basename "$1")
	rm -rf "$t/alone" && cp -a "$1" "$t/alone" || return 1
	unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs propel-test /dev/shm/propel &&
		chmod 1777 /dev/shm/propel && cp -a "$1" "/dev/shm/propel/$2" &&
		"$3" recover -o "$4" && [ ! -d "/dev/shm/propel/$2" ]' sh "$t/alone" "$base" "$PROPEL" "$2" || return 1
	rm -rf "$1" "$t/alone"
}
# the lease test of one process: alive, X within the lease, no thread, text
lease_checks() { # NAME DIR PID T_KILL
	local name=$1 dir=$2 pid=$3 el
	wait_x "$dir" "$pid" > /dev/null
	# the X line is the map file's last write
	el=$(awk "BEGIN { printf \"%.2f\", $(stat -c %.9Y "$dir"/$pid.*.map | head -1) - $4 }")
	if ! grep -q '^X ' "$dir"/$pid.*.map 2>/dev/null; then
		fail "$name/lease" "no X line in $pid's map file 5 s after the kill"
		return
	fi
	echo "  $name: agent of $pid switched off ${el}s after kill -9"
	# README: the agents switch off 2 s after propel died (the lease,
	# PROPEL_LEASE_MS) -- measured 2.02-2.07 s; not before, and not much after
	if is_num "$el" && awk "BEGIN { exit !($el >= 1.95 && $el < 2.5) }"; then pass "$name/lease"
	else fail "$name/lease" "took '${el}'s (lease 2 s: want 1.95 to 2.5 s)"; fi
	sleep 0.2
	if ! kill -0 "$pid" 2>/dev/null; then fail "$name/alive" "target died"; return; fi
	pass "$name/alive"
	if has_lease_thread "$pid"; then fail "$name/thread" "propel-lease still there"
	else pass "$name/thread"; fi
	# inert: switched off beside running threads, its code left for a
	# detach that holds them (agent.c "states")
	grep -q '^X 0 inert$' "$dir"/$pid.*.map && pass "$name/inert" ||
		fail "$name/inert" "X line: $(grep '^X' "$dir"/$pid.*.map | head -1)"
	local out; out=$("$PROPEL" detach "$pid" 2>&1)
	if ! echo "$out" | grep -q 'had switched itself off.*call sites\? restored'; then
		fail "$name/restored" "detach: $out"
	elif ! kill -0 "$pid" 2>/dev/null; then
		fail "$name/restored" "target died at the detach"
	else
		out=$(text_restored "$pid") && pass "$name/restored" ||
			fail "$name/restored" "$out"
	fi
}

# ---- record, kill -9 ----
cd "$t"
since=$(date +%s)
"$PROPEL" record -o "$t/rec.db" -- "$t/spin" > "$t/spin.out" 2>&1 &
rp=$!
sleep 0.3
sp=$(pgrep -P $rp | head -1)
dir=$(ring_dir "$rp" "$since")
dirs="$dirs $dir"; pids="$pids $sp"
if [ -z "$sp" ] || [ -z "$dir" ] || ! wait_traced "$dir" "$sp"; then
	fail record/kill9 "spin not traced (pid '$sp', dir '$dir')"
else
	has_lease_thread "$sp" && pass record/lease-thread ||
		fail record/lease-thread "no propel-lease thread in $sp"
	sleep 0.5
	kill -9 $rp; tk=$(date +%s.%N); wait $rp 2>/dev/null
	lease_checks record "$dir" "$sp" "$tk"
	sleep 0.3
	grep -q BAD "$t/spin.out" && fail record/unharmed "$(grep BAD "$t/spin.out" | head -1)" ||
		pass record/unharmed
	kill -9 "$sp" 2>/dev/null
	# recover without DIR takes the newest abandoned directory: on a shared
	# machine that may be another run's, so it runs in a mount namespace
	# whose /dev/shm/propel holds this session's directory alone
	if recover_alone "$dir" "$t/rec.db" > "$t/recover.out" 2>&1 &&
	   "$PROPEL" replay "$t/rec.db" > "$t/rec.txt" 2>&1 &&
	   grep -q 'mix' "$t/rec.txt" && grep -q 'tri()' "$t/rec.txt"; then
		pass record/recover
	else
		fail record/recover "$(tail -2 "$t/recover.out") $(head -2 "$t/rec.txt" 2>/dev/null)"
	fi
fi

# ---- record of a forking program, kill -9 ----
since=$(date +%s)
"$PROPEL" record -o "$t/fork.db" -- "$t/forker" > /dev/null 2>&1 &
rp=$!
sleep 0.5
fp=$(pgrep -P $rp | head -1)
cp=$(pgrep -P "$fp" 2>/dev/null | head -1)
dir=$(ring_dir "$rp" "$since")
dirs="$dirs $dir"; pids="$pids $fp $cp"
if [ -z "$cp" ] || ! wait_traced "$dir" "$fp" || ! wait_traced "$dir" "$cp"; then
	fail record/fork "parent '$fp' or child '$cp' not traced"
else
	has_lease_thread "$cp" && pass record/fork/child-thread ||
		fail record/fork/child-thread "no propel-lease thread in the child"
	kill -9 $rp; tk=$(date +%s.%N); wait $rp 2>/dev/null
	lease_checks record/fork/parent "$dir" "$fp" "$tk"
	lease_checks record/fork/child "$dir" "$cp" "$tk"
	kill -9 "$fp" "$cp" 2>/dev/null
	"$PROPEL" recover -o "$t/fork.db" "$dir" > "$t/recover.out" 2>&1 &&
		[ "$("$PROPEL" replay "$t/fork.db" | grep -c 'leaf()')" -gt 0 ] &&
		pass record/fork/recover || fail record/fork/recover "$(tail -1 "$t/recover.out")"
fi

# ---- the lease stops an agent whose threads are all writing ----
# busy_round N: one round; prints why it failed, nothing when it passed
busy_round() {
	local round=$1 since rp bp dir st
	since=$(date +%s)
	"$PROPEL" record -o "$t/busy.$round.db" --buffer-size 262144 -- "$t/busy" > /dev/null 2>&1 &
	rp=$!
	sleep 0.6
	bp=$(pgrep -P $rp | head -1)
	dir=$(ring_dir "$rp" "$since")
	if [ -z "$bp" ] || [ -z "$dir" ] || ! wait_traced "$dir" "$bp"; then
		echo "round $round: not traced"; kill -9 $rp $bp 2>/dev/null; rm -rf "$dir"; return
	fi
	kill -9 $rp; wait $rp 2>/dev/null
	wait_x "$dir" "$bp" > /dev/null
	sleep 0.2
	st=$(awk '{ print $3 }' /proc/$bp/stat 2>/dev/null)
	if [ -z "$st" ] || [ "$st" = Z ]; then
		echo "round $round: the program died ($(dmesg 2>/dev/null | grep -F "busy[$bp]" | tail -1 | cut -c1-120))"
	elif ! grep -q '^X ' "$dir"/$bp.*.map; then
		echo "round $round: no X line 6 s after the kill"
	fi
	kill -9 $bp 2>/dev/null
	rm -rf "$dir"
	rm -f "$t/busy.$round.db"
}
# three rounds at a time (each its own propel, program and ring directory;
# most of a round is the 2 s lease): 12 busy threads on the machine
# instead of 4, the race each round looks for no rarer for it
bad= rounds=0
for first in 1 4 7 10 13; do
	bpids=()
	for round in $first $((first + 1)) $((first + 2)); do
		busy_round $round > "$t/busy.$round.why" &
		bpids+=($!)
	done
	wait "${bpids[@]}"
	for round in $first $((first + 1)) $((first + 2)); do
		[ -s "$t/busy.$round.why" ] && { bad=$(head -1 "$t/busy.$round.why"); break; }
		rounds=$round
	done
	[ -n "$bad" ] && break
done
[ -z "$bad" ] && pass record/lease-busy || fail record/lease-busy "$bad"
echo "  record/lease-busy: $rounds rounds passed"

# ---- attach, kill -9 ----
"$t/spin" > "$t/spin2.out" 2>&1 &
sp=$!; pids="$pids $sp"
sleep 0.2
since=$(date +%s)
# --all: spin's calls are a hot loop of tiny leaves, which attach's cost
# budget leaves untraced within 0.5 s; the checks look for sq()
"$PROPEL" attach --all -o "$t/att.db" $sp > /dev/null 2>&1 &
ap=$!
sleep 0.3
dir=$(ring_dir "$ap" "$since")
dirs="$dirs $dir"
if [ -z "$dir" ] || ! wait_traced "$dir" "$sp"; then
	fail attach/kill9 "spin not traced"
else
	sleep 0.5
	kill -9 $ap; tk=$(date +%s.%N); wait $ap 2>/dev/null
	lease_checks attach "$dir" "$sp" "$tk"
	grep -q BAD "$t/spin2.out" && fail attach/unharmed "$(grep BAD "$t/spin2.out" | head -1)" ||
		pass attach/unharmed
	if "$PROPEL" recover -o "$t/att.db" "$dir" > "$t/recover.out" 2>&1 &&
	   [ ! -d "$dir" ] && "$PROPEL" replay "$t/att.db" 2>&1 | grepq 'sq()'; then
		pass attach/recover
	else
		fail attach/recover "$(tail -2 "$t/recover.out")"
	fi
	# a normal attach to the same process afterwards: lease ends with it
	if "$PROPEL" attach --all -o "$t/att2.db" --duration 1 $sp > "$t/att2.out" 2>&1 &&
	   "$PROPEL" replay "$t/att2.db" | grepq 'sq()'; then
		sleep 0.3
		if has_lease_thread $sp; then fail attach/normal "propel-lease left after detach"
		else
			out=$(text_restored $sp) && pass attach/normal || fail attach/normal "$out"
		fi
	else
		fail attach/normal "$(tail -1 "$t/att2.out")"
	fi
fi
kill -9 $sp 2>/dev/null; wait $sp 2>/dev/null

# ---- detach of an agent without a lease ----
mkdir -p "$t/nolease"
LD_PRELOAD=$AGENT_SO PROPEL_SESSION_DIR=$t/nolease "$t/spin" > /dev/null 2>&1 &
sp=$!; pids="$pids $sp"
if ! wait_traced "$t/nolease" $sp; then
	fail detach/left "spin under LD_PRELOAD not traced"
else
	sleep 0.3
	out=$("$PROPEL" detach $sp 2>&1)
	if echo "$out" | grepq 'call sites\? restored' && ! has_lease_thread $sp &&
	   text_restored $sp > /dev/null && kill -0 $sp; then
		pass detach/left
	else
		fail detach/left "$out; $(text_restored $sp)"
	fi
	out=$("$PROPEL" detach $sp 2>&1)
	echo "$out" | grepq 'already off' && pass detach/again || fail detach/again "$out"
fi
kill -9 $sp 2>/dev/null; wait $sp 2>/dev/null

# ---- bad input ----
sleep 100 & np=$!
out=$("$PROPEL" detach $np 2>&1); rc=$?
[ $rc = 1 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grepq 'no propel agent' &&
	pass bad/detach-no-agent || fail bad/detach-no-agent "rc $rc: $out"
kill $np; wait $np 2>/dev/null
out=$("$PROPEL" detach 999999999 2>&1); rc=$?
[ $rc != 0 ] && echo "$out" | grepq 'propel: detach' &&
	pass bad/detach-no-process || fail bad/detach-no-process "rc $rc: $out"
mkdir -p "$t/empty"
out=$("$PROPEL" recover "$t/empty" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grepq 'no rings left' &&
	pass bad/recover-no-rings || fail bad/recover-no-rings "rc $rc: $out"
mkdir -p "$t/corrupt"
head -c 65536 /dev/urandom > "$t/corrupt/4242.1234.4242.ring"
echo "P 4242 1 1234 /bin/true" > "$t/corrupt/4242.1234.map"
out=$("$PROPEL" recover -o "$t/corrupt.db" "$t/corrupt" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grepq 'no ring could be read' && [ -d "$t/corrupt" ] &&
	[ "$(echo "$out" | grep -c '^propel: recover')" = 1 ] &&
	pass bad/recover-corrupt || fail bad/recover-corrupt "rc $rc: $out"
out=$("$PROPEL" recover --help 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grepq 'usage: propel recover' &&
	pass recover/help || fail recover/help "$out"
exit 0
