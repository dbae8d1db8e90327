"""How two threads share a fit step where the tracks do not split evenly (issue 62, nineteenth
round): the fit step of a hidden producer's mix with `grafx fit`'s console on 2 threads and on 1,
and forward+backward of consoles of reverbs alone with 4, 5 and 6 tracks on 2 threads. The
per-item convolutions go in groups of two tracks (four transform rows), so 5 tracks make groups
of 2, 2 and 1; how the groups are dealt to the threads shows in the 5-track time against the 4-
and 6-track ones.

    PYTHONPATH=build/python python3 bench/thread_balance.py [SEED=103] [STEPS=12]

About 2 minutes on 2 cores. Build the library before and after a change and run this with each
in turns; docs/benchmarks.md records the runs.
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import producer_eval  # noqa: E402

import grafx  # noqa: E402

REVERB_TRACKS = (4, 5, 6)
SAMPLES = 114000  # 3.8 s at 30 kHz, a fit step's crop


def fit_step_ms(song, steps, threads):
    """Mean ms of `steps` fit steps (after 3 to warm up) of a hidden mix (producer_eval's
    hidden_mix)."""
    names, tracks, mix, _ = song
    console, settings = producer_eval.CONTENDERS["default console, master compressor"](names)
    torch.set_num_threads(threads)
    fitter = producer_eval.make_fitter(console, dict(settings, adapt_threads=False), tracks, mix,
                                       num_steps=4000)
    for _ in range(3):
        fitter.step()
    start = time.perf_counter()
    for _ in range(steps):
        fitter.step()
    return 1000 * (time.perf_counter() - start) / steps


def reverbs_ms(n_tracks):
    """Median ms of 7 forward+backward renders of n_tracks reverbs (no groups), in C++."""
    console = grafx.mixing_console(n_tracks, n_groups=0, chain="r")
    processors = grafx.make_processors(console, 30000)
    plan = grafx.compute_render_plan(console)
    parameters = grafx.create_parameters(console, processors)
    torch.manual_seed(0)
    sources = 0.1 * torch.randn(n_tracks, 2, SAMPLES)
    time_it = grafx._grafx._time_forward_backward
    time_it(plan, processors, parameters, sources, 1)  # warm-up: constants, allocator
    return statistics.median(time_it(plan, processors, parameters, sources, 1)[0]
                             for _ in range(7))


def main():
    try:
        seed = int(sys.argv[1]) if len(sys.argv) > 1 else 103
        steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
        if len(sys.argv) > 3 or not 1 <= steps <= 1000 or seed < 0:
            raise ValueError
    except ValueError:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"{os.cpu_count()} cores, PyTorch {torch.__version__}\n")
    song = producer_eval.hidden_mix(seed)  # rendered once for both thread counts
    two, one = fit_step_ms(song, steps, 2), fit_step_ms(song, steps, 1)
    n_tracks = len(song[0])
    torch.set_num_threads(2)
    reverbs = {n: reverbs_ms(n) for n in REVERB_TRACKS}
    print(f"| measure (2 threads unless said) | ms |\n|---|---:|\n"
          f"| fit step, mix {seed} ({n_tracks} tracks) | {two:.1f} |\n"
          f"| the same on 1 thread | {one:.1f} |")
    for n, ms in reverbs.items():
        print(f"| forward+backward, {n} reverbs | {ms:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(producer_eval.interruptible(main))
