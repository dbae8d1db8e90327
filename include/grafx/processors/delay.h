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
/// Parameters: the table in docs/processors/delay.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Auxiliary loss "radii" [N]: Σ_t (1 − tanh|z̃_t|)² per node, pulling the poles to the unit
/// circle where the surrogate is sharp (GRAFX's radii_reg).
///
/// Options (GRAFX's constructor arguments):
///
/// | option             | default | effect                                                      |
/// |--------------------|---------|-------------------------------------------------------------|
/// | `channels`         | stereo  | stereo: responses for left and right; midside: for the input's mid and side; mono: one response (half the taps) on every channel |
/// | `segments`         | 20      | segments per response (1 to 100)                            |
/// | `segment_ms`       | 100     | length of a segment (5 to 1000 ms)                          |
/// | `taps_per_segment` | 1       | taps within each segment (1 to 8), summed                   |
/// | `colour_taps`      | true    | a zero-phase FIR per tap (`log_fir_magnitude`); false: bare impulses |
/// | `colour_bins`      | 20      | log-magnitudes per colour filter (2 to 256; 2B − 1 taps)    |
/// | `pre_delay_ms`     | 0       | silence before the response (0 to 2000 ms)                  |
///
/// Taps are ordered channel, segment, tap: tap t = (c·segments + m)·taps_per_segment + p.
///
/// Input and output: N×2×L (mono layout: N×C×L, the input's channels). The forward is an exact
/// sum of integer delays (straight-through);
/// the gradient of `delay_z` is the surrogate's, normalised per tap, so it is no finite
/// difference of the output.
/// Differences from GRAFX: a tap's colour filter may spill across its segment's borders (GRAFX
/// cuts it at the borders of the segment); the convolution is exact; segments last 100 ms at any
/// sample rate (GRAFX: 3000 samples); the midside layout processes mid and side (GRAFX's only
/// changes the number of taps, its mid/side code is unreachable); the pre-delay lengthens the
/// response (GRAFX shifts the output and cuts its end).
///
///   MultitapDelay delay({30000});
///   auto out = delay.forward({x}, parameters);   // out.aux_losses.at("radii"): [N]

#include <grafx/dsp/signal.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor delay_descriptor();

class MultitapDelay : public LinearProcessor {
 public:
  // The defaults (the paper's delay).
  static constexpr int64_t kSegments      = 20;  ///< per channel
  static constexpr int64_t kTaps          = 2 * kSegments;
  static constexpr double kSegmentSeconds = 0.1;
  static constexpr int64_t kColourBins    = 20;  ///< 39-tap colour filters

  explicit MultitapDelay(const ProcessorConfig& config);
  static std::vector<OptionSpec> option_specs();
  std::string name() const override { return "delay"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// The mix folded into the responses: w·h + (1 − w)·δ, no pass over the signal.
  std::optional<ProcessorOutput> forward_mixed(const std::vector<at::Tensor>& inputs,
                                               const TensorDict& parameters,
                                               const at::Tensor& wet) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
  /// Its taps' spans: a few dozen coloured taps in a response of seconds.
  at::Tensor response_support(const TensorDict& raw) const override;

  /// The impulse responses N×C×K as convolved (energy-normalised; left/right, mid/side or one)
  /// and the radii loss [N].
  std::pair<at::Tensor, at::Tensor> impulse_responses(const TensorDict& parameters) const;
  /// Samples per segment.
  int64_t segment_length() const { return segment_; }
  int64_t segments() const { return segments_; }
  int64_t taps_per_segment() const { return taps_per_segment_; }
  /// All taps: responses × segments × taps per segment.
  int64_t n_taps() const;

 private:
  SampleRate sample_rate_;
  dsp::ImpulseLayout layout_;
  int64_t segments_, taps_per_segment_, colour_bins_;
  bool colour_;
  int64_t segment_;    ///< samples
  int64_t pre_delay_;  ///< samples
  ConstantCache constants_;
};

}  // namespace grafx
