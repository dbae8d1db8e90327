// The stream engine: the naive renderer's walk over the graph (render/naive.cpp), node by node
// in a topological order, on blocks of float32 samples with every node's streaming form; delay
// lines align paths of different latencies where they meet.

#include <grafx/error.h>
#include <grafx/processors/node_stream.h>
#include <grafx/render/parameters.h>
#include <grafx/render/stream.h>

#include "render/checks.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace grafx {
namespace {

/// One outlet's block: channels × max_block samples, lagging the offline render by `latency`.
struct Signal {
  int64_t channels = 0, latency = 0;
  std::vector<float> samples;
};

/// An edge into an inlet: its source's signal, delayed to the node's latency.
struct Feed {
  size_t signal = 0;
  int64_t inlet = 0;
  std::vector<DelayLine> delays;  // per source channel; empty where no delay is needed
};

struct NodeRun {
  NodeId id        = -1;
  TypeId type      = -1;
  int64_t channels = 1;  // of every inlet: the widest signal fed to it
  int64_t latency  = 0;  // of its inlets' signals (the latest source's)
  std::vector<Feed> feeds;
  std::vector<std::vector<float>> inlets;  // [inlet] channels × max_block
  std::vector<size_t> outlets;             // signal per outlet
  std::unique_ptr<NodeStream> stream;      // processor nodes that are not bypassed
  InletBuffers inlet_pointers;
  OutletBuffers outlet_pointers;
  // Dry/wet (w = σ(raw)) and bypassed nodes pass on an inlet per outlet (-1: silence), the dry
  // path delayed by the node's latency.
  bool dry_wet = false, bypassed = false;
  Glide wet{1};                                  // w = σ(raw), gliding where a host changes it
  std::shared_ptr<const StreamCurve> wet_curve;  // where the wet amount is automated
  std::vector<float> wet_samples;                // max_block: w at each sample of the block
  std::vector<int64_t> passed;
  std::vector<std::vector<DelayLine>> dry_delays;  // [outlet][channel]
  std::vector<float> dry;                          // channels × max_block, delayed
  int64_t source = -1;                             // an `in` node's source
};

}  // namespace

struct Stream::State {
  StreamOptions options;
  std::vector<Signal> signals;
  std::vector<NodeRun> nodes;                      // live nodes in a topological order
  std::vector<size_t> outs;                        // nodes of the graph's outputs, in graph order
  std::vector<std::vector<DelayLine>> out_delays;  // [output][channel]
  int64_t output_channels = 1, latency = 0;
  std::vector<float> silence, scratch;  // max_block each
  std::vector<const float*> source_pointers;
  StreamStatus status;
  std::vector<StreamParameter> parameters;
  std::vector<std::pair<size_t, int64_t>> parameter_of;  // node run, control (-1: wet amount)
  // Samples since the last reset, and the song's end on that clock: signals are silent outside
  // [0, song_end) of song time (a signal's song time lags the clock by its latency), as the
  // offline render's are, so that a zero-phase filter after another hears no pre-echo.
  int64_t clock = 0, song_end = std::numeric_limits<int64_t>::max();

  float* channel(Signal& s, int64_t c) { return s.samples.data() + c * options.max_block; }
  void run(const float* const* sources, float* const* outputs, int64_t n);
  /// A bypassed or dry/wet node's outlets from its processed ones and its passed inlets.
  void mix_dry(NodeRun& node, int64_t n);
  void reset();
  /// Zeroes the samples of `signal` outside the song.
  void keep_to_song(Signal& signal, int64_t n) {
    const int64_t start = clock - signal.latency;  // song time of the block's first sample
    if (start >= 0 && start + n <= song_end) return;
    for (int64_t c = 0; c < signal.channels; ++c) {
      float* x = channel(signal, c);
      for (int64_t i = 0; i < n; ++i)
        if (start + i < 0 || start + i >= song_end) x[i] = 0;
    }
  }
};

