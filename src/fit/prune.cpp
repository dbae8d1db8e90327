#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/fit/prune.h>
#include <grafx/render/parameters.h>

#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace grafx {

namespace {

bool is_processor(const Graph& graph, NodeId id) { return !is_utility_type(graph.node(id).type); }

/// A uniform index below n from a 64-bit Mersenne Twister (the same on every platform, unlike
/// std::uniform_int_distribution and std::shuffle).
size_t pick(std::mt19937_64& rng, size_t n) { return size_t(rng() % uint64_t(n)); }

template <class T>
void shuffle(std::vector<T>& items, std::mt19937_64& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[pick(rng, i)]);
}

}  // namespace

std::string to_string(PruneMethod method) {
  switch (method) {
    case PruneMethod::kHybrid:
      return "hybrid";
    case PruneMethod::kDryWet:
      return "dry-wet";
    case PruneMethod::kBruteForce:
      return "brute-force";
  }
  return "?";
}

PruneMethod parse_prune_method(const std::string& name) {
  for (auto method : {PruneMethod::kHybrid, PruneMethod::kDryWet, PruneMethod::kBruteForce})
    if (to_string(method) == name) return method;
  throw FitError("grafx.fit.options", "unknown pruning method \"" + name +
                                          "\"; expected hybrid, dry-wet or brute-force");
}

Pruner::Pruner(Fitter& fitter, PruningOptions options)
    : fitter_(fitter), options_(options), min_loss_(std::numeric_limits<double>::infinity()) {
  auto fail = [](const std::string& message) {
    throw FitError("grafx.fit.options", "pruning: " + message);
  };
  if (!(options_.tolerance >= 0) || !std::isfinite(options_.tolerance))
    fail("expected a finite tolerance >= 0, but got " + std::to_string(options_.tolerance));
  if (options_.rounds < 0 || options_.steps_between < 0 || options_.sparsity_ramp_steps < 0)
    fail("expected rounds, steps between rounds and ramp steps >= 0");
  if (!(options_.sparsity_weight >= 0) || !std::isfinite(options_.sparsity_weight))
    fail("expected a finite sparsity weight >= 0, but got " +
         std::to_string(options_.sparsity_weight));
  if (!(options_.initial_ratio > 0 && options_.initial_ratio <= 1))
    fail("expected an initial ratio in (0, 1], but got " + std::to_string(options_.initial_ratio));
  if (options_.brute_force_every < 1)
    fail("expected brute force every n >= 1 rounds, but got " +
         std::to_string(options_.brute_force_every));
  if (!(options_.max_cache_mib >= 0))
    fail("expected a cache limit >= 0 MiB, but got " + std::to_string(options_.max_cache_mib));
  if (options_.max_trial_batch < 1)
    fail("expected trial batches of at least 1, but got " +
         std::to_string(options_.max_trial_batch));
  const Graph& graph = fitter_.graph();
  for (NodeId id : graph.nodes()) initial_processors_ += is_processor(graph, id) ? 1 : 0;
  if (options_.method != PruneMethod::kBruteForce) {
    bool any = false;
    for (NodeId id : graph.nodes()) any = any || graph.node(id).dry_wet;
    if (!any)
      fail("the " + to_string(options_.method) +
           " method ranks nodes by their wet amounts, but no node of the graph has one (build "
           "the console with dry/wet nodes, or use brute-force)");
  }
}

std::vector<NodeId> Pruner::removed() const {
  std::vector<NodeId> ids;
  const Graph& graph = fitter_.graph();
  for (NodeId id : graph.nodes())
    if (is_processor(graph, id) && graph.node(id).bypassed) ids.push_back(id);
  return ids;
}

int64_t Pruner::remaining_processors() const {
  return initial_processors_ - int64_t(removed().size());
}

