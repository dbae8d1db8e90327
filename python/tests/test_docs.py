"""Every code block of README.md and docs/python.md runs as written, so that neither can rot.

Each block is matched to how it runs by its language and first line (RUNNERS); a block that
matches none fails the test, so a new block comes with a way to run it. The README's C++ block is
compiled and run by CTest (`example_readme`, examples/CMakeLists.txt); its output block is
compared with what `scripts/demo.sh` prints.
"""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import warnings

import pytest
import torch

import grafx
from conftest import SOURCE_DIR
from test_pip_install import targets_up_to_date

FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```[ \t]*$", re.M | re.S)
GRAFX_BIN = pathlib.Path(os.environ.get("GRAFX_BIN", SOURCE_DIR / "build" / "bin" / "grafx")).resolve()
BUILD_DIR = GRAFX_BIN.parent.parent
NUMBER = r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?"


def code_blocks(page):
    """(language, code, line) of every fenced block of a page."""
    text = (SOURCE_DIR / page).read_text()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def run_bash(code, cwd, env=None, timeout=900):
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def environment(**changes):
    env = dict(os.environ)
    env.update(changes)
    return env


def with_grafx_on_path(env=None):
    env = env or environment()
    env["PATH"] = f"{GRAFX_BIN.parent}{os.pathsep}{env['PATH']}"
    return env


def output_pattern(line):
    """A README output line as a pattern: its numbers stand for any numbers."""
    parts = re.split(NUMBER, line.strip())[::3]  # re.split keeps the groups: skip them
    return re.compile(r"\s*" + NUMBER.join(re.escape(p) for p in parts) + r"\s*$")


def assert_prints(shown, printed):
    """Each line the README shows is printed, in that order, its numbers aside."""
    lines = printed.splitlines()
    at = 0
    for line in shown.strip().splitlines():
        pattern = output_pattern(line)
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        assert at < len(lines), f"the README shows\n  {line}\nbut the program printed\n{printed}"
        at += 1


def quick_start(code, following, tmp_path):
    # The test command is what CI runs; the demo command runs here (shorter, elsewhere).
    assert "scripts/test.sh" in code and "scripts/demo.sh" in code
    assert "scripts/test.sh" in (SOURCE_DIR / ".ci" / "run").read_text()
    printed = run_bash(f"scripts/demo.sh --steps 30 -o {tmp_path / 'demo'}", SOURCE_DIR,
                       environment(GRAFX_BUILD_DIR=str(BUILD_DIR)))
    assert (tmp_path / "demo" / "report.html").is_file()
    assert_prints(following.replace("demo-output/", f"{tmp_path / 'demo'}/"), printed)


def install(code, tmp_path):
    prefix = tmp_path / "prefix"
    site = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/dist-packages"
    env = environment(GRAFX_PREFIX=str(prefix), GRAFX_BUILD_DIR=str(BUILD_DIR),
                      PATH=f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}",
                      PYTHONPATH=str(prefix / site))
    printed = run_bash(f"cd {SOURCE_DIR}\n{code}", tmp_path, env)
    assert "grafx 0.1.0" in printed and "Graph with 0 nodes" in printed
    assert (prefix / "bin" / "grafx").is_file()
    imported = run_bash("/usr/bin/python3 -c 'import grafx; print(grafx.__file__)'", tmp_path, env)
    assert imported.startswith(str(prefix / site)), imported


def song_folder(folder):
    """bass.wav drums.wav gtr.wav vox.wav (4 s of the test stems) and their mix.wav."""
    names = {"bass": "bass", "drums": "drums", "gtr": "guitar", "vox": "singing"}
    tracks = []
    for name, stem in names.items():
        samples, rate = grafx.load_audio(str(SOURCE_DIR / "testdata" / f"{stem}.flac"))
        samples = samples[:, 2 * rate:6 * rate]
        grafx.save_audio(str(folder / f"{name}.wav"), samples, rate)
        tracks.append(samples.expand(2, -1))
    console = grafx.mixing_console(n_tracks=4, n_groups=2)
    processors = grafx.make_processors(console, sample_rate=rate)
    hidden = grafx.musical_parameters(console, processors, seed=2)
    with torch.no_grad():
        mix = grafx.render(grafx.compute_render_plan(console), processors, hidden,
                           torch.stack(tracks))[0]
    grafx.save_audio(str(folder / "mix.wav"), mix, rate)


def command_line(code, tmp_path):
    song_folder(tmp_path)
    run_bash(code, tmp_path, with_grafx_on_path())
    for output in ("my-fit/report.html", "again.wav", "my-pruned/console.json",
                   "budget-fit/report.html", "my-graph.png", "graph-fit/pruned/report.html",
                   "routed.svg", "eq.svg", "squashed.wav", "demo-output/report.html"):
        assert (tmp_path / output).is_file(), output


def python_path(code, tmp_path):
    # As from a clone whose build folder is ./build.
    (tmp_path / "build").symlink_to(BUILD_DIR)
    printed = run_bash(code, tmp_path, environment(PYTHONPATH=""))
    assert "Graph with 0 nodes" in printed


def pip_install(code, tmp_path):
    # As written, in a home of its own, packaging this run's CMake tree (already built: seconds).
    why = targets_up_to_date()
    missing = [m for m in ("ensurepip", "pip", "setuptools", "wheel")
               if importlib.util.find_spec(m) is None]
    if missing:
        why = f"no {', '.join(missing)} (scripts/setup.sh --tests)"
    if why:
        warnings.warn(f"docs/python.md's pip block not run: {why}")
        return
    env = environment(HOME=str(tmp_path), PYTHONPATH="", GRAFX_CMAKE_BUILD_DIR=str(BUILD_DIR),
                      PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    printed = run_bash(code, SOURCE_DIR, env)
    assert "Graph with 0 nodes" in printed


def run_python(code, namespace, tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "<block>", "exec"), namespace)
    finally:
        os.chdir(cwd)


def run_page(page, runners, tmp_path):
    blocks = code_blocks(page)
    namespace = {"__name__": "__docs__"}
    skip_next = False
    for i, (language, code, line) in enumerate(blocks):
        if skip_next:
            skip_next = False
            continue
        where = f"{page}:{line}"
        first = code.strip().splitlines()[0] if code.strip() else ""
        if language == "python":  # in order, in one namespace and folder, as a reader would
            (tmp_path / "python").mkdir(exist_ok=True)
            run_python(code, namespace, tmp_path / "python")
            continue
        folder = tmp_path / f"block-{line}"
        folder.mkdir()
        if language == "cpp":
            assert page == "README.md", f"{where}: C++ blocks run only from the README"
            continue  # compiled and run by CTest as example_readme
        for (lang, starts), runner in runners.items():
            if lang == language and first.startswith(starts):
                if runner is quick_start:
                    following = blocks[i + 1] if i + 1 < len(blocks) else ("", "", 0)
                    assert following[0] == "", f"{where}: the demo's output block should follow"
                    quick_start(code, following[1], folder)
                    skip_next = True
                else:
                    runner(code, folder)
                break
        else:
            pytest.fail(f"{where}: no way to run this {language or 'plain'} block "
                        f"(first line {first!r}): add one to RUNNERS in {__file__}")


@pytest.mark.skipif(not GRAFX_BIN.exists(), reason="the grafx program is not built")
def test_readme_runs_as_written(tmp_path):
    run_page("README.md", {
        ("bash", "scripts/demo.sh"): quick_start,
        ("bash", "scripts/install.sh"): install,
        ("bash", "# Fit a mixing console"): command_line,
    }, tmp_path)


def test_python_page_runs_as_written(tmp_path):
    run_page("docs/python.md", {("bash", "export PYTHONPATH="): python_path,
                                ("bash", "/usr/bin/python3 -m venv"): pip_install}, tmp_path)


def test_every_block_is_found():
    # The fence pattern sees every block: as many as there are fence lines, halved.
    for page in ("README.md", "docs/python.md"):
        text = (SOURCE_DIR / page).read_text()
        fences = len(re.findall(r"^```", text, re.M))
        assert fences % 2 == 0 and len(code_blocks(page)) == fences // 2, page
