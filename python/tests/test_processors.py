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


# Parameters by physical name (issue 35): the values `grafx process --set` takes.

def initial_raw(module, num_nodes=1, dtype=torch.float32):
    """Every raw parameter at its spec's initial mean, built here from the specs alone."""
    return {s["name"]: torch.full((num_nodes, *s["shape"]), s["init_mean"], dtype=dtype)
            for s in module.parameter_specs()}


def test_physical_names_as_in_the_issue(tmp_path, cli):
    import math
    import subprocess

    torch.manual_seed(35)
    x = 0.5 * torch.randn(1, 2, 22050)
    y = P.Compressor(knee="hard")(x, threshold_db=-30)  # the issue's line

    # The raw path: initial values, log_threshold by the header's formula (dB / (10/ln 10) + 6).
    hard = P.Compressor(knee="hard")
    raw = initial_raw(hard)
    raw["log_threshold"] = torch.tensor([[-30 * math.log(10) / 10 + 6]])
    torch.testing.assert_close(hard.to_physical(**raw)["threshold_db"], torch.tensor([[-30.0]]))
    torch.testing.assert_close(y, hard(x, **raw), rtol=0, atol=1e-6)
    for name, value in hard.raw_parameters(threshold_db=-30).items():
        torch.testing.assert_close(value, raw[name])

    # The CLI on the same audio: `grafx process` maps --set through the same library function.
    grafx.save_audio(str(tmp_path / "in.wav"), x[0], 44100)
    result = subprocess.run([cli, "process", "compressor", "-i", str(tmp_path / "in.wav"), "-o",
                             str(tmp_path / "out.wav"), "--set", "threshold_db=-30", "--option",
                             "knee=hard"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    processed, rate = grafx.load_audio(str(tmp_path / "out.wav"))
    assert rate == 44100
    torch.testing.assert_close(processed, y[0], rtol=0, atol=1e-6)
    assert (processed - x[0]).abs().max() > 1e-2  # it did compress


@pytest.mark.parametrize("name", registry_names())
def test_physical_round_trip_of_every_processor(name):
    module = getattr(P, P._class_name(name))(sample_rate=16000)
    raw = module.create_parameters(2, dtype=torch.float64, seed=3)
    physical = {k: v.detach().clone().requires_grad_()
                for k, v in module.to_physical(**raw).items()}
    values, given = {}, []
    for spec in module.parameter_specs():
        if spec["settable"] and spec["physical_name"] != spec["name"]:
            values[spec["physical_name"]] = physical[spec["physical_name"]]
            given.append(values[spec["physical_name"]])
        else:
            values[spec["name"]] = raw[spec["name"]]
    generator = torch.Generator().manual_seed(3)
    inputs = [0.5 * torch.randn(2, 2, 2000, generator=generator, dtype=torch.float64)
              for _ in module.inlets]
    as_tuple = lambda o: o if isinstance(o, tuple) else (o,)
    expected = as_tuple(module(*inputs, **raw))
    got = as_tuple(module(*inputs, **values))
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-7, atol=1e-9)
    # Physical tensors that require grad stay differentiable.
    if given:
        sum(o.square().sum() for o in got).backward()
        for value in given:
            assert value.grad is not None and value.grad.isfinite().all()


def test_gradients_of_physical_values_against_finite_differences_float64():
    compressor = P.Compressor(sample_rate=8000)
    x = 0.5 * torch.randn(2, 2, 600, generator=torch.Generator().manual_seed(4),
                          dtype=torch.float64)
    threshold = torch.tensor(-20.0, dtype=torch.float64, requires_grad=True)  # fills both rows
    ratio = torch.tensor([[3.0], [5.0]], dtype=torch.float64, requires_grad=True)
    smoothing = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)  # per node, shared
    knee = torch.tensor([[6.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t, r, s, k: compressor(x, threshold_db=t, ratio=r, smoothing_ms=s, knee_db=k),
        (threshold, ratio, smoothing, knee), eps=1e-6, atol=1e-7, rtol=1e-5)
    compressor(x, threshold_db=threshold, ratio=ratio).square().sum().backward()
    assert threshold.grad.abs() > 1e-3 and (ratio.grad.abs() > 1e-3).all()  # it compresses


def test_values_broadcast_to_the_parameter_and_the_batch():
    gain_pan = P.GainPan()
    x = torch.randn(3, 2, 100)
    y = gain_pan(x, gain_db=-6)  # one number fills both channels of every row
    torch.testing.assert_close(y, x * 10 ** (-6 / 20))
    y = gain_pan(x, gain_db=[0.0, -20.0])  # per channel, shared by the rows
    torch.testing.assert_close(y, x * torch.tensor([1.0, 0.1]).view(1, 2, 1))
    y = gain_pan(x, gain_db=[[0.0], [-20.0], [-40.0]])  # per row
    torch.testing.assert_close(y, x * torch.tensor([1.0, 0.1, 0.01]).view(3, 1, 1))
    torch.testing.assert_close(gain_pan(x), x)  # initial values: 0 dB


def test_hostile_parameter_values_raise_grafx_errors():
    compressor = P.Compressor(knee="hard")
    x = torch.randn(2, 2, 500)
    cases = [
        ({"threshold_db": -30, "log_threshold": torch.zeros(2, 1)},
         ["log_threshold", "threshold_db", "give one of them"]),
        ({"treshold_db": -30}, ['no parameter "treshold_db"', "threshold_db (dB)",
                                "ratio (:1)", "log_threshold"]),
        ({"ratio": 0.5}, ["expected ratio from 1 to inf (:1), but got 0.5"]),
        ({"threshold_db": float("nan")}, ["expected finite values of threshold_db, but got nan"]),
        ({"ratio": [[4.0], [float("inf")]]}, ["expected finite values of ratio, but got inf"]),
        ({"log_ratio": torch.full((2, 1), -float("inf"))}, ["log_ratio", "-inf"]),
        ({"threshold_db": [-30.0, -20.0, -10.0]},
         ["expected threshold_db of shape [2, 1] (2 nodes)", "but got [3]"]),
        ({"log_threshold": torch.zeros(3, 1)}, ["log_threshold of shape [2, 1]", "[3, 1]"]),
        ({"threshold_db": torch.zeros(2, 1, dtype=torch.complex64)}, ["real values"]),
    ]
    for parameters, words in cases:
        with pytest.raises(grafx.ProcessorError) as error:
            compressor(x, **parameters)
        assert error.value.code == "grafx.processor.parameters"
        assert error.value.message.startswith("compressor"), error.value.message
        for word in words:
            assert word in error.value.message, (parameters, error.value.message)
    with pytest.raises(grafx.ProcessorError) as error:  # a physical value with no to_raw
        P.FirFilter()(torch.randn(1, 1, 100), taps=torch.zeros(1, 1023))
    assert "taps is set by its raw value only: use fir=" in error.value.message
    with pytest.raises(TypeError, match="threshold_db"):
        compressor(x, threshold_db="-30")


def test_help_lists_raw_and_physical_names():
    doc = P.Compressor.__doc__
    for words in ["log_threshold", "threshold_db", "log_ratio", "ratio", ":1", "1 to inf",
                  "physical name", "default"]:
        assert words in doc, words
    assert "taps (raw only)" in P.FirFilter.__doc__
