#!/usr/bin/env bash
# tests/e2e/harm-untrace.sh - never harm the target (issue 30) while the
# cost budget untraces at run time (inject/agent/budget.c, patch.c
# patch_untrace): no site's write may cut into another patched site.
#
# tests/fixtures/budget/hooked.c sorts with qsort; its comparator cmp is a
# callback whose entry hook (callback.c, patch.c entry_hook) takes the
# call `call key_cmp` at its entry along, and the budget untraces key_cmp
# (3 calls a comparison) half a second into the attach.  Before
# patch.c site_overlapped, that call site's original bytes were written
# into the hook's jump: the program died of SIGSEGV at its next compare.
#   hooked/attach      `propel attach --duration 3` (the budget default)
#                      exits 0
#   hooked/untraced    replay lists key_cmp as untraced by its rate (the
#                      run-time untracing this test is about happened)
#   hooked/alive       the program still runs after the attach, and every
#                      sort it made was right
#   hooked/restored    after the detach its text equals the file
#   hooked/cycles      5 more attaches of 1.2 s (a new session re-hooks
#                      the entry over the call site, then untraces again):
#                      each exits 0, the program runs on, its text equals
#                      the file after each; it ends "ok N" with exit 0
# Needs root (ptrace).  About 15 s.
# propel-test: takes 15
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 5
need_root || exit 0
t=$(tmpdir)
pid=
cleanup() {
	touch "$t/stop"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT

gcc -O2 -g -o "$t/hooked" "$PROPEL_TOP/tests/fixtures/budget/hooked.c" || {
	echo "FAIL hooked: cannot build tests/fixtures/budget/hooked.c"
	exit 1
}
"$t/hooked" "$t/stop" >"$t/hooked.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q ready "$t/hooked.out" 2>/dev/null && break
	sleep 0.05
done

"$PROPEL" attach -o "$t/h.db" --duration 3 "$pid" >"$t/attach.log" 2>&1
check hooked/attach test $? -eq 0
"$PROPEL" replay "$t/h.db" >"$t/h.txt" 2>&1
grep '^#   ' "$t/h.txt" | sed 's/^/  /'
check hooked/untraced grepq -E '^#   pid [0-9]+ key_cmp: [0-9]+ calls/s, [0-9]+ ns mean: untraced after' "$t/h.txt"
sleep 0.3
check hooked/alive eval "kill -0 $pid 2>/dev/null && ! grep -q WRONG '$t/hooked.out'"
out=$(text_restored "$pid")
echo "  restored: $out"
[ "${out%% *}" = 0 ] || python3 "$PROPEL_TOP/tests/soak/text-diff.py" "$pid" | sed 's/^/  /'
check hooked/restored test "${out%% *}" = 0

ok=0
for i in 1 2 3 4 5; do
	"$PROPEL" attach -o "$t/c.db" --duration 1.2 "$pid" >"$t/c.log" 2>&1 &&
		kill -0 "$pid" 2>/dev/null &&
		[ "$(text_restored "$pid" | cut -d' ' -f1)" = 0 ] && ok=$((ok + 1))
	rm -f "$t/c.db"
done
touch "$t/stop"
wait "$pid"
rc=$?
pid=
echo "  cycles: $ok of 5 clean; the program: $(tail -1 "$t/hooked.out"), exit $rc"
check hooked/cycles eval "[ $ok -eq 5 ] && [ $rc -eq 0 ] && grep -q '^ok ' '$t/hooked.out'"
