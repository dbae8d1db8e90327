#!/usr/bin/env bash
# Sets up, builds the program alone and runs the main job on an embedded default: `grafx demo`
# synthesises a song, mixes it through a hidden console and fits a fresh console to that mix
# (results, with an HTML report, in ./demo-output, replaced on each run). Extra arguments go to
# `grafx demo` (e.g. --steps 400, or -o another-folder).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh grafx_cli
output=(-o demo-output)
for argument in "$@"; do
  case "$argument" in -o | --output | --output=*) output=() ;; esac
done
exec "${GRAFX_BUILD_DIR:-build}/bin/grafx" demo "${output[@]}" --force "$@"
