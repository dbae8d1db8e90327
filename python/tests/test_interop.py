"""GRAFX graphs (networkx, GRAFX's data layout) to grafx and back."""

import networkx
import pytest
import torch

import grafx
from grafx.interop import from_grafx, to_grafx


def grafx_style_graph():
    """What GRAFX's ``GRAFX(config=NodeConfigs(["eq", "filter"]))`` holds after ``add`` and
    ``connect`` calls: node_type/parameters/name, outlet/inlet, a counter (grafx.md §1.2)."""
    G = networkx.MultiDiGraph()
    G.graph.update({"counter": 0, "config": {"eq": {"inlets": ["main"], "outlets": ["main"]},
                                             "filter": {"inlets": ["main"],
                                                        "outlets": ["main"]}}})

    def add(node_type, name=None):
        G.add_node(G.graph["counter"], node_type=node_type, parameters=None, name=name)
        G.graph["counter"] += 1
        return G.graph["counter"] - 1

    out = add("out")
    for track in ("bass", "vocals"):
        chain = [add("in", track), add("eq"), add("filter"), add("compressor")]
        for u, v in zip(chain, chain[1:]):
            G.add_edge(u, v, outlet="main", inlet="main")
        G.add_edge(chain[-1], out, outlet="main", inlet="main")
    return G


class ZeroPhaseFIREqualizer(torch.nn.Module):  # stands for GRAFX's class of that name
    pass


def test_from_grafx_maps_types_and_keeps_ids():
    G = grafx_style_graph()
    graph = from_grafx(G, processors={"filter": ZeroPhaseFIREqualizer()})
    assert graph.nodes() == sorted(G.nodes)
    assert graph.node(1)["name"] == "bass" and graph.node(3)["type"] == "filter"
    filter_type = [t for t in graph.types if t["name"] == "filter"][0]
    assert filter_type["processor"] == "eq"
    processors = grafx.make_processors(graph, 16000)
    plan = grafx.compute_render_plan(graph)
    assert plan.num_calls == 3  # eq, filter, compressor: each one call for both tracks
    output = grafx.render(plan, processors, grafx.create_parameters(graph, processors),
                          torch.randn(2, 2, 2000))
    assert output.shape == (1, 2, 2000)


def test_round_trip_through_grafx_layout():
    console = grafx.mixing_console(3, n_groups=2, chain="ecg", dry_wet=True)
    console.remove(4)
    console.add("out")  # gaps in the ids
    G = to_grafx(console)
    assert G.graph["counter"] == console.counter and not G.graph["consecutive_ids"]
    u, v, data = next(iter(G.edges(data=True)))
    assert data == {"outlet": "main", "inlet": "main"}
    assert all("node_type" in d for _, d in G.nodes(data=True))
    back = from_grafx(G)  # declares only the types it uses; nodes, flags and edges are equal
    assert [back.node(n) for n in back.nodes()] == [console.node(n) for n in console.nodes()]
    assert back.edges() == console.edges() and back.counter == console.counter


def test_unknown_processor_classes_are_named():
    class Chorus(torch.nn.Module):
        pass
    G = grafx_style_graph()
    with pytest.raises(grafx.ProcessorError, match="Chorus") as raised:
        from_grafx(G, processors={"filter": Chorus()})
    assert raised.value.code == "grafx.processor.unknown"
    with pytest.raises(grafx.ProcessorError, match="filter"):  # "filter" names no processor
        grafx.make_processors(from_grafx(G, allow_unmapped=True), 16000)
