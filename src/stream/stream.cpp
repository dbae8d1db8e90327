// The stream engine's block loop (stream/stream.h): node by node in a topological order, on
// blocks of float32 samples with every node's streaming form; delay lines align paths of
// different latencies where they meet. Its programs saved and read back. No LibTorch here: the
// LV2 plugin runs this.

#include <grafx/error.h>
#include <grafx/hash.h>
#include <grafx/stream/stream.h>

#include "stream/stream_state.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace grafx {
namespace detail {
namespace {

bool finite(const float* x, int64_t n) {
  float sum = 0;  // NaN and infinity propagate; finite samples cannot overflow a float sum here
  for (int64_t i = 0; i < n; ++i) sum += x[i] * 0.0f;
  return sum == 0;
}

}  // namespace

BurstPhases spread_bursts(const std::vector<std::vector<StreamBurst>>& bursts, int64_t max_block) {
  BurstPhases result;
  result.phases.assign(bursts.size(), 0);
  int64_t cycle = 0;
  for (const auto& node : bursts)
    for (const StreamBurst& burst : node) cycle = std::max(cycle, burst.period);
  if (cycle == 0) return result;
  // Slots of `grain` samples over one cycle (phases that are multiples of the convolvers' chunks
  // of 64 samples keep them whole); a node's work per slot at phase 0, summed over windows of
  // `width` slots (a call), is its work at phase p·grain moved by p slots.
  const int64_t grain = std::min(cycle, std::max<int64_t>(64, cycle / 1024)), slots = cycle / grain;
  const int64_t width   = std::min(slots, (max_block + grain - 1) / grain);
  const auto windows_of = [&](const std::vector<StreamBurst>& node) {
    std::vector<double> work(size_t(slots), 0.0), windows(size_t(slots), 0.0);
    for (const StreamBurst& burst : node)
      for (int64_t s = 0; s < slots; ++s)  // in the slot that ends where it runs (phase 0)
        work[size_t(s)] += burst.period <= grain ? burst.nanoseconds * double(grain / burst.period)
                           : ((s + 1) * grain - burst.offset) % burst.period == 0
                               ? burst.nanoseconds
                               : 0.0;
    for (int64_t s = 0; s < slots; ++s)
      for (int64_t k = 0; k < width; ++k) windows[size_t(s)] += work[size_t((s + k) % slots)];
    return windows;
  };
  std::vector<size_t> order(bursts.size());
  std::vector<double> largest(bursts.size(), 0.0);
  for (size_t n = 0; n < bursts.size(); ++n) {
    order[n] = n;
    for (const StreamBurst& burst : bursts[n]) largest[n] = std::max(largest[n], burst.nanoseconds);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return largest[a] > largest[b]; });
  std::vector<double> calls(size_t(slots), 0.0);  // the work of the windows so far
  for (size_t n : order) {
    if (bursts[n].empty()) continue;
    const std::vector<double> windows = windows_of(bursts[n]);
    double best_peak = std::numeric_limits<double>::infinity(), best_squares = best_peak;
    int64_t best = 0;
    for (int64_t p = 0; p < slots; ++p) {
      double peak = 0, squares = 0;
      for (int64_t s = 0; s < slots; ++s) {
        const double call = calls[size_t(s)] + windows[size_t((s + p) % slots)];
        peak              = std::max(peak, call), squares += call * call;
      }
      if (peak < best_peak || (peak == best_peak && squares < best_squares))
        best_peak = peak, best_squares = squares, best = p;
    }
    for (int64_t s = 0; s < slots; ++s) calls[size_t(s)] += windows[size_t((s + best) % slots)];
    result.phases[n] = best * grain;
  }
  for (double call : calls) {
    result.heaviest_call = std::max(result.heaviest_call, call);
    result.mean_call += call / double(slots);
  }
  return result;
}

