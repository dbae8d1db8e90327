"""Runs a dataset: one task per song on a Dask cluster (or one after another), with a manifest,
a lock, live progress and resumption (docs/datasets.md)."""

import asyncio
import concurrent.futures
import fcntl
import fnmatch
import json
import os
import subprocess
import sys
import time

from .song_task import (process_song, program, read_json, write_atomically,
                        write_json_atomically)
from .songs import DatasetError, find_songs, not_a_file
from .tables import write_tables

RUN_FORMAT = "grafx.dataset_run"
# grafx fit options the run sets itself, per song.
RESERVED = {"--tracks", "--mix", "-o", "--output", "--resume", "--force", "-f", "--prune",
            "--threads", "--progress-json"}
# Options with which the program prints and exits 0, fitting nothing.
NOT_SETTINGS = {"-h", "--help", "--version"}
PATH_OPTIONS = {"--graph", "--types"}  # grafx fit options that name files
# Local workers fitting on one GPU (--device cuda): eight songs at once did 3.8x the songs per
# hour of one at a time on an H200 (docs/benchmarks.md, "Songs on one GPU").
SONGS_PER_GPU = 8
SCHEDULER_TIMEOUT = "10s"  # to connect to a --scheduler (docs/datasets.md)
# A tls:// scheduler's files: the run's options and Dask's Security's names.
TLS_OPTIONS = {"--tls-ca-file": "tls_ca_file", "--tls-cert": "tls_client_cert",
               "--tls-key": "tls_client_key"}


def split_prune_arguments(arguments):
    """grafx fit's settings, and grafx prune's from the --prune-X V among them (each takes a
    value: --prune-X=V or --prune-X V)."""
    fit, prune = [], []
    arguments = iter(arguments)
    for argument in arguments:
        if argument.startswith("--prune-"):
            prune.append("--" + argument[len("--prune-"):])
            if "=" not in argument:
                prune.append(next(arguments, ""))
        else:
            fit.append(argument)
    return fit, prune


def absolute_paths(arguments):
    """The files --graph and --types name, as absolute paths: workers run elsewhere."""
    arguments = list(arguments)
    for i, argument in enumerate(arguments):
        name, equals, value = argument.partition("=")
        if name in PATH_OPTIONS and equals:
            arguments[i] = f"{name}={os.path.abspath(value)}"
        elif argument in PATH_OPTIONS and i + 1 < len(arguments):
            arguments[i + 1] = os.path.abspath(arguments[i + 1])
    return arguments


def check_settings(fit_arguments, prune_arguments):
    """Lets the grafx program judge the settings once, before any song runs: it parses them and
    then fails on the missing files (exit 1); a bad setting is a parse error (exit 2), and
    settings with which it ends otherwise (0: --version, -fh, ...) do not fit."""
    for prefix, arguments in (("--", fit_arguments), ("--prune-", prune_arguments or [])):
        for argument in arguments:
            name = argument.split("=")[0]
            shown = prefix + argument[2:] if argument.startswith("--") else argument
            if name in RESERVED:
                raise DatasetError("grafx.dataset.settings",
                                   f"{shown} is set per song by grafx.dataset; leave it out")
            if name in NOT_SETTINGS:
                raise DatasetError("grafx.dataset.settings", f"{shown} is no fitting or "
                                   "pruning setting: the program would print and fit nothing")
    missing = os.path.join(os.sep, "nonexistent-grafx-dataset-check", "x")  # nothing is made
    commands = [["fit", "--tracks", missing, "--mix", missing, "-o", missing, *fit_arguments]]
    if prune_arguments is not None:
        commands.append(["prune", missing, "-o", missing, *prune_arguments])
    for command in commands:
        try:
            result = subprocess.run([program(), *command], capture_output=True, text=True)
        except OSError as error:
            raise DatasetError("grafx.dataset.program",
                               f"cannot run the grafx program {program()!r}: {error.strerror} "
                               "(set GRAFX_BIN, or install grafx: scripts/install.sh)")
        output = (result.stderr.strip() or result.stdout.strip()).splitlines()
        message = output[-1].replace("grafx: error: ", "") if output else ""
        if result.returncode == 2:
            raise DatasetError("grafx.dataset.settings",
                               f"grafx {command[0]} refuses the settings: {message}")
        if result.returncode != 1:
            raise DatasetError("grafx.dataset.settings", f"with these settings grafx "
                               f"{command[0]} ends with status {result.returncode} instead of "
                               f"working on its files ({message or 'no output'}): leave out "
                               "what is no fitting or pruning setting")


