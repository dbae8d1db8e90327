"""Time to quality on hidden producers' mixes (issue 62, item 4): does a fit with a wall-clock
budget reach the loss of a long fit with a schedule of its own length?

For each seed, the contender's console (bench/producer_eval.py's CONTENDERS; default: grafx
fit's console) is fitted to the seed's hidden mix twice, one after the other: once with
`time_budget_minutes` (the learning-rate schedule spread over the budget) and once with
`num_steps` (the schedule spread over the steps). Both are scored by the whole-song loss.

    PYTHONPATH=build/python python3 bench/producer_time_to_quality.py SEEDS [minutes=3]
        [steps=4000] [CONTENDER]
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from producer_eval import (CONTENDERS, hidden_mix, interruptible, make_fitter,  # noqa: E402
                           parse_seeds, uses_stems)

DEFAULT = "default console, master compressor"  # grafx fit's console


def timed_fit(console, settings, tracks, mix, **length):
    """(whole-song loss, steps, seconds) of one fit."""
    start = time.perf_counter()
    fitter = make_fitter(console, settings, tracks, mix, **length)
    fitter.run()
    seconds = time.perf_counter() - start
    return fitter.evaluate()["total"].item(), len(fitter.history), seconds


def main():
    try:
        seeds = parse_seeds(sys.argv[1])
        minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
        steps = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
        name = sys.argv[4] if len(sys.argv) > 4 else DEFAULT
        if not 0.1 <= minutes <= 60 or not 1 <= steps <= 100000 or name not in CONTENDERS:
            raise ValueError
    except (ValueError, IndexError):
        print(__doc__, file=sys.stdout if sys.argv[1:] == ["--help"] else sys.stderr)
        return 0 if sys.argv[1:] == ["--help"] else 2
    torch.set_num_threads(os.cpu_count())  # as the CLI (Debian's PyTorch starts with one)
    rows = []
    for seed in seeds:
        track_names, tracks, mix, p = hidden_mix(seed)
        song = "stems" if uses_stems(seed) else "synthetic"
        contender = CONTENDERS[name](track_names)  # (console, settings); a fit copies both
        budget = timed_fit(*contender, tracks, mix, time_budget_minutes=minutes)
        print(f"seed {seed}: {minutes:g} minutes: {budget[0]:.4f} after {budget[1]} steps",
              file=sys.stderr, flush=True)
        long = timed_fit(*contender, tracks, mix, num_steps=steps)
        print(f"seed {seed}: {steps} steps: {long[0]:.4f} in {long[2]:.0f} s", file=sys.stderr,
              flush=True)
        rows.append((seed, p.family, song, budget, long))
    print(f"\n{name}: a {minutes:g}-minute budget against {steps} steps\n")
    print(f"| seed | family | song | {minutes:g} min: loss (steps) | {steps} steps: loss "
          "(seconds) | ratio |")
    print("|---:|---|---|---:|---:|---:|")
    for seed, family, song, budget, long in rows:
        print(f"| {seed} | {family} | {song} | {budget[0]:.4f} ({budget[1]}) | {long[0]:.4f} "
              f"({long[2]:.0f}) | {budget[0] / long[0]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(interruptible(main))
