#!/usr/bin/env bash
# tests/e2e/soak-redis.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh): `propel attach` of Debian's
# redis-server under load killed with SIGKILL at a random moment, and
# `attach --duration 1` killed while it switches the agent off
# propel-test: takes 120
#   (seconds, alone: tests/run.sh -j starts the longest suites first)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis redis-attach redis-detach
