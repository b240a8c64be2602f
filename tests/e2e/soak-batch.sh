#!/usr/bin/env bash
# tests/e2e/soak-batch.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel record --follow` of
# batch-submit into the batch daemons of tests/apps, killed at a random
# moment
# propel-test: long
#   (tests/run.sh starts it among the first: it takes a minute or more)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-batch batch-follow
