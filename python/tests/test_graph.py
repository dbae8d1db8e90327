"""Graphs from Python: building, errors with codes, files, the tensor form, plans, consoles."""

import json
import subprocess

import pytest
import torch

import grafx
from conftest import SOURCE_DIR


def test_building_and_queries(chain_graph):
    g = chain_graph
    assert len(g) == 5 and g.num_edges == 4
    assert g.node(3) == {"id": 3, "type": "in", "name": "vocals", "dry_wet": False,
                         "bypassed": False, "automated": []}
    assert g.edges() == [(0, 1, "main", "main"), (1, 2, "main", "main"), (2, 4, "main", "main"),
                         (3, 0, "main", "main")]
    assert g.topological_order() == [3, 0, 1, 2, 4]
    assert "[0] eq -> [1] compressor" in str(g)
    g.check()


def test_mutations_keep_ids_and_bypass_rewires(chain_graph):
    g = chain_graph
    g.bypass(1)  # the compressor
    assert 1 not in g and (0, 2, "main", "main") in g.edges()
    incoming, outgoing = g.remove(2)
    assert incoming == [(0, 2, "main", "main")] and outgoing == [(2, 4, "main", "main")]
    assert g.add("reverb") == 5  # ids are never reused


def test_a_bypassed_send_passes_nothing_and_takes_its_bus():
    g = grafx.Graph()
    track, send, bus, reverb, master, out = (g.add(t) for t in ("in", "send", "mix", "reverb",
                                                                "mix", "out"))
    for source, dest in ((track, send), (send, bus), (bus, reverb), (reverb, master),
                         (track, master), (master, out)):
        g.connect(source, dest)
    with pytest.raises(grafx.GraphError) as error:
        g.bypass(send)  # the reverb would have nothing to process
    assert error.value.code == "grafx.graph.invalid_bypass" and "(reverb)" in error.value.message
    assert len(g) == 6
    g.set_bypassed(reverb)
    assert g.bypass(send) == [send, bus, reverb]
    assert g.edges() == [(track, master, "main", "main"), (master, out, "main", "main")]
    # A configured type of the send processor, through a graph file, passes nothing either.
    g = grafx.Graph()
    g.add_type("fx_send", processor="send")
    track, send, out = g.add("in"), g.add("fx_send"), g.add("out")
    g.connect(track, send), g.connect(send, out), g.connect(track, out)
    g = grafx.Graph.from_json(g.to_json())
    assert g.bypass(send) == [send] and g.edges() == [(track, out, "main", "main")]


def test_errors_carry_codes(chain_graph):
    with pytest.raises(grafx.GraphError) as error:
        chain_graph.connect(2, 0)  # would close a cycle
    assert error.value.code == "grafx.graph.cycle"
    assert isinstance(error.value, grafx.Error) and isinstance(error.value, RuntimeError)
    with pytest.raises(grafx.GraphError) as error:
        chain_graph.add("eqq")
    assert error.value.code == "grafx.graph.unknown_type" and "eqq" in error.value.message
    with pytest.raises(grafx.ScheduleError) as error:
        grafx.compute_render_plan(chain_graph, method="fastest")
    assert error.value.code == "grafx.schedule.unknown_method"
    with pytest.raises(grafx.IoError) as error:
        grafx.Graph.load("/nonexistent/g.json")
    assert error.value.code.startswith("grafx.io.")


def test_multi_port_types_and_configured_types():
    g = grafx.Graph({"split": {"outlets": ["low", "high"]}, "glue": {"processor": "compressor",
                                                                     "options": {"knee": "hard"}}})
    g.add("split")
    assert [t for t in g.types if t["name"] == "split"][0]["inlets"] == ["main"]
    assert [t for t in g.types if t["name"] == "split"][0]["outlets"] == ["low", "high"]
    split = g.add("crossover")
    glue = g.add("glue")
    assert [t for t in g.types if t["name"] == "glue"][0]["options"] == {"knee": "hard"}
    source, out = g.add("in"), g.add("out")
    g.connect(source, split)
    g.connect(split, glue, outlet="high")
    g.connect(split, out, outlet="low")
    g.connect(glue, out)
    with pytest.raises(grafx.GraphError) as error:
        g.connect(split, out, outlet="middle")
    assert error.value.code == "grafx.graph.unknown_port"
    with pytest.raises(grafx.ProcessorError) as error:
        grafx.Graph({"glue": {"processor": "compressor", "options": {"knee": "soft"}}})
    assert error.value.code == "grafx.processor.options"


def test_file_round_trip_with_the_cli(chain_graph, cli, tmp_path):
    path = tmp_path / "g.json"
    chain_graph.save(str(path))
    with pytest.raises(grafx.IoError):
        chain_graph.save(str(path))  # never overwritten unless asked
    info = subprocess.run([cli, "info", str(path)], capture_output=True, text=True, check=True)
    assert "5 nodes" in info.stdout
    assert grafx.Graph.load(str(path)) == chain_graph
    console = tmp_path / "console.json"
    subprocess.run([cli, "console", "--tracks", "4", "--groups", "2", "-o", str(console)],
                   check=True, capture_output=True)
    assert grafx.Graph.load(str(console)) == grafx.mixing_console(4, n_groups=2)


def test_tensor_form(chain_graph):
    t = grafx.to_tensor(chain_graph)
    assert t.node_types.dtype == torch.long and t.node_types.shape == (5,)
    names = t.type_names
    assert [names[i] for i in t.node_types.tolist()] == ["eq", "compressor", "gain_pan", "in",
                                                         "out"]
    assert t.edge_index.shape == (2, 4) and t.edge_ports.shape == (4, 2)
    # Edges sorted by destination: (in -> eq), (eq -> compressor), ...
    assert t.edge_index[:, 0].tolist() == [3, 0]
    assert grafx.convert_to_tensor is grafx.to_tensor
    assert t.to_graph() == chain_graph


