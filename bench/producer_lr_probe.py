"""Learning rates per parameter group on hidden producers' mixes (issue 62, thirteenth round).

    PYTHONPATH=build/python python3 bench/producer_lr_probe.py STEPS SEEDS [VARIANT ...]

Fits `grafx fit`'s console (bench/producer_eval.py's "default console, master compressor") to
each seed's hidden mix for a fixed number of steps, the schedule spread over them, once with
every group at the fit's lr (0.05) and once per variant with one group at 0.1. A fixed number
of steps makes each fit deterministic, so the variants differ only by their learning rates.
Prints each whole-song loss, then per variant the mean loss, the mean ratio to the baseline and
on how many mixes it is lower. Example (14 minutes on 2 cores):

    ... producer_lr_probe.py 250 201,204,206,208
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import producer_eval  # noqa: E402

VARIANTS = {  # FitOptions::learning_rates, keyed as grafx fit --lr-group
    "gain_pan": {"gain_pan": 0.1},
    "dry_wet": {"dry_wet": 0.1},
    "parametric_eq": {"parametric_eq": 0.1},
    "reverb and delay": {"reverb": 0.1, "delay": 0.1},
    "dynamics": {"compressor": 0.1, "noise_gate": 0.1, "compressor_ballistics": 0.1},
}


def main():
    try:
        steps, seeds = int(sys.argv[1]), producer_eval.parse_seeds(sys.argv[2])
        variants = sys.argv[3:] or list(VARIANTS)
        if steps < 1 or any(v not in VARIANTS for v in variants):
            raise ValueError
    except (ValueError, IndexError):
        print(__doc__, "variants:", *VARIANTS, sep="\n  ", file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count())
    losses = {}  # (seed, variant or None) -> whole-song loss
    for seed in seeds:
        track_names, tracks, mix, producer = producer_eval.hidden_mix(seed)
        for variant in [None] + variants:
            console, settings = producer_eval.default_console(track_names)
            if variant:
                settings = dict(settings, learning_rates=VARIANTS[variant])
            start = time.perf_counter()
            fitter = producer_eval.make_fitter(console, settings, tracks, mix, num_steps=steps)
            fitter.run()
            losses[seed, variant] = fitter.evaluate()["total"].item()
            print(f"seed {seed} ({producer.family}): {variant or 'every group at lr'}: "
                  f"{losses[seed, variant]:.4f} ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"\n| group at lr 0.1 ({steps} steps) | mean loss | mean ratio | better on |")
    print("|---|---:|---:|---:|")
    for variant in [None] + variants:
        ratios = [losses[s, variant] / losses[s, None] for s in seeds]
        mean_loss = sum(losses[s, variant] for s in seeds) / len(seeds)
        print(f"| {variant or 'none'} | {mean_loss:.4f} | {sum(ratios) / len(ratios):.3f} | "
              f"{sum(r < 1 for r in ratios)} of {len(seeds)} |")
    return 0


if __name__ == "__main__":
    sys.exit(producer_eval.interruptible(main))
