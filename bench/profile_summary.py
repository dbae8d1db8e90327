"""Summarises a Chrome trace of LibTorch's profiler (bench/device_profile, or torch.profiler's
export_chrome_trace) of N repeated steps: per step, the work launched on the device (kernels,
copies, fills) and the device's busy time against the wall time, the operations that take the
most device time (each kernel charged to the innermost operator that launched it), and every
host synchronisation (waits on the device and copies to the host) with the operator it came
from.

    python3 bench/profile_summary.py TRACE.json --steps 3 [--top 15]
"""

import argparse
import collections
import json

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
OPERATOR_CATEGORIES = {"cpu_op", "operator", "user_annotation", ""}  # "": legacy traces
WAITS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
         "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"}


def load(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


class Operators:
    """The CPU operators of each thread, to find the innermost one around a moment."""

    def __init__(self, events):
        self.by_thread = collections.defaultdict(list)
        for e in events:
            if e.get("cat", "").lower() in OPERATOR_CATEGORIES:
                self.by_thread[e["tid"]].append(e)
        for ops in self.by_thread.values():
            ops.sort(key=lambda e: (e["ts"], -e["dur"]))

    def around_all(self, moments):
        """For each (thread, time), the operators around it, outermost first: one sweep per
        thread over its operators in time order, with the open ones on a stack."""
        found = [[] for _ in moments]
        order = sorted(range(len(moments)), key=lambda i: (moments[i][0], moments[i][1]))
        by_thread = collections.defaultdict(list)
        for i in order:
            by_thread[moments[i][0]].append(i)
        for tid, queries in by_thread.items():
            ops, stack, k = self.by_thread.get(tid, []), [], 0
            for i in queries:
                ts = moments[i][1]
                while k < len(ops) and ops[k]["ts"] <= ts:
                    while stack and stack[-1]["ts"] + stack[-1]["dur"] < ops[k]["ts"]:
                        stack.pop()
                    stack.append(ops[k])
                    k += 1
                found[i] = [e for e in stack if e["ts"] + e["dur"] >= ts]
        return found


def site(chain):
    """An operator and the one that called it, as the place a kernel or a wait came from."""
    names = [e["name"] for e in chain]
    if not names:
        return "(no operator)"
    inner = names[-1]
    # Generic operators say little alone: name the nearest caller that is not one of them.
    generic = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::item", "aten::_local_scalar_dense",
               "aten::is_nonzero", "aten::empty", "aten::empty_strided", "aten::fill_",
               "aten::zero_", "aten::zeros", "aten::contiguous", "aten::clone"}
    for name in reversed(names[:-1]):
        if name not in generic:
            return inner if name == inner else f"{inner} < {name}"
    return inner


def summarise(path, steps, top):
    events = load(path)
    operators = Operators(events)
    device = [e for e in events if e.get("cat", "").lower() in DEVICE_CATEGORIES]
    runtime = {}
    for e in events:
        if e.get("cat", "").lower() in {"cuda_runtime", "cuda_driver"}:
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                runtime[correlation] = e
    cpu = [e for e in events if e.get("cat", "").lower() in OPERATOR_CATEGORIES]
    start = min(e["ts"] for e in cpu + device)
    stop = max(e["ts"] + e["dur"] for e in cpu + device)
    wall = (stop - start) / steps
    busy = union_length([(e["ts"], e["ts"] + e["dur"]) for e in device]) / steps

    launches = [runtime.get(e.get("args", {}).get("correlation")) for e in device]
    chains = operators.around_all([(l["tid"], l["ts"]) if l else (None, 0) for l in launches])
    by_operator = collections.defaultdict(lambda: [0.0, 0])
    for e, chain in zip(device, chains):
        entry = by_operator[site(chain)]
        entry[0] += e["dur"] / steps
        entry[1] += 1 / steps

    copies = {e.get("args", {}).get("correlation"): e for e in device}
    wait_events = []
    for e in events:
        if e.get("cat", "").lower() not in {"cuda_runtime", "cuda_driver"}:
            continue
        copy = copies.get(e.get("args", {}).get("correlation"))
        if e["name"] in WAITS or (e["name"].startswith("cudaMemcpy") and copy is not None and
                                  "DtoH" in copy["name"]):
            wait_events.append(e)
    waits = collections.defaultdict(lambda: [0.0, 0])
    for e, chain in zip(wait_events,
                        operators.around_all([(e["tid"], e["ts"]) for e in wait_events])):
        entry = waits[site(chain)]
        entry[0] += e["dur"] / steps
        entry[1] += 1 / steps

    launches = sum(1 for e in events if e.get("cat", "").lower() in {"cuda_runtime", "cuda_driver"}
                   and e["name"].startswith(("cudaLaunch", "cuLaunch", "cudaGraphLaunch",
                                             "cudaMemcpy", "cudaMemset")))
    print(f"{path}: {steps} steps")
    print(f"per step: wall {wall / 1e3:.2f} ms, device busy {busy / 1e3:.2f} ms "
          f"({100 * busy / wall:.0f} %), {len(device) / steps:.0f} kernels and copies "
          f"from {launches / steps:.0f} launches, "
          f"{len(cpu) / steps:.0f} operators, "
          f"{sum(n for _, n in waits.values()):.0f} host synchronisations")
    print(f"\n| operator (the top {top} by device time) | device ms per step | kernels per step |")
    print("|---|---:|---:|")
    ranked = sorted(by_operator.items(), key=lambda kv: -kv[1][0])
    for name, (us, n) in ranked[:top]:
        print(f"| {name} | {us / 1e3:.3f} | {n:.0f} |")
    rest = ranked[top:]
    if rest:
        print(f"| ({len(rest)} others) | {sum(v[0] for _, v in rest) / 1e3:.3f} | "
              f"{sum(v[1] for _, v in rest):.0f} |")
    print("\n| host synchronisation, where | per step | ms waited per step |")
    print("|---|---:|---:|")
    for name, (us, n) in sorted(waits.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {n:.1f} | {us / 1e3:.3f} |")
    if not waits:
        print("| (none) | 0 | 0 |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    summarise(args.trace, args.steps, args.top)


if __name__ == "__main__":
    main()