std::vector<NodeId> Pruner::ranked_nodes(const std::string& type) const {
  const Graph& graph            = fitter_.graph();
  const std::vector<NodeId> ids = graph.nodes_of_type(type);
  const auto& named             = fitter_.parameters().at(type);
  auto raw                      = named.find(kDryWetParameter);
  std::vector<std::pair<double, NodeId>> ranked;
  for (size_t row = 0; row < ids.size(); ++row) {
    const Node& node = graph.node(ids[row]);
    if (node.bypassed || !node.dry_wet || raw == named.end()) continue;
    ranked.push_back({raw->second[int64_t(row)].item<double>(), ids[row]});  // σ is monotone
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NodeId> nodes;
  for (const auto& [w, id] : ranked) nodes.push_back(id);
  return nodes;
}

bool Pruner::try_pruning(const std::vector<NodeId>& extra, PruningTrial& trial) {
  double loss;
  if (trials_evaluator_) {
    loss = trials_evaluator_->loss(extra);
  } else {
    fitter_.set_bypassed(extra, true);
    loss = fitter_.evaluate().total.item<double>();
    fitter_.set_bypassed(extra, false);
  }
  return decide(extra, loss, trial);
}

bool Pruner::decide(const std::vector<NodeId>& extra, double loss, PruningTrial& trial) {
  trial.round = rounds_done() + 1;
  trial.nodes = extra;
  trial.loss  = loss;
  trial.kept  = std::isfinite(trial.loss) && trial.loss <= min_loss_ + options_.tolerance;
  if (trial.kept) {
    min_loss_ = std::min(min_loss_, trial.loss);
    fitter_.set_bypassed(extra, true);
    if (trials_evaluator_) trials_evaluator_->commit(extra);
  }
  trials_.push_back(trial);
  return trial.kept;
}

int64_t Pruner::prune_dry_wet(const std::function<void(const PruningTrial&)>& on_trial) {
  // The paper's search: per type, the fraction r_t of its lowest-w nodes at this round's start.
  std::mt19937_64 rng(options_.seed * 1000003 + uint64_t(rounds_done()));
  std::map<std::string, std::vector<NodeId>> ranked;
  std::vector<std::string> to_search;
  for (const auto& [type, named] : fitter_.parameters()) {
    ranked[type] = ranked_nodes(type);
    if (!ranked[type].empty()) to_search.push_back(type);
  }
  std::map<std::string, double> ratio, step;
  std::map<std::string, int64_t> pruned;  // nodes of each type pruned in this round
  int64_t removed = 0;
  while (!to_search.empty()) {
    const size_t which     = pick(rng, to_search.size());
    const std::string type = to_search[which];
    const double n = double(ranked[type].size()), smallest = 1.0 / n;
    if (!step.count(type)) step[type] = options_.initial_ratio;
    double delta = step[type];
    if (delta <= smallest) {  // the last try for this type
      delta = smallest;
      to_search.erase(to_search.begin() + int64_t(which));
    }
    const double target = std::min(1.0, ratio[type] + delta);
    const int64_t count = std::min<int64_t>(int64_t(ranked[type].size()), std::llround(n * target));
    std::vector<NodeId> extra(ranked[type].begin() + pruned[type], ranked[type].begin() + count);
    PruningTrial trial;
    bool kept = true;
    if (!extra.empty()) {
      kept = try_pruning(extra, trial);
      if (on_trial) on_trial(trial);
    }
    if (kept) {
      ratio[type] = target;
      removed += int64_t(extra.size());
      pruned[type] = count;
      if (target >= 1.0) {
        auto it = std::find(to_search.begin(), to_search.end(), type);
        if (it != to_search.end()) to_search.erase(it);
      }
    } else {
      step[type] /= 2;
    }
  }
  return removed;
}

int64_t Pruner::prune_brute_force(const std::function<void(const PruningTrial&)>& on_trial) {
  std::mt19937_64 rng(options_.seed * 1000003 + uint64_t(rounds_done()));
  const Graph& graph = fitter_.graph();
  std::vector<NodeId> candidates;
  for (NodeId id : graph.nodes())
    if (is_processor(graph, id) && !graph.node(id).bypassed) candidates.push_back(id);
  shuffle(candidates, rng);
  // With fast trials, candidates are rendered together while trials keep failing: a batch is
  // judged in order, each against the state it was rendered for; a kept trial ends it (the
  // rest are rendered again against the new state), so the decisions are those of one trial
  // at a time. The batch doubles after a batch without a keep and falls back to 1 after one.
  int64_t removed = 0, batch = 1;
  for (size_t next = 0; next < candidates.size();) {
    const size_t take =
        trials_evaluator_ ? std::min(size_t(batch), candidates.size() - next) : size_t(1);
    if (take == 1) {
      PruningTrial trial;
      const bool kept = try_pruning({candidates[next++]}, trial);
      removed += kept ? 1 : 0;
      batch = kept ? 1 : std::min(options_.max_trial_batch, 2 * batch);
      if (on_trial) on_trial(trial);
      continue;
    }
    std::vector<std::vector<NodeId>> group;
    for (size_t i = 0; i < take; ++i) group.push_back({candidates[next + i]});
    std::vector<double> losses = trials_evaluator_->losses(group);
    bool kept                  = false;
    for (size_t i = 0; i < take && !kept; ++i) {
      PruningTrial trial;
      kept = decide(group[i], losses[i], trial);
      ++next;
      removed += kept ? 1 : 0;
      if (on_trial) on_trial(trial);
    }
    batch = kept ? 1 : std::min(options_.max_trial_batch, 2 * batch);
  }
  return removed;
}

PruningRound Pruner::run_round(const std::function<void(const PruningProgress&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  PruningRound round;
  round.round = rounds_done() + 1;
  round.method =
      options_.method == PruneMethod::kBruteForce || (options_.method == PruneMethod::kHybrid &&
                                                      round.round % options_.brute_force_every == 0)
          ? PruneMethod::kBruteForce
          : PruneMethod::kDryWet;
  round.fast_trials =
      options_.fast_trials && TrialEvaluator::cache_bytes_for(fitter_.graph(), fitter_.tracks()) <=
                                  options_.max_cache_mib * (1 << 20);
  if (round.fast_trials) {
    MixLossOptions whole = fitter_.options().loss;
    whole.skip_samples   = 0;  // as Fitter::evaluate
    trials_evaluator_    = std::make_unique<TrialEvaluator>(
        fitter_.graph(), fitter_.processors(), fitter_.detached_parameters(), fitter_.tracks(),
        fitter_.target(), whole, fitter_.options().schedule);
    round.loss_before = trials_evaluator_->base_loss();
  } else {
    round.loss_before = fitter_.evaluate().total.item<double>();
  }
  min_loss_ = std::min(min_loss_, round.loss_before);

  PruningProgress p;
  p.round     = round.round;
  p.n_rounds  = options_.rounds;
  p.method    = round.method;
  auto report = [&] {
    p.min_loss  = min_loss_;
    p.remaining = remaining_processors();
    p.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (progress) progress(p);
  };
  auto on_trial = [&](const PruningTrial& trial) {
    ++round.trials;
    p.trial      = round.trials;
    p.last_trial = &trial;
    report();
  };
  round.removed = round.method == PruneMethod::kBruteForce ? prune_brute_force(on_trial)
                                                           : prune_dry_wet(on_trial);
  round.loss_pruned =
      trials_evaluator_ ? trials_evaluator_->base_loss() : fitter_.evaluate().total.item<double>();
  trials_evaluator_.reset();  // its cache is stale once fine-tuning starts
  p.last_trial = nullptr;

  fitter_.reset_optimizer();  // the paper re-creates the optimizer every 500 steps
  p.n_steps = options_.steps_between;
  for (int64_t s = 0; s < options_.steps_between; ++s) {
    ++fine_tuning_steps_;
    const double ramp =
        options_.sparsity_ramp_steps > 0
            ? std::min(1.0, double(fine_tuning_steps_) / double(options_.sparsity_ramp_steps))
            : 1.0;
    fitter_.set_sparsity_weight(options_.sparsity_weight * ramp);
    FitRecord record = fitter_.step();
    p.step           = s + 1;
    p.record         = &record;
    report();
    p.record = nullptr;
  }
  fitter_.set_sparsity_weight(0);
  round.loss_tuned =
      options_.steps_between > 0 ? fitter_.evaluate().total.item<double>() : round.loss_pruned;
  min_loss_       = std::min(min_loss_, round.loss_tuned);
  round.remaining = remaining_processors();
  round.seconds   = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rounds_.push_back(round);
  return round;
}

void Pruner::run(const std::function<void(const PruningProgress&)>& progress) {
  while (rounds_done() < options_.rounds) run_round(progress);
}

std::pair<Graph, Parameters> Pruner::result() const {
  Graph graph              = fitter_.graph();
  std::vector<NodeId> gone = removed();
  Parameters parameters = parameters_without(graph, cloned_parameters(fitter_.parameters()), gone);
  for (NodeId id : gone) graph.bypass(id);
  return {graph, parameters};
}

namespace {

/// The options that decide a pruning run's course (all but the number of rounds).
nlohmann::json course(const PruningOptions& o) {
  return {{"method", to_string(o.method)},
          {"tolerance", o.tolerance},
          {"steps_between", o.steps_between},
          {"sparsity_weight", o.sparsity_weight},
          {"sparsity_ramp_steps", o.sparsity_ramp_steps},
          {"initial_ratio", o.initial_ratio},
          {"brute_force_every", o.brute_force_every},
          {"seed", o.seed},
          {"fast_trials", o.fast_trials}};
}

}  // namespace

void Pruner::save_state(const std::string& checkpoint_path, const std::string& state_path) const {
  nlohmann::json j;
  j["format"]  = "grafx.prune_state";
  j["version"] = 1;
  j["course"]  = course(options_);
  // JSON has no infinity: before any round, the best loss is unknown (null).
  j["min_loss"] = std::isfinite(min_loss_) ? nlohmann::json(min_loss_) : nlohmann::json(nullptr);
  j["fine_tuning_steps"] = fine_tuning_steps_;
  j["steps_done"]        = fitter_.steps_done();
  j["removed"]           = removed();
  for (const auto& r : rounds_)
    j["rounds"].push_back({{"round", r.round},
                           {"method", to_string(r.method)},
                           {"loss_before", r.loss_before},
                           {"loss_pruned", r.loss_pruned},
                           {"loss_tuned", r.loss_tuned},
                           {"removed", r.removed},
                           {"remaining", r.remaining},
                           {"trials", r.trials},
                           {"fast_trials", r.fast_trials},
                           {"seconds", r.seconds}});
  for (const auto& t : trials_)
    j["trials"].push_back(
        {{"round", t.round}, {"nodes", t.nodes}, {"loss", t.loss}, {"kept", t.kept}});
  fitter_.save_checkpoint(checkpoint_path);
  write_text_file(state_path, j.dump(1) + "\n", /*overwrite=*/true);
}

void Pruner::resume(const std::string& checkpoint_path, const std::string& state_path) {
  auto fail = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", state_path + ": " + what);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(state_path));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  try {
    if (j.at("format") != "grafx.prune_state") fail("not a grafx pruning state");
    if (j.at("course") != course(options_))
      fail("made with other pruning options (" + j.at("course").dump() + "; now " +
           course(options_).dump() + ")");
    const auto rounds = j.at("rounds");
    if (int64_t(rounds.size()) > options_.rounds)
      fail("holds " + std::to_string(rounds.size()) + " rounds, more than the " +
           std::to_string(options_.rounds) + " asked for");
    const std::vector<NodeId> gone = j.at("removed").get<std::vector<NodeId>>();
    for (NodeId id : gone)
      if (!fitter_.graph().contains(id) || is_utility_type(fitter_.graph().node(id).type))
        fail("prunes node " + std::to_string(id) + ", which is not a processor of this console");
    fitter_.set_bypassed(gone, true);  // the checkpoint was made for the graph with them bypassed
    fitter_.load_checkpoint(checkpoint_path);
    if (fitter_.steps_done() != j.at("steps_done").get<int64_t>())
      fail("does not agree with " + checkpoint_path + " (another run's files?)");
    rounds_.clear();
    trials_.clear();
    for (const auto& r : rounds)
      rounds_.push_back({r.at("round").get<int64_t>(), parse_prune_method(r.at("method")),
                         r.at("loss_before").get<double>(), r.at("loss_pruned").get<double>(),
                         r.at("loss_tuned").get<double>(), r.at("removed").get<int64_t>(),
                         r.at("remaining").get<int64_t>(), r.at("trials").get<int64_t>(),
                         r.at("fast_trials").get<bool>(), r.at("seconds").get<double>()});
    if (j.contains("trials"))
      for (const auto& t : j.at("trials"))
        trials_.push_back({t.at("round").get<int64_t>(), t.at("nodes").get<std::vector<NodeId>>(),
                           t.at("loss").get<double>(), t.at("kept").get<bool>()});
    min_loss_          = j.at("min_loss").is_null() ? std::numeric_limits<double>::infinity()
                                                    : j.at("min_loss").get<double>();
    fine_tuning_steps_ = j.at("fine_tuning_steps").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("missing or wrong field: ") + e.what());
  }
}

}  // namespace grafx
