#pragma once
/// Reverb (letter r): the STFT-masked noise reverb of the GRAFX paper (GRAFX's
/// STFTMaskedNoiseReverb with its defaults, "pseudo-midside").
///
/// Two seconds of fixed uniform noise, one for mid and one for side (seeded, the same on every
/// run), are shaped in the STFT domain (FFT 384, hop 192, Hann window, centred frames) by a mask
/// with an initial log-magnitude and a per-frame decay per frequency bin:
///
///   log M[k, m] = H0[k] − softplus(HΔ[k])·m,   mask = exp(log M / 8),   m = 0 … M − 1 frames
///   [h_mid, h_side] = istft(STFT(noise) ⊙ mask),  h = [h_mid + h_side, h_mid − h_side]
///   h ← h / sqrt(mean_c Σ_n h_c[n]² + 1e−12)       energy-normalised: only the shape matters
///   y_c = h_c ∗ x_c                                  causal, exact linear convolution
///
/// Parameters: the table in docs/processors/reverb.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Options (GRAFX's): `channels`, how the two noises are used: pseudo_midside (the default, as
/// above), midside (the input's mid and side each through its own response, unnormalised mid/side
/// responses), stereo (one response per channel), mono (one response, [1, 193] parameters, on
/// every channel); `gain_envelope` (false): a learned level G[m] per frame and response,
/// `gain_env_log_magnitude` [C, M] (`envelope_db`), added to log M.
///
/// Input and output: N×2×L (mono: N×C×L, the input's channels; the reverb is wet only; the
/// console's dry/wet mixes it).
/// Differences from GRAFX: the noise comes from a seeded 64-bit Mersenne Twister (GRAFX: NumPy's
/// RandomState(0)), and the convolution is exact (GRAFX's FFT length warps time by up to a
/// sample). The impulse response lasts 2 s at any sample rate (GRAFX: 60000 samples).
///
///   NoiseReverb reverb({30000});

#include <grafx/dsp/signal.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor reverb_descriptor();

class NoiseReverb : public LinearProcessor {
 public:
  static constexpr int64_t kFftSize      = 384;
  static constexpr int64_t kHop          = 192;
  static constexpr double kLengthSeconds = 2.0;
  static constexpr uint64_t kNoiseSeed   = 0;

  explicit NoiseReverb(const ProcessorConfig& config);
  static std::vector<OptionSpec> option_specs();
  std::string name() const override { return "reverb"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
  /// Until its responses have decayed (a short decay leaves most of the 2 s silent).
  at::Tensor response_support(const TensorDict& raw) const override;

  /// The impulse responses N×C×K as convolved (energy-normalised; left/right for
  /// pseudo_midside and stereo, mid/side for midside, one for mono).
  at::Tensor impulse_responses(const TensorDict& parameters,
                               const at::TensorOptions& options) const;

 private:
  SampleRate sample_rate_;
  dsp::ImpulseLayout layout_;
  bool gain_envelope_;
  int64_t length_;    ///< impulse response length in samples
  int64_t n_frames_;  ///< STFT frames of the impulse response
  ConstantCache constants_;
};

}  // namespace grafx