void StreamState::wire() {
  const int64_t block = options.max_block;
  for (StreamSignal& signal : signals) signal.samples.assign(size_t(signal.channels * block), 0);
  for (StreamNode& node : nodes) {
    for (StreamFeed& feed : node.feeds)
      feed.delays.assign(feed.delay > 0 ? size_t(signals[size_t(feed.signal)].channels) : 0,
                         DelayLine(feed.delay));
    node.inlets.assign(size_t(node.n_inlets), std::vector<float>(size_t(node.channels * block)));
    node.inlet_pointers.clear();
    for (auto& inlet : node.inlets) {
      node.inlet_pointers.emplace_back();
      for (int64_t c = 0; c < node.channels; ++c)
        node.inlet_pointers.back().push_back(inlet.data() + c * block);
    }
    node.outlet_pointers.clear();
    node.dry_delays.clear();
    if (node.role == StreamNode::Role::kProcessor)
      for (int64_t o : node.outlets) {
        StreamSignal& signal = signals[size_t(o)];
        node.outlet_pointers.emplace_back();
        for (int64_t c = 0; c < signal.channels; ++c)
          node.outlet_pointers.back().push_back(channel(signal, c));
        node.dry_delays.emplace_back(size_t(node.channels), DelayLine(node.dry_delay));
      }
    node.wet_samples.assign(size_t(block), 0.0f);
    node.dry.assign(node.role == StreamNode::Role::kProcessor ? size_t(node.channels * block) : 0,
                    0.0f);
  }
  out_delays.clear();
  for (int64_t o : outs)
    out_delays.emplace_back(size_t(nodes[size_t(o)].channels),
                            DelayLine(latency - nodes[size_t(o)].latency));
  silence.assign(size_t(block), 0.0f);
  scratch.assign(size_t(block), 0.0f);
  source_pointers.assign(size_t(n_sources * options.source_channels), nullptr);
  std::vector<std::vector<StreamBurst>> bursts;
  for (const StreamNode& node : nodes)
    bursts.push_back(node.stream ? node.stream->bursts() : std::vector<StreamBurst>{});
  const BurstPhases spread = spread_bursts(bursts, block);
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!bursts[n].empty()) nodes[n].stream->set_phase(spread.phases[n]);
}

void StreamState::keep_to_song(StreamSignal& signal, int64_t n) {
  const int64_t start = clock - signal.latency;  // song time of the block's first sample
  if (start >= 0 && start + n <= song_end) return;
  for (int64_t c = 0; c < signal.channels; ++c) {
    float* x = channel(signal, c);
    for (int64_t i = 0; i < n; ++i)
      if (start + i < 0 || start + i >= song_end) x[i] = 0;
  }
}

}  // namespace detail

using detail::StreamFeed;
using detail::StreamNode;
using detail::StreamSignal;
using detail::StreamState;

Stream::Stream(std::unique_ptr<StreamState> state) : state_(std::move(state)) {}

Stream::~Stream()                            = default;
Stream::Stream(Stream&&) noexcept            = default;
Stream& Stream::operator=(Stream&&) noexcept = default;

int64_t Stream::n_sources() const { return state_->n_sources; }
int64_t Stream::source_channels() const { return state_->options.source_channels; }
int64_t Stream::n_outputs() const { return int64_t(state_->outs.size()); }
int64_t Stream::output_channels() const { return state_->output_channels; }
int64_t Stream::max_block() const { return state_->options.max_block; }
SampleRate Stream::sample_rate() const { return state_->options.sample_rate; }
int64_t Stream::latency_samples() const { return state_->latency; }
StreamStatus Stream::status() const { return state_->status; }
const std::vector<StreamParameter>& Stream::parameters() const { return state_->parameters; }

void Stream::set_parameter(size_t index, double value) noexcept {
  StreamState& s = *state_;
  if (index >= s.parameters.size() || !std::isfinite(value)) return;
  const auto [run, control] = s.parameter_of[index];
  StreamNode& node          = s.nodes[size_t(run)];
  if (control >= 0) return node.stream->set_control(size_t(control), value);
  node.wet.to(float(std::clamp(value, 0.0, 1.0)), glide_samples(s.options.sample_rate));
}
void Stream::set_song_end(int64_t samples) {
  state_->song_end = samples < 0 ? std::numeric_limits<int64_t>::max() : samples;
  for (StreamNode& node : state_->nodes)
    if (node.stream) node.stream->set_song_end(samples);
}
void Stream::reset() noexcept { state_->reset(); }
void Stream::locate(int64_t sample) noexcept {
  sample        = std::clamp(sample, -kLatestSongSample, kLatestSongSample);
  state_->clock = sample;
  for (StreamNode& node : state_->nodes)
    if (node.stream) node.stream->locate(sample);
}
int64_t Stream::song_position() const { return state_->clock; }

