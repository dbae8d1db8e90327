"""grafx from Python: differentiable audio processing graphs on torch tensors.

The C++ library does the work (docs/python.md); this package names it the way GRAFX and PyTorch
users expect::

    import torch, grafx

    graph = grafx.Graph()
    first, last = graph.add_serial_chain(["eq", "compressor", "gain_pan"])
    source, out = graph.add("in"), graph.add("out")
    graph.connect(source, first)
    graph.connect(last, out)

    plan = grafx.compute_render_plan(graph)
    processors = grafx.make_processors(graph, sample_rate=44100)
    parameters = grafx.create_parameters(graph, processors)
    output = grafx.render(plan, processors, parameters, torch.randn(1, 2, 44100))
    output.pow(2).mean().backward()      # gradients reach every parameter

Every error of the library is raised as a ``grafx.Error`` (or its layer's subclass) whose
``code`` is the stable code of docs/errors.md, e.g. ``grafx.graph.cycle``.
"""

import torch  # loads LibTorch before the extension that links it

from . import _errors, _grafx

_errors.code_argument_errors(_grafx)  # before any name is taken from it
from ._grafx import (
    Error,
    FitError,
    FitOptions,
    Graph,
    GraphError,
    GraphTensor,
    IoError,
    LossError,
    Processor,
    ProcessorError,
    ProcessorSet,
    RenderError,
    RenderPlan,
    Schedule,
    ScheduleError,
    chain_from_letters,
    default_console_chain,
    describe_processor,
    even_groups,
    fit_settings,
    load_audio,
    processor_registry,
    prune_randomly,
    resample,
    to_tensor,
)
from .parameters import (
    GraphParameters,
    check_parameters,
    create_parameters,
    describe_parameters,
    load_parameters,
    musical_parameters,
    save_parameters,
    to_physical,
)
from .render import (
    adjoint_plan,
    batch_grafx,
    compute_render_order,
    compute_render_plan,
    make_processors,
    render,
    render_in_chunks,
    render_graphs,
    render_naive,
    schedule,
)
from .derivatives import hvp, jvp
from .losses import MixLoss, MultiResolutionSTFTLoss
from .fitting import Fitter, demo_song, fit
from . import processors
from . import interop

__version__ = _grafx.__version__  # the build's (CMake's project version)

def write_plot(path, series, title="", x_label="", y_label="", log_x=False, overwrite=False):
    """Writes an SVG line plot (the reports' kind): ``series`` is a list of ``(label, x, y)``;
    refuses to replace a file unless ``overwrite``."""
    _grafx.write_plot(path, [(label, list(map(float, x)), list(map(float, y)))
                             for label, x, y in series], title, x_label, y_label, log_x, overwrite)


def save_audio(path, samples, sample_rate, overwrite=False):
    """Writes C×L samples (float WAV, or the format of the extension), atomically; refuses to
    replace a file unless ``overwrite``. ``load_audio(path)`` returns ``(samples, rate)``."""
    rate = _errors.sample_rate(sample_rate, "save_audio", IoError, "grafx.io.audio_format")
    _grafx.save_audio(path, samples, rate, overwrite)


#: GRAFX's name for the tensor form of a graph.
convert_to_tensor = to_tensor


def mixing_console(
    n_tracks=8,
    track_groups=None,
    n_groups=None,
    chain=None,
    dry_wet=False,
    track_names=None,
    types=None,
    master_chain=None,
    sends=None,
):
    """A mixing console of the pruning paper as a Graph.

    ``chain`` is a list of type names or a string of chain letters ("ecg"); by default the
    paper's e-c-n-s-g-d-r. Tracks are grouped by ``track_groups`` (the subgroup of each track) or
    split into ``n_groups`` even subgroups; neither gives no subgroups. ``types`` is a Graph whose
    (configured) types the chain may name. ``master_chain`` (names or letters, as ``chain``)
    puts processors on the master bus, between the master mix and the output: ``"C"``, a
    compressor with attack and release, is ``grafx fit``'s; by default none. ``sends`` maps a
    bus name to its chain (as ``chain``), or to ``(chain, tracks)`` with the tracks that send to
    it (indices or names; every track without): each track sends to the bus after its own chain,
    at a learnable level, and the bus returns to the master mix, as ``grafx fit --send`` builds
    it: e.g. ``{"reverb": "r", "echo": ("d", ["vocals"])}``; by default none.
    """
    def type_names(chain):
        return chain_from_letters(chain) if isinstance(chain, str) else list(chain)

    def send_bus(name, bus):  # its tracks (names or indices) are the console's to check
        if not isinstance(bus, tuple):
            return name, type_names(bus), []
        if len(bus) != 2:
            raise _errors.graph_error("grafx.graph.invalid_console",
                                      f"send to {name!r}: expected a chain or (chain, tracks), "
                                      f"but got {bus!r}")
        return name, type_names(bus[0]), bus[1]

    buses = [send_bus(name, bus) for name, bus in (sends or {}).items()]
    chain = default_console_chain() if chain is None else type_names(chain)
    if track_groups is None:
        track_groups = even_groups(n_tracks, n_groups) if n_groups else []
    return _grafx.mixing_console(
        n_tracks, list(track_groups), chain, dry_wet, list(track_names or []), types,
        type_names(master_chain or []), buses
    )


__all__ = [name for name in dir() if not name.startswith("_") and name != "torch"]
