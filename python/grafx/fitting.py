"""Fitting a graph to a target mix by gradient descent (the pruning paper's recipe)."""

from . import _grafx


def _options(**settings):
    options = _grafx.FitOptions()
    if "time_budget_minutes" in settings:
        options.time_budget_seconds = 60.0 * settings.pop("time_budget_minutes")
        if "num_steps" not in settings:
            settings["num_steps"] = 1 << 62  # the budget alone ends the fit
    for name, value in settings.items():
        if name.startswith("_") or not hasattr(options, name):
            known = sorted(n for n in dir(options) if not n.startswith("_"))
            raise TypeError(f"fit: unknown setting {name!r}; settings: {', '.join(known)}, "
                            "time_budget_minutes")
        setattr(options, name, value)
    return options


class Fitter(_grafx.Fitter):
    """A fit in progress: ``run(callback)``, ``step()``, ``parameters``, ``history``,
    ``render_mix()``, ``evaluate()``, checkpoints.

    tracks  K×C×L, one per ``in`` node in id order; mix  C×L; at ``sample_rate``.
    Settings (FitOptions): num_steps, lr, weight_decay, warmup_steps, final_lr_ratio,
    crop_seconds, crops_per_step, skip_seconds, seed, reset_optimizer_every, max_gradient_norm,
    max_non_finite_steps, regularizer_weights, initialise_starts, initialise_gains,
    initialise_eq, learning_rates, stages, adapt_threads, schedule_method,
    time_budget_seconds or time_budget_minutes.
    """

    def __init__(self, graph, tracks, mix, sample_rate, parameters=None, **settings):
        super().__init__(graph, tracks, mix, int(sample_rate), _options(**settings),
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
    return _grafx.demo_song(int(sample_rate), seconds, seed)
