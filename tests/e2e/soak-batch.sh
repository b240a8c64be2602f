#!/usr/bin/env bash
# tests/e2e/soak-batch.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel record --follow` of
# batch-submit into the batch daemons of tests/apps, killed at a random
# moment
# propel-test: takes 60
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-batch batch-follow
