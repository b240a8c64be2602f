#!/usr/bin/env bash
# tests/e2e/capture.sh - propel record and propel attach on real processes:
# exit statuses, attach/detach cycles under load, and every bad input the
# capture issue lists (one-line error, non-zero exit, nothing harmed).
# propel-test: takes 45
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 22
t=$(tmpdir)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
$cc -O2 -g -pthread -o "$t/spin" "$PROPEL_TOP/tests/fixtures/capture/spin.c" || { fail build "cannot build spin"; exit 1; }
printf 'int main(void){return 3;}\n' >"$t/three.c" && $cc -o "$t/three" "$t/three.c"

one_line() { # NAME WANT-REGEX -- CMD...: one stderr line matching, status != 0
	local name=$1 re=$2; shift 3
	"$@" >"$t/out" 2>"$t/err"
	local rc=$? n
	n=$(wc -l <"$t/err")
	if [ $rc -ne 0 ] && [ "$n" -eq 1 ] && grep -Eq "$re" "$t/err"; then
		pass "$name"
	else
		fail "$name" "status $rc, stderr: $(head -c 300 "$t/err")"
	fi
}

# record: the exit status is the program's
"$PROPEL" record -o "$t/r.db" -- "$t/three" 2>/dev/null
[ $? -eq 3 ] && pass record/exit-status || fail record/exit-status "want 3"
"$PROPEL" replay "$t/r.db" | grepq 'main()' && pass record/trace || fail record/trace "no main in replay"
one_line record/no-such-command 'propel: record: .*nonexistent.*No such file' -- \
	"$PROPEL" record -o "$t/n.db" -- "$t/nonexistent"
one_line record/unwritable 'propel: record: cannot write /proc/nope/x.db' -- \
	"$PROPEL" record -o /proc/nope/x.db -- "$t/three"

# a program that closes every descriptor, lowers its file-size limit to 0
# and enters a seccomp filter (as sshd's privsep child does) is unharmed:
# the agent neither writes into a reused descriptor, nor raises SIGXFSZ,
# nor makes a syscall the filter kills (it switches itself off first)
if $cc -O2 -o "$t/sandbox" "$PROPEL_TOP/tests/fixtures/capture/sandbox.c" 2>/dev/null; then
	want=$("$t/sandbox")
	got=$("$PROPEL" record -o "$t/sb.db" -- "$t/sandbox" 2>"$t/sb.err")
	rc=$?
	# (and its agent, stopped at the sandbox with no file to write, is
	# not taken for a process that died: ring flag PROPEL_RING_F_STOPPED)
	if [ $rc -eq 0 ] && [ "$got" = "$want" ] && [ "$want" = "sandbox ok 46" ] &&
		! grep -q 'without a clean exit' "$t/sb.err" &&
		"$PROPEL" replay "$t/sb.db" 2>/dev/null | grepq 'step2()'; then
		pass record/sandbox
	else
		fail record/sandbox "status $rc, output '$got' (want '$want'), $(head -c 200 "$t/sb.err")"
	fi
else
	skip record/sandbox "cannot build the seccomp fixture"
fi

# --follow (tests/e2e/follow.sh has the rest): the exit status is still
# the program's, and a target that cannot be injected is one line
"$PROPEL" record -o "$t/f.db" --follow -- "$t/three" 2>"$t/f.err"
rc=$?
if [ $rc -eq 3 ] && "$PROPEL" replay "$t/f.db" | grepq 'main()'; then
	pass record/follow-status
else
	fail record/follow-status "status $rc (want 3), $(head -c 200 "$t/f.err")"
fi
one_line attach/follow-refused 'propel: attach 1: ' -- \
	"$PROPEL" attach -o "$t/f.db" --follow 1

