"""Fit settings on the testdata stems against hidden consoles, side by side, by wall-clock time.

For each seed, the five testdata stems (30 kHz) are mixed through a hidden console (the paper's
chain, 2 subgroups, musical settings drawn with that seed); a fresh console is then fitted to
that mix for the same wall-clock budget with each setting, one after the other, and its
whole-song loss evaluated. Prints the table docs/fitting.md records ("Settings on the stems").

    PYTHONPATH=build/python python3 bench/fit_settings_eval.py [seconds=45] [seeds=3]
"""

import os
import sys
import time

import torch

import grafx

sys.path.insert(0, os.path.dirname(__file__))
from time_to_quality import hidden_mix, stems, stems_console  # noqa: E402

SETTINGS = {
    "lr 0.01 (grafx fit's default, the paper's)": dict(lr=0.01),
    "lr 0.03": dict(lr=0.03),
    "lr 0.1": dict(lr=0.1),
    "lr 0.03, least-squares gain start": dict(lr=0.03, initialise_gains=True),
}


def main():
    try:
        seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 45.0
        n_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
        if not (5 <= seconds <= 3600 and 1 <= n_seeds <= 20) or len(sys.argv) > 3:
            raise ValueError
    except ValueError:
        print(__doc__, file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count())
    tracks = stems()
    console = stems_console()
    results = {name: [] for name in SETTINGS}
    for seed in range(1, n_seeds + 1):
        mix = hidden_mix(tracks, seed)
        for name, settings in SETTINGS.items():
            start = time.perf_counter()
            fitter = grafx.Fitter(console, tracks, mix, 30000, time_budget_minutes=seconds / 60,
                                  **settings)
            fitter.run()
            loss = fitter.evaluate()["total"].item()
            results[name].append((loss, len(fitter.history), time.perf_counter() - start))
            print(f"seed {seed}, {name}: {loss:.4f} after {len(fitter.history)} steps",
                  file=sys.stderr)
    print(f"| setting ({seconds:.0f} s per fit) | whole-song loss, hidden consoles "
          f"{', '.join(str(s) for s in range(1, n_seeds + 1))} | mean | steps |")
    print("|---|---|---:|---:|")
    for name, rows in results.items():
        losses = ", ".join(f"{r[0]:.3f}" for r in rows)
        mean = sum(r[0] for r in rows) / len(rows)
        steps = sum(r[1] for r in rows) / len(rows)
        print(f"| {name} | {losses} | {mean:.3f} | {steps:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
