#!/usr/bin/env bash
# tests/e2e/tui-variance.sh - the variance pane (`:view variance`,
# tui/view-variance.c; issue 34: "the TUI shows the same list and jumps to
# a slow flow through the top function") under tmux at 80x24, on a
# session of tests/apps/vserver-gen.py's server with its fault (s1_lrlrlr,
# depth 7, 5 ms more in 1 request of 20), every function traced
# (attach --all --timing=exact, as --adaptive times; a few seconds under
# its own client's load):
#   tui-variance/list   the pane's first function is report --variance's
#                       first (s1_lrlrlr) with the same share, its problem
#                       group above the list with its flows and cv
#   tui-variance/jump   Enter: the cursor on a call of s1_lrlrlr (the
#                       status line), the trace pane focused, and the
#                       message names the flow, the slowest of its group:
#                       at least the fault's 5 ms, and report --flows has
#                       that flow among the group's longest
#   tui-variance/busy   the analysis runs on its own thread: made to take
#                       3 s (PROPEL_TEST_BG_DELAY_MS), the pane says
#                       "grouping the flows" at once, then lists by itself
#   tui-variance/timing a session timed by sampled stamps (attach's
#                       default) says so: report --variance's "timing:"
#                       line and "estimated_records" > 0, the pane the
#                       same words; the exact session's is 0, no line
# Needs root (ptrace) and tmux.
# propel-test: takes 30
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 4
command -v tmux >/dev/null || { skip tui-variance "tmux not installed"; exit 77; }
need_root || exit 0
t=$(tmpdir)
srv=
cleanup() {
	tui_stop
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
export PROPEL_TEST_QUIET=1

python3 "$PROPEL_TOP/tests/apps/vserver-gen.py" >"$t/vserver.c" &&
	gcc -O2 -g -o "$t/vserver" "$t/vserver.c" ||
	{ fail tui-variance "cannot build the server"; exit 1; }
port=$(free_port 1)
"$t/vserver" serve "$port" s1_lrlrlr >"$t/srv" 2>&1 &
srv=$!
for _ in $(seq 100); do
	grep -q ready "$t/srv" 2>/dev/null && break
	sleep 0.05
done
"$t/vserver" client "$port" 16 >"$t/cli" 2>&1 &
cli=$!
sleep 1
"$PROPEL" attach --all --timing=exact -o "$t/s.db" --duration 6 "$srv" >"$t/attach" 2>&1 ||
	{ fail tui-variance "attach: $(tail -2 "$t/attach")"; exit 1; }
"$PROPEL" attach --all -o "$t/sampled.db" --duration 2 "$srv" >"$t/attach2" 2>&1 ||
	{ fail tui-variance "attach (sampled): $(tail -2 "$t/attach2")"; exit 1; }
wait $cli
kill $srv 2>/dev/null
wait $srv 2>/dev/null
srv=
"$PROPEL" report --variance --format=json "$t/s.db" >"$t/v.json" ||
	{ fail tui-variance "report --variance failed"; exit 1; }
# the report's JSON has four decimals, the pane two (a share one): each
# pane figure may be either rounding of the JSON's +-0.00005 (fcr6: the
# JSON's 4.2850 is 4.29 in Python, the pane's 4.28497 4.28), as a regex
read -r top share group gflows gcv < <(python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); f=d["functions"][0]; g=d["groups"][f["group"]]
alt=lambda fmt, v, k: "(%s)" % "|".join(sorted({fmt % ((v + e) * k) for e in (-5e-5, 0, 5e-5)})).replace(".", "[.]")
print(f["func"], alt("%.1f%%", f["share"], 100), f["group"], g["flows"], alt("%.2f", g["cv"], 1))' "$t/v.json")

tui_start 80 24 "$PROPEL" tui "$t/s.db"
tui_wait_for "event 1/" 10
tui_cmd view variance
tui_wait_for "SHARE  FUNCTION" 60
scr=$(tui_screen)
row=$(grep -m1 -E '^ *[0-9.]+% +[a-z_0-9]+ +[0-9]+ +[0-9]+' <<<"$scr")
if [ "$top" = s1_lrlrlr ] && grep -qE "^ *$share +s1_lrlrlr +[0-9]+ +$group( |$)" <<<"$row" &&
	grep -qE "^group $group: $gflows flows, cv $gcv," <<<"$scr"; then
	pass tui-variance/list
else
	fail tui-variance/list "report: $top $share group $group ($gflows flows, cv $gcv); pane: $(head -8 <<<"$scr" | tr '\n' '|')"
fi

tui_keys Enter
msg=$(tui_message)
flow=$(sed -n 's/^s1_lrlrlr in flow \([0-9]*\), the slowest of group .*(\(.*\))$/\1/p' <<<"$msg")
dur=$(sed -n 's/.*that calls it (\([0-9.]*\) ms)$/\1/p' <<<"$msg")
# the flow is among the longest of the report's flows (its group's slowest)
longest=$("$PROPEL" report --flows --format=json "$t/s.db" | python3 -c '
import json,sys
d=json.load(sys.stdin)["flows"]
f=sorted(d, key=lambda x: x.get("duration_ns", x.get("last_ns", 0) - x.get("first_ns", 0)), reverse=True)
print(" ".join(str(x["id"]) for x in f[:60]))' 2>/dev/null)
if tui_status | grepq -E '^ *[0-9]+:[0-9]+ +s1_lrlrlr ' &&
	tui_screen | grepq -E '^ trace' && [ -n "$flow" ] && [ -n "$dur" ] &&
	awk -v d="$dur" 'BEGIN { exit !(d >= 5) }' &&
	{ [ -z "$longest" ] || grep -qw "$flow" <<<"$longest"; }; then
	pass tui-variance/jump
else
	fail tui-variance/jump "status: $(tui_status) | message: $msg | longest: ${longest:0:80}"
fi

tui_stop
tui_start 80 24 env PROPEL_TEST_BG_DELAY_MS=3000 "$PROPEL" tui "$t/s.db"
tui_wait_for "event 1/" 10
tui_cmd view variance
busy=$(tui_screen)
if grep -q "grouping the flows" <<<"$busy" && ! grep -q "SHARE  FUNCTION" <<<"$busy" &&
	tui_wait_for "SHARE  FUNCTION" 60; then
	pass tui-variance/busy
else
	fail tui-variance/busy "at once: $(head -3 <<<"$busy" | tr '\n' '|')"
fi

tui_stop
"$PROPEL" report --variance "$t/sampled.db" >"$t/sampled.txt" 2>&1
"$PROPEL" report --variance --format=json "$t/sampled.db" >"$t/sampled.json" 2>&1
"$PROPEL" report --variance "$t/s.db" >"$t/exact.txt" 2>&1
est() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["estimated_records"])' "$1" 2>/dev/null; }
es=$(est "$t/sampled.json") ee=$(est "$t/v.json")
tui_start 80 24 "$PROPEL" tui "$t/sampled.db"
tui_wait_for "event 1/" 10
tui_cmd view variance
tui_wait_for "SHARE  FUNCTION" 60
if grep -q '^timing: [0-9]* call records .* dated between two stamps' "$t/sampled.txt" &&
	[ -n "$es" ] && [ "$es" -gt 0 ] && [ "$ee" = 0 ] && ! grep -q '^timing:' "$t/exact.txt" &&
	tui_screen | grepq 'dated between two stamps'; then
	pass tui-variance/timing
else
	fail tui-variance/timing "sampled: ${es:-?} ($(grep '^timing' "$t/sampled.txt" | cut -c1-60)), exact: ${ee:-?}; pane: $(tui_screen | head -6 | tr '\n' '|')"
fi
