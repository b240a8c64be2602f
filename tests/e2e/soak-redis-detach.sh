#!/usr/bin/env bash
# tests/e2e/soak-redis-detach.sh - the never-harm soak (tests/soak/soak.sh, 10 rounds;
# tests/soak/suite.sh), case redis-detach: `attach --duration 1` of
# redis-server under load killed while it switches the agent off
# propel-test: takes 50
#   (seconds, alone: tests/run.sh -j starts the longest suites first; one
#   case a suite, so that two run side by side)
# propel-test: share 30
#   (redis-benchmark, its load, runs at nice 19 and takes what the
#   suites beside it leave: its CPU is not this suite's need)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis-detach redis-detach
