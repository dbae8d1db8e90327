"""Where a render's backward spends its time, batched against one by one: LibTorch's profiler
(through PyTorch) around the backward of one console, one table per schedule.

    PYTHONPATH=build/python python3 bench/python_backward_profile.py [--tracks 28] [--groups 5]
        [--prune-seed 2] [--seconds 3.8] [--sample-rate 30000] [--threads N] [--rows 14]

The console is render_bench's (pruned with the same seed unless --prune-seed -1); docs/
benchmarks.md records a run.
"""

import argparse
import os
import platform

import torch

import grafx

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--tracks", type=int, default=28)
parser.add_argument("--groups", type=int, default=5)
parser.add_argument("--prune-seed", type=int, default=2)
parser.add_argument("--seconds", type=float, default=3.8)
parser.add_argument("--sample-rate", type=int, default=30000)
parser.add_argument("--threads", type=int, default=0, help="default: every core")
parser.add_argument("--rows", type=int, default=14, help="operations listed per schedule")
arguments = parser.parse_args()
if not (1 <= arguments.tracks <= 1000 and 0 <= arguments.groups <= arguments.tracks
        and 0.01 <= arguments.seconds <= 600 and 8000 <= arguments.sample_rate <= 192000
        and 0 <= arguments.threads <= 1024 and 1 <= arguments.rows <= 1000):
    parser.error("tracks in [1, 1000], groups in [0, tracks], seconds in [0.01, 600], "
                 "sample rate in [8000, 192000], threads in [0, 1024], rows in [1, 1000]")
torch.set_num_threads(arguments.threads or os.cpu_count())
print(f"{platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads, "
      f"PyTorch {torch.__version__}\n")

console = grafx.mixing_console(arguments.tracks, n_groups=arguments.groups or None)
if arguments.prune_seed >= 0:
    grafx.prune_randomly(console, seed=arguments.prune_seed)
processors = grafx.make_processors(console, arguments.sample_rate)
torch.manual_seed(0)
sources = 0.1 * torch.randn(arguments.tracks, 2, int(arguments.seconds * arguments.sample_rate))
for method in ("one-by-one", "optimal"):
    plan = grafx.compute_render_plan(console, method=method)
    parameters = grafx.create_parameters(console, processors)
    for _ in range(2):  # warm-up: constants, allocator
        grafx.render(plan, processors, parameters, sources).pow(2).mean().backward()
    loss = grafx.render(plan, processors, parameters, sources).pow(2).mean()
    with torch.autograd.profiler.profile() as profile:
        loss.backward()
    print(f"## {method}: {console.num_nodes} nodes, {plan.num_calls} calls; backward only\n")
    print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=arguments.rows))
