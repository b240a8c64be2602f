#!/usr/bin/env bash
# tests/e2e/soak-redis-follow.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh), case redis-follow: `record --follow` of
# redis-benchmark into the server, propeld or propel killed
# propel-test: takes 110
#   (seconds, alone: tests/run.sh -j starts the longest suites first; one
#   case a suite, so that two run side by side)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis-follow redis-follow