def test_plans_and_schedules():
    console = grafx.mixing_console(8, n_groups=3)
    plan = grafx.compute_render_plan(console)
    # Track chains, subgroup mixes, subgroup chains, the master mix.
    chain = grafx.default_console_chain()
    assert plan.method == "optimal" and plan.proven_optimal
    assert plan.num_calls == 2 * len(chain) + 2
    assert plan.type_sequence[0] == "in" and plan.type_sequence[-1] == "out"
    assert "Render #1" in str(plan)
    assert json.loads(plan.to_json())["format"] == "grafx.plan"
    one_by_one = grafx.compute_render_plan(console, method="one-by-one")
    assert one_by_one.num_calls > plan.num_calls
    sequence, order = grafx.compute_render_order(console, method="greedy")
    assert len(sequence) == order.max().item() + 1 and order.shape == (console.num_nodes,)


def test_console_master_chain_from_letters_or_names():
    for master_chain in ("qC", ["parametric_eq", "compressor_ballistics"]):
        console = grafx.mixing_console(2, chain="g", dry_wet=True, master_chain=master_chain)
        by_name = {console.node(n)["name"]: n for n in console.nodes()}
        eq, glue = by_name["master.parametric_eq"], by_name["master.compressor_ballistics"]
        assert [source for source, *_ in console.in_edges(eq)] == [by_name["master"]]
        assert [source for source, *_ in console.in_edges(glue)] == [eq]
        assert [source for source, *_ in console.in_edges(by_name["out"])] == [glue]
        assert console.node(glue)["dry_wet"]
    plain = grafx.mixing_console(2, chain="g")
    assert "compressor_ballistics" not in {plain.node(n)["type"] for n in plain.nodes()}


def test_console_send_buses_by_letters_names_and_tracks():
    names = ["kick", "bass", "keys"]
    console = grafx.mixing_console(3, chain="g", dry_wet=True, track_names=names,
                                   sends={"reverb": "r", "echo": (["delay"], ["keys", 0])})
    by_name = {console.node(n)["name"]: n for n in console.nodes()}
    senders = {bus: sorted(console.node(s)["name"] for s, *_ in console.in_edges(by_name[bus]))
               for bus in ("reverb bus.mix", "echo bus.mix")}
    assert senders == {"reverb bus.mix": [f"{t}.send to reverb" for t in sorted(names)],
                       "echo bus.mix": ["keys.send to echo", "kick.send to echo"]}
    for effect in ("reverb bus.reverb", "echo bus.delay"):  # fully wet, back to the master
        assert not console.node(by_name[effect])["dry_wet"]
        assert [d for _, d, *_ in console.out_edges(by_name[effect])] == [by_name["master"]]
    # A send is taken after its track's own chain.
    kick_send = by_name["kick.send to reverb"]
    assert [s for s, *_ in console.in_edges(kick_send)] == [by_name["kick.gain_pan"]]
    # Names are looked up as grafx fit's --send looks them up (ConsoleOptions::track_named).
    with pytest.raises(grafx.GraphError,
                       match='no track is named "snare" \\(tracks: kick, bass, keys\\)'):
        grafx.mixing_console(3, chain="g", track_names=names, sends={"echo": ("d", ["snare"])})
    with pytest.raises(grafx.GraphError, match='two tracks are named "kick"'):
        grafx.mixing_console(3, chain="g", track_names=["kick", "kick", "keys"],
                             sends={"echo": ("d", ["kick"])})
    for n_tracks in (10**9, 2**40):  # refused before a node or a name list is made
        with pytest.raises(grafx.GraphError, match="1 to 100000 tracks"):
            grafx.mixing_console(n_tracks, n_groups=2, sends={"echo": ("d", ["track3"])})
    with pytest.raises(grafx.GraphError, match="names track 7"):
        grafx.mixing_console(3, chain="g", sends={"echo": ("d", [7])})
    # Never a truncated or wrapped index, nor a name read letter by letter.
    for tracks, refused in (([1.5], "track name or index"), ([True], "track name or index"),
                            ([2**64], "out of range"), ("kick", "list of tracks")):
        with pytest.raises(grafx.GraphError, match=refused):
            grafx.mixing_console(3, chain="g", track_names=names, sends={"e": ("d", tracks)})
    with pytest.raises(grafx.GraphError, match=r"expected a chain or \(chain, tracks\)"):
        grafx.mixing_console(3, chain="g", sends={"e": ("d", [0], "extra")})
    with pytest.raises(grafx.GraphError, match="has no name"):
        grafx.mixing_console(3, chain="g", sends={"": "r"})
    with pytest.raises(grafx.GraphError, match="chain of type letters, but got none"):
        grafx.mixing_console(3, chain="g", sends={"echo": ""})


def test_console_options_and_drawing(tmp_path):
    console = grafx.mixing_console(3, chain="ecg", dry_wet=True, track_names=["a", "b", "c"])
    first_eq = console.node(console.nodes_of_type("eq")[0])
    assert first_eq["dry_wet"] and first_eq["name"].startswith("a")
    picture = tmp_path / "console.svg"
    console.draw(str(picture), strips=True)
    assert picture.read_text().lstrip().startswith("<?xml")
    assert "digraph" in console.to_dot()
    n_nodes = len(console)
    removed = grafx.prune_randomly(console, seed=3)  # bypassed out of the graph
    assert removed and all(n not in console for n in removed)
    assert len(console) == n_nodes - len(removed)
    console.check()
