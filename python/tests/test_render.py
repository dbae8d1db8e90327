"""Rendering from Python: autograd, gradcheck, equivalences, the CLI's render, hooks."""

import math
import subprocess

import pytest
import torch

import grafx
from conftest import float64_parameters, small_console


def test_gradcheck_parameters_and_sources_float64():
    graph = small_console(chain="eg", n_tracks=2, n_groups=1, dry_wet=True)
    processors = grafx.make_processors(graph, 8000)
    plan = grafx.compute_render_plan(graph)
    parameters = float64_parameters(graph, processors)
    names = [(t, n) for t in sorted(parameters) for n in sorted(parameters[t])]
    sources = torch.randn(2, 2, 256, dtype=torch.float64, requires_grad=True)

    def function(sources, *values):
        p = {}
        for (t, n), v in zip(names, values):
            p.setdefault(t, {})[n] = v
        return grafx.render(plan, processors, p, sources)

    inputs = (sources, *[parameters[t][n] for t, n in names])
    assert torch.autograd.gradcheck(function, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_batched_equals_naive_equals_one_by_one_with_gradients():
    graph = small_console(chain="ecg", n_tracks=4, n_groups=2)
    processors = grafx.make_processors(graph, 16000)
    sources = torch.randn(4, 2, 4000, dtype=torch.float64)
    results = []
    for method in ("optimal", "one-by-one", None):
        parameters = float64_parameters(graph, processors, seed=1, scale=0.2)
        if method is None:
            outputs = grafx.render_naive(graph, processors, parameters, sources)
        else:
            plan = grafx.compute_render_plan(graph, method=method)
            outputs = grafx.render(plan, processors, parameters, sources)
        outputs.pow(2).mean().backward()
        grads = {(t, n): v.grad for t, g in parameters.items() for n, v in g.items()}
        results.append((outputs.detach(), grads))
    for outputs, grads in results[1:]:
        torch.testing.assert_close(outputs, results[0][0], rtol=1e-9, atol=1e-12)
        for key, grad in grads.items():
            torch.testing.assert_close(grad, results[0][1][key], rtol=1e-8, atol=1e-12)


def test_gain_pan_renders_its_analytic_gain(chain_graph):
    graph = grafx.Graph()
    gain, source, out = graph.add("gain_pan"), graph.add("in"), graph.add("out")
    graph.connect(source, gain)
    graph.connect(gain, out)
    processors = grafx.make_processors(graph, 44100)
    log_gain = torch.tensor([[-0.5, 0.25]], requires_grad=True)
    x = torch.randn(1, 2, 1000)
    y = grafx.render(grafx.compute_render_plan(graph), processors,
                     {"gain_pan": {"log_gain": log_gain}}, x)
    torch.testing.assert_close(y[0], x[0] * log_gain.detach().exp().reshape(2, 1))
    y.sum().backward()
    torch.testing.assert_close(log_gain.grad[0], (x[0].sum(-1) * log_gain.detach()[0].exp()))


def test_source_batches_and_per_item_parameters(chain_graph):
    processors = grafx.make_processors(chain_graph, 22050)
    plan = grafx.compute_render_plan(chain_graph)
    parameters = grafx.create_parameters(chain_graph, processors, requires_grad=False)
    sources = torch.randn(3, 1, 2, 2000)
    batched = grafx.render(plan, processors, parameters, sources)
    assert batched.shape == (3, 1, 2, 2000)
    for b in range(3):
        torch.testing.assert_close(batched[b], grafx.render(plan, processors, parameters,
                                                            sources[b]), rtol=1e-5, atol=1e-6)


def test_equals_the_cli_render_of_the_same_files(chain_graph, cli, tmp_path):
    graph_file, params_file = tmp_path / "g.json", tmp_path / "p.safetensors"
    source_file, output_file = tmp_path / "in.wav", tmp_path / "out.wav"
    chain_graph.save(str(graph_file))
    processors = grafx.make_processors(chain_graph, 44100)
    parameters = grafx.musical_parameters(chain_graph, processors, seed=4)
    grafx.save_parameters(str(params_file), chain_graph, parameters, sample_rate=44100)
    sources = 0.3 * torch.randn(1, 2, 44100)
    grafx.save_audio(str(source_file), sources[0], 44100)
    subprocess.run([cli, "render", str(graph_file), "--sources", str(source_file), "--params",
                    str(params_file), "-o", str(output_file)], check=True, capture_output=True)
    from_cli, rate = grafx.load_audio(str(output_file))
    loaded, file_rate = grafx.load_parameters(str(params_file), chain_graph)
    assert rate == 44100 and file_rate == 44100
    ours = grafx.render(grafx.compute_render_plan(chain_graph), processors, loaded, sources)
    torch.testing.assert_close(ours[0], from_cli, rtol=1e-5, atol=1e-6)


def test_module_parameters_train_with_a_torch_optimizer(chain_graph):
    processors = grafx.make_processors(chain_graph, 16000)
    plan = grafx.compute_render_plan(chain_graph)
    module = grafx.GraphParameters(grafx.create_parameters(chain_graph, processors))
    optimizer = torch.optim.Adam(module.parameters(), lr=0.05)
    x = torch.randn(1, 2, 4000)
    target = 0.25 * x
    losses = []
    for _ in range(30):
        loss = (grafx.render(plan, processors, module, x) - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    assert set(module.state_dict()) >= {"types.gain_pan.log_gain"}


def test_observer_frozen_types_and_gradient_hooks(chain_graph):
    processors = grafx.make_processors(chain_graph, 16000)
    plan = grafx.compute_render_plan(chain_graph)
    parameters = grafx.create_parameters(chain_graph, processors)
    seen = []
    outputs = grafx.render(plan, processors, parameters, torch.randn(1, 2, 2000),
                           frozen_types=["eq"], observer=lambda step: seen.append(step["nodes"]),
                           gradient_hooks={"gain_pan": lambda name, g: 0 * g + 7})
    outputs.sum().backward()
    assert seen == [[3], [0], [1], [2], [4]]
    assert all(p.grad is None for p in parameters["eq"].values())
    assert torch.all(parameters["gain_pan"]["log_gain"].grad == 7)


def test_bad_inputs_raise_with_codes(chain_graph):
    processors = grafx.make_processors(chain_graph, 16000)
    plan = grafx.compute_render_plan(chain_graph)
    parameters = grafx.create_parameters(chain_graph, processors)
    with pytest.raises(grafx.RenderError) as error:
        grafx.render(plan, processors, parameters, torch.randn(2, 2, 100))
    assert error.value.code.startswith("grafx.render.")
    sources = torch.randn(1, 2, 100)
    sources[0, 0, 5] = float("nan")
    with pytest.raises(grafx.RenderError) as error:
        grafx.render(plan, processors, parameters, sources)
    assert error.value.code == "grafx.render.non_finite"
    del parameters["eq"]
    with pytest.raises(grafx.RenderError) as error:
        grafx.render(plan, processors, parameters, torch.randn(1, 2, 100))
    assert "eq" in str(error.value)
    with pytest.raises(grafx.RenderError):
        grafx.render(plan, processors, {"eq": {"x": "not a tensor"}}, torch.randn(1, 2, 100))
    with pytest.raises(TypeError):
        grafx.render(plan, processors, parameters, torch.randn(1, 2, 100),
                     gradient_hooks={"eq": 3})


def test_chunks_equal_the_whole_render():
    graph = small_console(chain="eg", n_tracks=2, n_groups=1)
    processors = grafx.make_processors(graph, 16000)
    plan = grafx.compute_render_plan(graph)
    parameters = grafx.musical_parameters(graph, processors, seed=2)
    sources = torch.randn(2, 2, 20000)
    with torch.no_grad():
        whole = grafx.render(plan, processors, parameters, sources)
    chunks = grafx.render_in_chunks(plan, processors, parameters, sources, chunk_samples=6000)
    torch.testing.assert_close(chunks, whole, rtol=1e-4, atol=1e-5)


def test_gradients_equal_a_backward_driven_from_cpp():
    """The same render and loss, backward run by Python's autograd call and inside C++."""
    graph = small_console(chain="ecg", n_tracks=3, n_groups=2, dry_wet=True)
    processors = grafx.make_processors(graph, 16000)
    plan = grafx.compute_render_plan(graph)
    sources = torch.randn(3, 2, 3000)
    from_python = grafx.create_parameters(graph, processors, seed=5)
    from_cpp = grafx.create_parameters(graph, processors, seed=5)
    grafx.render(plan, processors, from_python, sources).pow(2).mean().backward()
    grafx._grafx._time_forward_backward(plan, processors, from_cpp, sources, 1, False)
    for type_name, group in from_python.items():
        for name, tensor in group.items():
            torch.testing.assert_close(tensor.grad, from_cpp[type_name][name].grad, rtol=0, atol=0)


def test_module_dict_of_parameter_dicts_renders():
    graph = small_console(chain="g", n_tracks=2, n_groups=1)
    processors = grafx.make_processors(graph, 16000)
    plain = grafx.create_parameters(graph, processors)
    modules = torch.nn.ModuleDict({t: torch.nn.ParameterDict(
        {n: torch.nn.Parameter(v.detach().clone()) for n, v in g.items()})
        for t, g in plain.items()})
    sources = torch.randn(2, 2, 500)
    plan = grafx.compute_render_plan(graph)
    torch.testing.assert_close(grafx.render(plan, processors, modules, sources),
                               grafx.render(plan, processors, plain, sources))


def test_settings_out_of_range_raise_with_codes():
    graph = small_console(chain="eg", n_tracks=2, n_groups=1)
    with pytest.raises(grafx.ProcessorError) as error:
        grafx.make_processors(graph, 0)
    assert error.value.code == "grafx.processor.config"
    with pytest.raises(grafx.ScheduleError) as error:
        grafx.compute_render_plan(graph, time_budget_s=float("nan"))
    assert error.value.code == "grafx.schedule.invalid_options"
    with pytest.raises(TypeError):
        grafx.create_parameters(graph, grafx.make_processors(graph, 16000), dtype="float64")


def test_automated_gain_follows_its_curve_and_gets_gradients():
    graph = grafx.Graph()
    source, gain, out = graph.add("in"), graph.add("gain_pan"), graph.add("out")
    graph.connect(source, gain)
    graph.connect(gain, out)
    graph.automation = (10.0, 11)  # one second of points, every 100 ms
    graph.set_automated(gain, "log_gain")
    assert graph.node(gain)["automated"] == ["log_gain"]
    processors = grafx.make_processors(graph, 8000)
    parameters = grafx.create_parameters(graph, processors)
    assert parameters["gain_pan"]["log_gain@curve"].shape == (1, 11, 2)
    db = torch.linspace(0, -20, 11, dtype=torch.float64)  # a fade, linear in dB
    curve = (db * math.log(10) / 20).reshape(1, 11, 1).expand(1, 11, 2).clone().requires_grad_()
    x = torch.ones(1, 2, 8000, dtype=torch.float64)
    y = grafx.render(grafx.compute_render_plan(graph), processors,
                     {"gain_pan": {"log_gain": torch.zeros(1, 2, dtype=torch.float64),
                                   "log_gain@curve": curve}}, x)
    t = torch.arange(8000, dtype=torch.float64) / 8000
    torch.testing.assert_close(y[0, 0], 10 ** (-20 * t / 20))
    y.sum().backward()
    assert curve.grad.abs().sum() > 0
    graph.set_automated(gain, "log_ratio")
    with pytest.raises(grafx.RenderError, match="is not one of its parameters; automatable: log_gain"):
        grafx.create_parameters(graph, processors)
