"""Fitting a graph to a target mix by gradient descent (the pruning paper's recipe)."""

import torch

from . import _grafx
from ._errors import fit_error, sample_rate as _sample_rate


def _options(**settings):
    options = _grafx.FitOptions()
    if "time_budget_minutes" in settings:
        options.time_budget_seconds = 60.0 * settings.pop("time_budget_minutes")
        if "num_steps" not in settings:
            settings["num_steps"] = 1 << 62  # the budget alone ends the fit
    loss = settings.pop("loss", None)
    if loss is not None:
        # A grafx.MixLoss module, or its C++ loss: its options; rate and skip are the fit's.
        loss = getattr(loss, "loss", loss)
        if not isinstance(loss, _grafx.MixLoss):
            raise fit_error("grafx.fit.options", "loss: expected a grafx.MixLoss, but got "
                            f"{type(loss).__name__}", TypeError)
        options.loss = loss
    for name, value in settings.items():
        if name.startswith("_") or not hasattr(options, name):
            known = sorted(n for n in dir(options) if not n.startswith("_"))
            raise fit_error("grafx.fit.options", f"fit: unknown setting {name!r}; settings: "
                            f"{', '.join(known)}, time_budget_minutes", TypeError)
        setattr(options, name, value)
    return options


def _stereo(tracks, mix):
    """Tracks and mix as the CLI reads them: mono (C = 1) spread to both channels of a stereo
    fit, tracks given as a list of C×L tensors (mono and stereo mixed) stacked to K×2×L."""
    if isinstance(tracks, (list, tuple)):
        for k, track in enumerate(tracks):
            if not isinstance(track, torch.Tensor) or track.dim() != 2 or track.size(0) > 2:
                got = (tuple(track.shape) if isinstance(track, torch.Tensor)
                       else type(track).__name__)
                raise fit_error("grafx.fit.data", f"tracks[{k}]: expected a mono or stereo C×L "
                                f"tensor, but got {got}")
            if track.size(1) != tracks[0].size(1):
                raise fit_error("grafx.fit.data", f"tracks[{k}]: expected the length of "
                                f"tracks[0] ({tracks[0].size(1)}), but got {track.size(1)}")
        tracks = torch.stack([track.expand(2, -1) if track.size(0) == 1 else track
                              for track in tracks]) if tracks else torch.empty(0, 2, 0)
    if not isinstance(tracks, torch.Tensor) or not isinstance(mix, torch.Tensor):
        raise fit_error("grafx.fit.data", "expected tracks (a K×C×L tensor or a list of C×L "
                        f"tensors) and a C×L mix tensor, but got {type(tracks).__name__} and "
                        f"{type(mix).__name__}", TypeError)
    if mix.dim() == 2 and mix.size(0) == 1:
        mix = mix.expand(2, -1)  # the loss compares left, right, mid and side
    if tracks.dim() == 3 and tracks.size(1) == 1 and mix.dim() == 2 and mix.size(0) == 2:
        tracks = tracks.expand(-1, 2, -1)
    return tracks.contiguous(), mix.contiguous()


class Fitter(_grafx.Fitter):
    """A fit in progress: ``run(callback)``, ``step()``, ``parameters``, ``history``,
    ``render_mix()``, ``evaluate()``, checkpoints.

    tracks  K×C×L, one per ``in`` node in id order (or a list of K C×L tensors); mix  C×L; at
            ``sample_rate``. Mono tracks or a mono mix are spread to both channels, as
            ``grafx fit`` reads mono files.
    Settings: every entry of ``grafx.fit_settings()`` by its name (num_steps, lr, crop_seconds,
    skip_seconds, ...: the keys of fit.json, grafx fit's options with dashes), and
    regularizer_weights, learning_rates, stages, automate ({type: parameter names}, e.g.
    {"gain_pan": []}: curves after a static part), loss (a grafx.MixLoss whose FFT sizes, mel
    bands, A-weighting, eps and L/R, mid and side weights the fit uses; its rate and skip are the
    fit's) and time_budget_minutes.
    """

    def __init__(self, graph, tracks, mix, sample_rate, parameters=None, **settings):
        tracks, mix = _stereo(tracks, mix)
        rate = _sample_rate(sample_rate, "fit", _grafx.FitError, "grafx.fit.options")
        super().__init__(graph, tracks, mix, rate, _options(**settings),
                         None if parameters is None else dict(parameters.items()))


def fit(graph, tracks, mix, sample_rate, num_steps=None, callback=None, parameters=None,
        **settings):
    """Fits ``graph`` to ``mix`` and returns the Fitter. ``callback(progress)`` is called after
    every step with step, num_steps, record (loss, match_loss, ...), steps_per_second,
    eta_seconds, learning_rate and threads; returning False stops the fit. Ctrl-C stops it too.
    ``num_steps`` defaults to 1000, or to no limit with ``time_budget_minutes``."""
    if num_steps is not None:
        settings["num_steps"] = num_steps
    fitter = Fitter(graph, tracks, mix, sample_rate, parameters, **settings)
    fitter.run(callback)
    return fitter


def demo_song(sample_rate=24000, seconds=8.0, seed=1):
    """The embedded demo: synthesised tracks (K×2×L), their mix through a hidden console, the
    console and its hidden parameters, as a dict."""
    rate = _sample_rate(sample_rate, "demo_song", _grafx.FitError, "grafx.fit.options")
    return _grafx.demo_song(rate, seconds, seed)
