"""Schedules, render plans and rendering on torch tensors, with autograd."""

import collections.abc

import torch

from . import _errors, _grafx
from ._errors import render_error, sample_rate as _sample_rate
from .parameters import _raw


def _refuse_tracing(function):
    """``torch.jit.trace`` records only torch operations: grafx's C++ render would be baked into
    the trace as constants (the outputs for the example inputs), so a traced function returns
    the same samples whatever its inputs. An error rather than that."""
    if torch.jit.is_tracing():
        raise render_error(
            "grafx.render.tracing",
            f"grafx.{function}: expected to run eagerly, but torch.jit.trace is tracing it "
            "(the C++ render would be recorded as constants, right only for the example "
            "inputs); call grafx from eager PyTorch, or trace the parts around it")


def make_processors(graph, sample_rate=44100, processors=None, *, device=None, dtype=None):
    """One processor per processor type of the graph, made for ``sample_rate`` (Hz).

    ``processors`` (type -> module), as GRAFX's render takes them, processes those types
    otherwise: a grafx processor module (``grafx.processors.Compressor()``) or a GRAFX processor
    class that grafx implements (``ZeroPhaseFIREqualizer()`` -> grafx's ``eq``) by grafx's own
    processor; any other module with GRAFX's interface (``forward(*inputs, **parameters)``,
    ``parameter_size()``) is called from the render, batched like the built-in processors (one
    call per step, the nodes of its type stacked) and differentiable through autograd.

    ``device`` and ``dtype`` are where and in what ``create_parameters`` makes the parameters by
    default; Python modules of ``processors`` are moved there (``module.to``). grafx's own
    processors follow their inputs: their constants are made once per device and dtype.
    """
    rate = _sample_rate(sample_rate, "make_processors")
    if device is not None:
        device = _errors.device(device, "make_processors", _grafx.RenderError,
                                "grafx.render.parameters")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise render_error("grafx.render.parameters", f"make_processors: expected dtype to be "
                           f"a torch.dtype, but got {dtype!r}", TypeError)
    for module in (processors or {}).values():
        if isinstance(module, torch.nn.Module) and (device is not None or dtype is not None):
            module.to(device=device, dtype=dtype)
    made = _grafx.make_processors(graph, rate, _overrides(processors or {}))
    made.device, made.dtype = device, dtype
    return made


def _overrides(processors):
    """The C++ set's overrides of a type -> module dict: a registered processor's name (with
    the module's options) for modules grafx implements, else the module itself."""
    from .interop import _by_grafx_class  # the registry's GRAFX class names
    from .processors import ProcessorModule
    by_class = _by_grafx_class()
    overrides = {}
    for type_name, module in processors.items():
        if isinstance(module, ProcessorModule):
            overrides[type_name] = (module.type_name, dict(module.options))
        elif type(module).__name__ in by_class:
            overrides[type_name] = (by_class[type(module).__name__], {})
        else:
            overrides[type_name] = module
    return overrides


_sets = {}  # (plan, modules, rate) -> ProcessorSet: made once, not at every render


def _processor_set(plan, processors, sample_rate):
    # By identity, without serialising the graph at every render: plans do not change, and the
    # entry holds the plan and modules, so their ids are not reused while it lives.
    key = (id(plan), tuple((t, id(m)) for t, m in processors.items()), sample_rate)
    if key not in _sets:
        if len(_sets) >= 16:
            _sets.pop(next(iter(_sets)))
        _sets[key] = (make_processors(plan.graph, sample_rate, processors), plan, dict(processors))
    return _sets[key][0]


def schedule(graph, method="optimal", beam_width=32, beam_depth=1, time_budget_s=1.0,
             fixed_order=()):
    """Which nodes run together: "one-by-one", "fixed", "greedy", "beam" or "optimal"."""
    return _grafx.schedule(graph, method, beam_width, beam_depth, time_budget_s, list(fixed_order))


def compute_render_plan(graph, method="optimal", beam_width=32, beam_depth=1, time_budget_s=1.0,
                        fixed_order=()):
    """Schedules the graph and compiles the schedule into a plan; ``print(plan)`` shows it in
    GRAFX's words ("Render #1 / - Node type: eq / - Source read: slice with (0, 3) ...")."""
    return _grafx.compute_render_plan(graph, method, beam_width, beam_depth, time_budget_s,
                                      list(fixed_order))


