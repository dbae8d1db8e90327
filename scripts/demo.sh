#!/usr/bin/env bash
# Sets up, builds and runs the main job on an embedded default: `grafx demo` synthesises a song,
# mixes it through a hidden console and fits a fresh console to that mix (results, with an HTML
# report, in ./demo-output). Extra arguments go to `grafx demo` (e.g. --steps 400).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/bin/grafx demo -o demo-output --force "$@"
