"""python3 -m grafx.dataset: layouts, check, and runs on a real Dask cluster (a scheduler and two
worker processes on 127.0.0.1, over TLS), with a worker killed mid-song, a corrupt song,
resumption, a lock, and results equal to a sequential run; a local cluster that listens on
127.0.0.1 alone. Hostile inputs: test_dataset_hostile.py."""

import csv
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import wave

import pytest
import torch

import grafx
from grafx.dataset import find_songs, probe_wav, read_song
from grafx.dataset.synthetic import make_dataset, write_wav

# Short songs and fits: the run's mechanics, not the fits' quality, are under test.
FIT = ["--steps", "30", "--checkpoint-every", "10", "--crop", "1", "--warm-up", "0.25",
       "--sample-rate", "16000"]
SECONDS, RATE = 2.5, 16000


def dataset_command(*arguments, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "grafx.dataset", *arguments],
                          capture_output=True, text=True, env=env or dict(os.environ), **kwargs)


def manifest(run):
    with open(os.path.join(run, "manifest.jsonl")) as f:
        return {r["song"]: r for r in map(json.loads, f)}


def write_corrupt_song(folder):
    """A song whose track has a valid RIFF header but an audio format no reader knows (0x1234):
    it passes the header check and fails in the grafx program."""
    song = os.path.join(folder, "corrupt")
    os.makedirs(os.path.join(song, "tracks"))
    fmt = struct.pack("<HHIIHH", 0x1234, 1, RATE, RATE * 2, 2, 16)
    data = bytes(4000)
    with open(os.path.join(song, "tracks", "a.wav"), "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 4 + 24 + 8 + len(data)) + b"WAVE" + b"fmt "
                + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data)
    write_wav(os.path.join(song, "mix.wav"), torch.zeros(2, RATE), RATE)


def test_layouts_and_probe(tmp_path):
    make_dataset(tmp_path, songs=3, seconds=1.0, sample_rate=RATE)
    songs = {s.name: s for s in find_songs(tmp_path)}
    assert [songs[f"song0{i}"].layout for i in (1, 2, 3)] == ["generic", "medleydb", "musdb"]
    for song in songs.values():
        assert song.usable and len(song.tracks) == 4 and song.seconds == pytest.approx(1.0)
        # The header probe agrees with libsndfile reading the whole file.
        for info in [song.mix] + song.tracks:
            audio, rate = grafx.load_audio(info.path)
            assert (info.channels, info.frames, info.sample_rate) == (*audio.shape, rate)
    # A 16-bit PCM file from Python's own writer, read back by both.
    path = str(tmp_path / "pcm.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(22050)
        w.writeframes(bytes(2 * 1234))
    info = probe_wav(path)
    assert (info.channels, info.sample_rate, info.frames, info.problem) == (1, 22050, 1234, "")
    # A truncated file: the frames that are there.
    with open(path, "rb") as f:
        whole = f.read()
    with open(path, "wb") as f:
        f.write(whole[:-1000])
    assert probe_wav(path).frames == 1234 - 500


def test_check_lists_every_problem(tmp_path):
    make_dataset(tmp_path, songs=1, seconds=1.0, sample_rate=RATE)
    (tmp_path / "nolayout").mkdir()
    (tmp_path / "nomix" / "tracks").mkdir(parents=True)
    write_wav(str(tmp_path / "nomix" / "tracks" / "a.wav"), torch.zeros(1, 100), RATE)
    (tmp_path / "garbage" / "tracks").mkdir(parents=True)
    (tmp_path / "garbage" / "tracks" / "a.wav").write_bytes(b"not audio at all")
    write_wav(str(tmp_path / "garbage" / "mix.wav"), torch.zeros(2, 100), RATE)
    (tmp_path / "rates" / "tracks").mkdir(parents=True)
    write_wav(str(tmp_path / "rates" / "tracks" / "a.wav"), torch.zeros(2, 4410), 44100)
    write_wav(str(tmp_path / "rates" / "mix.wav"), torch.zeros(2, 4800), 48000)
    result = dataset_command("check", str(tmp_path))
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert "song01: ok, generic, 4 tracks" in out
    assert "nolayout: UNUSABLE" in out and "[grafx.dataset.layout]" in out
    assert "nomix: UNUSABLE" in out and "[grafx.dataset.no_mix]" in out
    assert "garbage: UNUSABLE" in out and "[grafx.io.unreadable] tracks/a.wav: not a WAV" in out
    assert "rates: ok" in out and "note [grafx.dataset.rates]" in out
    assert "5 songs, 2 usable" in out
    assert read_song(str(tmp_path / "song01")).usable
    assert dataset_command("check", str(tmp_path / "missing")).returncode == 1


def test_bad_settings_are_refused_before_any_song(tmp_path):
    make_dataset(tmp_path / "data", songs=1, seconds=1.0, sample_rate=RATE)
    run = str(tmp_path / "run")
    cases = [(["--steps", "-3"], "grafx.dataset.settings"),
             (["--tracks", "x.wav"], "grafx.dataset.settings"),
             (["--progress-json", "p.json"], "grafx.dataset.settings"),  # the run's own
             (["--no-such-setting"], "grafx.dataset.settings"),
             (["--prune-rounds", "2"], "grafx.dataset.settings"),
             (["--songs", "zzz*"], "grafx.dataset.empty")]
    for arguments, code in cases:
        result = dataset_command("run", str(tmp_path / "data"), "-o", run, "--sequential",
                                 *arguments)
        assert result.returncode == 1 and f"[{code}]" in result.stderr, (arguments,
                                                                         result.stderr)
        assert not os.path.exists(os.path.join(run, "songs", "song01"))
    assert dataset_command("run", str(tmp_path / "data"), "-o", run,
                           "--workers", "0").returncode == 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_files(folder):
    """A self-signed certificate and its key (openssl), the CA of both ends; {} without openssl."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"--tls-ca-file": cert, "--tls-cert": cert, "--tls-key": key}


@pytest.fixture
def dask_cluster(tmp_path):
    """A dask-scheduler and two dask-worker processes (one thread each, no nanny, so that a
    killed worker stays dead) on 127.0.0.1, as docs/datasets.md says to run them: over TLS
    (unless openssl is missing). The workers run in a folder of their own: paths handed to them
    must be absolute. Yields the run's options: --scheduler ADDRESS [--tls-* FILE ...]."""
    port = free_port()
    tls = tls_files(tmp_path)
    address = f"{'tls' if tls else 'tcp'}://127.0.0.1:{port}"
    tls_options = [a for option, path in tls.items() for a in (option, path)]
    logs = open(tmp_path / "cluster.log", "w")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p))
    elsewhere = tmp_path / "workers"
    elsewhere.mkdir()
    loopback = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    scheduler = subprocess.Popen(["dask-scheduler", "--port", str(port), *loopback,
                                  *tls_options], stdout=logs, stderr=logs)
    workers = [subprocess.Popen(["dask-worker", address, "--nthreads", "1", "--no-nanny",
                                 "--name", f"worker{i}", *loopback, *tls_options],
                                stdout=logs, stderr=logs, cwd=elsewhere, env=environment)
               for i in range(2)]
    import distributed
    security = distributed.Security(
        tls_ca_file=tls["--tls-ca-file"], tls_client_cert=tls["--tls-cert"],
        tls_client_key=tls["--tls-key"], require_encryption=True) if tls else None
    with distributed.Client(address, timeout="60s", security=security) as client:
        client.wait_for_workers(2, timeout=60)
    yield ["--scheduler", address, *tls_options]
    for process in workers + [scheduler]:
        process.kill()
        process.wait()
    logs.close()


