#!/usr/bin/env bash
# tests/e2e/tui-dist.sh - the TUI on a real recording of the distributed
# scenario (tests/apps/dist-all under `propel record`: six processes over
# TCP, a pipe, a UNIX stream socket and UDP), under tmux at 80x24.
#
#   tui-dist/step-KIND    for the first matched send of each channel kind
#                         (tcp client->front, pipe front->child, unix
#                         front->logger, udp front->monitor): the cursor put
#                         on the send (:thread TID, :goto @TS) shows it;
#                         `s` lands in the receiving process on the recv
#                         that `propel replay --format=jsonl` matches to it
#                         (the first one, when the send was read in pieces):
#                         its pid:tid and function on the status line, the
#                         recv under the cursor naming the sender; `S`
#                         returns to the send (same pid:tid, same event N/M)
#   tui-dist/S-at-recv    `S` from a recv reached by a jump (no move record)
#                         also goes to its send
#   tui-dist/threads-pane every process of the session appears in the
#                         threads pane (scrolled with Down) with its host
#                         and its command (after an exec, the program it
#                         became; the forked child, its parent's)
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 6
command -v tmux >/dev/null || { skip tui-dist "tmux not installed"; exit 77; }
[ -x "$PROPEL" ] || { fail tui-dist "no $PROPEL"; exit 1; }
bin=$PROPEL_TOP/$O/apps
[ -x "$bin/dist-all" ] || { fail tui-dist/build "no $bin/dist-all (make)"; exit 1; }
d=$(tmpdir); trap 'tui_stop; rm -rf "$d"' EXIT
mkdir -p "$d/run"
if ! timeout 120 "$PROPEL" record -o "$d/s.db" -- "$bin/dist-all" "$d/run" -n 6 \
	>"$d/rec.out" 2>"$d/rec.err"; then
	fail tui-dist/record "$(head -c 300 "$d/rec.err" "$d/rec.out")"
	exit 1
fi
"$PROPEL" replay --format=jsonl "$d/s.db" >"$d/s.jsonl" 2>/dev/null ||
	{ fail tui-dist/replay "replay failed"; exit 1; }

# For each kind: the first send of it that a recv matches, as
#   KIND SPID STID STS SFUNC RPID RTID RFUNC RBYTES RINDEX
# (FUNC: the innermost open call at the event, what the status line names;
# RINDEX: the recv's 1-based place among its thread's events, the status
# line's event N).
python3 - "$d/s.jsonl" >"$d/pairs" <<'EOF'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
stack, func_at, nth, index = {}, {}, {}, {}
for e in evs:
    nth[e["tid"]] = nth.get(e["tid"], 0) + 1
    index[id(e)] = nth[e["tid"]]
    st = stack.setdefault(e["tid"], [])
    if e["kind"] == "entry":
        st.append(e["func"])
    elif e["kind"] == "exit":
        if st:
            st.pop()
    else:
        func_at[(e["pid"], e["tid"], e["ts_ns"], e["kind"])] = st[-1] if st else "-"
recvs = {}
for e in evs:
    if e["kind"] == "recv" and "match" in e:
        m = e["match"]
        recvs.setdefault((m["pid"], m["tid"], m["ts_ns"]), []).append(e)
done = set()
for e in sorted((e for e in evs if e["kind"] == "send"), key=lambda e: e["ts_ns"]):
    kind = e.get("chan", "?").split(":")[0]
    r = recvs.get((e["pid"], e["tid"], e["ts_ns"]))
    if kind in done or not r:
        continue
    done.add(kind)
    r = min(r, key=lambda x: x["ts_ns"])
    print(kind, e["pid"], e["tid"], e["ts_ns"],
          func_at[(e["pid"], e["tid"], e["ts_ns"], "send")],
          r["pid"], r["tid"], func_at[(r["pid"], r["tid"], r["ts_ns"], "recv")],
          r["bytes"], index[id(r)])
EOF
for k in tcp pipe unix udp; do
	grep -q "^$k " "$d/pairs" || fail "tui-dist/step-$k" "no matched $k message in the replay"
