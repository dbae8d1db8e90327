"""python3 -m grafx.dataset check DIR | run DIR -o RUN [...] (docs/datasets.md)."""

import argparse
import os
import signal
import sys

from .run import TLS_OPTIONS, duration_text, run
from .songs import DatasetError, find_songs

EPILOG = """Any other option is a grafx fit setting (grafx fit --help), passed to every song's fit,
e.g. --steps 2000 --sample-rate 44100 --groups 2; with --prune, --prune-X V is grafx prune's
--X V (e.g. --prune-rounds 4). Exit status: 0 when every song is done, 1 when a song failed or an
input is wrong, 2 for a wrong command line, 130 when interrupted (a second run continues)."""


def check(dataset, out=sys.stdout):
    """Lists the songs with their layout, tracks, duration, rates and problems; returns the
    number of unusable songs."""
    songs = find_songs(dataset)
    unusable = 0
    for song in songs:
        rates = sorted({i.sample_rate for i in [song.mix] + song.tracks if i and i.sample_rate})
        state = "ok" if song.usable else "UNUSABLE"
        unusable += not song.usable
        print(f"{song.name}: {state}, {song.layout or 'no layout'}, {len(song.tracks)} tracks, "
              f"{song.seconds:.1f} s, {'/'.join(f'{r} Hz' for r in rates) or 'no rate'}",
              file=out)
        for problem in song.problems:
            print(f"  {'error' if problem.fatal else 'note'} [{problem.code}] {problem.message}",
                  file=out)
    audio = sum(s.seconds for s in songs if s.usable)
    print(f"{len(songs)} songs, {len(songs) - unusable} usable ({duration_text(audio)} of audio), "
          f"{unusable} unusable", file=out)
    return unusable


def synthesise(args, parser):
    if not 1 <= args.songs <= 10000:
        parser.error(f"--songs {args.songs}: expected 1 to 10000")
    if not 0.5 <= args.seconds <= 600:
        parser.error(f"--seconds {args.seconds}: expected 0.5 to 600")
    if not 8000 <= args.sample_rate <= 192000:
        parser.error(f"--sample-rate {args.sample_rate}: expected 8000 to 192000")
    if os.path.exists(args.dataset) and (not os.path.isdir(args.dataset)
                                         or os.listdir(args.dataset)):
        raise DatasetError("grafx.io.exists", f"{args.dataset}: exists and is not an empty "
                           "folder; choose another folder")
    from .synthetic import make_dataset  # torch and the demo only here
    try:
        songs = make_dataset(args.dataset, args.songs, args.seconds, args.sample_rate,
                             args.seed)
    except OSError as error:  # e.g. a file where a folder of the path should be
        raise DatasetError("grafx.io.unwritable", f"{error.filename or args.dataset}: "
                           f"{error.strerror or error}")
    print(f"{len(songs)} songs in {args.dataset} ({args.seconds:g} s each at "
          f"{args.sample_rate} Hz): check them with python3 -m grafx.dataset check "
          f"{args.dataset}")
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM ends a run as Ctrl-C does: manifest saved, workers closed


