"""Raw parameters of graphs as torch tensors, their physical units and their files.

Parameters are a mapping ``{type: {parameter: tensor}}``, one row per node of the type in
ascending node id ("graph order"), raw (unconstrained) values; the processors apply their own
activations. ``GraphParameters`` holds them as ``torch.nn.Parameter``s for any torch optimizer.
"""

import collections.abc

import torch

from . import _errors, _grafx
from ._errors import render_error


def _raw(parameters):
    """A plain ``{type: {name: tensor}}`` of any accepted form."""
    if isinstance(parameters, GraphParameters):
        return parameters.raw()
    if not hasattr(parameters, "items"):
        raise render_error("grafx.render.parameters", "parameters: expected a mapping of types "
                           "to mappings of tensors (create_parameters, a GraphParameters), but "
                           f"got {type(parameters).__name__}", TypeError)
    return parameters


def create_parameters(graph, processors, seed=0, dtype=None, requires_grad=True, device=None):
    """Initial raw parameters from the processors' specs, seeded (the same as the CLI's, on
    every device): in ``dtype`` on ``device``, by default the processors' (make_processors),
    else float32 on the CPU."""
    dtype = dtype or getattr(processors, "dtype", None) or torch.float32
    device = _errors.device(device or getattr(processors, "device", None) or "cpu",
                            "create_parameters", _grafx.RenderError, "grafx.render.parameters")
    parameters = _grafx.create_parameters(graph, processors, seed, dtype,
                                          requires_grad and device.type == "cpu")
    if device.type != "cpu":  # drawn on the CPU, so the same values everywhere
        parameters = {t: {n: v.to(device).requires_grad_(requires_grad) for n, v in g.items()}
                      for t, g in parameters.items()}
    return parameters


def musical_parameters(graph, processors, seed=0):
    """Settings a mixing engineer might choose, drawn from each type's musical prior (seeded)."""
    return _grafx.musical_parameters(graph, processors, seed)


def check_parameters(graph, processors, parameters, batch=0, dtype=torch.float32):
    """Raises RenderError naming what does not fit the graph."""
    _grafx.check_parameters(graph, processors, _raw(parameters), batch, dtype)


def to_physical(graph, processors, parameters):
    """``{type: {physical_name: tensor}}``: e.g. ``threshold_db``, ``wet``; differentiable."""
    return _grafx.to_physical(graph, processors, _raw(parameters))


def describe_parameters(graph, processors, parameters):
    """A table of every node's parameters in physical units."""
    return _grafx.describe_parameters(graph, processors, _raw(parameters))


def load_parameters(path, graph):
    """``(parameters, sample_rate)`` of a parameter file (safetensors; rate 0 if unrecorded)."""
    return _grafx.load_parameters(path, graph)


def save_parameters(path, graph, parameters, overwrite=False, sample_rate=0):
    """Writes a parameter file the CLI reads (atomically; refuses to overwrite by default).

    The parameters must be one graph's, ``N_t×...`` per type as ``create_parameters`` gives
    them: per-item ones (``B×N_t×...``) raise ``grafx.RenderError`` (``grafx.render.parameters``;
    save each item's, ``{t: {n: p[b]}}``) rather than make a file every command refuses."""
    raw = _raw(parameters)
    tensors = [t for group in raw.values() for t in group.values()
               if isinstance(t, torch.Tensor)]
    try:
        processors = _grafx.make_processors(graph, int(sample_rate) or 44100)
    except _grafx.ProcessorError:
        processors = None  # types without processors: nothing to check their shapes against
    if processors is not None:
        _grafx.check_parameters(graph, processors, raw, 0,
                                tensors[0].dtype if tensors else torch.float32)
    _grafx.save_parameters(path, graph, raw, overwrite, sample_rate)


def _key(name):
    # torch module and parameter names may not hold "." (container members are "members.0.x").
    return name.replace(".", "__")


class GraphParameters(torch.nn.Module):
    """A graph's raw parameters as ``torch.nn.Parameter``s: ``model.parameters()`` feeds any
    optimizer, ``state_dict()`` saves them, and ``render`` takes the module itself.

    >>> params = grafx.GraphParameters(grafx.create_parameters(graph, processors))
    >>> optimizer = torch.optim.Adam(params.parameters(), lr=1e-2)
    """

    def __init__(self, parameters):
        super().__init__()
        parameters = _raw(parameters)
        self.types = torch.nn.ModuleDict()
        self._names = {}
        for type_name, tensors in _raw(parameters).items():
            group = torch.nn.ParameterDict()
            for name, tensor in tensors.items():
                group[_key(name)] = torch.nn.Parameter(tensor.detach().clone())
                self._names[(_key(type_name), _key(name))] = (type_name, name)
            self.types[_key(type_name)] = group

    def raw(self):
        """``{type: {name: parameter}}`` with the graph's own names."""
        result = {}
        for type_key, group in self.types.items():
            for key, parameter in group.items():
                type_name, name = self._names[(type_key, key)]
                result.setdefault(type_name, {})[name] = parameter
        return result

    # A read-only mapping of types to {name: parameter}, as create_parameters' dict is.
    def items(self):
        """``(type, {name: parameter})`` pairs, as ``dict.items``."""
        return self.raw().items()

    def keys(self):
        """The node type names that have parameters."""
        return self.raw().keys()

    def values(self):
        """Each type's ``{name: parameter}``."""
        return self.raw().values()

    def get(self, type_name, default=None):
        """The ``{name: parameter}`` of ``type_name``, or ``default`` if it has none."""
        return self.raw().get(type_name, default)

    def __getitem__(self, type_name):
        return self.raw()[type_name]

    def __contains__(self, type_name):
        return type_name in self.raw()

    def __iter__(self):
        return iter(self.raw())

    def __len__(self):
        return len(self.raw())


# A Mapping by registration: inheriting it would bring Mapping's __eq__ and unhash the module.
collections.abc.Mapping.register(GraphParameters)
