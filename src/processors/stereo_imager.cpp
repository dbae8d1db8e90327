#include <grafx/dsp/channel_mix.h>
#include <grafx/processors/stereo_imager.h>
#include <grafx/stream/matrix_form.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

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
              .about("gain of the side (L−R) signal; 0 dB leaves the image unchanged")
              .automatable("linear in dB")};
}

ProcessorOutput StereoImager::forward(const std::vector<at::Tensor>& inputs,
                                      const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  units::check_mono_or_stereo(inputs[0], name());  // mix_channels takes mono as dual mono
  const at::Tensor& log_gain = parameters.at("log_gain");
  if (log_gain.dim() == 3) {  // automated: [N, 1, L], a side gain per sample
    const at::Tensor x    = inputs[0].expand({inputs[0].size(0), 2, inputs[0].size(2)});
    const at::Tensor mid  = x.sum(1, /*keepdim=*/true) * 0.5;
    const at::Tensor side = (x.narrow(1, 0, 1) - x.narrow(1, 1, 1)) * 0.5 * log_gain.exp();
    return {{at::cat({mid + side, mid - side}, 1)}, {}};
  }
  return {{dsp::mix_channels(inputs[0], matrix_of(log_gain))}, {}};
}

std::optional<ProcessorOutput> StereoImager::forward_mixed(const std::vector<at::Tensor>& inputs,
                                                           const TensorDict& parameters,
                                                           const at::Tensor& wet) const {
  check_arguments(inputs, parameters);
  units::check_mono_or_stereo(inputs[0], name());
  const at::Tensor& log_gain = parameters.at("log_gain");
  if (log_gain.dim() == 3) return std::nullopt;
  return ProcessorOutput{{dsp::mix_channels(inputs[0], dsp::with_dry(matrix_of(log_gain), wet))},
                         {}};
}

at::Tensor StereoImager::matrix_of(const at::Tensor& log_gain) {
  // [L, R] -> mid (L + R)/2 and side g·(L − R)/2 -> [M + S, M − S]: one 2×2 matrix per item.
  at::Tensor side = log_gain.exp().view({-1, 1, 1}) * 0.5;  // N×1×1
  return at::cat({at::cat({0.5 + side, 0.5 - side}, 2), at::cat({0.5 - side, 0.5 + side}, 2)}, 1);
}

std::unique_ptr<NodeStream> StereoImager::make_stream(const TensorDict& parameters,
                                                      const StreamSetup& setup) const {
  // [L, R] -> mid (L + R)/2, side g·(L − R)/2 -> [M + S, M − S], as forward: entries
  // 0.5 ± 0.5·g.
  return matrix_stream(
      2, 2, {stream_control(parameter_specs()[0], parameters.at("log_gain"), 0, -60, 24)},
      {{0, 0.5, 0.5}, {0, 0.5, -0.5}, {0, 0.5, -0.5}, {0, 0.5, 0.5}}, setup, "log_gain");
}

}  // namespace grafx
