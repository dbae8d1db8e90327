#include <grafx/processors/send.h>
#include <grafx/stream/matrix_form.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {

ProcessorDescriptor send_descriptor() {
  auto d          = ProcessorDescriptor::of<Send>("send", 'b');
  d.summary       = "send: the level of a send to an effect bus, one gain for every channel";
  d.response      = ResponsePicture::kStereoField;
  d.musical_prior = [](const PriorContext& c) {
    return TensorDict{{"gain_db", at::tensor({c.random.uniform(-24, -8)}, at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> Send::parameter_specs() const {
  return {units::gain_spec("log_gain", {1})
              .initial(-12.0 * std::log(10.0) / 20.0)
              .about("how much of the track goes to the bus")
              .maps("natural log of the gain")
              .automatable("linear in dB")};
}

ProcessorOutput Send::forward(const std::vector<at::Tensor>& inputs,
                              const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const at::Tensor gain = over_time(parameters.at("log_gain"), parameter_specs()[0]).exp();
  return {{inputs[0] * gain}, {}};
}

std::unique_ptr<NodeStream> Send::make_stream(const TensorDict& parameters,
                                              const StreamSetup& setup) const {
  return matrix_stream(
      1, 1, {stream_control(parameter_specs()[0], parameters.at("log_gain"), 0, -60, 12)},
      {{0, 0, 1}}, setup, "log_gain");
}

}  // namespace grafx
