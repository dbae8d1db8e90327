"""Forward mode, Hessian-vector products, signal hooks and adjoint plans from Python."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import grafx
from conftest import float64_parameters, small_console


def _setup(chain="ecg", dry_wet=True):
    graph = small_console(chain=chain, n_tracks=3, n_groups=1, dry_wet=dry_wet)
    processors = grafx.make_processors(graph, 8000)
    plan = grafx.compute_render_plan(graph)
    parameters = float64_parameters(graph, processors, seed=2)
    sources = torch.randn(3, 2, 3000, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 0.3
    return graph, processors, plan, parameters, sources


def _random_like(parameters, seed):
    generator = torch.Generator().manual_seed(seed)
    return {t: {n: torch.randn(v.shape, dtype=v.dtype, generator=generator) for n, v in g.items()}
            for t, g in parameters.items()}


def _moved(parameters, direction, step):
    return {t: {n: v + step * direction.get(t, {}).get(n, torch.zeros_like(v))
                for n, v in g.items()} for t, g in parameters.items()}


def _flat(parameters):
    return [parameters[t][n] for t in sorted(parameters) for n in sorted(parameters[t])]


def test_jvp_equals_differences_and_double_backward():
    _, processors, plan, parameters, sources = _setup()
    direction = _random_like(parameters, 4)
    source_direction = torch.randn_like(sources)
    outputs, tangent = grafx.jvp(plan, processors, parameters, sources, direction, source_direction)
    assert torch.equal(outputs, grafx.render(plan, processors, parameters, sources))
    step = 1e-6
    numeric = (grafx.render(plan, processors, _moved(parameters, direction, step),
                            sources + step * source_direction)
               - grafx.render(plan, processors, _moved(parameters, direction, -step),
                              sources - step * source_direction)) / (2 * step)
    assert (tangent - numeric).abs().max() <= 1e-6 * numeric.abs().max()
    # PyTorch's double-backward J·v (torch.autograd.functional.jvp) agrees to rounding.
    keys = [(t, n) for t in sorted(parameters) for n in sorted(parameters[t])]

    def function(sources, *values):
        p = {}
        for (t, n), v in zip(keys, values):
            p.setdefault(t, {})[n] = v
        return grafx.render(plan, processors, p, sources)

    _, reference = torch.autograd.functional.jvp(
        function, (sources, *_flat(parameters)), (source_direction, *_flat(direction)))
    assert torch.allclose(tangent, reference, rtol=1e-9, atol=1e-12)


def test_pytorchs_own_forward_mode_passes_through_render():
    _, processors, plan, parameters, sources = _setup()
    direction = {"eq": {"log_magnitude": torch.randn_like(parameters["eq"]["log_magnitude"])}}
    _, expected = grafx.jvp(plan, processors, parameters, sources, direction)
    with fwAD.dual_level():
        duals = {t: dict(g) for t, g in parameters.items()}
        duals["eq"]["log_magnitude"] = fwAD.make_dual(parameters["eq"]["log_magnitude"],
                                                      direction["eq"]["log_magnitude"])
        tangent = fwAD.unpack_dual(grafx.render(plan, processors, duals, sources)).tangent
    assert torch.equal(tangent, expected)


def test_hvp_equals_double_backward_and_differences_of_gradients():
    _, processors, plan, parameters, sources = _setup(chain="eg")
    # The log-magnitude distance is |log Y − log T| per band and frame: its gradient jumps where a
    # term crosses zero, and differences of gradients across such a kink are meaningless. Half the
    # mix keeps every term near log 2. (With an unseeded random target this failed once in CI and
    # never in 400 targets here; such a kink is the likely cause.)
    target = 0.5 * grafx.render(plan, processors, parameters, sources).detach().squeeze(0)
    mix_loss = grafx.MixLoss(fft_sizes=(256, 512), sample_rate=8000, n_mels=32)

    def loss(p):
        return mix_loss(grafx.render(plan, processors, p, sources), target.unsqueeze(0))

    direction = _random_like(parameters, 5)
    value, gradient, hv = grafx.hvp(loss, parameters, direction)
    keys = [(t, n) for t in sorted(parameters) for n in sorted(parameters[t])]

    def function(*values):
        p = {}
        for (t, n), v in zip(keys, values):
            p.setdefault(t, {})[n] = v
        return loss(p)

    _, reference = torch.autograd.functional.hvp(function, tuple(_flat(parameters)),
                                                 tuple(_flat(direction)))
    for (t, n), expected in zip(keys, reference):
        assert torch.allclose(hv[t][n], expected, rtol=1e-8, atol=1e-12), f"{t}.{n}"
    step = 1e-5
    _, plus, _ = grafx.hvp(loss, _moved(parameters, direction, step), {})
    _, minus, _ = grafx.hvp(loss, _moved(parameters, direction, -step), {})
    for t, n in keys:
        numeric = (plus[t][n] - minus[t][n]) / (2 * step)
        assert (hv[t][n] - numeric).abs().max() <= 1e-4 * (1 + numeric.abs().max()), f"{t}.{n}"
    assert value.item() == pytest.approx(loss(parameters).item(), rel=1e-12)


def test_directions_that_do_not_fit_are_refused():
    _, processors, plan, parameters, sources = _setup()
    with pytest.raises(KeyError, match="bogus"):
        grafx.jvp(plan, processors, parameters, sources, {"bogus": {}})
    with pytest.raises(ValueError, match="shaped and typed"):
        grafx.jvp(plan, processors, parameters, sources,
                  {"eq": {"log_magnitude": torch.zeros(1, dtype=torch.float64)}})
    with pytest.raises(ValueError, match="scalar"):
        grafx.hvp(lambda p: torch.zeros(2, dtype=torch.float64), parameters, {})


def test_signal_hooks_stop_scale_and_call_back():
    graph, processors, plan, parameters, sources = _setup(chain="g", dry_wet=False)
    tracks = [n for n in graph.nodes() if graph.node(n)["type"] == "gain_pan"]

    def gradients(**hooks):
        p = {t: {n: v.detach().clone().requires_grad_(True) for n, v in g.items()}
             for t, g in parameters.items()}
        grafx.render(plan, processors, p, sources, **hooks).pow(2).sum().backward()
        return p["gain_pan"]["log_gain"].grad

    plain = gradients()
    # Stopping a track's output leaves its gain without gradient, the others unchanged.
    stopped = gradients(node_hooks={tracks[0]: "stop"})
    assert stopped[0].abs().max() == 0 and torch.equal(stopped[1:], plain[1:])
    scaled = gradients(node_hooks={tracks[1]: ("scale", 2.0)})
    assert torch.allclose(scaled[1], 2 * plain[1], rtol=1e-12)
    seen = []
    called = gradients(node_hooks={tracks[2]: lambda c: (seen.append(tuple(c.shape)), c)[1]})
    assert seen == [(1, 2, 3000)] and torch.equal(called, plain)
    with pytest.raises(TypeError, match="callable"):
        gradients(node_hooks={tracks[0]: 3})
    with pytest.raises(grafx.Error) as error:
        gradients(node_hooks={999: "stop"})
    assert error.value.code == "grafx.render.hooks"


def test_adjoint_plan_prints_the_reverse_program():
    _, processors, plan, _, _ = _setup()
    adjoint = grafx.adjoint_plan(plan, processors, frozen_types=["eq"], recompute=["compressor"])
    text = str(adjoint)
    assert text.startswith(f"AdjointPlan: {adjoint.num_steps} of ")
    assert "Vector-Jacobian product: compressor on 3 rows, forward pass recomputed" in text
    assert '"format": "grafx.adjoint_plan"' in adjoint.to_json()
    # Without source gradients, the frozen first EQs lead to nothing: skipped.
    shorter = grafx.adjoint_plan(plan, processors, frozen_types=["eq"], source_gradients=False)
    assert len(shorter.skipped) == 2


def test_fit_with_curvature_preconditioning():
    graph = small_console(chain="g", n_tracks=2, n_groups=0)
    tracks = torch.randn(2, 2, 16000) * 0.2
    mix = tracks.sum(0) * 0.5
    fitter = grafx.Fitter(graph, tracks, mix, 8000, num_steps=5, crop_seconds=1.0,
                          skip_seconds=0.1, hessian_preconditioning=True)
    fitter.run()
    assert len(fitter.history) == 5 and not any(r["skipped"] for r in fitter.history)


def test_write_plot_draws_and_refuses_to_overwrite(tmp_path):
    path = str(tmp_path / "curve.svg")
    grafx.write_plot(path, [("loss", [0, 1, 2], [3.0, 2.0, 1.5])], title="t", x_label="s")
    text = open(path).read()
    assert text.startswith("<svg") or "<svg" in text[:200]
    assert "loss" in text
    with pytest.raises(grafx.Error):
        grafx.write_plot(path, [("loss", [0, 1], [1.0, 2.0])])
    with pytest.raises(grafx.Error):
        grafx.write_plot(str(tmp_path / "bad.svg"), [("x", [0, 1], [1.0])])
