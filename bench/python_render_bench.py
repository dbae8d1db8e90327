"""The cost of calling grafx from Python: forward+backward of a mixing console timed from Python
and in C++ (the same loop inside the extension), alternating, in one process.

    PYTHONPATH=build/python python3 bench/python_render_bench.py [--seconds 3.8]
        [--sample-rate 30000] [--repeats 7] [--threads N]

Prints the machine, the threads and a table of medians; docs/benchmarks.md records a run.
"""

import argparse
import os
import platform
import statistics
import time

import torch

import grafx

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--seconds", type=float, default=3.8)
parser.add_argument("--sample-rate", type=int, default=30000)
parser.add_argument("--repeats", type=int, default=7)
parser.add_argument("--threads", type=int, default=0,
                    help="LibTorch threads (default: every core, as the grafx program)")
arguments = parser.parse_args()
if not (0.01 <= arguments.seconds <= 600 and 8000 <= arguments.sample_rate <= 192000
        and 1 <= arguments.repeats <= 1000 and 0 <= arguments.threads <= 1024):
    parser.error("--seconds in [0.01, 600], --sample-rate in [8000, 192000], --repeats in "
                 "[1, 1000], --threads in [0, 1024]")
torch.set_num_threads(arguments.threads or os.cpu_count())

print("# Rendering from Python\n")
print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
      f"{torch.get_num_threads()} threads, PyTorch {torch.__version__}, Python "
      f"{platform.python_version()}\n")
length = int(arguments.seconds * arguments.sample_rate)
print(f"Stereo sources of {arguments.seconds} s at {arguments.sample_rate} Hz, float32, batch 1;"
      f" forward + backward of mean(y²), gradients cleared after each as in render_bench; "
      f"medians of {arguments.repeats} runs, alternating.\n")
print("| console | nodes | calls | from Python (ms) | in C++ (ms) | Python / C++ |")
print("|---|---|---|---|---|---|")
for name, tracks, groups in (("8 tracks, 3 groups, full", 8, 3),
                             ("28 tracks, 5 groups, full", 28, 5)):
    console = grafx.mixing_console(tracks, n_groups=groups)
    processors = grafx.make_processors(console, arguments.sample_rate)
    plan = grafx.compute_render_plan(console)
    parameters = grafx.create_parameters(console, processors)
    torch.manual_seed(0)
    sources = 0.1 * torch.randn(tracks, 2, length)

    def from_python():
        start = time.perf_counter()
        grafx.render(plan, processors, parameters, sources).pow(2).mean().backward()
        for group in parameters.values():
            for tensor in group.values():
                tensor.grad = None
        return 1000 * (time.perf_counter() - start)

    from_python()  # warm-up: constants, allocator
    python_ms, cpp_ms = [], []
    for _ in range(arguments.repeats):
        python_ms.append(from_python())
        cpp_ms += grafx._grafx._time_forward_backward(plan, processors, parameters, sources, 1)
    p, c = statistics.median(python_ms), statistics.median(cpp_ms)
    print(f"| {name} | {console.num_nodes} | {plan.num_calls} | {p:.0f} | {c:.0f} | {p / c:.3f} |")
