"""Pickles and deep copies: what Dask and DataLoader workers under `spawn` ship between processes.

Each object, pickled (default and highest protocol) or deep-copied, behaves as the original did:
graphs are equal in structure, renders and losses give bit-identical outputs and gradients, and
changing the copy leaves the original as it was.
"""

import copy
import pickle

import pytest
import torch

import grafx
from grafx import processors as P

RATE = 8000

COPIES = {
    "pickle": lambda o: pickle.loads(pickle.dumps(o)),
    "pickle_highest": lambda o: pickle.loads(pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL)),
    "deepcopy": copy.deepcopy,
}


@pytest.fixture(params=sorted(COPIES))
def copied(request):
    return COPIES[request.param]


def rich_graph():
    """Two sources; a configured type with options, two outlets, a wet amount, a bypassed node,
    names, a dead node and a counter past the last id."""
    g = grafx.Graph({"glue": {"processor": "compressor", "options": {"knee": "hard"}}})
    bass, vocals = g.add("in", "bass"), g.add("in", "vocals")
    eq, glue, split = g.add("eq", "vocal eq"), g.add("glue"), g.add("crossover")
    pan, mix, out, dead = g.add("gain_pan"), g.add("mix"), g.add("out", "mix out"), g.add("eq")
    for source, dest in [(vocals, eq), (eq, glue), (bass, split), (pan, mix), (glue, mix),
                         (mix, out), (bass, dead)]:
        g.connect(source, dest)
    g.connect(split, pan, outlet="high")
    g.connect(split, mix, outlet="low")
    g.set_dry_wet(glue)
    g.set_bypassed(pan)
    g.remove(g.add("eq"))
    return g


def sources(seed=0, length=512):
    return 0.5 * torch.randn(2, 2, length, generator=torch.Generator().manual_seed(seed))


def leaves(parameters):
    return {t: {n: v.detach().clone().requires_grad_() for n, v in group.items()}
            for t, group in parameters.items()}


def render_with_gradients(plan, processors, parameters, x):
    """The output and the gradients of every parameter and of the sources."""
    parameters, x = leaves(parameters), x.clone().requires_grad_()
    y = grafx.render(plan, processors, parameters, x)
    y.square().mean().backward()
    return y.detach(), x.grad, {t: {n: v.grad for n, v in g.items()} for t, g in parameters.items()}


