"""Time to quality: the fit's loss against wall-clock time, to compare builds.

`run` fits for a wall-clock budget and writes every step's time and loss as CSV, for two jobs:
the demo (its song, console and settings: lr 0.03, 2.5 s crops, 0.5 s warm-up) and the five
testdata stems (30 kHz, 3.8 s crops, lr 0.03) against their mix through a hidden console of the
paper's chain with musical settings (seed 1). Run it with each build's module on PYTHONPATH;
`plot` draws the runs' loss against time (10-step mean) into one picture per job.

    PYTHONPATH=build/python python3 bench/time_to_quality.py run LABEL OUT_PREFIX [seconds=60]
    PYTHONPATH=build/python python3 bench/time_to_quality.py plot PICTURE_PREFIX RUN_PREFIX...
"""

import csv
import os
import sys
import time

import torch

import grafx

STEMS = ("bass", "drums", "guitar", "guitar2", "singing")


def stems():
    """The five testdata stems, dual mono at 30 kHz, cut to the shortest: K×2×L."""
    folder = os.environ.get("GRAFX_TESTDATA",
                            os.path.join(os.path.dirname(__file__), "..", "testdata"))
    tracks = []
    for name in STEMS:
        samples, rate = grafx.load_audio(os.path.join(folder, name + ".flac"))
        tracks.append(grafx.resample(samples, rate, 30000)[:1].expand(2, -1))
    length = min(t.shape[1] for t in tracks)
    return torch.stack([t[:, :length] for t in tracks]).contiguous()


def stems_console(dry_wet=False):
    """The console fitted to the stems (and the hidden ones): the paper's chain, 2 subgroups;
    with ``dry_wet`` a wet amount on every processor, as ``grafx fit`` builds it."""
    return grafx.mixing_console(n_tracks=len(STEMS), n_groups=2, track_names=list(STEMS),
                                dry_wet=dry_wet)


def hidden_mix(tracks, seed, dry_wet=False):
    """The stems mixed through a hidden console with musical settings drawn with `seed`."""
    console = stems_console(dry_wet)
    processors = grafx.make_processors(console, 30000)
    hidden = grafx.musical_parameters(console, processors, seed=seed)
    with torch.no_grad():
        return grafx.render(grafx.compute_render_plan(console), processors, hidden, tracks)[0]


def stems_job():
    tracks = stems()
    return (stems_console(), tracks, hidden_mix(tracks, 1), 30000,
            dict(lr=0.03, crop_seconds=3.8, skip_seconds=1.0))


def demo_job():
    song = grafx.demo_song()
    return (song["console"], song["tracks"], song["mix"], song["sample_rate"],
            dict(lr=0.03, crop_seconds=2.5, skip_seconds=0.5))


def run(label, prefix, seconds):
    torch.set_num_threads(os.cpu_count())  # as the CLI (Debian's PyTorch starts with one)
    for job, make in (("demo", demo_job), ("stems", stems_job)):
        console, tracks, mix, rate, settings = make()
        times, losses = [], []
        start = time.perf_counter()

        def callback(progress):
            times.append(time.perf_counter() - start)
            losses.append(progress["record"]["match_loss"])

        fitter = grafx.Fitter(console, tracks, mix, rate, time_budget_minutes=seconds / 60,
                              **settings)
        fitter.run(callback)
        path = f"{prefix}-{job}.csv"
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["label", "seconds", "match_loss"])
            for t, loss in zip(times, losses):
                writer.writerow([label, f"{t:.4f}", f"{loss:.6f}"])
        print(f"{label} {job}: {len(times)} steps in {times[-1]:.1f} s "
              f"({len(times) / times[-1]:.2f} steps/s), last 10 steps' loss "
              f"{sum(losses[-10:]) / len(losses[-10:]):.4f} -> {path}")


def smooth(values, width=10):
    return [sum(values[max(0, i - width + 1):i + 1]) / len(values[max(0, i - width + 1):i + 1])
            for i in range(len(values))]


def plot(picture_prefix, run_prefixes):
    for job, title in (("demo", "Demo"), ("stems", "Testdata stems, hidden console")):
        series = []
        for prefix in run_prefixes:
            with open(f"{prefix}-{job}.csv") as f:
                rows = list(csv.DictReader(f))
            series.append((rows[0]["label"], [float(r["seconds"]) for r in rows],
                           smooth([float(r["match_loss"]) for r in rows])))
        path = f"{picture_prefix}-{job}.svg"
        grafx.write_plot(path, series, title=f"{title}: mix loss against wall-clock time "
                         "(10-step mean)", x_label="seconds", y_label="mix loss", overwrite=True)
        print(path)


def main():
    args = sys.argv[1:]
    try:
        if args and args[0] == "run" and len(args) in (3, 4):
            seconds = float(args[3]) if len(args) == 4 else 60.0
            if not 5 <= seconds <= 3600:
                raise ValueError
            run(args[1], args[2], seconds)
            return 0
        if args and args[0] == "plot" and len(args) >= 3:
            plot(args[1], args[2:])
            return 0
    except ValueError:
        pass
    print(__doc__, file=sys.stderr if args != ["--help"] else sys.stdout)
    return 0 if args == ["--help"] else 2


if __name__ == "__main__":
    sys.exit(main())
