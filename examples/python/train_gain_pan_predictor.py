"""A small network learns to set the gains and pans of random consoles, trained through grafx.

    PYTHONPATH=build/python python3 examples/python/train_gain_pan_predictor.py [--steps 200]

Each step draws a batch of random 4-track songs (noise bursts with random envelopes and
spectra) and hidden gain/pan settings, mixes them through a gain/pan console (one source set and
one parameter set per batch item), and asks a network to predict the settings from the tracks and
the mix. The loss is the pruning paper's mix loss between the mix the prediction renders and
the target: gradients flow from the loss through grafx's render into the network.
"""

import argparse
import time

import torch

import grafx

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--seed", type=int, default=0)
arguments = parser.parse_args()
torch.manual_seed(arguments.seed)

SAMPLE_RATE, SECONDS, TRACKS = 16000, 1.0, 4
console = grafx.mixing_console(n_tracks=TRACKS, chain=["gain_pan"])
processors = grafx.make_processors(console, SAMPLE_RATE)
plan = grafx.compute_render_plan(console)
loss_function = grafx.MixLoss(sample_rate=SAMPLE_RATE, fft_sizes=(256, 512, 1024), n_mels=48)


def random_songs(batch):
    length = int(SAMPLE_RATE * SECONDS)
    noise = torch.randn(batch, TRACKS, 1, length)
    # A random one-pole colour and a random envelope per track, the same on both channels.
    colour = torch.rand(batch, TRACKS, 1, 1) * 0.95
    coloured = noise.clone()
    coloured[..., 1:] += colour * noise[..., :-1]
    envelope = torch.sin(torch.linspace(0, 1, length) * torch.pi *
                         torch.randint(1, 8, (batch, TRACKS, 1, 1))).abs()
    return (0.2 * coloured * envelope).expand(-1, -1, 2, -1).contiguous()


def features(tracks, mix):
    """Per track: its level, the mix's level per channel, and its correlation with each."""
    level = tracks[:, :, 0].pow(2).mean(-1).add(1e-8).log()
    mix_level = mix.pow(2).mean(-1).add(1e-8).log()
    correlation = torch.einsum("bkl,bcl->bkc", tracks[:, :, 0], mix) / tracks.shape[-1]
    correlation = correlation / (tracks[:, :, 0].pow(2).mean(-1, keepdim=True).sqrt() *
                                 mix.pow(2).mean(-1).sqrt().unsqueeze(1) + 1e-8)
    return torch.cat([level.unsqueeze(-1), mix_level.unsqueeze(1).expand(-1, TRACKS, -1),
                      correlation], dim=-1)  # B × K × 5


network = torch.nn.Sequential(torch.nn.Linear(5, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.Adam(network.parameters(), lr=3e-3)
start = time.time()
for step in range(1, arguments.steps + 1):
    tracks = random_songs(arguments.batch)
    hidden = {"gain_pan": {"log_gain": torch.empty(arguments.batch, TRACKS, 2).uniform_(-2, 0.5)}}
    with torch.no_grad():
        target = grafx.render(plan, processors, hidden, tracks)[:, 0]  # B × 2 × L
    predicted = {"gain_pan": {"log_gain": network(features(tracks, target))}}  # B × K × 2
    estimate = grafx.render(plan, processors, predicted, tracks)[:, 0]
    loss = loss_function(estimate, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 1 or step % 20 == 0 or step == arguments.steps:
        error_db = (predicted["gain_pan"]["log_gain"] - hidden["gain_pan"]["log_gain"]).abs()
        print(f"step {step:4d}/{arguments.steps}  mix loss {loss.item():.4f}  gain error "
              f"{20 / 2.302585 * error_db.mean().item():5.2f} dB  "
              f"{step / (time.time() - start):.1f} steps/s", flush=True)