def main(argv=None):
    # No abbreviations: an option of the grafx program that begins like one of the runner's
    # (--threads, --threads-per-worker) must reach the program, not be taken for the runner's.
    parser = argparse.ArgumentParser(
        prog="python3 -m grafx.dataset", allow_abbrev=False,
        description="Fit (and prune) every song of a multitrack dataset, on this machine or a "
                    "Dask cluster.")
    commands = parser.add_subparsers(dest="command", required=True)
    check_command = commands.add_parser(
        "check", allow_abbrev=False, help="List the songs, their layout, tracks, durations, rates and problems")
    check_command.add_argument("dataset", help="The dataset folder (a folder per song)")
    synthesise_command = commands.add_parser(
        "synthesise", allow_abbrev=False, help="Write a synthetic dataset: the demo's songs (synthesised tracks "
        "mixed by hidden consoles) in the three layouts in turn")
    synthesise_command.add_argument("dataset", help="The folder to write (a folder per song)")
    synthesise_command.add_argument("--songs", type=int, default=6, help="Songs (default 6)")
    synthesise_command.add_argument("--seconds", type=float, default=8.0,
                                    help="Seconds per song (default 8)")
    synthesise_command.add_argument("--sample-rate", type=int, default=24000,
                                    help="Hz (default 24000)")
    synthesise_command.add_argument("--seed", type=int, default=1,
                                    help="Seed of the first song (default 1)")
    run_command = commands.add_parser(
        "run", allow_abbrev=False, help="Fit every song; a second run into the same folder continues it",
        epilog=EPILOG)
    run_command.add_argument("dataset", help="The dataset folder (a folder per song)")
    run_command.add_argument("-o", "--output", required=True, help="The run's folder")
    run_command.add_argument("--workers", type=int, default=None,
                             help="Local worker processes (default: cores / threads; at most 8 "
                             "fitting on a GPU, --device cuda)")
    run_command.add_argument("--threads-per-worker", type=int, default=1,
                             help="Threads of each song's grafx program (default 1)")
    run_command.add_argument("--scheduler", help="A Dask scheduler's address, e.g. "
                             "tls://HOST:8786 or tcp://HOST:8786, instead of local workers")
    for option, what in zip(TLS_OPTIONS, ("the certificate authority's certificate",
                                          "this client's certificate", "its private key")):
        run_command.add_argument(option, metavar="PEM", help=f"For a tls:// --scheduler: {what} "
                                 "(default: Dask's distributed.comm.tls configuration)")
    run_command.add_argument("--sequential", action="store_true",
                             help="No Dask: the songs one after another in this process")
    run_command.add_argument("--songs", help="Only the songs whose folder name matches this "
                             "glob, e.g. 'A*'")
    run_command.add_argument("--prune", action="store_true",
                             help="Prune each fitted console (grafx prune) into SONG/pruned")
    run_command.add_argument("--retry-failed", action="store_true",
                             help="Run the songs that failed in an earlier run again")
    args, fit_settings = parser.parse_known_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.command != "run" and fit_settings:
            parser.error(f"unrecognised arguments: {' '.join(fit_settings)}")
        if args.command == "check":
            return 1 if check(args.dataset) else 0
        if args.command == "synthesise":
            return synthesise(args, parser)
        tls = {option: path for option, path in
               zip(TLS_OPTIONS, (args.tls_ca_file, args.tls_cert, args.tls_key)) if path}
        if tls and not (args.scheduler or "").startswith("tls://"):
            parser.error(f"{', '.join(tls)} need a tls:// --scheduler")
        for name, value in (("--workers", args.workers),
                            ("--threads-per-worker", args.threads_per_worker)):
            if value is not None and not 1 <= value <= 1024:
                parser.error(f"{name} {value}: expected a whole number from 1 to 1024")
        records = run(args.dataset, args.output, fit_settings, prune=args.prune,
                      workers=args.workers, threads=args.threads_per_worker,
                      scheduler=args.scheduler, songs_glob=args.songs,
                      sequential=args.sequential, retry_failed=args.retry_failed, tls=tls)
        failed = sum(r["state"] == "failed" for r in records)
        print(f"results: {os.path.join(args.output, 'report.html')} "
              f"(and summary.csv, manifest.jsonl, songs/)")
        if any(r["state"] == "pending" for r in records):
            raise KeyboardInterrupt  # songs were stopped by Ctrl-C or SIGTERM
        if failed:
            print(f"grafx.dataset: {failed} song{'s' if failed > 1 else ''} failed (see the "
                  "manifest; --retry-failed runs them again)", file=sys.stderr)
        return 1 if failed else 0
    except DatasetError as error:
        print(f"grafx.dataset: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grafx.dataset: interrupted; run the same command again to continue",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
