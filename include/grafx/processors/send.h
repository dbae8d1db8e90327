#pragma once
/// send (letter b): the level of a track's send to an effect bus (a reverb or delay bus of a
/// console), one gain for every channel.
///
///   y = x · exp(log_gain)
///
/// Parameters: the table in docs/processors/stereo.md, generated from parameter_specs() (also
/// `grafx processors TYPE`).
///
/// Input and output: N×C×L, any C. A send starts at −12 dB so that a fresh console's effect
/// buses colour the mix without drowning it. Bypassed (or dry), it is silent, as a DAW's send
/// switched off (kSendProcessor, grafx/graph/node_types.h): pruning can take a track's send away,
/// and with the last of them the bus.
///
///   Send send({/*sample_rate=*/30000});
///   auto y = send.forward({x}, {{"log_gain", at::full({x.size(0), 1}, -1.38)}}).outputs[0];

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor send_descriptor();

class Send : public LinearProcessor {
 public:
  explicit Send(const ProcessorConfig&) {}
  std::string name() const override { return "send"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// Sample by sample, its gains as controls a host may change (they glide).
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }
};

}  // namespace grafx
