"""device= and dtype= on make_processors, create_parameters and the losses (issue 30, item 6).

Run on the CPU everywhere, on "meta" tensors for a second device, and on CUDA where there is one.
"""

import pickle

import pytest
import torch

import grafx

DEVICES = ["cpu", "meta"] + (["cuda"] if torch.cuda.is_available() else [])


def graph():
    return grafx.mixing_console(n_tracks=2, chain="eg")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_parameters_are_made_where_the_processors_say(device, dtype):
    g = graph()
    processors = grafx.make_processors(g, 44100, device=device, dtype=dtype)
    assert processors.device == torch.device(device) and processors.dtype == dtype
    parameters = grafx.create_parameters(g, processors, seed=5)
    reference = grafx.create_parameters(g, grafx.make_processors(g, 44100), seed=5, dtype=dtype)
    for t, group in parameters.items():
        for n, value in group.items():
            assert value.device.type == torch.device(device).type and value.dtype == dtype
            assert value.is_leaf and value.requires_grad
            if device != "meta":  # the same draws on every device
                assert torch.equal(value.cpu(), reference[t][n].detach())
    # Explicit arguments win; the set's device and dtype pickle with it.
    assert grafx.create_parameters(g, processors, device="cpu",
                                   dtype=torch.float64)["eq"]["log_magnitude"].device.type == "cpu"
    again = pickle.loads(pickle.dumps(processors))
    assert again.device == processors.device and again.dtype == processors.dtype


def test_python_modules_move_with_the_set():
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("factor", torch.ones(1))

        def parameter_size(self):
            return {}

        def forward(self, x):
            return x * self.factor

    g = grafx.Graph(["scale"])
    module = Scale()
    grafx.make_processors(g, 44100, processors={"scale": module}, dtype=torch.float64)
    assert module.factor.dtype == torch.float64
    with pytest.raises(TypeError) as error:
        grafx.make_processors(g, 44100, dtype="float64")
    assert error.value.code == "grafx.render.parameters"


@pytest.mark.parametrize("make", [lambda **k: grafx.MixLoss(sample_rate=16000, **k),
                                  lambda **k: grafx.MultiResolutionSTFTLoss(**k)])
def test_losses_refuse_inputs_elsewhere_by_name(make):
    x = torch.randn(1, 2, 16000)
    assert torch.equal(make(device="cpu", dtype=torch.float32)(x, x), make()(x, x))
    with pytest.raises(grafx.LossError) as error:
        make(device="meta")(x, x)
    assert error.value.code == "grafx.loss.dtype"
    assert "made for meta, but the estimate is on cpu" in error.value.message
    with pytest.raises(grafx.LossError) as error:
        make(dtype=torch.float64)(x, x)
    assert "torch.float64" in error.value.message
    # Tensors that disagree with each other are named with their devices.
    with pytest.raises(grafx.LossError) as error:
        make()(x, x.to("meta"))
    assert "cpu" in error.value.message and "meta" in error.value.message


def test_render_names_the_devices_that_disagree():
    g = graph()
    processors = grafx.make_processors(g, 44100)
    parameters = grafx.create_parameters(g, processors, device="meta")
    with pytest.raises(grafx.RenderError) as error:
        grafx.render(grafx.compute_render_plan(g), processors, parameters, torch.randn(2, 2, 100))
    assert error.value.code == "grafx.render.parameters"
    assert "expected device cpu" in error.value.message and "meta" in error.value.message


def test_unknown_devices_are_refused_with_a_code():
    g = graph()
    for call, code in [
            (lambda: grafx.make_processors(g, 44100, device="xyz"), "grafx.render.parameters"),
            (lambda: grafx.create_parameters(g, grafx.make_processors(g, 44100), device="xyz"),
             "grafx.render.parameters"),
            (lambda: grafx.MixLoss(device="xyz"), "grafx.loss.options")]:
        with pytest.raises(ValueError) as error:
            call()
        assert error.value.code == code and "'xyz'" in error.value.message
