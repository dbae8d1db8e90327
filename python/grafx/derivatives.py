"""Forward mode and Hessian-vector products through grafx renders, on PyTorch's own forward mode
(``torch.autograd.forward_ad``): grafx's kernels carry tangents, so dual tensors pass through
``grafx.render`` like any other tensors.

    >>> outputs, tangent = grafx.jvp(plan, processors, params, sources, {"eq": {"log_magnitude": v}})
    >>> value, gradient, hv = grafx.hvp(lambda p: loss(grafx.render(plan, processors, p, x)),
    ...                                 params, direction)
"""

import torch
import torch.autograd.forward_ad as fwAD

from ._errors import render_error
from .parameters import _raw
from .render import render


def _checked_direction(parameters, direction):
    """The direction as {type: {name: tensor}}, refusing names the parameters lack."""
    direction = _raw(direction) if direction else {}
    for type_name, group in direction.items():
        if type_name not in parameters:
            raise render_error("grafx.render.tangents", f"the direction names type "
                               f"{type_name!r}, which has no parameters", KeyError)
        for name, tangent in group.items():
            if name not in parameters[type_name]:
                raise render_error("grafx.render.tangents", f"the direction names "
                                   f"{type_name}.{name}, which is not a parameter of "
                                   f"{type_name}", KeyError)
            value = parameters[type_name][name]
            if tangent.shape != value.shape or tangent.dtype != value.dtype:
                raise render_error("grafx.render.tangents", f"the direction of "
                                   f"{type_name}.{name} must be shaped and typed like it "
                                   f"({tuple(value.shape)} {value.dtype}), but is "
                                   f"{tuple(tangent.shape)} {tangent.dtype}", ValueError)
    return direction


def jvp(plan, processors, parameters, sources, tangents, source_tangent=None, **render_options):
    """The outputs of a render and their directional derivative along ``tangents`` (any subset
    of the parameters, shaped like them) and ``source_tangent``: ``(outputs, tangent)``, from one
    render in forward mode (no backward pass). ``render_options`` are ``grafx.render``'s."""
    parameters = _raw(parameters)
    tangents = _checked_direction(parameters, tangents)
    with fwAD.dual_level():
        duals = {type_name: {name: (fwAD.make_dual(value, tangents[type_name][name])
                                    if name in tangents.get(type_name, {}) else value)
                             for name, value in group.items()}
                 for type_name, group in parameters.items()}
        if source_tangent is not None:
            sources = fwAD.make_dual(sources, source_tangent)
        outputs = render(plan, processors, duals, sources, **render_options)
        primal, tangent = fwAD.unpack_dual(outputs)
        return primal, torch.zeros_like(primal) if tangent is None else tangent


def hvp(loss, parameters, direction):
    """``(value, gradient, hessian_vector)`` of a scalar ``loss(parameters)`` along
    ``direction`` (any subset of the parameters), forward over reverse: the gradient is taken
    inside forward mode, and its tangent is H·v. ``loss`` is called once; gradient and H·v come
    as ``{type: {name: tensor}}`` shaped like the parameters."""
    parameters = _raw(parameters)
    direction = _checked_direction(parameters, direction)
    keys, leaves = [], []
    with fwAD.dual_level():
        duals = {}
        for type_name, group in parameters.items():
            for name, value in group.items():
                leaf = value.detach().requires_grad_(True)
                keys.append((type_name, name))
                leaves.append(leaf)
                tangent = direction.get(type_name, {}).get(name)
                duals.setdefault(type_name, {})[name] = (
                    fwAD.make_dual(leaf, tangent) if tangent is not None else leaf)
        value = loss(duals)
        if value.numel() != 1:
            raise render_error("grafx.render.tangents", "hvp: expected a scalar loss, but got "
                               f"{tuple(value.shape)}", ValueError)
        grads = torch.autograd.grad(value.reshape(()), leaves, allow_unused=True)
        gradient, hessian_vector = {}, {}
        for (type_name, name), leaf, g in zip(keys, leaves, grads):
            if g is None:
                g = torch.zeros_like(leaf)
            primal, tangent = fwAD.unpack_dual(g)
            gradient.setdefault(type_name, {})[name] = primal.detach()
            hessian_vector.setdefault(type_name, {})[name] = (
                torch.zeros_like(leaf) if tangent is None else tangent.detach())
        return fwAD.unpack_dual(value).primal.detach(), gradient, hessian_vector
