#pragma once
/// stereo imager (letter s): scales the side signal of a stereo signal (GRAFX's SideGainImager).
///
///   M = L + R,  S = exp(log_gain) · (L − R),  y = [(M + S)/2, (M − S)/2]
///
/// Parameters: the table in docs/processors/stereo.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Input and output: N×2×L. At log_gain 0 the imager is the identity.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor stereo_imager_descriptor();

class StereoImager : public LinearProcessor {
 public:
  explicit StereoImager(const ProcessorConfig& config) {}
  std::string name() const override { return "stereo_imager"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// The mix folded into its matrix (not when automated).
  std::optional<ProcessorOutput> forward_mixed(const std::vector<at::Tensor>& inputs,
                                               const TensorDict& parameters,
                                               const at::Tensor& wet) const override;
  /// Sample by sample, its gains as controls a host may change (they glide).
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }

 private:
  /// Its matrices N×2×2 of static side gains log_gain [N, 1].
  static at::Tensor matrix_of(const at::Tensor& log_gain);
};

}  // namespace grafx