# attach: bad input
one_line attach/no-such-pid 'propel: attach 999999' -- "$PROPEL" attach -o "$t/a.db" 999999
one_line attach/not-a-pid 'not a process id' -- "$PROPEL" attach -o "$t/a.db" abc
one_line attach/kernel-thread 'propel: attach 2: .*kernel thread' -- "$PROPEL" attach -o "$t/a.db" 2
printf '#include <unistd.h>\n#include <stdio.h>\nint main(void){pid_t p=fork();if(!p)return 0;printf("%%d\\n",p);fflush(stdout);sleep(30);}\n' >"$t/z.c"
$cc -o "$t/zmaker" "$t/z.c"
"$t/zmaker" >"$t/z" & zparent=$!
is_zombie() { zpid=$(cat "$t/z") && [ -n "$zpid" ] && grep -q '^State:.*Z' "/proc/$zpid/status" 2>/dev/null; }
wait_until 5 is_zombie
zpid=$(cat "$t/z")
if grep -q '^State:.*Z' /proc/$zpid/status 2>/dev/null; then
	one_line attach/zombie 'zombie' -- "$PROPEL" attach -o "$t/a.db" "$zpid"
else
	skip attach/zombie "could not make a zombie"
fi
printf '#include <unistd.h>\nint main(void){for(;;)pause();}\n' >"$t/p.c"
if $cc -static -o "$t/static" "$t/p.c" 2>/dev/null; then
	"$t/static" &
	spid=$!
	static_runs() { [ "$(readlink "/proc/$spid/exe")" = "$(readlink -f "$t/static")" ]; }
	wait_until 5 static_runs
	one_line attach/static 'statically linked' -- "$PROPEL" attach -o "$t/a.db" "$spid"
	kill "$spid" 2>/dev/null
else
	skip attach/static "no static libc"
fi
one_line attach/unwritable 'propel: attach: cannot write' -- "$PROPEL" attach -o /proc/nope/a.db 1

# attach/detach 200 times under load: the target keeps running correctly.
# Its three threads call in a tight loop on every core propel leaves idle,
# at nice 19 (the agent's thread in it too): propel's seize, inject and
# detach are not queued behind them (a cycle took 0.44 s at nice 0, 0.1 s
# at 19) nor are the suites beside this one (spin took 184 s of CPU of a
# make test at nice 0)
nice -n 19 "$t/spin" >"$t/spin.out" 2>"$t/spin.err" & spin=$!
wait_until 5 test -s "$t/spin.out"
ok=0
for i in $(seq 1 200); do
	if "$PROPEL" attach -o "$t/c.db" --buffer-size 64 --duration 0.02 "$spin" 2>>"$t/cycles.err"; then
		ok=$((ok + 1))
	fi
	kill -0 "$spin" 2>/dev/null || break
done
sleep 0.3
if kill -0 "$spin" 2>/dev/null && ! grep -q BAD "$t/spin.out" "$t/spin.err" &&
	[ "$(awk '/TracerPid/{print $2}' /proc/$spin/status)" = 0 ] && [ $ok -eq 200 ]; then
	pass attach/200-cycles
else
	fail attach/200-cycles "$ok/200 attaches; alive=$(kill -0 $spin 2>/dev/null && echo yes || echo no); $(grep -m1 BAD "$t/spin.out" "$t/spin.err"); $(tail -n 2 "$t/cycles.err")"
fi
"$PROPEL" replay "$t/c.db" | grepq 'mix()' && pass attach/trace || fail attach/trace "no mix() in the last cycle's replay"
n1=$(wc -l <"$t/spin.out")
spin_grew() { n2=$(wc -l <"$t/spin.out"); [ "$n2" -gt "$n1" ]; }
wait_until 0.5 spin_grew
[ "$n2" -gt "$n1" ] && pass attach/keeps-running || fail attach/keeps-running "output stopped"

# a second propel on a process already traced by one
"$PROPEL" attach -o "$t/d1.db" --duration 3 "$spin" 2>/dev/null & first=$!
sleep 1
one_line attach/second 'already' -- "$PROPEL" attach -o "$t/d2.db" --duration 1 "$spin"
wait $first && pass attach/first-unharmed || fail attach/first-unharmed "the first attach failed"

# another user's process: nobody may not ptrace root's
if is_root && command -v setpriv >/dev/null && [ -x "$PROPEL" ] && ! user_can_run nobody; then
	skip attach/not-permitted "user nobody cannot reach $PROPEL (a checkout in a private directory)"