void Stream::process(const float* const* sources, float* const* outputs, int64_t n) noexcept {
  StreamState& s = *state_;
  if (n < 1 || n > s.options.max_block) {
    ++s.status.refused_blocks;
    return;
  }
  ++s.status.blocks;
  // A block with a sample that is not finite is processed as silence, so that no state takes
  // it in.
  bool finite_in = true;
  for (size_t k = 0; k < s.source_pointers.size(); ++k)
    finite_in = finite_in && detail::finite(sources[k], n);
  for (size_t k = 0; k < s.source_pointers.size(); ++k)
    s.source_pointers[k] = finite_in ? sources[k] : s.silence.data();
  s.run(s.source_pointers.data(), outputs, n);
  s.clock += n;
  const int64_t n_out = n_outputs() * s.output_channels;
  bool finite_out     = true;
  for (int64_t k = 0; k < n_out; ++k) finite_out = finite_out && detail::finite(outputs[k], n);
  if (!finite_in || !finite_out) {
    ++s.status.silenced_blocks;
    for (int64_t k = 0; k < n_out; ++k) std::fill(outputs[k], outputs[k] + n, 0.0f);
    if (!finite_out) s.reset();  // a state went non-finite: start again from silence
  }
}

void StreamState::run(const float* const* sources, float* const* outputs, int64_t n) {
  const int64_t block = options.max_block;
  for (StreamNode& node : nodes) {
    if (node.source >= 0) {  // an `in` node
      StreamSignal& out = signals[size_t(node.outlets[0])];
      for (int64_t c = 0; c < out.channels; ++c)
        std::copy(sources[node.source * out.channels + c],
                  sources[node.source * out.channels + c] + n, channel(out, c));
      keep_to_song(out, n);
      continue;
    }
    for (auto& inlet : node.inlets)
      for (int64_t c = 0; c < node.channels; ++c) std::fill_n(inlet.data() + c * block, n, 0.0f);
    for (StreamFeed& feed : node.feeds) {
      StreamSignal& from = signals[size_t(feed.signal)];
      float* inlet       = node.inlets[size_t(feed.inlet)].data();
      for (int64_t sc = 0; sc < from.channels; ++sc) {
        const float* x = channel(from, sc);
        if (!feed.delays.empty()) {
          feed.delays[size_t(sc)].process(x, scratch.data(), n);
          x = scratch.data();
        }
        // A mono signal is spread to every channel of a wider inlet.
        for (int64_t c = from.channels == 1 ? 0 : sc;
             c < (from.channels == 1 ? node.channels : sc + 1); ++c) {
          float* u = inlet + c * block;
          for (int64_t i = 0; i < n; ++i) u[i] += x[i];
        }
      }
    }
    if (node.role == StreamNode::Role::kMix) {
      StreamSignal& out = signals[size_t(node.outlets[0])];
      std::copy_n(node.inlets[0].data(), node.channels * block, out.samples.data());
      keep_to_song(out, n);
      continue;
    }
    if (node.role == StreamNode::Role::kOut) continue;
    if (node.stream) node.stream->process(node.inlet_pointers, node.outlet_pointers, n);
    if (node.bypassed || node.dry_wet) mix_dry(node, n);
    for (int64_t o : node.outlets) keep_to_song(signals[size_t(o)], n);
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    StreamNode& out = nodes[size_t(outs[o])];
    for (int64_t c = 0; c < output_channels; ++c) {
      const int64_t sc = std::min(c, out.channels - 1);
      float* y         = outputs[int64_t(o) * output_channels + c];
      if (c == sc)
        out_delays[o][size_t(sc)].process(out.inlets[0].data() + sc * block, y, n);
      else  // a mono output is spread to the widest signal's channels
        std::copy(outputs[int64_t(o) * output_channels + sc],
                  outputs[int64_t(o) * output_channels + sc] + n, y);
    }
  }
}

