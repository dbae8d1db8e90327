#pragma once
/// Real-time rendering: a graph with fixed parameters processing audio block by block, every
/// node's state (filters, level detectors, delay lines, convolution tails) carried from block to
/// block, as audio hosts and plugins run it.
///
/// A stream is made once from a graph, its processors and its parameters (make_stream, in the
/// render layer, grafx/render/make_stream.h: LibTorch makes each node's streaming form,
/// Processor::make_stream), or loaded from a program. Then `process` takes any block of 1 to
/// `max_block` samples on plain float32 buffers; it allocates nothing, locks nothing, throws
/// nothing and calls no LibTorch operator. Its outputs equal the offline render's (render.h)
/// delayed by `latency_samples()`: the zero-phase filters' half lengths along the slowest path
/// (parallel paths are aligned to it). It is fastest in calls of `max_block` samples, which its
/// convolutions are planned for (stream/convolution.h): make it for the host's block size.
///
///   Stream stream = make_stream(graph, processors, parameters, {48000, 512, 2});
///   std::vector<const float*> in(stream.n_sources() * stream.source_channels());
///   std::vector<float*> out(stream.n_outputs() * stream.output_channels());
///   ... point them at the host's buffers, then per block:
///   stream.process(in.data(), out.data(), n);
///
/// The song starts at the last reset: automated parameters follow their curves on that clock,
/// and signals are silent before it (and after set_song_end), as offline. A host whose
/// transport moves says where with locate(). A host may change the parameters listed by
/// parameters() between blocks; changes glide.
///
/// Input that holds NaN or infinity is contained: the block is processed as silence and its
/// output is silent, and a block whose output is not finite is silenced and the stream reset;
/// both are counted in status().
///
/// A stream saves itself as a program (`save`), plain data that `load` makes a stream of again
/// in a program without LibTorch: this header and the engine's sources use none (the LV2
/// plugin, apps/lv2).

#include <grafx/stream/form.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace grafx {

using NodeId = int64_t;  // as grafx/graph/graph.h

namespace detail {
struct StreamState;
}

/// A parameter a host may change while a stream runs, and its node.
struct StreamParameter {
  NodeId node = -1;
  std::string node_name, type;  ///< the node's name (may be empty) and type
  StreamControl control;        ///< in physical units, with its range and starting value
};

struct StreamOptions {
  /// The processors' (they were made for it): the clock of glides and automation curves.
  SampleRate sample_rate = 44100;
  /// The most samples one process() call takes (1 to 2^20), and the calls the convolutions are
  /// planned for (smaller calls are exact, but may cost more per sample).
  int64_t max_block       = 4096;
  int64_t source_channels = 2;  ///< channels of every source (1 to 8)
};

/// What a host can read of a running stream.
struct StreamStatus {
  int64_t blocks          = 0;  ///< blocks processed
  int64_t silenced_blocks = 0;  ///< of those, blocks silenced for NaN or infinite input or output
  int64_t refused_blocks  = 0;  ///< calls with a block size outside 1..max_block (nothing done)
};

class Stream {
 public:
  /// A stream of a state laid out by make_stream (render/make_stream.h) or read from a
  /// program (load), wired (StreamState::wire).
  explicit Stream(std::unique_ptr<detail::StreamState> state);
  ~Stream();
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;

  int64_t n_sources() const;  ///< the graph's `in` nodes, in graph order
  int64_t source_channels() const;
  int64_t n_outputs() const;  ///< the graph's `out` nodes, in graph order
  /// The widest signal of the graph (as the offline render's outputs).
  int64_t output_channels() const;
  int64_t max_block() const;
  SampleRate sample_rate() const;
  /// Samples by which the outputs lag the offline render.
  int64_t latency_samples() const;

  /// Processes n samples: sources[k · source_channels + c] of source k, channel c, into
  /// outputs[o · output_channels + c]. A block size outside 1..max_block does nothing but count
  /// in status().refused_blocks.
  void process(const float* const* sources, float* const* outputs, int64_t n) noexcept;
  /// Back to silence, as just made: the song starts again. Before its start every signal is
  /// silent, as in the offline render (a zero-phase filter's pre-echo of the first samples
  /// reaches no later node).
  void reset() noexcept;
  /// Where the song ends, in song samples (negative: never, as live): past it every signal is
  /// silent, as in the offline render of a song of that length (which a zero-phase filter after
  /// another reaches with its look-ahead). For renders of whole songs.
  void set_song_end(int64_t samples);
  /// Moves the song's clock, as a host's transport moves: the next sample processed is song
  /// sample `sample` (automation curves are read there on), and every state (filters, delay
  /// lines, tails) is kept, so that nothing clicks but what the host's audio does. After a reset,
  /// `locate(F)` and the sources from song sample F on play what the offline render of the sources
  /// silent before F plays from F on. Clamped to ±kLatestSongSample (thousands of years, and
  /// room for the clock to run on). Allocates nothing, throws nothing.
  void locate(int64_t sample) noexcept;
  static constexpr int64_t kLatestSongSample = int64_t(1) << 60;
  /// The song sample of the next input sample.
  int64_t song_position() const;
  StreamStatus status() const;
  /// What a host may change: each processed node's controls (gains, pans, thresholds, ratios,
  /// knees, times), then its wet amount where it has one; none of those it automates (curves
  /// drive them). Vector parameters (EQ curves, reverb envelopes) and those of linear filters
  /// stay as made.
  const std::vector<StreamParameter>& parameters() const;
  /// Glides parameter `index` to `value` (physical units, clamped to its range) over
  /// kGlideSeconds, from the next block on, so that nothing clicks. Allocates nothing; ignores
  /// an index out of range and a value that is not finite.
  void set_parameter(size_t index, double value) noexcept;

  /// The stream as made (parameters at their first values), as a program of plain data for
  /// load(): in native byte order, checked by a checksum.
  std::string save() const;
  /// A stream of a program save() wrote, for calls of up to `max_block` samples (0: the saved
  /// stream's). Throws RenderError [grafx.stream.program] for bytes that are not one (another
  /// version, truncated or corrupt), [grafx.stream.options] for a `max_block` above 2^20.
  static Stream load(const std::string& program, int64_t max_block = 0);
  /// The sample rate of the stream a program holds (its first field), to choose load's
  /// `max_block` for it. Throws as load() does for bytes that are not a program.
  static SampleRate program_sample_rate(const std::string& program);

 private:
  std::unique_ptr<detail::StreamState> state_;
};

}  // namespace grafx
