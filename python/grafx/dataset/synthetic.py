"""Synthetic datasets: the demo's songs (synthesised tracks mixed by hidden consoles), written in
the three layouts, for trying a run and for tests."""

import os
import struct

import torch

from ..fitting import demo_song
from .song_task import write_atomically
from .songs import LAYOUTS


def write_wav(path, samples, sample_rate):
    """A 32-bit float WAV of C×L samples, written atomically."""
    samples = samples.detach().to(torch.float32).contiguous()
    channels, frames = samples.shape
    data = samples.t().contiguous().numpy().tobytes()
    header = (b"RIFF" + struct.pack("<I", 4 + 26 + 8 + len(data)) + b"WAVE"
              + b"fmt " + struct.pack("<IHHIIHHH", 18, 3, channels, sample_rate,
                                      sample_rate * channels * 4, channels * 4, 32, 0)
              + b"data" + struct.pack("<I", len(data)))
    write_atomically(path, header + data)


def write_song(folder, name, layout, tracks, track_names, mix, sample_rate):
    """One song in ``layout`` (see songs.py): its tracks and its mix."""
    song = os.path.join(folder, name)
    track_folder = {"generic": os.path.join(song, "tracks"),
                    "medleydb": os.path.join(song, f"{name}_STEMS"), "musdb": song}[layout]
    mix_path = {"generic": os.path.join(song, "mix.wav"),
                "medleydb": os.path.join(song, f"{name}_MIX.wav"),
                "musdb": os.path.join(song, "mixture.wav")}[layout]
    os.makedirs(track_folder, exist_ok=True)
    for track, track_name in zip(tracks, track_names):
        write_wav(os.path.join(track_folder, f"{track_name}.wav"), track, sample_rate)
    write_wav(mix_path, mix, sample_rate)
    return song


def make_dataset(folder, songs=6, seconds=4.0, sample_rate=24000, seed=1):
    """``songs`` demo songs (seeds seed, seed+1, ...) in the layouts in turn; returns their
    folders."""
    os.makedirs(folder, exist_ok=True)
    made = []
    for i in range(songs):
        song = demo_song(sample_rate, seconds, seed + i)
        layout = LAYOUTS[i % len(LAYOUTS)]
        made.append(write_song(folder, f"song{i + 1:02d}", layout, song["tracks"],
                               song["track_names"], song["mix"], sample_rate))
    return made
