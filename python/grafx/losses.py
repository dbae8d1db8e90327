"""The mix loss of the pruning paper and auraloss's multi-resolution STFT loss, as modules."""

import torch

from . import _grafx
from ._errors import sample_rate as _sample_rate


class MixLoss(torch.nn.Module):
    """Multi-resolution mel-STFT loss on the left, right, mid and side of stereo signals
    (Lee et al., DAFx 2024; docs/loss.md). Inputs B×2×L or 2×L, float32 or float64."""

    def __init__(self, sample_rate=30000, skip_samples=0, fft_sizes=(512, 1024, 4096), n_mels=96,
                 a_weighting=True, eps=1e-4, lr_weight=0.5, mid_weight=0.25, side_weight=0.25):
        super().__init__()
        rate = _sample_rate(sample_rate, "MixLoss", _grafx.LossError, "grafx.loss.options")
        self.loss = _grafx.MixLoss(list(fft_sizes), rate, n_mels, a_weighting, eps, skip_samples,
                                   lr_weight, mid_weight, side_weight)

    def forward(self, estimate, target):
        return self.loss(estimate, target)

    def terms(self, estimate, target):
        """The loss and its parts: total, per_item, lr, mid, side, spectral_convergence and
        log_magnitude ([resolutions, 4]: L, R, M, S)."""
        return self.loss.terms(estimate, target)

    def streamed_terms(self, estimate, target):
        """``terms`` of two whole songs (2×L) in chunks: memory flat in the length; no gradients."""
        return self.loss.streamed_terms(estimate, target)


class MultiResolutionSTFTLoss(torch.nn.Module):
    """auraloss's ``MultiResolutionSTFTLoss()`` defaults: spectral convergence plus log-magnitude
    L1 at FFT sizes 1024/2048/512 (docs/loss.md). Inputs of any shape ...×L."""

    def __init__(self, fft_sizes=(1024, 2048, 512), hop_sizes=(120, 240, 50),
                 win_lengths=(600, 1200, 240), eps=1e-8):
        super().__init__()
        self.loss = _grafx.MultiResolutionStftLoss(list(fft_sizes), list(hop_sizes),
                                                   list(win_lengths), eps)

    def forward(self, estimate, target):
        return self.loss(estimate, target)
