#!/usr/bin/env bash
# tests/e2e/soak-redis-record.sh - the never-harm soak (tests/soak/soak.sh, 10
# rounds; tests/soak/suite.sh), case redis-record: `propel record --
# redis-server` under load killed at a random moment
# propel-test: takes 220
#   (seconds, alone: tests/run.sh -j starts the longest suites first; one
#   case a suite, so that two run side by side)
# propel-test: share 30
#   (redis-benchmark, its load, runs at nice 19 and takes what the
#   suites beside it leave: its CPU is not this suite's need)
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
. "$PROPEL_TOP/tests/soak/suite.sh"
soak_suite soak-redis-record redis-record
