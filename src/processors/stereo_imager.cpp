#include <grafx/processors/stereo_imager.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {

ProcessorDescriptor stereo_imager_descriptor() {
  auto d                = ProcessorDescriptor::of<StereoImager>("stereo_imager", 's');
  d.summary             = "stereo imager: mid/side with a side gain";
  d.grafx_name          = "SideGainImager";
  d.response            = ResponsePicture::kStereoField;
  d.console_position    = 4;
  d.random_pruning_rate = 0.86;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  d.musical_prior       = [](const PriorContext& c) {
    return TensorDict{{"side_gain_db", at::full({1}, c.random.uniform(-4, 3), at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> StereoImager::parameter_specs() const {
  return {ParameterSpec::raw("log_gain", {1})
              .physical("side_gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
              .about("gain of the side (L−R) signal; 0 dB leaves the image unchanged")};
}

ProcessorOutput StereoImager::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor x = units::as_stereo(inputs[0], name());
  at::Tensor left = x.narrow(1, 0, 1), right = x.narrow(1, 1, 1);
  at::Tensor mid  = left + right;
  at::Tensor side = parameters.at("log_gain").exp().unsqueeze(-1) * (left - right);
  return {{at::cat({mid + side, mid - side}, 1) * 0.5}, {}};
}

}  // namespace grafx
