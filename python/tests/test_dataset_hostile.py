"""Hostile use of python3 -m grafx.dataset (issue 59): a run folder among the songs, settings
that are no fitting settings, relative paths handed to workers, TLS schedulers and unreachable
ones, FIFOs and devices named *.wav. In this process and without a cluster: each test takes
well under a second or two (the runs on clusters are in test_dataset.py)."""

import io
import os
import re
import shutil
import signal
import stat
import threading

import pytest

from conftest import SOURCE_DIR
from grafx.dataset import DatasetError, find_songs, read_song
from grafx.dataset.__main__ import check, main
from grafx.dataset.run import RunFolder, check_settings
from grafx.dataset.song_task import process_song
from grafx.dataset.synthetic import make_dataset

RATE = 16000
FIT = ["--steps", "2", "--crop", "1", "--warm-up", "0.25", "--sample-rate", str(RATE)]


def catalogue():
    text = (SOURCE_DIR / "docs" / "errors.md").read_text()
    return set(re.findall(r"`(grafx\.[a-z0-9_]+\.[a-z0-9_]+)`", text))


@pytest.fixture
def dataset_main(capsys):
    """main(argv) in this process: (exit status, stderr); the SIGTERM handler it sets is put
    back."""
    handler = signal.getsignal(signal.SIGTERM)

    def call(*argv):
        try:
            status = main([str(a) for a in argv])
        finally:
            signal.signal(signal.SIGTERM, handler)
        return status, capsys.readouterr().err
    return call


def assert_refused(result, code):
    status, err = result
    assert status == 1 and f"grafx.dataset: error: [{code}] " in err, err
    assert code in catalogue(), code


def tree(folder):
    """Every path under folder with its size and time: what a refused run must leave alone."""
    found = {}
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


def test_a_run_folder_among_the_songs_is_refused(tmp_path, dataset_main):
    # Fits written into the dataset: a MUSDB song would count its fitted mix.wav as a track.
    data = tmp_path / "DATA"
    songs = data / "songs"
    make_dataset(songs, songs=3, seconds=1.0, sample_rate=RATE)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "songs").symlink_to(songs)
    (tmp_path / "linked").symlink_to(data)
    before = tree(tmp_path)
    for output in (data,  # RUN/songs is the dataset
                   songs,  # the dataset itself
                   songs / "song01",  # inside a song
                   songs / "new" / "run",  # inside the dataset, not yet made
                   tmp_path / "elsewhere",  # RUN/songs a link to the dataset
                   tmp_path / "linked"):  # the dataset through a linked parent
        assert_refused(dataset_main("run", songs, "-o", output, "--sequential", *FIT),
                       "grafx.dataset.overlap")
    # A dataset inside the run's songs/ folder.
    assert_refused(dataset_main("run", songs / "song02", "-o", data, "--sequential", *FIT),
                   "grafx.dataset.overlap")
    assert tree(tmp_path) == before
    # A song linked to a folder of the run's songs: its fit would replace its own mix.
    run = tmp_path / "run"
    shutil.copytree(songs / "song01", run / "songs" / "song01")
    other = tmp_path / "other"
    other.mkdir()
    (other / "song01").symlink_to(run / "songs" / "song01")
    before = tree(tmp_path)
    assert_refused(dataset_main("run", other, "-o", run, "--sequential", *FIT),
                   "grafx.dataset.overlap")
    assert tree(tmp_path) == before


def test_settings_that_do_not_fit_are_refused(tmp_path, dataset_main):
    # --version or --help among the settings made every song's program exit 0 doing nothing,
    # and every song was recorded done.
    data, run = tmp_path / "data", tmp_path / "run"
    make_dataset(data, songs=1, seconds=1.0, sample_rate=RATE)
    for settings in (["--version"], ["--prune", "--prune-help"], ["--prune", "--prune-version"],
                     ["-fh"], ["--prune", "--prune-output", "x"]):
        assert_refused(dataset_main("run", data, "-o", run, "--sequential", *FIT, *settings),
                       "grafx.dataset.settings")
    assert not run.exists()