def test_run_on_a_dask_cluster(tmp_path, dask_cluster, cli):
    data, run = str(tmp_path / "data"), str(tmp_path / "run")
    make_dataset(data, songs=6, seconds=SECONDS, sample_rate=RATE)
    write_corrupt_song(data)
    # Relative paths from here: the workers run in another folder.
    driver = subprocess.Popen(
        [sys.executable, "-m", "grafx.dataset", "run", "data", "-o", "run", *dask_cluster,
         *FIT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    # Kill the worker of the first song seen past its second checkpoint, mid-fit.
    killed, refused = None, None
    deadline = time.time() + 300
    while killed is None and time.time() < deadline and driver.poll() is None:
        for name in sorted(os.listdir(os.path.join(run, "songs"))
                           if os.path.isdir(os.path.join(run, "songs")) else []):
            try:
                with open(os.path.join(run, "songs", name, "progress.json")) as f:
                    progress = json.load(f)
            except (OSError, ValueError):
                continue
            if progress.get("stage") == "fit" and 20 <= progress.get("step", 0) < 30:
                os.kill(progress["pid"], signal.SIGKILL)
                killed = name
                break
        if refused is None and os.path.exists(os.path.join(run, "manifest.jsonl")):
            # A second run on the same folder while this one runs: refused by the lock.
            refused = dataset_command("run", data, "-o", run, *dask_cluster, *FIT)
        time.sleep(0.2)
    out, _ = driver.communicate(timeout=600)
    assert killed, f"no song was seen mid-fit to kill its worker:\n{out}"
    assert refused is not None and refused.returncode == 1
    assert "[grafx.dataset.locked]" in refused.stderr, refused.stderr
    assert driver.returncode == 1, out  # the corrupt song failed
    records = manifest(run)
    assert len(records) == 7
    for name, record in records.items():
        if name == "corrupt":
            assert record["state"] == "failed" and record["code"] == "grafx.io.unreadable"
        else:
            assert record["state"] == "done", record
    # The killed song resumed from its checkpoint at step 20 on the other worker.
    with open(os.path.join(run, "songs", killed, "log.txt")) as f:
        log = f.read()
    assert "resuming at step 20 of 30" in log, log
    assert log.count("$ ") == 2

    # Equal to a sequential run (one thread per song in both).
    reference = str(tmp_path / "sequential")
    result = dataset_command("run", data, "-o", reference, "--sequential", *FIT)
    assert result.returncode == 1, result.stdout + result.stderr
    for name in records:
        if name == "corrupt":
            continue
        with open(os.path.join(run, "songs", name, "parameters.safetensors"), "rb") as a, \
                open(os.path.join(reference, "songs", name, "parameters.safetensors"), "rb") as b:
            assert a.read() == b.read(), name
        # The samples (a float WAV's header holds the time it was written).
        mixes = [grafx.load_audio(os.path.join(folder, "songs", name, "mix.wav"))[0]
                 for folder in (run, reference)]
        assert torch.equal(*mixes), name

    # The tables: a row per song, the losses of the fits from their summaries.
    with open(os.path.join(run, "summary.csv")) as f:
        rows = {r["song"]: r for r in csv.DictReader(f)}
    assert set(rows) == set(records)
    for name, row in rows.items():
        if name == "corrupt":
            assert row["status"] == "failed" and row["loss_after"] == ""
            continue
        with open(os.path.join(run, "songs", name, "summary.json")) as f:
            summary = json.load(f)
        assert float(row["loss_after"]) == pytest.approx(summary["loss_after"]["loss"])
        assert float(row["loss_after"]) < float(row["loss_before"])
        assert summary["steps"] == 30
    page = open(os.path.join(run, "report.html")).read()
    assert "Table 1" in page and "songs/song01/report.html" in page and "<svg" in page

    # A re-run does no work.
    stamps = {name: os.stat(os.path.join(run, "songs", name, "log.txt")).st_mtime_ns
              for name in records}
    again = dataset_command("run", data, "-o", run, *dask_cluster, *FIT)
    assert again.returncode == 1 and "7 of 7 songs already done or failed: skipped" in \
        again.stdout, again.stdout + again.stderr
    assert stamps == {name: os.stat(os.path.join(run, "songs", name, "log.txt")).st_mtime_ns
                      for name in records}
    # Other settings on the same folder are refused.
    other = dataset_command("run", data, "-o", run, "--sequential", *FIT[:-1], "22050")
    assert other.returncode == 1 and "[grafx.dataset.settings]" in other.stderr


def listening_addresses(pid):
    """The (host, port) a process and its children listen on (TCP)."""
    import psutil  # distributed needs it
    found = set()
    try:
        processes = [psutil.Process(pid)]
        processes += processes[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return found
    for process in processes:
        try:
            found |= {(c.laddr.ip, c.laddr.port) for c in process.connections("inet")
                      if c.status == psutil.CONN_LISTEN}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_local_cluster_with_pruning(tmp_path, cli):
    data, run = str(tmp_path / "data"), str(tmp_path / "run")
    make_dataset(data, songs=2, seconds=SECONDS, sample_rate=RATE)
    with open(tmp_path / "out.txt", "w") as log:
        driver = subprocess.Popen(
            [sys.executable, "-m", "grafx.dataset", "run", data, "-o", run, "--workers", "2",
             "--prune", "--prune-rounds", "1", "--prune-steps-between", "5", *FIT],
            stdout=log, stderr=subprocess.STDOUT)
    # Whoever reaches a Dask port runs code as this user: the local cluster (its HTTP servers
    # too) listens on 127.0.0.1 alone.
    listening = set()
    while driver.poll() is None:
        listening |= listening_addresses(driver.pid)
        time.sleep(0.25)
    out = (tmp_path / "out.txt").read_text()
    assert driver.returncode == 0, out
    assert "on 2 local worker processes" in out
    assert len(listening) >= 3, listening  # the scheduler and two workers at least
    assert {host for host, _ in listening} <= {"127.0.0.1", "::1"}, listening
    with open(os.path.join(run, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["done", "done"]
    for row in rows:
        with open(os.path.join(run, "songs", row["song"], "pruned", "summary.json")) as f:
            pruning = json.load(f)
        assert float(row["loss_pruned"]) == pytest.approx(pruning["loss_pruned"]["loss"])
        assert int(row["processors_after"]) == pruning["processors_after"]
        assert pruning["processors_after"] <= pruning["processors_before"]
        assert sum(b for b, _ in pruning["per_type"].values()) == pruning["processors_before"]
        # The song's progress comes from its programs' files (grafx --progress-json), as the
        # last one, the pruning, ended.
        with open(os.path.join(run, "songs", row["song"], "progress.json")) as f:
            progress = json.load(f)
        assert progress["stage"] == "prune" and progress["state"] == "done", progress
        assert progress["round"] == progress["rounds"] == 1, progress
        assert progress["processors"] == pruning["processors_after"], progress
        with open(os.path.join(run, "songs", row["song"], "pruned", "grafx-progress.json")) as f:
            assert json.load(f)["format"] == "grafx.progress"
    page = open(os.path.join(run, "report.html")).read()
    assert "removed (ρ)" in page and "songs/song02/pruned/report.html" in page


def test_song_programs_run_without_dasks_worker_settings(monkeypatch):
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers, which slows the grafx
    # program ~9×; thread limits are the song's.
    from grafx.dataset.song_task import _child_environment
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    environment = _child_environment(3)
    assert "MALLOC_TRIM_THRESHOLD_" not in environment
    assert environment["OMP_NUM_THREADS"] == environment["MKL_NUM_THREADS"] == "3"
    assert environment["PATH"] == os.environ["PATH"]


def test_ctrl_c_saves_and_the_next_run_resumes(tmp_path, cli):
    data, run = str(tmp_path / "data"), str(tmp_path / "run")
    make_dataset(data, songs=1, seconds=SECONDS, sample_rate=RATE)
    fit = [a if a != "30" else "120" for a in FIT]  # long enough to be caught mid-fit
    driver = subprocess.Popen([sys.executable, "-m", "grafx.dataset", "run", data, "-o", run,
                               "--sequential", *fit], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    progress_file = os.path.join(run, "songs", "song01", "progress.json")
    deadline = time.time() + 120
    while time.time() < deadline and driver.poll() is None:
        try:
            with open(progress_file) as f:
                if json.load(f).get("step", 0) >= 25:
                    break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    os.killpg(driver.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the run and its programs
    out, _ = driver.communicate(timeout=120)
    assert driver.returncode == 130, out
    assert manifest(run)["song01"]["state"] == "pending"
    with open(os.path.join(run, "songs", "song01", "log.txt")) as f:
        log = f.read()
    step = int(log.split("interrupted at step ")[1].split(";")[0])  # the program saved it
    again = dataset_command("run", data, "-o", run, "--sequential", *fit)
    assert again.returncode == 0, again.stdout + again.stderr
    with open(os.path.join(run, "songs", "song01", "log.txt")) as f:
        assert f"resuming at step {step} of 120" in f.read()
    assert manifest(run)["song01"]["state"] == "done"


def test_files_named_in_settings_are_made_absolute(tmp_path, monkeypatch):
    # Workers run in other folders (and on other machines): a relative --graph would not be found.
    from grafx.dataset.run import absolute_paths
    monkeypatch.chdir(tmp_path)
    assert absolute_paths(["--graph", "g.json", "--steps", "3", "--types=t.json"]) == [
        "--graph", str(tmp_path / "g.json"), "--steps", "3", f"--types={tmp_path / 't.json'}"]


def test_songs_fitting_on_a_gpu_share_it_eight_at_a_time():
    # One worker per core on the CPU; on a GPU eight songs at once fill it (docs/datasets.md).
    from grafx.dataset.run import SONGS_PER_GPU, default_workers, fit_device
    assert fit_device(["--steps", "5"]) == "cpu"
    assert fit_device(["--device", "cuda:1", "--steps", "5"]) == "cuda:1"
    assert fit_device(["--device=cuda"]) == "cuda"
    assert default_workers(1, [], cores=32) == 32
    assert default_workers(2, ["--device", "cpu"], cores=32) == 16
    assert default_workers(1, ["--device", "cuda"], cores=32) == SONGS_PER_GPU == 8
    assert default_workers(1, ["--device=cuda:0"], cores=4) == 4
    assert default_workers(4, ["--device", "cuda"], cores=2) == 1


def test_a_folder_that_is_not_a_run_is_refused(tmp_path):
    make_dataset(tmp_path / "data", songs=1, seconds=1.0, sample_rate=RATE)
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("[1]")
    result = dataset_command("run", str(tmp_path / "data"), "-o", str(run), "--sequential")
    assert result.returncode == 1 and "[grafx.dataset.manifest]" in result.stderr, result.stderr
    (run / "run.json").unlink()
    (run / "manifest.jsonl").write_text('{"song": "song01", "state": "done"}\nnot json\n')
    result = dataset_command("run", str(tmp_path / "data"), "-o", str(run), "--sequential")
    assert result.returncode == 1 and "manifest.jsonl:2: not a song's record" in result.stderr
    assert not (run / "songs" / "song01").exists() and not (run / "run.json").exists()
