#!/usr/bin/env bash
# tests/e2e/soak-nginx-follow.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh), case nginx-follow: `record --follow` of a curl loop
# into nginx under wrk, propeld or propel killed at a random moment
# propel-test: takes 90
#   (seconds, alone: tests/run.sh -j starts the longest suites first; one
#   case a suite, so that two run side by side)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-nginx-follow nginx-follow
