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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace grafx {

/// An automation curve played back sample by sample on the song's clock, as the offline render
/// interpolates it: linear in the raw value between points, held before the first and after the
/// last (render/automation.h).
class StreamCurve {
 public:
  /// `points`: [n_points × elements] raw values; the points lie every `samples_per_point`
  /// samples of the song from its start.
  StreamCurve(std::vector<float> points, int64_t elements, double samples_per_point);
  /// The raw value of `element` at song sample `sample`.
  float at(int64_t sample, int64_t element) const;
  int64_t elements() const { return elements_; }

 private:
  std::vector<float> points_;
  int64_t elements_;
  std::vector<double> positions_;  // of the points, in samples
};

/// What a node's streaming form is made for.
struct StreamSetup {
  SampleRate sample_rate = 44100;
  int64_t max_block      = 4096;  ///< the most samples one `process` call takes
  /// Channels of each inlet's signal, all alike (the engine spreads mono to the widest, as the
  /// offline render does).
  std::vector<int64_t> inlet_channels;
  /// Samples by which the node's inputs lag the song: its n-th input sample after a reset is
  /// song sample n − input_latency (where automation curves are read).
  int64_t input_latency = 0;
  /// The automation curves of the parameters the node automates, by raw name ("log_gain"). A
  /// streaming form follows those it can and lists them in followed_curves().
  std::map<std::string, std::shared_ptr<const StreamCurve>> curves;
  /// Where its convolutions' partitions start (dsp::StreamConvolverMatrix's phase): the engine
  /// spreads the nodes' phases so that their largest transforms fall on different blocks.
  int64_t phase = 0;
};

/// A parameter a host may change while a node streams, in physical units: one value of the
/// processor's parameter `name` (its physical name; "gain_db[1]" for element 1 of a vector).
struct StreamControl {
  std::string name, unit, description;
  double minimum = 0, maximum = 0;  ///< finite: what a host's control shows
  double value = 0;                 ///< the value the stream was made with
};

/// How long a change of a control takes to reach its new value: a linear glide, so that no
/// change clicks (each sample moves by at most 1/glide_samples of the change).
inline constexpr double kGlideSeconds = 0.02;
/// kGlideSeconds in samples.
inline int64_t glide_samples(SampleRate sample_rate) {
  return int64_t(kGlideSeconds * double(sample_rate));
}

/// A value that glides linearly to its targets (per sample, allocation-free).
class Glide {
 public:
  explicit Glide(float value = 0) : value_(value), target_(value) {}
  void to(float target, int64_t samples) {
    target_ = target, left_ = std::max<int64_t>(1, samples);
    step_ = (target - value_) / float(left_);
  }
  float next() {
    if (left_ > 0) value_ = --left_ == 0 ? target_ : value_ + step_;
    return value_;
  }
  float value() const { return value_; }

 private:
  float value_, target_, step_ = 0;
  int64_t left_ = 0;
};

/// A fixed delay of one channel, for paths that meet with different latencies (allocation-free
/// after construction).
class DelayLine {
 public:
  explicit DelayLine(int64_t delay) : buffer_(size_t(delay), 0.0f) {}
  /// out may be in.
  void process(const float* in, float* out, int64_t n) {
    if (buffer_.empty()) {
      if (in != out) std::copy(in, in + n, out);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float delayed = buffer_[position_];
      buffer_[position_]  = in[i];
      out[i]              = delayed;
      position_           = position_ + 1 == buffer_.size() ? 0 : position_ + 1;
    }
  }
  void reset() { std::fill(buffer_.begin(), buffer_.end(), 0.0f), position_ = 0; }

 private:
  std::vector<float> buffer_;
  size_t position_ = 0;
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
  /// Back to silence, as just made (controls keep their values).
  virtual void reset() = 0;
  /// Where the song ends, in samples after the last reset (negative: never): a stream of a
  /// whole song tells every node, and one that holds signals of its own (a container) silences
  /// them past it, as the offline render does.
  virtual void set_song_end(int64_t /*samples*/) {}
  /// What a host may change while it runs (empty: the node plays as made).
  const std::vector<StreamControl>& controls() const { return controls_; }
  /// The automated parameters it follows (of StreamSetup::curves); the engine refuses a node
  /// whose form does not follow all of them.
  const std::vector<std::string>& followed_curves() const { return followed_curves_; }
  /// Glides control `index` to `value` (physical units, clamped to its range) over
  /// kGlideSeconds. Allocates nothing, throws nothing; ignores an index it has not and a value
  /// that is not finite.
  void set_control(size_t index, double value) {
    if (index < controls_.size() && std::isfinite(value))
      apply_control(index, std::clamp(value, controls_[index].minimum, controls_[index].maximum));
  }

 protected:
  /// set_control's work: `value` is finite and within control `index`'s range.
  virtual void apply_control(size_t /*index*/, double /*value*/) {}

  std::vector<StreamControl> controls_;
  std::vector<std::string> followed_curves_;
};

/// The control of element `element` of `spec`'s parameter, whose raw values are `raw`
/// ([1, shape...]), over [minimum, maximum] (widened to hold the value): for streaming forms.
StreamControl stream_control(const ParameterSpec& spec, const at::Tensor& raw, int64_t element,
                             double minimum, double maximum);

/// The streaming form of a memoryless channel matrix, y_o = Σ_i m[o][i]·x_i (a mono input is
/// read as dual mono where the matrix has two inputs; a 1×1 matrix is one gain on every
/// channel), whose entries `matrix_of` makes from the controls' physical values in plain
/// arithmetic (a gain, a pan, a side gain); changes glide. Where the node automates the raw
/// parameter `raw_name` whose elements the controls are, the values follow its curve instead
/// (`physical_of_raw` maps each raw value), and there are no controls.
std::unique_ptr<NodeStream> matrix_stream(int64_t n_inputs, int64_t n_outputs,
                                          std::vector<StreamControl> controls,
                                          void (*matrix_of)(const double* values, float* matrix),
                                          const StreamSetup& setup, const std::string& raw_name,
                                          double (*physical_of_raw)(double));

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
