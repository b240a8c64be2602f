#!/usr/bin/env bash
# tests/soak/soak.sh [-n ROUNDS] [-s SEED] [CASE...] - never harm the
# target: kill propel or propeld with SIGKILL at random moments while they
# hold a live server, and check the server after every kill.
#
# Cases (all by default), each on a server started once for all its rounds
# (tests/real/servers.sh: Debian's stripped redis-server and nginx; the
# batch system of tests/apps) under load from start to end:
#   redis-attach   `propel attach REDIS`, killed at a random moment in
#                  [0, 2.5] s: while it seizes and injects (the first few
#                  hundred ms), while it traces and drains
#   redis-inject   the same, killed in [0, 400] ms: while it injects
#   redis-detach   `propel attach --duration 1`, killed at 1 + [0, 0.6] s:
#                  while it holds the threads to switch the agent off
#   redis-record   `propel record -- redis-server` (a new server each
#                  round), killed at [0.3, 2.5] s
#   redis-follow   `propel record --follow -- redis-benchmark`, which
#                  follows into the server; odd rounds kill the local
#                  propeld, even rounds propel (the coordinator), at
#                  [0.2, 2.5] s
#   nginx-attach   `propel attach MASTER WORKER` under wrk, killed at
#                  [0, 2.5] s
#   nginx-follow   `propel record --follow -- curl` loop into nginx; odd
#                  rounds kill propeld, even rounds propel
#   batch-follow   `propel record --follow -- batch-submit` into the batch
#                  daemons (scheduler, its shadows, execution and log
#                  daemons), killed at [0.2, 2] s
#
# Every round checks, once its agents are off or 3.5 s after the kill (the
# lease is 2 s):
#   alive     every process of the server still runs (no new crash line in
#             its log)
#   answers   the server answers correctly: redis GET of a canary written
#             before the round, a SET/GET and an INCR that counts exactly;
#             nginx: blob.bin byte for byte; batch: an untraced submission
#             of 3 jobs completes with every job's output
#   load      the load generator saw no error reply nor a dropped connection
#   off       no process of the server holds a "propel-lease" thread or a
#             tracer, and each agent's map file in the session ends with
#             its X line (switched off)
#   recover   `propel recover` of the session directory (when the kill left
#             one with rings) writes a session whose every event reads:
#             `propel export --format=folded` walks every thread's every
#             chunk with replay's reader (engine/replay.c replay_walk) and
#             fails as replay does; the text of `propel replay` (tens of
#             millions of lines of a busy redis, 10 s of CPU a round, three
#             quarters of it printf) added nothing a check looked at
# and at the end of a case, a new `propel attach --duration 1` traces the
# server, and after it every executable text of it equals its file (the
# byte-exact restore of the inert agents).
#
# Prints "round N CASE: ok (kill at T s)" or "round N CASE: HARM what", and
# per case "PASS soak/CASE" or "FAIL soak/CASE: K of N rounds harmed: ...".
# Exit 1 if any round harmed.  tests/e2e/soak-*.sh run it with -n 10
# (tests/soak/suite.sh), some cases each.
set -u
. "$(dirname "$0")/../lib.sh"
. "$PROPEL_TOP/tests/real/servers.sh"
rounds=100 seed=${SOAK_SEED:-$$}
while getopts n:s: o; do
	case $o in
	n) rounds=$OPTARG ;;
	s) seed=$OPTARG ;;
	*) echo "usage: $0 [-n ROUNDS] [-s SEED] [CASE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