def assert_identical(a, b):
    """Bit-identical tensors, in any nesting of tuples, lists and dicts."""
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_identical(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_identical(x, y)
    else:
        assert a == b


def structure(g):
    return (g.types, [g.node(i) for i in g.nodes()], g.edges(), g.counter, g.to_json())


def test_graph(copied):
    g = rich_graph()
    c = copied(g)
    assert c == g and structure(c) == structure(g)
    expected = structure(g)
    c.add("reverb", "new")
    c.set_name(0, "renamed")
    c.disconnect(1, 2)
    assert c != g and structure(g) == expected


def test_schedule(copied):
    s = grafx.schedule(rich_graph(), "beam")
    c = copied(s)
    for field in ["steps", "step_types", "dead_rows", "method", "proven_optimal", "lower_bound",
                  "seconds", "num_calls"]:
        assert getattr(c, field) == getattr(s, field), field
    assert c is not s


@pytest.mark.parametrize("method", ["optimal", "one-by-one"])
def test_render_plan(copied, method):
    g = rich_graph()
    plan = grafx.compute_render_plan(g, method)
    c = copied(plan)
    assert (c.to_json(), str(c), c.type_sequence, c.num_sources, c.dead_nodes, c.node_ids,
            c.proven_optimal) == (plan.to_json(), str(plan), plan.type_sequence,
                                  plan.num_sources, plan.dead_nodes, plan.node_ids,
                                  plan.proven_optimal)
    processors = grafx.make_processors(g, RATE)
    parameters = grafx.create_parameters(g, processors, seed=1)
    assert_identical(render_with_gradients(c, processors, parameters, sources()),
                     render_with_gradients(plan, processors, parameters, sources()))
    # The plan keeps its own graph: changing the one it was made from changes neither.
    g.remove(g.nodes_of_type("gain_pan")[0])
    assert copied(plan).to_json() == c.to_json() == plan.to_json()


def test_processor_set(copied):
    g = rich_graph()
    processors = grafx.make_processors(g, RATE)
    c = copied(processors)
    assert c is not processors and c["glue"] is not processors["glue"]
    assert (c.types(), c.sample_rate) == (processors.types(), processors.sample_rate)
    assert c.__getstate__() == processors.__getstate__()  # the glue's options among the types
    plan = grafx.compute_render_plan(g)
    parameters = grafx.create_parameters(g, processors, seed=2)
    assert_identical(render_with_gradients(plan, c, parameters, sources(1)),
                     render_with_gradients(plan, processors, parameters, sources(1)))


def module_case(cls):
    """A module with an option other than its default where it has one, at a rate not 44100."""
    descriptor = next(d for d in grafx.processor_registry() if d["name"] == cls.type_name)
    options = {}
    for option in descriptor["options"]:
        if option["kind"] == "flag":
            options[option["name"]] = not option["default"]
            break
    module = cls(sample_rate=16000, **options)
    generator = torch.Generator().manual_seed(3)
    inputs = [0.5 * torch.randn(2, 2, 1024, generator=generator) for _ in module.inlets]
    return module, inputs


def module_result(module, inputs):
    parameters = {n: v.requires_grad_() for n, v in module.create_parameters(2, seed=4).items()}
    inputs = [x.clone().requires_grad_() for x in inputs]
    outputs, aux = module.forward_with_aux(*inputs, **parameters)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    sum(o.square().mean() for o in outputs).backward()
    return ([o.detach() for o in outputs], {k: v.detach() for k, v in aux.items()},
            [x.grad for x in inputs], {n: v.grad for n, v in parameters.items()})


@pytest.mark.parametrize("name", [d["name"] for d in grafx.processor_registry()])
def test_processor_module(copied, name):
    module, inputs = module_case(getattr(P, P._class_name(name)))
    c = copied(module)
    assert type(c) is type(module) and c.processor is not module.processor
    assert (c.sample_rate, c.options, repr(c)) == (module.sample_rate, module.options, repr(module))
    assert_identical(module_result(c, inputs), module_result(module, inputs))
    c.options["changed"] = True
    c.sample_rate = 1
    assert "changed" not in module.options and module.sample_rate == 16000


def test_graph_parameters(copied):
    g = rich_graph()
    processors = grafx.make_processors(g, RATE)
    plan = grafx.compute_render_plan(g)
    parameters = grafx.GraphParameters(grafx.create_parameters(g, processors, seed=5))
    c = copied(parameters)
    assert_identical(c.state_dict(), parameters.state_dict())
    assert_identical(render_with_gradients(plan, processors, c.raw(), sources(2)),
                     render_with_gradients(plan, processors, parameters.raw(), sources(2)))
    before = copy.deepcopy(parameters.state_dict())
    with torch.no_grad():
        for p in c.parameters():
            p.add_(1.0)
    assert_identical(parameters.state_dict(), before)


def loss_result(loss, seed):
    generator = torch.Generator().manual_seed(seed)
    estimate = (0.3 * torch.randn(2, 2, 4000, generator=generator)).requires_grad_()
    target = 0.3 * torch.randn(2, 2, 4000, generator=generator)
    value = loss(estimate, target)
    value.backward()
    return value.detach(), estimate.grad


@pytest.mark.parametrize("make", [
    lambda: grafx.MixLoss(sample_rate=RATE, skip_samples=100, fft_sizes=(256, 512), n_mels=40,
                          a_weighting=False, eps=1e-5, lr_weight=0.6, mid_weight=0.3,
                          side_weight=0.1),
    lambda: grafx.MultiResolutionSTFTLoss(fft_sizes=(256, 512), hop_sizes=(64, 100),
                                          win_lengths=(200, 512), eps=1e-7),
], ids=["MixLoss", "MultiResolutionSTFTLoss"])
def test_losses(copied, make):
    loss = make()
    c = copied(loss)
    assert c.loss is not loss.loss and c.loss.__getstate__() == loss.loss.__getstate__()
    assert c.loss.__getstate__() != type(loss)().loss.__getstate__()  # not the defaults
    assert_identical(loss_result(c, 6), loss_result(loss, 6))


def test_states_of_other_versions_are_refused():
    for obj in [rich_graph(), grafx.schedule(rich_graph()), grafx.compute_render_plan(rich_graph()),
                grafx.make_processors(rich_graph(), RATE), grafx.MixLoss().loss,
                grafx.MultiResolutionSTFTLoss().loss]:
        state = obj.__getstate__()
        assert state[0] == 1
        fresh = type(obj).__new__(type(obj))
        with pytest.raises(grafx.IoError) as error:
            fresh.__setstate__((2,) + state[1:])
        assert error.value.code == "grafx.io.format"
        assert type(obj).__name__ in error.value.message


class Mixer(torch.nn.Module):
    """A module holding a graph, its plan and processors, its parameters, a processor module and
    a loss: what a training script saves whole."""

    def __init__(self):
        super().__init__()
        self.graph = rich_graph()
        self.plan = grafx.compute_render_plan(self.graph)
        self.processors = grafx.make_processors(self.graph, RATE)
        self.parameters_ = grafx.GraphParameters(
            grafx.create_parameters(self.graph, self.processors, seed=7))
        self.master = P.Compressor(sample_rate=RATE, knee="hard")
        self.loss = grafx.MixLoss(sample_rate=RATE, fft_sizes=(256, 512), n_mels=32)

    def forward(self, x, target):
        y = grafx.render(self.plan, self.processors, self.parameters_, x)[0]
        y = self.master(y.unsqueeze(0), threshold_db=-20.0)
        return self.loss(y, target)


def mixer_result(mixer, seed):
    mixer.zero_grad()
    x = sources(seed, length=2048)
    target = 0.3 * torch.randn(1, 2, 2048, generator=torch.Generator().manual_seed(seed + 1))
    value = mixer(x, target)
    value.backward()
    return value.detach(), {n: p.grad for n, p in mixer.named_parameters()}


def test_torch_save_and_load_of_a_module(tmp_path):
    mixer = Mixer()
    torch.save(mixer, tmp_path / "mixer.pt")
    loaded = torch.load(tmp_path / "mixer.pt", weights_only=False)
    assert loaded.graph == mixer.graph and loaded.plan.to_json() == mixer.plan.to_json()
    assert_identical(mixer_result(loaded, 8), mixer_result(mixer, 8))


def test_deepcopy_of_a_module_is_independent():
    mixer = Mixer()
    c = copy.deepcopy(mixer)
    assert_identical(mixer_result(c, 9), mixer_result(mixer, 9))
    before = (copy.deepcopy(mixer.state_dict()), mixer.graph.to_json())
    with torch.no_grad():
        for p in c.parameters():
            p.mul_(0.5)
    c.graph.add("eq")
    assert_identical((mixer.state_dict(), mixer.graph.to_json()), before)


def test_averaged_model_of_a_module():
    """torch.optim.swa_utils.AveragedModel deep-copies the module and averages its parameters."""
    mixer = Mixer()
    averaged = torch.optim.swa_utils.AveragedModel(mixer)
    averaged.update_parameters(mixer)  # the first copies
    with torch.no_grad():
        for p in mixer.parameters():
            p.add_(1.0)
    averaged.update_parameters(mixer)  # then the mean of the two
    for (name, a), p in zip(averaged.module.named_parameters(), mixer.parameters()):
        assert torch.allclose(a, p - 0.5), name
    assert averaged.module.graph == mixer.graph
    value, _ = mixer_result(averaged.module, 10)
    assert torch.isfinite(value)


class RenderedMixes(torch.utils.data.Dataset):
    """Item i: a render of seeded sources through a graph, a processor module after it, and the
    loss against a seeded target (a worker under `spawn` gets this object pickled)."""

    def __init__(self):
        self.graph = rich_graph()
        self.processors = grafx.make_processors(self.graph, RATE)
        self.parameters = grafx.create_parameters(self.graph, self.processors, seed=10,
                                                  requires_grad=False)
        self.master = P.Compressor(sample_rate=RATE)
        self.loss = grafx.MultiResolutionSTFTLoss(fft_sizes=(256,), hop_sizes=(64,),
                                                  win_lengths=(256,))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        plan = grafx.compute_render_plan(self.graph)
        y = self.master(grafx.render(plan, self.processors, self.parameters, sources(i)))
        return y, self.loss(y, torch.zeros_like(y) + 0.1)


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_dataloader_workers_under_spawn(context):
    dataset = RenderedMixes()
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=1,
                                         multiprocessing_context=context)
    items = list(loader)
    assert len(items) == len(dataset)
    for i, (y, loss) in enumerate(items):
        expected_y, expected_loss = dataset[i]
        # Another process (with its own thread count): equal to rounding.
        torch.testing.assert_close(y, expected_y)
        torch.testing.assert_close(loss, expected_loss)
