"""`pip wheel` of the source tree (pyproject.toml, setup.py) builds the package through CMake; the
wheel installs into a virtual environment and, imported from there, renders as the build tree's
module does, with the grafx program inside the package.

The wheel is built from the CMake tree this test run uses (GRAFX_CMAKE_BUILD_DIR), which is
already built: CMake finds nothing to do, so the test takes seconds and changes nothing the
other tests use. A tree that is not up to date is not built here (the test is skipped): that
would change the module and program under the other tests.
"""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

import pytest
import torch

from conftest import SOURCE_DIR

GRAFX_BIN = pathlib.Path(os.environ.get("GRAFX_BIN", SOURCE_DIR / "build" / "bin" / "grafx"))
GRAFX_BIN = GRAFX_BIN.resolve()
BUILD_DIR = GRAFX_BIN.parent.parent  # the CMake tree of this test run

# The same tiny render in the installed package and in the build tree's.
RENDER = """
import sys
import torch
import grafx
import grafx._program

graph = grafx.mixing_console(n_tracks=2, n_groups=1, chain="eg")
processors = grafx.make_processors(graph, sample_rate=44100)
parameters = grafx.musical_parameters(graph, processors, seed=1)
tracks = 0.1 * torch.randn(2, 2, 4410, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    mix = grafx.render(grafx.compute_render_plan(graph), processors, parameters, tracks)
torch.save(mix, sys.argv[1])
print(grafx.__file__)
print(grafx._program.PROGRAM)
"""


def run(command, cwd, env, timeout=300):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, (f"{' '.join(map(str, command))}: exit {result.returncode}\n"
                                    f"{result.stdout}\n{result.stderr}")
    return result.stdout


def clean_environment(**changes):
    """This process's environment without its PYTHONPATH (the build tree's) and offline pip."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRAFX_BIN")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.update(changes)
    return env


def cache_entry(name):
    for line in (BUILD_DIR / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    return None


def targets_up_to_date():
    """None when building the tree's module and program would do nothing, else why it would do
    something (or may). Read-only: `ninja -n` itself would stop at CMake's glob check, which a
    dry run always takes as a change, so its parts are checked on copies."""
    if not (BUILD_DIR / "CMakeCache.txt").exists() or not (BUILD_DIR / "python" / "grafx").is_dir():
        return f"no CMake tree with the Python module at {BUILD_DIR}"
    if cache_entry("CMAKE_GENERATOR") != "Ninja":
        return "the build tree is not a Ninja tree, whose state a dry run can tell"
    manifest = BUILD_DIR / "build.ninja"
    text = manifest.read_text()
    inputs = re.search(r"^build build\.ninja: RERUN_CMAKE [^|\n]*\|(.*)$", text, re.M)
    for name in inputs.group(1).split() if inputs else []:
        path = BUILD_DIR / name
        if path.exists() and path.stat().st_mtime > manifest.stat().st_mtime:
            return f"the build tree is not up to date ({name} changed): build it first"
    with tempfile.TemporaryDirectory() as scratch:
        globs = pathlib.Path(scratch) / "globs.cmake"
        verify = BUILD_DIR / "CMakeFiles" / "VerifyGlobs.cmake"
        if verify.exists():
            globs.write_text(re.sub(r"^\s*file\(TOUCH_NOCREATE.*$", "", verify.read_text(),
                                    flags=re.M))
            checked = subprocess.run(["cmake", "-P", str(globs)], capture_output=True, text=True)
            if checked.returncode != 0 or "GLOB mismatch" in checked.stdout + checked.stderr:
                return "the build tree is not up to date (files added or removed): build it first"
        copy = pathlib.Path(scratch) / "targets.ninja"  # not build.ninja: no manifest check
        copy.write_text(text)
        printed = subprocess.run(["ninja", "-C", str(BUILD_DIR), "-f", str(copy), "-n",
                                  "grafx_python", "grafx_cli"], capture_output=True, text=True)
    work = [line for line in printed.stdout.splitlines() if line.startswith("[")]
    if printed.returncode != 0 or work:
        return f"the build tree is not up to date ({(work or [printed.stderr])[0]}): build it first"
    return None


@pytest.fixture
def venv(tmp_path):
    """A virtual environment over the system's packages (torch), with their pip and setuptools."""
    if importlib.util.find_spec("venv") is None:
        pytest.skip("the venv module is not available (python3-venv)")
    folder = tmp_path / "venv"
    # Without its own pip: the system's pip, seen through --system-site-packages, serves it.
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                           str(folder)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a virtual environment: {made.stderr.strip()}")
    python = folder / "bin" / "python"
    tools = subprocess.run([str(python), "-c",
                            "import setuptools, wheel, pip; print(setuptools.__version__)"],
                           capture_output=True, text=True, env=clean_environment())
    if tools.returncode != 0:
        pytest.skip("pip, setuptools or wheel is not installed (python3-pip, python3-setuptools, "
                    f"python3-wheel): {tools.stderr.strip().splitlines()[-1:]}")
    if int(tools.stdout.split(".")[0]) < 61:
        pytest.skip(f"setuptools {tools.stdout.strip()} predates pyproject.toml's [project] (61)")
    return python