def test_a_program_that_exits_0_without_fitting_is_no_fit(tmp_path, monkeypatch):
    # Judged by what the program does: a settings check it passes with status 0 refuses the
    # settings; a song whose program exits 0 without its outputs fails.
    program = tmp_path / "grafx"
    program.write_text("#!/bin/sh\necho 'grafx 0.1.0'\nexit 0\n")
    program.chmod(0o755)
    monkeypatch.setenv("GRAFX_BIN", str(program))
    with pytest.raises(DatasetError) as error:
        check_settings(["--steps", "3"], None)
    assert error.value.code == "grafx.dataset.settings", error.value
    make_dataset(tmp_path / "data", songs=1, seconds=1.0, sample_rate=RATE)
    task = find_songs(tmp_path / "data")[0].to_task()
    row = process_song(task, str(tmp_path / "run"), ["--steps", "3"])
    assert (row["status"], row["code"]) == ("failed", "grafx.dataset.no_outputs"), row
    assert "grafx fit exited with status 0" in row["message"], row
    # A fitted song whose pruning exits 0 without its outputs.
    for name in ("summary.json", "report.html"):
        (tmp_path / "run" / "songs" / "song01" / name).write_text("{}")
    row = process_song(task, str(tmp_path / "run"), ["--steps", "3"], ["--rounds", "1"])
    assert (row["status"], row["code"]) == ("failed", "grafx.dataset.no_outputs"), row
    assert "grafx prune exited with status 0" in row["message"], row
    assert "grafx.dataset.no_outputs" in catalogue()


def test_the_paths_handed_to_a_task_are_absolute(tmp_path, monkeypatch):
    # Workers run in other folders (and on other machines).
    make_dataset(tmp_path / "data", songs=3, seconds=1.0, sample_rate=RATE)
    monkeypatch.chdir(tmp_path)
    for song in find_songs("data"):
        task = song.to_task()
        assert all(os.path.isabs(p) and os.path.isfile(p) for p in [task["mix"]] + task["tracks"])


def call_with_a_deadline(function, fifos, seconds=20):
    """function() in a thread; fails when it is still running after ``seconds`` (blocked on a
    FIFO), after opening the FIFOs for writing so that the thread ends."""
    result = []

    def target():
        try:
            result.append(function())
        except Exception as error:  # raised again below, in the test's thread
            result.append(error)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        thread.join(5)
        pytest.fail(f"still running after {seconds} s: blocked on a FIFO")
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


def test_files_that_are_not_regular_files_are_named_and_never_opened(tmp_path):
    # A FIFO named *.wav hung check and run forever; a mix.wav linked to a device was "missing".
    make_dataset(tmp_path, songs=3, seconds=1.0, sample_rate=RATE)
    fifo_track = tmp_path / "song01" / "tracks" / "fifo.wav"
    os.mkfifo(fifo_track)
    fifo_mix = tmp_path / "song02" / "song02_MIX.wav"
    fifo_mix.unlink()
    os.mkfifo(fifo_mix)
    (tmp_path / "song03" / "mixture.wav").unlink()
    (tmp_path / "song03" / "mixture.wav").symlink_to("/dev/null")
    (tmp_path / "song03" / "folder.wav").mkdir()
    (tmp_path / "broken" / "tracks").mkdir(parents=True)
    (tmp_path / "broken" / "tracks" / "a.wav").symlink_to(tmp_path / "nowhere.wav")
    (tmp_path / "broken" / "mix.wav").symlink_to(tmp_path / "nowhere.wav")
    listing = io.StringIO()
    unusable = call_with_a_deadline(lambda: check(str(tmp_path), listing),
                                    [fifo_track, fifo_mix])
    out = listing.getvalue()
    assert unusable == 4, out
    for message in ("[grafx.io.unreadable] tracks/fifo.wav: a FIFO, not a regular file",
                    "[grafx.io.unreadable] song02_MIX.wav: a FIFO, not a regular file",
                    "[grafx.io.unreadable] mixture.wav: a character device (through a link), "
                    "not a regular file",
                    "[grafx.io.unreadable] folder.wav: a folder, not a regular file",
                    "[grafx.io.unreadable] tracks/a.wav: a broken link",
                    "[grafx.io.unreadable] mix.wav: a broken link"):
        assert message in out, out
    assert not read_song(str(tmp_path / "song01")).usable
    # The run's own files: a FIFO manifest is refused, not read.
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "manifest.jsonl")
    with pytest.raises(DatasetError) as error:
        call_with_a_deadline(RunFolder(run).load_manifest, [run / "manifest.jsonl"])
    assert error.value.code == "grafx.dataset.manifest", error.value
    assert stat.S_ISFIFO(os.lstat(run / "manifest.jsonl").st_mode)


