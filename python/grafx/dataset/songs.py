"""Songs of a multitrack dataset folder, in the layouts users have (docs/datasets.md).

Each song folder is recognised on its own, so one dataset may mix layouts:

- ``generic``: ``SONG/tracks/*.wav`` and ``SONG/mix.wav``;
- ``medleydb``: ``SONG/SONG_MIX.wav`` and ``SONG/SONG_STEMS/*.wav``;
- ``musdb``: ``SONG/mixture.wav`` and every other ``*.wav`` of the folder as a track.

Audio files are probed from their headers (RIFF/WAVE, RF64 and WAVE_FORMAT_EXTENSIBLE), so that
checking a large dataset reads kilobytes per file, not the audio.
"""

import dataclasses
import os
import stat
import struct

LAYOUTS = ("generic", "medleydb", "musdb")
# Rates grafx fits at (the CLI's --sample-rate range); a file outside it cannot be resampled well.
MIN_RATE, MAX_RATE = 8000, 192000


class DatasetError(Exception):
    """An error of grafx.dataset, with its code of docs/errors.md."""

    def __init__(self, code, message):
        super().__init__(f"[{code}] {message}")
        self.code = code


@dataclasses.dataclass
class AudioInfo:
    path: str
    channels: int = 0
    sample_rate: int = 0
    frames: int = 0
    problem: str = ""  # why the file cannot be used; empty when it can

    @property
    def seconds(self):
        return self.frames / self.sample_rate if self.sample_rate else 0.0


@dataclasses.dataclass
class Problem:
    code: str  # a stable code of docs/errors.md
    message: str
    fatal: bool = True  # the song cannot be fitted


@dataclasses.dataclass
class Song:
    name: str
    folder: str
    layout: str = ""
    mix: AudioInfo = None
    tracks: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)

    @property
    def usable(self):
        return not any(p.fatal for p in self.problems)

    @property
    def seconds(self):
        return self.mix.seconds if self.mix and not self.mix.problem else 0.0

    def to_task(self):
        """What a worker needs to fit the song: plain data, picklable anywhere."""
        # Absolute: workers run in other folders (and on other machines).
        return {"name": self.name, "layout": self.layout, "mix": os.path.abspath(self.mix.path),
                "tracks": [os.path.abspath(t.path) for t in self.tracks],
                "seconds": self.seconds}


def not_a_file(path):
    """Why ``path`` is no regular file (after links), or "" when it is one: a FIFO or a device
    named *.wav would block its reader or never end, so nothing is opened before this."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken link" if os.path.islink(path) else "missing"
    except OSError as error:
        return f"unreadable: {error.strerror}"
    if stat.S_ISREG(mode):
        return ""
    kind = next((name for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                                         (stat.S_ISCHR, "a character device"),
                                         (stat.S_ISBLK, "a block device"),
                                         (stat.S_ISSOCK, "a socket")) if test(mode)),
                "a special file")
    return kind + (" (through a link)" if os.path.islink(path) else "") + ", not a regular file"


def probe_wav(path):
    """Channels, rate and length of a WAV file from its header; ``problem`` says why not."""
    info = AudioInfo(path)
    info.problem = not_a_file(path)
    if info.problem:
        return info
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            header = f.read(12)
            if len(header) < 12 or header[:4] not in (b"RIFF", b"RF64") or header[8:12] != b"WAVE":
                info.problem = "not a WAV file (no RIFF/WAVE header)"
                return info
            data_size, fmt = None, None
            rf64_data_size = None
            while True:
                chunk = f.read(8)
                if len(chunk) < 8:
                    break
                chunk_id, chunk_size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
                if chunk_id == b"ds64":
                    body = f.read(chunk_size)
                    rf64_data_size = struct.unpack("<Q", body[8:16])[0] if len(body) >= 16 else None
                    continue
                if chunk_id == b"fmt ":
                    fmt = f.read(chunk_size)
                elif chunk_id == b"data":
                    data_size = rf64_data_size if chunk_size == 0xFFFFFFFF else chunk_size
                    data_size = min(data_size or 0, size - f.tell())  # a truncated file
                    break
                else:
                    f.seek(chunk_size, os.SEEK_CUR)
                if chunk_size % 2:
                    f.seek(1, os.SEEK_CUR)  # chunks are word-aligned
    except OSError as error:
        info.problem = f"unreadable: {error.strerror or error}"
        return info
    if fmt is None or len(fmt) < 16:
        info.problem = "no format chunk"
        return info
    _, channels, rate, _, block_align, _ = struct.unpack("<HHIIHH", fmt[:16])
    if data_size is None:
        info.problem = "no data chunk"
    elif channels == 0 or block_align == 0 or rate == 0:
        info.problem = "a format chunk with 0 channels, bytes per frame or rate"
    else:
        info.channels, info.sample_rate, info.frames = channels, rate, data_size // block_align
        if info.frames == 0:
            info.problem = "no samples"
        elif channels > 2:
            info.problem = f"{channels} channels; grafx fits mono and stereo files"
        elif not MIN_RATE <= rate <= MAX_RATE:
            info.problem = f"{rate} Hz, outside {MIN_RATE}–{MAX_RATE} Hz"
    return info


def _wavs(folder, exclude=()):
    try:
        names = sorted(n for n in os.listdir(folder)
                       if n.lower().endswith(".wav") and not n.startswith("."))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n not in exclude]


def _detect(folder, name):
    """The song's layout, mix path and track paths; (None, None, []) when none matches."""
    generic_mix = os.path.join(folder, "mix.wav")
    if os.path.isdir(os.path.join(folder, "tracks")):
        return "generic", generic_mix, _wavs(os.path.join(folder, "tracks"))
    medleydb_stems = os.path.join(folder, f"{name}_STEMS")
    if os.path.isdir(medleydb_stems):
        return "medleydb", os.path.join(folder, f"{name}_MIX.wav"), _wavs(medleydb_stems)
    if os.path.lexists(os.path.join(folder, "mixture.wav")):
        return "musdb", os.path.join(folder, "mixture.wav"), _wavs(folder, ("mixture.wav",))
    return None, None, []