def compute_render_order(graph, method="beam", **options):
    """GRAFX's ``compute_render_order``: ``(type_sequence, render_order)``, the type name of each
    step and the step of each node (a LongTensor over the nodes in ascending id; -1 for nodes
    on no path from an ``in`` to an ``out``)."""
    s = schedule(graph, method, **options)
    names = [t["name"] for t in graph.types]  # by type id
    return ([names[t] for t in s.step_types],
            torch.tensor(s.step_of_rows(graph.num_nodes), dtype=torch.long))


def render(plan, processors, parameters, sources, *, frozen_types=(), check_finite=True,
           observer=None, gradient_hooks=None, node_hooks=None, edge_hooks=None,
           return_aux=False, sample_rate=44100):
    """Renders a plan on torch tensors; differentiable in the parameters and the sources.

    sources     K×C×L, or B×K×C×L for a batch of source sets (source k feeds the k-th ``in``
                node in id order)
    parameters  ``{type: {name: tensor}}`` (create_parameters), a GraphParameters, or a
                ModuleDict of ParameterDicts; each N_t×... or B×N_t×...
    returns     the outputs, n_out×C×L or B×n_out×C×L (and the auxiliary losses
                ``{type: {name: [N_t]}}`` with ``return_aux``)

    frozen_types get no gradient; ``observer(step)`` sees each step's nodes, inputs and outputs;
    ``gradient_hooks[type](parameter_name, gradient)`` returns the gradient to use instead for
    that type's parameters (rows in graph order).

    Signal hooks change the cotangent of a node's outputs (``node_hooks[node_id]``) or of one
    edge (``edge_hooks[(source, dest, outlet, inlet)]``) as it flows back, B×C×L: a callable of
    the cotangent, ``"stop"``, ``("scale", factor)`` or ``("clip_norm", max_norm)``.

    ``processors`` is a ProcessorSet (make_processors), or GRAFX's dict of type -> module, made
    into one as make_processors does (at ``sample_rate``; made once for the same graph and
    modules).

    PyTorch's forward mode works through it: with ``torch.autograd.forward_ad``, dual parameters
    or sources give dual outputs (see grafx.jvp and grafx.hvp).
    """
    _refuse_tracing("render")
    if isinstance(processors, collections.abc.Mapping):
        processors = _processor_set(plan, processors, sample_rate)
    if not isinstance(sources, torch.Tensor):
        raise render_error("grafx.render.sources", "sources: expected a K×C×L or B×K×C×L "
                           f"tensor, but got {type(sources).__name__}", TypeError)
    parameters = _raw(parameters)
    if gradient_hooks:
        parameters = _with_gradient_hooks(parameters, gradient_hooks)
    for name, hooks in (("node_hooks", node_hooks), ("edge_hooks", edge_hooks)):
        if hooks is not None and not hasattr(hooks, "items"):
            raise render_error("grafx.render.hooks", f"{name}: expected a dict, but got "
                               f"{type(hooks).__name__}", TypeError)
    outputs, aux = _grafx.render(plan, processors, parameters, sources, list(frozen_types),
                                 check_finite, observer, dict(node_hooks or {}),
                                 dict(edge_hooks or {}))
    return (outputs, aux) if return_aux else outputs


def _with_gradient_hooks(parameters, hooks):
    """The parameters, those of hooked types through a view that carries the hook (torch's own
    ``register_hook``; the caller's tensors keep no hook)."""
    result = dict(parameters)
    for type_name, hook in hooks.items():
        if not callable(hook):
            raise render_error("grafx.render.hooks", f"gradient_hooks[{type_name!r}]: expected a "
                               f"callable, but got {type(hook).__name__}", TypeError)
        if type_name not in parameters:
            raise render_error("grafx.render.hooks", f"gradient_hooks[{type_name!r}]: expected "
                               "a type of the parameters, but they have no such type "
                               f"(types: {', '.join(sorted(parameters))})", KeyError)
        group = {}
        for name, tensor in parameters[type_name].items():
            if tensor.requires_grad:
                view = tensor.view_as(tensor)
                view.register_hook(lambda gradient, hook=hook, name=name: hook(name, gradient))
                tensor = view
            group[name] = tensor
        result[type_name] = group
    return result


