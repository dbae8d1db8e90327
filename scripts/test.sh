#!/usr/bin/env bash
# Sets up, builds and runs every test. Extra arguments go to ctest (e.g. -L fast).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
scripts/build.sh
cd "${GRAFX_BUILD_DIR:-build}"
ctest --output-on-failure "$@"
