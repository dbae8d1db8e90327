"""Python modules as processors of a graph: rendered batched next to the C++ processors, with
gradients, and GRAFX's processors dict (type -> module) taken by render.

References are independent: each node computed on its own with the modules and grafx's own
processor modules, by hand, in float64.
"""

import copy
import pickle

import pytest
import torch

import grafx
from grafx import processors as P

RATE = 16000


class Tilt(torch.nn.Module):
    """GRAFX's interface: a gain per channel and a one-tap smear, N×C×L -> N×C×L."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def parameter_size(self):
        return {"log_gain": 2, "smear": (1,)}

    def forward(self, x, log_gain, smear):
        self.calls.append(x.shape[0])
        y = x * torch.exp(log_gain).unsqueeze(-1)
        previous = torch.nn.functional.pad(y, (1, 0))[..., :-1]
        return y + torch.tanh(smear).unsqueeze(-1) * previous, {"energy": y.square().mean((1, 2))}


class Split(torch.nn.Module):
    """Two outlets: the input and its square, no parameters."""

    def parameter_size(self):
        return {}

    def forward(self, x):
        return x, x.square()


class Wrong(torch.nn.Module):
    def parameter_size(self):
        return {}

    def forward(self, x):
        return x[..., :-1]


class ZeroPhaseFIREqualizer(torch.nn.Module):
    """Named as GRAFX's class: mapped to grafx's own eq."""

    def parameter_size(self):
        return {"log_magnitude": 1024}


def console():
    """Three tracks, each tilt -> eq, mixed; the tilt is a Python type."""
    graph = grafx.Graph(["tilt"])
    out, mix = graph.add("out"), graph.add("mix")
    graph.connect(mix, out)
    for _ in range(3):
        source, tilt, eq = graph.add("in"), graph.add("tilt"), graph.add("eq")
        graph.connect(source, tilt)
        graph.connect(tilt, eq)
        graph.connect(eq, mix)
    return graph


def leaves(parameters):
    return {t: {n: v.detach().clone().requires_grad_() for n, v in g.items()}
            for t, g in parameters.items()}


def test_a_python_module_renders_batched_with_gradients():
    graph, tilt = console(), Tilt()
    processors = grafx.make_processors(graph, RATE, processors={"tilt": tilt})
    assert processors.module("tilt") is tilt and processors.module("eq") is None
    parameters = leaves(grafx.create_parameters(graph, processors, seed=3))
    assert parameters["tilt"]["log_gain"].shape == (3, 2)
    with torch.no_grad():
        parameters["tilt"]["smear"].uniform_(-1, 1)
        parameters["tilt"]["log_gain"].uniform_(-0.5, 0.5)
    x = torch.randn(3, 2, 2000, generator=torch.Generator().manual_seed(0))
    plan = grafx.compute_render_plan(graph)
    y, aux = grafx.render(plan, processors, parameters, x, return_aux=True)
    assert tilt.calls == [3], "the three tilts are one call"
    assert aux["tilt"]["energy"].shape == (3,)
    y.square().mean().backward()

    # By hand, node by node in float64: the module's math, and grafx's eq module on each row.
    eq = P.Eq(sample_rate=RATE).double()
    ref = leaves({t: {n: v.detach().double() for n, v in g.items()} for t, g in parameters.items()})
    total = 0
    for k in range(3):  # the k-th in node feeds the k-th tilt and eq (ids ascending)
        row = {n: v[k:k + 1] for n, v in ref["tilt"].items()}
        u, _ = Tilt()(x[k:k + 1].double(), **row)
        total = total + eq(u, **{n: v[k:k + 1] for n, v in ref["eq"].items()})
    assert torch.allclose(y.double(), total, atol=1e-5)
    total.square().mean().backward()
    for t in ("tilt", "eq"):
        for n in parameters[t]:
            assert torch.allclose(parameters[t][n].grad.double(), ref[t][n].grad,
                                  rtol=1e-3, atol=1e-7), (t, n)


def test_render_takes_grafx_processors_dict():
    """GRAFX's processors dict: a Python module, a GRAFX class grafx implements (its eq), and
    grafx's own module with options."""
    graph = grafx.Graph(["tilt", "filter", "glue"])
    source, tilt, filt, glue, out = (graph.add(t) for t in ("in", "tilt", "filter", "glue", "out"))
    for a, b in [(source, tilt), (tilt, filt), (filt, glue), (glue, out)]:
        graph.connect(a, b)
    modules = {"tilt": Tilt(), "filter": ZeroPhaseFIREqualizer(),
               "glue": P.Compressor(sample_rate=RATE, knee="hard")}
    plan = grafx.compute_render_plan(graph)
    processors = grafx.make_processors(graph, RATE, processors=modules)
    parameters = grafx.create_parameters(graph, processors, seed=1)
    x = 0.3 * torch.randn(1, 2, 3000, generator=torch.Generator().manual_seed(1))
    y = grafx.render(plan, modules, parameters, x, sample_rate=RATE)
    assert torch.equal(y, grafx.render(plan, processors, parameters, x))
    # The same as grafx's own types in their place.
    u, _ = Tilt()(x, **parameters["tilt"])
    u = P.Eq(sample_rate=RATE)(u, **parameters["filter"])
    u = P.Compressor(sample_rate=RATE, knee="hard")(u, **parameters["glue"])
    assert torch.allclose(y[0], u[0], atol=1e-6)
    assert grafx.render(plan, modules, parameters, x, sample_rate=RATE) is not None
    assert len(modules["tilt"].calls) == 3


