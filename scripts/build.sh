#!/usr/bin/env bash
# Installs what is missing, then configures and builds grafx (Release) in ./build.
#   scripts/build.sh [TARGET...]   build only these targets (e.g. grafx_cli); default: all
#   GRAFX_BUILD_DIR  build folder (default: build)
#   GRAFX_JOBS       parallel compile jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir="${GRAFX_BUILD_DIR:-build}"
jobs="${GRAFX_JOBS:-$(nproc)}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