cases=${*:-redis-attach redis-detach redis-record redis-follow nginx-attach nginx-follow batch-follow}
RANDOM=$seed
# what a harmed round leaves for a look (SOAK_KEEP)
keep=${SOAK_KEEP:-/tmp/propel-soak-$seed}
echo "soak: seed $seed, $rounds rounds a case (a harmed round's files: $keep)"
t=$(tmpdir)
export PROPEL_TEST_QUIET=1
cleanup() {
	[ -n "${cur_propel:-}" ] && kill -9 "$cur_propel" 2>/dev/null
	real_cleanup 2>/dev/null
	[ -n "${batch_dir:-}" ] && "$PROPEL_TOP/tests/apps/batch-run.sh" stop "$batch_dir" >/dev/null 2>&1
	kill -9 $(jobs -p) 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
cur_propel= pd=
PROPEL_SHM=/dev/shm/propel
# the loads at nice 19 (tests/real/servers.sh): a round checks the server
# is unharmed under load, not how much load it takes
REAL_LOAD_NICE=19

# rand_ms LO HI: a random whole number of ms in [LO, HI]
rand_ms() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
ms_s() { awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }'; }

# session_dir PID: the session directory of the propel process PID (its
# name begins with the coordinator's pid)
session_dir() { local d; for d in /dev/shm/propel/"$1"-*; do [ -d "$d" ] && echo "$d"; done | head -1; }

# off_check PIDS...: no lease thread, no tracer; every map file of these
# pids in $sdir ends switched off.  Prints what is wrong.
off_check() {
	local p why=
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null || continue
		grep -qx propel-lease /proc/"$p"/task/*/comm 2>/dev/null &&
			why="$why pid $p: propel-lease thread still there;"
		local tp; tp=$(awk '/^TracerPid/ { print $2 }' /proc/"$p"/status 2>/dev/null)
		[ "${tp:-0}" = 0 ] || why="$why pid $p: traced by $tp;"
		if [ -n "$sdir" ]; then
			local m
			for m in "$sdir"/"$p".*.map; do
				[ -f "$m" ] || continue
				grep -q '^X ' "$m" || why="$why $(basename "$m"): no X line;"
			done
		fi
	done
	echo "$why"
}

# recover_check DIR FILES: `propel recover` of the session directory DIR
# when it holds rings (FILES.db, FILES.err: its files); prints the harm
recover_check() {
	[ -n "$1" ] && [ -d "$1" ] || return 0
	ls "$1"/*.ring >/dev/null 2>&1 || { rm -rf "$1"; return 0; }
	local db=$2.db out
	rm -f "$db"
	if ! out=$("$PROPEL" recover -o "$db" "$1" 2>&1); then
		echo "recover: $(echo "$out" | tail -1) (kept in $keep)"
		mkdir -p "$keep" && cp -r "$1" "$keep/"
	elif ! "$PROPEL" export --format=folded "$db" >/dev/null 2>"$2.err"; then
		echo "reading the recovered session: $(tail -1 "$2.err")"
	fi
	rm -rf "$1" "$db" "$2.err"
}

# recover_bg: recover_check of this round's $sdir in the background, the
# next round beside it (it reads only that directory, writes only files
# of its own): the recover and its read were 7 of a redis-record round's
# 11.4 s.  One at a time: it waits for the last one first.  The round's
# verdict waits for it (verdict, verdict_flush).
rec_pid= rec_n=0
recover_bg() {
	[ -n "$rec_pid" ] && wait "$rec_pid" 2>/dev/null
	[ ${#pend[@]} -gt 0 ] && wait "${pend[4]}" 2>/dev/null
	rec_n=$((rec_n + 1))
	recover_check "$sdir" "$t/rec.$rec_n" >"$t/rec.$rec_n.why" 2>&1 &
	rec_pid=$!
}

# settle PIDS...: after a kill, until the agents of PIDS are off (the
# lease: 2 s) or 3.5 s have passed
settle() {
	local i
	for ((i = 0; i < 35; i++)); do
		sleep 0.1
		[ -z "$(off_check "$@")" ] && [ "$i" -ge 2 ] && return 0
	done
}

# wait_gone PID SECS: until PID has ended (at most SECS s)
wait_gone() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		running "$1" || return 0
		sleep 0.05
	done
	return 1
}

# final_check NAME PIDS...: a new attach traces the server and restores
# every byte of its text
final_check() {
	local name=$1 out p
	shift
	if ! out=$(timeout 60 "$PROPEL" attach -o "$t/final.db" --duration 1 "$@" 2>&1); then
		fail "soak/$name/attach-after" "$(echo "$out" | tail -1)"
		return
	fi
	if [ "$("$PROPEL" replay "$t/final.db" 2>/dev/null | head -50 | wc -l)" -lt 1 ]; then
		fail "soak/$name/attach-after" "the new attach recorded nothing"
		return
	fi
	pass "soak/$name/attach-after"
	local said=$out
	for p in "$@"; do
		out=$(text_restored "$p") || {
			fail "soak/$name/restored" "pid $p: $out"
			# which sites, and what the attach said of its detach
			python3 "$PROPEL_TOP/tests/soak/text-diff.py" "$p" | sed 's/^/    /'
			echo "$said" | tail -5 | sed 's/^/    attach: /'
			return
		}
	done
	pass "soak/$name/restored"
}

# one round's verdict: HARM lines collected in $harms.  A round with a
# recover under way (recover_bg) is judged once it is done: at the next
# round's verdict or the case's end (verdict_flush); its files are kept
# now (the next round writes over them)
harms= nharm=0 pend=()
verdict() { # CASE ROUND KILL_MS WHY
	verdict_flush
	if [ -n "$rec_pid" ]; then
		[ -n "$4" ] && keep_files "$1" "$2"
		pend=("$1" "$2" "$3" "$4" "$rec_pid" "$t/rec.$rec_n.why")
		rec_pid=
		return
	fi
	[ -n "$4" ] && keep_files "$1" "$2"
	verdict_now "$@"
}
verdict_flush() {
	local p
	[ ${#pend[@]} -gt 0 ] || return 0
	p=("${pend[@]}")
	pend=()
	wait "${p[4]}" 2>/dev/null
	p[3]=${p[3]}$(cat "${p[5]}")
	rm -f "${p[5]}"
	# (a round harmed by its recover alone: its files now, the session
	# directory is in $keep already)
	[ -n "${p[3]}" ] && [ ! -d "$keep/${p[0]}-${p[1]}" ] && keep_files "${p[0]}" "${p[1]}"
	verdict_now "${p[@]:0:4}"
}
keep_files() { # CASE ROUND
	mkdir -p "$keep/$1-$2"
	cp "$t"/*/*.log "$t"/*/*.out "$t"/*.out "$keep/$1-$2/" 2>/dev/null
	mv "$t"/snap/* "$keep/$1-$2/" 2>/dev/null
}
# snap_harm PIDS...: what a harmed server was doing, kept with the round
# (keep_files): a hang leaves nothing in a log.  Per pid, each thread's
# state, wait channel, syscall and kernel stack, a backtrace of every
# thread (gdb, when installed: the agent's frames are named by its
# symbols), and the tails of its map files in the session directory
# (what its agent said last), before the round's recover removes them.
snap_harm() {
	local p task m
	mkdir -p "$t/snap"
	for p in "$@"; do
		[ -d /proc/"$p" ] || continue
		{
			grep -E '^(State|TracerPid|SigPnd|ShdPnd|SigBlk)' /proc/"$p"/status
			for task in /proc/"$p"/task/*; do
				echo "== task ${task##*/} $(cat "$task"/comm) $(sed 's/.*) //' "$task"/stat | cut -d' ' -f1) wchan $(cat "$task"/wchan)"
				echo "syscall $(cat "$task"/syscall)"
				cat "$task"/stack 2>/dev/null
			done
			command -v gdb >/dev/null &&
				timeout 30 gdb -batch -nx -p "$p" -ex 'thread apply all bt 25' 2>&1 | grep -E '^(Thread|#)'
			for m in "${sdir:-/nonexistent}"/"$p".*.map; do
				[ -f "$m" ] && { echo "== tail of $m"; tail -20 "$m"; }
			done
		} >"$t/snap/threads.$p" 2>&1
	done
}
verdict_now() { # CASE ROUND KILL_MS WHY
	if [ -n "$4" ]; then
		echo "round $2 $1: HARM (kill at $(ms_s "$3") s):$4"
		local f
		for f in "$keep/$1-$2"/threads.*; do
			[ -f "$f" ] || continue
			echo "    pid ${f##*.} (snap_harm; all of it in $f):"
			grep -E '^(State|TracerPid|== |#[0-7] |Thread )' "$f" | cut -c1-200 | head -80 | sed 's/^/      /'
			grep -A20 '^== tail of' "$f" | tail -6 | sed 's/^/      /'
		done
		harms="$harms round $2:$4"
		nharm=$((nharm + 1))
	else
		echo "round $2 $1: ok (kill at $(ms_s "$3") s)"
	fi
}
soak_rc=0
case_end() { # CASE
	verdict_flush
	if [ "$nharm" -eq 0 ]; then pass "soak/$1"
	else fail "soak/$1" "$nharm of $rounds rounds harmed:$(echo "$harms" | cut -c1-600)"; soak_rc=1; fi
	harms= nharm=0
}

