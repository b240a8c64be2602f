#!/usr/bin/env bash
# tests/e2e/soak.sh - the never-harm soak (tests/soak/soak.sh) in its
# 10-round version: propel and propeld killed with SIGKILL at random
# moments while they hold Debian's redis-server and nginx under load, and
# the batch system of tests/apps; every round must leave the server alive,
# answering right, its agents off within the lease and the session
# recoverable.  SOAK_ROUNDS sets the rounds (the issue's bar: 100, by
# hand); the seed is printed, SOAK_SEED repeats a run.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
# tests/soak/soak.sh's 7 cases, each soak/CASE, soak/CASE/attach-after and
# soak/CASE/restored
expect_checks $((7 * 3))
need_root soak
for b in redis-server redis-benchmark redis-cli wrk curl /usr/sbin/nginx; do
	if ! command -v "$b" >/dev/null 2>&1; then
		fail soak "$b is not installed (tests/install-deps.sh test installs it)"
		exit 1
	fi
done
exec bash "$PROPEL_TOP/tests/soak/soak.sh" -n "${SOAK_ROUNDS:-10}"
