#include <grafx/error.h>
#include <grafx/processors/gain_pan.h>

#include "processors/units.h"

#include <ATen/ATen.h>

namespace grafx {

std::vector<ParameterSpec> GainPan::parameter_specs() const {
  return {{"log_gain", {2}, 0.0, 0.01, "gain_db", "dB",
           "gain of the left and right channel (natural-log raw value)", units::log_gain_to_db}};
}

ProcessorOutput GainPan::forward(const std::vector<at::Tensor>& inputs,
                                 const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor& x = inputs[0];
  units::check_stereo(x, name());
  return {{x * parameters.at("log_gain").exp().unsqueeze(-1)}, {}};
}

}  // namespace grafx
