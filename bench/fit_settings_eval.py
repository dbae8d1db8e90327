"""Fit settings on the testdata stems against hidden consoles, side by side, by steps and time.

For each seed, the five testdata stems (30 kHz) are mixed through a hidden console (the paper's
chain with a wet amount on every processor, as `grafx fit` builds it, 2 subgroups, musical
settings drawn with that seed). A fresh console is then fitted to that mix with each setting,
one after the other, and the whole-song loss is evaluated after 25, 50, 100, 200, 300, 500, ...
steps (the evaluations are not timed). Prints the table docs/fitting.md records ("Evaluation").

    PYTHONPATH=build/python python3 bench/fit_settings_eval.py [steps=500] [seeds=1,2] [SETTING ...]

SETTING names rows of SETTINGS (all by default).
"""

import os
import sys
import time

import torch

import grafx

sys.path.insert(0, os.path.dirname(__file__))
from time_to_quality import hidden_mix, stems, stems_console  # noqa: E402

NO_INIT = dict(initialise_starts=False, initialise_gains=False, initialise_eq=False)
SETTINGS = {
    "before: lr 0.01, no initialisation": dict(lr=0.01, **NO_INIT),
    "lr 0.03": dict(lr=0.03, **NO_INIT),
    "lr 0.03, typical starts": dict(lr=0.03, **dict(NO_INIT, initialise_starts=True)),
    "lr 0.03, starts + gains": dict(
        lr=0.03, **dict(NO_INIT, initialise_starts=True, initialise_gains=True)),
    "lr 0.03, starts + EQ": dict(
        lr=0.03, **dict(NO_INIT, initialise_starts=True, initialise_eq=True)),
    "lr 0.03, starts + gains + EQ": dict(
        lr=0.03, initialise_starts=True, initialise_gains=True, initialise_eq=True),
    "lr 0.03, typical starts, cosine to 0.1 lr": dict(
        lr=0.03, final_lr_ratio=0.1, **dict(NO_INIT, initialise_starts=True)),
    "lr 0.05, typical starts, cosine to 0.1 lr": dict(
        lr=0.05, final_lr_ratio=0.1, **dict(NO_INIT, initialise_starts=True)),
    "lr 0.05, starts + gains, cosine to 0.1 lr": dict(
        lr=0.05, final_lr_ratio=0.1, **dict(NO_INIT, initialise_starts=True,
                                             initialise_gains=True)),
    "lr 0.1, starts + gains, cosine to 0.1 lr": dict(
        lr=0.1, final_lr_ratio=0.1, **dict(NO_INIT, initialise_starts=True,
                                            initialise_gains=True)),
    "lr 0.05, starts + gains, cosine to 0.1 lr, first 10 %: gains, EQs, wet amounts": dict(
        lr=0.05, final_lr_ratio=0.1, stages=[(0.1, {"gain_pan", "eq", "dry_wet"})],
        **dict(NO_INIT, initialise_starts=True, initialise_gains=True)),
    "lr 0.03, EQ, reverb and delay at 0.01": dict(
        lr=0.03, learning_rates={"eq": 0.01, "reverb": 0.01, "delay": 0.01}, **NO_INIT),
}
MARKS = (25, 50, 100, 200, 300, 500, 800, 1000, 1500, 2000, 3000)


def mirrored(fitter, mix):
    """Whether the fitted mix is nearer the target's left/right mirror image than the target."""
    loss = grafx.MixLoss(sample_rate=30000)
    with torch.no_grad():
        fitted = fitter.render_mix().unsqueeze(0)
        return loss(fitted, mix.flip(0).unsqueeze(0)).item() < loss(fitted, mix.unsqueeze(0)).item()


def fit(tracks, mix, steps, settings):
    """Loss of the whole song after each mark; seconds per step (without the evaluations);
    whether the fit ended mirrored."""
    fitter = grafx.Fitter(stems_console(dry_wet=True), tracks, mix, 30000, num_steps=steps,
                          **settings)
    losses, seconds = {0: fitter.evaluate()["total"].item()}, 0.0
    for step in range(1, steps + 1):
        start = time.perf_counter()
        fitter.step()
        seconds += time.perf_counter() - start
        if step in MARKS or step == steps:
            losses[step] = fitter.evaluate()["total"].item()
    return losses, seconds / steps, mirrored(fitter, mix)


def main():
    try:
        steps = int(sys.argv[1]) if len(sys.argv) > 1 else 500
        seeds = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 2]
        names = sys.argv[3:] or list(SETTINGS)
        if not 1 <= steps <= 20000 or any(name not in SETTINGS for name in names):
            raise ValueError
    except ValueError:
        print(__doc__, file=sys.stderr)
        print("settings:", *SETTINGS, sep="\n  ", file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count())
    tracks = stems()
    marks = [0] + [m for m in MARKS if m < steps] + [steps]
    rows = []
    for name in names:
        curves, step_seconds, n_mirrored = [], [], 0
        for seed in seeds:
            losses, seconds, flipped = fit(tracks, hidden_mix(tracks, seed, dry_wet=True), steps,
                                           SETTINGS[name])
            curves.append(losses)
            step_seconds.append(seconds)
            n_mirrored += flipped
            print(f"{name}, console {seed}: " + " ".join(f"{m}:{losses[m]:.4f}" for m in marks)
                  + f" ({seconds * 1000:.0f} ms/step{', MIRRORED' if flipped else ''})",
                  file=sys.stderr, flush=True)
        mean = {m: sum(c[m] for c in curves) / len(curves) for m in marks}
        rows.append((name, mean, sum(step_seconds) / len(step_seconds), n_mirrored))
    print(f"Mean whole-song loss over hidden consoles {', '.join(map(str, seeds))} after N steps "
          "(seconds of fitting at the measured step time):\n")
    print("| setting | ms/step | " + " | ".join(str(m) for m in marks) + " | mirrored |")
    print("|---|---:|" + "---:|" * (len(marks) + 1))
    for name, mean, seconds, n_mirrored in rows:
        print(f"| {name} | {seconds * 1000:.0f} | " + " | ".join(f"{mean[m]:.3f}" for m in marks)
              + f" | {n_mirrored} of {len(seeds)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
