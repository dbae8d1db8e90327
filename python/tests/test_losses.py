"""The losses as modules: against auraloss's formula written here, and the CLI's `grafx loss`."""

import json
import subprocess

import pytest
import torch

import grafx


def auraloss_mrstft(x, y, ffts=(1024, 2048, 512), hops=(120, 240, 50), wins=(600, 1200, 240),
                    eps=1e-8):
    """auraloss.freq.MultiResolutionSTFTLoss() with its defaults, written out with torch.stft."""
    total = 0
    for n_fft, hop, win in zip(ffts, hops, wins):
        def magnitude(s):
            spec = torch.stft(s.reshape(-1, s.shape[-1]), n_fft, hop, win,
                              torch.hann_window(win, dtype=s.dtype), center=True,
                              pad_mode="reflect", return_complex=True)
            return (spec.real ** 2 + spec.imag ** 2).clamp(min=eps).sqrt()
        X, Y = magnitude(x), magnitude(y)
        total = total + torch.linalg.norm(Y - X) / torch.linalg.norm(Y) + \
            (Y.log() - X.log()).abs().mean()
    return total / len(ffts)


def test_mrstft_equals_auraloss_formula():
    x = torch.randn(2, 2, 8000, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 2, 8000, dtype=torch.float64)
    loss = grafx.MultiResolutionSTFTLoss()
    ours = loss(x, y)
    reference = auraloss_mrstft(x, y)
    torch.testing.assert_close(ours, reference, rtol=1e-9, atol=1e-12)
    g_ours, = torch.autograd.grad(ours, x)
    g_reference, = torch.autograd.grad(reference, x)
    torch.testing.assert_close(g_ours, g_reference, rtol=1e-7, atol=1e-12)


def test_mix_loss_terms_and_the_cli(cli, tmp_path):
    torch.manual_seed(0)
    target = 0.3 * torch.randn(2, 30000)
    estimate = target + 0.1 * torch.randn(2, 30000)
    loss = grafx.MixLoss(sample_rate=30000)
    assert loss(target, target).item() == pytest.approx(0.0, abs=1e-6)
    terms = loss.terms(estimate, target)
    expected = 0.5 * terms["lr"] + 0.25 * terms["mid"] + 0.25 * terms["side"]
    torch.testing.assert_close(terms["total"], expected)
    grafx.save_audio(str(tmp_path / "estimate.wav"), estimate, 30000)
    grafx.save_audio(str(tmp_path / "target.wav"), target, 30000)
    result = subprocess.run([cli, "loss", str(tmp_path / "estimate.wav"),
                             str(tmp_path / "target.wav"), "--json"], capture_output=True,
                            text=True, check=True)
    assert json.loads(result.stdout)["loss"] == pytest.approx(terms["total"].item(), rel=1e-4)
    streamed = loss.streamed_terms(estimate, target)
    assert streamed["total"].item() == pytest.approx(terms["total"].item(), rel=1e-4)


def test_loss_errors_carry_codes():
    with pytest.raises(grafx.LossError) as error:
        grafx.MixLoss()(torch.randn(2, 100), torch.randn(2, 100))
    assert error.value.code == "grafx.loss.too_short"
    with pytest.raises(grafx.LossError) as error:
        grafx.MixLoss(fft_sizes=())
    assert error.value.code == "grafx.loss.options"
