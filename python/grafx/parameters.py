"""Raw parameters of graphs as torch tensors, their physical units and their files.

Parameters are a mapping ``{type: {parameter: tensor}}``, one row per node of the type in
ascending node id ("graph order"), raw (unconstrained) values; the processors apply their own
activations. ``GraphParameters`` holds them as ``torch.nn.Parameter``s for any torch optimizer.
"""

import torch

from . import _grafx


def _raw(parameters):
    """A plain ``{type: {name: tensor}}`` of any accepted form."""
    if isinstance(parameters, GraphParameters):
        return parameters.raw()
    return parameters


def create_parameters(graph, processors, seed=0, dtype=torch.float32, requires_grad=True):
    """Initial raw parameters from the processors' specs, seeded (the same as the CLI's)."""
    return _grafx.create_parameters(graph, processors, seed, dtype, requires_grad)


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
    """Writes a parameter file the CLI reads (atomically; refuses to overwrite by default)."""
    _grafx.save_parameters(path, graph, _raw(parameters), overwrite, sample_rate)


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

    def items(self):
        return self.raw().items()

    def __getitem__(self, type_name):
        return self.raw()[type_name]
