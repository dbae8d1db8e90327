"""Hostile use of the Python module (issue 29): every rate the options accept, non-finite results,
tracing, mono data, mappings, files the CLI reads, and every error a grafx.Error with a code of
docs/errors.md."""

import collections.abc
import json
import os
import re
import subprocess

import pytest
import torch

import grafx
from conftest import SOURCE_DIR
from grafx.interop import from_grafx


def catalogue():
    text = (SOURCE_DIR / "docs" / "errors.md").read_text()
    return set(re.findall(r"`(grafx\.[a-z0-9_]+\.[a-z0-9_]+)`", text))


def assert_coded(error, code):
    assert isinstance(error, grafx.Error), type(error)
    assert error.code == code, (error.code, str(error))
    assert code in catalogue(), code
    assert str(error).startswith(f"[{code}] ") and "\n" not in str(error)


@pytest.fixture(scope="module")
def song():
    return grafx.demo_song(sample_rate=16000, seconds=3.0, seed=1)


@pytest.fixture(scope="module")
def console():
    graph = grafx.mixing_console(n_tracks=2, chain="eg")
    processors = grafx.make_processors(graph, 44100)
    return (graph, grafx.compute_render_plan(graph), processors,
            grafx.create_parameters(graph, processors))


# Item 3: 44.1 and 48 kHz (every rate) for the loss and the fit.

@pytest.mark.parametrize("rate", [8000, 16000, 22050, 44100, 48000, 96000, 192000])
def test_mix_loss_at_every_rate(rate):
    torch.manual_seed(0)
    target = 0.3 * torch.randn(2, 8192)
    estimate = target + 0.1 * torch.randn(2, 8192)
    loss = grafx.MixLoss(sample_rate=rate)
    assert loss(target, target).item() == pytest.approx(0.0, abs=1e-6)
    value = loss(estimate, target)
    assert torch.isfinite(value) and value.item() > 0


