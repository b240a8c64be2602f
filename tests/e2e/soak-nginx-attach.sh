#!/usr/bin/env bash
# tests/e2e/soak-nginx-attach.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh), case nginx-attach: `propel attach` of nginx's master
# and worker under wrk, propel killed at a random moment
# propel-test: takes 70
#   (seconds, alone: tests/run.sh -j starts the longest suites first; one
#   case a suite, so that two run side by side)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-nginx-attach nginx-attach