def render_naive(graph, processors, parameters, sources, *, check_finite=True):
    """Every node on its own in a topological order: the reference ``render`` must equal.
    Outputs that are not finite (NaN or infinity, e.g. from huge sources) raise
    ``grafx.RenderError`` [grafx.render.non_finite] unless ``check_finite`` is false."""
    _refuse_tracing("render_naive")
    outputs = _grafx.render_naive(graph, processors, _raw(parameters), sources)
    if check_finite:
        _check_finite_outputs(outputs, "render_naive")
    return outputs


def render_in_chunks(plan, processors, parameters, sources, chunk_samples=1 << 19, *,
                     check_finite=True):
    """A whole song rendered in chunks (no gradients): equal to ``render`` up to rounding, in
    memory bounded by the chunk. As ``render``, non-finite sources, parameters or node outputs
    raise ``grafx.RenderError`` [grafx.render.non_finite] unless ``check_finite`` is false."""
    _refuse_tracing("render_in_chunks")
    return _grafx.render_in_chunks(plan, processors, _raw(parameters), sources, chunk_samples,
                                   bool(check_finite))


def _check_finite_outputs(outputs, where):
    """Raises [grafx.render.non_finite] naming the first NaN or infinite output sample
    (outputs: [B×]n_out×C×L)."""
    bad = ~torch.isfinite(outputs.detach())
    if bool(bad.any()):
        index = tuple(int(i) for i in bad.nonzero()[0])
        value = float(outputs.detach()[index])
        raise render_error("grafx.render.non_finite", f"{where}: output {index[-3]}, channel "
                           f"{index[-2]}, sample {index[-1]} is {value} (NaN or infinity; "
                           "render with check_finite names the node that made it)")


def adjoint_plan(plan, processors=None, *, frozen_types=(), recompute=(), source_gradients=True):
    """The plan's reverse program (the backward pass): ``print(grafx.adjoint_plan(plan))`` shows
    each step's cotangent reads, vector-Jacobian product, gradient writes and the transposes of
    its reads. Types in ``frozen_types`` get no gradient (steps that lead to no gradient are
    left out); those in ``recompute`` recompute their forward pass instead of saving it. With
    ``processors``, types without parameters are known too."""
    parameterless = []
    if processors is not None:
        parameterless = [t for t in plan.type_sequence
                         if t not in ("in", "out", "mix")
                         and not processors[t].parameter_specs()]
    return _grafx.adjoint_plan(plan, list(frozen_types), list(recompute), bool(source_gradients),
                               sorted(set(parameterless)))


def batch_grafx(graphs):
    """GRAFX's ``batch_grafx``: several graphs of the same node types as one disconnected graph,
    so that one render handles them all (as GRAFX intends; its own fails as written).

    Graph g's nodes keep their order, with ids shifted past graph g-1's. Render the union with
    each graph's sources concatenated along the source axis and each type's parameters along
    the node axis, in list order; its outputs come in the same order. ``render_graphs`` does
    all of that."""
    union, _, _, _ = _grafx.batch_graphs(list(graphs))
    return union


def render_graphs(graphs, processors, parameters, sources, *, method="optimal",
                  check_finite=True):
    """Several graphs of the same node types rendered in one pass (graph-level batching):
    ``parameters`` and ``sources`` are lists with one entry per graph, as ``render`` takes them
    (K_g×C×L, or B×K_g×C×L with one B); returns a list of each graph's outputs, differentiable
    in every parameter and source, equal to rendering each graph on its own."""
    _refuse_tracing("render_graphs")
    graphs, parameters, sources = list(graphs), list(parameters), list(sources)
    if not all(isinstance(s, torch.Tensor) for s in sources):
        raise render_error("grafx.render.sources", "render_graphs: expected a list of source "
                           "tensors, one per graph", TypeError)
    return _grafx.render_graphs(graphs, processors, [_raw(p) for p in parameters], sources,
                                method, bool(check_finite))