def test_wheel_installs_and_renders_as_the_build_tree(venv, tmp_path):
    why = targets_up_to_date()
    if why:
        pytest.skip(why)
    wheels = tmp_path / "wheels"
    run([venv, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", wheels, SOURCE_DIR],
        tmp_path, clean_environment(GRAFX_CMAKE_BUILD_DIR=str(BUILD_DIR)))
    [wheel] = wheels.glob("*.whl")
    version = re.search(r"project\(grafx\s+VERSION\s+([0-9.]+)",
                        (SOURCE_DIR / "CMakeLists.txt").read_text()).group(1)
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert wheel.name.startswith(f"grafx-{version}-{tag}-{tag}-linux_"), wheel.name

    # The wheel holds the sources' .py files, the extension's stub _grafx.pyi and the marker
    # py.typed, the tree's extension and program, and _program.py.
    built = BUILD_DIR / "python" / "grafx"
    sources = SOURCE_DIR / "python" / "grafx"
    module = "grafx/_grafx" + sysconfig.get_config_var("EXT_SUFFIX")
    expected = {f"grafx/{p.relative_to(sources).as_posix()}": p.read_bytes()
                for p in [*sources.rglob("*.py"), *sources.rglob("*.pyi"),
                          *sources.rglob("py.typed")] if "__pycache__" not in p.parts}
    expected[module] = (BUILD_DIR / module.replace("grafx/", "python/grafx/")).read_bytes()
    expected["grafx/bin/grafx"] = GRAFX_BIN.read_bytes()
    expected["grafx/lib/grafx/grafx_lv2.so"] = (
        GRAFX_BIN.parent.parent / "lib" / "grafx" / "grafx_lv2.so").read_bytes()
    with zipfile.ZipFile(wheel) as archive:
        package = {n for n in archive.namelist() if n.startswith("grafx/")}
        assert package == set(expected) | {"grafx/_program.py"}
        for name, data in expected.items():
            assert archive.read(name) == data, name
        assert archive.getinfo("grafx/bin/grafx").external_attr >> 16 & 0o111
    # Nothing written into the sources (setuptools' scratch and egg-info are in the tree).
    assert not [*SOURCE_DIR.glob("*.egg-info"), *SOURCE_DIR.glob("python/*.egg-info")]

    run([venv, "-m", "pip", "install", "--no-deps", "--no-index", wheel], tmp_path,
        clean_environment())
    elsewhere = tmp_path / "elsewhere"  # neither the sources nor the build tree
    elsewhere.mkdir()
    installed = run([venv, "-c", RENDER, tmp_path / "installed.pt"], elsewhere,
                    clean_environment()).splitlines()
    reference = run([sys.executable, "-c", RENDER, tmp_path / "reference.pt"], elsewhere,
                    clean_environment(PYTHONPATH=str(BUILD_DIR / "python"))).splitlines()

    site = pathlib.Path(installed[0]).parent.parent
    assert site.is_relative_to(venv.parent.parent), f"imported {installed[0]}, not the venv's"
    assert pathlib.Path(reference[0]).parent == built
    mix = torch.load(tmp_path / "installed.pt")
    reference_mix = torch.load(tmp_path / "reference.pt")
    assert mix.shape == (1, 2, 4410) and mix.abs().max() > 0
    assert torch.equal(mix, reference_mix)

    program = pathlib.Path(installed[1])
    assert program == site / "grafx" / "bin" / "grafx" and os.access(program, os.X_OK)
    assert f"grafx {version}" in run([program, "--version"], elsewhere, clean_environment())
    # The installed program finds the plugin library it copies into LV2 bundles.
    run([program, "console", "--tracks", "1", "-o", elsewhere / "g.json"], elsewhere,
        clean_environment())
    run([program, "export-lv2", elsewhere / "g.json", "--sample-rate", "48000", "-o",
         elsewhere / "g.lv2"], elsewhere, clean_environment())
    assert (elsewhere / "g.lv2" / "grafx_lv2.so").read_bytes() == \
        expected["grafx/lib/grafx/grafx_lv2.so"]