void StreamState::mix_dry(StreamNode& node, int64_t n) {
  const int64_t block = options.max_block;
  // The mix happens at the node's outputs: song time lags the clock by their latency.
  const int64_t song = clock - signals[size_t(node.outlets.front())].latency;
  for (int64_t i = 0; i < n; ++i)
    node.wet_samples[size_t(i)] =
        node.wet_curve ? 1 / (1 + std::exp(-node.wet_curve->at(song + i, 0))) : node.wet.next();
  for (size_t o = 0; o < node.outlets.size(); ++o) {
    StreamSignal& out = signals[size_t(node.outlets[o])];
    const float* dry_inlet =
        node.passed[o] < 0 ? nullptr : node.inlets[size_t(node.passed[o])].data();
    if (dry_inlet && node.dry_wet)  // the dry path, delayed as the processed one
      for (int64_t c = 0; c < node.channels; ++c)
        node.dry_delays[o][size_t(c)].process(dry_inlet + c * block, node.dry.data() + c * block,
                                              n);
    for (int64_t c = 0; c < out.channels; ++c) {
      float* y = channel(out, c);
      if (!dry_inlet) {  // an outlet with no inlet of its name: silent when dry
        if (node.bypassed) std::fill_n(y, n, 0.0f);
        if (node.dry_wet)
          for (int64_t i = 0; i < n; ++i) y[i] *= node.wet_samples[size_t(i)];
        continue;
      }
      const int64_t dc = std::min(c, node.channels - 1);  // a mono dry signal is spread
      if (node.bypassed) {
        std::copy_n(dry_inlet + dc * block, n, y);
        continue;
      }
      // at::lerp's two-sided form, as mix_dry_wet computes it offline.
      const float* dry = node.dry.data() + dc * block;
      const float* w   = node.wet_samples.data();
      for (int64_t i = 0; i < n; ++i)
        y[i] = w[i] < 0.5f ? dry[i] + w[i] * (y[i] - dry[i]) : y[i] - (y[i] - dry[i]) * (1 - w[i]);
    }
  }
}

void StreamState::reset() {
  clock = 0;
  for (StreamNode& node : nodes) {
    for (StreamFeed& feed : node.feeds)
      for (DelayLine& d : feed.delays) d.reset();
    for (auto& outlet : node.dry_delays)
      for (DelayLine& d : outlet) d.reset();
    if (node.stream) node.stream->reset();
  }
  for (auto& out : out_delays)
    for (DelayLine& d : out) d.reset();
}

namespace {

constexpr char kProgramMagic[]     = "grafx stream program\n";
constexpr uint32_t kProgramVersion = 2;  // 2: no phases (wire() chooses them)

}  // namespace

std::string Stream::save() const {
  const StreamState& s = *state_;
  StreamWriter out;
  out.write(s.options.sample_rate), out.write(s.options.max_block);
  out.write(s.options.source_channels), out.write(s.n_sources);
  out.write(uint64_t(s.signals.size()));
  for (const StreamSignal& signal : s.signals)
    out.write(signal.channels), out.write(signal.latency);
  out.write(uint64_t(s.nodes.size()));
  for (const StreamNode& node : s.nodes) {
    out.write(node.role), out.write(node.channels), out.write(node.latency);
    out.write(node.source), out.write(node.n_inlets);
    out.write(uint64_t(node.feeds.size()));
    for (const StreamFeed& feed : node.feeds)
      out.write(feed.signal), out.write(feed.inlet), out.write(feed.delay);
    out.write(node.outlets);
    out.write(node.stream != nullptr);
    if (node.stream) node.stream->save(out);
    out.write(node.dry_wet), out.write(node.bypassed), out.write(node.wet.value());
    StreamCurve::save(out, node.wet_curve);
    out.write(node.passed), out.write(node.dry_delay);
  }
  out.write(s.outs), out.write(s.output_channels), out.write(s.latency);
  out.write(uint64_t(s.parameters.size()));
  for (size_t k = 0; k < s.parameters.size(); ++k) {
    const StreamParameter& p = s.parameters[k];
    out.write(p.node), out.write(p.node_name), out.write(p.type);
    write_controls(out, {p.control});
    out.write(s.parameter_of[k].first), out.write(s.parameter_of[k].second);
  }
  std::string program = kProgramMagic;
  StreamWriter framing;
  framing.write(kProgramVersion), framing.write(uint64_t(out.bytes().size()));
  framing.write(fnv1a(out.bytes().data(), out.bytes().size()));
  return program + framing.bytes() + out.bytes();
}

