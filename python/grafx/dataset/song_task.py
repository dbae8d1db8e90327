"""One song's work on a worker: ``grafx fit`` (and ``grafx prune``) into RUN/songs/SONG.

The work runs as the grafx program in a child process, so that a song that crashes fails
alone, and so that an interrupted song resumes from the checkpoints the program saves. Each stage
is skipped when its outputs are complete, resumed when its checkpoint exists, and started
afresh otherwise: running a song twice never repeats finished work. The child dies with the
worker (PR_SET_PDEATHSIG), so that a retried song never has two writers.

While it runs, the task keeps ``progress.json`` in the song's folder (stage, step, steps/s) for
the driver, and appends the program's output to ``log.txt``.
"""

import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import time

from .songs import not_a_file

FIT_DONE = ("summary.json", "report.html")  # written last by grafx fit (and prune)
# What the runner keeps of the program's progress file (grafx --progress-json).
PROGRESS_FIELDS = ("step", "steps", "loss", "steps_per_second", "round", "rounds", "processors",
                   "eta_seconds")
ERROR_LINE = re.compile(r"grafx: error: \[([\w.]+)\] (.*)")


def program():
    """The grafx program: $GRAFX_BIN, the one this package was built or installed with, or PATH."""
    if os.environ.get("GRAFX_BIN"):
        return os.environ["GRAFX_BIN"]
    try:
        from .._program import PROGRAM
        if os.path.exists(PROGRAM):
            return PROGRAM
    except ImportError:
        pass
    return "grafx"


def write_atomically(path, data):
    """Text or bytes into ``path`` through a synced temporary file beside it: a reader (or a run
    killed mid-write) sees the old file or the new one, never half of one."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def write_json_atomically(path, value):
    write_atomically(path, json.dumps(value, indent=1) + "\n")


def _die_with_parent():
    # Linux: SIGKILL this child when the worker that started it dies.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child_environment(threads):
    """This process's environment without what Dask sets for its workers' own use: its nanny's
    MALLOC_TRIM_THRESHOLD_=65536 makes glibc return memory at every free, and slows the
    grafx program ~9× (4 s → 38 s for a short fit); its thread limits are the song's here."""
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        environment[name] = str(threads)
    return environment


def _done(folder):
    return all(os.path.exists(os.path.join(folder, name)) for name in FIT_DONE)


def _outputs_missing(folder, stage):
    """A stage whose program exited 0 must have written its outputs: settings such as --version
    make the program exit 0 doing nothing, which must not pass for a fitted song."""
    missing = [name for name in FIT_DONE if not os.path.exists(os.path.join(folder, name))]
    return ("grafx.dataset.no_outputs", f"grafx {stage} exited with status 0 but wrote no "
            f"{' and no '.join(missing)} (see log.txt)") if missing else None


def _run_stage(command, folder, stage, progress, environment, song_folder):
    """Runs the grafx program in `folder`, logging its output there and its progress in the
    song's progress.json; returns (code, message) of its failure, or None."""
    program_progress = os.path.join(folder, "grafx-progress.json")
    command = command[:1] + ["--progress-json", program_progress] + command[1:]
    with open(os.path.join(folder, "log.txt"), "a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, bufsize=1, env=environment,
                                 preexec_fn=_die_with_parent)
        failure = None
        seen = None  # the progress file's last change
        for line in child.stdout:
            log.write(line)
            log.flush()
            error = ERROR_LINE.search(line)
            if error:
                failure = (error.group(1), error.group(2))
            try:  # the program's progress, as it last wrote it
                stamp = os.stat(program_progress).st_mtime_ns
            except OSError:
                continue
            if stamp != seen:
                seen = stamp
                report = read_json(program_progress)
                progress.update({key: report[key] for key in PROGRESS_FIELDS
                                 if report.get(key) is not None}, stage=stage, updated=time.time())
                write_json_atomically(os.path.join(song_folder, "progress.json"), progress)
        code = child.wait()
        log.write(f"[exit status {code}]\n")
    if code == 0:
        return None
    if code < 0:
        return ("grafx.dataset.killed",
                f"grafx {stage} was killed by signal {signal.Signals(-code).name}")
    return failure or ("grafx.dataset.failed", f"grafx {stage} exited with status {code}")


def read_json(path):
    """The file's object, or {} while it is missing or being replaced (or no regular file: a
    FIFO would block)."""
    if not_a_file(path):
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def process_song(song, run_folder, fit_arguments, prune_arguments=None, threads=1):
    """Fits (and prunes) one song; returns its result row. Never raises for a song's own
    failure: that is the row's status, so that every other song goes on."""
    start = time.time()
    folder = os.path.join(run_folder, "songs", song["name"])
    os.makedirs(folder, exist_ok=True)
    progress = {"song": song["name"], "state": "running", "worker": socket.gethostname(),
                "pid": os.getpid(), "started": start}
    write_json_atomically(os.path.join(folder, "progress.json"), progress)
    grafx = [program(), "--threads", str(threads)]
    environment = _child_environment(threads)
    row = {"song": song["name"], "status": "done", "code": "", "message": ""}
    failure = None
    if not _done(folder):
        resume = os.path.exists(os.path.join(folder, "checkpoint.safetensors"))
        command = grafx + ["fit", "--tracks", *song["tracks"], "--mix", song["mix"], "-o", folder,
                           *fit_arguments, "--resume" if resume else "--force"]
        failure = (_run_stage(command, folder, "fit", progress, environment, folder)
                   or _outputs_missing(folder, "fit"))
    pruned = os.path.join(folder, "pruned")
    if failure is None and prune_arguments is not None and not _done(pruned):
        os.makedirs(pruned, exist_ok=True)
        resume = all(os.path.exists(os.path.join(pruned, name))
                     for name in ("checkpoint.safetensors", "pruning.json"))
        command = grafx + ["prune", folder, "-o", pruned, *prune_arguments,
                           "--resume" if resume else "--force"]
        failure = (_run_stage(command, pruned, "prune", progress, environment, folder)
                   or _outputs_missing(pruned, "prune"))
    if failure and failure[0] == "grafx.fit.interrupted":  # Ctrl-C or SIGTERM: saved, not failed
        row.update(status="pending", message=failure[1])
    elif failure:
        row.update(status="failed", code=failure[0], message=failure[1])
    row["seconds"] = time.time() - start
    progress.update(state=row["status"], finished=time.time())
    write_json_atomically(os.path.join(folder, "progress.json"), progress)
    return row


def song_results(run_folder, name):
    """What a finished song's folder says: its fit's and pruning's summary.json ({} if none)."""
    folder = os.path.join(run_folder, "songs", name)
    return (read_json(os.path.join(folder, "summary.json")),
            read_json(os.path.join(folder, "pruned", "summary.json")))