# ---- redis ----
redis_canary=
# redis_answers: what is wrong with the server's answers
redis_answers() {
	local r why=
	r=$(redis-cli -p "$REDIS_PORT" get soak:canary 2>&1)
	[ "$r" = "$redis_canary" ] || why="$why canary: '$r';"
	r=$(redis-cli -p "$REDIS_PORT" set soak:k "v$RANDOM" 2>&1)
	[ "$r" = OK ] || why="$why SET: '$r';"
	# the counter moves by exactly what this script added (a file: the
	# checks run in a subshell)
	local want=$(($(cat "$t/counter" 2>/dev/null || echo 0) + 1))
	r=$(redis-cli -p "$REDIS_PORT" incr soak:counter 2>&1)
	echo "$want" >"$t/counter"
	[ "$r" = "$want" ] || why="$why INCR: '$r', not $want;"
	echo "$why"
}
redis_fresh() { # DIR: a server, its canary and counter, the load
	redis_start "$1" || return 1
	redis_seed "$1"
}
redis_seed() { # DIR: a new canary, the counter at 0, the load
	redis_canary="c$RANDOM$RANDOM"
	redis-cli -p "$REDIS_PORT" set soak:canary "$redis_canary" >/dev/null
	redis-cli -p "$REDIS_PORT" del soak:counter >/dev/null
	echo 0 >"$t/counter"
	redis_bench_start "$1/bench.out"
	bench_t0=$SECONDS
}
redis_judge() { # DIR PIDS...: the round's harm
	local d=$1 why=
	shift
	kill -0 "$REDIS_PID" 2>/dev/null || why="$why redis-server died ($(grep -m1 -E 'ASSERT|crashed|Guru' "$d/redis.log"));"
	grep -q -E 'ASSERTION|crashed by signal|Guru Meditation' "$d/redis.log" 2>/dev/null &&
		why="$why $(grep -m1 -E 'ASSERTION|crashed by signal|Guru' "$d/redis.log");"
	[ -z "$why" ] && why=$(redis_answers)
	local be; be=$(redis_bench_errors "$d/bench.out")
	if [ -n "$be" ] || ! kill -0 "$REDIS_BENCH_PID" 2>/dev/null; then
		why="$why load: ${be:-redis-benchmark ended}"
	fi
	why="$why$(off_check "$@")"
	[ -n "$why" ] && snap_harm "$@"
	echo "$why"
}

