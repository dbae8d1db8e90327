"""Curvature against AdamW on the demo, by loss against wall-clock time.

Fits the demo's console (the song of `grafx demo`, its settings: lr 0.03, 2.5 s crops, 0.5 s
warm-up) for the same wall-clock budget with AdamW and with the curvature-preconditioned step
(hessian_preconditioning, `--optimizer adahessian`), one after the other in one run, recording
every step's time and loss. Prints the loss reached at equal times and equal steps, and draws
the loss against time (docs/images/curvature.svg).

    PYTHONPATH=build/python python3 bench/curvature_bench.py [seconds=60] [picture]
"""

import os
import sys
import time

import torch

import grafx


def run(song, budget_seconds, curvature):
    times, losses = [], []
    start = time.perf_counter()

    def callback(progress):
        times.append(time.perf_counter() - start)
        losses.append(progress["record"]["match_loss"])

    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                          lr=0.03, crop_seconds=2.5, skip_seconds=0.5,
                          time_budget_minutes=budget_seconds / 60,
                          hessian_preconditioning=curvature)
    fitter.run(callback)
    return times, losses, fitter.evaluate()["total"].item()


def smooth(values, width=10):
    return [sum(values[max(0, i - width + 1):i + 1]) / len(values[max(0, i - width + 1):i + 1])
            for i in range(len(values))]


def at_time(times, losses, t):
    """The smoothed loss of the last step done by time t."""
    done = [i for i, s in enumerate(times) if s <= t]
    return smooth(losses)[done[-1]] if done else float("nan")


def main():
    if "--help" in sys.argv:
        print(__doc__)
        return 0
    try:
        budget = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    except ValueError:
        budget = float("nan")
    picture = sys.argv[2] if len(sys.argv) > 2 else None
    if not 5 <= budget <= 3600 or len(sys.argv) > 3:
        print("usage: curvature_bench.py [seconds from 5 to 3600] [picture.svg]", file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count())  # as the CLI (Debian's PyTorch starts with one)
    song = grafx.demo_song()
    results = {name: run(song, budget, curvature)
               for name, curvature in (("AdamW", False), ("adahessian", True))}
    print(f"# Curvature against AdamW on the demo ({budget:.0f} s each)\n")
    print("| optimizer | steps | steps/s | loss at 1/4, 1/2, 3/4, all of the time "
          "(mean of 10 steps) | whole-song loss after |")
    print("|---|---:|---:|---|---:|")
    for name, (times, losses, final) in results.items():
        marks = ", ".join(f"{at_time(times, losses, budget * q):.3f}" for q in (0.25, 0.5, 0.75, 1))
        print(f"| {name} | {len(times)} | {len(times) / times[-1]:.2f} | {marks} | "
              f"{final:.4f} |")
    steps = min(len(r[1]) for r in results.values())
    print(f"\nAt equal steps ({steps}): " + ", ".join(
        f"{name} {smooth(r[1])[steps - 1]:.3f}" for name, r in results.items()))
    if picture:
        grafx.write_plot(picture, [(name, times, smooth(losses))
                                   for name, (times, losses, _) in results.items()],
                         title="Demo: mix loss against wall-clock time (10-step mean)",
                         x_label="seconds", y_label="mix loss", overwrite=True)
        print(f"\npicture: {picture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
