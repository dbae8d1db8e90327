"""Every registered processor as a ``torch.nn.Module``, generated from the registry.

    >>> compressor = grafx.processors.Compressor(sample_rate=44100, knee="hard")
    >>> y = compressor(x, threshold_db=-30, ratio=4)         # x: N×C×L; physical units
    >>> params = compressor.create_parameters(4)            # 4 nodes' raw parameters
    >>> y = compressor(x, **params)                          # x: 4×C×L

Class names are the type names in CamelCase (``gain_pan`` -> ``GainPan``); the names of the
GRAFX classes each corresponds to are aliases (``ApproxCompressor``, ``ZeroPhaseFIREqualizer``).
Parameters are given at call time, each by its raw name (raw values, as GRAFX's processors and
grafx's graphs take them) or by its physical name (values in its unit, as
``grafx process --set`` takes them: a number, a list or a tensor, checked against the
parameter's range); every value broadcasts to ``[N, shape...]`` and parameters not given take
their initial values. ``help()`` of each class lists its names. ``forward_with_aux`` also
returns the auxiliary losses (e.g. a delay's radii).
"""

import sys

import torch

from . import _grafx
from ._errors import processor_error


class ProcessorModule(torch.nn.Module):
    """A grafx processor: batch-first (N×C×L per inlet), stateless, differentiable."""

    type_name = None  #: the registry name

    def __init__(self, sample_rate=44100, **options):
        super().__init__()
        self.sample_rate = int(sample_rate)
        self.options = options
        self.processor = _grafx.make_processor(self.type_name, self.sample_rate, options)

    # Pickles and copies (DataLoader workers, torch.save) hold the type, rate and options, from
    # which the C++ processor, which holds no state, is made again.
    def __getstate__(self):
        state = dict(super().__getstate__())
        del state["processor"]
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self.processor = _grafx.make_processor(self.type_name, self.sample_rate, self.options)

    @property
    def inlets(self):
        return self.processor.inlets

    @property
    def outlets(self):
        return self.processor.outlets

    def _values(self, parameters):
        """{name: tensor}: Python numbers and lists as float64 tensors (exact until mapped)."""
        values = {}
        for name, value in parameters.items():
            if not isinstance(value, torch.Tensor):
                try:
                    value = torch.as_tensor(value, dtype=torch.float64)
                except (TypeError, ValueError, RuntimeError):
                    raise processor_error(
                        "grafx.processor.parameters",
                        f"{self.type_name}: {name}: expected a number, a list of numbers or a "
                        f"tensor, but got {type(value).__name__} {value!r}", TypeError) from None
            values[name] = value
        return values

    def forward_with_aux(self, *inputs, **parameters):
        """(outputs, aux_losses): a tensor, or a tuple with one tensor per outlet.

        ``parameters`` by raw or physical name, as ``forward``'s."""
        outputs, aux = self.processor.forward(list(inputs), self._values(parameters))
        return (outputs[0] if len(outputs) == 1 else tuple(outputs)), aux

    def forward(self, *inputs, **parameters):
        """The outputs for ``inputs`` (one N×C×L tensor per inlet).

        Each parameter by its raw name (raw values) or its physical name (values in its unit,
        e.g. ``threshold_db=-30``): a number, a list or a tensor that broadcasts to
        ``[N, shape...]`` (a tensor that requires grad stays differentiable); parameters not
        given take their initial values. Unknown names, a parameter given by both names,
        non-finite values, values outside the range and shapes that do not broadcast raise
        ``grafx.ProcessorError`` (code ``grafx.processor.parameters``)."""
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
        """Raw values of physical ones (e.g. ``threshold_db=-20`` -> ``{"log_threshold":
        [[...]]}``, ``wet=0.5`` -> ``{"dry_wet": ...}``), each for as many nodes as its first
        dimension holds (one for a number); differentiable."""
        return self.processor.to_raw(self._values(physical))

    def raw_parameters(self, num_nodes=1, dtype=torch.float32, **values):
        """Every raw parameter of ``num_nodes`` nodes from values by raw or physical name, the
        rest at their initial values: what ``forward`` computes from its keywords."""
        return self.processor.raw_parameters(self._values(values), num_nodes, dtype)

    def extra_repr(self):
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"{self.type_name!r}, sample_rate={self.sample_rate}{options}"


def _class_name(type_name):
    return "".join(part[:1].upper() + part[1:] for part in type_name.split("_"))


def _number(value):
    return "inf" if value == float("inf") else "-inf" if value == -float("inf") else f"{value:.4g}"


def _parameter_table(type_name):
    """The names ``forward`` accepts, with unit, range and default (the initial value)."""
    processor = _grafx.make_processor(type_name, 44100, {})
    rows = [("raw name", "shape", "physical name", "unit", "range", "default")]
    for spec in processor.parameter_specs():
        initial = torch.full((1, *spec["shape"]), spec["init_mean"], dtype=torch.float64)
        default = processor.to_physical({spec["name"]: initial})[spec["physical_name"]]
        lo, hi = default.min().item(), default.max().item()
        same = spec["physical_name"] == spec["name"]
        physical = ("(same)" if same else spec["physical_name"]) + (
            "" if spec["settable"] else " (raw only)")
        rows.append((spec["name"], "[" + ", ".join(map(str, spec["shape"])) + "]", physical,
                     spec["unit"] or "-",
                     f"{_number(spec['physical_min'])} to {_number(spec['physical_max'])}",
                     _number(lo) + ("" if lo == hi else f" ... {_number(hi)}")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
             for row in rows]
    return (
        "Parameters of ``forward(*inputs, **parameters)``, each by its raw name (raw values) or\n"
        "by its physical name (a number, list or tensor in its unit, within its range); values\n"
        "broadcast to [N, shape...]; parameters not given take the default (their initial\n"
        "value). At 44100 Hz with the default options:\n\n" + "\n".join(lines) + "\n")


def _make_classes():
    module = sys.modules[__name__]
    names = []
    descriptors = _grafx.processor_registry()
    for d in descriptors:
        doc = (f"{d['summary']}\n\n{_parameter_table(d['name'])}\nAs ``grafx processors "
               f"{d['name']}`` lists it:\n\n{_grafx.describe_processor(d['name'], 44100, True)}")
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
