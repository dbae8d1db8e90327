"""The mix loss of the pruning paper and auraloss's multi-resolution STFT loss, as modules."""

import torch

from . import _errors, _grafx
from ._errors import sample_rate as _sample_rate


class _OnDevice(torch.nn.Module):
    """A loss made for a device and dtype (None: any), refusing inputs elsewhere by name."""

    def _place(self, device, dtype):
        self.device = None if device is None else _errors.device(
            device, type(self).__name__, _grafx.LossError, "grafx.loss.options")
        self.dtype = dtype

    def _check(self, *signals):
        for name, x in zip(("estimate", "target"), signals):
            if not isinstance(x, torch.Tensor):
                continue  # the C++ loss names it
            if self.device is not None and _same_device(x.device, self.device) is False:
                raise _errors.error(_grafx.LossError, "grafx.loss.dtype", f"{type(self).__name__} "
                                    f"was made for {self.device}, but the {name} is on "
                                    f"{x.device}: move it, or make the loss with device="
                                    f"{str(x.device)!r}")
            if self.dtype is not None and x.dtype != self.dtype:
                raise _errors.error(_grafx.LossError, "grafx.loss.dtype", f"{type(self).__name__} "
                                    f"was made for {self.dtype}, but the {name} is {x.dtype}")


def _same_device(a, b):
    """"cuda" is the current CUDA device, "cuda:0" one of them."""
    if a.type != b.type:
        return False
    return a.index is None or b.index is None or a.index == b.index


class MixLoss(_OnDevice):
    """Multi-resolution mel-STFT loss on the left, right, mid and side of stereo signals
    (Lee et al., DAFx 2024; docs/loss.md). Inputs B×2×L or 2×L, float32 or float64; with
    ``device``/``dtype``, inputs elsewhere are refused by name (grafx.LossError)."""

    def __init__(self, sample_rate=30000, skip_samples=0, fft_sizes=(512, 1024, 4096), n_mels=96,
                 a_weighting=True, eps=1e-4, lr_weight=0.5, mid_weight=0.25, side_weight=0.25,
                 device=None, dtype=None):
        super().__init__()
        self._place(device, dtype)
        rate = _sample_rate(sample_rate, "MixLoss", _grafx.LossError, "grafx.loss.options")
        self.loss = _grafx.MixLoss(list(fft_sizes), rate, n_mels, a_weighting, eps, skip_samples,
                                   lr_weight, mid_weight, side_weight)

    def forward(self, estimate, target):
        """The loss of ``estimate`` against ``target`` (B×2×L or 2×L, same shape), a scalar
        tensor differentiable in both; grafx.LossError for mismatched shapes, dtypes or devices."""
        self._check(estimate, target)
        return self.loss(estimate, target)

    def terms(self, estimate, target):
        """The loss and its parts: total, per_item, lr, mid, side, spectral_convergence and
        log_magnitude ([resolutions, 4]: L, R, M, S)."""
        self._check(estimate, target)
        return self.loss.terms(estimate, target)

    def streamed_terms(self, estimate, target):
        """``terms`` of two whole songs (2×L) in chunks: memory flat in the length; no gradients."""
        self._check(estimate, target)
        return self.loss.streamed_terms(estimate, target)


class MultiResolutionSTFTLoss(_OnDevice):
    """auraloss's ``MultiResolutionSTFTLoss()`` defaults: spectral convergence plus log-magnitude
    L1 at FFT sizes 1024/2048/512 (docs/loss.md). Inputs of any shape ...×L."""

    def __init__(self, fft_sizes=(1024, 2048, 512), hop_sizes=(120, 240, 50),
                 win_lengths=(600, 1200, 240), eps=1e-8, device=None, dtype=None):
        super().__init__()
        self._place(device, dtype)
        self.loss = _grafx.MultiResolutionStftLoss(list(fft_sizes), list(hop_sizes),
                                                   list(win_lengths), eps)

    def forward(self, estimate, target):
        """The loss of ``estimate`` against ``target`` (same shape ...×L), a scalar tensor
        differentiable in both; grafx.LossError for mismatched shapes, dtypes or devices."""
        self._check(estimate, target)
        return self.loss(estimate, target)
