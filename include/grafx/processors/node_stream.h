#pragma once
/// Streaming forms of processors: one node of a graph processing audio block by block, its state
/// carried from block to block, for the stream engine (grafx/render/stream.h).
///
/// A processor makes the streaming form of one node from that node's raw parameters
/// (Processor::make_stream). Making it may use LibTorch (a linear processor measures its impulse
/// responses with its own `forward`, so the math is written once); `process` then allocates
/// nothing, locks nothing, throws nothing and calls no LibTorch operator. The forms themselves
/// are plain C++ (this header and their sources use no LibTorch): a form saves what it was made
/// of (`save`) and load_node_stream makes it again, in programs without LibTorch (the LV2 plugin).
///
///   StreamSetup setup{48000, 512, {2}};                     // one stereo inlet
///   std::unique_ptr<NodeStream> eq = make_processor("eq", {48000})->make_stream(raw, setup);
///   eq->process({{left_in, right_in}}, {{left_out, right_out}}, 512);  // lags by
///   latency_samples()

#include <grafx/error.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace grafx {

using SampleRate = int64_t;  // as grafx/tensors.h

/// Plain data of a saved stream (native byte order), written field by field.
class StreamWriter {
 public:
  template <typename T>
  void write(T value) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "a number");
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void write(const std::string& text);
  template <typename T>
  void write(const std::vector<T>& values) {
    write(uint64_t(values.size()));
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// Reads what a StreamWriter wrote, in the same order. Throws RenderError
/// [grafx.stream.program] where the data end early or a count cannot be right, and where what
/// the data would have it allocate (counted by `allocate`) passes a budget of 1 GiB and 8 bytes
/// per byte of data: a program whose counts were changed cannot take all memory.
class StreamReader {
 public:
  StreamReader(const char* data, size_t size)
      : data_(data), left_(size), budget_(double(1 << 30) + 8.0 * double(size)) {}
  /// A value as written; a number of floating point must be finite (forms hold no NaN or
  /// infinity: one would only make the stream's outputs silence).
  template <typename T>
  T read() {
    if constexpr (std::is_same_v<T, bool>) {  // a flag: 0 or 1, as written
      const uint8_t flag = read<uint8_t>();
      if (flag > 1) corrupt("a flag that is neither 0 nor 1");
      return flag == 1;
    } else {
      T value;
      std::memcpy(&value, take(sizeof value), sizeof value);
      if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(value)) corrupt("a number that is not finite");
      return value;
    }
  }
  /// An end of a control's range: a number or an infinity (a range without that end), not NaN.
  double read_bound();
  std::string read_string();
  template <typename T>
  std::vector<T> read_vector() {
    const uint64_t n = read<uint64_t>();
    if (n > left_ / sizeof(T)) corrupt("a list longer than the data");
    std::vector<T> values(static_cast<size_t>(n));
    if (n > 0) std::memcpy(values.data(), take(size_t(n) * sizeof(T)), size_t(n) * sizeof(T));
    if constexpr (std::is_floating_point_v<T>)
      for (const T value : values)
        if (!std::isfinite(value)) corrupt("a number that is not finite");
    return values;
  }
  /// A count that must lie in [minimum, maximum].
  int64_t read_count(int64_t minimum, int64_t maximum);
  size_t left() const { return left_; }
  /// Counts `bytes` that a reader is about to allocate against the budget.
  void allocate(double bytes);
  [[noreturn]] static void corrupt(const std::string& what);

 private:
  const char* take(size_t n);
  const char* data_;
  size_t left_;
  double budget_;
};

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
  /// Writes a flag, then `curve` where there is one (forms follow curves only where a
  /// parameter is automated); load reads it back, null where none was saved.
  static void save(StreamWriter& out, const std::shared_ptr<const StreamCurve>& curve);
  static std::shared_ptr<const StreamCurve> load(StreamReader& in);

 private:
  std::vector<float> points_;
  int64_t elements_;
  double samples_per_point_;
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
};

