"""Threads for renders from Python on a shared machine: forward+backward of a mixing console with
1 thread and with every core, with OMP_WAIT_POLICY unset and PASSIVE, without and with competing
busy processes that the benchmark starts itself.

    PYTHONPATH=build/python python3 bench/python_threads_bench.py [--seconds 3.8]
        [--sample-rate 30000] [--repeats 3] [--rounds 2] [--competitors 1] [--many N]
        [--policies unset,PASSIVE]

Each configuration runs in a fresh Python process (libgomp reads OMP_WAIT_POLICY only when
torch loads), which builds the console (8 tracks, 3 subgroups, the paper's full chain), sets
torch.set_num_threads, warms up once and times `--repeats` forward+backward passes of mean(y²)
(gradients cleared after each, as python_render_bench.py). Every round runs every
configuration, the quiet block (no competitor started; other users' load stays, so the load
average is printed) and the competing block in turn (their order alternates between
rounds). A competitor is `while True: pass` in Python; all are killed at the end, on Ctrl-C,
and stop by themselves if this program dies. Prints a table of the medians over all rounds (the
range of the per-round medians in brackets) and the ratio of every core over 1 thread;
docs/benchmarks.md records runs. The defaults took 6 to 7 minutes on the loaded 2-core machine
there, most of it the default policy's slow 2-thread runs (a quiet machine should need about 2);
--repeats, --rounds, --seconds and --conditions shorten or lengthen them.
"""

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--seconds", type=float, default=3.8, help="audio length (default 3.8)")
parser.add_argument("--sample-rate", type=int, default=30000)
parser.add_argument("--repeats", type=int, default=3,
                    help="timed forward+backward passes per process (default 3)")
parser.add_argument("--rounds", type=int, default=2,
                    help="times every configuration runs, each in a new process (default 2)")
parser.add_argument("--competitors", type=int, default=1,
                    help="busy processes in the competing condition (default 1)")
parser.add_argument("--many", type=int, default=max(2, os.cpu_count() or 2),
                    help="the thread count compared with 1 (default: every core, at least 2)")
parser.add_argument("--policies", default="unset,PASSIVE",
                    help="OMP_WAIT_POLICY values, comma-separated; 'unset' leaves it out "
                         "(default unset,PASSIVE)")
parser.add_argument("--conditions", default="quiet,competing",
                    help="quiet (no competitor started), competing or both, comma-separated "
                         "(default both)")
parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
arguments = parser.parse_args()
policies = [p.strip() for p in arguments.policies.split(",") if p.strip()]
conditions = [c.strip() for c in arguments.conditions.split(",") if c.strip()]
if not (0.01 <= arguments.seconds <= 600 and 8000 <= arguments.sample_rate <= 192000
        and 1 <= arguments.repeats <= 1000 and 1 <= arguments.rounds <= 100
        and 1 <= arguments.competitors <= 64 and 2 <= arguments.many <= 1024
        and 0 <= arguments.worker <= 1024 and policies
        and all(p in ("unset", "PASSIVE", "ACTIVE") for p in policies)
        and conditions and all(c in ("quiet", "competing") for c in conditions)):
    parser.error("--seconds in [0.01, 600], --sample-rate in [8000, 192000], --repeats in "
                 "[1, 1000], --rounds in [1, 100], --competitors in [1, 64], --many in "
                 "[2, 1024], --policies of unset, PASSIVE and ACTIVE, --conditions of quiet "
                 "and competing")


def worker():
    """One configuration, in its own process: prints one JSON line of times in ms."""
    import torch

    import grafx

    torch.set_num_threads(arguments.worker)
    console = grafx.mixing_console(8, n_groups=3)
    processors = grafx.make_processors(console, arguments.sample_rate)
    plan = grafx.compute_render_plan(console)
    parameters = grafx.create_parameters(console, processors)
    torch.manual_seed(0)
    sources = 0.1 * torch.randn(8, 2, int(arguments.seconds * arguments.sample_rate))

    def forward_backward():
        start = time.perf_counter()
        grafx.render(plan, processors, parameters, sources).pow(2).mean().backward()
        for group in parameters.values():
            for tensor in group.values():
                tensor.grad = None
        return 1000 * (time.perf_counter() - start)

    forward_backward()  # warm-up: constants, allocator, thread pool
    times = [forward_backward() for _ in range(arguments.repeats)]
    print(json.dumps({"threads": torch.get_num_threads(), "nodes": console.num_nodes,
                      "torch": torch.__version__, "ms": times}))


if arguments.worker:
    worker()
    sys.exit(0)

