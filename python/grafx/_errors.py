"""grafx errors raised from Python: the layer's ``grafx.Error`` subclass with the stable code of
docs/errors.md, as the C++ library's are (``str(e)`` reads ``[code] message``; ``e.code``,
``e.message``).

Where Python's own exception type is what a caller catches (a ``TypeError`` for an argument of
the wrong kind, a ``KeyError`` for a name that is absent), the error is both: a class deriving
the grafx layer's and that type, so ``except grafx.RenderError`` and ``except TypeError`` both
catch it.
"""

import functools

from . import _grafx

_mixed = {}


def _class(layer, also):
    if also is None:
        return layer
    key = (layer, also)
    if key not in _mixed:
        _mixed[key] = type(layer.__name__, (layer, also),
                           {"__module__": layer.__module__, "__str__": Exception.__str__})
    return _mixed[key]


def error(layer, code, message, also=None):
    """An exception of ``layer`` (e.g. ``_grafx.RenderError``), also of ``also`` if given,
    carrying ``code`` and ``message``."""
    exception = _class(layer, also)(f"[{code}] {message}")
    exception.code = code
    exception.message = message
    return exception


def render_error(code, message, also=None):
    return error(_grafx.RenderError, code, message, also)


def graph_error(code, message, also=None):
    return error(_grafx.GraphError, code, message, also)


def fit_error(code, message, also=None):
    return error(_grafx.FitError, code, message, also)


def processor_error(code, message, also=None):
    return error(_grafx.ProcessorError, code, message, also)


def io_error(code, message, also=None):
    return error(_grafx.IoError, code, message, also)


def sample_rate(value, where, layer=None, code="grafx.processor.config"):
    """A sample rate as the library takes it (whole Hz): ``value`` if it is a whole number,
    else an error of ``layer`` (``grafx.ProcessorError`` by default) with ``code``, also a
    ``ValueError``."""
    try:
        rate = int(value)
        whole = rate == value
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or isinstance(value, bool):
        raise error(layer or _grafx.ProcessorError, code, f"{where}: expected a sample rate "
                    f"in whole Hz, but got {value!r}", ValueError)
    return rate


def code_argument_errors(module):
    """Gives the TypeError pybind11 raises for arguments of the wrong types (a message of several
    lines, without a code) the code grafx.python.arguments, on one line: wraps every function of
    the extension ``module`` and every method of its classes, in place."""
    for name, value in list(vars(module).items()):
        if _is_bound_function(value):
            setattr(module, name, _coded(value))
        elif isinstance(value, type) and not issubclass(value, BaseException):
            for attribute, member in list(vars(value).items()):
                if _is_bound_function(member):
                    setattr(value, attribute, _coded(member))
                elif isinstance(member, staticmethod) and _is_bound_function(member.__func__):
                    setattr(value, attribute, staticmethod(_coded(member.__func__)))


def _is_bound_function(value):
    return type(value).__name__ in ("builtin_function_or_method", "instancemethod")


def _coded(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (TypeError, RuntimeError) as e:
            text = str(e)
            if isinstance(e, _grafx.Error) or not (
                    (isinstance(e, TypeError) and "incompatible " in text)
                    or text.startswith("Unable to cast")):  # pybind11's own texts
                raise
            raise error(_grafx.Error, "grafx.python.arguments", _argument_message(text),
                        TypeError) from None
    return call


def _argument_message(text):
    """pybind11's "f(): incompatible function arguments. The following argument types are
    supported: 1. (x: int) -> None ... Invoked with: 'a'" as one line."""
    if "Invoked with:" not in text:
        return " ".join(text.split())
    head, _, rest = text.partition(":")
    signatures, _, given = rest.partition("Invoked with:")
    expected = [line.strip().split(". ", 1)[-1].rsplit(" -> ", 1)[0]
                for line in signatures.splitlines()[1:] if line.strip()]
    expected = [s.replace("at::Tensor", "torch.Tensor") for s in expected]
    return (f"{head}: arguments of the wrong types ({' '.join(given.split())}); expected "
            + " or ".join(expected))


def device(value, where, layer, code):
    """``torch.device(value)``, or an error of ``layer`` with ``code`` (also a ValueError) naming
    ``where`` for a device torch does not know (its own error has no code)."""
    import torch
    try:
        return torch.device(value)
    except (RuntimeError, TypeError) as e:
        raise error(layer, code, f"{where}: device {value!r} is not a device torch knows "
                    f"({str(e).splitlines()[0]})", ValueError) from None
