#!/usr/bin/env bash
# On a machine with a GPU and PyTorch 2.x (its LibTorch, with CUDA) but without this project's
# Debian packages, which scripts/device-deps.sh unpacks into .deps beforehand (carry it there):
#   1. compiles every library and program source against that LibTorch and links the grafx
#      program, bench/cuda_check and bench/device_bench;
#   2. cuda_check: CUDA against the CPU (the demo's console, every processor, fitting steps);
#   3. device_bench: the paper's consoles and fitting steps on the GPU beside the CPU;
#   4. grafx demo --device cuda: the README's main job fitted on the GPU (STEPS steps);
#   5. where GRAFX_SITE names a folder holding GRAFX (Python) and what it needs, GRAFX on the
#      same GPU (bench/grafx_python_device.py);
#   6. checks that the tests, benchmarks and examples compile against that LibTorch too (unless
#      CHECK_SOURCES=0).
# RUNS picks among steps 2–4 (default: "cuda_check device_bench demo"). Logs go to $OUT (or a
# temporary folder) as each step ends.
#
#   STEPS=100 GRAFX_SITE=.grafx_ref/site scripts/device-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
log=${OUT:-$(mktemp -d)}
torch=$(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))"
abi=$(python3 -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
deps=$PWD/.deps/root
libs=$deps/usr/lib/x86_64-linux-gnu
flags="-std=c++17 -O2 -DNDEBUG -w -Iinclude -Isrc -Itests -Ibench -I$deps/usr/include -I$torch/include \
  -I$torch/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=$abi -DGRAFX_VERSION=\"device\" \
  -DGRAFX_BUILD_TYPE=\"Release\" -DGRAFX_TESTDATA_DIR=\"testdata\""
out=$(mktemp -d)
failed=0
compile() {  # source, then g++ arguments
  local source=$1 log="$out/$(echo "$1" | tr / _).log"
  shift
  g++ $flags "$@" "$source" 2>"$log" || { echo "FAILED $source"; head -20 "$log"; return 1; }
}
export -f compile; export flags out
step() { echo "== $1 ($(date +%T))"; }

step "compiling"
sources="$(ls src/*/*.cpp apps/grafx/*.cpp) bench/bench_support.cpp bench/cuda_check.cpp bench/device_bench.cpp"
echo $sources | tr ' ' '\n' | xargs -P "$(nproc)" -I{} bash -c 'compile {} -c -o "$out/$(echo {} | tr / _).o"' ||
  failed=1
echo "compiled $(echo $sources | wc -w) sources"
ar rcs "$out/libgrafx.a" "$out"/src_*.o
link() {  # program, its objects
  local program=$1
  shift
  g++ "$@" "$out/libgrafx.a" -L"$torch/lib" -L"$libs" -Wl,-rpath,"$torch/lib" -Wl,-rpath,"$libs" \
    -Wl,-rpath-link,"$libs" -Wl,--no-as-needed -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 \
    -lsndfile -lsamplerate -lgvc -lcgraph -l:libz.so.1 -lpthread -o "$out/$program" ||
    { echo "FAILED to link $program"; failed=1; }
}
link grafx "$out"/apps_grafx_*.o
link cuda_check "$out/bench_cuda_check.cpp.o" "$out/bench_bench_support.cpp.o"
link device_bench "$out/bench_device_bench.cpp.o" "$out/bench_bench_support.cpp.o"
export LD_LIBRARY_PATH=$libs GVBINDIR=$libs/graphviz

runs=" ${RUNS:-cuda_check device_bench demo} "
if [[ $runs == *" cuda_check "* ]]; then
  step "cuda_check"
  "$out/cuda_check" 2>&1 | tee "$log/cuda_check.txt" || failed=1
fi
if [[ $runs == *" device_bench "* ]]; then
  step "device_bench"
  "$out/device_bench" 2>&1 | tee "$log/device_bench.txt" || failed=1
fi
if [[ $runs == *" demo "* ]]; then
  step "grafx demo --device cuda"
  demo=$(mktemp -d)/demo
  "$out/grafx" demo --device cuda --steps "${STEPS:-100}" -o "$demo" 2>&1 | tee "$log/demo.txt" || failed=1
  cp "$demo/loss.csv" "$log/demo_loss.csv" 2>/dev/null
fi
if [ -n "${GRAFX_SITE:-}" ]; then
  step "GRAFX (Python) on the same GPU"
  PYTHONPATH=$GRAFX_SITE python3 -W ignore bench/grafx_python_device.py 2>&1 | tee "$log/grafx_python.txt" ||
    failed=1
fi
if [ "${CHECK_SOURCES:-1}" = 1 ]; then
  step "checking the tests, benchmarks and examples"
  ls tests/*/*.cpp bench/*.cpp examples/*.cpp | xargs -P "$(nproc)" -I{} bash -c 'compile {} -fsyntax-only' ||
    failed=1
  echo "checked $(ls tests/*/*.cpp bench/*.cpp examples/*.cpp | wc -l) sources"
fi
step "done"
exit $failed
