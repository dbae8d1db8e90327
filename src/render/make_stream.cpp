// A stream made from a graph (render/make_stream.h): the nodes laid out in the order of a
// schedule (as the render plan's steps), each with its streaming form
// (made with LibTorch) and delay lines where paths of different latencies meet; the block loop
// is the stream layer's (src/stream/stream.cpp).

#include <grafx/error.h>
#include <grafx/render/make_stream.h>
#include <grafx/render/parameters.h>
#include <grafx/schedule/schedule.h>

#include "render/checks.h"
#include "stream/stream_state.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace grafx {

using detail::StreamFeed;
using detail::StreamNode;
using detail::StreamSignal;
using detail::StreamState;

namespace {

[[noreturn]] void unsupported(const Graph& graph, NodeId id, const std::string& why) {
  throw RenderError("grafx.stream.unsupported", graph.describe(id) + ": " + why);
}

}  // namespace

Stream make_stream(const Graph& graph, const Processors& processors, const Parameters& parameters,
                   const StreamOptions& options) {
  auto state     = std::make_unique<StreamState>();
  StreamState& s = *state;
  s.options      = options;
  if (options.max_block < 1 || options.max_block > (int64_t(1) << 20))
    throw RenderError("grafx.stream.options",
                      "expected a maximum block of 1 to 1048576 samples, but got " +
                          std::to_string(options.max_block));
  if (options.source_channels < 1 || options.source_channels > 8)
    throw RenderError("grafx.stream.options", "expected sources of 1 to 8 channels, but got " +
                                                  std::to_string(options.source_channels));
  graph.check();
  c10::NoGradGuard no_grad;
  const Parameters raw =  // float32, as the offline render of float32 sources uses them
      map_parameters(parameters, [](const std::string&, const std::string&,
                                    const at::Tensor& value) { return value.to(at::kFloat); });
  const NodeTypes& types = graph.types();
  const auto counts      = graph.count_per_type();
  detail::check_finite_parameters(
      raw, detail::check_parameters(types, counts, detail::NodeExtras::of(graph), processors, raw,
                                    0, at::kFloat, at::kCPU));

  // The render plan's order (greedy: any schedule is causal, and this one is linear in the
  // graph); nodes on no path from an `in` to an `out` are in no step and stream nothing.
  const GraphTensor tensor                  = to_tensor(graph);
  const std::vector<NodeId> order_of_strips = graph.topological_order();
  std::vector<NodeId> order;
  for (const auto& step : schedule_graph(tensor, ScheduleMethod::kGreedy).steps)
    for (int64_t row : step) order.push_back(tensor.node_ids[size_t(row)]);
  std::map<NodeId, int64_t> rank = detail::parameter_rows(graph);

  const int64_t block = options.max_block;
  std::map<NodeId, size_t> run_of;
  auto add_signal = [&](int64_t channels, int64_t latency) {
    s.signals.push_back({channels, latency, {}});
    s.output_channels = std::max(s.output_channels, channels);
    return int64_t(s.signals.size()) - 1;
  };
  auto signal_of = [&](const Edge& e) {
    return s.nodes[run_of.at(e.source)].outlets[size_t(e.outlet)];
  };
  s.n_sources = counts[NodeTypes::kIn];
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    StreamNode run;
    run_of[id] = s.nodes.size();
    if (node.type == NodeTypes::kIn) {
      run.role   = StreamNode::Role::kSource;
      run.source = rank[id];
      run.outlets.push_back(add_signal(options.source_channels, 0));
      s.nodes.push_back(std::move(run));
      continue;
    }
    for (const Edge& e : graph.in_edges(id)) {
      const StreamSignal& from = s.signals[size_t(signal_of(e))];
      run.channels             = std::max(run.channels, from.channels);
      run.latency              = std::max(run.latency, from.latency);
    }
    for (const Edge& e : graph.in_edges(id)) {
      StreamFeed feed;
      feed.signal              = signal_of(e);
      feed.inlet               = e.inlet;
      const StreamSignal& from = s.signals[size_t(feed.signal)];
      if (from.channels != 1 && from.channels != run.channels)
        throw RenderError("grafx.render.channels",
                          graph.describe(id) + ": signals of " + std::to_string(from.channels) +
                              " and " + std::to_string(run.channels) + " channels meet");
      feed.delay = run.latency - from.latency;
      run.feeds.push_back(std::move(feed));
    }
    run.n_inlets = types.n_inlets(node.type);
    if (is_utility_type(node.type)) {  // mix passes its sum on; out keeps it
      if (node.type == NodeTypes::kMix) {
        run.role = StreamNode::Role::kMix;
        run.outlets.push_back(add_signal(run.channels, run.latency));
      } else {
        run.role = StreamNode::Role::kOut;
        s.outs.push_back(int64_t(s.nodes.size()));
      }
      s.nodes.push_back(std::move(run));
      continue;
    }
    const std::string& type_name = types.name(node.type);
    auto given                   = raw.find(type_name);
    const TypeParameters node_values =
        given == raw.end() ? TypeParameters{}
                           : given->second.map([&](const std::string&, const at::Tensor& value) {
                               return value.narrow(0, rank[id], 1);
                             });
    std::map<std::string, std::shared_ptr<const StreamCurve>> curves;  // the node's automation
    for (const auto& [name, row] : node_values.curves)
      if (std::binary_search(node.automated.begin(), node.automated.end(), name)) {
        const at::Tensor points = row.squeeze(0).contiguous();  // [points, shape...]
        const int64_t elements  = points.numel() / points.size(0);
        curves[name]            = std::make_shared<StreamCurve>(
            std::vector<float>(points.data_ptr<float>(), points.data_ptr<float>() + points.numel()),
            elements, double(options.sample_rate) / graph.automation().rate_hz);
      }
    run.bypassed = node.bypassed;
    run.dry_wet  = node.dry_wet && !node.bypassed;
    if (run.dry_wet) run.wet = Glide(node_values.wet.sigmoid().item<float>());
    const std::string wet_name = dry_wet_spec().name;  // the wet amount's curve is the engine's
    if (curves.count(wet_name)) {
      if (run.dry_wet) run.wet_curve = curves.at(wet_name);
      curves.erase(wet_name);
    }
    std::vector<int64_t> outlet_channels(size_t(types.n_outlets(node.type)), run.channels);
    int64_t latency = 0;
    if (!node.bypassed) {
      StreamSetup setup{options.sample_rate, block,
                        std::vector<int64_t>(size_t(run.n_inlets), run.channels), run.latency,
                        curves};
      try {
        run.stream = processors.at(type_name)->make_stream(node_values.own, setup);
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
    run.dry_delay = run.dry_wet ? latency : 0;
    for (int64_t o = 0; o < types.n_outlets(node.type); ++o) {
      run.passed.push_back(types.passed_inlet(node.type, o));
      run.outlets.push_back(add_signal(outlet_channels[size_t(o)], run.latency + latency));
    }
    s.nodes.push_back(std::move(run));
  }
  // What a host may change, strip by strip: the nodes in the graph's topological order (the
  // plan's groups them by type), each one's controls, then its wet amount.
  for (NodeId id : order_of_strips) {
    const auto listed = run_of.find(id);
    if (listed == run_of.end()) continue;  // on no path from an `in` to an `out`
    const size_t r        = listed->second;
    const StreamNode& run = s.nodes[r];
    const Node& node      = graph.node(id);
    auto add              = [&](const StreamControl& control, int64_t index) {
      s.parameters.push_back({id, node.name, types.name(node.type), control});
      s.parameter_of.push_back({int64_t(r), index});
    };
    if (run.stream)
      for (size_t c = 0; c < run.stream->controls().size(); ++c)
        add(run.stream->controls()[c], int64_t(c));
    if (run.dry_wet && !run.wet_curve) {  // an automated wet amount follows its curve
      const ParameterSpec wet = dry_wet_spec();
      add({wet.physical_name, wet.unit, wet.description, 0, 1, run.wet.value()}, -1);
    }
  }
  for (int64_t o : s.outs) s.latency = std::max(s.latency, s.nodes[size_t(o)].latency);
  s.wire();
  return Stream(std::move(state));
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
