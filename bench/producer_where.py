"""Where the loss lives on hidden producers' mixes (issue 62): what `grafx fit`'s console leaves.

    PYTHONPATH=build/python python3 bench/producer_where.py SEEDS [seconds=45]

Fits `grafx fit`'s console (bench/producer_eval.py's "default console, master compressor") to
each seed's hidden mix for `seconds`, writes the fitted and the target mix to a temporary folder
and scores them with `grafx loss --breakdown --json` (GRAFX_BIN, or build/bin/grafx): the
whole-song loss cut into exact parts by octave band, each with its parts of L, R, mid and side
(docs/loss.md). Prints a line per fit, then a table of each band's share of the loss per mix
and on the mean, and each mix's L, R, mid and side terms. Example (14 minutes on 2 cores):

    ... producer_where.py 201-216 45
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

import grafx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import producer_eval  # noqa: E402

GRAFX = os.environ.get("GRAFX_BIN") or os.path.join(os.path.dirname(__file__), "..", "build",
                                                    "bin", "grafx")


def breakdown(fitted, target, folder):
    """`grafx loss --breakdown --json` of two C×L mixes at the evaluation's rate."""
    paths = [os.path.join(folder, name) for name in ("fitted.wav", "target.wav")]
    for path, mix in zip(paths, (fitted, target)):
        grafx.save_audio(path, mix, producer_eval.RATE, True)
    done = subprocess.run([GRAFX, "loss", *paths, "--json", "--breakdown"], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def main():
    try:
        seeds = producer_eval.parse_seeds(sys.argv[1])
        length = producer_eval.parse_length(sys.argv[2] if len(sys.argv) > 2 else "45")
        if "num_steps" in length or len(sys.argv) > 3:  # seconds only, as the docstring says
            raise ValueError
    except (ValueError, IndexError):
        print(__doc__, file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count())
    scores, families = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        for seed in seeds:
            names, tracks, mix, producer = producer_eval.hidden_mix(seed)
            console, settings = producer_eval.default_console(names)
            fitter = producer_eval.make_fitter(console, settings, tracks, mix, **length)
            fitter.run()
            scores[seed] = breakdown(fitter.render_mix().detach(), mix, folder)
            families[seed] = producer.family
            print(f"seed {seed} ({producer.family}): {scores[seed]['loss']:.4f} after "
                  f"{len(fitter.history)} steps", file=sys.stderr, flush=True)
    bands = [part["part"] for part in scores[seeds[0]]["by_band"]]
    print(f"\nShare of the whole-song loss per octave band after {60 * length['time_budget_minutes']:g} s of fitting:\n")
    print("| band | mean | " + " | ".join(f"{s} {families[s]}" for s in seeds) + " |")
    print("|---|---:|" + "---:|" * len(seeds))
    for i, band in enumerate(bands):
        shares = [scores[s]["by_band"][i]["loss"] / scores[s]["loss"] for s in seeds]
        print(f"| {band} | {statistics.mean(shares):.3f} | "
              + " | ".join(f"{x:.2f}" for x in shares) + " |")
    print("\nEach mix's terms (the loss weighs L/R, mid and side 0.5, 0.25 and 0.25):\n")
    print("| term | mean | " + " | ".join(str(s) for s in seeds) + " |")
    print("|---|---:|" + "---:|" * len(seeds))
    for term, key in (("L/R", "left_right"), ("mid", "mid"), ("side", "side")):
        values = [scores[s][key] for s in seeds]
        print(f"| {term} | {statistics.mean(values):.3f} | "
              + " | ".join(f"{x:.3f}" for x in values) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(producer_eval.interruptible(main))
