#pragma once
/// Linear time-invariant processors, and what processors' streaming forms are made from: their
/// impulse responses, and the controls of their raw parameters (grafx/stream/form.h).

#include <grafx/processors/processor.h>
#include <grafx/stream/form.h>

#include <memory>

namespace grafx {

/// The control of element `element` of `spec`'s parameter, whose raw values are `raw`
/// ([1, shape...]), over [minimum, maximum] (widened to hold the value): for streaming forms.
StreamControl stream_control(const ParameterSpec& spec, const at::Tensor& raw, int64_t element,
                             double minimum, double maximum);

/// The streaming form of a linear time-invariant processor with finite temporal support: its
/// impulse responses from every inlet channel to every outlet channel, measured once by its own
/// `forward` over past + future + 1 samples of its temporal support (in float32, as the offline
/// render of float32 audio), then convolved block by block (grafx/stream/convolution.h)
/// with a latency of its future support. Recursive filters are cut where their response has
/// decayed below TemporalSupport::kDecayTolerance; responses are set to zero outside the
/// processor's response_support. Throws ProcessorError
/// [grafx.stream.unsupported] for a response that never decays (a pole on the unit circle) or
/// lasts over a minute.
class LinearProcessor;
std::unique_ptr<NodeStream> stream_by_impulse_responses(const LinearProcessor& processor,
                                                        const TensorDict& parameters,
                                                        const StreamSetup& setup);

/// A linear time-invariant processor: its streaming form is stream_by_impulse_responses.
class LinearProcessor : public Processor {
 public:
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;

  /// Where its impulse responses matter, for raw parameters of one item (float32): a boolean
  /// per sample of the measured responses (past + future + 1 of its temporal support, the
  /// impulse at `future`), or undefined (the default) where that is not known. The measured
  /// responses are set to exact zeros elsewhere, where the transforms of its forward pass leave
  /// roundings, so that the stream skips those partitions: a delay's response outside its taps
  /// (nonzero_lags), a reverb's after it has decayed (until_decayed).
  virtual at::Tensor response_support(const TensorDict& raw) const;

  /// For response_support, from responses [..., K] with lag 0 at sample 0: the lags where any
  /// of them is non-zero.
  static at::Tensor nonzero_lags(const at::Tensor& responses);
  /// For response_support: the lags up to the last where any of `responses` [..., K] is above
  /// TemporalSupport::kDecayTolerance of their peak, as recursive filters are cut (what is cut
  /// off is far below float32's resolution of the output).
  static at::Tensor until_decayed(const at::Tensor& responses);
};

}  // namespace grafx
