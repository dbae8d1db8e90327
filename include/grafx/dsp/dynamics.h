#pragma once
/// The dynamics processors' kernels (compressors and gates, processors/compressor.h), in
/// LibTorch: a gain computer with static curve s·k(u) on log energies (s = 1/r − 1 for a
/// compressor, 1 − r for a gate; knees as dsp::Knee) whose backward pass is written by hand, and
/// the paper's whole compressor (energy detection, one-pole level smoothing, the curve, the gain
/// applied with a node's dry/wet mix) as one Function on the CPU. Both are differentiable again
/// (their backward passes are ATen operations, or the composed form where recorded) and carry
/// tangents (forward mode) through their composed forms.

#include <grafx/dsp/dynamics_steps.h>

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace grafx::dsp {

/// The curve's log-energy gain s·k(u) of envelope energies e (N×1×L; level log(e + floor),
/// u = level − T, or T − level for a `gate`), in ATen operations. Threshold T N×1×1 (N×1×L
/// where automated), ratio r N×1×1, knee w N×1×1 (the quadratic knee's half width, the
/// exponential knee's sharpness; undefined for a hard knee).
at::Tensor log_energy_gain(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Knee knee_type);

/// Amplitude gains exp(s·k(u)/2) of envelope energies, arguments as log_energy_gain: a Function
/// with a hand-written backward pass, or the curve in plain ATen operations where tangents are
/// carried or the threshold moves per sample.
at::Tensor amplitude_gains(const at::Tensor& envelope, const at::Tensor& threshold,
                           const at::Tensor& ratio, const at::Tensor& knee, bool gate,
                           Knee knee_type);

/// x·g, or with wet amounts w (N×1×1, defined) the dry/wet mix of x·g and x folded into the
/// gain, x·(1 + w·(g − 1)): the same operations in the same order as smoothed_dynamics, so that
/// each path gives the same output to the bit.
at::Tensor applied_gain(const at::Tensor& x, const at::Tensor& gain, const at::Tensor& wet);

/// Whether smoothed_dynamics takes these: CPU tensors x and key (N×C×L, N×K×L) of one floating
/// dtype, no tangents, one value per item in each of `per_item` (undefined ones skipped).
bool smoothed_dynamics_applies(const at::Tensor& x, const at::Tensor& key,
                               std::initializer_list<at::Tensor> per_item);

/// The compressor (or `gate`) of x keyed by the mean square of `key` over its channels
/// (`keyed`: a sidechain, else key is x), smoothed by one pole α (N×1×1): applied_gain(x,
/// amplitude_gains(one_pole(mean key², α), ...), wet), in two loops forward and three backward
/// (docs/benchmarks.md, "Roofline"). `knee` undefined for a hard knee; `wet` undefined: no mix.
at::Tensor smoothed_dynamics(const at::Tensor& x, const at::Tensor& key, const at::Tensor& alpha,
                             const at::Tensor& threshold, const at::Tensor& ratio,
                             const at::Tensor& knee, const at::Tensor& wet, bool gate,
                             Knee knee_type, bool keyed);

}  // namespace grafx::dsp
