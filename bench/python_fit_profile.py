"""Where a fit step spends its time, with one thread and with every core: LibTorch's profiler
(through PyTorch) around whole `Fitter.step()` calls on fit_bench's console (8 tracks, 3
subgroups, the paper's chain with dry/wet, stereo crops of 3.8 s at 30 kHz), one table of the
operations that take the most time, each with its time per step under both thread counts and the
speed-up the second core gives it: what bounds a step and its use of two cores. --chain and
--master (letters, as grafx fit takes them) profile another console: what a processor costs is
the difference between two runs.

    PYTHONPATH=build/python python3 bench/python_fit_profile.py [--steps 3] [--rows 16]
        [--chain LETTERS] [--master LETTERS]
"""

import argparse
import os
import platform
import sys
import time

import torch

import grafx

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=3, help="profiled steps per thread count")
parser.add_argument("--rows", type=int, default=16, help="operations listed")
parser.add_argument("--chain", help="the tracks' chain (default: the paper's)")
parser.add_argument("--master", default="", help="the master bus's chain (default: none)")
arguments = parser.parse_args()
if not (1 <= arguments.steps <= 100 and 1 <= arguments.rows <= 1000):
    parser.error("steps in [1, 100], rows in [1, 1000]")
cores = os.cpu_count()
print(f"{platform.machine()}, {cores} cores, PyTorch {torch.__version__}\n")

rate, seconds = 30000, 10.0
try:
    console = grafx.mixing_console(8, n_groups=3, dry_wet=True, chain=arguments.chain,
                                   master_chain=arguments.master or None)
except grafx.GraphError as error:
    parser.error(str(error))
torch.manual_seed(0)
tracks = 0.1 * torch.randn(8, 2, int(seconds * rate))
mix = 0.1 * torch.randn(2, int(seconds * rate))

per_thread = {}
step_ms = {}
try:
    for threads in (1, cores):
        torch.set_num_threads(threads)
        fitter = grafx.Fitter(console, tracks, mix, rate, crop_seconds=3.8, adapt_threads=False)
        for _ in range(2):  # warm-up: constants, allocator
            fitter.step()
        start = time.perf_counter()
        for _ in range(arguments.steps):
            fitter.step()
        step_ms[threads] = 1000 * (time.perf_counter() - start) / arguments.steps
        with torch.autograd.profiler.profile() as profile:
            for _ in range(arguments.steps):
                fitter.step()
        per_thread[threads] = {e.key: e.self_cpu_time_total / 1000 / arguments.steps
                               for e in profile.key_averages()}
except KeyboardInterrupt:  # Ctrl-C between or within steps: one line, no table, exit 1
    sys.exit("interrupted: no table was printed")

one, many = per_thread[1], per_thread[cores]
total_one, total_many = sum(one.values()), sum(many.values())
print(f"A step without the profiler: {step_ms[1]:.0f} ms with 1 thread, "
      f"{step_ms[cores]:.0f} ms with {cores} ({step_ms[1] / step_ms[cores]:.2f}x).\n")
print(f"| operation (self time) | 1 thread (ms/step) | {cores} threads (ms/step) | speed-up | "
      "share of the 1-thread step |")
print("|---|---:|---:|---:|---:|")
for key in sorted(one, key=one.get, reverse=True)[:arguments.rows]:
    a, b = one[key], many.get(key, 0.0)
    print(f"| {key} | {a:.1f} | {b:.1f} | {a / b if b else float('nan'):.2f}x | "
          f"{100 * a / total_one:.0f} % |")
print(f"| all operations | {total_one:.0f} | {total_many:.0f} | {total_one / total_many:.2f}x | "
      "100 % |")