# a load that ended (an error reply ends redis-benchmark) starts again,
# so that the next round is judged on its own
# the load again after a round that ended it, and before its `timeout 600`
# (tests/real/servers.sh) would end it mid-round: 100 rounds of a case
# take longer than that (round 97 of redis-attach saw "redis-benchmark
# ended", its 600 s up, no error)
bench_t0=0
redis_load_again() {
	kill -0 "$REDIS_BENCH_PID" 2>/dev/null && ((SECONDS - bench_t0 < 450)) && return
	redis_bench_stop
	redis_bench_start "$1/bench.out"
	bench_t0=$SECONDS
}

case_redis_attach() { # DURATION_ARGS KILL_LO KILL_HI NAME
	local name=$4 d=$t/$4 r k why
	mkdir -p "$d"
	redis_fresh "$d" || { fail "soak/$name" "redis did not start"; return; }
	for ((r = 1; r <= rounds; r++)); do
		k=$(rand_ms "$2" "$3")
		# its mappings before and after, so that a harmed round's crash
		# address can be placed: the program's text, the agent's stubs
		cat /proc/"$REDIS_PID"/maps >"$d/maps-before.log" 2>&1
		"$PROPEL" attach -o "$d/s.db" $1 "$REDIS_PID" >"$d/attach.out" 2>&1 &
		cur_propel=$!
		kill_propel_at "$k"
		cat /proc/"$REDIS_PID"/maps >"$d/maps-after.log" 2>&1
		settle "$REDIS_PID"
		why=$(redis_judge "$d" "$REDIS_PID")
		recover_bg
		why="$why$(attach_refused "$d/attach.out")"
		verdict "$name" "$r" "$k" "$why"
		[ -n "$why" ] && ! kill -0 "$REDIS_PID" 2>/dev/null && break
		redis_load_again "$d"
	done
	case_end "$name"
	kill -0 "$REDIS_PID" 2>/dev/null && final_check "$name" "$REDIS_PID"
	redis_bench_stop
	redis_stop
}

