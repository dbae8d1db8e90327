"""GRAFX (Python) on a GPU, beside build/bin/device_bench on the same machine.

Renders the paper's console (in -> e c n s g d r per track -> 3 subgroups -> e c n s g d r -> out)
with GRAFX's own processors on 8 stereo tracks of 3.8 s at 30 kHz, as grafx's device_bench does,
and times on the given device: the forward pass, forward+backward (loss: mean square of the
output), and a fitting step as the pruning paper's pipeline takes it (the same console with a
dry/wet on every processor, the multi-resolution STFT loss on L, R, M and S: FFTs 512, 1024 and
4096 with hops of a quarter, 96 mel bands, A-weighting, log-magnitude L1 plus spectral
convergence, on the last 2.8 s; AdamW at lr 0.01). Medians of --iters runs after two warm-ups,
each ended by torch.cuda.synchronize().

GRAFX is not part of grafx: assemble its package and those it needs (sh-lee97/grafx's src/grafx,
yoyololicon/torchcomp, yoyololicon/torchlpc; einops and torch_geometric from PyPI) in a folder
and put it on PYTHONPATH:

    PYTHONPATH=SITE python3 bench/grafx_python_device.py [--device cuda] [--iters 10]
"""

import argparse
import os
import statistics
import time

import torch
import torchaudio
from grafx.data import GRAFX, NodeConfigs, convert_to_tensor
from grafx.processors import (ApproxCompressor, ApproxNoiseGate, DryWet, MultitapDelay,
                              SideGainImager, STFTMaskedNoiseReverb, StereoGain,
                              ZeroPhaseFIREqualizer)
from grafx.render import prepare_render, render_grafx, reorder_for_fast_render
from grafx.utils import create_empty_parameters

CHAIN = ["eq", "compressor", "noisegate", "imager", "gain", "delay", "reverb"]
RATE, LENGTH, SKIP = 30000, 114000, 30000


def console(tracks=8, groups=3):
    graph = GRAFX(config=NodeConfigs(CHAIN))
    out = graph.add("out")

    def chain(source):
        previous = source
        for node_type in CHAIN:
            node = graph.add(node_type)
            graph.connect(previous, node)
            previous = node
        return previous

    subgroups = [graph.add("mix") for _ in range(groups)]
    for k in range(tracks):
        graph.connect(chain(graph.add("in")), subgroups[k % groups])
    for subgroup in subgroups:
        graph.connect(chain(subgroup), out)
    return graph


def to_device(value, device):
    """GRAFX's render data holds index tensors on the CPU: move them where the signals are."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [to_device(v, device) for v in value]
    if hasattr(value, "__dict__"):
        for name, v in vars(value).items():
            setattr(value, name, to_device(v, device))
    return value


def processors(dry_wet, device):
    made = {"eq": ZeroPhaseFIREqualizer(), "compressor": ApproxCompressor(flashfftconv=False),
            "noisegate": ApproxNoiseGate(flashfftconv=False), "imager": SideGainImager(),
            "gain": StereoGain(), "delay": MultitapDelay(flashfftconv=False),
            "reverb": STFTMaskedNoiseReverb(flashfftconv=False)}
    if dry_wet:
        made = {k: DryWet(p, external_param=False) for k, p in made.items()}
    return torch.nn.ModuleDict(made).to(device)


class MixLoss:
    """The pruning paper's loss: MRSTFT on L, R, M, S (log-mel L1 + spectral convergence)."""

    def __init__(self, device):
        self.scales = []
        for n_fft in (512, 1024, 4096):
            hz = torch.linspace(0, RATE / 2, n_fft // 2 + 1)
            f2 = hz ** 2  # A-weighting's magnitude per bin
            a = (12194 ** 2 * f2 ** 2) / ((f2 + 20.6 ** 2) * torch.sqrt(
                (f2 + 107.7 ** 2) * (f2 + 737.9 ** 2)) * (f2 + 12194 ** 2))
            mel = torchaudio.functional.melscale_fbanks(n_fft // 2 + 1, 0, RATE / 2, 96, RATE)
            self.scales.append((n_fft, torch.hann_window(n_fft, device=device),
                                (a.unsqueeze(1) * mel).to(device)))

    @staticmethod
    def four(x):
        left, right = x[0], x[1]
        return torch.stack([left, right, left + right, left - right])

    def __call__(self, estimate, target):
        x, y = self.four(estimate[..., SKIP:]), self.four(target[..., SKIP:])
        total = 0
        for n_fft, window, bands in self.scales:
            def spectrum(s):
                z = torch.stft(s, n_fft, n_fft // 4, window=window, return_complex=True)
                return (z.abs().transpose(1, 2) @ bands).clamp_min(1e-4)
            sx, sy = spectrum(x), spectrum(y)
            convergence = torch.linalg.norm(sy - sx, dim=(1, 2)) / torch.linalg.norm(sy, dim=(1, 2))
            total = total + (convergence + (sy.log() - sx.log()).abs().mean((1, 2))).mean()
        return total / len(self.scales)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--profile", metavar="FOLDER",
                        help="also write a Chrome trace of 3 runs of each into FOLDER "
                             "(bench/profile_summary.py summarises them)")
    args = parser.parse_args()
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.manual_seed(0)
    graph = console()
    render_data = to_device(prepare_render(reorder_for_fast_render(convert_to_tensor(graph),
                                                                   method="beam")), device)
    tracks = (torch.randn(8, 2, LENGTH) * 0.1).to(device)

    def timed(work):
        for _ in range(2):
            work()
        sync()
        times = []
        for _ in range(args.iters):
            start = time.perf_counter()
            work()
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    plain = processors(False, device)
    parameters = create_empty_parameters(plain, graph).to(device)

    def forward():
        with torch.no_grad():
            render_grafx(plain, tracks, parameters, render_data, parameters_grad=False)

    def forward_backward():
        parameters.zero_grad(set_to_none=True)
        output, _, _ = render_grafx(plain, tracks, parameters, render_data)
        output.pow(2).mean().backward()

    wet = processors(True, device)
    fitted = create_empty_parameters(wet, graph).to(device)
    optimizer = torch.optim.AdamW(fitted.parameters(), lr=0.01, weight_decay=0)
    loss = MixLoss(device)
    target = tracks.sum(0) * 0.5

    def fit_step():
        optimizer.zero_grad(set_to_none=True)
        output, _, _ = render_grafx(wet, tracks, fitted, render_data)
        loss(output[0], target).backward()
        optimizer.step()

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"GRAFX (Python) on {name}, torch {torch.__version__}: 8 tracks, 3 groups, "
          f"{LENGTH} samples at {RATE} Hz, medians of {args.iters}")
    print(f"| forward (ms) | forward+backward (ms) | fit step (ms) |\n|---:|---:|---:|\n"
          f"| {timed(forward):.1f} | {timed(forward_backward):.1f} | {timed(fit_step):.1f} |")
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        for name, work in [("fit_step", fit_step), ("forward_backward", forward_backward)]:
            sync()
            with torch.profiler.profile(activities=activities) as profiler:
                for _ in range(3):
                    work()
                sync()
            profiler.export_chrome_trace(os.path.join(args.profile, name + ".json"))


if __name__ == "__main__":
    main()