def test_several_outlets_and_chunked_renders():
    graph = grafx.Graph({"split": {"inlets": ["main"], "outlets": ["dry", "squared"]}})
    source, split, eq, mix, out = (graph.add(t) for t in ("in", "split", "eq", "mix", "out"))
    graph.connect(source, split)
    graph.connect(split, eq, outlet="squared")
    graph.connect(split, mix, outlet="dry")
    graph.connect(eq, mix)
    graph.connect(mix, out)
    processors = grafx.make_processors(graph, RATE, processors={"split": Split()})
    parameters = grafx.create_parameters(graph, processors, seed=2)
    plan = grafx.compute_render_plan(graph)
    x = torch.randn(1, 2, 5000, generator=torch.Generator().manual_seed(2))
    y = grafx.render(plan, processors, parameters, x)
    expected = x[0] + P.Eq(sample_rate=RATE)(x.square(), **parameters["eq"])[0]
    assert torch.allclose(y[0], expected, atol=1e-5)
    # No temporal_support(): unbounded, so chunks widen to the whole song and equal it.
    assert torch.allclose(grafx.render_in_chunks(plan, processors, parameters, x, 1000), y,
                          atol=1e-6)


def test_modules_that_break_the_interface_are_refused():
    graph = grafx.Graph(["odd"])
    source, odd, out = graph.add("in"), graph.add("odd"), graph.add("out")
    graph.connect(source, odd)
    graph.connect(odd, out)

    class Nested(Split):
        def parameter_size(self):
            return {"eq": {"log_magnitude": 3}}

    class DryWet(Split):
        def parameter_size(self):
            return {"dry_wet": 1}

    for module, part in [(object(), "expected a callable"), (Nested(), "nested processors"),
                         (DryWet(), "graph's own wet amount")]:
        with pytest.raises(grafx.ProcessorError) as error:
            grafx.make_processors(graph, RATE, processors={"odd": module})
        assert error.value.code == "grafx.processor.python" and part in error.value.message
    processors = grafx.make_processors(graph, RATE, processors={"odd": Wrong()})
    with pytest.raises(grafx.ProcessorError) as error:
        grafx.render(grafx.compute_render_plan(graph), processors, {}, torch.zeros(1, 2, 100))
    assert error.value.code == "grafx.processor.python"
    assert "1×C×100" in error.value.message and "[1, 2, 99]" in error.value.message
    # An exception of the module's own reaches the caller as it was raised.

    class Failing(Split):
        def forward(self, x):
            raise ValueError("inside the module")

    processors = grafx.make_processors(graph, RATE, processors={"odd": Failing()})
    with pytest.raises(ValueError, match="inside the module"):
        grafx.render(grafx.compute_render_plan(graph), processors, {}, torch.zeros(1, 2, 100))


