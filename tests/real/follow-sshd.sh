#!/usr/bin/env bash
# tests/real/follow-sshd.sh [ROUNDS] - a reproducer, run by hand (root), not
# part of `make test`: `propel record --follow -- sftp` of a 300 KB file
# from Debian's /usr/sbin/sshd (own config and keys, internal-sftp, a fresh
# sshd each round), ROUNDS times (default 16).  Prints one line per round,
# then "N of ROUNDS harmed; M with ..."; exits 1 if any was harmed.  A
# round whose file arrived but whose connection process was not traced in
# full (a process "ended without a clean exit", or the connection's sshd
# entered < 50 functions) is listed with its session kept in $KEEP (/tmp).
# VERBOSE=1 prints propel's lines for every round.
#
# sshd re-execs itself (`sshd -R`) for each connection, and ssh speaks as
# soon as it is connected, so propeld injects whichever sshd holds the
# connection's socket at that moment, perhaps while it starts up.
#   Harm (session 17, fixed in 18): in 3 of 16 rounds the injection's call
#     faulted ("the call faulted in thread N (Segmentation fault at
#     0x...450f)": the hlt in abort(), called by malloc from our dlopen)
#     and the sftp failed: the only thread had been stopped half-way through
#     malloc, which takes no lock in a single-threaded process.  inject/
#     inject.c now calls only from a safe point (inject_safe_point): 0 of
#     over 120 rounds harmed since.
#   Left (session 18): about 1 round in 20 here (and 1 of 2 CI runs that
#     had the check) the file arrives but the connection is not traced in
#     full.  Seen twice: (a) propeld injected the listener (ppid 1 in
#     the session's processes) for the TCP peer -- it still held the
#     accepted socket just after its fork -- and the connection's own
#     process, the child
#     that re-exec'd, was never traced; (b) the connection process was
#     injected (while it read its config from the listener, fd 5) but its
#     agent knew none of sshd's functions: only the 21 libc functions the
#     agent hooks for messages, read/write/close at depth 0.  Both show a
#     race between the listener's fork, the child's exec and propeld's
#     choice of pid; neither harms sshd.
. "$(dirname "$0")/../lib.sh"
. "$PROPEL_TOP/tests/real/servers.sh"
rounds=${1:-16}
is_root || { echo "follow-sshd: needs root"; exit 0; }
t=$(tmpdir)
trap '[ -f "$t/sshd.pid" ] && kill "$(cat "$t/sshd.pid")" 2>/dev/null; rm -rf "$t"' EXIT
sshd_setup "$t"
port=$SSHD_PORT
harmed=0 odd=0
for ((i = 1; i <= rounds; i++)); do
	[ -f "$t/sshd.pid" ] && kill "$(cat "$t/sshd.pid")" 2>/dev/null && sleep 0.2
	/usr/sbin/sshd -f "$t/sshd.conf" -E "$t/sshd.log" && real_wait_port "$port" || {
		echo "follow-sshd: sshd did not start"; exit 1; }
	rm -f "$t/got"
	timeout 60 "$PROPEL" record --follow -o "$t/s.db" -- \
		sftp -q -F "$t/ssh_config" -b "$t/batch" 127.0.0.1 >/dev/null 2>"$t/err"
	conn=$(sed -n 's/.*traced pid \([0-9]*\) (sshd), the peer at 127\.0\.0\.1:'"$port"'$/\1/p' "$t/err" | head -1)
	nf=0
	[ -n "$conn" ] && nf=$("$PROPEL" replay --format=jsonl "$t/s.db" 2>/dev/null |
		python3 -c 'import json, sys
pid = int(sys.argv[1])
print(len({e["func"] for e in map(json.loads, sys.stdin) if e["kind"] == "entry" and e["pid"] == pid}))' "$conn")
	if cmp -s "$t/data" "$t/got" && { grep -q 'without a clean exit' "$t/err" || [ "$nf" -lt 50 ]; }; then
		odd=$((odd + 1))
		cp "$t/s.db" "${KEEP:-/tmp}/follow-sshd-odd-$i.db"
		echo "round $i: file intact, but sshd $conn entered $nf functions: $(grep -v '^propel: vm: traced' "$t/err" | head -2 | tr '\n' ' ')" \
			"(session kept in ${KEEP:-/tmp}/follow-sshd-odd-$i.db)"
		sed 's/^/    /' "$t/err"
	elif cmp -s "$t/data" "$t/got"; then
		echo "round $i: ok; $(grep -c . "$t/err") line(s) from propel"; [ -n "$VERBOSE" ] && sed "s/^/    /" "$t/err"
	else
		harmed=$((harmed + 1))
		echo "round $i: HARMED: $(grep -v '^propel: vm: traced' "$t/err" | head -2 | tr '\n' ' ')"
	fi
done
echo "$harmed of $rounds harmed; $odd with a process that ended without a clean exit"
[ $harmed -eq 0 ]
