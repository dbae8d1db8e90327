#include <grafx/error.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/prune/trials.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <set>

namespace grafx {

namespace {

std::vector<NodeId> sorted(std::vector<NodeId> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TrialEvaluator::TrialEvaluator(Graph graph, Processors processors, Parameters parameters,
                               at::Tensor tracks, at::Tensor mix, MixLossOptions loss,
                               ScheduleOptions schedule, ChunkOptions chunks)
    : graph_(std::move(graph)),
      processors_(std::move(processors)),
      parameters_(std::move(parameters)),
      tracks_(std::move(tracks)),
      mix_(std::move(mix)),
      loss_(std::move(loss)),
      schedule_(std::move(schedule)),
      chunks_(std::move(chunks)) {
  chunks_.render.check_finite = false;  // the fit's data and parameters are checked already
  target_frames_ = std::make_shared<const MixLossTargetFrames>(loss_.target_frames(mix_));
  base_loss_     = render_trials({build({}, /*everything=*/true)}, /*capture=*/true)[0];
  cache_         = std::move(pending_);
  pending_.clear();
}

std::set<TrialEvaluator::Signal> TrialEvaluator::cut_signals(const Graph& graph) {
  std::set<Signal> signals;
  for (NodeId id : graph.nodes_of_type("mix"))
    for (const Edge& e : graph.in_edges(id))
      if (graph.node(e.source).type != NodeTypes::kIn) signals.insert({e.source, e.outlet});
  return signals;
}

double TrialEvaluator::cache_bytes_for(const Graph& graph, const at::Tensor& tracks) {
  return double(cut_signals(graph).size()) * 2.0 * double(tracks.size(-1)) *
         double(tracks.element_size());
}

int64_t TrialEvaluator::cache_bytes() const {
  int64_t bytes = 0;
  for (const auto& [signal, t] : cache_) bytes += int64_t(t.numel() * t.element_size());
  for (const auto& t : target_frames_->mels) bytes += int64_t(t.numel() * t.element_size());
  return bytes;
}

double TrialEvaluator::loss(const std::vector<NodeId>& extra) {
  Trial trial       = build(extra, /*everything=*/false);
  last_trial_nodes_ = trial.processors;
  return render_trials({trial}, /*capture=*/true)[0];
}

std::vector<double> TrialEvaluator::losses(const std::vector<std::vector<NodeId>>& candidates) {
  if (candidates.size() == 1) return {loss(candidates[0])};
  std::vector<Trial> trials;
  for (const auto& extra : candidates) trials.push_back(build(extra, /*everything=*/false));
  return render_trials(trials, /*capture=*/false);
}

void TrialEvaluator::commit(const std::vector<NodeId>& extra) {
  if (sorted(extra) != pending_extra_) loss(extra);  // renders it again, capturing
  base_loss_ = pending_loss_;
  for (auto& [signal, values] : pending_) cache_[signal] = values;
  pending_.clear();
  pending_extra_.clear();
  for (NodeId id : extra) graph_.set_bypassed(id, true);
}

TrialEvaluator::Trial TrialEvaluator::build(const std::vector<NodeId>& extra,
                                            bool everything) const {
  Graph g = graph_;
  for (NodeId id : extra) g.set_bypassed(id, true);
  const NodeTypes& types = g.types();

  // R: what changes (the bypassed nodes' descendants, every output), then upstream of it what
  // feeds it, back to cached cut signals and sources.
  std::set<NodeId> rendered;
  std::vector<NodeId> stack = extra;
  for (NodeId id : g.nodes_of_type("out")) stack.push_back(id);
  if (everything)
    for (NodeId id : g.nodes())
      if (g.node(id).type != NodeTypes::kIn) stack.push_back(id);
  while (!stack.empty()) {  // descendants
    NodeId id = stack.back();
    stack.pop_back();
    if (!rendered.insert(id).second) continue;
    for (NodeId next : g.successors(id)) stack.push_back(next);
  }
  std::vector<Signal> inputs;  // signals fed to the trial graph, in the order of its `in` nodes
  std::map<Signal, NodeId> input_nodes;
  stack.assign(rendered.begin(), rendered.end());
  while (!stack.empty()) {  // upstream
    NodeId id = stack.back();
    stack.pop_back();
    for (const Edge& e : g.in_edges(id)) {
      if (rendered.count(e.source)) continue;
      const bool source = g.node(e.source).type == NodeTypes::kIn;
      if (source || (!everything && cache_.count({e.source, e.outlet}))) {
        if (!input_nodes.count({e.source, e.outlet})) {
          input_nodes[{e.source, e.outlet}] = -1;
          inputs.push_back({e.source, e.outlet});
        }
        continue;
      }
      rendered.insert(e.source);
      stack.push_back(e.source);
    }
  }

  // The trial graph: R with its ids, a new `in` node per input signal.
  Graph trial(types);
  trial.reserve_ids(g.next_id());
  trial.set_automation(g.automation());
  Trial t;
  t.extra = sorted(extra);
  for (NodeId id : rendered) {
    const Node& node = g.node(id);
    trial.insert(id, types.name(node.type));
    trial.set_properties(id, node.properties());
    t.processors += is_utility_type(node.type) ? 0 : 1;
  }
  for (const Signal& signal : inputs) input_nodes[signal] = trial.add("in");
  std::vector<NodeId> removed;
  for (NodeId id : g.nodes())
    if (!rendered.count(id)) removed.push_back(id);
  for (NodeId id : rendered)
    for (const Edge& e : g.in_edges(id)) {
      const std::string& inlet = types[g.node(id).type].inlets[size_t(e.inlet)];
      if (rendered.count(e.source))
        trial.connect(e.source, id, types[g.node(e.source).type].outlets[size_t(e.outlet)], inlet);
      else
        trial.connect(input_nodes.at({e.source, e.outlet}), id, "main", inlet);
    }
  t.parameters = parameters_without(g, parameters_, removed);

  // The cut signals this trial renders, captured for commit.
  for (const Signal& signal : cut_signals(g))
    if (rendered.count(signal.first)) t.captured.insert(signal);

  // Its input signals.
  std::vector<NodeId> in_ids = g.nodes_of_type("in");
  for (const Signal& signal : inputs) {
    if (g.node(signal.first).type == NodeTypes::kIn) {
      auto at = std::find(in_ids.begin(), in_ids.end(), signal.first);
      t.signals.push_back(tracks_[int64_t(at - in_ids.begin())]);
    } else {
      t.signals.push_back(cache_.at(signal));
    }
  }
  t.graph = std::move(trial);
  return t;
}

std::vector<double> TrialEvaluator::render_trials(const std::vector<Trial>& trials, bool capture) {
  c10::NoGradGuard no_grad;
  // One trial renders its own graph (node ids kept, for the captures); several render as one
  // graph batch, each type's nodes of every trial in one call.
  RenderPlan plan;
  Parameters parameters;
  std::vector<at::Tensor> signals;
  GraphBatch batch;
  if (trials.size() == 1) {
    plan       = make_render_plan(to_tensor(trials[0].graph), schedule_);
    parameters = trials[0].parameters;
  } else {
    std::vector<GraphTensor> tensors;
    for (const auto& t : trials) tensors.push_back(to_tensor(t.graph));
    batch = batch_graphs(tensors);
    plan  = make_render_plan(batch.graph, schedule_);
    // Every parameter of every type, with one trial's tensor of it for its shape.
    std::map<std::string, std::map<std::string, at::Tensor>> names;
    for (const auto& t : trials)
      for (const auto& [type, values] : t.parameters)
        for (const auto& [name, tensor] : values.named()) names[type].emplace(name, tensor);
    for (const auto& [type, parameter_names] : names)
      for (const auto& [name, like] : parameter_names) {
        std::vector<at::Tensor> rows;
        for (const auto& t : trials) {
          const int64_t n = int64_t(t.graph.nodes_of_type(type).size());
          if (n == 0) continue;
          auto given            = t.parameters.find(type);
          const at::Tensor* own = given != t.parameters.end() ? given->second.find(name) : nullptr;
          if (own) {
            rows.push_back(*own);
          } else {  // a wet amount or curve this trial's nodes of the type lack: unused rows
            std::vector<int64_t> shape = like.sizes().vec();
            shape[0]                   = n;
            rows.push_back(at::zeros(shape, like.options()));
          }
        }
        parameters[type][name] = at::cat(rows);
      }
  }
  int64_t channels = 1;
  for (const auto& t : trials)
    for (const auto& s : t.signals) {
      signals.push_back(s);
      channels = std::max(channels, s.size(0));
    }
  const int64_t length          = tracks_.size(-1);
  const TemporalSupport support = temporal_support(plan, processors_, parameters);
  std::vector<MixLossStream> streams;  // the target's frames are made once
  for (size_t i = 0; i < trials.size(); ++i) streams.emplace_back(loss_, target_frames_);
  if (capture) pending_.clear();
  RenderOptions options    = chunks_.render;
  options.time.sample_rate = loss_.options().sample_rate;  // the song's clock, for automation
  for (int64_t start = 0;; start += chunks_.chunk_samples) {
    const ChunkWindow w       = ChunkWindow::of(start, chunks_.chunk_samples, length, support);
    options.time.first_sample = w.first;
    std::vector<at::Tensor> pieces;
    for (const auto& s : signals)
      pieces.push_back(
          s.narrow(-1, w.first, w.last - w.first).expand({channels, w.last - w.first}));
    if (capture)
      options.observer = [&](const StepView& view) {
        for (size_t p = 0; p < view.nodes.size(); ++p)
          for (size_t o = 0; o < view.outputs.size(); ++o) {
            if (!trials[0].captured.count({view.nodes[p], int64_t(o)})) continue;
            at::Tensor y = view.outputs[o][int64_t(p)].narrow(-1, start - w.first, w.end - start);
            at::Tensor& whole = pending_[{view.nodes[p], int64_t(o)}];
            if (!whole.defined()) whole = at::empty({y.size(0), length}, y.options());
            whole.narrow(-1, start, w.end - start).copy_(y);
          }
      };
    at::Tensor outputs =
        grafx::render(plan, processors_, parameters, at::stack(pieces), options).outputs;
    std::vector<at::Tensor> per_trial =
        trials.size() == 1 ? std::vector<at::Tensor>{outputs} : batch.split_outputs(outputs, 0);
    for (size_t i = 0; i < trials.size(); ++i)
      streams[i].add(per_trial[i][0].narrow(-1, start - w.first, w.end - start));
    if (w.end == length) break;
  }
  std::vector<double> losses;
  for (const auto& stream : streams) losses.push_back(stream.finish().total.item<double>());
  if (capture) {
    pending_extra_ = trials[0].extra;
    pending_loss_  = losses[0];
  }
  return losses;
}

}  // namespace grafx
