#!/usr/bin/env python3
"""Golden values for the loss tests (tests/loss/*_test.cpp), computed independently of grafx.

Uses torch.stft (center=True, reflect padding), scipy's bilinear/freqz/firls A-weighting design (as
auraloss's FIRFilter "aw" does) and a NumPy transcription of librosa.filters.mel (Slaney scale and
normalisation). Run with Debian's python3-torch and python3-scipy:  python3 make_golden.py
"""
import numpy as np
import scipy.signal as ss
import torch

torch.set_default_dtype(torch.float64)


def test_signal(n_samples, sample_rate, seed):
    """Deterministic broadband stereo test signal (same formula as test_signal() in loss_test_support.h)."""
    n = np.arange(n_samples, dtype=np.float64)
    t = n / sample_rate
    channels = []
    for c in range(2):
        k = seed + 3 * c
        x = (0.5 * np.sin(2 * np.pi * (220.0 * (k + 1)) * t + 0.1 * k)
             + 0.2 * np.sin(2 * np.pi * (1700.0 + 310.0 * k) * t + 0.7)
             + 0.1 * np.cos(2.1e-5 * (k + 1) * n * n)
             + 0.05 * np.sin(0.9 * n + k) * np.exp(-t))
        channels.append(x)
    return np.stack(channels)


def a_weighting_taps(fs, n_taps=101):
    f1, f2, f3, f4, a1000 = 20.598997, 107.65265, 737.86223, 12194.217, 1.9997
    num = [(2 * np.pi * f4) ** 2 * (10 ** (a1000 / 20)), 0, 0, 0, 0]
    den = np.polymul([1, 4 * np.pi * f4, (2 * np.pi * f4) ** 2], [1, 4 * np.pi * f1, (2 * np.pi * f1) ** 2])
    den = np.polymul(np.polymul(den, [1, 2 * np.pi * f3]), [1, 2 * np.pi * f2])
    b, a = ss.bilinear(num, den, fs=fs)
    w, h = ss.freqz(b, a, worN=512, fs=fs)
    return ss.firls(n_taps, w, np.abs(h), fs=fs)


def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / logstep, f * 3.0 / 200.0)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), m * 200.0 / 3.0)


def mel_filterbank(sr, n_fft, n_mels):
    fft_freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fft_freqs)
    weights = np.zeros((n_mels, len(fft_freqs)))
    for i in range(n_mels):
        weights[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    return weights * (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]


def magnitude(rows, n_fft, hop, win, eps):
    spec = torch.stft(rows, n_fft, hop, win, torch.hann_window(win), return_complex=True)
    return torch.sqrt(torch.clamp(spec.real ** 2 + spec.imag ** 2, min=eps))  # rows x bins x frames


def mix_loss(est, tgt, sr=30000, fft_sizes=(512, 1024, 4096), n_mels=96, eps=1e-4, skip=0):
    est, tgt = est[..., skip:], tgt[..., skip:]
    taps = torch.tensor(a_weighting_taps(sr)).view(1, 1, -1)

    def lrms(x):
        x = torch.nn.functional.conv1d(x.reshape(-1, 1, x.shape[-1]), taps, padding=taps.shape[-1] // 2)
        x = x.view(-1, 2, x.shape[-1])
        left, right = x[:, :1], x[:, 1:]
        return torch.cat([left, right, left + right, left - right], 1).reshape(-1, x.shape[-1])

    x_rows, y_rows = lrms(est), lrms(tgt)
    sc, lm = [], []
    for n_fft in fft_sizes:
        fb = torch.tensor(mel_filterbank(sr, n_fft, n_mels))
        x = fb @ magnitude(x_rows, n_fft, n_fft // 4, n_fft, eps)
        y = fb @ magnitude(y_rows, n_fft, n_fft // 4, n_fft, eps)
        sc.append((torch.linalg.norm(y - x, dim=(-2, -1)) / torch.linalg.norm(y, dim=(-2, -1))).view(-1, 4))
        lm.append((torch.log(y) - torch.log(x)).abs().mean((-2, -1)).view(-1, 4))
    sc, lm = torch.stack(sc), torch.stack(lm)  # resolutions x batch x 4
    per_channel = (sc + lm).mean(0)
    lr, mid, side = per_channel[:, :2].mean(1), per_channel[:, 2], per_channel[:, 3]
    total = (0.5 * lr + 0.25 * mid + 0.25 * side).mean()
    return total, lr.mean(), mid.mean(), side.mean(), sc.mean(1), lm.mean(1)


def mrstft_loss(est, tgt, fft_sizes=(1024, 2048, 512), hops=(120, 240, 50), wins=(600, 1200, 240), eps=1e-8):
    x_rows, y_rows = est.reshape(-1, est.shape[-1]), tgt.reshape(-1, tgt.shape[-1])
    total = 0.0
    for n_fft, hop, win in zip(fft_sizes, hops, wins):
        x, y = magnitude(x_rows, n_fft, hop, win, eps), magnitude(y_rows, n_fft, hop, win, eps)
        total += torch.linalg.norm(y - x) / torch.linalg.norm(y) + (torch.log(y) - torch.log(x)).abs().mean()
    return total / len(fft_sizes)


def show(name, value):
    values = np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel()
    print(f"{name}: " + ", ".join(f"{v:.17g}" for v in values))


if __name__ == "__main__":
    sr = 30000
    show("a_weighting_taps_30000[0:3]", a_weighting_taps(sr)[0:3])
    show("a_weighting_taps_30000[48:53]", a_weighting_taps(sr)[48:53])
    show("a_weighting_taps_44100[0:3]", a_weighting_taps(44100)[0:3])
    est = torch.tensor(np.stack([test_signal(12000, sr, 1), test_signal(12000, sr, 2)]))
    tgt = torch.tensor(np.stack([0.8 * test_signal(12000, sr, 1) + 0.1 * test_signal(12000, sr, 5),
                                 test_signal(12000, sr, 3)]))
    total, lr, mid, side, sc, lm = mix_loss(est, tgt, skip=1000)
    show("mix total", total)
    show("mix lr mid side", [lr, mid, side])
    show("mix sc [res x LRMS]", sc)
    show("mix log_mag [res x LRMS]", lm)
    show("mrstft [2 x 2 x 12000]", mrstft_loss(est, tgt))
