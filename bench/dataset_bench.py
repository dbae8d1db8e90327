"""Songs per hour of `python3 -m grafx.dataset run` on this machine: 1 worker × 2 threads against
2 workers × 1 thread (a LocalCluster), Dask's overhead per task, and a projection of the pruning
paper's 1129 songs onto N machines like this one (docs/benchmarks.md#datasets).

    PYTHONPATH=build/python GRAFX_BIN=build/bin/grafx /usr/bin/python3 bench/dataset_bench.py \
        [--songs 4] [--steps 150] [--seconds 8]
"""

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

from grafx.dataset.run import run
from grafx.dataset.synthetic import make_dataset

PAPER_SONGS = 1129
PAPER_STEPS = 12000 + 12 * 500  # the fit, then 12 pruning rounds of 500 fine-tuning steps


def trivial(x):
    return x


def dask_overhead(workers, tasks=400):
    """Seconds per task of Dask alone: tasks that do nothing, on a LocalCluster."""
    import distributed
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        client.gather(client.map(trivial, range(20), pure=False))  # warm
        start = time.perf_counter()
        client.gather(client.map(trivial, range(tasks), pure=False))
        return (time.perf_counter() - start) / tasks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--songs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--sample-rate", type=int, default=30000)
    args = parser.parse_args()
    limits = (("--songs", args.songs, 1, 100), ("--steps", args.steps, 1, 100000),
              ("--seconds", args.seconds, 4.0, 600), ("--sample-rate", args.sample_rate, 8000,
                                                     192000))
    for name, value, low, high in limits:
        if not low <= value <= high:
            parser.error(f"{name} {value}: expected {low} to {high}")
    fit = ["--steps", str(args.steps), "--sample-rate", str(args.sample_rate), "--crop", "3.8",
           "--checkpoint-every", "100"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "data")
        make_dataset(data, songs=args.songs, seconds=args.seconds, sample_rate=args.sample_rate)
        for workers, threads in ((1, 2), (2, 1)):
            output = os.path.join(folder, f"run-{workers}x{threads}")
            start = time.perf_counter()
            records = run(data, output, fit, workers=workers, threads=threads,
                          log=lambda *a: None, show_progress=False)
            wall = time.perf_counter() - start
            assert all(r["state"] == "done" for r in records), records
            per_song = statistics.mean(r["seconds"] for r in records)
            rows.append((workers, threads, wall, per_song, args.songs * 3600 / wall))
    overhead = dask_overhead(2)
    print(f"{args.songs} synthetic songs of {args.seconds:g} s (4 tracks), {args.steps} steps at "
          f"{args.sample_rate} Hz, 3.8 s crops; {os.cpu_count()} cores")
    print(f"{'workers x threads':>18} {'wall s':>8} {'s per song':>11} {'songs/hour':>11}")
    for workers, threads, wall, per_song, per_hour in rows:
        print(f"{f'{workers} x {threads}':>18} {wall:8.1f} {per_song:11.1f} {per_hour:11.1f}")
    best = max(rows, key=lambda r: r[4])
    print(f"ratio 2x1 / 1x2 (songs per hour): {rows[1][4] / rows[0][4]:.2f}")
    print(f"Dask overhead: {overhead * 1000:.2f} ms per task (2 local workers, empty tasks)")
    # The projection: songs in waves of (machines × workers), each song taking the measured time
    # per step of its configuration for the paper's steps.
    workers, threads, _, per_song, _ = best
    song_seconds = PAPER_STEPS * per_song / args.steps
    print(f"projection of the paper's {PAPER_SONGS} songs ({PAPER_STEPS} fit and fine-tuning "
          f"steps each, pruning trials not counted; {song_seconds / 3600:.2f} h per song at "
          f"{workers} x {threads} per machine):")
    print(f"{'machines':>9} {'days':>8}")
    for machines in (1, 10, 50, 100, 565):
        waves = math.ceil(PAPER_SONGS / (machines * workers))
        seconds = waves * song_seconds + PAPER_SONGS * overhead
        print(f"{machines:9d} {seconds / 86400:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
