#!/usr/bin/env bash
# tests/e2e/lifecycle.sh - process life cycles under propel: daemons that
# outlive their parents, exits the agent does not see, exec and vfork.
#
#   record/daemon        tests/fixtures/lifecycle/daemon.c (double fork +
#                        setsid, the daemon works 300 ms after its parents
#                        are gone) recorded 20 times: every session holds
#                        the daemon's daemon_work -> daemon_leaf, the status
#                        is main's (5), the daemon's output is there when
#                        record returns
#   record/clean/*       real programs (git, sqlite3 CLI, python3 through
#                        whatever shims are on PATH) and the exec/fork
#                        fixtures exit cleanly: no "ended without a clean
#                        exit" warning; record/killed: a kill -9 still warns
# Fixture programs are built into a temporary directory.
. "$(dirname "$0")/../lib.sh"
t=$(tmpdir)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$t"' EXIT
export PROPEL_TEST_QUIET=1
cc=${CC:-gcc}
fix=$PROPEL_TOP/tests/fixtures
build() { # NAME SRC [FLAGS...]
	local n=$1 src=$2
	shift 2
	$cc -O0 -g "$@" -o "$t/$n" "$src" || { fail "build/$n" "cannot build $src"; return 1; }
}
build daemon "$fix/lifecycle/daemon.c"
build exec "$fix/capture/exec.c"
build fork "$fix/capture/fork.c"

# ---- daemons: record ends when the last traced descendant has ----
bad=
for i in $(seq 1 20); do
	rm -f "$t/daemon.out"
	"$PROPEL" record -o "$t/d.db" -- "$t/daemon" "$t/daemon.out" >/dev/null 2>"$t/d.err"
	rc=$?
	if [ $rc -ne 5 ]; then bad="run $i: status $rc, want 5"; break; fi
	if ! grep -q 'daemon 42' "$t/daemon.out" 2>/dev/null; then
		bad="run $i: the daemon had not finished when record returned"; break
	fi
	"$PROPEL" replay --format=jsonl "$t/d.db" >"$t/d.jsonl" 2>"$t/d.err2"
	if ! grep -q '"func":"daemon_leaf"' "$t/d.jsonl"; then
		bad="run $i: no daemon_leaf in the session; $(head -c 200 "$t/d.err")"; break
	fi
done
[ -z "$bad" ] && pass record/daemon || fail record/daemon "$bad"

# ---- clean exits are not kills ----
clean() { # NAME CMD...: status 0 (or as given by WANT), no warning
	local name=$1
	shift
	"$PROPEL" record -o "$t/c.db" -- "$@" >"$t/c.out" 2>"$t/c.err"
	local rc=$?
	if grep -q 'without a clean exit' "$t/c.err"; then
		fail "record/clean/$name" "$(head -c 300 "$t/c.err")"
	elif [ $rc -ne "${WANT:-0}" ]; then
		fail "record/clean/$name" "status $rc; $(head -c 300 "$t/c.err")"
	else
		pass "record/clean/$name"
	fi
}
for prog in git sqlite3 python3; do
	command -v $prog >/dev/null || { skip "record/clean/$prog" "$prog not installed"; continue; }
	case $prog in
	git) clean git git --version ;;
	sqlite3) clean sqlite3 sqlite3 :memory: 'select 1;' ;;
	python3) clean python3 python3 -c 'print(1)' ;;
	esac
done
command -v git >/dev/null && WANT=128 clean git-fails git -C / status
clean exec "$t/exec"
clean fork "$t/fork"
clean shell sh -c 'x=$(echo a | tr a b); [ "$x" = b ] && true'
"$PROPEL" record -o "$t/k.db" -- sh -c 'sleep 5 & sleep 0.5; kill -9 $!; wait' >/dev/null 2>"$t/k.err"
grep -q '1 process(es) ended without a clean exit' "$t/k.err" && pass record/killed ||
	fail record/killed "no warning for a kill -9: $(head -c 300 "$t/k.err")"
