#include <grafx/dsp/channel_mix.h>
#include <grafx/error.h>
#include <grafx/processors/gain_pan.h>
#include <grafx/stream/matrix_form.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {

ProcessorDescriptor gain_pan_descriptor() {
  auto d                   = ProcessorDescriptor::of<GainPan>("gain_pan", 'g');
  d.summary                = "gain/pan: a gain per channel of a stereo signal";
  d.grafx_name             = "StereoGain";
  d.response               = ResponsePicture::kStereoField;
  d.console_position       = 5;
  d.channel_gain_parameter = "log_gain";
  d.random_pruning_rate    = 0.51;  // the paper's hybrid pruning at tolerance 0.01 (Table 2)
  d.musical_prior          = [](const PriorContext& c) {
    // A level, and for tracks a pan position (±0.6 moves each channel by up to 2.4 dB).
    double level = c.subgroup ? c.random.uniform(-3, 0) : c.random.uniform(-6, 2);
    double pan   = c.subgroup ? 0.0 : c.random.uniform(-0.6, 0.6);
    return TensorDict{{"gain_db", at::tensor({level - 4 * pan, level + 4 * pan}, at::kDouble)}};
  };
  return d;
}

std::vector<ParameterSpec> GainPan::parameter_specs() const {
  return {ParameterSpec::raw("log_gain", {2})
              .physical("gain_db", "dB", units::log_gain_to_db, units::db_to_log_gain)
              .about("level of the left and of the right channel")
              .maps("natural log of the gain")
              .elements({"left", "right"})
              .automatable("linear in dB")};
}

ProcessorOutput GainPan::forward(const std::vector<at::Tensor>& inputs,
                                 const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  units::check_mono_or_stereo(inputs[0], name());  // mix_channels takes mono as dual mono
  const at::Tensor& log_gain = parameters.at("log_gain");
  if (log_gain.dim() == 3)  // automated: [N, 2, L], a gain per channel and sample
    return {{inputs[0] * log_gain.exp()}, {}};
  return {{dsp::mix_channels(inputs[0], log_gain.exp().diag_embed())}, {}};
}

std::optional<ProcessorOutput> GainPan::forward_mixed(const std::vector<at::Tensor>& inputs,
                                                      const TensorDict& parameters,
                                                      const at::Tensor& wet) const {
  check_arguments(inputs, parameters);
  units::check_mono_or_stereo(inputs[0], name());
  const at::Tensor& log_gain = parameters.at("log_gain");
  if (log_gain.dim() == 3) return std::nullopt;
  return ProcessorOutput{
      {dsp::mix_channels(inputs[0], dsp::with_dry(log_gain.exp().diag_embed(), wet))}, {}};
}

std::unique_ptr<NodeStream> GainPan::make_stream(const TensorDict& parameters,
                                                 const StreamSetup& setup) const {
  std::vector<StreamControl> controls;
  for (int64_t channel = 0; channel < 2; ++channel)
    controls.push_back(
        stream_control(parameter_specs()[0], parameters.at("log_gain"), channel, -60, 24));
  // Gains of each channel on the diagonal: [[g_L, 0], [0, g_R]].
  return matrix_stream(2, 2, std::move(controls), {{0, 0, 1}, {-1, 0, 0}, {-1, 0, 0}, {1, 0, 1}},
                       setup, "log_gain");
}

}  // namespace grafx
