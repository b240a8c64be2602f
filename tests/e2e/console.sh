#!/usr/bin/env bash
# tests/e2e/console.sh - the live console (`propel` alone, `propel top`) in a
# real terminal (tmux) at 80x24, started in an empty directory beside a
# running server of the test apps (tests/apps/dist-run.sh):
#
#   console/help                  `propel --help` and `propel top --help`
#                                 describe the console
#   console/tui-without-session   `propel tui` in the empty directory: the
#                                 one-line error it always gave
#   console/first-screen-1s       within 1 s: the process view, a screenful
#                                 of processes
#   console/server-listed         the server's line, with its pid and
#                                 command (paging down from the busiest)
#   console/status-says-source    the status line says where the
#                                 kernel's figures come from (as root: BPF)
#   console/waiting-spans         a shell looping on `sleep 0.05`: WAITING
#                                 "child wait4", from the off-CPU spans
#   console/waiting-proc          a cat blocked on a FIFO nobody writes
#                                 (no span ever ends): "in read", from
#                                 /proc/PID/syscall
#   console/syscalls-rate         dd copying one byte at a time: SYS/s
#                                 over 10k
#   console/filter                `/dist-back` Enter leaves only the lines
#                                 of dist-back processes, the server's too
#   console/dimmed-reason         a kernel thread and propel itself are
#                                 shown with why they may not be traced
#   console/hangup-exits          a TUI whose terminal hangs up (tmux's
#                                 server killed) while SIGHUP and SIGTERM
#                                 do not end it -- the live console's own
#                                 handlers, kept by the trace view that `x`
#                                 opens -- exits instead of spinning on the
#                                 dead terminal at 100% of a core
#   console/attach-gone           `a` on a process that exited since it was
#                                 listed: one line saying so, the process
#                                 view stays (attaching for real:
#                                 tests/e2e/console-attach.sh)
#   console/80x24-fits            24 rows, none over 80 columns, status on
#                                 row 23, the header on row 2
#   console/resize-redraws        a resize to 100x30 redraws at that size
#   console/cpu                   the console's own CPU over 10 s under 2%
#                                 of a core (/proc/PID/stat), printed
#   console/quit-restores         `q`: exit 0, the terminal restored
#   console/terms                 under TERM=xterm-256color, screen,
#                                 tmux-256color and vt100 (as ssh brings
#                                 them): the header, 15 lines, the status
#                                 line, and `q` exits 0 restoring the
#                                 terminal
#   console/not-root-lists        as nobody: still lists processes (the
#                                 server, dimmed as another user's) and the
#                                 status line says "not root"
#   console/not-root-quits        and quits cleanly
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 19
command -v tmux >/dev/null || { skip console "tmux not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail console "no $PROPEL"; exit 1; }
run=$PROPEL_TOP/tests/apps/dist-run.sh
d=$(tmpdir)
chmod 755 "$d"
mkdir -p "$d/empty" "$d/run"
chmod 777 "$d/empty"
cleanup() {
	tui_stop
	bash "$run" stop "$d/run" >/dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT

# --help
if "$PROPEL" --help | grepq "propel  *the live console" &&
   "$PROPEL" top --help | grepq "the live console: this node's processes" &&
   "$PROPEL" top --help | grepq "dimmed"; then
	pass console/help
else
	fail console/help "$("$PROPEL" top --help | head -3 | tr '\n' '|')"
fi

# `propel tui` where there is no session: one line, as before
out=$(cd "$d/empty" && "$PROPEL" tui 2>&1 </dev/null); rc=$?
if [ $rc = 1 ] && [ "$out" = "propel: tui: propel.db: No such file or directory" ]; then
	pass console/tui-without-session
else
	fail console/tui-without-session "rc=$rc: $out"
fi

bash "$run" start "$d/run" >/dev/null || { fail console/start "dist-run.sh start failed"; exit 1; }
back=$(awk '$1 == "back" { print $2 }' "$d/run/pids")

# the first screen, within 1 s of the start (tmux's new-session returns
# once the command runs): the header and a screenful of processes
t0=$(date +%s%N)
tui_start 80 24 "cd $d/empty && $PROPEL"
n=0
for _ in $(seq 100); do
	n=$(tui_screen | sed -n '3,22p' | grep -cE '^ *[0-9]+ ')
	[ "$n" -ge 15 ] && tui_screen | grepq "PID USER .*CPU%  OFF%  SYS/s WAITING      COMMAND" && break
	sleep 0.01
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$n" -ge 15 ] && [ $ms -le 1000 ]; then
	pass "console/first-screen-1s ($ms ms)"
else
	fail console/first-screen-1s "$n lines after $ms ms: $(tui_screen | head -4 | tr '\n' '|')"
fi
# the server is listed by pid and command (busiest first: page down to it)
# (the list is sorted again at each tick: paged from Home to its end, up
# to three times -- fcr4, a make test beside other suites: hundreds of
# processes, the idle server moved up past the pages already seen)
found=0
for _ in 1 2 3; do
	tmx send-keys -t t Home; sleep 0.1
	prev=
	for _ in $(seq 60); do
		scr=$(tui_screen)
		grep -E "^ *$back .*dist-back" >/dev/null <<<"$scr" && { found=1; break; }
		[ "$scr" = "$prev" ] && break
		prev=$scr
		tmx send-keys -t t PgDn; sleep 0.1
	done
	[ $found = 1 ] && break
done
[ $found = 1 ] && pass console/server-listed ||
	fail console/server-listed "no line of pid $back: $(tui_screen | sed -n 3p)"
tui_keys Home
# (the collectors load in the background: "BPF loading" until then)
tui_wait_for "vital signs: BPF (off-CPU spans, syscalls)" 5
if tui_status | grepq "vital signs: BPF (off-CPU spans, syscalls)"; then
	pass "console/status-says-source: $(tui_status | sed 's/.*vital signs/vital signs/')"
else
	fail console/status-says-source "$(tui_status)"
fi

# the kernel's view of three processes of known behaviour, each found by
# the filter on a command line no other process has
tag=$$
bash -c "while :; do sleep 0.05; done; : waitspan$tag" & kv_loop=$!
mkfifo "$d/fifo$tag"
sleep 1000 >"$d/fifo$tag" & kv_w=$!
cat "$d/fifo$tag" >/dev/null & kv_cat=$!
dd if=/dev/zero of=/dev/null bs=1 count=999999999$tag 2>/dev/null & kv_dd=$!
kv_line() { # pid filter-text: the process's line after 2.5 s of figures
	tui_keys / ; tui_keys "$2" Enter
	# (once the filter shows it: a loaded machine's tmux and redraw can
	# take longer than the figures' 2.5 s, and the line was not there yet)
	for ((i = 0; i < 50; i++)); do
		tui_screen | grepq -E "^ *$1 " && break
		sleep 0.2
	done
	sleep 2.5
	tui_screen | grep -E "^ *$1 " | head -1
}
l=$(kv_line $kv_loop "waitspan$tag")
grepq " child wait4 " <<<"$l" && pass "console/waiting-spans:$(sed 's/  */ /g' <<<"$l")" ||
	fail console/waiting-spans "$l"
l=$(kv_line $kv_cat "fifo$tag")
grepq " in read " <<<"$l" && pass "console/waiting-proc:$(sed 's/  */ /g' <<<"$l")" ||
	fail console/waiting-proc "$l"
l=$(kv_line $kv_dd "count=999999999$tag")
sys=$(awk '{ v = $6; if (v ~ /k$/) v *= 1000; else if (v ~ /M$/) v *= 1000000; print v + 0 }' <<<"$l")
off=$(awk '{ print $5 }' <<<"$l")
if is_num "$sys" && is_num "$off" && awk -v s="$sys" 'BEGIN { exit !(s > 10000) }'; then
	pass "console/syscalls-rate:$(sed 's/  */ /g' <<<"$l")"
else
	fail console/syscalls-rate "sys=$sys off=$off: $l"
fi
kill $kv_loop $kv_w $kv_cat $kv_dd 2>/dev/null
tui_keys / Enter

# 80x24: nothing wraps or overflows
scr=$(tui_screen)
rows=$(tmx capture-pane -p -t t | awk 'END { print NR }')
wide=$(awk 'length($0) > 80' <<<"$scr" | wc -l)
if [ "$rows" -eq 24 ] && [ "$wide" -eq 0 ] && sed -n 23p <<<"$scr" | grepq " procs .*vital signs" &&
   sed -n 2p <<<"$scr" | grepq "^    PID USER      THR   CPU%  OFF%  SYS/s WAITING      COMMAND"; then
	pass console/80x24-fits
else
	fail console/80x24-fits "rows=$rows wide=$wide: $(sed -n '2p;23p' <<<"$scr" | tr '\n' '|')"
fi

# the console's own CPU over 10 s
tpid=$(tui_pid)
if [ -n "$tpid" ]; then
	pct=$(tui_cpu "$tpid" 10)
	num_lt "console/cpu ($pct% of a core over 10 s at 80x24)" "$pct" 2 "CPU %"
else
	fail console/cpu "no propel under tmux's pane"
fi

tui_keys / ; tui_keys dist-back Enter
sleep 0.3
# (other suites may run a dist-back too: every line shown is one, the
# server's among them, and the status counts them.)  One screen judged
# whole: the list and the status of one refresh.  Each capture of its own
# could see another refresh, which listed this check's own grep (its
# arguments name dist-back): 2 lines counted, "3 match" in the status.
# A line matches by the process's whole command line, which the screen
# cuts: another suite's `tmux -L propel-tui-N ...` whose arguments name
# dist-back was listed as "tmux -L propel-tui-13500" (fcr20).  So a line
# whose cut command does not show it counts as other only when its
# process's command line (or a gone one's) does not name it either.
scr=$(tui_screen)
n=$(sed -n '3,22p' <<<"$scr" | grep -cE '^ *[0-9]+ ')
other=0
for p in $(sed -n '3,22p' <<<"$scr" | grep -E '^ *[0-9]+ ' | grep -v 'dist-back' | awk '{ print $1 }'); do
	[ -r "/proc/$p/cmdline" ] && ! tr '\0' ' ' <"/proc/$p/cmdline" | grepq dist-back &&
		other=$((other + 1))
done
if [ "$n" -ge 1 ] && [ "$other" -eq 0 ] && grepq -E "^ *$back .*dist-back" <<<"$scr" &&
   tail -n 2 <<<"$scr" | head -n 1 | grepq "$n match /dist-back"; then
	pass console/filter
else
	fail console/filter "$n lines: $(sed -n '3,5p;23p' <<<"$scr" | tr '\n' '|')"
fi
# `a` on a process that exits meanwhile (killed after it is listed,
# before the next refresh drops its line): one line, the view stays
secs=$((100000 + $$))  # a command line no other suite's process has
sleep $secs &
gone=$!
tui_keys / ; tui_keys "sleep $secs" Enter
sleep 1.3
sel=$(tui_screen | grep -cE "^ *$gone .*sleep $secs")
kill $gone; wait $gone 2>/dev/null
tmx send-keys -t t a
sleep 0.5
m1=$(tui_message)
# (the line stays 2 s, dimmed "exited", once a refresh has seen it go:
# then the key says so instead of the attach)
if [ "$sel" = 1 ] && grepq -E "attach $gone: no such process|cannot attach to $gone \(sleep\): exited" <<<"$m1" &&
   tui_screen | grepq "PID USER .*CPU%  OFF%  SYS/s WAITING      COMMAND" && ! tui_status | grepq "attached"; then
	pass "console/attach-gone: $m1"
else
	fail console/attach-gone "listed=$sel: $m1 | $(tui_status)"
fi
tui_keys / ; tui_keys kthreadd Enter
k=$(tui_screen | grep -c "\[kthreadd\]  (kernel thread)")
tui_keys / ; tui_keys "build/propel" Enter
s=$(tui_screen | grep -c "propel  (propel itself)")
if [ "$k" -ge 1 ] && [ "$s" -eq 1 ]; then
	pass console/dimmed-reason
else
	fail console/dimmed-reason "kthreadd=$k self=$s: $(tui_screen | sed -n '3,4p' | tr '\n' '|')"
fi
tui_keys / Enter

tmx resize-window -t t -x 100 -y 30
sleep 1.2
scr=$(tui_screen)
if [ "$(tmx display -p -t t '#{window_height}')" = 30 ] &&
   sed -n 29p <<<"$scr" | grepq " procs .*vital signs" && sed -n 25p <<<"$scr" | grepq -E '^ *[0-9]+ ' &&
   sed -n 2p <<<"$scr" | grepq "PID USER"; then
	pass console/resize-redraws
else
	fail console/resize-redraws "$(sed -n '2p;29p' <<<"$scr" | tr '\n' '|')"
fi
tmx resize-window -t t -x 80 -y 24

tui_keys q
if tui_wait_for "EXITED 0" 3 && ! tui_screen | grepq "CPU%  OFF%  SYS/s WAITING      COMMAND" &&
   [ "$(tmx display -p -t t '#{alternate_on}')" = 0 ]; then
	pass console/quit-restores
else
	fail console/quit-restores "$(tui_screen | tail -3 | tr '\n' '|')"
fi
tui_stop

bad=
for term in xterm-256color screen tmux-256color vt100; do
	tui_start 80 24 "cd $d/empty && TERM=$term $PROPEL"
	n=0
	for _ in $(seq 100); do
		n=$(tui_screen | sed -n '3,22p' | grep -cE '^ *[0-9]+ ')
		[ "$n" -ge 15 ] && break
		sleep 0.03
	done
	if ! tui_screen | grepq "PID USER .*CPU%  OFF%  SYS/s WAITING      COMMAND" || [ "$n" -lt 15 ] ||
	   ! tui_status | grepq " procs "; then
		bad="$bad $term: $n lines, $(tui_screen | sed -n '2p;23p' | tr '\n' '|')"
	fi
	tui_keys q
	if ! tui_wait_for "EXITED 0" 3 || [ "$(tmx display -p -t t '#{alternate_on}')" != 0 ]; then
		bad="$bad $term: q: $(tui_screen | tail -2 | tr '\n' '|')"
	fi
	tui_stop
done
[ -z "$bad" ] && pass console/terms || fail console/terms "$bad"

# not root: /proc still, and the status line says what is missing
if ! is_root || ! command -v setpriv >/dev/null; then
	skip console/not-root-lists "needs root (to become nobody) and setpriv"
	skip console/not-root-quits "needs root (to become nobody) and setpriv"
elif ! user_can_run nobody; then
	skip console/not-root-lists "nobody cannot run $PROPEL (a private checkout)"
	skip console/not-root-quits "nobody cannot run $PROPEL (a private checkout)"
else
	tui_start 80 24 "cd $d/empty && setpriv --reuid=nobody --regid=nogroup --clear-groups $PROPEL"
	tui_wait_for "CPU%" 2
	tui_keys / ; tui_keys dist-back Enter
	sleep 0.3
	if tui_screen | grep -E "^ *$back +root .*dist-back.*\(another user's: needs root\)" >/dev/null &&
	   tui_status | grepq "vital signs: /proc only (not root)"; then
		pass console/not-root-lists
	else
		fail console/not-root-lists "$(tui_screen | sed -n '3p;23p' | tr '\n' '|')"
	fi
	tui_keys q
	if tui_wait_for "EXITED 0" 3 && [ "$(tmx display -p -t t '#{alternate_on}')" = 0 ]; then
		pass console/not-root-quits
	else
		fail console/not-root-quits "$(tui_screen | tail -3 | tr '\n' '|')"
	fi
fi

# the terminal hangs up under a TUI that SIGHUP and SIGTERM do not end (a
# trace view opened by the console's `x` keeps the console's handlers; here
# the shell ignores both): it must end, not spin on the dead terminal
hsock=propel-hup-$$ hdb=$(mktemp -d)/hup.db
"$PROPEL" record -o "$hdb" -- sh -c 'echo hup' >/dev/null 2>&1
tmux -L "$hsock" new-session -d -x 80 -y 24 "trap '' HUP TERM; exec '$PROPEL' tui '$hdb'"
hp=
for _ in $(seq 50); do
	hp=$(pgrep -f "$PROPEL tui $hdb" | head -1)
	[ -n "$hp" ] && break
	sleep 0.1
done
sleep 1
tmux -L "$hsock" kill-server 2>/dev/null
st=
for _ in $(seq 30); do
	st=$(awk '/^State:/ { print $2 }' /proc/"$hp"/status 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ] && break
	sleep 0.1
done
if [ -z "$hp" ]; then fail console/hangup-exits "the TUI did not start"
elif [ -z "$st" ] || [ "$st" = Z ]; then pass console/hangup-exits
else fail console/hangup-exits "still running 3 s after the hang-up (state $st, $(awk '{ print $14 + $15 }' /proc/"$hp"/stat) ticks)"; kill -9 "$hp"; fi
rm -rf "$(dirname "$hdb")"