done

tui_start 80 24 "$PROPEL" tui "$d/s.db"
tui_wait_for "? for help" 10 || { fail tui-dist/open "$(tui_screen | tr '\n' '|')"; exit 1; }
while read -r kind spid stid sts sfunc rpid rtid rfunc rbytes rindex; do
	name=tui-dist/step-$kind
	tui_cmd thread "$stid"
	tui_cmd goto "@$sts"
	at=$(tui_status)
	if ! grep -q "^ $spid:$stid  $sfunc  .*event [0-9]*/" <<<"$at" ||
		! tui_screen | grepq "^>.*send fd=[0-9]* [0-9]* bytes -> $rpid:$rtid"; then
		fail "$name" "not at the send: $at | $(tui_screen | grep '^>')"
		continue
	fi
	ev=$(grep -o 'event [0-9]*/[0-9]*' <<<"$at")
	tui_keys s
	st=$(tui_status)
	cur=$(tui_screen | grep '^>')
	if ! grep -q "^ $rpid:$rtid  $rfunc  .*event $rindex/" <<<"$st" ||
		! grep -q "recv fd=[0-9]* $rbytes bytes <- $spid:$stid" <<<"$cur"; then
		fail "$name" "s: $st | $cur (want $rpid:$rtid $rfunc event $rindex, $rbytes bytes)"
		continue
	fi
	tui_keys S
	back=$(tui_status)
	if grep -q "^ $spid:$stid  $sfunc  .*$ev" <<<"$back"; then
		pass "$name"
	else
		fail "$name" "S: $back (want $spid:$stid $sfunc $ev)"
	fi
done <"$d/pairs"

# S from a recv reached by a jump: the send, not the previous event
read -r kind spid stid sts sfunc rpid rtid rfunc _ < <(grep '^tcp ' "$d/pairs")
rts=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    m = e.get("match")
    if e["kind"] == "recv" and m and (m["pid"], m["tid"], m["ts_ns"]) == tuple(map(int, sys.argv[2:5])):
        print(e["ts_ns"]); break' "$d/s.jsonl" "$spid" "$stid" "$sts")
tui_cmd thread "$rtid"
tui_cmd goto "@$rts"
if tui_screen | grepq "^>.*recv fd=.* <- $spid:$stid" && tui_keys S &&
	tui_status | grepq "^ $spid:$stid  $sfunc  " &&
	tui_screen | grepq "^>.*send fd="; then
	pass tui-dist/S-at-recv
else
	fail tui-dist/S-at-recv "$(tui_status) | $(tui_screen | grep '^>')"
fi

# every process in the threads pane, with host and command
host=$(uname -n)
read -r _ _ _ pl _ pm _ pb _ pf _ pc _ pcl < <(grep '^dist-all: pids' "$d/rec.out")
all=$(grep "\"kind\":\"fork\".*\"child\":$pl}" "$d/s.jsonl" | sed 's/.*"pid":\([0-9]*\).*/\1/')
want="$all:dist-all $pl:dist-logger $pm:dist-monitor $pb:dist-back $pf:dist-front $pc:dist-front $pcl:dist-client"
tui_keys Tab
seen=
for k in Up Up Up Up Up Up Up Up Down Down Down Down Down Down Down Down; do
	seen+=$(tui_screen | sed -n 's/^[* ] *[0-9]* \([0-9]*\):[0-9]* \([^ ]*\) \([^ ]*\) in .*/\1 \2 \3/p')$'\n'
	tui_keys $k
done
probs=
for w in $want; do
	p=${w%%:*} c=${w#*:}
	grep -q "^$p $host $c$" <<<"$seen" || probs+=" $p:$host:$c"
done
n=$(sort -u <<<"$seen" | grep -c .)
if [ -z "$probs" ] && [ "$n" = 7 ]; then
	pass tui-dist/threads-pane
else
	fail tui-dist/threads-pane "missing:$probs; $n lines seen: $(sort -u <<<"$seen" | tr '\n' '|')"
fi
tui_stop
