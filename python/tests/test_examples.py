"""The examples of examples/python run (briefly)."""

import os
import subprocess
import sys

import pytest
import torch

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


def train_ddp(tmp_path, ranks, steps):
    output = tmp_path / f"ranks-{ranks}.pt"
    result = subprocess.run([sys.executable, str(EXAMPLES / "train_ddp.py"), "--ranks",
                             str(ranks), "--threads", "1", "--steps", str(steps), "--batch", "4",
                             "--seed", "3", "--output", str(output)],
                            capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ),
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"step {steps:4d}/{steps}  mix loss" in result.stdout, result.stdout
    return torch.load(output)


def test_ddp_equals_one_process_on_the_whole_batch(tmp_path):
    # DDP averages the ranks' gradients of their shards' mean losses; the mix loss is a mean
    # over items, so that is the whole batch's mean gradient: one process on the whole batch
    # takes the same steps (to rounding: the sums run in another order; seen: parameters apart
    # by 1e-8 in norm, 8e-8 at most).
    steps = 3
    ddp, alone = train_ddp(tmp_path, 2, steps), train_ddp(tmp_path, 1, steps)
    assert ddp["parameters"].shape[0] == 2 and alone["parameters"].shape[0] == 1
    assert torch.equal(ddp["parameters"][0], ddp["parameters"][1])  # bit-equal across ranks
    assert torch.equal(ddp["gradients"][0], ddp["gradients"][1])
    assert torch.equal(ddp["initial"], alone["initial"])
    trained, reference = ddp["parameters"][0], alone["parameters"][0]
    assert (reference - alone["initial"]).norm() > 1e-3 * reference.norm()  # it did train
    assert (trained - reference).norm() <= 1e-6 * reference.norm()
    assert (trained - reference).abs().max() <= 1e-6 * reference.abs().max()
    # The last gradients too: Adam's steps hardly depend on the gradients' scale, these do (a
    # sum over the ranks instead of the mean would be off by 100 %). Seen: 1e-7 to 3e-7 of
    # float32 rounding, the parameters they are taken at being apart by rounding already.
    gradient, reference_gradient = ddp["gradients"][0], alone["gradients"][0]
    assert reference_gradient.norm() > 0
    assert (gradient - reference_gradient).norm() <= 1e-5 * reference_gradient.norm()
