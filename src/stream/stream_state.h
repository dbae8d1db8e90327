#pragma once
// What a Stream is made of (stream/stream.h): plain data and the nodes' streaming forms, built
// by the Stream constructor (stream.cpp, with LibTorch) or read back by Stream::load, and run
// by src/stream/stream.cpp (without LibTorch).

#include <grafx/stream/form.h>
#include <grafx/stream/stream.h>

#include <limits>
#include <memory>
#include <vector>

namespace grafx::detail {

/// One outlet's block: channels × max_block samples, lagging the offline render by `latency`.
struct StreamSignal {
  int64_t channels = 0, latency = 0;
  std::vector<float> samples;
};

/// An edge into an inlet: its source's signal, delayed to the node's latency.
struct StreamFeed {
  int64_t signal = 0, inlet = 0;
  int64_t delay = 0;              // samples
  std::vector<DelayLine> delays;  // per source channel, where delay > 0
};

struct StreamNode {
  enum class Role : int32_t { kSource, kMix, kOut, kProcessor };
  Role role        = Role::kProcessor;
  int64_t channels = 1;   // of every inlet: the widest signal fed to it
  int64_t latency  = 0;   // of its inlets' signals (the latest source's)
  int64_t source   = -1;  // a source node's source
  int64_t n_inlets = 0;
  std::vector<StreamFeed> feeds;
  std::vector<int64_t> outlets;        // signal per outlet
  std::unique_ptr<NodeStream> stream;  // processor nodes that are not bypassed
  // Dry/wet (w = σ(raw)) and bypassed nodes pass on an inlet per outlet (-1: silence), the dry
  // path delayed by the node's latency (dry_delay).
  bool dry_wet = false, bypassed = false;
  Glide wet{1};                                  // w = σ(raw), gliding where a host changes it
  std::shared_ptr<const StreamCurve> wet_curve;  // where the wet amount is automated
  std::vector<int64_t> passed;
  int64_t dry_delay = 0;

  // Buffers, made by StreamState::wire().
  std::vector<std::vector<float>> inlets;  // [inlet] channels × max_block
  InletBuffers inlet_pointers;
  OutletBuffers outlet_pointers;
  std::vector<float> wet_samples;                  // max_block: w at each sample of the block
  std::vector<std::vector<DelayLine>> dry_delays;  // [outlet][channel]
  std::vector<float> dry;                          // channels × max_block, delayed
};

/// Phases for nodes that work in bursts (NodeStream::bursts, periods powers of two), so that
/// the bursts fall on different calls of `max_block` samples: node by node, those of the
/// largest burst first, each takes the phase (a multiple of 64 samples) that lowers
/// the most work any call gets, then the sum of the squares of the calls' work, with the
/// phases of the nodes before it as chosen. The calls' work is counted in slots of 64 samples
/// (fewer over long periods: 1024 slots at most) over the longest period and summed over every
/// window of slots as long as a call, at any alignment. `heaviest_call` and `mean_call` are that
/// model's, in nanoseconds.
struct BurstPhases {
  std::vector<int64_t> phases;  // per node
  double heaviest_call = 0, mean_call = 0;
};
BurstPhases spread_bursts(const std::vector<std::vector<StreamBurst>>& bursts, int64_t max_block);

struct StreamState {
  StreamOptions options;
  std::vector<StreamSignal> signals;
  std::vector<StreamNode> nodes;  // live nodes in a topological order
  std::vector<int64_t> outs;      // nodes of the graph's outputs, in graph order
  int64_t output_channels = 1, latency = 0;
  int64_t n_sources = 0;
  std::vector<StreamParameter> parameters;
  std::vector<std::pair<int64_t, int64_t>> parameter_of;  // node, control (-1: wet amount)

  // Made by wire().
  std::vector<std::vector<DelayLine>> out_delays;  // [output][channel]
  std::vector<float> silence, scratch;             // max_block each
  std::vector<const float*> source_pointers;
  StreamStatus status;
  // The song sample of the next input sample (samples since the last reset, unless located),
  // and the song's end on that clock: signals are silent outside [0, song_end) of song time (a
  // signal's song time lags the clock by its latency), as the offline render's are, so that a
  // zero-phase filter after another hears no pre-echo.
  int64_t clock = 0, song_end = std::numeric_limits<int64_t>::max();

  /// Makes the buffers, delay lines and pointers of the plain data above, and spreads the
  /// nodes' bursts over calls (spread_bursts).
  void wire();
  float* channel(StreamSignal& s, int64_t c) { return s.samples.data() + c * options.max_block; }
  void run(const float* const* sources, float* const* outputs, int64_t n);
  /// A bypassed or dry/wet node's outlets from its processed ones and its passed inlets.
  void mix_dry(StreamNode& node, int64_t n);
  void reset();
  /// Zeroes the samples of `signal` outside the song.
  void keep_to_song(StreamSignal& signal, int64_t n);
};

}  // namespace grafx::detail