def check_output(dataset, output, songs):
    """Refuses a run whose songs/ folder is, holds or lies inside the dataset, or holds a song's
    files (real paths: links resolved): the fits would land among the songs, and a MUSDB song
    would count its fitted mix.wav as a track on every later run."""
    songs_folder = os.path.realpath(os.path.join(output, "songs"))
    data = os.path.realpath(dataset)

    def inside(path, folder):
        return os.path.commonpath([path, folder]) == folder
    if inside(songs_folder, data) or inside(data, songs_folder):
        raise DatasetError("grafx.dataset.overlap", f"{output}: the run's songs/ folder "
                           f"({songs_folder}) and the dataset ({data}) overlap; choose a run "
                           "folder outside the dataset, e.g. beside it")
    for song in songs:
        for info in ([song.mix] if song.mix else []) + song.tracks:
            if inside(os.path.realpath(info.path), songs_folder):
                raise DatasetError("grafx.dataset.overlap", f"{output}: song {song.name}'s "
                                   f"{info.path} lies in the run's songs/ folder, where the "
                                   "fits are written; choose another run folder")


class RunFolder:
    """RUN/: run.json (dataset and settings), manifest.jsonl (one line per song), songs/,
    summary.csv, report.html, and a lock held while a run writes it."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.manifest_path = os.path.join(self.path, "manifest.jsonl")
        self.songs = {}
        self._lock = None

    def lock(self):
        try:
            os.makedirs(os.path.join(self.path, "songs"), exist_ok=True)
            self._lock = open(os.path.join(self.path, ".lock"), "a+")
        except OSError as error:
            raise DatasetError("grafx.io.unwritable",
                               f"{self.path}: {error.strerror} (the run's folder)")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.seek(0)
            holder = self._lock.read().strip() or "another process"
            raise DatasetError("grafx.dataset.locked",
                               f"{self.path} is being written by another run ({holder}); wait "
                               "for it to end, or choose another folder")
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        self._lock.flush()

    def unlock(self):
        if self._lock:
            self._lock.close()
            self._lock = None

    def check_settings(self, dataset, fit_arguments, prune_arguments):
        """The run's settings are those of the folder's first run: songs of one table are
        fitted alike."""
        settings = {"format": RUN_FORMAT, "version": 1, "dataset": os.path.abspath(dataset),
                    "fit": fit_arguments, "prune": prune_arguments}
        path = os.path.join(self.path, "run.json")
        if os.path.exists(path):
            earlier = read_json(path)
            if not isinstance(earlier, dict) or earlier.get("format") != RUN_FORMAT:
                raise DatasetError("grafx.dataset.manifest",
                                   f"{path}: not a grafx.dataset run's settings; is "
                                   f"{self.path} the folder of a run?")
            for key in ("dataset", "fit", "prune"):
                if earlier.get(key) != settings[key]:
                    raise DatasetError(
                        "grafx.dataset.settings",
                        f"{self.path} holds a run with other settings ({key}: "
                        f"{earlier.get(key)!r}, now {settings[key]!r}); use the same ones to "
                        "continue it, or another folder")
        else:
            write_json_atomically(path, settings)

    def load_manifest(self):
        self.songs = {}
        if os.path.lexists(self.manifest_path):
            problem = not_a_file(self.manifest_path)
            if problem:  # a FIFO would block the run forever
                raise DatasetError("grafx.dataset.manifest",
                                   f"{self.manifest_path}: {problem}; remove it")
            with open(self.manifest_path) as f:
                for number, line in enumerate(f, 1):
                    try:
                        record = json.loads(line) if line.strip() else None
                        if record is not None:
                            self.songs[record["song"]] = record
                    except (ValueError, KeyError, TypeError):
                        raise DatasetError("grafx.dataset.manifest",
                                           f"{self.manifest_path}:{number}: not a song's record "
                                           "(edited by hand?); fix or remove the line")
        return self.songs

    def save_manifest(self):
        write_atomically(self.manifest_path, "".join(
            json.dumps(self.songs[name], sort_keys=True) + "\n" for name in sorted(self.songs)))


def duration_text(seconds):
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class Progress:
    """Songs done / running / failed, steps per second and time left, from the songs'
    progress.json files (any worker writes them on the shared folder)."""

    def __init__(self, run, names, slots, steps):
        self.run, self.names, self.slots, self.steps = run, names, max(1, slots), steps
        self.start = time.time()
        self.terminal = sys.stdout.isatty()
        self.last_line = 0.0

    def _running(self):
        rows = []
        for name in self.names:
            if self.run.songs[name]["state"] != "running":
                continue
            progress = read_json(os.path.join(self.run.path, "songs", name, "progress.json"))
            if progress.get("state") == "running" and progress.get("updated", 0) >= self.start:
                rows.append(progress)
        return rows

    def line(self):
        states = [self.run.songs[n]["state"] for n in self.names]
        done, failed = states.count("done"), states.count("failed")
        running = self._running()
        rate = sum(p.get("steps_per_second", 0) for p in running if p.get("stage") == "fit")
        finished = [self.run.songs[n] for n in self.names if self.run.songs[n].get("seconds")
                    and self.run.songs[n]["state"] == "done" and self.run.songs[n].get("worked")]
        left = len(self.names) - done - failed
        if finished:
            per_song = sum(r["seconds"] for r in finished) / len(finished)
            eta = left * per_song / self.slots
        elif rate > 0 and self.steps:
            eta = left * self.steps / rate
        else:
            eta = None
        stages = ", ".join(f"{p['song']} {p['stage']} {p.get('step', 0)}/{p.get('steps', 0)}"
                           if p.get("stage") == "fit" else
                           f"{p['song']} prune {p.get('round', 0)}/{p.get('rounds', 0)}"
                           for p in running if p.get("stage"))
        return (f"songs {done + failed}/{len(self.names)}: {done} done, "
                f"{states.count('running')} running, {failed} failed  "
                f"{rate:.2f} steps/s  elapsed {duration_text(time.time() - self.start)}  "
                + (f"time left ~{duration_text(eta)}" if eta is not None else "time left ?")
                + (f"  [{stages}]" if stages else ""))

    def show(self, force=False):
        now = time.time()
        if self.terminal:
            print("\r" + self.line()[:200].ljust(120), end="", flush=True)
        elif force or now - self.last_line >= 30:
            print(self.line(), flush=True)
            self.last_line = now

    def end(self):
        if self.terminal:
            print()


def _connect(distributed, scheduler, tls):
    """A client of the scheduler; a tls:// one with Dask's Security of the --tls-* files (those
    not given come from Dask's configuration, distributed.comm.tls)."""
    security = None
    if scheduler.startswith("tls://"):
        for option, path in tls.items():
            if not_a_file(path):
                raise DatasetError("grafx.io.unreadable", f"{option} {path}: {not_a_file(path)}")
        security = distributed.Security(require_encryption=True,
                                        **{TLS_OPTIONS[k]: v for k, v in tls.items()})
    try:
        return distributed.Client(scheduler, timeout=SCHEDULER_TIMEOUT, security=security)
    except (OSError, TypeError, ValueError) as error:  # TypeError: tls:// without certificates
        raise DatasetError("grafx.dataset.scheduler", f"cannot reach the Dask scheduler at "
                           f"{scheduler} within {SCHEDULER_TIMEOUT}: {error}" + (
                               " (a tls:// scheduler needs --tls-ca-file, --tls-cert and "
                               "--tls-key, or Dask's TLS configuration)"
                               if isinstance(error, TypeError) else ""))