namespace {

/// The nodes' partitioned convolutions start at phases spread over this many samples (their
/// largest partition), so that not all of them transform on the same block.
constexpr int64_t kPhaseSpread = 32768;

[[noreturn]] void unsupported(const Graph& graph, NodeId id, const std::string& why) {
  throw RenderError("grafx.stream.unsupported", graph.describe(id) + ": " + why);
}

bool finite(const float* x, int64_t n) {
  float sum = 0;  // NaN and infinity propagate; finite samples cannot overflow a float sum here
  for (int64_t i = 0; i < n; ++i) sum += x[i] * 0.0f;
  return sum == 0;
}

}  // namespace

Stream::Stream(const Graph& graph, const Processors& processors, const Parameters& parameters,
               const StreamOptions& options)
    : state_(std::make_unique<State>()) {
  State& s  = *state_;
  s.options = options;
  if (options.max_block < 1 || options.max_block > (int64_t(1) << 20))
    throw RenderError("grafx.stream.options",
                      "expected a maximum block of 1 to 1048576 samples, but got " +
                          std::to_string(options.max_block));
  if (options.source_channels < 1 || options.source_channels > 8)
    throw RenderError("grafx.stream.options", "expected sources of 1 to 8 channels, but got " +
                                                  std::to_string(options.source_channels));
  graph.check();
  c10::NoGradGuard no_grad;
  Parameters raw;  // float32, as the offline render of float32 sources uses them
  for (const auto& [type, named] : parameters)
    for (const auto& [name, value] : named) raw[type][name] = value.to(at::kFloat);
  const NodeTypes& types = graph.types();
  const auto counts      = graph.count_per_type();
  detail::check_finite_parameters(
      raw, detail::check_parameters(types, counts, detail::NodeExtras::of(graph), processors, raw,
                                    0, at::kFloat, at::kCPU));

  const std::vector<NodeId> order = graph.topological_order();
  const std::set<NodeId> live     = detail::live_nodes(graph, order);
  std::map<NodeId, int64_t> rank  = detail::parameter_rows(graph);

  const int64_t block = options.max_block;
  std::map<NodeId, size_t> run_of;
  auto add_signal = [&](int64_t channels, int64_t latency) {
    s.signals.push_back({channels, latency, std::vector<float>(size_t(channels * block))});
    s.output_channels = std::max(s.output_channels, channels);
    return s.signals.size() - 1;
  };
  for (NodeId id : order) {
    if (!live.count(id)) continue;
    const Node& node = graph.node(id);
    NodeRun run;
    run.id   = id;
    run.type = node.type;
    if (node.type == NodeTypes::kIn) {
      run.source = rank[id];
      run.outlets.push_back(add_signal(options.source_channels, 0));
      run_of[id] = s.nodes.size();
      s.nodes.push_back(std::move(run));
      continue;
    }
    for (const Edge& e : graph.in_edges(id)) {
      const Signal& from = s.signals[s.nodes[run_of.at(e.source)].outlets[size_t(e.outlet)]];
      run.channels       = std::max(run.channels, from.channels);
      run.latency        = std::max(run.latency, from.latency);
    }
    for (const Edge& e : graph.in_edges(id)) {
      Feed feed;
      feed.signal        = s.nodes[run_of.at(e.source)].outlets[size_t(e.outlet)];
      feed.inlet         = e.inlet;
      const Signal& from = s.signals[feed.signal];
      if (from.channels != 1 && from.channels != run.channels)
        throw RenderError("grafx.render.channels",
                          graph.describe(id) + ": signals of " + std::to_string(from.channels) +
                              " and " + std::to_string(run.channels) + " channels meet");
      if (from.latency < run.latency)
        feed.delays.assign(size_t(from.channels), DelayLine(run.latency - from.latency));
      run.feeds.push_back(std::move(feed));
    }
    const int64_t n_inlets = types.n_inlets(node.type);
    run.inlets.assign(size_t(n_inlets), std::vector<float>(size_t(run.channels * block)));
    for (auto& inlet : run.inlets) {
      run.inlet_pointers.emplace_back();
      for (int64_t c = 0; c < run.channels; ++c)
        run.inlet_pointers.back().push_back(inlet.data() + c * block);
    }
    if (is_utility_type(node.type)) {  // mix passes its sum on; out keeps it
      if (node.type == NodeTypes::kMix)
        run.outlets.push_back(add_signal(run.channels, run.latency));
      else
        s.outs.push_back(s.nodes.size());
      run_of[id] = s.nodes.size();
      s.nodes.push_back(std::move(run));
      continue;
    }
    const std::string& type_name = types.name(node.type);
    TensorDict node_parameters;
    std::map<std::string, std::shared_ptr<const StreamCurve>> curves;  // the node's automation
    auto given = raw.find(type_name);
    if (given != raw.end())
      for (const auto& [name, value] : given->second) {
        const at::Tensor row   = value.narrow(0, rank[id], 1);
        const std::string base = automated_parameter(name);
        if (base.empty()) {
          node_parameters[name] = row;
        } else if (std::binary_search(node.automated.begin(), node.automated.end(), base)) {
          const at::Tensor points = row.squeeze(0).contiguous();  // [points, shape...]
          const int64_t elements  = points.numel() / points.size(0);
          curves[base]            = std::make_shared<StreamCurve>(
              std::vector<float>(points.data_ptr<float>(),
                                 points.data_ptr<float>() + points.numel()),
              elements, double(options.sample_rate) / graph.automation().rate_hz);
        }
      }
    at::Tensor raw_wet = take_wet_amount(node_parameters);
    run.bypassed       = node.bypassed;
    run.dry.assign(size_t(run.channels * block), 0.0f);
    run.dry_wet = node.dry_wet && !node.bypassed;
    if (run.dry_wet) run.wet = Glide(raw_wet.sigmoid().item<float>());
    for (auto curve = curves.begin(); curve != curves.end();)  // the wet amount's is the engine's
      if (is_wet_amount(curve->first)) {
        if (run.dry_wet) run.wet_curve = curve->second;
        curve = curves.erase(curve);
      } else {
        ++curve;
      }
    run.wet_samples.assign(size_t(block), 0.0f);
    std::vector<int64_t> outlet_channels(size_t(types.n_outlets(node.type)), run.channels);
    int64_t latency = 0;
    if (!node.bypassed) {
      StreamSetup setup{options.sample_rate,
                        block,
                        std::vector<int64_t>(size_t(n_inlets), run.channels),
                        run.latency,
                        curves,
                        kPhaseSpread * int64_t(s.nodes.size()) / int64_t(live.size())};
      try {
        run.stream = processors.at(type_name)->make_stream(node_parameters, setup);
      } catch (const Error& e) {  // named by its node, with the processor's code
        throw RenderError(e.code(), graph.describe(id) + ": " + e.message());
      }
      for (const auto& [name, curve] : curves) {
        const auto& followed = run.stream->followed_curves();
        if (std::find(followed.begin(), followed.end(), name) == followed.end())
          unsupported(
              graph, id,
              "automates " + name + ", which its streaming form cannot follow (render it offline)");
      }
      outlet_channels = run.stream->outlet_channels();
      latency         = run.stream->latency_samples();
    }
    for (int64_t o = 0; o < types.n_outlets(node.type); ++o) {
      run.passed.push_back(types.passed_inlet(node.type, o));
      run.outlets.push_back(add_signal(outlet_channels[size_t(o)], run.latency + latency));
      run.dry_delays.emplace_back(size_t(run.channels), DelayLine(run.dry_wet ? latency : 0));
      run.outlet_pointers.emplace_back();
      for (int64_t c = 0; c < outlet_channels[size_t(o)]; ++c)
        run.outlet_pointers.back().push_back(s.signals.back().samples.data() + c * block);
    }
    run_of[id] = s.nodes.size();
    s.nodes.push_back(std::move(run));
  }
  for (size_t r = 0; r < s.nodes.size(); ++r) {  // what a host may change, node by node
    const NodeRun& run = s.nodes[r];
    auto add           = [&](const StreamControl& control, int64_t index) {
      s.parameters.push_back({run.id, graph.node(run.id).name, types.name(run.type), control});
      s.parameter_of.push_back({r, index});
    };
    if (run.stream)
      for (size_t c = 0; c < run.stream->controls().size(); ++c)
        add(run.stream->controls()[c], int64_t(c));
    if (run.dry_wet && !run.wet_curve) {  // an automated wet amount follows its curve
      const ParameterSpec wet = dry_wet_spec();
      add({wet.physical_name, wet.unit, wet.description, 0, 1, run.wet.value()}, -1);
    }
  }
  for (size_t o : s.outs) s.latency = std::max(s.latency, s.nodes[o].latency);
  for (size_t o : s.outs)
    s.out_delays.emplace_back(size_t(s.nodes[o].channels),
                              DelayLine(s.latency - s.nodes[o].latency));
  s.silence.assign(size_t(block), 0.0f);
  s.scratch.assign(size_t(block), 0.0f);
  s.source_pointers.assign(size_t(counts[NodeTypes::kIn] * options.source_channels), nullptr);
}

