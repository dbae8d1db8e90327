"""Builds the Python package grafx with CMake, for `pip install --no-build-isolation .` and
`pip wheel` (docs/python.md, "Installing with pip").

build_ext configures the project in a build folder (Release, no tests, the module built for the
interpreter running pip, against the torch it imports), builds the targets grafx_python and
grafx_cli, and puts into the wheel the package CMake made (<build>/python/grafx: the extension
beside the .py files of python/grafx and grafx.dataset) with the grafx program as grafx/bin/grafx
(grafx.dataset runs it). Nothing is downloaded.

  GRAFX_CMAKE_BUILD_DIR  the build folder (default: build/pip). A folder CMake has already
                         configured is only built, never configured again, so an existing tree
                         (e.g. ./build) is reused as it is, incrementally.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

SOURCE_DIR = pathlib.Path(__file__).resolve().parent
BUILD_DIR = pathlib.Path(os.environ.get("GRAFX_CMAKE_BUILD_DIR") or SOURCE_DIR / "build" / "pip")
BUILD_DIR = BUILD_DIR.resolve()

# The package's _program.py in a wheel: the program shipped beside it.
PROGRAM_FILE = '''import os

# written by setup.py: the grafx program installed with the package
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "grafx")
'''


def version():
    """The project's version, from CMakeLists.txt (the one place it is written)."""
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    return re.search(r"project\(grafx\s+VERSION\s+([0-9.]+)", text).group(1)


def torch_cmake_prefix():
    """The folder of the imported torch's CMake package (TorchConfig.cmake), or None."""
    try:
        import torch.utils
    except ImportError:
        return None
    path = pathlib.Path(torch.utils.cmake_prefix_path)
    return str(path) if (path / "Torch" / "TorchConfig.cmake").exists() else None


def cache_entry(build_dir, name):
    """A variable of a configured tree's CMakeCache.txt, or None."""
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    return None


class CleanBuildPy(build_py):
    """The package's .py files from the sources, into a folder emptied of earlier builds'."""

    def run(self):
        shutil.rmtree(pathlib.Path(self.build_lib) / "grafx", ignore_errors=True)
        super().run()


class CMakeBuild(build_ext):
    def run(self):
        if self.inplace:
            raise SystemExit("grafx: editable installs are not supported; "
                             "use PYTHONPATH=build/python after scripts/build.sh")
        self.configure()
        command = ["cmake", "--build", str(BUILD_DIR), "-j", str(os.cpu_count() or 1),
                   "--target", "grafx_python", "grafx_cli"]
        self.announce(" ".join(command), level=2)
        subprocess.run(command, check=True)
        self.copy_package()

    def configure(self):
        owned = "GRAFX_CMAKE_BUILD_DIR" not in os.environ
        # A configuration that failed leaves its cache but no build files: configure again.
        configured = (BUILD_DIR / "CMakeCache.txt").exists() and any(
            (BUILD_DIR / name).exists() for name in ("build.ninja", "Makefile"))
        if configured:
            # A tree given by GRAFX_CMAKE_BUILD_DIR keeps its configuration (its other users
            # rely on it); build/pip is configured again only for another interpreter.
            if not owned or cache_entry(BUILD_DIR, "GRAFX_PYTHON") == sys.executable:
                return
        command = ["cmake", "-S", str(SOURCE_DIR), "-B", str(BUILD_DIR),
                   "-DCMAKE_BUILD_TYPE=Release", "-DGRAFX_BUILD_TESTS=OFF",
                   "-DGRAFX_BUILD_BENCH=OFF", "-DGRAFX_BUILD_EXAMPLES=OFF",
                   "-DGRAFX_BUILD_PYTHON=ON", f"-DGRAFX_PYTHON={sys.executable}"]
        # The torch this interpreter imports: pip's PyTorch carries its CMake package inside
        # (Debian's is in the system's paths, where CMake looks anyway).
        torch_cmake = torch_cmake_prefix()
        if torch_cmake:
            command.append(f"-DCMAKE_PREFIX_PATH={torch_cmake}")
        if not (BUILD_DIR / "CMakeCache.txt").exists() and shutil.which("ninja"):
            command += ["-G", "Ninja"]
        self.announce(" ".join(command), level=2)
        subprocess.run(command, check=True)

    def copy_package(self):
        built = BUILD_DIR / "python" / "grafx"
        module = "_grafx" + sysconfig.get_config_var("EXT_SUFFIX")
        if not (built / module).exists():
            found = sorted(p.name for p in built.glob("_grafx*")) if built.exists() else []
            raise SystemExit(
                f"grafx: CMake built no {module} in {built} (found: {found or 'nothing'}): "
                "the tree has no Python with torch and pybind11, or was configured for "
                f"another interpreter than {sys.executable}")
        # The program's path in the tree, as CMake wrote it into the package's _program.py.
        namespace = {}
        exec((built / "_program.py").read_text(), namespace)
        program = pathlib.Path(namespace["PROGRAM"])

        # The .py files are the sources' (build_py copied them: a module removed from the
        # sources may linger in the tree); all else CMake put in the package, the extension.
        package = pathlib.Path(self.build_lib) / "grafx"
        shutil.copytree(built, package, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            "__pycache__", "*.py", "*.pyc", "_grafx*.so"))
        shutil.copy2(built / module, package / module)
        (package / "bin").mkdir(exist_ok=True)
        shutil.copy2(program, package / "bin" / "grafx")
        # The LV2 plugin library `grafx export-lv2` copies into bundles, at ../lib/grafx.
        plugin = pathlib.Path("lib") / "grafx" / "grafx_lv2.so"
        (package / plugin).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(program.parent.parent / plugin, package / plugin)
        (package / "_program.py").write_text(PROGRAM_FILE)


setup(
    version=version(),
    packages=find_packages("python", include=["grafx", "grafx.*"]),
    package_dir={"": "python"},
    ext_modules=[Extension("grafx._grafx", sources=[])],  # built by CMake (CMakeBuild)
    cmdclass={"build_py": CleanBuildPy, "build_ext": CMakeBuild},
    # setuptools' own scratch (and the egg-info) inside the CMake build folder, not the sources.
    options={"build": {"build_base": str(BUILD_DIR / "setuptools")},
             "egg_info": {"egg_base": str(BUILD_DIR / "setuptools")}},
    zip_safe=False,
)