namespace {

/// Stream::load's work, after the framing: throws RenderError [grafx.stream.program], or what
/// the forms' constructors throw for data they cannot be made of.
std::unique_ptr<StreamState> read_state(StreamReader& in, int64_t max_block);

/// The reader of a program's state, after its framing (magic, version, size, checksum) is
/// checked.
StreamReader program_state(const std::string& program) {
  const size_t magic = sizeof kProgramMagic - 1;
  if (program.compare(0, magic, kProgramMagic) != 0)
    StreamReader::corrupt("it does not start as one");
  StreamReader framing(program.data() + magic, program.size() - magic);
  if (framing.read<uint32_t>() != kProgramVersion)
    StreamReader::corrupt("another version of the program");
  const uint64_t size = framing.read<uint64_t>(), sum = framing.read<uint64_t>();
  if (size != framing.left()) StreamReader::corrupt("its size differs from the one saved");
  const char* data = program.data() + program.size() - size;
  if (fnv1a(data, size) != sum) StreamReader::corrupt("its checksum differs from the one saved");
  return StreamReader(data, size);
}

}  // namespace

SampleRate Stream::program_sample_rate(const std::string& program) {
  return program_state(program).read_count(1, 1 << 24);  // as read_state reads it
}

Stream Stream::load(const std::string& program, int64_t max_block) {
  if (max_block < 0 || max_block > (int64_t(1) << 20))
    throw RenderError(
        "grafx.stream.options",
        "expected a maximum block of 1 to 1048576 samples (or 0: as saved), but got " +
            std::to_string(max_block));
  StreamReader in = program_state(program);
  try {
    return Stream(read_state(in, max_block));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a form's constructor refusing its data, or no memory
    StreamReader::corrupt(e.what());
  }
}

