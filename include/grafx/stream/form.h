#pragma once
/// Streaming forms of processors: one node of a graph processing audio block by block, its state
/// carried from block to block, for the stream engine (grafx/stream/stream.h).
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

#include <grafx/stream/curve.h>
#include <grafx/stream/program_data.h>
#include <grafx/stream/signals.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace grafx {

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

/// What reads a form of one kind back: the data after its kind, for blocks of up to
/// `max_block` samples.
using FormLoader = std::unique_ptr<NodeStream> (*)(StreamReader& in, int64_t max_block);

/// Registers the loader of a kind of form (`kind`: the number its save() writes first, unique;
/// `name`: for messages), from a static initialiser in the form's own file; returns true.
bool register_form(int32_t kind, const char* name, FormLoader load);

/// A form saved by NodeStream::save, made again for a stream of blocks of up to `max_block`
/// samples. Throws RenderError [grafx.stream.program] for data that are not such a form.
std::unique_ptr<NodeStream> load_node_stream(StreamReader& in, int64_t max_block);

}  // namespace grafx
