"""Graphs of GRAFX (the Python library of Lee et al.) to grafx graphs and back.

A GRAFX graph is a ``networkx.MultiDiGraph`` whose nodes carry ``node_type`` (and optional
``name``), whose edges carry ``outlet`` and ``inlet`` port names, and whose ``graph["config"]``
is a ``NodeConfigs`` (or the dict it was made from: ``{type: {"inlets": [...], "outlets":
[...]}}``). ``from_grafx`` reads exactly that layout, so it takes a ``GRAFX`` object or any
networkx graph built the same way; ``to_grafx`` writes it (with ``config`` as that dict), and
``GRAFX(config=NodeConfigs(G.graph["config"]))`` rebuilds one where GRAFX is installed. Node ids
are kept in both directions.

Types: a GRAFX type named like a grafx processor (``eq``, ``compressor``, ...) is that
processor. Pass GRAFX's ``processors`` dict (type -> processor module) to map the other types by
their GRAFX class (``{"filter": ZeroPhaseFIREqualizer()}`` -> a type "filter" rendered by
grafx's ``eq``); ``processor_types`` maps type names to grafx processors directly. A type that
none of these maps is refused (``grafx.ProcessorError``, ``grafx.processor.unknown``), unless
``allow_unmapped=True`` keeps it as a type without processor (for schedules and pictures; no
render).
"""

import json

from . import _grafx
from ._errors import graph_error, processor_error

UTILITY_TYPES = ("in", "out", "mix")


def _by_grafx_class():
    table = {}
    for d in _grafx.processor_registry():
        for alias in filter(None, (a.strip() for a in d["grafx_name"].split(","))):
            table.setdefault(alias, d["name"])
    return table


def _config_ports(config):
    if config is None:
        return {}
    if isinstance(config, dict):
        return config
    if hasattr(config, "node_type_dict"):  # GRAFX's NodeConfigs
        return dict(config.node_type_dict)
    if isinstance(config, (list, tuple)):  # NodeConfigs' list form: every type main -> main
        return {name: {"inlets": ["main"], "outlets": ["main"]} for name in config}
    raise graph_error("grafx.graph.invalid_type", f"from_grafx: expected graph['config'] to be "
                      f"a NodeConfigs, dict or list, but got a {type(config).__name__}",
                      TypeError)


def from_grafx(G, processors=None, processor_types=None, allow_unmapped=False):
    """The grafx Graph of a GRAFX graph (see the module's documentation)."""
    registered = {d["name"] for d in _grafx.processor_registry()}
    ports = _config_ports(G.graph.get("config"))
    by_class = _by_grafx_class()
    chosen = dict(processor_types or {})
    for type_name, module in (processors or {}).items():
        if type_name in chosen:
            continue
        cls = type(module).__name__
        if cls not in by_class:
            raise processor_error("grafx.processor.unknown", f"from_grafx: GRAFX type "
                                  f"\"{type_name}\" is processed by a {cls}, which no grafx "
                                  "processor corresponds to")
        chosen[type_name] = by_class[cls]

    for node, data in G.nodes(data=True):
        if not isinstance(data.get("node_type"), str):
            raise graph_error("grafx.graph.unknown_type", f"from_grafx: node {node!r}: expected "
                              f"a \"node_type\" str, but got {data.get('node_type')!r}")
    used = sorted({data["node_type"] for _, data in G.nodes(data=True)} - set(UTILITY_TYPES))
    node_types = []
    for type_name in used:
        processor = chosen.get(type_name, type_name)
        if processor not in registered and not allow_unmapped:
            raise processor_error(
                "grafx.processor.unknown",
                f"from_grafx: GRAFX type \"{type_name}\" maps to no grafx processor: expected "
                "a type named like one, processors={type: module} or processor_types={type: "
                "name} for it, but got "
                + ("no mapping" if type_name not in chosen else f"\"{processor}\"")
                + " (allow_unmapped=True keeps it without a processor, for schedules and "
                "pictures)")
        entry = {"name": type_name}
        if type_name in chosen and chosen[type_name] != type_name:
            entry["processor"] = chosen[type_name]
        if type_name in ports:
            entry["inlets"] = list(ports[type_name].get("inlets", ["main"]))
            entry["outlets"] = list(ports[type_name].get("outlets", ["main"]))
        if len(entry) > 1 or type_name not in registered:
            entry.setdefault("inlets", ["main"])
            entry.setdefault("outlets", ["main"])
            node_types.append(entry)

    nodes = []
    for node, data in sorted(G.nodes(data=True), key=lambda item: item[0]):
        entry = {"id": int(node), "type": data["node_type"]}
        if data.get("name") is not None:
            entry["name"] = str(data["name"])
        for flag in ("dry_wet", "bypassed"):
            if data.get(flag):
                entry[flag] = True
        nodes.append(entry)
    edges = [{"source": int(u), "dest": int(v), "outlet": data.get("outlet", "main"),
              "inlet": data.get("inlet", "main")} for u, v, data in G.edges(data=True)]
    counter = G.graph.get("counter", 0)
    if not isinstance(counter, int):  # a batched GRAFX keeps a list of counters
        counter = max(counter) if counter else 0
    text = {"format": "grafx.graph", "version": 2, "node_types": node_types, "nodes": nodes,
            "edges": edges,
            "next_id": max([counter] + [n["id"] + 1 for n in nodes])}
    return _grafx.Graph.from_json(json.dumps(text), "GRAFX graph")


def to_grafx(graph):
    """A networkx.MultiDiGraph in GRAFX's layout (node_type/parameters/name, outlet/inlet,
    counter and config); dry/wet and bypass flags are kept as node attributes."""
    import networkx

    data = json.loads(graph.to_json())
    types = {t["name"]: t for t in graph.types}
    G = networkx.MultiDiGraph()
    used = []
    for node in data["nodes"]:
        attributes = {"node_type": node["type"], "parameters": None, "name": node.get("name")}
        for flag in ("dry_wet", "bypassed"):
            if node.get(flag):
                attributes[flag] = True
        G.add_node(node["id"], **attributes)
        if node["type"] not in UTILITY_TYPES and node["type"] not in used:
            used.append(node["type"])
    for edge in data["edges"]:
        G.add_edge(edge["source"], edge["dest"], outlet=edge.get("outlet", "main"),
                   inlet=edge.get("inlet", "main"))
    ids = [node["id"] for node in data["nodes"]]
    G.graph.update({
        "counter": data.get("next_id", len(ids)),
        "consecutive_ids": ids == list(range(len(ids))),
        "batch": False,
        "config": {t: {"inlets": types[t]["inlets"], "outlets": types[t]["outlets"]} for t in used},
        "invalid_op": "error",
        "rendering_order_method": None,
        "type_sequence": None,
    })
    return G
