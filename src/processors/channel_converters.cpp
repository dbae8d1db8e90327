#include <grafx/processors/channel_converters.h>

#include "processors/units.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

using Conversion = ChannelConverter::Conversion;

ProcessorDescriptor converter_descriptor(Conversion conversion, char letter, std::string summary) {
  auto d = ProcessorDescriptor::of<ChannelConverter>(
      ChannelConverter(ProcessorConfig(), conversion).name(), letter, conversion);
  d.summary    = std::move(summary);
  d.grafx_name = conversion == Conversion::kMonoToStereo      ? "MonoToStereo"
                 : conversion == Conversion::kStereoToMidSide ? "StereoToMidSide"
                                                              : "MidSideToStereo";
  d.response   = ResponsePicture::kStereoField;
  return d;
}

/// The mean of the channels, N×1×L: a mono signal itself, dual mono's one channel.
at::Tensor mono(const at::Tensor& x) { return x.size(1) == 1 ? x : x.mean(1, true); }

}  // namespace

ProcessorDescriptor mono_to_stereo_descriptor() {
  return converter_descriptor(Conversion::kMonoToStereo, 'u',
                              "mono to stereo: the mono signal (or the mean of the channels) on "
                              "both channels");
}

ProcessorDescriptor stereo_to_mid_side_descriptor() {
  return converter_descriptor(Conversion::kStereoToMidSide, 'y',
                              "stereo to mid/side: outlets mid (L+R)/√2 and side (L−R)/√2, mono "
                              "each");
}

ProcessorDescriptor mid_side_to_stereo_descriptor() {
  return converter_descriptor(Conversion::kMidSideToStereo, 'j',
                              "mid/side to stereo: inlets mid and side (mono), L = (M+S)/√2, "
                              "R = (M−S)/√2");
}

ChannelConverter::ChannelConverter(const ProcessorConfig&, Conversion conversion)
    : conversion_(conversion) {}

std::string ChannelConverter::name() const {
  switch (conversion_) {
    case Conversion::kMonoToStereo:
      return "mono_to_stereo";
    case Conversion::kStereoToMidSide:
      return "stereo_to_mid_side";
    case Conversion::kMidSideToStereo:
      return "mid_side_to_stereo";
  }
  return "";
}

std::vector<std::string> ChannelConverter::inlets() const {
  if (conversion_ == Conversion::kMidSideToStereo) return {"mid", "side"};
  return {"main"};
}

std::vector<std::string> ChannelConverter::outlets() const {
  if (conversion_ == Conversion::kStereoToMidSide) return {"mid", "side"};
  return {"main"};
}

ProcessorOutput ChannelConverter::forward(const std::vector<at::Tensor>& inputs,
                                          const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  const double scale = 1 / std::sqrt(2.0);
  switch (conversion_) {
    case Conversion::kMonoToStereo: {
      at::Tensor x = mono(inputs[0]);
      return {{x.expand({x.size(0), 2, x.size(2)})}, {}};
    }
    case Conversion::kStereoToMidSide: {
      at::Tensor x     = units::as_stereo(inputs[0], name());
      at::Tensor left  = x.narrow(1, 0, 1) * scale;
      at::Tensor right = x.narrow(1, 1, 1) * scale;
      return {{left + right, left - right}, {}};
    }
    case Conversion::kMidSideToStereo: {
      at::Tensor mid = mono(inputs[0]) * scale, side = mono(inputs[1]) * scale;
      return {{at::cat({mid + side, mid - side}, 1)}, {}};
    }
  }
  return {};
}

}  // namespace grafx
