#!/usr/bin/env bash
# Sets up, builds and runs the main job on an embedded default: builds a mixing console of
# 8 tracks in 3 subgroups and draws it (results in ./demo-output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
out="demo-output"
mkdir -p "$out"
build/bin/grafx console --tracks 8 --groups 3 -o "$out/console.json" --draw "$out/console.svg" --force
build/bin/grafx info "$out/console.json"