def _executor(workers, threads, scheduler, sequential, tls=None):
    """(submit, close, slots): Dask futures on a cluster, or this process one song at a time."""
    if sequential:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        return pool.submit, lambda: pool.shutdown(cancel_futures=True), 1
    import distributed  # only here: `check` and sequential runs need no Dask
    if scheduler:
        client = _connect(distributed, scheduler, tls or {})
        cluster = None
    else:
        # Worker processes of one Dask thread each: a song at a time per worker, the song's
        # grafx program on `threads` threads. Every port on 127.0.0.1: whoever reaches a Dask
        # port runs code as this user, and Dask's HTTP servers listen on every interface
        # unless told otherwise.
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, host="127.0.0.1",
                                           dashboard_address="127.0.0.1:0",
                                           worker_dashboard_address="127.0.0.1:0",
                                           silence_logs=50)
        client = distributed.Client(cluster)
    slots = sum(client.nthreads().values()) or 1

    def close():
        client.close()
        if cluster:
            cluster.close()
    return lambda *a: client.submit(*a, pure=False), close, slots


def run(dataset, output, fit_arguments, prune=False, workers=None, threads=1, scheduler=None,
        songs_glob=None, sequential=False, retry_failed=False, log=print, show_progress=True,
        tls=None):
    """Fits (and prunes) every usable song of ``dataset`` into ``output``; returns the manifest
    records of the selected songs. ``tls``: a tls:// scheduler's files, {"--tls-cert": path,
    ...} (TLS_OPTIONS)."""
    fit_arguments, prune_arguments = split_prune_arguments(absolute_paths(fit_arguments))
    if prune_arguments and not prune:
        raise DatasetError("grafx.dataset.settings", "--prune-* settings need --prune")
    prune_arguments = prune_arguments if prune else None
    songs = find_songs(dataset)
    check_output(dataset, output, songs)
    check_settings(fit_arguments, prune_arguments)
    if songs_glob:
        songs = [s for s in songs if fnmatch.fnmatch(s.name, songs_glob)]
    if not songs:
        raise DatasetError("grafx.dataset.empty", f"{dataset}: no song folders"
                           + (f" match {songs_glob!r}" if songs_glob else ""))
    folder = RunFolder(output)
    folder.lock()
    try:
        records = folder.load_manifest()
        folder.check_settings(dataset, fit_arguments, prune_arguments)
        todo = []
        for song in songs:
            record = records.setdefault(song.name, {"song": song.name, "state": "pending"})
            record.update(layout=song.layout, tracks=len(song.tracks),
                          audio_seconds=round(song.seconds, 3))
            if not song.usable:
                problem = next(p for p in song.problems if p.fatal)
                record.update(state="failed", code=problem.code, message=problem.message)
            elif record["state"] == "done" or (record["state"] == "failed" and not retry_failed):
                pass
            else:
                record.update(state="pending", code="", message="")
                todo.append(song)
        folder.save_manifest()
        names = [s.name for s in songs]
        skipped = len(songs) - len(todo)
        if skipped:
            log(f"{skipped} of {len(songs)} songs already "
                f"{'done or failed' if not retry_failed else 'done'}: skipped")
        if todo:
            _run_songs(folder, todo, names, fit_arguments, prune_arguments, workers, threads,
                       scheduler, sequential, log, show_progress, tls)
        write_tables(folder.path, [records[n] for n in names], prune)
        return [records[n] for n in names]
    finally:
        folder.unlock()