@pytest.mark.parametrize("rate", [44100, 48000])
def test_loss_and_fit_at_44100_and_48000_as_the_cli(cli, tmp_path, rate):
    torch.manual_seed(0)
    target = 0.3 * torch.randn(2, rate)
    estimate = target + 0.1 * torch.randn(2, rate)
    grafx.save_audio(str(tmp_path / "estimate.wav"), estimate, rate)
    grafx.save_audio(str(tmp_path / "target.wav"), target, rate)
    result = subprocess.run([cli, "loss", str(tmp_path / "estimate.wav"),
                             str(tmp_path / "target.wav"), "--sample-rate", str(rate), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    expected = grafx.MixLoss(sample_rate=rate)(estimate, target).item()
    assert json.loads(result.stdout)["loss"] == pytest.approx(expected, rel=1e-4)

    song = grafx.demo_song(sample_rate=rate, seconds=2.0, seed=1)
    names = []
    for k, track in enumerate(song["tracks"]):
        names.append(str(tmp_path / f"track{k}.wav"))
        grafx.save_audio(names[-1], track, rate)
    grafx.save_audio(str(tmp_path / "mix.wav"), song["mix"], rate)
    result = subprocess.run([cli, "fit", "--tracks", *names, "--mix", str(tmp_path / "mix.wav"),
                             "--sample-rate", str(rate), "--steps", "1", "--crop", "1.5",
                             "--warm-up", "0.1", "-o", str(tmp_path / "fit")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    fitter = grafx.fit(song["console"], song["tracks"], song["mix"], rate, num_steps=1,
                       crop_seconds=1.5, skip_seconds=0.1)
    assert fitter.steps_done == 1 and torch.isfinite(fitter.evaluate()["total"])


def test_fit_takes_the_loss_settings_the_cli_has(song):
    rate = song["sample_rate"]
    common = dict(num_steps=0, crop_seconds=1.0, skip_seconds=0.1)
    default = grafx.Fitter(song["console"], song["tracks"], song["mix"], rate, **common)
    assert default.evaluate()["log_magnitude"].shape == (3, 4)  # 512, 1024, 4096
    loss = grafx.MixLoss(fft_sizes=(256, 1024), n_mels=40, a_weighting=False, lr_weight=1.0,
                         mid_weight=0.0, side_weight=0.0)
    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], rate, loss=loss,
                          **common)
    terms = fitter.evaluate()
    assert terms["log_magnitude"].shape == (2, 4)
    # Its own loss at the fit's rate, on the fit's render: the settings were used.
    check = grafx.MixLoss(sample_rate=rate, fft_sizes=(256, 1024), n_mels=40, a_weighting=False,
                          lr_weight=1.0, mid_weight=0.0, side_weight=0.0)
    expected = check.terms(fitter.render_mix(), song["mix"])["total"]
    assert terms["total"].item() == pytest.approx(expected.item(), rel=1e-4)
    assert terms["total"].item() == pytest.approx(terms["lr"].item(), rel=1e-6)

    options = grafx.FitOptions()
    assert options.optimizer == "adamw"
    options.optimizer = "adahessian"
    assert options.hessian_preconditioning
    with pytest.raises(grafx.FitError) as error:
        grafx.Fitter(song["console"], song["tracks"], song["mix"], rate, optimizer="sgd")
    assert_coded(error.value, "grafx.fit.options")
    with pytest.raises(grafx.FitError) as error:
        grafx.Fitter(song["console"], song["tracks"], song["mix"], rate, loss="mel")
    assert_coded(error.value, "grafx.fit.options")


# Item 6: non-finite results are errors.

def test_render_of_finite_but_huge_sources_is_an_error(console):
    graph, plan, processors, parameters = console
    huge = torch.full((2, 2, 4410), 3e38)
    with pytest.raises(grafx.RenderError) as error:
        grafx.render(plan, processors, parameters, huge)
    assert_coded(error.value, "grafx.render.non_finite")
    assert "node" in error.value.message
    # On purpose, with the checks off, as before.
    assert not torch.isfinite(grafx.render(plan, processors, parameters, huge,
                                           check_finite=False)).all()
    assert torch.isfinite(grafx.render(plan, processors, parameters, torch.randn(2, 2, 4410))).all()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_save_audio_refuses_non_finite_samples(tmp_path, bad):
    samples = torch.zeros(2, 100)
    samples[1, 42] = bad
    path = tmp_path / "x.wav"
    with pytest.raises(grafx.IoError) as error:
        grafx.save_audio(str(path), samples, 44100)
    assert_coded(error.value, "grafx.io.non_finite")
    assert "channel 1, sample 42" in error.value.message
    assert not path.exists()
    grafx.save_audio(str(path), samples.nan_to_num(0.0, 0.0, 0.0), 44100)
    assert torch.equal(grafx.load_audio(str(path))[0], torch.zeros(2, 100))


# Item 7: tracing is refused.

def test_tracing_through_render_is_refused(console):
    graph, plan, processors, parameters = console
    sources = torch.randn(2, 2, 4410)
    for function in (lambda s: grafx.render(plan, processors, parameters, s),
                     lambda s: grafx.render_naive(graph, processors, parameters, s),
                     lambda s: grafx.render_in_chunks(plan, processors, parameters, s)):
        with pytest.raises(grafx.RenderError) as error:
            torch.jit.trace(function, sources, check_trace=False)
        assert_coded(error.value, "grafx.render.tracing")
        assert "torch.jit.trace" in error.value.message
    grafx.render(plan, processors, parameters, sources)  # eager calls still work


# Item 8: mono data, physical values, interop, hooks by name, mappings, saved files.

def test_fit_takes_mono_stems_and_a_mono_mix_as_the_cli_reads_them(song):
    rate = song["sample_rate"]
    tracks, mix = song["tracks"], song["mix"]
    mono_tracks = tracks.mean(1, keepdim=True)
    mono_mix = mix.mean(0, keepdim=True)
    settings = dict(num_steps=2, crop_seconds=1.0, skip_seconds=0.1, seed=3)

    def history(t, m):
        return [r["loss"] for r in grafx.fit(song["console"], t, m, rate, **settings).history]

    # Mono is spread to both channels, as grafx fit reads mono files.
    assert history(mono_tracks, mix) == history(mono_tracks.expand(-1, 2, -1), mix)
    assert history(tracks, mono_mix) == history(tracks, mono_mix.expand(2, -1))
    assert history(mono_tracks, mono_mix) == history(mono_tracks.expand(-1, 2, -1),
                                                     mono_mix.expand(2, -1))
    mixed = [mono_tracks[0]] + list(tracks[1:])  # a list: mono and stereo stems together
    assert history(mixed, mix) == history(torch.stack([mono_tracks[0].expand(2, -1)]
                                                      + list(tracks[1:])), mix)
    with pytest.raises(grafx.FitError) as error:
        grafx.fit(song["console"], [tracks[0], tracks[1][:, :100]] + list(tracks[2:]), mix,
                  rate, **settings)
    assert_coded(error.value, "grafx.fit.data")
    with pytest.raises(grafx.FitError) as error:
        grafx.fit(song["console"], tracks, mix[0], rate, **settings)
    assert_coded(error.value, "grafx.fit.data")


def test_compressor_smoothing_maps_in_float32():
    for name in ("Compressor", "NoiseGate"):
        processor = getattr(grafx.processors, name)(sample_rate=44100)
        values = torch.tensor([[10.0], [30.0], [100.0], [300.0], [1000.0]])  # 5 nodes
        raw = processor.to_raw(smoothing_ms=values)
        physical = processor.to_physical(**raw)["smoothing_ms"]
        # float32 holds the smoother's coefficient (1 - 2e-5 at 1 s) to about 0.1 % of the time
        torch.testing.assert_close(physical.reshape(-1).double(), values.reshape(-1).double(),
                                   rtol=2e-3, atol=0)
        x = torch.randn(5, 2, 2000)
        assert torch.isfinite(processor(x, smoothing_ms=values)).all()


def grafx_style_graph(types):
    networkx = pytest.importorskip("networkx")
    G = networkx.MultiDiGraph()
    G.graph["config"] = {t: {"inlets": ["main"], "outlets": ["main"]} for t in types}
    G.add_node(0, node_type="in")
    for i, t in enumerate(types, start=1):
        G.add_node(i, node_type=t)
        G.add_edge(i - 1, i, outlet="main", inlet="main")
    G.add_node(len(types) + 1, node_type="out")
    G.add_edge(len(types), len(types) + 1, outlet="main", inlet="main")
    return G


def test_from_grafx_refuses_unmapped_types():
    G = grafx_style_graph(["eq", "chorus"])
    with pytest.raises(grafx.ProcessorError) as error:
        from_grafx(G)
    assert_coded(error.value, "grafx.processor.unknown")
    assert "chorus" in error.value.message and "processor_types" in error.value.message
    with pytest.raises(grafx.ProcessorError) as error:
        from_grafx(G, processor_types={"chorus": "flanger"})
    assert_coded(error.value, "grafx.processor.unknown")
    graph = from_grafx(G, processor_types={"chorus": "delay"})
    grafx.make_processors(graph, 16000)  # mapped: renders
    structure = from_grafx(G, allow_unmapped=True)
    assert "chorus" in [t["name"] for t in structure.types]
    G.nodes[1]["node_type"] = None
    with pytest.raises(grafx.GraphError) as error:
        from_grafx(G)
    assert_coded(error.value, "grafx.graph.unknown_type")


def test_edge_hooks_take_the_port_names_edges_gives(console):
    graph, plan, processors, _ = console
    torch.manual_seed(0)
    sources = torch.randn(2, 2, 2000)
    edge = [e for e in graph.edges() if graph.node(e[0])["type"] == "eq"][0]  # eq -> its gain
    assert isinstance(edge[2], str) and isinstance(edge[3], str)
    src, dst = edge[0], edge[1]
    outlet = [t for t in graph.types if t["name"] == graph.node(src)["type"]][0]["outlets"]
    inlet = [t for t in graph.types if t["name"] == graph.node(dst)["type"]][0]["inlets"]
    by_index = (src, dst, outlet.index(edge[2]), inlet.index(edge[3]))

    def gradients(edge_hooks):
        parameters = grafx.create_parameters(graph, processors)
        grafx.render(plan, processors, parameters, sources,
                     edge_hooks=edge_hooks).pow(2).mean().backward()
        return {(t, n): p.grad for t, g in parameters.items() for n, p in g.items()}

    plain = gradients({})
    named = gradients({edge: ("scale", 0.0)})
    indexed = gradients({by_index: ("scale", 0.0)})
    assert named.keys() == indexed.keys()
    assert all(torch.equal(named[k], indexed[k]) for k in named)
    assert any(not torch.equal(named[k], plain[k]) for k in named)  # the hook acted
    for key, words in [((src, dst, "nonesuch", edge[3]), "nonesuch"),
                       ((src, dst, 7, edge[3]), "7"),
                       ((src, 999, edge[2], edge[3]), "999"),
                       ((src, dst, edge[2]), "Graph.edges()")]:
        with pytest.raises(grafx.RenderError) as error:
            gradients({key: "stop"})
        assert_coded(error.value, "grafx.render.hooks")
        assert words in error.value.message


def test_graph_parameters_is_a_mapping(console):
    graph, plan, processors, parameters = console
    gp = grafx.GraphParameters(parameters)
    assert isinstance(gp, collections.abc.Mapping)
    assert "eq" in gp and "nonesuch" not in gp and 0 not in gp
    assert sorted(gp) == sorted(parameters) and len(gp) == len(parameters)
    assert sorted(gp.keys()) == sorted(parameters.keys())
    assert gp.get("nonesuch") is None and set(gp.get("eq")) == set(parameters["eq"])
    assert {t: set(g) for t, g in dict(gp).items()} == {t: set(g) for t, g in parameters.items()}
    assert len(list(gp.parameters())) == sum(len(g) for g in parameters.values())
    assert hash(gp) == hash(gp)  # still a module: hashable, in optimizers' sets
    torch.testing.assert_close(grafx.render(plan, processors, gp, torch.ones(2, 2, 500)),
                               grafx.render(plan, processors, parameters, torch.ones(2, 2, 500)))


def test_saved_parameters_are_ones_the_cli_renders(cli, tmp_path, console):
    graph, plan, processors, parameters = console
    per_item = {t: {n: torch.stack([p.detach(), p.detach() + 0.1]) for n, p in g.items()}
                for t, g in parameters.items()}
    with pytest.raises(grafx.RenderError) as error:
        grafx.save_parameters(str(tmp_path / "batch.safetensors"), graph, per_item)
    assert_coded(error.value, "grafx.render.parameters")
    assert not (tmp_path / "batch.safetensors").exists()

    one = {t: {n: p[1] for n, p in g.items()} for t, g in per_item.items()}
    grafx.save_parameters(str(tmp_path / "one.safetensors"), graph, one, sample_rate=44100)
    graph.save(str(tmp_path / "graph.json"))
    torch.manual_seed(0)
    sources = 0.1 * torch.randn(2, 2, 4410)
    names = []
    for k in range(2):
        names.append(str(tmp_path / f"s{k}.wav"))
        grafx.save_audio(names[-1], sources[k], 44100)
    result = subprocess.run([cli, "render", str(tmp_path / "graph.json"), "--sources", *names,
                             "--params", str(tmp_path / "one.safetensors"),
                             "-o", str(tmp_path / "out.wav")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    rendered, _ = grafx.load_audio(str(tmp_path / "out.wav"))
    expected = grafx.render(plan, processors, one, sources)[0]
    torch.testing.assert_close(rendered, expected, rtol=1e-4, atol=1e-5)


# Item 17: errors raised in Python carry codes too.

def test_python_errors_carry_codes(song, console):
    graph, plan, processors, parameters = console
    sources = torch.randn(2, 2, 1000)
    cases = [
        (lambda: grafx.jvp(plan, processors, parameters, sources, {"nonesuch": {}}),
         "grafx.render.tangents", KeyError),
        (lambda: grafx.jvp(plan, processors, parameters, sources,
                           {"eq": {"nonesuch": torch.zeros(1)}}),
         "grafx.render.tangents", KeyError),
        (lambda: grafx.jvp(plan, processors, parameters, sources,
                           {"eq": {n: torch.zeros(1) for n in list(parameters["eq"])[:1]}}),
         "grafx.render.tangents", ValueError),
        (lambda: grafx.hvp(lambda p: grafx.render(plan, processors, p, sources), parameters,
                           {}),
         "grafx.render.tangents", ValueError),
        (lambda: grafx.render(plan, processors, parameters, sources,
                              gradient_hooks={"eq": 3}), "grafx.render.hooks", TypeError),
        (lambda: grafx.render(plan, processors, parameters, sources,
                              gradient_hooks={"nonesuch": print}), "grafx.render.hooks",
         KeyError),
        (lambda: grafx.render(plan, processors, parameters, sources, edge_hooks=[1]),
         "grafx.render.hooks", TypeError),
        (lambda: grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000,
                              learning_rate=0.1), "grafx.fit.options", TypeError),
        (lambda: grafx.processors.Compressor()(torch.randn(1, 2, 100), threshold_db="-30"),
         "grafx.processor.parameters", TypeError),
        (lambda: grafx.render(plan, processors, parameters, sources, node_hooks={"a": "stop"}),
         "grafx.render.hooks", Exception),
        (lambda: grafx.render(plan, processors, parameters, [1, 2]), "grafx.render.sources",
         TypeError),
        (lambda: grafx.render(plan, processors, 3, sources), "grafx.render.parameters",
         TypeError),
        (lambda: grafx.GraphParameters(3), "grafx.render.parameters", TypeError),
        (lambda: grafx.make_processors(graph, float("nan")), "grafx.processor.config",
         ValueError),
        (lambda: grafx.make_processors(graph, 44100.5), "grafx.processor.config", ValueError),
        (lambda: grafx.MixLoss(sample_rate="fast"), "grafx.loss.options", ValueError),
        (lambda: grafx.demo_song(sample_rate=None), "grafx.fit.options", ValueError),
        (lambda: grafx.save_audio("/nonexistent/x.wav", torch.zeros(2, 10), 441e2 + 0.5),
         "grafx.io.audio_format", ValueError),
    ]
    for call, code, python_type in cases:
        with pytest.raises(grafx.Error) as error:
            call()
        assert_coded(error.value, code)
        assert isinstance(error.value, python_type), (code, type(error.value).__mro__)
    networkx = pytest.importorskip("networkx")
    G = networkx.MultiDiGraph()
    G.graph["config"] = 3
    with pytest.raises(grafx.GraphError) as error:
        from_grafx(G)
    assert_coded(error.value, "grafx.graph.invalid_type")


# Item 17: arguments of the wrong types (pybind11's TypeError, several lines without a code),
# integer samples, and the non-finite outputs of the other renders.

def test_wrong_argument_types_carry_a_code(tmp_path):
    graph = grafx.Graph()
    path = str(tmp_path / "x.wav")
    cases = [
        (lambda: grafx.save_audio(path, "samples", 44100), "samples: torch.Tensor"),
        (lambda: grafx.load_audio(3), "expected (path: str)"),
        (lambda: graph.add(3), "node_type: str"),
        (lambda: graph.connect("a", "b"), "source: int"),
        (lambda: grafx.Graph(5), "incompatible config 5"),
        (lambda: grafx.Graph({"x": 3}), "incompatible type fields 3"),
        (lambda: grafx.Graph(["x", 3]), "incompatible type name 3"),
        (lambda: grafx.resample(torch.zeros(1, 10), "44100", 48000), "from_rate: int"),
    ]
    for call, part in cases:
        with pytest.raises(TypeError) as error:
            call()
        assert_coded(error.value, "grafx.python.arguments")
        assert part in error.value.message, error.value.message
    assert not os.path.exists(path)
    assert graph.add("eq") == 0  # the wrapped methods still work, with their documentation
    assert "node_type: str" in grafx.Graph.add.__doc__


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.bool])
def test_save_audio_refuses_integer_samples(tmp_path, dtype):
    path = tmp_path / "x.wav"
    with pytest.raises(grafx.IoError) as error:
        grafx.save_audio(str(path), (torch.ones(2, 100) * 12000).to(dtype), 44100)
    assert_coded(error.value, "grafx.io.audio_format")
    assert "floating-point" in error.value.message
    assert not path.exists()


def test_unreadable_audio_says_why(tmp_path):
    text = tmp_path / "notes.wav"
    text.write_text("not audio")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    for path, part in [(text, "cannot be read as audio"), (empty, "is empty (0 bytes)"),
                       (tmp_path, "is a folder"), (tmp_path / "missing.wav", "does not exist")]:
        with pytest.raises(grafx.IoError) as error:
            grafx.load_audio(str(path))
        assert_coded(error.value, "grafx.io.unreadable")
        assert part in error.value.message, error.value.message


def test_naive_and_chunked_renders_of_huge_sources_are_errors(console):
    graph, plan, processors, parameters = console
    huge = torch.full((2, 2, 4410), 3e38)
    for call in (lambda **k: grafx.render_naive(graph, processors, parameters, huge, **k),
                 lambda **k: grafx.render_in_chunks(plan, processors, parameters, huge, 1000, **k)):
        with pytest.raises(grafx.RenderError) as error:
            call()
        assert_coded(error.value, "grafx.render.non_finite")
        assert not torch.isfinite(call(check_finite=False)).all()  # on purpose, as before


def test_indices_paths_and_sizes_from_callers_are_checked(tmp_path):
    # Issue 59: each of these crashed the interpreter, read another file or asked the allocator
    # for hundreds of gigabytes; each is now one coded error.
    schedule = grafx.schedule(grafx.mixing_console(n_tracks=2, chain="eg"))
    for rows in (0, 1, -1):
        with pytest.raises(grafx.ScheduleError) as error:
            schedule.step_of_rows(rows)
        assert_coded(error.value, "grafx.schedule.invalid")
    for _ in range(1000):  # once wrote past its list: the heap survives
        with pytest.raises(grafx.ScheduleError):
            schedule.step_of_rows(1)
    graph = grafx.mixing_console(n_tracks=2, chain="eg")
    plan = grafx.compute_render_plan(graph)
    state = plan.__getstate__()
    steps, types, dead = state[2][1], state[2][2], state[2][3]
    for broken in ([steps[0] + [10**9]] + steps[1:], None), (steps, [10**9]), (steps, [-1]):
        rows, dead_rows = broken if broken[1] is not None else (broken[0], dead)
        pickled = (state[0], state[1], (state[2][0], rows, types, dead_rows) + state[2][4:])
        fresh = type(plan).__new__(type(plan))
        with pytest.raises(grafx.ScheduleError) as error:
            fresh.__setstate__(pickled)
        assert_coded(error.value, "grafx.schedule.invalid")
    bad_types = schedule.__getstate__()
    bad_types = bad_types[:2] + ([99] * len(bad_types[2]),) + bad_types[3:]
    fresh = type(schedule).__new__(type(schedule))
    fresh.__setstate__(bad_types)
    with pytest.raises(grafx.ScheduleError) as error:
        fresh.type_sequence(grafx.to_tensor(graph))
    assert_coded(error.value, "grafx.schedule.invalid")

    samples = torch.zeros(1, 100)
    grafx.save_audio(str(tmp_path / "a.wav"), samples, 8000)
    with pytest.raises(grafx.IoError) as error:
        grafx.load_audio(str(tmp_path / "a.wav") + "\x00xyz")
    assert_coded(error.value, "grafx.io.unreadable")
    with pytest.raises(grafx.IoError) as error:
        grafx.save_audio(str(tmp_path / "b.wav"), samples, 2**40)
    assert_coded(error.value, "grafx.io.audio_format")
    with pytest.raises(grafx.IoError) as error:
        grafx.resample(samples, 1, 10**9)
    assert_coded(error.value, "grafx.io.resample")
    loss_state = grafx.MixLoss().loss.__getstate__()
    for field, value in ((1, [2**30]), (3, 10**7)):  # FFT sizes, mel bands
        absurd = loss_state[:field] + (value,) + loss_state[field + 1:]
        fresh = type(grafx.MixLoss().loss).__new__(type(grafx.MixLoss().loss))
        with pytest.raises(grafx.LossError) as error:
            fresh.__setstate__(absurd)
        assert_coded(error.value, "grafx.loss.options")