elif is_root && command -v setpriv >/dev/null && [ -x "$PROPEL" ]; then
	chmod o+rx "$t"
	one_line attach/not-permitted 'not permitted|Operation not permitted' -- \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$PROPEL" attach -o /tmp/propel-nobody-$$.db "$spin"
	rm -f /tmp/propel-nobody-$$.db
else
	skip attach/not-permitted "needs root and setpriv"
fi
kill "$spin" 2>/dev/null

# a target that exits during attach: a clean outcome either way, never a hang
bad=0
for i in $(seq 1 20); do
	"$t/three" & p=$!
	timeout 20 "$PROPEL" attach -o "$t/e.db" --duration 0.2 "$p" >/dev/null 2>"$t/e.err"
	rc=$?
	[ $rc -eq 124 ] && bad=1
	[ $rc -ne 0 ] && [ "$(wc -l <"$t/e.err")" -gt 1 ] && bad=1
	wait $p 2>/dev/null
done
[ $bad -eq 0 ] && pass attach/target-exits || fail attach/target-exits "$(cat "$t/e.err")"

# a full disk: the session cannot be written; one line says why, where the
# raw trace is kept and how to store it, and `propel recover` of that
# directory (onto a disk with room) makes the session
if is_root && mkdir -p "$t/full" && mount -t tmpfs -o size=16k propel-full "$t/full" 2>/dev/null; then
	"$PROPEL" record -o "$t/full/f.db" -- "$t/three" >/dev/null 2>"$t/full.err"
	rc=$?
	kept=$(sed -n 's/.*raw trace kept in \([^ ]*\) (propel recover -o DB .*/\1/p' "$t/full.err")
	if [ $rc -eq 0 ] || [ "$(wc -l <"$t/full.err")" -ne 1 ] ||
		! grep -q 'propel: record: .*full' "$t/full.err" || [ ! -d "$kept" ]; then
		fail record/disk-full "status $rc, stderr: $(head -c 300 "$t/full.err")"
	elif ! "$PROPEL" recover -o "$t/kept.db" "$kept" >/dev/null 2>"$t/kept.err" ||
		! "$PROPEL" replay "$t/kept.db" | grepq 'main()'; then
		fail record/disk-full "recover $kept: $(head -c 300 "$t/kept.err")"
	else
		pass record/disk-full
	fi
	umount "$t/full"
	[ -n "$kept" ] && rm -rf "$kept"
else
	skip record/disk-full "needs root to mount a small tmpfs"
fi

# /dev/shm fills up while the trace runs (a 3 MB /dev/shm in a mount
# namespace of its own, an 8 MB ring): a ring's pages are made as the
# writer reaches them, so the program gets no SIGBUS; it runs on, its
# output the same, its records kept up to there, the rest counted as lost
# and said to be so (and the drain, which spools there too, says it could
# not), nothing else on stderr
fib=$t/bench-fib
if is_root && $cc -O2 -o "$fib" "$PROPEL_TOP/tests/fixtures/capture/bench-fib.c" &&
	unshare -m true 2>/dev/null; then
	want=$("$fib" 27)
	got=$(unshare -m sh -c 'mount -t tmpfs -o size=3m propel-shm /dev/shm &&
		exec "$@"' _ "$PROPEL" record -o "$t/shm.db" -- "$fib" 27 2>"$t/shm.err")
	rc=$?
	lost=$("$PROPEL" replay --format=jsonl "$t/shm.db" 2>/dev/null |
		awk '/"kind":"lost"/ { l++ } /"kind":"entry"/ { e++ } END { print l + 0, e + 0 }')
	if [ $rc -eq 0 ] && [ "$got" = "$want" ] && [ "${lost% *}" -ge 1 ] &&
		[ "${lost#* }" -ge 10000 ] && ! grep -qv '^propel: ' "$t/shm.err" &&
		grep -q 'dropped: /dev/shm had no room' "$t/shm.err"; then
		pass record/shm-full
	else
		fail record/shm-full "status $rc, output '$got' (want '$want'), lost/entries $lost, $(head -c 300 "$t/shm.err")"
	fi
else
	skip record/shm-full "needs root, unshare and a C compiler"
fi