def _run_songs(folder, todo, names, fit_arguments, prune_arguments, workers, threads, scheduler,
               sequential, log, show_progress, tls):
    records = folder.songs
    workers = workers or default_workers(threads, fit_arguments)
    submit, close, slots = _executor(workers, threads, scheduler, sequential, tls)
    where = ("one after another in this process" if sequential else
             f"on the Dask cluster at {scheduler}" if scheduler else
             f"on {workers} local worker process{'es' if workers > 1 else ''}")
    log(f"running {len(todo)} song{'s' if len(todo) > 1 else ''} {where} ({slots} at a time, "
        f"{threads} thread{'s' if threads > 1 else ''} each); manifest: {folder.manifest_path}")
    steps = _steps(fit_arguments)
    progress = Progress(folder, names, slots, steps)
    futures = {}
    try:
        for song in todo:
            future = submit(process_song, song.to_task(), folder.path, fit_arguments,
                            prune_arguments, threads)
            futures[future] = song.name
        pending = set(futures)
        while pending:
            time.sleep(1.0)
            finished = {f for f in pending if f.done()}
            pending -= finished
            for future in finished:
                _record(records[futures[future]], future)
            # A song is "running" once a worker has started it in this run.
            for name in (futures[f] for f in pending):
                if records[name]["state"] == "pending" and read_json(os.path.join(
                        folder.path, "songs", name, "progress.json")).get(
                            "started", 0) >= progress.start:
                    records[name]["state"] = "running"
            folder.save_manifest()
            if show_progress:
                progress.show(force=bool(finished))
        progress.end()
    except KeyboardInterrupt:
        progress.end()
        for name in futures.values():
            if records[name]["state"] == "running":
                records[name]["state"] = "pending"  # resumes from its checkpoint next time
        folder.save_manifest()
        raise
    finally:
        close()
    done = sum(records[s.name]["state"] == "done" for s in todo)
    interrupted = sum(records[s.name]["state"] == "pending" for s in todo)
    log(f"{done} of {len(todo)} songs done"
        + (f", {interrupted} interrupted (saved: they resume on the next run)" if interrupted
           else "") + "".join(
        f"\n  {s.name}: failed [{records[s.name]['code']}] {records[s.name]['message']}"
        for s in todo if records[s.name]["state"] == "failed"))


