#!/usr/bin/env bash
# Builds grafx (scripts/build.sh) and installs the program (with the library grafx export-lv2
# copies into LV2 bundles) and the Python module:
#   PREFIX/bin/grafx and PREFIX/lib/python3.X/dist-packages/grafx, where Debian's
#   /usr/bin/python3 finds it for PREFIX=/usr/local (the default).
#   GRAFX_PREFIX     where to install (default: /usr/local)
#   GRAFX_BUILD_DIR  build folder (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh grafx_cli grafx_python
prefix="${GRAFX_PREFIX:-/usr/local}"
cmake --install "${GRAFX_BUILD_DIR:-build}" --prefix "$prefix" --component grafx
echo "installed: $prefix/bin/grafx, the library of its LV2 plugins ($prefix/lib/grafx) and the Python module grafx"
