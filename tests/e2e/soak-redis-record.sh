#!/usr/bin/env bash
# tests/e2e/soak-redis-record.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel record --
# redis-server` killed at a random moment, and `record --follow` of
# redis-benchmark into the server with propeld or propel killed
# propel-test: takes 120
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis-record redis-record redis-follow
