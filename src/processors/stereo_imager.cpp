#include <grafx/processors/stereo_imager.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {

std::vector<ParameterSpec> StereoImager::parameter_specs() const {
  return {{"log_gain", {1}, 0.0, 0.01, "side_gain_db", "dB",
           "gain of the side (L−R) signal; 0 dB leaves the image unchanged", units::log_gain_to_db}};
}

ProcessorOutput StereoImager::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  units::check_stereo(x, name());
  at::Tensor left = x.narrow(1, 0, 1), right = x.narrow(1, 1, 1);
  at::Tensor mid = left + right;
  at::Tensor side = parameters.at("log_gain").exp().unsqueeze(-1) * (left - right);
  return {{at::cat({mid + side, mid - side}, 1) * 0.5}, {}};
}

}  // namespace grafx
