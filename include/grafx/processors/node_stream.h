#pragma once
/// Streaming forms of processors: one node of a graph processing audio block by block, its state
/// carried from block to block, for the stream engine (grafx/render/stream.h).
///
/// A processor makes the streaming form of one node from that node's raw parameters
/// (Processor::make_stream). Making it may use LibTorch (a linear processor measures its impulse
/// responses with its own `forward`, so the math is written once); `process` then allocates
/// nothing, locks nothing, throws nothing and calls no LibTorch operator.
///
///   StreamSetup setup{48000, 512, {2}};                     // one stereo inlet
///   std::unique_ptr<NodeStream> eq = make_processor("eq", {48000})->make_stream(raw, setup);
///   eq->process({{left_in, right_in}}, {{left_out, right_out}}, 512);  // lags by
///   latency_samples()

#include <grafx/processors/processor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace grafx {

/// What a node's streaming form is made for.
struct StreamSetup {
  SampleRate sample_rate = 44100;
  int64_t max_block      = 4096;  ///< the most samples one `process` call takes
  /// Channels of each inlet's signal, all alike (the engine spreads mono to the widest, as the
  /// offline render does).
  std::vector<int64_t> inlet_channels;
};

/// Sample pointers of a node's ports, [port][channel], each valid for the block's n samples.
using InletBuffers  = std::vector<std::vector<const float*>>;
using OutletBuffers = std::vector<std::vector<float*>>;

class NodeStream {
 public:
  virtual ~NodeStream() = default;
  /// Channels of each outlet's signal.
  virtual std::vector<int64_t> outlet_channels() const = 0;
  /// Samples by which the outputs lag the processor's offline output: half the length of a
  /// zero-phase filter, which needs that much of the future; 0 for a causal processor.
  virtual int64_t latency_samples() const { return 0; }
  /// Processes n samples (1 ≤ n ≤ max_block) of every inlet into every outlet. Outlet buffers
  /// never alias inlet buffers. Allocates nothing, throws nothing.
  virtual void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) = 0;
  /// Back to silence, as just made.
  virtual void reset() = 0;
};

/// The streaming form of a linear time-invariant processor with finite temporal support: its
/// impulse responses from every inlet channel to every outlet channel, measured once by its own
/// `forward` over past + future + 1 samples of its temporal support (in float32, as the offline
/// render of float32 audio), then convolved block by block (grafx/dsp/stream_convolution.h)
/// with a latency of its future support. Recursive filters are cut where their response has
/// decayed below TemporalSupport::kDecayTolerance. Throws ProcessorError
/// [grafx.stream.unsupported] for a response that never decays (a pole on the unit circle) or
/// lasts over a minute.
std::unique_ptr<NodeStream> stream_by_impulse_responses(const Processor& processor,
                                                        const TensorDict& parameters,
                                                        const StreamSetup& setup);

/// A linear time-invariant processor: its streaming form is stream_by_impulse_responses.
class LinearProcessor : public Processor {
 public:
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;
};

}  // namespace grafx
