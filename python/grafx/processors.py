"""Every registered processor as a ``torch.nn.Module``, generated from the registry.

    >>> compressor = grafx.processors.Compressor(sample_rate=44100, knee="hard")
    >>> params = compressor.create_parameters(4)            # 4 nodes' raw parameters
    >>> y = compressor(x, **params)                          # x: 4×C×L

Class names are the type names in CamelCase (``gain_pan`` -> ``GainPan``); the names of the
GRAFX classes each corresponds to are aliases (``ApproxCompressor``, ``ZeroPhaseFIREqualizer``).
Parameters are given at call time, one row per item of the batch, as GRAFX's processors take
them; ``forward_with_aux`` also returns the auxiliary losses (e.g. a delay's radii).
"""

import sys

import torch

from . import _grafx


class ProcessorModule(torch.nn.Module):
    """A grafx processor: batch-first (N×C×L per inlet), stateless, differentiable."""

    type_name = None  #: the registry name

    def __init__(self, sample_rate=44100, **options):
        super().__init__()
        self.sample_rate = int(sample_rate)
        self.options = options
        self.processor = _grafx.make_processor(self.type_name, self.sample_rate, options)

    @property
    def inlets(self):
        return self.processor.inlets

    @property
    def outlets(self):
        return self.processor.outlets

    def forward_with_aux(self, *inputs, **parameters):
        """(outputs, aux_losses): a tensor, or a tuple with one tensor per outlet."""
        outputs, aux = self.processor.forward(list(inputs), parameters)
        return (outputs[0] if len(outputs) == 1 else tuple(outputs)), aux

    def forward(self, *inputs, **parameters):
        return self.forward_with_aux(*inputs, **parameters)[0]

    def parameter_specs(self):
        """Each raw parameter: name, per-node shape, physical name and unit, range, meaning."""
        return self.processor.parameter_specs()

    def parameter_size(self):
        """GRAFX's ``parameter_size()``: {name: per-node shape}."""
        return {spec["name"]: tuple(spec["shape"]) for spec in self.parameter_specs()}

    def create_parameters(self, num_nodes=1, dtype=torch.float32, seed=0):
        """Initial raw parameters of ``num_nodes`` nodes, as a graph's would be drawn."""
        generator = torch.Generator().manual_seed(seed)
        return {
            spec["name"]: (spec["init_mean"] + spec["init_std"] * torch.randn(
                num_nodes, *spec["shape"], generator=generator, dtype=torch.float64)).to(dtype)
            for spec in self.parameter_specs()
        }

    def to_physical(self, **raw):
        """Physical values ({physical_name: tensor}) of raw parameters; differentiable."""
        return self.processor.to_physical(raw)

    def to_raw(self, **physical):
        """Raw parameters of physical values (e.g. ``threshold_db=-20``) where they determine
        them."""
        return self.processor.to_raw({k: torch.as_tensor(v) for k, v in physical.items()})

    def extra_repr(self):
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"{self.type_name!r}, sample_rate={self.sample_rate}{options}"


def _class_name(type_name):
    return "".join(part[:1].upper() + part[1:] for part in type_name.split("_"))


def _make_classes():
    module = sys.modules[__name__]
    names = []
    descriptors = _grafx.processor_registry()
    for d in descriptors:
        doc = f"{d['summary']}\n\n{_grafx.describe_processor(d['name'], 44100, True)}"
        cls = type(_class_name(d["name"]), (ProcessorModule,),
                   {"type_name": d["name"], "__doc__": doc, "__module__": __name__})
        setattr(module, cls.__name__, cls)
        names.append(cls.__name__)
    for d in descriptors:  # GRAFX's names, where no grafx class has taken the name
        for alias in filter(None, (a.strip() for a in d["grafx_name"].split(","))):
            if not hasattr(module, alias):
                setattr(module, alias, getattr(module, _class_name(d["name"])))
                names.append(alias)
    return names


__all__ = ["ProcessorModule"] + _make_classes()