def _record(record, future):
    try:
        row = future.result()
    except (concurrent.futures.CancelledError, asyncio.CancelledError):  # the run is closing: the song resumes next time
        row = {"status": "pending", "message": "cancelled"}
    except Exception as error:  # the task itself broke (not a song's failure): say so
        row = {"status": "failed", "code": "grafx.dataset.task",
               "message": f"{type(error).__name__}: {error}", "seconds": 0}
    record.update(state=row["status"], code=row.get("code", ""), message=row.get("message", ""),
                  seconds=round(row.get("seconds", 0), 2), worked=True)


def fit_device(fit_arguments):
    """The --device the fit settings name ("cpu" where none)."""
    device = "cpu"
    for i, argument in enumerate(fit_arguments):
        if argument == "--device" and i + 1 < len(fit_arguments):
            device = fit_arguments[i + 1]
        elif argument.startswith("--device="):
            device = argument.split("=", 1)[1]
    return device


def default_workers(threads, fit_arguments, cores=None):
    """Local workers when --workers is not given: one per `threads` cores; fitting on a GPU, at
    most SONGS_PER_GPU of them share it."""
    workers = max(1, (cores or os.cpu_count() or 1) // max(1, threads))
    if fit_device(fit_arguments).startswith("cuda"):
        workers = min(workers, SONGS_PER_GPU)
    return workers


def _steps(fit_arguments):
    for i, argument in enumerate(fit_arguments):
        if argument == "--steps" and i + 1 < len(fit_arguments):
            return int(fit_arguments[i + 1]) if fit_arguments[i + 1].isdigit() else 0
        if argument.startswith("--steps="):
            value = argument.split("=", 1)[1]
            return int(value) if value.isdigit() else 0
    return 1000  # grafx fit's default
