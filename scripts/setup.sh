#!/usr/bin/env bash
# Installs every Debian package grafx needs to build; with --tests, also those only its tests
# need. Idempotent: returns at once when all are present.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libtorch-dev            # tensors, FFT, autograd (LibTorch 1.13 on Debian 12)
  libsndfile1-dev         # audio files
  libsamplerate0-dev      # resampling (BSD)
  zlib1g-dev              # PNG pictures
  nlohmann-json3-dev      # graph, parameter and report files
  libcli11-dev            # command line
  libgraphviz-dev         # graph pictures (cgraph + gvc, EPL)
  lv2-dev                 # the LV2 plugin of grafx export-lv2 (headers, ISC)
  fonts-dejavu-core       # a font for the letters in pictures
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format            # the formatting check of the test command
  python3-dev pybind11-dev python3-torch  # the Python module (PyTorch 1.13 on the same LibTorch)
  python3-numpy python3-pytest python3-networkx  # its tests and GRAFX interop
  python3-distributed     # python3 -m grafx.dataset: songs on a Dask cluster
)
if [ "${1:-}" = "--tests" ]; then
  packages+=(chromium)  # the report screenshot test (scripts/report-screenshot.sh)
  packages+=(lilv-utils sordi liblilv-dev)  # lv2info, lv2apply, sord_validate, a lilv host: the
                                             # export-lv2 tests' hosts
  packages+=(python3-pip python3-setuptools python3-wheel python3-venv)  # pip install . (test_pip_install.py)
  packages+=(mypy)  # type-checks the extension's stub python/grafx/_grafx.pyi (test_api_docs.py)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
