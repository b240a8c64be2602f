# tests/soak/suite.sh - the never-harm soak (tests/soak/soak.sh) as
# `make test` suites (source it after tests/lib.sh).  tests/e2e/soak-*.sh
# each run some of its cases in the 10-round version, so that tests/run.sh
# -j runs the cases side by side (each case starts its own servers on
# ports of its own; SOAK_ROUNDS sets the rounds, SOAK_SEED repeats a run).
#
#   soak_suite NAME CASE...   declares 3 checks per CASE (soak/CASE,
#                             soak/CASE/attach-after, soak/CASE/restored),
#                             needs root and the servers' programs, then
#                             runs tests/soak/soak.sh -n ROUNDS CASE...
soak_suite() {
	local name=$1 b
	shift
	expect_checks $((3 * $#))
	need_root "$name"
	for b in redis-server redis-benchmark redis-cli wrk curl /usr/sbin/nginx; do
		if ! command -v "$b" >/dev/null 2>&1; then
			fail "$name" "$b is not installed (tests/install-deps.sh test installs it)"
			exit 1
		fi
	done
	exec bash "$PROPEL_TOP/tests/soak/soak.sh" -n "${SOAK_ROUNDS:-10}" "$@"
}
