#!/usr/bin/env bash
# `make soak`: the failure test of the whole stack. Builds the executables and tests, starts a throwaway PostgreSQL
# (scripts/with-postgres.sh), and runs Tests/SystemTests/SoakTests.swift: the whole stack under a mixed load
# through the gateway while each service is killed with SIGKILL in turn and restarted, PostgreSQL restarts, and
# client connections drop at random, with merges and account deletions racing with writes. Then it checks that no
# acknowledged score, gift, bet or merge was lost or duplicated, that no database names a deleted account, that the
# ledger sums to zero and that every service is ready again, and prints what clients saw
# (calls by status). The report also lands in .bench/soak.json.
#
#   RAVE_SOAK_SECONDS   how long the load and the failures last (default 300)
#   RAVE_SCRATCH_PATH   SwiftPM scratch path (default .build)
#   BUILD_FLAGS         as in the Makefile (default -Xswiftc -warnings-as-errors), so `make test`'s build is reused
set -euo pipefail
cd "$(dirname "$0")/.."

export RAVE_SOAK_SECONDS=${RAVE_SOAK_SECONDS:-300}
scratch=${RAVE_SCRATCH_PATH:-.build}

# shellcheck disable=SC2086 # the flags are words
swift build --build-tests --scratch-path "$scratch" ${BUILD_FLAGS:--Xswiftc -warnings-as-errors}
echo "soak: ${RAVE_SOAK_SECONDS} s of load and failures"
scripts/with-postgres.sh swift test --scratch-path "$scratch" --skip-build \
    --filter 'SystemTests.SoakTests' 2>&1 | grep -v -E '^(Test Suite|Test Case|Executed|\[[0-9]+/[0-9]+\])'
