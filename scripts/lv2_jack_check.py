#!/usr/bin/env python3
"""Checks in a real host that the exported plugin follows the host's transport to the sample and
bypasses in time.

    PYTHONPATH=build/python /usr/bin/python3 scripts/lv2_jack_check.py FIT_DIR [--locate 2.25]
        [--host-rate 48000]

Needs Debian's jackd2, jalv and jack-tools (apt-get install --no-install-recommends jackd2 jalv
jack-tools; not part of the test command: JACK runs in real time, which a loaded CI machine does
not guarantee). It gives every gain_pan of the fit's console a gain ride that a clock off by a
sample makes audible (0 and -2 nepers alternating every second, flat for the first half of each
second and ramping in the second), exports that as a plugin, and runs a JACK server on its dummy
driver at the fit's rate (or --host-rate) with jalv hosting the plugin, jack-play playing the fit's
tracks (transport-aware) into it and jack-record recording what the plugin got and what it played.
The transport is stopped, located at --locate seconds and rolled: jalv sends the plugin
time:Position events as any LV2 host does. After --seconds the plugin is bypassed through its
`enabled` port, as a host's bypass button does it (jalv's `enabled = 0`), and a second later the
transport stops.

JACK's transport moves in whole periods, and jack-play starts its audio on a period of its own
choosing (here one period before the transport rolls, while the plugin holds its clock at the
located frame as told: --locate must lie in a flat part of the ride, where holding and rolling
give the same gains), so the clock the plugin played the recorded inputs at is found by trying the locate
frame ± whole periods: for each, `grafx render` of a song silent up to there and then the
recorded inputs, shifted by the latency, against the recorded output. It passes when one of them
matches within 1e-5 of the peak and the same clock a sample either way does not, and when the
last half second of the bypass plays the recorded tracks' sum delayed by the latency within 1e-6.
"""

import argparse
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch

import grafx

TOLERANCE = 1e-5
BYPASS_TOLERANCE = 1e-6
RIDE_NEPERS = -2.0