case_redis_record() {
	local name=redis-record d=$t/redis-record r k why rp port
	mkdir -p "$d"
	for ((r = 1; r <= rounds; r++)); do
		port=$(real_port)
		rm -f "$d/redis.log"
		"$PROPEL" record -o "$d/s.db" -- "$REDIS_BIN" --port "$port" --bind 127.0.0.1 \
			--save '' --appendonly no --dir "$d" --logfile "$d/redis.log" >"$d/record.out" 2>&1 &
		cur_propel=$!
		REDIS_PORT=$port REDIS_PID=
		real_wait_port "$port" || { verdict "$name" "$r" 0 " the traced server did not start: $(tail -1 "$d/record.out")"; kill -9 $cur_propel; continue; }
		REDIS_PID=$(pgrep -P "$cur_propel" | head -1)
		redis_seed "$d"
		k=$(rand_ms 300 2500)
		kill_propel_at "$k"
		settle "$REDIS_PID"
		why=$(redis_judge "$d" "$REDIS_PID")
		recover_bg
		verdict "$name" "$r" "$k" "$why"
		if [ "$r" -eq "$rounds" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
			case_end "$name"
			final_check "$name" "$REDIS_PID"
		fi
		redis_bench_stop
		redis_stop
	done
	verdict_flush
	[ -n "$harms" ] && case_end "$name"
}

# attach_refused FILE: a round whose attach was refused (an agent of an
# earlier build loaded, ptrace refused) traced nothing: it cannot pass
attach_refused() {
	local l
	l=$(grep -m1 -E '^propel: attach [0-9]+: ' "$1" 2>/dev/null) &&
		echo " the attach was refused, the round proves nothing: $l;"
}

# kill_propel_at MS: after MS ms, kill -9 of the round's propel; sets sdir
kill_propel_at() {
	sleep "$(ms_s "$1")"
	sdir=$(session_dir "$cur_propel")
	kill -9 "$cur_propel" 2>/dev/null
	wait "$cur_propel" 2>/dev/null
	cur_propel=
}

# follow_kill ROUND: the kill of a --follow round: odd rounds this host's
# propeld (the coordinator then ends with its command, 4 s at most), even
# rounds propel itself; sets sdir, pd (propeld) and the caller's who
follow_kill() {
	sdir=$(session_dir "$cur_propel")
	pd=$(pgrep -P "$cur_propel" -x propeld | head -1)
	if (($1 % 2)); then
		who=propeld
		[ -n "$pd" ] && kill -9 "$pd"
		wait_gone "$cur_propel" 15 || kill -9 "$cur_propel"
	else
		who=propel
		kill -9 "$cur_propel" 2>/dev/null
	fi
	wait "$cur_propel" 2>/dev/null
	cur_propel=
}

# redis-follow: record --follow of a client; kill propeld or propel
case_redis_follow() {
	local name=redis-follow d=$t/redis-follow r k why who
	mkdir -p "$d"
	redis_fresh "$d" || { fail "soak/$name" "redis did not start"; return; }
	for ((r = 1; r <= rounds; r++)); do
		"$PROPEL" record --follow -o "$d/s.db" -- timeout 4 redis-benchmark -h 127.0.0.1 \
			-p "$REDIS_PORT" -c 2 -n 100000000 -r 1000 -q -t set,get >"$d/record.out" 2>&1 &
		cur_propel=$!
		k=$(rand_ms 200 2500)
		sleep "$(ms_s "$k")"
		follow_kill "$r"
		settle "$REDIS_PID"
		why=$(redis_judge "$d" "$REDIS_PID")
		[ "$who" = propel ] && recover_bg
		[ "$who" = propeld ] && rm -rf "$sdir"
		# propeld's own ring directory (d<pid>-...): its rings fill
		# /dev/shm within a few hundred rounds
		[ -n "$pd" ] && rm -rf "$PROPEL_SHM"/d"$pd"-*
		verdict "$name" "$r" "$k" "$why${why:+ (killed $who)}"
		[ -n "$why" ] && ! kill -0 "$REDIS_PID" 2>/dev/null && break
		redis_load_again "$d"
	done
	case_end "$name"
	kill -0 "$REDIS_PID" 2>/dev/null && final_check "$name" "$REDIS_PID"
	redis_bench_stop
	redis_stop
}

# ---- nginx ----
nginx_answers() {
	local why=
	if ! nginx_get blob.bin "$t/blob.got" 2>/dev/null; then
		why=" GET blob.bin failed;"
	elif ! cmp -s "$t/blob.got" "$NGINX_DIR/www/blob.bin"; then
		why=" blob.bin differs;"
	fi
	echo "$why"
}
nginx_judge() {
	local why= s
	kill -0 "$NGINX_MASTER" 2>/dev/null || why="$why master died;"
	kill -0 "$NGINX_WORKER" 2>/dev/null || why="$why worker died;"
	s=$(nginx_signals)
	[ -n "$s" ] && why="$why $(echo "$s" | head -1);"
	[ -z "$why" ] && why=$(nginx_answers)
	why="$why$(off_check "$NGINX_MASTER" "$NGINX_WORKER")"
	[ -n "$why" ] && snap_harm "$NGINX_MASTER" "$NGINX_WORKER"
	echo "$why"
}
# wrk for one round, in the background, from before the attach until the
# round is judged (nginx_load_stop: SIGINT, on which wrk ends and prints
# its report; a fixed -d of the longest round kept every round waiting for
# it, ~3 s a round); its errors judged after.  -d 60: a bound, never met.
nginx_load() { nice -n "$REAL_LOAD_NICE" wrk -t1 -c8 -d60 --timeout 2s -s "$REAL_DIR/wrk-report.lua" "http://127.0.0.1:$NGINX_PORT/index.html" >"$t/wrk.out" 2>&1 & wrk_pid=$!; }
nginx_load_stop() { kill -INT "$wrk_pid" 2>/dev/null; wait "$wrk_pid" 2>/dev/null; }
# the load's harm: error replies (non-2xx) and dropped connections
# (connect, read, write errors).  wrk's "timeout" is neither: it counts
# requests out longer than --timeout (2 s), answered later, the
# connection kept.  Under --follow the worker's first reply on each wrk
# connection waits until propeld has injected wrk (the peer is traced
# before it reads the data); on a machine loaded by other suites (load 22
# on 2 cores) that took over 2 s with no kill at all, nginx answering and
# no error.  A worker that hangs fails `answers` (the GET after the round)
# and `off`; the slow requests are printed with the round, not judged.
# Call it after nginx_load_stop (its `wait $wrk_pid`) in the round's own shell: in its $(...)
# subshell wrk is no child and `wait` returns at once (it did: a wrk not
# done had no report yet, and most rounds' load went unjudged).
nginx_load_errors() {
	local e to
	e=$(wrk_errors "$t/wrk.out") to=$(wrk_field "$t/wrk.out" timeout)
	if [ -z "$e" ]; then
		echo " load: wrk printed no report;"
	elif [ $((e - ${to:-0})) -ne 0 ]; then
		echo " load: $((e - ${to:-0})) wrk errors (connect, read, write, non-2xx);"
	elif [ "${to:-0}" != 0 ]; then
		echo "note: $to requests slower than 2 s (not harm)" >&2
	fi
}

case_nginx_attach() {
	local name=nginx-attach d=$t/nginx r k why
	mkdir -p "$d"
	nginx_start "$d" || { fail "soak/$name" "nginx did not start"; return; }
	for ((r = 1; r <= rounds; r++)); do
		nginx_load
		sleep 0.3
		k=$(rand_ms 0 2500)
		"$PROPEL" attach -o "$d/s.db" "$NGINX_MASTER" "$NGINX_WORKER" >"$d/attach.out" 2>&1 &
		cur_propel=$!
		kill_propel_at "$k"
		settle "$NGINX_MASTER" "$NGINX_WORKER"
		why=$(nginx_judge)
		nginx_load_stop
		why="$why$(nginx_load_errors)"
		recover_bg
		why="$why$(attach_refused "$d/attach.out")"
		verdict "$name" "$r" "$k" "$why"
		[ -n "$why" ] && ! kill -0 "$NGINX_WORKER" 2>/dev/null && break
	done
	case_end "$name"
	kill -0 "$NGINX_WORKER" 2>/dev/null && final_check "$name" "$NGINX_MASTER" "$NGINX_WORKER"
	nginx_stop
}

case_nginx_follow() {
	local name=nginx-follow d=$t/nginx-f r k why who
	mkdir -p "$d"
	nginx_start "$d" || { fail "soak/$name" "nginx did not start"; return; }
	for ((r = 1; r <= rounds; r++)); do
		nginx_load
		"$PROPEL" record --follow -o "$d/s.db" -- timeout 4 sh -c \
			"while :; do curl -s -o /dev/null http://127.0.0.1:$NGINX_PORT/index.html || exit 1; done" \
			>"$d/record.out" 2>&1 &
		cur_propel=$!
		k=$(rand_ms 200 2500)
		sleep "$(ms_s "$k")"
		follow_kill "$r"
		settle "$NGINX_MASTER" "$NGINX_WORKER"
		why=$(nginx_judge)
		nginx_load_stop
		why="$why$(nginx_load_errors)"
		[ "$who" = propel ] && recover_bg
		[ "$who" = propeld ] && rm -rf "$sdir"
		# propeld's own ring directory (d<pid>-...): its rings fill
		# /dev/shm within a few hundred rounds
		[ -n "$pd" ] && rm -rf "$PROPEL_SHM"/d"$pd"-*
		verdict "$name" "$r" "$k" "$why${why:+ (killed $who)}"
		[ -n "$why" ] && ! kill -0 "$NGINX_WORKER" 2>/dev/null && break
	done
	case_end "$name"
	kill -0 "$NGINX_WORKER" 2>/dev/null && final_check "$name" "$NGINX_MASTER" "$NGINX_WORKER"
	nginx_stop
}

# ---- the batch system (tests/apps) ----
case_batch_follow() {
	local name=batch-follow r k why run=$PROPEL_TOP/tests/apps/batch-run.sh p pids
	batch_dir=$t/batch
	mkdir -p "$batch_dir"
	"$run" start "$batch_dir" >"$t/batch.start" 2>&1 || { fail "soak/$name" "batch daemons: $(tail -1 "$t/batch.start")"; return; }
	pids=$(awk '{ print $2 }' "$batch_dir/pids")
	for ((r = 1; r <= rounds; r++)); do
		rm -rf "$batch_dir/out"
		mkdir -p "$batch_dir/out"
		"$PROPEL" record --follow -o "$t/batch.db" -- "$O_ABS/apps/batch-submit" \
			"$(cat "$batch_dir/schedd")" 40 "$batch_dir/out" >"$t/batch.rec" 2>&1 &
		cur_propel=$!
		k=$(rand_ms 200 2000)
		sleep "$(ms_s "$k")"
		sdir=$(session_dir "$cur_propel")
		pd=$(pgrep -P "$cur_propel" -x propeld | head -1)
		kill -9 "$cur_propel" 2>/dev/null
		wait "$cur_propel" 2>/dev/null
		cur_propel=
		# this round's submitter, by its output directory (this run's
		# own: another suite may be submitting to batch daemons of its own)
		pkill -9 -f "^$O_ABS/apps/batch-submit [^ ]+ 40 $batch_dir/out\$" 2>/dev/null
		settle $pids
		why=
		for p in $pids; do
			kill -0 "$p" 2>/dev/null || why="$why daemon $p died;"
		done
		# shadows forked by the scheduler are short-lived: their agents
		# end with them; the daemons must be switched off
		why="$why$(off_check $pids)"
		[ -n "$why" ] && snap_harm $pids
		if [ -z "$why" ]; then
			rm -rf "$batch_dir/out2"; mkdir -p "$batch_dir/out2"
			if ! timeout 60 "$O_ABS/apps/batch-submit" "$(cat "$batch_dir/schedd")" 3 \
				"$batch_dir/out2" >"$t/batch.sub" 2>&1; then
				why="$why an untraced submission failed: $(tail -1 "$t/batch.sub");"
			elif [ "$(ls "$batch_dir/out2" | wc -l)" -lt 3 ]; then
				why="$why an untraced submission left $(ls "$batch_dir/out2" | wc -l) of 3 outputs;"
			fi
		fi
		recover_bg
		[ -n "$pd" ] && rm -rf "$PROPEL_SHM"/d"$pd"-*
		verdict "$name" "$r" "$k" "$why"
	done
	case_end "$name"
	final_check "$name" $(awk '$1 != "logd" { print $2 }' "$batch_dir/pids")
	"$run" stop "$batch_dir" >/dev/null 2>&1
	batch_dir=
}

case $O in /*) O_ABS=$O ;; *) O_ABS=$PROPEL_TOP/$O ;; esac
for c in $cases; do
	echo "== $c"
	case $c in
	redis-attach) case_redis_attach "" 0 2500 redis-attach ;;
	redis-inject) case_redis_attach "" 0 400 redis-inject ;;
	redis-detach) case_redis_attach "--duration 1" 1000 1600 redis-detach ;;
	redis-record) case_redis_record ;;
	redis-follow) case_redis_follow ;;
	nginx-attach) case_nginx_attach ;;
	nginx-follow) case_nginx_follow ;;
	batch-follow) case_batch_follow ;;
	*) fail "soak/$c" "no such case" ;;
	esac
done
# the status says whether a round harmed, not what the last test of the
# loop returned (redis-record's ends in a test that is false when none did)
exit $soak_rc