# A competitor spins in Python and checks every ~50 ms that its parent still lives.
SPIN = ("import os\np = os.getppid()\nwhile os.getppid() == p:\n"
        "    for _ in range(1000000): pass\n")
competitors = []
running = []  # the worker in flight


def start_competitors():
    for _ in range(arguments.competitors):
        competitors.append(subprocess.Popen([sys.executable, "-c", SPIN],
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
    time.sleep(1.0)  # let them take their cores


def stop(processes):
    for process in processes:
        if process.poll() is None:
            process.kill()
    for process in processes:
        process.wait()
    processes.clear()


def measure(threads, policy):
    environment = dict(os.environ)
    environment.pop("OMP_WAIT_POLICY", None)
    if policy != "unset":
        environment["OMP_WAIT_POLICY"] = policy
    command = [sys.executable, os.path.abspath(__file__), "--worker", str(threads),
               "--seconds", str(arguments.seconds), "--sample-rate", str(arguments.sample_rate),
               "--repeats", str(arguments.repeats)]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    running.append(process)
    out, err = process.communicate()
    running.remove(process)
    if process.returncode != 0:
        sys.exit(f"python_threads_bench: error: the worker ({threads} threads, OMP_WAIT_POLICY "
                 f"{policy}) ended with status {process.returncode}: "
                 f"{(err.strip().splitlines() or [''])[-1]}")
    result = json.loads(out.strip().splitlines()[-1])
    if result["threads"] != threads:
        sys.exit(f"python_threads_bench: error: asked for {threads} threads, the worker ran "
                 f"{result['threads']}")
    return result


signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
thread_counts = (1, arguments.many)
per_round = {}  # (condition, policy, threads) -> [median of each round]
every = {}      # (condition, policy, threads) -> every time
info = {}
began = time.time()
load_before = os.getloadavg()
loads = []  # the 1-minute load average after each configuration
try:
    for round_index in range(arguments.rounds):
        order = conditions if round_index % 2 == 0 else conditions[::-1]
        for condition in order:
            if condition == "competing":
                start_competitors()
            configurations = [(p, t) for p in policies for t in thread_counts]
            if round_index % 2:
                configurations.reverse()
            for policy, threads in configurations:
                result = measure(threads, policy)
                loads.append(os.getloadavg()[0])
                info = result
                key = (condition, policy, threads)
                per_round.setdefault(key, []).append(statistics.median(result["ms"]))
                every.setdefault(key, []).extend(result["ms"])
                print(f"round {round_index + 1}/{arguments.rounds}, {condition}, "
                      f"OMP_WAIT_POLICY {policy}, {threads} thread(s): "
                      f"{per_round[key][-1]:.0f} ms", file=sys.stderr, flush=True)
            stop(competitors)
except KeyboardInterrupt:
    sys.exit(130)
finally:
    stop(running)
    stop(competitors)
load_after = os.getloadavg()

print("# Threads for renders from Python\n")
print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, PyTorch "
      f"{info.get('torch', '?')}, Python {platform.python_version()}, "
      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(began))}; 1-minute load average "
      f"{load_before[0]:.1f} before, {statistics.mean(loads or [0]):.1f} on average while "
      f"measuring (competitors included), {load_after[0]:.1f} after\n")
print(f"Forward + backward of mean(y²) through the 8-track, 3-group console of the full chain "
      f"({info.get('nodes', '?')} nodes), stereo sources of {arguments.seconds} s at "
      f"{arguments.sample_rate} Hz, float32; each configuration in a new process, "
      f"{arguments.repeats} timed runs after a warm-up, {arguments.rounds} round(s); "
      f"competing: {arguments.competitors} busy Python process(es). Median ms over all runs "
      f"[range of the per-round medians].\n")
many = arguments.many
print(f"| condition | OMP_WAIT_POLICY | 1 thread (ms) | {many} threads (ms) | {many} threads / 1 |")
print("|---|---|---:|---:|---:|")


def cell(key):
    rounds = per_round[key]
    spread = f" [{min(rounds):.0f}–{max(rounds):.0f}]" if len(rounds) > 1 else ""
    return statistics.median(every[key]), f"{statistics.median(every[key]):.0f}{spread}"


for condition in conditions:
    for policy in policies:
        one, one_text = cell((condition, policy, 1))
        several, several_text = cell((condition, policy, many))
        print(f"| {condition} | {policy} | {one_text} | {several_text} | "
              f"{several / one:.2f} |")
print(f"\nTook {time.time() - began:.0f} s.")
