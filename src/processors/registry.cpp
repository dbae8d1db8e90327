// The one list of grafx's processors. Adding a processor: see CONTRIBUTING.md.

#include <grafx/error.h>
#include <grafx/processors/registry.h>

#include <grafx/processors/compressor.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/eq.h>
#include <grafx/processors/gain_pan.h>
#include <grafx/processors/noise_gate.h>
#include <grafx/processors/reverb.h>
#include <grafx/processors/stereo_imager.h>

namespace grafx {
namespace {

/// Processor P made with `options` after the config (variants of one class differ in them).
template <class P, class... Options>
ProcessorInfo entry(std::string summary, Options... options) {
  ProcessorConfig probe;
  return ProcessorInfo{P(probe, options...).name(), std::move(summary),
                       [=](const ProcessorConfig& config) { return std::make_unique<P>(config, options...); }};
}

constexpr auto kBallistics = dsp::EnvelopeSmoothing::ballistics;

}  // namespace

const std::vector<ProcessorInfo>& processor_registry() {
  static const std::vector<ProcessorInfo> registry = {
      entry<Equalizer>("zero-phase FIR EQ: 1024 log-magnitudes, one 2047-tap filter on all channels (the paper's)"),
      entry<Equalizer>("zero-phase FIR EQ with one filter per channel (left, right)", EqChannels::stereo),
      entry<Equalizer>("zero-phase FIR EQ with one filter for mid and one for side", EqChannels::mid_side),
      entry<Compressor>("compressor: level of the mid, one-pole smoothing, quadratic knee (the paper's)"),
      entry<Compressor>("compressor with attack/release ballistics on its level detector", kBallistics),
      entry<NoiseGate>("noise gate: level of the mid, one-pole smoothing, quadratic knee (the paper's)"),
      entry<NoiseGate>("noise gate with attack/release ballistics on its level detector", kBallistics),
      entry<StereoImager>("stereo imager: mid/side with a side gain"),
      entry<GainPan>("gain/pan: a gain per channel of a stereo signal"),
      entry<MultitapDelay>("multitap delay: 20 taps per channel over 2 s, surrogate delays, coloured taps"),
      entry<NoiseReverb>("reverb: 2 s of mid/side noise shaped by an STFT mask, energy-normalised"),
  };
  return registry;
}

std::unique_ptr<Processor> make_processor(const std::string& name, const ProcessorConfig& config) {
  std::string known;
  for (const auto& info : processor_registry()) {
    if (info.name == name) return info.make(config);
    known += (known.empty() ? "" : ", ") + info.name;
  }
  throw ProcessorError("grafx.processor.unknown",
                       "no processor implements node type \"" + name + "\"; processors: " + known);
}

NodeTypes registry_node_types() {
  NodeTypes types;
  for (const auto& info : processor_registry()) types.add(info.make(ProcessorConfig())->node_type());
  return types;
}

Processors make_processors(const NodeTypes& types, const ProcessorConfig& config) {
  Processors processors;
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t) {
    std::shared_ptr<const Processor> processor = make_processor(types.name(t), config);
    if (processor->node_type() != types[t]) {
      auto ports = [](const NodeType& type) {
        std::string text;
        for (const auto& p : type.inlets) text += (text.empty() ? "" : ", ") + p;
        text += " -> ";
        for (size_t i = 0; i < type.outlets.size(); ++i) text += (i ? ", " : "") + type.outlets[i];
        return text;
      };
      throw ProcessorError("grafx.processor.ports",
                           "node type \"" + types.name(t) + "\" has ports (" + ports(types[t]) +
                               ") but its processor has (" + ports(processor->node_type()) + ")");
    }
    processors[types.name(t)] = processor;
  }
  return processors;
}

}  // namespace grafx
