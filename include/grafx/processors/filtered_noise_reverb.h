#pragma once
/// Filtered-noise reverb (letter R): GRAFX's FilteredNoiseShapingReverb (after Steinmetz et al.
/// 2021) in its default mid/side mode, with a real gain per band.
///
/// Two seconds of seeded uniform noise, one for mid and one for side, are split into K = 12
/// bands by zero-phase Linkwitz-Riley crossovers (Butterworth 2nd-order low- and high-pass
/// sections run forward and backward: LR-4 magnitude, zero phase; power complementary, so the
/// bands sum back to the noise). The crossovers are the odd points of 2K − 1 points spaced
/// evenly in log frequency from 31.5 Hz to 15 kHz (at most 0.45 of the sample rate). Built once
/// per processor instance. Each band decays exponentially at its own rate:
///
///   d_b = σ(z_b)·(d_max − d_min) + d_min      nepers per sample; T60 = 3·ln10 / (−d·fs)
///   h_c[n] = Σ_b e^{g_{c,b}} · e^{n·d_{c,b}} · noise_{c,b}[n],     c ∈ {mid, side}
///   h ← h / sqrt(mean_c Σ_n h_c[n]² + 1e−12)       energy-normalised: only the shape matters
///   y = from_mid_side(h ∗ to_mid_side(x))          causal, exact linear convolution
///
/// Parameters: the table in docs/processors/reverb.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Options (GRAFX's): `channels`, midside (the default, above), stereo (one response per
/// channel) or mono (one response, [1, 12] parameters, on every channel; output with the input's
/// channels); `use_fade_in` (false): each band's envelope becomes
///   e^{n·d} − σ(z_f)·e^{n·d_f},   d_f = σ(y_f)·(d − d_min) + d_min
/// (a faster decay subtracted: the band swells in), with `log_fade_in` [C, 12] (physical
/// `fade_in_position` = σ(y_f): 0 the fastest decay, 1 the band's own) and `z_fade_in_gain`
/// [C, 12] (`fade_in_depth` = σ(z_f), the share of the start removed).
///
/// Input and output: N×2×L (mono input is its dual-mono stereo); wet only.
/// Differences from GRAFX: the band gain is a gain, e^g (GRAFX multiplies by the raw value,
/// so a band's level can change sign and 0 is silence); the noise is seeded and fixed (GRAFX:
/// NumPy's unseeded global generator, and by default a new random crop of a 5× longer noise on
/// every call, so the same parameters give another output each time); the impulse response
/// lasts 2 s at any sample rate (GRAFX: 60000 samples).
///
///   FilteredNoiseReverb reverb({30000});

#include <grafx/dsp/signal.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor filtered_noise_reverb_descriptor();

class FilteredNoiseReverb : public LinearProcessor {
 public:
  static constexpr int64_t kBands        = 12;
  static constexpr double kLengthSeconds = 2.0;
  static constexpr double kMinDecayMs = 50, kMaxDecayMs = 2000;
  static constexpr double kLowestHz = 31.5, kHighestHz = 15000;
  static constexpr uint64_t kNoiseSeed = 1;

  explicit FilteredNoiseReverb(const ProcessorConfig& config);
  static std::vector<OptionSpec> option_specs();
  std::string name() const override { return "filtered_noise_reverb"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
  /// Until its responses have decayed (a short decay leaves most of the 2 s silent).
  at::Tensor response_support(const TensorDict& raw) const override;

  /// The impulse responses N×C×K as convolved (energy-normalised): mid/side, left/right, or one.
  at::Tensor impulse_responses(const TensorDict& parameters,
                               const at::TensorOptions& options) const;
  /// The crossover frequencies in Hz (K − 1).
  std::vector<double> crossovers_hz() const;
  /// The band-split noise [2, K, length], float64 (the bands sum to the noise).
  at::Tensor band_noise() const;

 private:
  SampleRate sample_rate_;
  dsp::ImpulseLayout layout_;
  bool fade_in_;
  int64_t length_;
  ConstantCache constants_;
};

}  // namespace grafx
