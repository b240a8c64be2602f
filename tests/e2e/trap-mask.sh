#!/usr/bin/env bash
# tests/e2e/trap-mask.sh - the agent's int3s and threads that block every
# signal (issue 30).  A thread that blocks SIGTRAP and meets an int3 of a
# site being rewritten is killed by the kernel, which also resets SIGTRAP's
# handler to SIG_DFL for the whole process: a later int3 of any thread
# then kills it (redis-server died of SIGTRAP in soak redis-detach, 1 of 60
# rounds: its jemalloc background threads block every signal).
#
#   attach/unblocked  `propel attach` to a program whose 4 workers block
#                     every signal (created so, before the attach): after
#                     it, no thread blocks SIGTRAP and its handler is still
#                     caught (SigCgt); the program lives on
#   attach/again      a second attach and detach: the same, program alive
#   record/new-threads under `propel record`, workers created with every
#                     signal blocked (pthread_sigmask, after the agent
#                     started) run with SIGTRAP unblocked, every other
#                     signal still blocked; the program ends with status 0
#   record/unblock    a pthread_sigmask(SIG_UNBLOCK) and a sigprocmask that
#                     ask for no SIGTRAP are passed as they are (the
#                     program checks its own masks)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 5
t=$(tmpdir)
trap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}

cat >"$t/blk.c" <<'EOF'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define F(n) __attribute__((noinline)) long f##n(long x) { return x * (n + 3) + 1; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7)
__attribute__((noinline)) long mix(long x)
{
	return f0(x) + f1(x) + f2(x) + f3(x) + f4(x) + f5(x) + f6(x) + f7(x);
}
static volatile long sink;
static volatile int stop;
static int rounds;
static void *work(void *a)
{
	sigset_t now;
	for (long i = 0; !stop && (!rounds || i < rounds); i++) {
		sink += mix(i);
		if ((i & 0xffff) == 0)
			usleep(100);
	}
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	/* SIGTRAP unblocked by the agent, SIGUSR1 still blocked */
	*(int *)a = (sigismember(&now, SIGTRAP) ? 1 : 0) |
		    (sigismember(&now, SIGUSR1) ? 0 : 2);
	return NULL;
}
int main(int argc, char **argv)
{
	sigset_t all, old, one, now;
	pthread_t t[4];
	int res[4] = { 0 }, bad = 0;

	rounds = argc > 1 ? atoi(argv[1]) : 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, work, &res[i]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rounds)
		for (;;)
			pause();
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (res[i])
			printf("worker %d: %s%s\n", i, res[i] & 1 ? "SIGTRAP blocked " : "",
			       res[i] & 2 ? "SIGUSR1 not blocked" : "");
		bad |= res[i];
	}
	/* an unblock and a block without SIGTRAP: as asked */
	sigemptyset(&one);
	sigaddset(&one, SIGUSR2);
	sigprocmask(SIG_BLOCK, &one, NULL);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (!sigismember(&now, SIGUSR2)) { printf("SIGUSR2 not blocked\n"); bad |= 4; }
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (sigismember(&now, SIGUSR2)) { printf("SIGUSR2 still blocked\n"); bad |= 8; }
	printf("%s\n", bad ? "BAD" : "OK");
	return bad ? 1 : 0;
}
EOF
$cc -O2 -g -o "$t/blk" "$t/blk.c" -lpthread || { fail build blk; exit 1; }

# trap_state PID: "blocked N caught C" - threads blocking SIGTRAP, and
# whether the process catches it
trap_state() {
	local n=0 tk v c=?
	for tk in /proc/"$1"/task/*/status; do
		v=$(awk '/^SigBlk:/ { print $2 }' "$tk" 2>/dev/null)
		[ -n "$v" ] && (((16#$v >> 4) & 1)) && n=$((n + 1))
	done
	v=$(awk '/^SigCgt:/ { print $2 }' /proc/"$1"/status 2>/dev/null)
	[ -n "$v" ] && c=$(((16#$v >> 4) & 1))
	echo "blocked $n caught $c"
}

"$t/blk" &
bp=$!
sleep 0.3
before=$(trap_state $bp)
for name in attach/unblocked attach/again; do
	if ! out=$("$PROPEL" attach -o "$t/a.db" --duration 1 $bp 2>&1); then
		fail $name "attach: $(echo "$out" | tail -1)"
		continue
	fi
	st=$(trap_state $bp)
	if ! kill -0 $bp 2>/dev/null; then fail $name "the program died"
	elif [ "$st" != "blocked 0 caught 1" ]; then fail $name "$st (before the attach: $before)"
	else pass $name; fi
done
kill -9 $bp

out=$("$PROPEL" record -o "$t/r.db" -- "$t/blk" 200000 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -qx OK <<<"$out"; then pass record/new-threads
else fail record/new-threads "status $rc: $(echo "$out" | grep -v '^propel' | head -5 | tr '\n' ';')"; fi
if grep -q 'SIGUSR2' <<<"$out"; then fail record/unblock "$(grep SIGUSR2 <<<"$out")"
elif [ $rc -gt 1 ]; then fail record/unblock "status $rc"
else pass record/unblock; fi
# and without propel the program reports its blocked SIGTRAP (the check
# itself can fail)
out=$("$t/blk" 1000)
if grep -q 'SIGTRAP blocked' <<<"$out"; then pass control/untraced
else fail control/untraced "the untraced program did not see SIGTRAP blocked"; fi
