#!/usr/bin/env bash
# On a machine with a GPU and PyTorch 2.x (its LibTorch, with CUDA) but without this project's
# Debian packages: compiles every source of the project against that LibTorch (the library and
# the program compiled, tests, benchmarks and examples checked), then builds and runs
# bench/cuda_check (CPU against CUDA). Debian 12's -dev packages must be unpacked in .deps/root:
#   mkdir -p .deps/debs && cd .deps/debs && apt-get download nlohmann-json3-dev libcli11-dev \
#     libsndfile1-dev libsamplerate0-dev libgraphviz-dev zlib1g-dev libgtest-dev libgmock-dev \
#     libbenchmark-dev lv2-dev && cd .. && for f in debs/*.deb; do dpkg -x "$f" root; done
set -uo pipefail
cd "$(dirname "$0")/.."
torch=$(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))"
abi=$(python3 -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
flags="-std=c++17 -O2 -w -Iinclude -Isrc -Itests -Ibench -I.deps/root/usr/include -I$torch/include \
  -I$torch/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=$abi"
out=$(mktemp -d)
failed=0
compile() {  # source, then g++ arguments
  local source=$1 log="$out/$(echo "$1" | tr / _).log"
  shift
  g++ $flags "$@" "$source" 2>"$log" || { echo "FAILED $source"; head -20 "$log"; return 1; }
}
export -f compile; export flags out
ls src/*/*.cpp apps/grafx/*.cpp | xargs -P "$(nproc)" -I{} bash -c 'compile {} -c -o "$out/$(echo {} | tr / _).o"' || failed=1
ls tests/*/*.cpp bench/*.cpp examples/*.cpp | xargs -P "$(nproc)" -I{} bash -c 'compile {} -fsyntax-only' || failed=1
echo "compiled $(ls src/*/*.cpp apps/grafx/*.cpp | wc -l) sources, checked $(ls tests/*/*.cpp bench/*.cpp examples/*.cpp | wc -l)"
# bench/cuda_check needs no audio, picture or report code: link without their libraries.
ar rcs "$out/libgrafx.a" $(ls "$out"/src_*.o | grep -v "src_io_audio\|src_io_draw\|src_io_image\|src_report")
g++ $flags bench/cuda_check.cpp "$out/libgrafx.a" -L"$torch/lib" -Wl,-rpath,"$torch/lib" -Wl,--no-as-needed \
  -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 -o "$out/cuda_check" && "$out/cuda_check" || failed=1
exit $failed
