#pragma once
/// Multitap delay (letter d): the stereo delay of the GRAFX paper (GRAFX's MultitapDelay with its
/// defaults). Each channel's 2 s impulse response is cut into 20 segments of 100 ms with one
/// tap each, 40 taps in all. Tap t (channel t / 20, segment m = t mod 20) sits at delay
/// m·100 ms + d_t, where d_t is a differentiable integer delay within its segment (the
/// damped-sinusoid surrogate with a straight-through estimator and normalised gradients, see
/// grafx/dsp/surrogate_delay.h), coloured by its own 39-tap zero-phase FIR (20
/// log-magnitudes, see grafx/dsp/fir.h):
///
///   h_c[n] = Σ_m (δ[· − d_t] ∗ fir_t)[n − m·S],   S = 100 ms in samples
///   h ← h / sqrt(mean_c Σ_n h_c[n]² + 1e−12),      y_c = h_c ∗ x_c   (causal, exact)
///
/// | parameter           | shape    | physical          | init (raw ≈ 0) | meaning                   |
/// |---------------------|----------|-------------------|----------------|---------------------------|
/// | `delay_z`           | [40, 2]  | `delay_ms`, ms    | in its segment | tap t's pole z̃ (re, im):  |
/// |                     |          |                   |                | delay −arg(z)·S/2π within |
/// |                     |          |                   |                | segment m                 |
/// | `log_fir_magnitude` | [40, 20] | `tap_gain_db`, dB | 0 dB (flat)    | colour of tap t at 20     |
/// |                     |          |                   |                | frequencies, 0 Hz–Nyquist |
///
/// Auxiliary loss "radii" [N]: Σ_t (1 − tanh|z̃_t|)² per node, pulling the poles to the unit
/// circle where the surrogate is sharp (GRAFX's radii_reg).
///
/// Input and output: N×2×L. The forward is an exact sum of integer delays (straight-through);
/// the gradient of `delay_z` is the surrogate's, normalised per tap, so it is no finite
/// difference of the output.
/// Differences from GRAFX: a tap's colour filter may spill across its segment's borders (GRAFX
/// cuts it at the borders of the segment); the convolution is exact; segments last 100 ms at any
/// sample rate (GRAFX: 3000 samples).
///
///   MultitapDelay delay({30000});
///   auto out = delay.forward({x}, parameters);   // out.aux_losses.at("radii"): [N]

#include <grafx/processors/descriptor.h>

namespace grafx {

ProcessorDescriptor delay_descriptor();

class MultitapDelay : public Processor {
 public:
  static constexpr int64_t kSegments      = 20;  ///< per channel
  static constexpr int64_t kTaps          = 2 * kSegments;
  static constexpr double kSegmentSeconds = 0.1;
  static constexpr int64_t kColourBins    = 20;  ///< 39-tap colour filters

  explicit MultitapDelay(const ProcessorConfig& config);
  std::string name() const override { return "delay"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

  /// The stereo impulse responses N×2×K (energy-normalised) and the radii loss [N].
  std::pair<at::Tensor, at::Tensor> impulse_responses(const TensorDict& parameters) const;
  /// Samples per segment.
  int64_t segment_length() const { return segment_; }

 private:
  SampleRate sample_rate_;
  int64_t segment_;
  ConstantCache constants_;
};

}  // namespace grafx