def run(*command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def ports(prefix):
    lines = run('jack_lsp').stdout.splitlines()
    return [line for line in lines if line.startswith(prefix)]


def wait_for_ports(prefix, count, what):
    for _ in range(100):
        found = ports(prefix)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    sys.exit(f'lv2_jack_check: {what} did not appear in JACK (ports {prefix}*)')


def port_number(port):
    return int(port.rsplit('_', 1)[1])


def transport(command):
    run('jack_transport', input=command + '\n')


def automated_fit(fit_dir, folder, song_samples):
    """The fit's console and parameters with a gain ride on every gain_pan over a song of
    `song_samples`, in `folder`; the fit's rate."""
    graph = grafx.Graph.load(str(fit_dir / 'console.json'))
    parameters, sample_rate = grafx.load_parameters(str(fit_dir / 'parameters.safetensors'), graph)
    nodes = graph.nodes_of_type('gain_pan')
    if not nodes:
        sys.exit(f'lv2_jack_check: {fit_dir}/console.json has no gain_pan node to ride')
    points = int(song_samples / sample_rate * 2) + 2
    graph.automation = (2.0, points)
    for node in nodes:
        graph.set_automated(node, 'log_gain')
    static = parameters['gain_pan']['log_gain']  # [nodes, values]
    ride = torch.tensor([0.0 if k // 2 % 2 == 0 else RIDE_NEPERS for k in range(points)])
    parameters['gain_pan']['log_gain@curve'] = (static[:, None, :] + ride[None, :, None]).contiguous()
    folder.mkdir()
    graph.save(str(folder / 'console.json'), True)
    grafx.save_parameters(str(folder / 'parameters.safetensors'), graph, parameters, True, sample_rate)
    return sample_rate


def converted(audio, rate, host_rate):
    """audio [channels, samples] at host_rate, by linear interpolation: what jack-play plays only
    has to be music at that rate (the check compares with what the plugin got)."""
    if host_rate == rate:
        return audio
    samples = max(1, round(audio.shape[1] * host_rate / rate))
    return torch.nn.functional.interpolate(audio[None], size=samples, mode='linear',
                                           align_corners=False)[0]


def conversion_cycle(host_rate, rate):
    """Host samples after which converting host_rate to rate comes back to the same phase."""
    return host_rate // math.gcd(host_rate, rate)


def tracks_of(fit_dir):
    """The audio of the tracks the fit folder names, each [channels, samples], and its rate."""
    try:
        paths = json.loads((fit_dir / 'fit.json').read_text())['tracks']
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f'lv2_jack_check: {fit_dir} is not a fit folder that names its tracks '
                 f'(fit.json: {error})')
    loaded = [grafx.load_audio(path) for path in paths]
    return [audio for audio, _ in loaded], loaded[0][1]


def command(jalv, line):
    """A line to jalv's console."""
    try:
        jalv.stdin.write(line.encode() + b'\n')
        jalv.stdin.flush()
    except BrokenPipeError:
        sys.exit(f'lv2_jack_check: jalv exited while the check ran (exit {jalv.poll()})')


def interrupt(*_):
    raise KeyboardInterrupt


def main():
    signal.signal(signal.SIGTERM, interrupt)  # kill, as Ctrl-C: JACK's clients stopped, nothing left
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('fit_dir', type=pathlib.Path)
    parser.add_argument('--locate', type=float, default=2.25,
                        help='transport position (seconds: 1 or more, 0.1-0.4 past a whole one)')
    parser.add_argument('--seconds', type=float, default=3.0, help='how long the transport rolls')
    parser.add_argument('--period', type=int, default=256, help="JACK's period (samples)")
    parser.add_argument('--host-rate', type=int,
                        help="JACK's sample rate (default: the fit's)")
    parser.add_argument('--grafx', default=os.environ.get('GRAFX_BIN', 'build/bin/grafx'))
    args = parser.parse_args()
    tools = ['jackd', 'jalv', 'jack-play', 'jack-record', 'jack_transport', 'jack_connect']
    for tool in tools + (['lv2apply'] if args.host_rate is not None else []):
        if not shutil.which(tool):
            sys.exit(f'lv2_jack_check: {tool} not found (apt-get install jackd2 jalv jack-tools '
                     'lilv-utils)')

    if not 0.1 <= args.locate % 1 <= 0.4 or args.locate < 1:
        sys.exit('lv2_jack_check: --locate must be 1 s or later and 0.1-0.4 s past a whole second '
                 '(the flat part of the ride)')
    if not 1 <= args.seconds <= 600:
        sys.exit('lv2_jack_check: --seconds must be 1 to 600')
    if args.period not in [2 ** k for k in range(4, 13)]:
        sys.exit('lv2_jack_check: --period must be a power of two from 16 to 4096 (as JACK takes)')
    song, rate = tracks_of(args.fit_dir)
    args.host_rate = rate if args.host_rate is None else args.host_rate
    if not 8000 <= args.host_rate <= 192000:
        sys.exit('lv2_jack_check: --host-rate must be 8000 to 192000 Hz')
    cycle = conversion_cycle(args.host_rate, rate)
    if args.period % cycle:
        sys.exit(f'lv2_jack_check: a {args.host_rate} Hz host of a {rate} Hz fit converts in '
                 f'cycles of {cycle} host samples, which do not divide the period of '
                 f'{args.period}: the conversion\'s phase at the recording would be unknown')
    song_samples = max(track.shape[1] for track in song)
    if args.locate + args.seconds + 1.5 > song_samples / rate:
        sys.exit(f'lv2_jack_check: the song is {song_samples / rate:.1f} s: --locate plus --seconds '
                 f'must leave 1.5 s for the bypass')
    work = pathlib.Path(tempfile.mkdtemp(prefix='grafx-jack-'))
    try:
        return check(args, song, rate, work)
    except (KeyboardInterrupt, SystemExit) as stop:  # nothing left behind but a failed check's
        shutil.rmtree(work, ignore_errors=True)
        if isinstance(stop, KeyboardInterrupt):
            sys.exit('lv2_jack_check: interrupted')
        raise


def check(args, song, rate, work):
    """The run in JACK and its comparisons, in the folder `work` (kept where the check fails)."""
    if automated_fit(args.fit_dir, work / 'fit', max(track.shape[1] for track in song)) != rate:
        sys.exit('lv2_jack_check: the tracks are not at the rate of the fit\'s parameters')
    uri = 'urn:grafx:jack_check'
    run(args.grafx, 'export-lv2', str(work / 'fit'), '-o', str(work / 'jack_check.lv2'),
        '--uri', uri)
    host_rate = args.host_rate

    server = f'grafx-check-{os.getpid()}'
    os.environ.update(JACK_NO_AUDIO_RESERVATION='1', JACK_NO_START_SERVER='1',
                      JACK_DEFAULT_SERVER=server, LV2_PATH=str(work))
    processes = []

    def start(*command, stdout=subprocess.DEVNULL, **kwargs):
        processes.append(subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL,
                                          cwd=work, **kwargs))
        return processes[-1]

    try:
        start('jackd', '-n', server, '-d', 'dummy', '-r', str(host_rate),
              '-p', str(args.period))
        time.sleep(1.0)
        with open(work / 'jalv.log', 'w') as log:
            host = start('jalv', '-x', '-n', 'plug', uri, stdin=subprocess.PIPE, stdout=log)
        wait_for_ports('plug:out_', 2, 'the plugin')  # registered after its inputs
        command(host, 'monitors')  # jalv prints the output controls: the latency the host reads
        inputs = ports('plug:in_')
        # the tracks as one file of the plugin's input channels (a mono file in both of a pair)
        channels = []
        for index, audio in enumerate(song, start=1):
            wanted = sum(1 for port in inputs if port.startswith(f'plug:in_{index}_')) or 1
            channels.append(audio.expand(wanted, -1) if audio.shape[0] == 1 else audio)
        tracks = converted(torch.cat(channels), rate, host_rate)
        if tracks.shape[0] != len(inputs):
            sys.exit(f'lv2_jack_check: the tracks have {tracks.shape[0]} channels, the plugin '
                     f'{len(inputs)} inputs')
        grafx.save_audio(str(work / 'tracks.wav'), tracks.contiguous(), host_rate, True)
        start('jack-play', '-t', 'tracks.wav')
        play = sorted(wait_for_ports('jack-play', len(inputs), 'jack-play'), key=port_number)
        for source, sink in zip(play, inputs):
            run('jack_connect', source, sink)
        transport('stop')
        cycle = conversion_cycle(host_rate, rate)
        locate = round(args.locate * host_rate / cycle) * cycle
        transport(f'locate {locate}')
        time.sleep(0.5)
        start('jack-record', '-n', str(len(inputs) + 2), 'recorded.wav')
        record = wait_for_ports('jack-record', len(inputs) + 2, 'jack-record')
        record = sorted(record, key=port_number)
        for source, sink in zip(play + ['plug:out_left', 'plug:out_right'], record):
            run('jack_connect', source, sink)
        time.sleep(0.5)
        transport('play')
        time.sleep(args.seconds)
        command(host, 'enabled = 0')  # jalv's command for a control port, by symbol
        time.sleep(1.0)
        transport('stop')
        time.sleep(0.3)
        processes[-1].send_signal(signal.SIGINT)  # jack-record writes its file on SIGINT
        processes[-1].wait(timeout=10)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()

    reported = re.findall(r'latency = ([0-9.]+)', (work / 'jalv.log').read_text())
    if not reported:
        sys.exit(f'lv2_jack_check: jalv printed no latency (its output: {work}/jalv.log)')
    latency = round(float(reported[-1]))
    recorded, _ = grafx.load_audio(str(work / 'recorded.wav'))
    played_in, played_out = recorded[:len(inputs)], recorded[len(inputs):]
    heard = (played_in.abs().sum(0) > 0).nonzero()
    if len(heard) == 0:
        sys.exit('lv2_jack_check: jack-play played nothing into the plugin')
    start_sample = int(heard[0])  # where the recorded inputs begin
    compared = min(round((args.seconds - 0.5) * host_rate), played_out.shape[1] - start_sample)
    track_channels = [channel.shape[0] for channel in channels]

    def song(clock, rows):
        """Silence up to `clock`, then the recorded inputs' channels `rows` (a slice)."""
        silent_then_played = torch.zeros(rows.stop - rows.start, clock + compared)
        silent_then_played[:, clock:] = played_in[rows, start_sample:start_sample + compared]
        return silent_then_played

    def rendered(clock):
        """grafx render of the song silent up to `clock`, from there on (the latency undone)."""
        sources, first = [], 0
        for index, count in enumerate(track_channels):
            sources.append(str(work / f'source{index}.wav'))
            grafx.save_audio(sources[-1], song(clock, slice(first, first + count)), rate, True)
            first += count
        run(args.grafx, 'render', str(work / 'fit' / 'console.json'), '--sources', *sources,
            '--params', str(work / 'fit' / 'parameters.safetensors'), '-o', str(work / 'render.wav'),
            '--force')
        return grafx.load_audio(str(work / 'render.wav'))[0][:, clock - latency:][:, :compared]

    def applied(clock):
        """lv2apply's playing of the song silent up to `clock`, from there on."""
        grafx.save_audio(str(work / 'song.wav'), song(clock, slice(0, len(inputs))), host_rate,
                         True)
        run('lv2apply', '-i', str(work / 'song.wav'), '-o', str(work / 'applied.wav'), uri)
        return grafx.load_audio(str(work / 'applied.wav'))[0][:, clock:]

    offline_at = rendered if host_rate == rate else applied

    def error(clock):
        """Recorded output against the reference's, the inputs' first sample at `clock`."""
        offline = offline_at(clock)
        live = played_out[:, start_sample:start_sample + offline.shape[1]]
        return float((live - offline).abs().max() / offline.abs().max())

    reference = 'grafx render' if host_rate == rate else 'lv2apply'
    print(f'{host_rate} Hz host of a {rate} Hz fit: transport located at {locate} and rolled; '
          f'jack-play\'s audio reached the plugin at recorded sample {start_sample}; {compared} '
          f'samples compared, latency {latency}')
    print(f'song clock at that sample | max |plugin - {reference}| / peak')
    errors = {}
    # The plugin takes the transport's frame as its output's (as hosts that compensate latency
    # give it) and plays its input at the frame plus the latency (docs/streaming.md).
    for periods in range(-4, 5):
        clock = locate + latency + periods * args.period
        errors[clock] = error(clock)
        print(f'{clock:>9} (locate + latency {periods:+d} periods) | {errors[clock]:.2e}')
    best = min(errors, key=errors.get)
    # A host sample off, and where the rates differ a cycle of the conversion off (the same
    # phase of the conversion, the song's clock a few samples of the fit's rate off).
    off = [best - 1, best + 1] + ([best - cycle, best + cycle] if cycle > 1 else [])
    for clock in off:
        errors[clock] = error(clock)
        print(f'{clock:>9} ({"a sample" if abs(clock - best) == 1 else "a cycle"} off)'
              f'{" " * (6 if abs(clock - best) == 1 else 7)}| {errors[clock]:.2e}')
    nearest = min(errors[clock] for clock in off)
    followed = errors[best] <= TOLERANCE and nearest > TOLERANCE
    print(f'{"passed" if followed else "FAILED"}: the plugin played at clock {best} within '
          f'{errors[best]:.1e} of the peak (tolerance {TOLERANCE:.0e}); off by a sample, '
          f'{nearest:.1e}')

    # Bypassed: each output channel the sum of the tracks' same channel (a mono track's in both),
    # delayed by the latency; the last half second before the transport stopped.
    last = int(heard[-1])
    window = slice(last - round(0.6 * host_rate), last - round(0.1 * host_rate))
    dry = torch.zeros(2, played_in.shape[1] + latency)
    for channel, port in enumerate(inputs):
        sides = [0] if port.endswith('_left') else [1] if port.endswith('_right') else [0, 1]
        for side in sides:
            dry[side, latency:] += played_in[channel]
    bypass_error = float((played_out[:, window] - dry[:, window]).abs().max() /
                         dry[:, window].abs().max())
    bypassed = bypass_error <= BYPASS_TOLERANCE
    print(f'{"passed" if bypassed else "FAILED"}: bypassed by its enabled port, it played the '
          f'tracks\' sum delayed by {latency} within {bypass_error:.1e} of the peak '
          f'(tolerance {BYPASS_TOLERANCE:.0e})')
    passed = followed and bypassed
    if passed:
        shutil.rmtree(work)
    else:
        print(f'the recording, the plugin and the renders are in {work}')
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main())
