#!/usr/bin/env bash
# On a machine with a GPU and PyTorch 2.x (its LibTorch, with CUDA) but without this project's
# Debian packages, which scripts/device-deps.sh unpacks into .deps beforehand (carry it there):
#   1. compiles every library and program source against that LibTorch, with CUDA (GRAFX_CUDA:
#      captured fit steps, the recursions' kernels built by nvcc for sm_90), and links the grafx
#      program and the device benchmarks, LibTorch's headers precompiled once. Objects are kept
#      in .device-cache, keyed by the content of each source and the project headers it
#      includes: a later call on the same (warm) machine, or one that carries
#      .device-cache/objects.tar.xz (written to $OUT with KEEP_OBJECTS=1), compiles only what
#      changed; SKIP_BUILD=1 skips this step (for RUNS=pip alone, which builds with CMake);
#   2. RUNS picks what runs, in this order (default: all but demo and pip):
#        kernels   bench/recursion_kernels_check: the recursion kernels against host loops
#        cuda_check  CUDA against the CPU (the demo's console, every processor, fitting steps,
#                  captured steps against uncaptured ones, static and with levels automated)
#        profile   bench/device_profile and bench/profile_summary.py: where a step's time goes
#        bench     bench/device_bench: the paper's consoles and fitting steps, GPU beside CPU
#        grafx_py  GRAFX (Python) on the same GPU, where GRAFX_SITE names its site folder
#        demo      grafx demo --device cuda (STEPS steps)
#        songs     bench/songs_on_one_gpu.sh: several songs' fits at once on the GPU against one
#        pip       pip install --no-build-isolation . into a fresh target, its tests, and a
#                  render and fit step on CUDA from Python
#   3. checks that the tests, benchmarks and examples compile against that LibTorch too
#      (CHECK_SOURCES=1).
# A lent machine's time is short: each part after the build starts only while DEADLINE_S
# seconds (default 570) from the start leave it time, and is cut at the deadline, so that the
# summary is always printed.
# Into $OUT (or a temporary folder): log.txt (everything printed), traces.tar.xz (the profiles'
# Chrome traces), pip.txt (pip's build log) and, with KEEP_OBJECTS=1, objects.tar.xz; a summary
# is printed last.
#
#   GRAFX_SITE=.grafx_ref/site scripts/device-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
log=${OUT:-$(mktemp -d)}
exec > >(tee "$log/log.txt") 2>&1
work=$(mktemp -d)  # logs of the parts, traces
started=$(date +%s)
deadline=$((started + ${DEADLINE_S:-570}))
step() { echo "== $1 ($(($(date +%s) - started)) s)"; }
left() { echo $((deadline - $(date +%s))); }
# Whether a part that needs about $2 seconds may start (else noted as skipped); its commands
# then run under `timeout $(cap N)`, at most N seconds and never past the deadline.
may_run() {
  [[ $runs == *" $1 "* ]] || return 1
  if [ "$(left)" -lt "$2" ]; then
    note "$1: skipped, $(left) s left before the deadline"
    return 1
  fi
}
cap() { local l=$(($(left) - 10)); echo $(($1 < l ? $1 : (l > 1 ? l : 1))); }
summary=()
note() { summary+=("$1"); }
torch=$(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv 2>/dev/null
abi=$(python3 -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
torch_version=$(python3 -c "import torch; print(torch.__version__)")
deps=$PWD/.deps/root
libs=$deps/usr/lib/x86_64-linux-gnu
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
flags="-std=c++17 -O2 -DNDEBUG -w -fopenmp -Iinclude -Isrc -Itests -Ibench -isystem $deps/usr/include \
  -isystem $torch/include -isystem $torch/include/torch/csrc/api/include -isystem $cuda/include \
  -D_GLIBCXX_USE_CXX11_ABI=$abi -DGRAFX_CUDA -DGRAFX_VERSION=\"device\" \
  -DGRAFX_BUILD_TYPE=\"Release\" -DGRAFX_TESTDATA_DIR=\"testdata\""
nvflags="-std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc"
cache=$PWD/.device-cache/objects
mkdir -p "$cache"
[ -f .device-cache/objects.tar.xz ] && tar -xJf .device-cache/objects.tar.xz -C .device-cache
out=$(mktemp -d)

# The key of an object: its compiler's flags, its source and the project headers it included
# when last compiled (from its .d file).
key_of() {
  {
    echo "$2 $torch_version"
    cat "$1"
    if [ -f "$3.d" ]; then
      sed -e 's/\\$//' -e 's/^[^:]*://' "$3.d" | tr ' ' '\n' | grep -E '^(include|src|bench|tests|apps)/' |
        sort -u | xargs -r cat 2>/dev/null
    fi
  } | sha1sum | cut -d' ' -f1
}
compile() {  # source; compiles it into the cache unless its object there is current
  local source=$1 object
  object=$cache/$(echo "$1" | tr / _).o
  local compiler="g++ $flags -include $pch/grafx_pch.h"
  [[ $source == *.cu ]] && compiler="$cuda/bin/nvcc $nvflags"
  if [ -f "$object" ] && [ -f "$object.key" ] &&
    [ "$(key_of "$source" "$compiler" "$object")" = "$(cat "$object.key")" ]; then
    echo cached >"$object.status"
    return 0
  fi
  if ! $compiler -MMD -MF "$object.d" -c "$source" -o "$object" 2>"$object.log"; then
    echo "FAILED $source"
    head -30 "$object.log"
    rm -f "$object" "$object.key"
    return 1
  fi
  key_of "$source" "$compiler" "$object" >"$object.key"
  echo compiled >"$object.status"
}
export -f compile key_of
export flags nvflags cache cuda torch_version

kernels_check=none  # the recursion kernels' own check, built beside the rest
failed=0
if [ "${SKIP_BUILD:-0}" = 1 ]; then  # for RUNS=pip alone, which builds with CMake
  note "build: skipped (SKIP_BUILD=1)"
else
step "compiling"
rm -f "$cache"/*.status
# The LibTorch headers every library source includes, parsed once (cmake/pch.h, as the CMake
# build does): about 9 of a source's 15 s. g++ takes the .gch beside the header when its flags
# match, else parses the header as usual.
pch=$PWD/.device-cache/pch
mkdir -p "$pch"
cp cmake/pch.h "$pch/grafx_pch.h"
g++ $flags -x c++-header "$pch/grafx_pch.h" -o "$pch/grafx_pch.h.gch" 2>"$pch/log.txt" ||
  { echo "precompiled header failed (compiling without it)"; head -5 "$pch/log.txt"; }
export pch
if [ -f bench/recursion_kernels_check.cu ]; then
  $cuda/bin/nvcc $nvflags bench/recursion_kernels_check.cu src/dsp/cuda/*.cu -o "$out/kernels" \
    >"$work/kernels_build.txt" 2>&1 &
  kernels_check=$!
fi
sources="$(ls src/*/*.cpp apps/grafx/*.cpp) bench/bench_support.cpp bench/cuda_check.cpp \
  bench/device_bench.cpp bench/device_profile.cpp"
kernels=$(ls src/dsp/cuda/*.cu 2>/dev/null)
failed=0
echo $sources $kernels | tr ' ' '\n' | xargs -P "$(nproc)" -I{} bash -c 'compile {}' || failed=1
echo "sources: $(cat "$cache"/*.status 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
object() { echo "$cache/$(echo "$1" | tr / _).o"; }
ar rcs "$out/libgrafx.a" $(for s in $(ls src/*/*.cpp) $kernels; do object "$s"; done)
link() {  # program, its objects
  local program=$1
  shift
  g++ -fopenmp "$@" "$out/libgrafx.a" -L"$torch/lib" -L"$libs" -L"$cuda/lib64" \
    -Wl,-rpath,"$torch/lib" -Wl,-rpath,"$libs" -Wl,-rpath-link,"$libs" -Wl,--no-as-needed \
    -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 -lcudart -lsndfile -lsamplerate -lgvc \
    -lcgraph -l:libz.so.1 -lpthread -o "$out/$program" 2>"$out/link_$program.log" ||
    { echo "FAILED to link $program"; head -20 "$out/link_$program.log"; failed=1; }
}
link grafx $(for s in apps/grafx/*.cpp; do object "$s"; done)
for program in cuda_check device_bench device_profile; do
  link $program "$(object bench/$program.cpp)" "$(object bench/bench_support.cpp)"
done
# The objects for a later call that carries .device-cache (a warm machine keeps them anyway).
[ "${KEEP_OBJECTS:-0}" = 1 ] && (cd .device-cache && tar -cf - objects | xz -T0 -6 >"$log/objects.tar.xz")
note "build: $(cat "$cache"/*.status 2>/dev/null | sort | uniq -c | tr '\n' ' ')failed=$failed, $(($(date +%s) - started)) s"
fi

export LD_LIBRARY_PATH=$libs GVBINDIR=$libs/graphviz  # the programs' and the module's libraries
runs=" ${RUNS:-kernels cuda_check profile bench grafx_py songs} "
if [ "$kernels_check" != none ] && may_run kernels 30; then
  step "recursion kernels against host loops"
  if wait $kernels_check; then
    timeout "$(cap 90)" "$out/kernels" 2>&1 | tee "$work/kernels.txt"
    note "kernels: exit ${PIPESTATUS[0]}; $(grep -i 'samples/s' "$work/kernels.txt" | tail -2 | tr '\n' ' ')"
  else
    head -30 "$work/kernels_build.txt"
    note "kernels: build failed"
  fi
fi
if may_run cuda_check 40; then
  step "cuda_check"
  timeout "$(cap 240)" "$out/cuda_check" 2>&1 | tee "$work/cuda_check.txt"
  note "cuda_check: exit ${PIPESTATUS[0]}"
fi
if may_run profile 30; then
  step "profile"
  timeout "$(cap 150)" "$out/device_profile" "$work/traces" 3
  for trace in "$work"/traces/*.json; do
    python3 bench/profile_summary.py "$trace" --steps 3 2>&1 | tee -a "$work/profile.txt"
    echo
  done
  note "profile: $(grep -h '^per step' "$work/profile.txt" | tr '\n' ' ')"
fi
if may_run bench 45; then
  step "device_bench"
  timeout "$(cap 240)" "$out/device_bench" 2>&1 | tee "$work/device_bench.txt"
  note "device_bench: exit ${PIPESTATUS[0]}; $(grep -E '^\| cuda.*(launched|captured)' "$work/device_bench.txt" | cut -d'|' -f3,4 | tr '\n' ';')"
fi
if [ -n "${GRAFX_SITE:-}" ] && may_run grafx_py 40; then
  step "GRAFX (Python) on the same GPU"
  PYTHONPATH=$GRAFX_SITE timeout "$(cap 180)" python3 -W ignore bench/grafx_python_device.py \
    --profile "$work/traces/grafx" 2>&1 | tee "$work/grafx_python.txt"
  for trace in "$work"/traces/grafx/*.json; do
    [ -f "$trace" ] && python3 bench/profile_summary.py "$trace" --steps 3 2>&1 |
      tee -a "$work/grafx_profile.txt"
  done
  note "GRAFX: $(grep -E 'ms' "$work/grafx_python.txt" | tail -3 | tr '\n' ' ')"
  note "GRAFX profile: $(grep -h '^per step' "$work/grafx_profile.txt" 2>/dev/null | tr '\n' ' ')"
fi
if may_run demo 30; then
  step "grafx demo --device cuda"
  demo=$(mktemp -d)/demo
  timeout "$(cap 180)" "$out/grafx" demo --device cuda --steps "${STEPS:-100}" -o "$demo" 2>&1 | tee "$work/demo.txt"
  note "demo: exit ${PIPESTATUS[0]}; $(grep -E 'replay|uncaptured|loss after' "$work/demo.txt" | tr '\n' ' ')"
fi
if may_run songs 60; then
  step "songs on one GPU"
  timeout "$(cap 150)" bench/songs_on_one_gpu.sh "$out/grafx" "${SONG_STEPS:-300}" ${SONGS_AT_ONCE:-1 4 8} 2>&1 |
    tee "$work/songs.txt"
  note "songs: $(grep -E '^\| [0-9]' "$work/songs.txt" | tr '\n' ' ')"
fi
if may_run pip 120; then
  step "pip install --no-build-isolation . (CMake against this PyTorch, with CUDA)"
  site=$(mktemp -d)
  # CMake finds the Debian packages in .deps through the pkgconf carried there.
  mkdir -p "$deps/bin" && ln -sfn ../usr/bin/pkgconf "$deps/bin/pkg-config"
  export PATH=$deps/bin:$PATH CMAKE_PREFIX_PATH=$deps/usr PKG_CONFIG_SYSROOT_DIR=$deps \
    PKG_CONFIG_LIBDIR=$libs/pkgconfig:$deps/usr/share/pkgconfig
  if timeout "$(cap 300)" python3 -m pip install --no-build-isolation --no-deps --target "$site" . \
    >"$work/pip.txt" 2>&1; then
    PYTHONPATH=$site timeout "$(cap 60)" python3 bench/python_cuda_smoke.py 2>&1 | tee "$work/pip_tests.txt"
    program=$out/grafx
    [ -x "$program" ] || program=$site/grafx/bin/grafx
    PYTHONPATH=$site GRAFX_BIN=$program timeout "$(cap 240)" python3 -m pytest -q -p no:cacheprovider \
      -n 8 -k "not pip_install" python/tests 2>&1 | tail -15 | tee -a "$work/pip_tests.txt"
    note "pip: installed; $(grep -E 'smoke|passed|failed' "$work/pip_tests.txt" | tail -4 | tr '\n' ' ')"
  else
    tail -30 "$work/pip.txt"
    note "pip: install failed or cut at the deadline (pip.txt)"
  fi
  cp "$work/pip.txt" "$log/pip.txt" 2>/dev/null
fi
if [ "${CHECK_SOURCES:-0}" = 1 ] && [ "$(left)" -gt 60 ]; then
  step "checking the tests, benchmarks and examples"
  ls tests/*/*.cpp bench/*.cpp examples/*.cpp | xargs -P "$(nproc)" -I{} \
    bash -c 'g++ $flags -fsyntax-only {} 2>/tmp/check.log || { echo "FAILED {}"; head -5 /tmp/check.log; }'
fi
[ -d "$work/traces" ] && (cd "$work" && tar -cf - traces | xz -T0 >"$log/traces.tar.xz")
step "done"
echo
for line in "${summary[@]}"; do echo "$line"; done
exit $failed
