#pragma once
/// Single biquad filters of the RBJ Audio EQ Cookbook, run exactly (grafx/dsp/biquad.h): GRAFX's
/// LowPassFilter, HighPassFilter, BandPassFilter, BandRejectFilter, AllPassFilter, PeakingFilter,
/// LowShelf and HighShelf, one filter per node on every channel.
///
/// | type         | letter | frequency parameter | gain     | response                          |
/// |--------------|--------|---------------------|----------|-----------------------------------|
/// | `lowpass`    | l      | `cutoff_hz`         |          | −3 dB at the cutoff for q = 0.7071 |
/// | `highpass`   | h      | `cutoff_hz`         |          | as lowpass, mirrored               |
/// | `bandpass`   | p      | `centre_hz`         |          | 0 dB at the centre                 |
/// | `bandreject` | x      | `centre_hz`         |          | a notch at the centre              |
/// | `allpass`    | a      | `centre_hz`         |          | flat; phase −180° at the centre    |
/// | `peaking`    | k      | `centre_hz`         | `gain_db`| gain_db at the centre              |
/// | `low_shelf`  | L      | `cutoff_hz`         | `gain_db`| gain_db below the corner           |
/// | `high_shelf` | H      | `cutoff_hz`         | `gain_db`| gain_db above the corner           |
///
/// Parameters: the table in docs/processors/filters.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Every raw value gives 0 < ω0 < π and q > 0: the poles stay inside the unit circle. GRAFX's
/// low-pass negates the cookbook's numerator (its output is inverted); its gains are e^{2·raw}
/// at the centre where ours are the cookbook's (gain_db is the gain at the centre or shelf).
///
///   CookbookFilter lowpass({44100}, CookbookShape::kLowpass);
///   auto y = lowpass.forward({x}, raw_parameters).outputs[0];   // x N×C×L

#include <grafx/dsp/biquad.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor lowpass_descriptor();
ProcessorDescriptor highpass_descriptor();
ProcessorDescriptor bandpass_descriptor();
ProcessorDescriptor bandreject_descriptor();
ProcessorDescriptor allpass_descriptor();
ProcessorDescriptor peaking_descriptor();
ProcessorDescriptor low_shelf_descriptor();
ProcessorDescriptor high_shelf_descriptor();

class CookbookFilter : public LinearProcessor {
 public:
  CookbookFilter(const ProcessorConfig& config, dsp::CookbookShape shape)
      : sample_rate_(config.sample_rate), shape_(shape) {}
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// The section's coefficients (b, a), each N×1×3.
  std::pair<at::Tensor, at::Tensor> section(const TensorDict& parameters) const;
  SampleRate sample_rate_;
  dsp::CookbookShape shape_;
};

}  // namespace grafx
