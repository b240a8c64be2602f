#!/usr/bin/env bash
# tests/e2e/console-attach.sh - attach from the live console (`propel`
# alone) in a real terminal (tmux, 80x24), in an empty directory, beside
# the distributed test app (tests/apps/dist-run.sh) under a loop of
# clients:
#
#   attach/process-view   `propel` shows the process view
#   attach/status         `/dist-front` Enter, `A`: the status line says
#                         "attached to PID (dist-front) follow" and names
#                         the session file (propel-PID-DATE.db)
#   attach/events         the status line counts events, and the count grows
#   attach/flows-10s      the pane lists at least 5 flows, ranked, within
#                         10 s of `A`
#   attach/vitals-beside  above the flows, the traced processes with their
#                         vital signs: dist-front's line (pid, command),
#                         first as the one attached to,
#                         with CPU%, OFF%, a measured SYS/s (BPF, not "-")
#                         and what it waits in (engine/node-vitals.h)
#   attach/resize-live    resized to 120x40 while attached: the pane
#                         redraws at that size (status on row 39, more
#                         flows listed than at 80x24), then back
#   attach/no-smear       no "propel: ..." line of the run on the screen;
#                         they are in the log file named beside the session
#   attach/tui-cpu        the TUI's own CPU while attached, over 5 s, under
#                         2% of a core (/proc/PID/stat; the snapshots run
#                         in a child), printed
#   attach/x-trace-view   `x`: the trace view on the stored session, the
#                         flows pane focused with rank 1 selected and the
#                         cursor on an event ("event N/M" status)
#   attach/q-quits        `q`: exit 0, the terminal restored, and the
#                         session named on stderr
#   attach/detached       no agent left on: no "propel-lease" thread in any
#                         of the app's processes (capture.sh/recover.sh's
#                         test of a detached agent)
#   attach/servers-serve  the servers still serve a client
#   attach/replay         `propel replay --format=jsonl` of the named file:
#                         the servers' send and recv events
#   hup/agents-off        tmux's session killed (the terminal hangs up, as
#                         a dropped ssh does) while attached: every agent
#                         off (no lease thread) within the lease (2 s) +
#                         0.5 s
#   hup/session-kept      the TUI exits by itself, its session file
#                         replays (stored at the hang-up, nothing left for
#                         `propel recover` to do: no directory of it left)
#   bad/refused           `a` on a process ptrace refuses (already traced
#                         by strace): one line saying so, the TUI runs on
#   real/nginx-live       Debian's nginx (tests/real/servers.sh, one
#                         worker) under wrk: `/nginx: worker`, `a`: within
#                         20 s the pane lists >= 5 of the worker's request
#                         flows; `q`: the worker untraced (TracerPid 0, no
#                         lease thread) and serving
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
. "$(dirname "$0")/../real/servers.sh"
set -uo pipefail
expect_checks 17
command -v tmux >/dev/null || { skip console-attach "tmux not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail console-attach "no $PROPEL"; exit 1; }
if ! is_root; then
	skip console-attach "needs root (ptrace of the app's servers, --follow's propeld)"
	exit 77
fi
run=$PROPEL_TOP/tests/apps/dist-run.sh
d=$(tmpdir)
chmod 755 "$d"
mkdir -p "$d/empty" "$d/hup" "$d/run"
loadpid=
sp=
tr=
cleanup() {
	tui_stop
	real_cleanup
	[ -n "$loadpid" ] && kill "$loadpid" 2>/dev/null && wait "$loadpid" 2>/dev/null
	[ -n "$sp" ] && kill -9 "$sp" ${tr:-} 2>/dev/null
	bash "$run" stop "$d/run" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT

bash "$run" start "$d/run" >/dev/null || { fail console-attach/start "dist-run.sh start failed"; exit 1; }
front=$(awk '$1 == "front" { print $2 }' "$d/run/pids")
app_pids=$(awk '{ print $2 }' "$d/run/pids")
# the load: clients of 20 requests, one after another
( while :; do bash "$run" client "$d/run" -n 20 >/dev/null 2>&1; sleep 0.05; done ) &
loadpid=$!

# flows_within MS PIDS_RE: until the live pane lists >= 5 flows whose pids
# match PIDS_RE, MS after t0 at the most; sets nfl and ms
flows_within() {
	nfl=0
	while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt "$1" ]; do
		nfl=$(tui_screen | grep -cE "^ +[0-9]+ +[0-9]+\.[0-9]+ +[0-9]+ +[0-9.]+  $2 ")
		[ "$nfl" -ge 5 ] && break
		sleep 0.2
	done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}
# select_pid PID: Home, then Down to the line of PID (the filter may
# leave others: the front end's child shares its command line)
select_pid() {
	local i
	tmx send-keys -t t Home
	sleep 0.2
	i=$(tui_screen | sed -n '3,$p' | grep -nE '^ *[0-9]+ ' | awk -v p="$1" '$2 == p { sub(":.*", "", $1); print $1 - 1; exit }')
	for ((; ${i:-0} > 0; i--)); do tmx send-keys -t t Down; done
	sleep 0.1
}
leases() { # the app's processes with a propel-lease thread
	local p n=0
	for p in $app_pids; do
		grep -qx propel-lease /proc/$p/task/*/comm 2>/dev/null && n=$((n + 1))
	done
	echo $n
}

tui_start 80 24 "cd $d/empty && $PROPEL"
if tui_wait_for "PID USER" 3 && tui_screen | grepq "CPU%  OFF%  SYS/s WAITING      COMMAND"; then
	pass attach/process-view
else
	fail attach/process-view "$(tui_screen | head -3 | tr '\n' '|')"
fi

# the front end of this suite's app by its pid (another suite's
# dist-front may be running; the front end's child shares its command
# line), then its line among any other the filter leaves
tui_keys / ; tui_keys "$front" Enter
sleep 0.3
select_pid "$front"
tmx send-keys -t t A
t0=$(date +%s%N)
tui_wait_for "attached to $front (dist-front) follow" 10
st=$(tui_status)
db=$(tui_screen | grep -o 'propel-[0-9]*-[0-9]*-[0-9]*\.db' | head -1)
if grepq "attached to $front (dist-front) follow" <<<"$st" &&
   [[ $db == propel-$front-* ]] && grepq -F "$db" <<<"$st$(tui_screen | sed -n 2p)"; then
	pass "attach/status: $st"
else
	fail attach/status "status: $st | db: $db | $(tui_message)"
fi

# at least 5 flows in the pane, within 10 s of `A`
flows_within 10000 '[0-9,]+'
if [ "$nfl" -ge 5 ] && [ $ms -le 10000 ] && tui_screen | grepq "flows complete so far, by suspect score"; then
	pass "attach/flows-10s ($nfl flows shown after $ms ms)"
else
	fail attach/flows-10s "$nfl flows after $ms ms: $(tui_screen | sed -n '2,5p' | tr '\n' '|')"
fi

ev() { tui_status | sed -n 's/.* \([0-9][0-9]*\) events .*/\1/p'; }
# (the count moves with each snapshot, every 2 s plus its own time: up
# to 10 s at a load of 18)
e1=$(ev); e2=$e1
for _ in $(seq 50); do
	sleep 0.2; e2=$(ev)
	is_num "$e1" && is_num "$e2" && [ "$e2" -gt "$e1" ] && break
done
if is_num "$e1" && is_num "$e2" && [ "$e1" -gt 0 ] && [ "$e2" -gt "$e1" ]; then
	pass "attach/events ($e1 then $e2 events)"
else
	fail attach/events "'$e1' then '$e2': $(tui_status)"
fi

# the vital signs of the traced processes beside the flows
# (the one attached to first: below its busier child and peers it had
# been "and 1 more", fcr4)
vl=$(tui_screen | grep -A1 "^TRACED  *PID COMMAND" | sed -n 2p |
	grep -E "^ +$front dist-front +[0-9.]+ +[0-9.]+ +[0-9.]+[kM]? +[a-z]")
if tui_screen | grepq "^TRACED  *PID COMMAND  *CPU%  *OFF%  *SYS/s WAITING" && [ -n "$vl" ]; then
	pass "attach/vitals-beside:$(sed 's/  */ /g' <<<"$vl")"
else
	fail attach/vitals-beside "$(tui_screen | sed -n '2,8p' | tr '\n' '|')"
fi

# resized live (a terminal window dragged over ssh)
n80=$(tui_screen | grep -cE "^ +[0-9]+ +[0-9]+\.[0-9]+ +[0-9]+ +[0-9.]+  ")
tmx resize-window -t t -x 120 -y 40
sleep 1.5
scr=$(tui_screen)
n120=$(grep -cE "^ +[0-9]+ +[0-9]+\.[0-9]+ +[0-9]+ +[0-9.]+  " <<<"$scr")
if [ "$(tmx display -p -t t '#{window_height}')" = 40 ] && sed -n 39p <<<"$scr" | grepq "attached to $front" &&
   [ "$n120" -gt "$n80" ] && grepq "^TRACED" <<<"$scr"; then
	pass "attach/resize-live ($n80 flows listed at 80x24, $n120 at 120x40)"
else
	fail attach/resize-live "$n80 then $n120 flows: $(sed -n '2p;39p' <<<"$scr" | tr '\n' '|')"
fi
tmx resize-window -t t -x 80 -y 24
sleep 0.5

log=${db%.db}.log
if ! tui_screen | grepq "propel: " && [ -s "$d/empty/$log" ] && grepq "propel: " "$d/empty/$log"; then
	pass "attach/no-smear ($(wc -l <"$d/empty/$log") lines in $log)"
else
	fail attach/no-smear "$(tui_screen | grep 'propel: ' | head -1) | log: $(ls "$d/empty")"
fi

tp=$(tui_pid)
if [ -n "$tp" ]; then
	pct=$(tui_cpu "$tp" 5)
	num_lt "attach/tui-cpu ($pct% of a core over 5 s, attached under load)" "$pct" 2 "CPU %"
else
	fail attach/tui-cpu "no propel under tmux's pane"
fi

tmx send-keys -t t x
if tui_wait_for "the most suspicious flow" 30 && tui_screen | grepq " flows by suspect score" &&
   tui_screen | grepq "^ trace" && tui_status | grepq -E "event [0-9]+/[0-9]+" &&
   tui_screen | grep -E '^ +1 +[0-9]+ +[0-9.]+ ' >/dev/null; then
	pass "attach/x-trace-view: $(tui_status)"
else
	fail attach/x-trace-view "$(tui_screen | sed -n '1,3p;23,24p' | tr '\n' '|')"
fi

tui_keys q
if tui_wait_for "EXITED 0" 10 && tmx capture-pane -p -t t -S -20 | tr -d '\n' | grepq -F "session stored in $db" &&
   [ "$(tmx display -p -t t '#{alternate_on}')" = 0 ]; then
	pass attach/q-quits
else
	fail attach/q-quits "$(tui_screen | grep -v '^$' | tail -3 | tr '\n' '|')"
fi
tui_stop

sleep 0.5
n=$(leases)
[ "$n" = 0 ] && pass attach/detached || fail attach/detached "$n of the app's processes still have a propel-lease thread"

kill "$loadpid" 2>/dev/null; wait "$loadpid" 2>/dev/null; loadpid=
if bash "$run" client "$d/run" -n 5 >/dev/null 2>&1; then
	pass attach/servers-serve
else
	fail attach/servers-serve "a client of 5 requests failed after the detach"
fi

js=$("$PROPEL" replay --format=jsonl "$d/empty/$db" 2>&1)
kp() { grep -E "\"kind\": ?\"$1\"" <<<"$js" | grep -cE "\"pid\": ?$front[,}]"; }
if [ "$(kp send)" -gt 0 ] && [ "$(kp recv)" -gt 0 ]; then
	pass "attach/replay ($(wc -l <<<"$js") events)"
else
	fail attach/replay "$(head -c 300 <<<"$js")"
fi

# ---- a hang-up while attached ----
( while :; do bash "$run" client "$d/run" -n 20 >/dev/null 2>&1; sleep 0.05; done ) &
loadpid=$!
tui_start 80 24 "cd $d/hup && $PROPEL"
tui_wait_for "PID USER" 3
# the front end of this suite's app by its pid (another suite's
# dist-front may be running; the front end's child shares its command
# line), then its line among any other the filter leaves
tui_keys / ; tui_keys "$front" Enter
sleep 0.3
select_pid "$front"
tmx send-keys -t t A
tui_wait_for "attached to $front" 10
sleep 3
tp=$(tui_pid)
tmx kill-server; th=$(date +%s.%N)
off=99
for _ in $(seq 60); do
	[ "$(leases)" = 0 ] && { off=$(awk -v t="$th" -v n="$(date +%s.%N)" 'BEGIN { printf "%.2f", n - t }'); break; }
	sleep 0.05
done
num_le "hup/agents-off (${off}s after the hang-up)" "$off" 2.5 "seconds"
# (ended: a zombie too -- the pane's shell is gone, init reaps it late)
for _ in $(seq 200); do running "$tp" || break; sleep 0.1; done
hdb=$(ls "$d/hup"/propel-"$front"-*.db 2>/dev/null | head -1)
if ! running "$tp" && [ -n "$hdb" ] &&
   "$PROPEL" replay "$hdb" 2>/dev/null | grepq "dist-front\|front_" &&
   ! grep -qs "^$tp " /dev/shm/propel/*/coordinator; then
	pass "hup/session-kept ($(basename "$hdb"))"
else
	fail hup/session-kept "tui alive: $(running "$tp" && echo yes || echo no), files: $(ls "$d/hup" | tr '\n' ' ')"
fi
kill "$loadpid" 2>/dev/null; wait "$loadpid" 2>/dev/null; loadpid=

# ---- ptrace refuses: a process strace already traces ----
secs=$((200000 + $$))  # a command line no other suite's process has
strace -o /dev/null sleep $secs &
sp=$!
tr=
for _ in $(seq 50); do
	tr=$(pgrep -P "$sp" -x sleep) && [ -n "$tr" ] && break
	sleep 0.05
done
tui_start 80 24 "cd $d/empty && $PROPEL"
tui_wait_for "PID USER" 3
tui_keys / ; tui_keys "sleep $secs" Enter
# (until the list shows the tracee's row and only strace's beside it --
# the filter's own text is on the screen at once, and tmux's send-keys
# of it is a process that matches while it runs --, then until the
# attach answers: fixed sleeps of 1.3 and 0.5 s were too short on a
# loaded machine)
for _ in $(seq 100); do
	scr=$(tui_screen)
	grepq -E "^ *$tr " <<<"$scr" && grepq " 2 match " <<<"$scr" && break
	sleep 0.1
done
tui_keys End
tui_keys a
for _ in $(seq 100); do
	tui_message | grepq "attach $tr" && break
	sleep 0.1
done
m=$(tui_message)
if grepq "attach $tr: already traced by pid $sp" <<<"$m" && tui_screen | grepq "CPU%  OFF%  SYS/s WAITING      COMMAND" &&
   tui_keys q && tui_wait_for "EXITED 0" 3; then
	pass "bad/refused: $m"
else
	fail bad/refused "tracee $tr: $m | $(tui_status)"
fi
tui_stop

# ---- a real server: nginx under wrk ----
if ! [ -x /usr/sbin/nginx ] || ! command -v wrk >/dev/null || ! command -v curl >/dev/null; then
	skip real/nginx-live "no /usr/sbin/nginx, wrk or curl (tests/install-deps.sh test)"
elif ! nginx_start "$d/nx"; then
	fail real/nginx-live "nginx did not start"
else
	wk=$NGINX_WORKER
	wrk_bg_start "$d/wrk.out" 60
	mkdir -p "$d/nginx"
	tui_start 80 24 "cd $d/nginx && $PROPEL"
	tui_wait_for "PID USER" 3
	# by its pid: another suite's nginx may run beside this one (J=2:
	# "2 match /nginx: worker", Home took the other, already traced)
	tui_keys / ; tui_keys "$wk" Enter
	sleep 1.3
	tmx send-keys -t t Home a
	t0=$(date +%s%N)
	flows_within 20000 "$wk"
	st=$(tui_status)
	tui_keys q
	tui_wait_for "EXITED 0" 30
	wrk_bg_stop
	sleep 0.3
	why=
	[ "$nfl" -ge 5 ] || why="$nfl flows of $wk after $ms ms: $st"
	[ -z "$why" ] && ! tui_screen | grepq "EXITED 0" && why="q: $(tui_screen | grep -v '^$' | tail -2 | tr '\n' '|')"
	[ -z "$why" ] && [ "$(awk '/TracerPid/ { print $2 }' /proc/$wk/status 2>/dev/null)" != 0 ] && why="worker $wk traced or gone"
	[ -z "$why" ] && grep -qx propel-lease /proc/$wk/task/*/comm 2>/dev/null && why="worker $wk: propel-lease left"
	[ -z "$why" ] && ! nginx_get index.html "$d/i.out" && why="nginx does not serve after"
	if [ -z "$why" ]; then
		pass "real/nginx-live ($nfl flows of worker $wk shown after $ms ms; $(grep -o '[0-9.]* events' <<<"$st"))"
	else
		fail real/nginx-live "$why"
	fi
	tui_stop
	nginx_stop
fi
