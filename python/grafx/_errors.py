"""grafx errors raised from Python: the layer's ``grafx.Error`` subclass with the stable code of
docs/errors.md, as the C++ library's are (``str(e)`` reads ``[code] message``; ``e.code``,
``e.message``).

Where Python's own exception type is what a caller catches (a ``TypeError`` for an argument of
the wrong kind, a ``KeyError`` for a name that is absent), the error is both: a class deriving
the grafx layer's and that type, so ``except grafx.RenderError`` and ``except TypeError`` both
catch it.
"""

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