def read_song(folder):
    """One song folder: its layout, probed files and every problem."""
    name = os.path.basename(os.path.normpath(folder))
    song = Song(name, folder)
    layout, mix, tracks = _detect(folder, name)
    if layout is None:
        song.problems.append(Problem(
            "grafx.dataset.layout", "no known layout: expected tracks/ and mix.wav, "
            f"{name}_STEMS/ and {name}_MIX.wav, or mixture.wav beside the tracks"))
        return song
    song.layout = layout
    if not os.path.lexists(mix):
        song.problems.append(Problem("grafx.dataset.no_mix",
                                     f"no mix: {os.path.relpath(mix, folder)} is missing"))
    else:  # a link, folder, FIFO or device is said as what it is
        song.mix = probe_wav(mix)
    song.tracks = [probe_wav(t) for t in tracks]
    if not tracks:
        song.problems.append(Problem("grafx.dataset.no_tracks", "no tracks (*.wav)"))
    for info in ([song.mix] if song.mix else []) + song.tracks:
        if info.problem:
            song.problems.append(Problem("grafx.io.unreadable",
                                         f"{os.path.relpath(info.path, folder)}: {info.problem}"))
    readable = [i for i in ([song.mix] if song.mix else []) + song.tracks if not i.problem]
    rates = sorted({i.sample_rate for i in readable})
    if len(rates) > 1:  # the fit resamples every file; worth knowing, not fatal
        song.problems.append(Problem(
            "grafx.dataset.rates", "files at different rates ("
            + ", ".join(f"{r} Hz" for r in rates) + "): they are resampled", fatal=False))
    if song.mix and not song.mix.problem:
        if song.mix.channels != 2:
            song.problems.append(Problem("grafx.dataset.mono_mix",
                                         "the mix is mono; grafx fits a stereo mix"))
        short = [t for t in song.tracks if not t.problem and t.seconds < 0.5 * song.mix.seconds]
        if short:
            song.problems.append(Problem(
                "grafx.dataset.lengths", f"{len(short)} track(s) shorter than half the mix: the "
                "fit uses the shortest length", fatal=False))
    return song


def find_songs(dataset):
    """Every song folder directly under ``dataset``, sorted by name (hidden folders aside)."""
    if not os.path.isdir(dataset):
        raise DatasetError("grafx.dataset.missing", f"{dataset}: " + (
            "is not a folder" if os.path.exists(dataset) else "no such dataset folder"))
    # Hidden folders and a run's folder kept inside the dataset are no songs.
    folders = sorted(e.path for e in os.scandir(dataset)
                     if e.is_dir() and not e.name.startswith(".")
                     and not os.path.exists(os.path.join(e.path, "manifest.jsonl")))
    return [read_song(f) for f in folders]
