"""A graph in GRAFX's data layout rendered by grafx, and a grafx console handed back to it.

    PYTHONPATH=build/python python3 examples/python/grafx_console_interop.py

GRAFX (Lee et al.) keeps its graphs as networkx MultiDiGraphs: nodes with ``node_type`` and
``name``, edges with ``outlet`` and ``inlet``, a ``counter`` and a ``config``. The function
``add_chain`` below makes exactly what GRAFX's ``GRAFX.add`` and ``connect`` make (its
package, also called ``grafx``, cannot be imported next to this one); with GRAFX installed
under another name, pass its graph object instead. GRAFX's own ``processors`` dict maps types to
processor modules: here a stand-in class carries the name of GRAFX's ZeroPhaseFIREqualizer.
"""

import networkx
import torch

import grafx
from grafx.interop import from_grafx, to_grafx


def new_grafx_graph(types):
    G = networkx.MultiDiGraph()
    G.graph.update({"counter": 0, "config": {t: {"inlets": ["main"], "outlets": ["main"]}
                                             for t in types}, "consecutive_ids": True,
                    "batch": False, "invalid_op": "error"})
    return G


def add(G, node_type, name=None):  # GRAFX.add
    G.add_node(G.graph["counter"], node_type=node_type, parameters=None, name=name)
    G.graph["counter"] += 1
    return G.graph["counter"] - 1


def add_chain(G, types):  # GRAFX.add_serial_chain
    ids = [add(G, t) for t in types]
    for u, v in zip(ids, ids[1:]):
        G.add_edge(u, v, outlet="main", inlet="main")
    return ids[0], ids[-1]


class ZeroPhaseFIREqualizer(torch.nn.Module):  # stands for grafx.processors.ZeroPhaseFIREqualizer
    pass


# The console of GRAFX's documentation: three tracks, each eq -> compressor -> reverb, summed.
G = new_grafx_graph(["filter", "compressor", "reverb"])
out = add(G, "out")
for track in ("drums", "bass", "vocals"):
    source = add(G, "in", track)
    first, last = add_chain(G, ["filter", "compressor", "reverb"])
    G.add_edge(source, first, outlet="main", inlet="main")
    G.add_edge(last, out, outlet="main", inlet="main")

graph = from_grafx(G, processors={"filter": ZeroPhaseFIREqualizer()})
print(graph)
processors = grafx.make_processors(graph, 44100)
plan = grafx.compute_render_plan(graph)
print(plan)
parameters = grafx.create_parameters(graph, processors)
mix = grafx.render(plan, processors, parameters, 0.1 * torch.randn(3, 2, 44100))
mix.pow(2).mean().backward()
print(f"rendered {tuple(mix.shape)}; gradient norm of the filters' magnitudes: "
      f"{parameters['filter']['log_magnitude'].grad.norm().item():.3g}")

back = to_grafx(graph)
print(f"back in GRAFX's layout: {back.number_of_nodes()} nodes, {back.number_of_edges()} edges, "
      f"counter {back.graph['counter']}, config {sorted(back.graph['config'])}")
