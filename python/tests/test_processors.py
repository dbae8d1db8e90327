"""Each processor alone as a torch.nn.Module."""

import pytest
import torch

import grafx
from grafx import processors as P


def registry_names():
    return [d["name"] for d in grafx.processor_registry()]


@pytest.mark.parametrize("name", registry_names())
def test_module_equals_a_one_node_graph(name):
    cls = getattr(P, P._class_name(name))
    module = cls(sample_rate=16000)
    assert module.type_name == name
    params = module.create_parameters(2, seed=1)
    assert {k: v.shape[1:] for k, v in params.items()} == module.parameter_size()
    inputs = [0.5 * torch.randn(2, 2, 3000) for _ in module.inlets]
    outputs = module(*inputs, **params)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    assert len(outputs) == len(module.outlets)

    # The same node rendered by a graph, one node per row of the batch.
    graph = grafx.Graph()
    sources = [[graph.add("in") for _ in range(2)] for _ in module.inlets]
    nodes = [graph.add(name) for _ in range(2)]
    outs = [[graph.add("out") for _ in range(2)] for _ in module.outlets]
    for inlet, row in zip(module.inlets, sources):
        for source, node in zip(row, nodes):
            graph.connect(source, node, inlet=inlet)
    for outlet, row in zip(module.outlets, outs):
        for node, out in zip(nodes, row):
            graph.connect(node, out, outlet=outlet)
    processors = grafx.make_processors(graph, 16000)
    rendered = grafx.render(grafx.compute_render_plan(graph), processors, {name: params},
                            torch.cat(inputs))
    expected = torch.cat([o.expand(-1, rendered.shape[1], -1) for o in outputs])
    torch.testing.assert_close(rendered, expected, rtol=1e-4, atol=1e-5)


def test_gradcheck_of_a_module_float64():
    eq = P.ParametricEq(sample_rate=8000)
    params = {k: (v + 0.2).double().requires_grad_() for k, v in eq.create_parameters(1).items()}
    x = torch.randn(1, 2, 128, dtype=torch.float64, requires_grad=True)
    names = sorted(params)
    assert torch.autograd.gradcheck(
        lambda x, *v: eq(x, **dict(zip(names, v))), (x, *[params[n] for n in names]),
        eps=1e-6, atol=1e-6, rtol=1e-5)


def test_options_grafx_aliases_and_aux_losses():
    hard = P.Compressor(sample_rate=44100, knee="hard")
    assert "knee='hard'" in repr(hard)
    assert P.ApproxCompressor is P.Compressor and P.ZeroPhaseFIREqualizer is P.Eq
    with pytest.raises(grafx.ProcessorError) as error:
        P.Compressor(knee="soft")
    assert error.value.code == "grafx.processor.options"
    delay = P.Delay(sample_rate=16000)
    _, aux = delay.forward_with_aux(torch.randn(1, 2, 2000), **delay.create_parameters(1))
    assert "radii" in aux and aux["radii"].shape == (1,)


def test_physical_units_round_trip():
    compressor = P.Compressor(sample_rate=44100)
    raw = compressor.to_raw(threshold_db=torch.tensor([[-20.0]]))
    physical = compressor.to_physical(**raw)
    torch.testing.assert_close(physical["threshold_db"], torch.tensor([[-20.0]]))
    with pytest.raises(grafx.ProcessorError) as error:
        compressor.to_raw(treshold_db=-20.0)
    assert "threshold_db" in error.value.message
    with pytest.raises(grafx.ProcessorError) as error:  # below its range: no NaN raw value
        compressor.to_raw(ratio=torch.tensor([[0.5]]))
    assert error.value.message == "compressor: expected ratio from 1 to inf (:1), but got 0.5"
    specs = {s["name"]: s for s in compressor.parameter_specs()}
    assert specs["log_threshold"]["unit"] == "dB"


def test_bad_arguments_raise_with_codes():
    gain_pan = P.GainPan()
    with pytest.raises(grafx.ProcessorError) as error:
        gain_pan(torch.randn(2, 2, 100), log_gain=torch.zeros(3, 2))
    assert error.value.code == "grafx.processor.parameters"
    with pytest.raises(grafx.ProcessorError) as error:
        gain_pan(torch.randn(2, 2, 100), torch.randn(2, 2, 100), log_gain=torch.zeros(2, 2))
    assert error.value.code == "grafx.processor.inputs"