Stream::~Stream()                            = default;
Stream::Stream(Stream&&) noexcept            = default;
Stream& Stream::operator=(Stream&&) noexcept = default;

int64_t Stream::n_sources() const {
  return int64_t(state_->source_pointers.size()) / state_->options.source_channels;
}
int64_t Stream::source_channels() const { return state_->options.source_channels; }
int64_t Stream::n_outputs() const { return int64_t(state_->outs.size()); }
int64_t Stream::output_channels() const { return state_->output_channels; }
int64_t Stream::max_block() const { return state_->options.max_block; }
SampleRate Stream::sample_rate() const { return state_->options.sample_rate; }
int64_t Stream::latency_samples() const { return state_->latency; }
StreamStatus Stream::status() const { return state_->status; }
const std::vector<StreamParameter>& Stream::parameters() const { return state_->parameters; }

void Stream::set_parameter(size_t index, double value) noexcept {
  State& s = *state_;
  if (index >= s.parameters.size() || !std::isfinite(value)) return;
  const auto [run, control] = s.parameter_of[index];
  NodeRun& node             = s.nodes[run];
  if (control >= 0) return node.stream->set_control(size_t(control), value);
  node.wet.to(float(std::clamp(value, 0.0, 1.0)), glide_samples(s.options.sample_rate));
}
void Stream::set_song_end(int64_t samples) {
  state_->song_end = samples < 0 ? std::numeric_limits<int64_t>::max() : samples;
  for (NodeRun& node : state_->nodes)
    if (node.stream) node.stream->set_song_end(samples);
}
void Stream::reset() noexcept { state_->reset(); }