/// Work a streaming form does in bursts, not evenly per sample (a partitioned convolution's
/// levels, dsp::StreamConvolverMatrix): every `period` samples (a power of two), on the call
/// where (t + phase) mod period becomes `offset` (t: samples since the last reset), about
/// `nanoseconds` (a model's figure: a weight to spread work by).
struct StreamBurst {
  int64_t period = 0, offset = 0;
  double nanoseconds = 0;
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
  bool gliding() const { return left_ > 0; }

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
  /// Whether it processes `n_inlets` inlets of `channels` channels each: what a program's node
  /// hands it (a program whose node and form disagree is refused before a block runs; a form
  /// handed other buffers would read or write past them). By default at least one inlet, and
  /// each outlet of as many channels as an inlet.
  virtual bool takes(int64_t n_inlets, int64_t channels) const {
    const std::vector<int64_t> outlets = outlet_channels();
    return n_inlets >= 1 && std::all_of(outlets.begin(), outlets.end(),
                                        [channels](int64_t c) { return c == channels; });
  }
  /// Samples by which the outputs lag the processor's offline output: half the length of a
  /// zero-phase filter, which needs that much of the future; 0 for a causal processor.
  virtual int64_t latency_samples() const { return 0; }
  /// Processes n samples (1 ≤ n ≤ max_block) of every inlet into every outlet. Outlet buffers
  /// never alias inlet buffers. Allocates nothing, throws nothing.
  virtual void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) = 0;
  /// Back to silence, as just made (controls keep their values).
  virtual void reset() = 0;
  /// Its bursts (none: its work is the same in every call).
  virtual std::vector<StreamBurst> bursts() const { return {}; }
  /// Moves its bursts to `phase` (any value) and resets. The output does not depend on it but
  /// for roundings; the engine chooses the nodes' phases so that their bursts fall on different
  /// calls.
  virtual void set_phase(int64_t /*phase*/) {}
  /// Where the song ends, in song samples (negative: never): a stream of a whole song tells
  /// every node, and one that holds signals of its own (a container) silences them past it, as
  /// the offline render does.
  virtual void set_song_end(int64_t /*samples*/) {}
  /// Moves the song's clock (a host's transport moved): it goes on as after `clock` samples from
  /// a reset (its next input sample is song sample clock − input_latency, where curves are
  /// read), keeping its signal state (filters, delay lines, tails). Forms that read the clock
  /// (automation curves, a container's song bounds) follow it. Allocates nothing, throws nothing.
  virtual void locate(int64_t /*clock*/) {}
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
  /// Writes what the form was made of (as made: controls at their first values), for
  /// load_node_stream; its kind first.
  virtual void save(StreamWriter& out) const = 0;

 protected:
  /// set_control's work: `value` is finite and within control `index`'s range.
  virtual void apply_control(size_t /*index*/, double /*value*/) {}

  std::vector<StreamControl> controls_;
  std::vector<std::string> followed_curves_;
};

/// Controls as streaming forms save them.
void write_controls(StreamWriter& out, const std::vector<StreamControl>& controls);
std::vector<StreamControl> read_controls(StreamReader& in);

/// The kinds of streaming form, as saved (each form's loader is in its own source).
enum class NodeStreamKind : int32_t {
  kImpulseResponses,
  kMatrix,
  kDynamics,
  kWaveshaper,
  kContainer,
};

/// A form saved by NodeStream::save, made again for a stream of blocks of up to `max_block`
/// samples. Throws RenderError [grafx.stream.program] for data that are not such a form.
std::unique_ptr<NodeStream> load_node_stream(StreamReader& in, int64_t max_block);

/// An entry of a channel matrix: offset + scale · 10^(value/20) of the control `control`'s value
/// in dB (a constant `offset` where control < 0): the gains, pans and side gains of the
/// matrix forms.
struct MatrixEntry {
  int64_t control = -1;
  double offset = 0, scale = 1;
};

/// The streaming form of a memoryless channel matrix, y_o = Σ_i m[o][i]·x_i (a mono input is
/// read as dual mono where the matrix has two inputs; a 1×1 matrix is one gain on every
/// channel), whose entries (row-major, n_outputs × n_inputs) are MatrixEntry of the controls'
/// values in dB; changes glide. Where the node automates the raw parameter `raw_name` (a log
/// gain) whose elements the controls are, the values follow its curve instead, and there are no
/// controls.
std::unique_ptr<NodeStream> matrix_stream(int64_t n_inputs, int64_t n_outputs,
                                          std::vector<StreamControl> controls,
                                          std::vector<MatrixEntry> entries,
                                          const StreamSetup& setup, const std::string& raw_name);

}  // namespace grafx
