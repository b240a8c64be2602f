#!/usr/bin/env bash
# tests/real/follow-sshd.sh [ROUNDS] - a reproducer, run by hand (root), not
# part of `make test`: `propel record --follow -- sftp` of a 300 KB file
# from Debian's /usr/sbin/sshd (own config and keys, internal-sftp, a fresh
# sshd each round), ROUNDS times (default 16).  Prints one line per round
# and "N of ROUNDS harmed"; exits 1 if any was.
#
# The defect it showed (session 17; follow-real's sshd/record checks one
# round in CI): sshd re-execs itself (`sshd -R`) for each connection, and
# ssh speaks as soon as it is connected, so propeld injects the new image
# while it starts up.  In 3 of 16 rounds the injection's call faulted ("the
# call faulted in thread N (Segmentation fault at 0x...450f)": the hlt in
# abort(), called by malloc from our dlopen) and the sftp failed: the only
# thread had been stopped half-way through malloc, which takes no lock in a
# single-threaded process.  Fixed in session 18: inject/inject.c calls only
# from a safe point (inject_safe_point); 0 of 56 rounds harmed since.
. "$(dirname "$0")/../lib.sh"
. "$PROPEL_TOP/tests/real/servers.sh"
rounds=${1:-16}
is_root || { echo "follow-sshd: needs root"; exit 0; }
t=$(tmpdir)
trap '[ -f "$t/sshd.pid" ] && kill "$(cat "$t/sshd.pid")" 2>/dev/null; rm -rf "$t"' EXIT
sshd_setup "$t"
port=$SSHD_PORT
harmed=0
for ((i = 1; i <= rounds; i++)); do
	[ -f "$t/sshd.pid" ] && kill "$(cat "$t/sshd.pid")" 2>/dev/null && sleep 0.2
	/usr/sbin/sshd -f "$t/sshd.conf" -E "$t/sshd.log" && real_wait_port "$port" || {
		echo "follow-sshd: sshd did not start"; exit 1; }
	rm -f "$t/got"
	timeout 60 "$PROPEL" record --follow -o "$t/s.db" -- \
		sftp -q -F "$t/ssh_config" -b "$t/batch" 127.0.0.1 >/dev/null 2>"$t/err"
	if cmp -s "$t/data" "$t/got"; then
		echo "round $i: ok; $(grep -c . "$t/err") line(s) from propel"
	else
		harmed=$((harmed + 1))
		echo "round $i: HARMED: $(grep -v '^propel: vm: traced' "$t/err" | head -2 | tr '\n' ' ')"
	fi
done
echo "$harmed of $rounds harmed"
[ $harmed -eq 0 ]