namespace {

/// The most bytes of block buffers a loaded stream takes (its nodes' and signals' blocks).
constexpr int64_t kMostBlockBytes = int64_t(4) << 30;

std::unique_ptr<StreamState> read_state(StreamReader& in, int64_t max_block) {
  auto state            = std::make_unique<StreamState>();
  StreamState& s        = *state;
  s.options.sample_rate = in.read_count(1, 1 << 24);
  s.options.max_block   = in.read_count(1, 1 << 20);
  if (max_block > 0) s.options.max_block = max_block;
  s.options.source_channels = in.read_count(1, 8);
  s.n_sources               = in.read_count(0, 1 << 16);
  s.signals.resize(size_t(in.read_count(0, 1 << 20)));
  const int64_t n_signals = int64_t(s.signals.size());
  for (StreamSignal& signal : s.signals) {
    signal.channels = in.read_count(1, 8);
    signal.latency  = in.read_count(0, int64_t(1) << 40);
  }
  auto check_signal = [&](int64_t k) {
    if (k < 0 || k >= n_signals) in.corrupt("a signal the stream has not");
  };
  const int64_t n_nodes = in.read_count(0, 1 << 20);
  in.allocate(double(n_nodes) * double(sizeof(StreamNode)));
  s.nodes.resize(size_t(n_nodes));
  for (StreamNode& node : s.nodes) {
    node.role = in.read<StreamNode::Role>();
    if (int32_t(node.role) < 0 || node.role > StreamNode::Role::kProcessor)
      in.corrupt("a node of an unknown role");
    node.channels = in.read_count(1, 8), node.latency = in.read_count(0, int64_t(1) << 40);
    node.source   = in.read_count(-1, s.n_sources - 1);
    node.n_inlets = in.read_count(0, 64);
    node.feeds.resize(size_t(in.read_count(0, 1 << 16)));
    for (StreamFeed& feed : node.feeds) {
      feed.signal = in.read<int64_t>(), feed.inlet = in.read_count(0, node.n_inlets - 1);
      feed.delay = in.read_count(0, int64_t(1) << 32);
      check_signal(feed.signal);
      const int64_t from = s.signals[size_t(feed.signal)].channels;
      if (from != 1 && from != node.channels) in.corrupt("signals of channels that do not meet");
    }
    node.outlets = in.read_vector<int64_t>();
    for (int64_t o : node.outlets) check_signal(o);
    if (in.read<bool>()) {
      node.stream                         = load_node_stream(in, s.options.max_block);
      const std::vector<int64_t> channels = node.stream->outlet_channels();
      if (channels.size() != node.outlets.size()) in.corrupt("a node of other outlets");
      for (size_t o = 0; o < channels.size(); ++o)
        if (channels[o] != s.signals[size_t(node.outlets[o])].channels)
          in.corrupt("a node of other channels");
      if (!node.stream->takes(node.n_inlets, node.channels))
        in.corrupt("a node whose form takes other inputs than its inlets give");
    }
    node.dry_wet = in.read<bool>(), node.bypassed = in.read<bool>();
    node.wet          = Glide(in.read<float>());
    node.wet_curve    = StreamCurve::load(in);
    node.passed       = in.read_vector<int64_t>();
    node.dry_delay    = in.read_count(0, int64_t(1) << 32);
    const bool source = node.role == StreamNode::Role::kSource;
    if (source != (node.source >= 0) ||
        (source && (node.outlets.size() != 1 ||
                    s.signals[size_t(node.outlets[0])].channels != s.options.source_channels)))
      in.corrupt("a source node without its source");
    if (node.role == StreamNode::Role::kMix &&
        (node.outlets.size() != 1 || node.n_inlets < 1 ||
         s.signals[size_t(node.outlets[0])].channels != node.channels))
      in.corrupt("a mix without its ports");
    if (node.role == StreamNode::Role::kOut && node.n_inlets < 1)
      in.corrupt("an output of no port");
    if (node.role == StreamNode::Role::kProcessor) {
      if (node.passed.size() != node.outlets.size()) in.corrupt("a node without its passed inlets");
      for (int64_t p : node.passed)
        if (p < -1 || p >= node.n_inlets) in.corrupt("a passed inlet the node has not");
      if (!node.stream && !node.bypassed) in.corrupt("a processed node without its form");
    }
  }
  s.outs = in.read_vector<int64_t>();
  for (int64_t o : s.outs)
    if (o < 0 || o >= int64_t(s.nodes.size()) || s.nodes[size_t(o)].role != StreamNode::Role::kOut)
      in.corrupt("an output that is not an output node");
  s.output_channels = in.read_count(1, 8), s.latency = in.read_count(0, int64_t(1) << 40);
  for (int64_t o : s.outs)
    if (s.nodes[size_t(o)].latency > s.latency || s.nodes[size_t(o)].channels > s.output_channels)
      in.corrupt("an output later or wider than the stream's");
  const int64_t n_parameters = in.read_count(0, 1 << 20);
  in.allocate(double(n_parameters) * double(sizeof(StreamParameter)));
  s.parameters.resize(size_t(n_parameters));
  for (StreamParameter& p : s.parameters) {
    p.node = NodeId(in.read<int64_t>()), p.node_name = in.read_string(), p.type = in.read_string();
    const std::vector<StreamControl> control = read_controls(in);
    if (control.size() != 1) in.corrupt("a parameter of no control");
    p.control                = control.front();
    const int64_t node       = in.read_count(0, int64_t(s.nodes.size()) - 1);
    const int64_t index      = in.read<int64_t>();
    const NodeStream* stream = s.nodes[size_t(node)].stream.get();
    if (index < -1 || (index >= 0 && (!stream || index >= int64_t(stream->controls().size()))))
      in.corrupt("a parameter of no control");
    s.parameter_of.push_back({node, index});
  }
  if (in.left() != 0) in.corrupt("data after its end");
  // What wire() allocates: blocks of every signal and inlet, and the delay lines. The blocks
  // grow with the graph the data describe times the block size the host asks for, not with the
  // data: they have a budget of their own.
  const double block = double(s.options.max_block);
  double block_bytes = 0;
  for (const StreamSignal& signal : s.signals) block_bytes += 4 * block * double(signal.channels);
  for (const StreamNode& node : s.nodes)
    block_bytes += 4 * (block * double(node.channels) * double(node.n_inlets + 1) + block);
  if (block_bytes > kMostBlockBytes)
    throw RenderError("grafx.stream.options",
                      "the stream's " + std::to_string(s.nodes.size()) + " nodes need " +
                          std::to_string(int64_t(block_bytes / 1048576)) +
                          " MiB of buffers for blocks of " + std::to_string(s.options.max_block) +
                          " samples, more than " + std::to_string(kMostBlockBytes >> 20) +
                          " MiB: use shorter blocks");
  for (const StreamNode& node : s.nodes) {
    for (const StreamFeed& feed : node.feeds)
      in.allocate(4 * double(feed.delay) * double(s.signals[size_t(feed.signal)].channels));
    in.allocate(4 * double(node.dry_delay) * double(node.channels) * double(node.outlets.size()));
  }
  for (int64_t o : s.outs)
    in.allocate(4 * double(s.latency - s.nodes[size_t(o)].latency) *
                double(s.nodes[size_t(o)].channels));
  s.wire();
  return state;
}

}  // namespace

}  // namespace grafx
