#!/usr/bin/env bash
# tests/e2e/tui-browse.sh - the trace browser at gdb and uftrace parity
# (issue 33), under tmux at 80x24 and 120x40, on real recordings of two
# small programs written and built here (`propel record`):
#   deep  main -> work() x3 (returned calls), then rec() forty deep and a
#         NULL dereference in leaf(); built from a build directory as
#         `cc ../src/deep.c`, so its DWARF names the file relative to its
#         DW_AT_comp_dir; the TUI is started from / (not where the source
#         is); the source is indented with tabs
#   pair  a parent and its forked child answering each other over pipes
# Checks, per size (deep):
#   SIZE/duration        returned calls show their duration in uftrace's
#                        units at the right of their line (work() { 75.282 us)
#   SIZE/status-time     the status line: the process's command, the time
#                        since the start and the position
#   SIZE/fault-colour    the fault line is drawn with a colour pair: white on
#                        red (SGR 41 in `capture-pane -e`)
#   SIZE/depth-marker    lines deeper than the indentation shows carry their
#                        true depth (⋮41, ⋮42 ...), never two depths bare in
#                        one column
#   SIZE/comp-dir-source the fault's line in the source pane, found through
#                        DW_AT_comp_dir from another directory, tabs expanded
#                        to 8 columns
#   SIZE/trace-half      the trace pane has at least half the rows
#   SIZE/bt-list         `:bt`: one frame a line, #0 leaf at the fault line,
#                        #1 rec at the line that calls leaf
#   SIZE/up-moves        `:up`: the cursor at leaf's call line in rec (status
#                        line: rec deep.c:LINE), gdb's frame line said
#   SIZE/down-back       `:down`: back at the fault
#   SIZE/search-next-prev  `/work`: match 1/3; `>` match 2/3; `<` match 1/3;
#                        every hit in view highlighted (black on yellow)
#   SIZE/search-back     `\SIGSEGV` (backward) finds the signal: match 1/1
#   SIZE/tab-command     `:fra` Tab completes to `:frame`
#   SIZE/tab-function    `:break le` Tab completes to `:break leaf`
#   SIZE/mouse-pane      a click through tmux's mouse events (propel in an
#                        inner tmux with `mouse on`, its client in the outer
#                        pane fed the terminal's SGR mouse report) on the
#                        source pane focuses it: Up then scrolls the source,
#                        not the trace
#   SIZE/mouse-line      a click on a trace line moves the cursor there
#   SIZE/mouse-wheel     the wheel up over the trace: three lines up
# Once (80x24):
#   goto-time            `:goto` with the time as the status line shows it
#                        comes back to that event
#   list                 `:list` at the fault: the lines around it, the
#                        fault's marked
#   tab-view             `:view roo` Tab completes to `:view rootcause`
#   step-count           `:step 5` from the first event: event 6
#   info-breakpoints     two breaks listed with gdb's numbers; `delete 1`
#                        leaves one
#   usage-error          a wrong `:frame x` names the usage
#   print                `:print` shows the event's fields (a box, one a
#                        line; the message line begins them)
#   help-fits            F1: the help box, every line inside its border
#   no-color             NO_COLOR=1: the fault line is reverse, no colour
#   f10-quits            F10 quits, the terminal restored
# Once (pair):
#   crossing             `s` at a send lands in the other process and says
#                        "[Switching to process P (pair) thread T]"
#   peer-command         the send names its peer by pid:tid and command
#   search-pid           `/PID` hits where that thread begins and the lines
#                        naming it as a peer (at least two)
#   search-fd            `/fd=N` (the send's fd): "match 1/K", K = the sends
#                        and recvs on fd N in replay
#   threads-keys         the threads pane: its header, both processes by
#                        command; Tab to it, `j` and Enter switch to the
#                        second thread (the status line says it)
#   flows-duration       `:view flows`: each flow's duration and processes
#                        by command ("pair ×2")
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 48
command -v tmux >/dev/null || { skip tui-browse "tmux not installed"; exit 77; }
command -v cc >/dev/null || { skip tui-browse "no C compiler"; exit 77; }
[ -x "$PROPEL" ] || { fail tui-browse "no $PROPEL"; exit 1; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
mkdir -p "$d/src" "$d/bld"

cat >"$d/src/deep.c" <<'C'
/* deep.c - tests/e2e/tui-browse.sh: forty nested calls, then a crash */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int leaf(int *p)
{
	int v;

	v = *p; /* @fault */
	return v;
}

__attribute__((noinline)) int rec(int n, int *p)
{
	if (n == 0)
		return leaf(p); /* @call-leaf */
	return rec(n - 1, p) + 1;
}

__attribute__((noinline)) long work(long k)
{
	long s = 0, i;

	for (i = 0; i < k; i++)
		s += i * i % 7;
	return s;
}

int main(int argc, char **argv)
{
	int i, x = 1;

	for (i = 0; i < 3; i++)
		printf("%ld\n", work(100000 * (i + 1)));
	fflush(stdout);
	return rec(40, argc > 5 ? &x : NULL);
}
C
cat >"$d/src/pair.c" <<'C'
/* pair.c - tests/e2e/tui-browse.sh: a parent that sends to its child
 * through a pipe; the child answers on a second pipe */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void produce(int fd, int k)
{
	char msg[32];

	snprintf(msg, sizeof(msg), "job %d\n", k);
	write(fd, msg, strlen(msg));
}

__attribute__((noinline)) int consume(int fd)
{
	char buf[32];

	return (int)read(fd, buf, sizeof(buf));
}

int main(void)
{
	int up[2], down[2], k, st;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return 1;
	pid = fork();
	if (pid == 0) {
		for (k = 0; k < 3; k++) {
			consume(down[0]);
			produce(up[1], k);
		}
		_exit(0);
	}
	for (k = 0; k < 3; k++) {
		produce(down[1], k);
		consume(up[0]);
	}
	waitpid(pid, &st, 0);
	return 0;
}
C
(cd "$d/bld" && cc -g -O0 -o deep ../src/deep.c && cc -g -O0 -o pair ../src/pair.c) ||
	{ fail tui-browse/build "cc failed"; exit 1; }
(cd "$d/bld" && timeout 60 "$PROPEL" record -o "$d/deep.db" -- ./deep >"$d/deep.out" 2>"$d/deep.err")
[ -s "$d/deep.db" ] || { fail tui-browse/record "$(head -c 300 "$d/deep.err")"; exit 1; }
(cd "$d/bld" && timeout 60 "$PROPEL" record -o "$d/pair.db" -- ./pair >"$d/pair.out" 2>"$d/pair.err") ||
	{ fail tui-browse/record-pair "$(head -c 300 "$d/pair.err")"; exit 1; }
fault=$(grep -n '@fault' "$d/src/deep.c" | cut -d: -f1)
callleaf=$(grep -n '@call-leaf' "$d/src/deep.c" | cut -d: -f1)


for size in 80x24 120x40; do
	w=${size%x*} h=${size#*x}
	tui_start "$w" "$h" "cd / && $PROPEL tui $d/deep.db"
	tui_wait_for "[fault]" 10
	scr=$(tui_screen)
	nev=$(tui_status | sed -n 's/.* event \([0-9]*\)\/.*/\1/p')
	# the colour of the fault line (the cursor is on it)
	if tmx capture-pane -e -p -t t | grep -a 'SIGSEGV' | head -1 | grep -qaE $'\e\\[([0-9;]*;)?41m'; then
		pass "tui-browse/$size/fault-colour"
	else
		fail "tui-browse/$size/fault-colour" "$(tmx capture-pane -e -p -t t | grep -a SIGSEGV | head -1 | cat -v)"
	fi
	if grep -qE '⋮39 rec\(\) \{' <<<"$scr" && grep -qE '⋮4[01] rec\(\) \{' <<<"$scr" &&
		grep -qE '⋮42 leaf\(\) \{' <<<"$scr" && grep -qE '⋮43 \*\*\* SIGSEGV' <<<"$scr"; then
		pass "tui-browse/$size/depth-marker"
	else
		fail "tui-browse/$size/depth-marker" "$(tr '\n' '|' <<<"$scr")"
	fi
	# the source: ../src/deep.c under DW_AT_comp_dir, from /; the tab
	# before the fault line's code is 8 columns
	if grep -qE "^ +$fault>        v = \\*p; /\\* @fault \\*/" <<<"$scr"; then
		pass "tui-browse/$size/comp-dir-source"
	else
		fail "tui-browse/$size/comp-dir-source" "$(head -8 <<<"$scr" | tr '\n' '|')"
	fi
	top=$(grep -n '^ trace ' <<<"$scr" | cut -d: -f1)
	bot=$(grep -n '^ threads' <<<"$scr" | cut -d: -f1)
	if [ -n "$top" ] && [ -n "$bot" ] && [ $((bot - top)) -ge $((h / 2)) ] &&
		grep -qE '^ trace  deep [0-9]+  thread [0-9]+' <<<"$scr"; then
		pass "tui-browse/$size/trace-half"
	else
		fail "tui-browse/$size/trace-half" "trace from row $top to $bot of $h: $(grep -E '^ (trace|threads|source)' <<<"$scr" | tr '\n' '|')"
	fi
	# bt: one frame a line
	tui_cmd bt
	scr=$(tui_screen)
	nfr=$(grep -cE '#[0-9]+ +(leaf|rec|main) \(\) at deep\.c:[0-9]+' <<<"$scr")
	if grep -qE "#0 +leaf \(\) at deep\.c:$fault " <<<"$scr" &&
		grep -qE "#1 +rec \(\) at deep\.c:$callleaf " <<<"$scr" &&
		[ "$nfr" -ge $((h - 8)) ] && tui_message | grepq '^bt: 43 frames: #0 leaf #1 rec'; then
		pass "tui-browse/$size/bt-list"
	else
		fail "tui-browse/$size/bt-list" "$nfr frame lines: $(tr '\n' '|' <<<"$scr")"
	fi
	tui_keys Escape
	tui_cmd up
	if tui_status | grepq -E "^ [0-9]+:[0-9]+  rec  deep\.c:$callleaf  event $((nev - 1))/$nev" &&
		tui_screen | grepq -E '^> +⋮42 leaf\(\) \{' &&
		tui_message | grepq -E "^#1 +rec \(\) at deep\.c:$callleaf"; then
		pass "tui-browse/$size/up-moves"
	else
		fail "tui-browse/$size/up-moves" "$(tui_status) | $(tui_message)"
	fi
	tui_cmd down
	if tui_status | grepq -E "  leaf  deep\.c:$fault  event $nev/$nev  \[fault\]"; then
		pass "tui-browse/$size/down-back"
	else
		fail "tui-browse/$size/down-back" "$(tui_status) | $(tui_message)"
	fi
	# search: from the fault, forward wraps to the first work()
	tui_keys / w o r k Enter
	m1=$(tui_message)
	hl=$(tmx capture-pane -e -p -t t | grep -caE $'\e\\[([0-9;]*;)?30m\e\\[43mwork|\e\\[([0-9;]*;)?30;43mwork')
	# the calls of work in the trace pane (the threads pane's line of
	# the cursor's thread names its function too)
	vis=$(tui_screen | grep 'work() {' | grep -vcE '^[* ] +[0-9]+ +[0-9]+:[0-9]+ ')
	tui_keys '>'
	m2=$(tui_message)
	tui_keys '<'
	m3=$(tui_message)
	if grepq '^match 1/3: work' <<<"$m1" && grepq '^match 2/3: work' <<<"$m2" &&
		grepq '^match 1/3: work' <<<"$m3" && [ "$vis" -ge 2 ] && [ "$hl" -eq "$vis" ]; then
		pass "tui-browse/$size/search-next-prev"
	else
		fail "tui-browse/$size/search-next-prev" "[$m1] [$m2] [$m3] highlighted $hl of $vis in view"
	fi
	# the durations: the cursor is on the first work() {, which returned
	if tui_screen | grepq -E '^>.*work\(\) \{ +[0-9]+\.[0-9]{3} (us|ms) *$' &&
		tui_screen | grepq -E '} /\* work \*/ +[0-9]+\.[0-9]{3} (us|ms) *$'; then
		pass "tui-browse/$size/duration"
	else
		fail "tui-browse/$size/duration" "$(tui_screen | grep work | tr '\n' '|')"
	fi
	if tui_status | grepq -E ' event [0-9]+/[0-9]+ +deep  \+[0-9.]+ (ns|us|ms|s) +[0-9]+% *$'; then
		pass "tui-browse/$size/status-time"
	else
		fail "tui-browse/$size/status-time" "$(tui_status)"
	fi
	tui_keys '\' S I G S E G V Enter
	if tui_message | grepq '^match 1/1: SIGSEGV' && tui_status | grepq '\[fault\]'; then
		pass "tui-browse/$size/search-back"
	else
		fail "tui-browse/$size/search-back" "$(tui_message) | $(tui_status)"
	fi
	tui_keys : f r a Tab
	if tui_message | grepq '^:frame *$'; then
		pass "tui-browse/$size/tab-command"
	else
		fail "tui-browse/$size/tab-command" "$(tui_message)"
	fi
	tui_keys Escape
	tui_keys : b r e a k Space l e Tab
	if tui_message | grepq '^:break leaf *$'; then
		pass "tui-browse/$size/tab-function"
	else
		fail "tui-browse/$size/tab-function" "$(tui_message)"
	fi
	tui_keys Escape
	tui_stop
done

# ---- the mouse, through tmux: propel runs in an inner tmux server with
# `mouse on`, whose client runs in the outer pane; a click is the SGR
# mouse report the client's terminal (the outer pane) sends it, which
# the inner server turns into its own mouse event and passes to propel
# (ncurses' mousemask asked for the mouse) ----
IN=propel-tui-in-$$
tin() { tmux -L "$IN" "$@"; }
trap 'tui_stop; tin kill-server 2>/dev/null; rm -rf "$d"' EXIT
# SGR report of button 1 at (col, row), 0-based: press, then release
click() {
	tmx send-keys -t t -l "$(printf '\033[<0;%d;%dM' $(($1 + 1)) $(($2 + 1)))"
	tmx send-keys -t t -l "$(printf '\033[<0;%d;%dm' $(($1 + 1)) $(($2 + 1)))"
	sleep 0.4
}
in_screen() { tin capture-pane -p -t t; }
in_status() { in_screen | tail -n 2 | head -n 1; }
# until the inner screen (-e: with its attributes) matches regex $2; 5 s
in_wait() {
	local i
	for ((i = 0; i < 50; i++)); do
		tin capture-pane $1 -p -t t | grep -qaE -- "$2" && return 0
		sleep 0.1
	done
	return 1
}
for size in 80x24 120x40; do
	w=${size%x*} h=${size#*x}
	tin kill-server 2>/dev/null
	tin -f /dev/null new-session -d -s t -x "$w" -y "$h" "cd / && $PROPEL tui $d/deep.db; sleep 60"
	tin set -g mouse on
	tin set -g status off
	tui_start "$w" "$h" "TERM=xterm-256color tmux -L $IN attach -t t"
	for _ in $(seq 50); do in_screen | grepq '\[fault\]' && tui_screen | grepq '\[fault\]' && break; sleep 0.1; done
	# a click on the source pane focuses it: Up then scrolls the source
	ev0=$(in_status | sed -n 's/.* event \([0-9]*\)\/.*/\1/p')
	srow=$(in_screen | grep -nE "^ +$fault>" | head -1 | cut -d: -f1)
	first0=$(in_screen | sed -n 2p)
	click 10 $((srow - 1))
	in_wait -e $'^\e\\[([0-9;]*;)?7m source'
	tmx send-keys -t t Up
	for _ in $(seq 50); do [ "$(in_screen | sed -n 2p)" != "$first0" ] && break; sleep 0.1; done
	if [ "$(in_screen | sed -n 2p)" != "$first0" ] &&
		[ "$(in_status | sed -n 's/.* event \([0-9]*\)\/.*/\1/p')" = "$ev0" ] &&
		tin capture-pane -e -p -t t | head -1 | grep -qaE $'\e\\[([0-9;]*;)?7m source'; then
		pass "tui-browse/$size/mouse-pane"
	else
		fail "tui-browse/$size/mouse-pane" "event $ev0 -> $(in_status) | $(in_screen | head -2 | tr '\n' '|')"
	fi
	# a click on the line above the cursor's, in the trace
	crow=$(in_screen | grep -n '^>' | head -1 | cut -d: -f1)
	click 20 $((crow - 2))
	in_wait -p " event $((ev0 - 1))/"
	if in_status | grepq -E " event $((ev0 - 1))/"; then
		pass "tui-browse/$size/mouse-line"
	else
		fail "tui-browse/$size/mouse-line" "from event $ev0: $(in_status)"
	fi
	# the wheel up over the trace: three lines up
	tmx send-keys -t t -l "$(printf '\033[<64;%d;%dM' 21 $((crow - 1)))"
	in_wait -p " event $((ev0 - 4))/"
	if in_status | grepq -E " event $((ev0 - 4))/"; then
		pass "tui-browse/$size/mouse-wheel"
	else
		fail "tui-browse/$size/mouse-wheel" "from event $((ev0 - 1)): $(in_status)"
	fi
	tui_stop
	tin kill-server 2>/dev/null
done

# ---- once, at 80x24 ----
tui_start 80 24 "cd / && $PROPEL tui $d/deep.db"
tui_wait_for "[fault]" 10
tui_keys Home
tui_keys Down Down Down
st=$(tui_status)
at=$(sed -n 's/.* \(+[0-9.]* [nums]*\) .*/\1/p' <<<"$st")
ev=$(sed -n 's/.* event \([0-9]*\)\/.*/\1/p' <<<"$st")
tui_keys End
tui_cmd goto "$at"
# the first event shown at that time (a call and its return a few ns
# apart show one time: fcr4 had register_tm_clones' entry and exit both
# at +6.700 ms, and goto took the first, event 3 for event 4's time)
got=$(sed -n 's/.* event \([0-9]*\)\/.*/\1/p' <<<"$(tui_status)")
if [ -n "$at" ] && tui_status | grepq " $at " && [ -n "$got" ] && [ "$got" -le "$ev" ]; then
	pass tui-browse/goto-time
else
	fail tui-browse/goto-time "goto '$at' (event $ev): $(tui_status) | $(tui_message)"
fi
# list: the source around the cursor's line, the fault's marked
tui_keys End
tui_cmd list
scr=$(tui_screen)
if grep -qE "│ +$fault> +v = \*p; /\* @fault \*/ +│" <<<"$scr" &&
	grep -qE "│ +$((fault - 3)) " <<<"$scr" && grep -qE "│ +$((fault + 3)) " <<<"$scr"; then
	pass tui-browse/list
else
	fail tui-browse/list "$(tr '\n' '|' <<<"$scr")"
fi
tui_keys Escape
# Tab completes a view's name after :view
tui_keys : v i e w Space r o o Tab
if tui_message | grepq -E '^:view rootcause *$'; then
	pass tui-browse/tab-view
else
	fail tui-browse/tab-view "$(tui_message)"
fi
tui_keys C-u Escape
tui_keys Home
tui_cmd step 5
tui_status | grepq ' event 6/' && pass tui-browse/step-count ||
	fail tui-browse/step-count "$(tui_status) | $(tui_message)"
tui_cmd break work
tui_cmd break rec
tui_cmd info breakpoints
scr=$(tui_screen)
tui_keys Escape
tui_cmd delete 1
if grep -qE '│ *1 +work *│' <<<"$scr" && grep -qE '│ *2 +rec *│' <<<"$scr" &&
	tui_message | grepq '^breakpoint 1 deleted (1 left)'; then
	pass tui-browse/info-breakpoints
else
	fail tui-browse/info-breakpoints "$(grep '│' <<<"$scr" | tr '\n' '|') | $(tui_message)"
fi
tui_cmd frame x
tui_message | grepq 'usage: frame N' && pass tui-browse/usage-error ||
	fail tui-browse/usage-error "$(tui_message)"
tui_keys End
tui_cmd print
scr=$(tui_screen)
if tui_message | grepq -E '^\$[0-9]+ = \{kind = signal, time = \+[0-9.]+ (us|ms|s), ' &&
	grepq -E '│ *signo += 11 \(SIGSEGV\) *│' <<<"$scr" && grepq -E '│ *addr += 0x0 *│' <<<"$scr"; then
	pass tui-browse/print
else
	fail tui-browse/print "$(tui_message) | $(grep '│' <<<"$scr" | tr '\n' '|')"
fi
tui_keys Escape
tui_keys F1
scr=$(tui_screen)
# every row of the box: its right border in one column
rows=$(grep -cE '^ *│.*│' <<<"$scr")
inside=$(grep -E '^ *│' <<<"$scr" | python3 -c 'import sys; print(len({l.rstrip().rfind("│") for l in sys.stdin}))')
if grepq ' help ' <<<"$scr" && grepq 'F10 quit' <<<"$scr" && [ "$rows" -ge 12 ] && [ "$inside" -eq 1 ]; then
	pass tui-browse/help-fits
else
	fail tui-browse/help-fits "$inside widths: $(tr '\n' '|' <<<"$scr")"
fi
tui_keys Escape
tui_keys F10
if tui_wait_for "EXITED 0" 3 && [ "$(tmx display -p -t t '#{alternate_on}')" = 0 ]; then
	pass tui-browse/f10-quits
else
	fail tui-browse/f10-quits "$(tui_screen | tail -3 | tr '\n' '|')"
fi
tui_start 80 24 "cd / && NO_COLOR=1 $PROPEL tui $d/deep.db"
tui_wait_for "[fault]" 10
line=$(tmx capture-pane -e -p -t t | grep -a 'SIGSEGV' | head -1)
if grep -qaE $'\e\\[([0-9;]*;)?7m' <<<"$line" && ! grep -qaE $'\e\\[([0-9;]*;)?(4[1-7]|3[1-7])m' <<<"$line"; then
	pass tui-browse/no-color
else
	fail tui-browse/no-color "$(cat -v <<<"$line")"
fi
tui_stop

# ---- pair: crossing processes ----
"$PROPEL" replay --format=jsonl "$d/pair.db" >"$d/pair.jsonl" 2>/dev/null
read -r rpid rtid spid stid sts < <(python3 - "$d/pair.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["kind"] == "recv" and "match" in e and e["match"]["pid"] != e["pid"]:
        m = e["match"]
        print(e["pid"], e["tid"], m["pid"], m["tid"], m["ts_ns"])
        break
PY
)
tui_start 80 24 "$PROPEL" tui "$d/pair.db"
tui_wait_for "event " 10
tui_cmd thread "$stid"
tui_cmd goto "@$sts"
sendline=$(tui_screen | grep '^>')
tui_keys s
if [ -n "$rpid" ] && tui_message | grepq -F "[Switching to process $rpid (pair) thread $rtid" &&
	tui_status | grepq "^ $rpid:$rtid "; then
	pass tui-browse/crossing
else
	fail tui-browse/crossing "send of $spid:$stid at $sts -> $rpid:$rtid: $(tui_message) | $(tui_status)"
fi
if grepq -E "send fd=[0-9]+ [0-9]+ bytes -> $rpid:$rtid \(pair\)" <<<"$sendline"; then
	pass tui-browse/peer-command
else
	fail tui-browse/peer-command "$sendline"
fi
# a pid: where its thread begins, and the lines naming it as a peer
tui_keys / $(sed 's/./& /g' <<<"$stid") Enter
nhit=$(tui_message | sed -n "s/^match [0-9]*\/\([0-9]*\): $stid .*/\1/p")
if [ "${nhit:-0}" -ge 2 ]; then
	pass tui-browse/search-pid
else
	fail tui-browse/search-pid "$(tui_message)"
fi
# an fd: every send and recv on it (the trace's "fd=N"), counted
fd=$(sed -n 's/.*send fd=\([0-9]*\) .*/\1/p' <<<"$sendline")
nfd=$(jq -r 'select((.kind == "send" or .kind == "recv") and .fd == '"${fd:-0}"') | .kind' "$d/pair.jsonl" | wc -l)
tui_keys / f d = "$fd" Enter
if [ -n "$fd" ] && [ "$nfd" -ge 2 ] && tui_message | grepq -E "^match [0-9]+/$nfd: fd=$fd "; then
	pass tui-browse/search-fd
else
	fail tui-browse/search-fd "fd=$fd: $nfd in replay; $(tui_message)"
fi
# the threads pane: its header, each thread's command; j there moves its
# selection as in every pane, Enter switches to that thread
tui_keys Home
tui_keys Tab
tui_keys j Enter
scr=$(tui_screen)
two=$(sed -n 's/^\* \+2 \([0-9]*:[0-9]*\) .* pair in .*/\1/p' <<<"$scr")
if grep -qE '^ threads at the cursor' <<<"$scr" && grep -qE "^ +1 [0-9]+:[0-9]+ .* pair in " <<<"$scr" &&
	[ -n "$two" ] && tui_status | grepq "^ $two " &&
	{ [ "$two" = "$spid:$stid" ] || [ "$two" = "$rpid:$rtid" ]; }; then
	pass tui-browse/threads-keys
else
	fail tui-browse/threads-keys "send $spid:$stid recv $rpid:$rtid: $(tail -6 <<<"$scr" | tr '\n' '|')"
fi
tui_keys BTab
tui_cmd view flows
tui_wait_for "DURATION PROCESSES" 10
if tui_screen | grepq -E '^ +1 +[0-9]+ +[0-9.]+ .* [0-9.]+ (ns|us|ms|s) pair ×2 \('; then
	pass tui-browse/flows-duration
else
	fail tui-browse/flows-duration "$(tui_screen | head -6 | tr '\n' '|')"
fi
tui_stop
