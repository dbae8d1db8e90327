"""The Python API is documented and typed: every public function, class, method and property of
``grafx`` has a docstring (not only pybind11's signature line), ``help()`` shows them, and the
committed stub of the extension, python/grafx/_grafx.pyi (scripts/make_stubs.py), names every
function, method and property of the built module with the same parameters, and nothing else."""

import ast
import inspect
import pathlib
import pydoc
import re
import subprocess
import sys
import types

import pytest

import grafx
from grafx import _grafx

SOURCE_DIR = pathlib.Path(__file__).resolve().parent.parent / "grafx"
STUB = SOURCE_DIR / "_grafx.pyi"

# A pybind11 signature line: "name(a: int, b: str = '') -> None", "(arg0: X) -> int" (a property
# getter), or "1. name(...) -> ..." (an overload).
SIGNATURE_LINE = re.compile(r"^\s*(?:\d+\.\s+)?\w*\(.*\)\s*->\s*\S.*$")


def described(doc):
    """Whether `doc` says something beyond pybind11's signature lines."""
    lines = [line for line in (doc or "").splitlines() if line.strip()]
    return any(not SIGNATURE_LINE.match(line) and line.strip() not in (
        "Overloaded function.") and not line.strip().endswith("(*args, **kwargs)")
        for line in lines)


def public_api():
    """(qualified name, object, its docstring) of each public function, class, method and
    property of grafx: names in dir(grafx) without a leading underscore, modules left out."""
    result = []
    for name in sorted(dir(grafx)):
        value = getattr(grafx, name)
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if not (callable(value) or isinstance(value, type)):
            continue
        result.append((name, value, value.__doc__))
        if isinstance(value, type):
            for member, attribute in vars(value).items():
                if member.startswith("_"):
                    continue
                if isinstance(attribute, (staticmethod, classmethod)):
                    attribute = attribute.__func__
                if isinstance(attribute, property) or callable(attribute) or \
                        inspect.isdatadescriptor(attribute):
                    result.append((f"{name}.{member}", attribute, attribute.__doc__))
    return result


def test_the_public_api_is_walked():
    names = {name for name, _, _ in public_api()}
    # Functions, classes, C++ and Python methods, C++ properties and errors are all walked.
    for expected in ("render", "to_tensor", "Graph", "Graph.connect", "Graph.from_json",
                     "Graph.num_nodes", "FitOptions.lr", "GraphParameters.items",
                     "MixLoss.forward", "RenderError", "Schedule.steps"):
        assert expected in names
    assert "processors" not in names and "interop" not in names  # modules


def test_every_public_name_has_a_docstring():
    missing = [name for name, _, doc in public_api() if not described(doc)]
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"


def test_a_signature_line_alone_does_not_count():
    assert not described("add(self: grafx._grafx.Graph, node_type: str, name: str = '') -> int\n")
    assert not described("(arg0: grafx._grafx.Schedule) -> int\n")
    assert described("add(self: Graph, node_type: str) -> int\n\nAdds a node; returns its id.\n")


def _help(obj):
    return " ".join(pydoc.render_doc(obj, renderer=pydoc.plaintext).split())


@pytest.mark.parametrize("cls", [grafx.Graph, grafx.RenderPlan, grafx.Schedule, grafx.FitOptions,
                                 grafx.GraphTensor, grafx.ProcessorSet, grafx.Processor])
def test_help_shows_each_method_and_its_docstring(cls):
    text = _help(cls)
    for member, attribute in vars(cls).items():
        if member.startswith("_"):
            continue
        if isinstance(attribute, staticmethod):
            attribute = attribute.__func__
        assert member in text, f"help({cls.__name__}) does not mention {member}"
        doc = [line for line in (attribute.__doc__ or "").splitlines()
               if line.strip() and not SIGNATURE_LINE.match(line)]
        first_words = " ".join(" ".join(doc).split()[:6])
        assert first_words in text, f"help({cls.__name__}) lacks {member}'s {first_words!r}"


def test_help_on_functions_shows_the_docstring():
    for function in (grafx.resample, grafx.load_audio, grafx.to_tensor, grafx.prune_randomly,
                     grafx.render):
        doc = [line for line in function.__doc__.splitlines()
               if line.strip() and not SIGNATURE_LINE.match(line)]
        assert " ".join(" ".join(doc).split()[:5]) in _help(function)


def test_the_version_is_the_builds():
    assert grafx.__version__ == _grafx.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", grafx.__version__)


# ---- the stub -----------------------------------------------------------------------------


