#include <grafx/fit/initialise.h>
#include <grafx/render/chunked.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace grafx {
namespace {

constexpr int64_t kTracksPerRender = 4;     // bounds the batched render's memory
constexpr double kMinGain          = 1e-3;  // −60 dB: a track the mix does not need

/// The first channel-gain node on track `source`'s own chain: following single edges from the
/// `in` node while each next node has that one input; -1 if the chain branches or ends first.
NodeId channel_gain_node(const Graph& graph, NodeId source) {
  NodeId id = source;
  while (true) {
    std::vector<NodeId> next = graph.successors(id);
    if (next.size() != 1 || graph.predecessors(next[0]).size() != 1) return -1;
    id                   = next[0];
    const NodeType& type = graph.types()[graph.node(id).type];
    if (is_utility_type(graph.node(id).type)) continue;  // a mix of one input passes it on
    const ProcessorDescriptor* d = find_processor(type.processor_name());
    if (d && !d->channel_gain_parameter.empty() && !graph.node(id).bypassed) return id;
  }
}

/// Non-negative least squares min ‖A a − m‖², a ≥ 0, from the normal equations G = AᵀA,
/// b = Aᵀm, by cyclic coordinate descent (the exact minimum along each coordinate, projected to
/// a ≥ 0; it converges to the unique minimum of this convex problem).
at::Tensor non_negative_least_squares(const at::Tensor& gram, const at::Tensor& rhs) {
  const int64_t k     = gram.size(0);
  auto g              = gram.accessor<double, 2>();
  auto b              = rhs.accessor<double, 1>();
  at::Tensor solution = at::ones({k}, at::kDouble);
  auto a              = solution.accessor<double, 1>();
  for (int sweep = 0; sweep < 10000; ++sweep) {
    double change = 0;
    for (int64_t i = 0; i < k; ++i) {
      if (g[i][i] <= 0) continue;  // a silent contribution: its gain stays 1
      double residual = b[i];
      for (int64_t j = 0; j < k; ++j) residual -= g[i][j] * a[j];
      const double next = std::max(0.0, a[i] + residual / g[i][i]);
      change            = std::max(change, std::abs(next - a[i]));
      a[i]              = next;
    }
    if (change < 1e-12) break;
  }
  return solution;
}

}  // namespace

ChannelGainFit fit_channel_gains(const Graph& graph, const Processors& processors,
                                 const RenderPlan& plan, Parameters& parameters,
                                 const at::Tensor& tracks, const at::Tensor& mix,
                                 SampleRate sample_rate, double excerpt_seconds) {
  c10::NoGradGuard no_grad;
  const int64_t n_tracks = tracks.size(0), length = tracks.size(2);
  const int64_t excerpt =
      std::min(length, std::max<int64_t>(1, std::llround(excerpt_seconds * sample_rate)));
  const int64_t start = (length - excerpt) / 2;
  at::Tensor target   = mix.narrow(1, start, excerpt).to(at::kDouble);

  // Each track's contribution to the first output, alone: y [K, 2, E], rendered from the
  // excerpt widened by the graph's temporal support (chunked.h), so that it equals the same
  // samples of the whole song's render.
  const ChunkWindow window =
      ChunkWindow::of(start, excerpt, length, temporal_support(plan, processors, parameters));
  at::Tensor x = tracks.narrow(2, window.first, window.last - window.first);
  std::vector<at::Tensor> alone;
  for (int64_t first = 0; first < n_tracks; first += kTracksPerRender) {
    const int64_t n = std::min(kTracksPerRender, n_tracks - first);
    at::Tensor only = at::zeros({n, n_tracks, 1, 1}, x.options());
    for (int64_t i = 0; i < n; ++i) only[i][first + i] = 1;
    at::Tensor out = render(plan, processors, parameters, x.unsqueeze(0) * only).outputs;
    alone.push_back(out.select(1, 0)
                        .narrow(-1, start - window.first, excerpt)
                        .expand({n, 2, excerpt})
                        .to(at::kDouble));
  }
  at::Tensor y = at::cat(alone);

  ChannelGainFit fit;
  fit.gains = at::ones({n_tracks, 2}, at::kDouble);
  for (int64_t c = 0; c < 2; ++c) {
    at::Tensor contributions = y.select(1, c);  // [K, E]
    fit.gains.select(1, c).copy_(
        non_negative_least_squares(at::matmul(contributions, contributions.t()).contiguous(),
                                   at::matmul(contributions, target[c]).contiguous()));
  }
  // Tracks without a channel-gain node keep gain 1; the others' gains go into their nodes.
  std::vector<NodeId> sources;
  for (NodeId id : graph.nodes())
    if (graph.node(id).type == NodeTypes::kIn) sources.push_back(id);
  for (size_t k = 0; k < sources.size(); ++k) {
    const NodeId node = channel_gain_node(graph, sources[k]);
    fit.nodes.push_back(node);
    if (node < 0) {
      fit.gains[int64_t(k)].fill_(1.0);
      continue;
    }
    const std::string& type      = graph.type_name(node);
    const std::vector<NodeId> of = graph.nodes_of_type(type);
    const int64_t row            = std::find(of.begin(), of.end(), node) - of.begin();
    const std::string& name = find_processor(graph.types()[graph.node(node).type].processor_name())
                                  ->channel_gain_parameter;
    at::Tensor gains = fit.gains[int64_t(k)];
    gains.clamp_min_(kMinGain);
    at::Tensor& raw = parameters.at(type).at(name);
    raw.select(0, row).add_(gains.log().to(raw.dtype()));
  }
  auto error = [&](const at::Tensor& gains) {
    at::Tensor estimate = (y * gains.unsqueeze(-1)).sum(0);
    return ((estimate - target).pow(2).sum() / target.pow(2).sum().clamp_min(1e-30)).item<double>();
  };
  fit.error_before = error(at::ones({n_tracks, 2}, at::kDouble));
  fit.error_after  = error(fit.gains);
  return fit;
}

}  // namespace grafx