@pytest.mark.parametrize("copied", [lambda o: pickle.loads(pickle.dumps(o)), copy.deepcopy])
def test_sets_with_python_modules_pickle(copied):
    graph = console()
    processors = grafx.make_processors(graph, RATE, processors={"tilt": Tilt()})
    parameters = grafx.create_parameters(graph, processors, seed=4)
    plan = grafx.compute_render_plan(graph)
    x = torch.randn(3, 2, 1000, generator=torch.Generator().manual_seed(4))
    again = copied(processors)
    assert isinstance(again.module("tilt"), Tilt) and again.module("tilt") is not processors.module(
        "tilt")
    assert torch.equal(grafx.render(plan, again, parameters, x),
                       grafx.render(plan, processors, parameters, x))


# Graph batches (issue 30, item 3): GRAFX's batch_grafx, and render_graphs.

def chain(types, n_tracks, seed):
    """A console-like graph: n_tracks chains of `types` into one mix (a different wiring per
    seed: some tracks skip the first type)."""
    generator = torch.Generator().manual_seed(seed)
    graph = grafx.Graph()
    mix, out = graph.add("mix"), graph.add("out")
    graph.connect(mix, out)
    for _ in range(n_tracks):
        previous = graph.add("in")
        skip = bool(torch.rand(1, generator=generator) < 0.5)
        for t in types[1:] if skip else types:
            node = graph.add(t)
            graph.connect(previous, node)
            previous = node
        graph.connect(previous, mix)
    return graph


def test_render_graphs_equals_separate_renders_with_gradients():
    graphs = [chain(["eq", "compressor", "gain_pan"], n, seed) for n, seed in [(2, 0), (3, 1),
                                                                               (1, 2)]]
    processors = grafx.make_processors(graphs[0], RATE)
    parameters = [leaves(grafx.create_parameters(g, processors, seed=s))
                  for s, g in enumerate(graphs)]
    sources = [torch.randn(len(g.nodes_of_type("in")), 2, 1500,
                           generator=torch.Generator().manual_seed(10 + s))
               for s, g in enumerate(graphs)]
    batched = grafx.render_graphs(graphs, processors, parameters, sources)
    sum(y.square().sum() for y in batched).backward()
    for g, graph in enumerate(graphs):
        alone = leaves(parameters[g])
        y = grafx.render(grafx.compute_render_plan(graph), processors, alone, sources[g])
        assert torch.allclose(batched[g], y, atol=1e-6)
        y.square().sum().backward()
        for t in alone:
            for n in alone[t]:
                assert torch.allclose(parameters[g][t][n].grad, alone[t][n].grad, rtol=1e-4,
                                      atol=1e-6), (g, t, n)

    # batch_grafx: the union, rendered with sources and parameters concatenated in list order.
    union = grafx.batch_grafx(graphs)
    assert union.num_nodes == sum(g.num_nodes for g in graphs)
    joined = {t: {n: torch.cat([p[t][n] for p in parameters]) for n in parameters[0][t]}
              for t in parameters[0]}
    y = grafx.render(grafx.compute_render_plan(union), processors, joined, torch.cat(sources))
    assert torch.allclose(y, torch.cat(batched), atol=1e-6)
    with pytest.raises(grafx.GraphError) as error:
        grafx.batch_grafx([graphs[0], console()])
    assert error.value.code == "grafx.graph.batch"