def split_parameters(text):
    """Parameters of a signature's parenthesis, split at commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, ""
    for c in text:
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += c
    return [p.strip() for p in parts + [current] if p.strip()]


def runtime_signatures(function):
    """[(parameter names, names with defaults)] of each pybind11 signature of `function`."""
    doc = function.__doc__ or ""
    lines = doc.splitlines()
    if len(lines) > 1 and lines[1].strip() == "Overloaded function.":
        lines = [line for line in lines[2:] if re.match(r"^\d+\.\s", line)]
    else:
        lines = lines[:1]
    result = []
    for line in lines:
        match = re.match(r"^\s*(?:\d+\.\s+)?\w*\((.*)\)\s*->", line)
        assert match, f"no pybind11 signature in {doc!r}"
        parameters = split_parameters(match.group(1))
        names = [p.split("=")[0].split(":")[0].strip() for p in parameters]
        defaults = [n for n, p in zip(names, parameters) if "=" in p]
        result.append((names, defaults))
    return result


def stub_signature(node):
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    names = [a.arg for a in positional + arguments.kwonlyargs]
    with_defaults = [a.arg for a in positional[len(positional) - len(arguments.defaults):]]
    with_defaults += [a.arg for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d]
    if arguments.vararg or arguments.kwarg:
        names.append("*")  # pybind11 signatures never have them: a mismatch
    return names, with_defaults


def decorators(node):
    return {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in
            node.decorator_list}


@pytest.fixture(scope="module")
def stub():
    return ast.parse(STUB.read_text(), filename=str(STUB))


def stub_members(body):
    """{name: [nodes]} of the functions, properties and annotated attributes of a body."""
    members = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            members.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.setdefault(node.target.id, []).append(node)
    return members


def is_bound_function(value):
    """A pybind11 function, or grafx's wrapper of one (which keeps its __doc__)."""
    kind = type(value).__name__
    return kind in ("builtin_function_or_method", "instancemethod") or (
        kind == "function" and hasattr(value, "__wrapped__"))


def runtime_members(cls):
    """{name: (kind, object)} of the methods (with a pybind11 signature), static methods and
    properties of an extension class."""
    members = {}
    for name, value in vars(cls).items():
        if isinstance(value, staticmethod) and is_bound_function(value.__func__):
            members[name] = ("static", value.__func__)
        elif isinstance(value, property):
            members[name] = ("property", value)
        elif is_bound_function(value):
            members[name] = ("method", value)
    return members


def compare(where, function, nodes):
    """The stub's overloads `nodes` of `function` against its runtime signatures."""
    runtime = runtime_signatures(function)
    stubbed = [stub_signature(node) for node in nodes]
    assert len(stubbed) == len(runtime), f"{where}: {len(runtime)} runtime signatures, " \
        f"{len(stubbed)} in the stub"
    for (names, defaults), (stub_names, stub_defaults) in zip(runtime, stubbed):
        assert stub_names == names, f"{where}: the stub has parameters {stub_names}, the " \
            f"module {names}"
        assert stub_defaults == defaults, f"{where}: defaults of {stub_defaults} in the stub, " \
            f"of {defaults} in the module"


def test_the_stub_is_next_to_the_module_with_py_typed():
    package = pathlib.Path(_grafx.__file__).parent
    assert (package / "_grafx.pyi").read_text() == STUB.read_text(), \
        "the build's _grafx.pyi differs from the source's: rebuild (CMake copies it)"
    assert (package / "py.typed").exists() and (SOURCE_DIR / "py.typed").exists()


def test_the_stub_names_torch_types():
    text = STUB.read_text()
    assert "\nimport torch\n" in text
    assert "::" not in text  # at::Tensor and the like mapped to Python names
    assert "torch.Tensor" in text


def test_the_stub_has_the_modules_functions(stub):
    runtime = {name: value for name, value in vars(_grafx).items()
               if not (name.startswith("__") and name.endswith("__"))
               and not isinstance(value, type) and callable(value)}
    stubbed = {name: nodes for name, nodes in stub_members(stub.body).items()
               if isinstance(nodes[0], ast.FunctionDef)}
    assert sorted(stubbed) == sorted(runtime)
    for name, function in runtime.items():
        compare(name, function, stubbed[name])
    assert "__version__" in stub_members(stub.body)


def test_the_stub_has_the_modules_classes_and_methods(stub):
    runtime = {name: value for name, value in vars(_grafx).items() if isinstance(value, type)}
    classes = {node.name: node for node in stub.body if isinstance(node, ast.ClassDef)}
    assert sorted(classes) == sorted(runtime)
    n_checked = 0
    for name, cls in runtime.items():
        node = classes[name]
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        assert bases == [b.__name__ for b in cls.__bases__ if b.__name__ != "pybind11_object"]
        members = runtime_members(cls)
        stubbed = {member: nodes for member, nodes in stub_members(node.body).items()
                   if not (member == "__hash__" or (issubclass(cls, BaseException)
                                                    and member in ("code", "message")))}
        assert sorted(stubbed) == sorted(members), f"class {name}"
        for member, (kind, value) in members.items():
            where, nodes = f"{name}.{member}", stubbed[member]
            if kind == "property":
                assert len(nodes) == 1, where
                if value.fset is None:  # read-only: a @property
                    assert isinstance(nodes[0], ast.FunctionDef), where
                    assert "property" in decorators(nodes[0]), where
                else:  # settable: an attribute
                    assert isinstance(nodes[0], ast.AnnAssign), where
            else:
                assert all(isinstance(n, ast.FunctionDef) for n in nodes), where
                assert ("staticmethod" in decorators(nodes[0])) == (kind == "static"), where
                compare(where, value, nodes)
            n_checked += 1
    assert n_checked > 100


def test_mypy_accepts_the_stub(tmp_path):
    """The stub is one a type checker reads without complaint (skipped without mypy: Debian's
    package, which scripts/setup.sh --tests installs)."""
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=skip",
         "--cache-dir", str(tmp_path), str(STUB)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
