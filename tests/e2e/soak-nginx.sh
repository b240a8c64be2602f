#!/usr/bin/env bash
# tests/e2e/soak-nginx.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel attach` of nginx's
# master and worker under wrk, and `record --follow` of a curl loop into
# it, propeld or propel killed at a random moment
# propel-test: takes 190
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-nginx nginx-attach nginx-follow
