#!/usr/bin/env bash
# tests/e2e/soak-redis-record.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel record --
# redis-server` killed at a random moment, and `record --follow` of
# redis-benchmark into the server with propeld or propel killed
# propel-test: long
#   (tests/run.sh starts it among the first: it takes a minute or more)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis-record redis-record redis-follow
