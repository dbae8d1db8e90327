"""The examples of examples/python run (briefly)."""

import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

EXAMPLES = SOURCE_DIR / "examples" / "python"


@pytest.mark.parametrize("script,arguments", [
    ("render_with_gradients.py", []),
    ("train_gain_pan_predictor.py", ["--steps", "4"]),
    ("grafx_console_interop.py", []),
])
def test_example_runs(script, arguments, tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *arguments],
                            capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