void Stream::process(const float* const* sources, float* const* outputs, int64_t n) noexcept {
  State& s = *state_;
  if (n < 1 || n > s.options.max_block) {
    ++s.status.refused_blocks;
    return;
  }
  ++s.status.blocks;
  // A block with a sample that is not finite is processed as silence, so that no state takes
  // it in.
  bool finite_in = true;
  for (size_t k = 0; k < s.source_pointers.size(); ++k)
    finite_in = finite_in && finite(sources[k], n);
  for (size_t k = 0; k < s.source_pointers.size(); ++k)
    s.source_pointers[k] = finite_in ? sources[k] : s.silence.data();
  s.run(s.source_pointers.data(), outputs, n);
  s.clock += n;
  const int64_t n_out = n_outputs() * s.output_channels;
  bool finite_out     = true;
  for (int64_t k = 0; k < n_out; ++k) finite_out = finite_out && finite(outputs[k], n);
  if (!finite_in || !finite_out) {
    ++s.status.silenced_blocks;
    for (int64_t k = 0; k < n_out; ++k) std::fill(outputs[k], outputs[k] + n, 0.0f);
    if (!finite_out) s.reset();  // a state went non-finite: start again from silence
  }
}

void Stream::State::run(const float* const* sources, float* const* outputs, int64_t n) {
  const int64_t block = options.max_block;
  for (NodeRun& node : nodes) {
    if (node.source >= 0) {  // an `in` node
      Signal& out = signals[node.outlets[0]];
      for (int64_t c = 0; c < out.channels; ++c)
        std::copy(sources[node.source * out.channels + c],
                  sources[node.source * out.channels + c] + n, channel(out, c));
      keep_to_song(out, n);
      continue;
    }
    for (auto& inlet : node.inlets)
      for (int64_t c = 0; c < node.channels; ++c) std::fill_n(inlet.data() + c * block, n, 0.0f);
    for (Feed& feed : node.feeds) {
      Signal& from = signals[feed.signal];
      float* inlet = node.inlets[size_t(feed.inlet)].data();
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
    if (node.type == NodeTypes::kMix) {
      Signal& out = signals[node.outlets[0]];
      std::copy_n(node.inlets[0].data(), node.channels * block, out.samples.data());
      keep_to_song(out, n);
      continue;
    }
    if (node.type == NodeTypes::kOut) continue;
    if (node.stream) node.stream->process(node.inlet_pointers, node.outlet_pointers, n);
    if (node.bypassed || node.dry_wet) mix_dry(node, n);
    for (size_t o : node.outlets) keep_to_song(signals[o], n);
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    NodeRun& out = nodes[outs[o]];
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

void Stream::State::mix_dry(NodeRun& node, int64_t n) {
  const int64_t block = options.max_block;
  // The mix happens at the node's outputs: song time lags the clock by their latency.
  const int64_t song = clock - signals[node.outlets.front()].latency;
  for (int64_t i = 0; i < n; ++i)
    node.wet_samples[size_t(i)] =
        node.wet_curve ? 1 / (1 + std::exp(-node.wet_curve->at(song + i, 0))) : node.wet.next();
  for (size_t o = 0; o < node.outlets.size(); ++o) {
    Signal& out = signals[node.outlets[o]];
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

void Stream::State::reset() {
  clock = 0;
  for (NodeRun& node : nodes) {
    for (Feed& feed : node.feeds)
      for (DelayLine& d : feed.delays) d.reset();
    for (auto& outlet : node.dry_delays)
      for (DelayLine& d : outlet) d.reset();
    if (node.stream) node.stream->reset();
  }
  for (auto& out : out_delays)
    for (DelayLine& d : out) d.reset();
}

at::Tensor stream_through(Stream& stream, const at::Tensor& sources,
                          const std::function<int64_t()>& next_block,
                          const std::function<void(int64_t, int64_t)>& progress) {
  TORCH_CHECK(sources.dim() == 3 && sources.size(0) == stream.n_sources() &&
                  sources.size(1) == stream.source_channels(),
              "stream_through: expected sources [", stream.n_sources(), ", ",
              stream.source_channels(), ", L], but got ", sources.sizes());
  const int64_t length = sources.size(2), latency = stream.latency_samples();
  const int64_t total = length + latency;
  at::Tensor input    = at::zeros({sources.size(0), sources.size(1), total}, at::kFloat);
  input.narrow(2, 0, length).copy_(sources);
  at::Tensor output = at::empty({stream.n_outputs(), stream.output_channels(), total}, at::kFloat);
  stream.reset();
  stream.set_song_end(length);
  std::vector<const float*> in(size_t(sources.size(0) * sources.size(1)));
  std::vector<float*> out(size_t(output.size(0) * output.size(1)));
  for (int64_t start = 0; start < total;) {
    const int64_t n =
        std::min(std::clamp<int64_t>(next_block(), 1, stream.max_block()), total - start);
    for (size_t k = 0; k < in.size(); ++k)
      in[k] = input.data_ptr<float>() + int64_t(k) * total + start;
    for (size_t k = 0; k < out.size(); ++k)
      out[k] = output.data_ptr<float>() + int64_t(k) * total + start;
    stream.process(in.data(), out.data(), n);
    start += n;
    if (progress) progress(start, total);
  }
  stream.set_song_end(-1);
  return output.narrow(2, latency, length).contiguous();
}

}  // namespace grafx
