#pragma once
/// Linkwitz-Riley crossovers (4th order): one input split into frequency bands, on exact biquad
/// recursions (grafx/dsp/biquad.h). No peer has them (GRAFX lists multiband processing as to do).
///
/// | type              | letter | outlets             | parameter shape |
/// |-------------------|--------|---------------------|-----------------|
/// | `crossover`       | X      | `low`, `high`       | [1]             |
/// | `crossover_3band` | Y      | `low`, `mid`, `high`| [2]             |
///
/// With LP_f and HP_f the cookbook low- and high-pass at f with Q = 1/√2 (Butterworth), and
/// AP_f the cookbook all-pass at f with Q = 1/√2:
///   2 bands:  low = LP_f²·x,  high = HP_f²·x
///   3 bands:  low = AP_f2·LP_f1²·x,  mid = LP_f2²·HP_f1²·x,  high = HP_f2²·HP_f1²·x
/// LP_f² + HP_f² = AP_f exactly (the analog identity survives the bilinear transform), so the
/// bands sum to an all-pass of the input: flat magnitude, the phase of AP_f (AP_f1·AP_f2).
///
/// Parameters: the table in docs/processors/filters.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// A bypassed or dry crossover passes its input to `low` and silence to the other bands, so the
/// bands still sum to the input.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor crossover_descriptor();        ///< letter X
ProcessorDescriptor crossover_3band_descriptor();  ///< letter Y

class Crossover : public LinearProcessor {
 public:
  Crossover(const ProcessorConfig& config, int64_t n_bands);
  std::string name() const override { return n_bands_ == 2 ? "crossover" : "crossover_3band"; }
  std::vector<std::string> outlets() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  /// Each band's cascade (b, a), each N×bands×1×K×3.
  std::pair<at::Tensor, at::Tensor> sections(const TensorDict& parameters) const;
  SampleRate sample_rate_;
  int64_t n_bands_;
};

}  // namespace grafx
