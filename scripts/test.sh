#!/usr/bin/env bash
# Sets up, builds and runs every test. Extra arguments go to ctest (e.g. -L fast, -j 1).
#   CTEST_PARALLEL_LEVEL  tests run at once (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
scripts/build.sh
cd "${GRAFX_BUILD_DIR:-build}"
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
ctest --output-on-failure "$@"