def test_synthesise_onto_a_file_is_refused(tmp_path, dataset_main):
    (tmp_path / "file").write_text("mine")
    assert_refused(dataset_main("synthesise", tmp_path / "file", "--songs", "1"),
                   "grafx.io.exists")
    assert_refused(dataset_main("synthesise", tmp_path / "file" / "data", "--songs", "1"),
                   "grafx.io.unwritable")
    assert (tmp_path / "file").read_text() == "mine"


class FakeClient:
    """distributed.Client that records how it was called and reaches nothing."""
    calls = []

    def __init__(self, address, **kwargs):
        FakeClient.calls.append((address, kwargs))
        raise OSError(f"Timed out trying to connect to {address} after 10 s")


def test_a_tls_scheduler_is_reached_with_dasks_security(tmp_path, dataset_main, monkeypatch):
    import distributed
    data = tmp_path / "data"
    make_dataset(data, songs=1, seconds=1.0, sample_rate=RATE)
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("not checked here")
    monkeypatch.setattr(distributed, "Client", FakeClient)
    FakeClient.calls.clear()
    result = dataset_main("run", data, "-o", tmp_path / "run", "--scheduler",
                          "tls://scheduler.example:8786", "--tls-ca-file", tmp_path / "ca.pem",
                          "--tls-cert", tmp_path / "cert.pem", "--tls-key", tmp_path / "key.pem",
                          *FIT)
    assert_refused(result, "grafx.dataset.scheduler")
    assert "tls://scheduler.example:8786" in result[1]
    (address, kwargs), = FakeClient.calls
    security = kwargs["security"]
    assert address == "tls://scheduler.example:8786" and isinstance(security, distributed.Security)
    assert security.require_encryption
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == (
        str(tmp_path / "ca.pem"), str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    # TLS files without a tls:// scheduler are a wrong command line.
    with pytest.raises(SystemExit) as exit_:
        dataset_main("run", data, "-o", tmp_path / "run", "--tls-cert", tmp_path / "cert.pem")
    assert exit_.value.code == 2


def test_an_unreachable_scheduler_is_named(tmp_path, dataset_main, monkeypatch):
    import importlib
    import socket
    run_module = importlib.import_module("grafx.dataset.run")  # grafx.dataset.run: the function
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    make_dataset(tmp_path / "data", songs=1, seconds=1.0, sample_rate=RATE)
    monkeypatch.setattr(run_module, "SCHEDULER_TIMEOUT", "1s", raising=False)
    result = dataset_main("run", tmp_path / "data", "-o", tmp_path / "run", "--scheduler",
                          f"tcp://127.0.0.1:{port}", *FIT)
    assert_refused(result, "grafx.dataset.scheduler")
    assert f"tcp://127.0.0.1:{port}" in result[1]


def test_a_program_option_that_begins_like_the_runners_reaches_the_program(tmp_path, dataset_main,
                                                                           monkeypatch):
    # argparse took --threads 2 for the runner's --threads-per-worker (a prefix of it).
    import grafx.dataset.__main__ as entry
    seen = {}

    def fake_run(dataset, output, fit_settings, **options):
        seen.update(settings=fit_settings, threads=options["threads"])
        return []
    monkeypatch.setattr(entry, "run", fake_run)
    status, err = dataset_main("run", tmp_path / "data", "-o", tmp_path / "run", "--threads", "2",
                               *FIT)
    assert status == 0, err
    assert seen["settings"][:2] == ["--threads", "2"] and seen["threads"] == 1
