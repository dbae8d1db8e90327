"""Datasets at scale: fit (and prune) every song of a multitrack dataset, on this machine or a
Dask cluster, and report the pruning paper's tables (docs/datasets.md).

    python3 -m grafx.dataset check DIR
    python3 -m grafx.dataset run DIR -o RUN [--workers N] [--prune] [grafx fit settings]
"""

from .run import RunFolder, run
from .songs import LAYOUTS, DatasetError, Song, find_songs, probe_wav, read_song

__all__ = ["DatasetError", "LAYOUTS", "RunFolder", "Song", "find_songs", "probe_wav", "read_song",
           "run"]
