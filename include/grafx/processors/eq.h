#pragma once
/// Zero-phase FIR equalizers (letter e): the EQ of the GRAFX paper (GRAFX's
/// ZeroPhaseFIREqualizer). 1024 log-magnitudes, uniformly spaced from 0 Hz to Nyquist, become a
/// 2047-tap Hann-windowed zero-phase FIR (see grafx/dsp/fir.h), convolved with the input:
///
///   h = zero_phase_fir(log_magnitude),  y = x ∗ h  (zero-phase: tap 1023 is lag 0)
///
/// | variant      | filters                      | `log_magnitude` | input  |
/// |--------------|------------------------------|-----------------|--------|
/// | `eq`         | one, on every channel (paper)| [1024]          | N×C×L  |
/// | `eq_stereo`  | one per channel (L, R)       | [2, 1024]       | N×2×L  |
/// | `eq_midside` | one for mid, one for side    | [2, 1024]       | N×2×L  |
///
/// Parameters: the table in docs/processors/equalizers.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Output: same shape as the input. All log-magnitudes 0 give exactly the identity.
/// Mid/side: M = (L + R)/2, S = (L − R)/2, filtered, then L = M + S, R = M − S.
///
///   Equalizer eq({/*sample_rate=*/30000});
///   auto y = eq.forward({x}, {{"log_magnitude", at::zeros({x.size(0), 1024})}}).outputs[0];

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

enum class EqChannels { kMono, kStereo, kMidSide };

ProcessorDescriptor eq_descriptor();          ///< letter e
ProcessorDescriptor eq_stereo_descriptor();   ///< letter E
ProcessorDescriptor eq_midside_descriptor();  ///< letter Q

class Equalizer : public LinearProcessor {
 public:
  static constexpr int64_t kBins = 1024;

  explicit Equalizer(const ProcessorConfig& config, EqChannels channels = EqChannels::kMono)
      : channels_(channels) {}
  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  EqChannels channels_;
  ConstantCache constants_;
};

}  // namespace grafx
