#include <grafx/enum_names.h>
#include <grafx/error.h>
#include <grafx/prune/prune.h>
#include <grafx/prune/prune_state.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

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

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// One type's search in a dry/wet round (the paper's): the fraction of its n ranked nodes
/// pruned grows by a step that starts at the initial ratio and is halved when a trial fails;
/// a try at the smallest step (one node) is the type's last, and so is reaching all nodes.
struct RatioSearch {
  int64_t n    = 0;
  double ratio = 0, step = 0;
  int64_t pruned = 0;  // nodes pruned in this round: the first `pruned` ranked ones
  bool over      = false;

  struct Try {
    double target = 0;
    int64_t count = 0;  // the ranked nodes [pruned, count) are tried
    bool last     = false;
  };
  RatioSearch(int64_t nodes = 0, double initial_ratio = 0) : n(nodes), step(initial_ratio) {}

  Try next() const {
    const double smallest = 1.0 / double(n);
    Try t;
    double delta = step;
    if (delta <= smallest) {  // the last try for this type
      delta  = smallest;
      t.last = true;
    }
    t.target = std::min(1.0, ratio + delta);
    t.count  = std::min<int64_t>(n, std::llround(double(n) * t.target));
    return t;
  }
  /// A try with nothing to prune (count ≤ pruned) counts as kept, without a trial.
  void record(const Try& t, bool kept) {
    if (kept) {
      ratio  = t.target;
      pruned = t.count;
    } else {
      step /= 2;
    }
    over = t.last || (kept && t.target >= 1.0);
  }
};

/// The expected number of trials left in a search, each trial kept with probability 1/2.
double expected_trials(const RatioSearch& search,
                       std::map<std::pair<double, double>, double>& memo) {
  if (search.over) return 0;
  const std::pair<double, double> key{search.ratio, search.step};  // `pruned` follows from them
  auto known = memo.find(key);
  if (known != memo.end()) return known->second;
  const RatioSearch::Try t = search.next();
  RatioSearch kept         = search;
  kept.record(t, true);
  double expected = expected_trials(kept, memo);
  if (t.count > search.pruned) {  // a trial
    RatioSearch failed = search;
    failed.record(t, false);
    expected = 1 + (expected + expected_trials(failed, memo)) / 2;
  }
  memo[key] = expected;
  return expected;
}

double expected_trials(int64_t n, double initial_ratio) {
  std::map<std::pair<double, double>, double> memo;
  return n > 0 ? expected_trials(RatioSearch(n, initial_ratio), memo) : 0;
}

}  // namespace

/// The dry/wet round under way: each type's ranked nodes (at the round's start) and search, and
/// the types still searched.
struct Pruner::DryWetSearch {
  std::map<std::string, std::vector<NodeId>> ranked;
  std::map<std::string, RatioSearch> searches;
  std::vector<std::string> to_search;
};

namespace {
constexpr EnumNames<PruneMethod, 3> kPruneMethods{{{PruneMethod::kHybrid, "hybrid"},
                                                   {PruneMethod::kDryWet, "dry-wet"},
                                                   {PruneMethod::kBruteForce, "brute-force"}}};
}  // namespace

std::string to_string(PruneMethod method) { return name_of(kPruneMethods, method); }

PruneMethod parse_prune_method(const std::string& name) {
  if (auto method = value_named(kPruneMethods, name)) return *method;
  throw FitError("grafx.fit.options", "unknown pruning method \"" + name + "\"; expected " +
                                          names_listed(kPruneMethods, " or "));
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

Pruner::~Pruner() = default;

PruneMethod Pruner::method_of(int64_t round) const {
  return options_.method == PruneMethod::kBruteForce || (options_.method == PruneMethod::kHybrid &&
                                                         round % options_.brute_force_every == 0)
             ? PruneMethod::kBruteForce
             : PruneMethod::kDryWet;
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
  const at::Tensor& raw_wet     = fitter_.parameters().at(type).wet;
  std::vector<std::pair<double, NodeId>> ranked;
  for (size_t row = 0; row < ids.size(); ++row) {
    const Node& node = graph.node(ids[row]);
    if (node.bypassed || !node.dry_wet || !raw_wet.defined()) continue;
    ranked.push_back({raw_wet[int64_t(row)].item<double>(), ids[row]});  // σ is monotone
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NodeId> nodes;
  for (const auto& [w, id] : ranked) nodes.push_back(id);
  return nodes;
}

bool Pruner::try_pruning(const std::vector<NodeId>& extra, PruningTrial& trial) {
  return judge(
      extra,
      [&] {
        if (trials_evaluator_) return trials_evaluator_->loss(extra);
        fitter_.set_bypassed(extra, true);
        const double loss = fitter_.evaluate().total.item<double>();
        fitter_.set_bypassed(extra, false);
        return loss;
      },
      trial);
}

bool Pruner::judge(const std::vector<NodeId>& extra, const std::function<double()>& evaluate,
                   PruningTrial& trial) {
  last_trial_replayed_ = !replay_.empty();
  if (replay_.empty()) return decide(extra, evaluate(), trial);
  // The search is a function of the round's start and the trials' losses: replayed from the
  // record, it asks for the trials recorded, in their order.
  const PruningTrial recorded = replay_.front();
  replay_.erase(replay_.begin());
  auto disagree = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", "the saved trials of round " +
                                               std::to_string(recorded.round) +
                                               " do not follow from its start (" + what +
                                               "): files of another pruning, or changed since?");
  };
  if (recorded.nodes != extra)
    disagree("a recorded trial bypassed other nodes than the search tries now");
  const bool kept = decide(extra, recorded.loss, trial);  // a kept one renders its cache again
  if (kept != recorded.kept) disagree("a recorded trial's decision differs");
  return kept;
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
  dry_wet_        = std::make_unique<DryWetSearch>();
  DryWetSearch& d = *dry_wet_;
  for (const auto& [type, values] : fitter_.parameters()) {
    d.ranked[type] = ranked_nodes(type);
    if (d.ranked[type].empty()) continue;
    d.to_search.push_back(type);
    d.searches[type] = RatioSearch(int64_t(d.ranked[type].size()), options_.initial_ratio);
  }
  int64_t removed = 0;
  while (!d.to_search.empty()) {
    const size_t which                = pick(rng, d.to_search.size());
    const std::string type            = d.to_search[which];
    RatioSearch& search               = d.searches.at(type);
    const RatioSearch::Try t          = search.next();
    const std::vector<NodeId>& ranked = d.ranked.at(type);
    std::vector<NodeId> extra(ranked.begin() + search.pruned, ranked.begin() + t.count);
    PruningTrial trial;
    const bool kept = extra.empty() || try_pruning(extra, trial);
    removed += kept ? int64_t(extra.size()) : 0;
    search.record(t, kept);
    if (search.over) d.to_search.erase(d.to_search.begin() + int64_t(which));
    if (!extra.empty() && on_trial) on_trial(trial);
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
  underway_.brute_force_left = int64_t(candidates.size());
  // With fast trials, candidates are rendered together while trials keep failing: a batch is
  // judged in order, each against the state it was rendered for; a kept trial ends it (the
  // rest are rendered again against the new state), so the decisions are those of one trial
  // at a time. The batch doubles after a batch without a keep and falls back to 1 after one.
  // Replaying a round cut short, the batches are those of the uninterrupted run: one that is
  // recorded whole is not rendered, one recorded in part is rendered for the rest.
  int64_t removed = 0, batch = 1;
  for (size_t next = 0; next < candidates.size();) {
    const size_t take =
        trials_evaluator_ ? std::min(size_t(batch), candidates.size() - next) : size_t(1);
    if (take == 1) {
      PruningTrial trial;
      const bool kept = try_pruning({candidates[next++]}, trial);
      removed += kept ? 1 : 0;
      batch                      = kept ? 1 : std::min(options_.max_trial_batch, 2 * batch);
      underway_.brute_force_left = int64_t(candidates.size() - next);
      if (on_trial) on_trial(trial);
      continue;
    }
    std::vector<std::vector<NodeId>> group;
    for (size_t i = 0; i < take; ++i) group.push_back({candidates[next + i]});
    std::vector<double> losses;
    if (replay_.size() < take) losses = trials_evaluator_->losses(group);
    bool kept = false;
    for (size_t i = 0; i < take && !kept; ++i) {
      PruningTrial trial;
      kept = judge(
          group[i], [&] { return losses.at(i); }, trial);
      ++next;
      removed += kept ? 1 : 0;
      underway_.brute_force_left = int64_t(candidates.size() - next);
      if (on_trial) on_trial(trial);
    }
    batch = kept ? 1 : std::min(options_.max_trial_batch, 2 * batch);
  }
  return removed;
}

PruningRound Pruner::run_round(const std::function<void(const PruningProgress&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  Underway& u      = underway_;
  if (!u.active) {  // a new round (else one cut short, continued)
    u                   = Underway{};
    u.active            = true;
    u.round.round       = rounds_done() + 1;
    u.round.method      = method_of(u.round.round);
    u.min_loss_at_start = min_loss_;
    u.removed_at_start  = removed();
  }
  u.started           = now_seconds();
  PruningRound& round = u.round;

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

  if (!u.fine_tuning) {
    try {
      round.trials      = 0;
      round.fast_trials = options_.fast_trials &&
                          TrialEvaluator::cache_bytes_for(fitter_.graph(), fitter_.tracks()) <=
                              options_.max_cache_mib * (1 << 20);
      double loss_before;
      if (round.fast_trials) {
        MixLossOptions whole = fitter_.options().loss;
        whole.skip_samples   = 0;  // as Fitter::evaluate
        trials_evaluator_    = std::make_unique<TrialEvaluator>(
            fitter_.graph(), fitter_.processors(), fitter_.detached_parameters(), fitter_.tracks(),
            fitter_.target(), whole, fitter_.options().schedule);
        loss_before = trials_evaluator_->base_loss();
      } else {
        loss_before =
            u.loss_before_known ? round.loss_before : fitter_.evaluate().total.item<double>();
      }
      // Replaying, the recorded loss decides as it did (the same, with the same threads).
      if (!u.loss_before_known) round.loss_before = loss_before;
      u.loss_before_known = true;
      min_loss_           = std::min(min_loss_, round.loss_before);
      u.searching         = true;

      auto on_trial = [&](const PruningTrial& trial) {
        ++round.trials;
        p.trial      = round.trials;
        p.last_trial = &trial;
        p.replayed   = last_trial_replayed_;
        report();
      };
      round.removed = round.method == PruneMethod::kBruteForce ? prune_brute_force(on_trial)
                                                               : prune_dry_wet(on_trial);
      if (!replay_.empty())
        throw FitError("grafx.fit.checkpoint",
                       "the saved trials of round " + std::to_string(round.round) +
                           " do not follow from its start (more were recorded than its search "
                           "makes): files of another pruning, or changed since?");
      round.loss_pruned = trials_evaluator_ ? trials_evaluator_->base_loss()
                                            : fitter_.evaluate().total.item<double>();
    } catch (...) {
      rewind_trials();
      throw;
    }
    trials_evaluator_.reset();  // its cache is stale once fine-tuning starts
    dry_wet_.reset();
    replay_.clear();
    p.last_trial  = nullptr;
    p.replayed    = false;
    u.searching   = false;
    u.fine_tuning = true;
    u.steps_done  = 0;
    fitter_.reset_optimizer();  // the paper re-creates the optimizer every 500 steps
  }

  p.trial   = round.trials;
  p.n_steps = options_.steps_between;
  for (int64_t s = u.steps_done; s < options_.steps_between; ++s) {
    ++fine_tuning_steps_;
    const double ramp =
        options_.sparsity_ramp_steps > 0
            ? std::min(1.0, double(fine_tuning_steps_) / double(options_.sparsity_ramp_steps))
            : 1.0;
    fitter_.set_sparsity_weight(options_.sparsity_weight * ramp);
    FitRecord record = fitter_.step();
    u.steps_done     = s + 1;
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
  round.seconds   = u.seconds_before +
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rounds_.push_back(round);
  u = Underway{};
  return rounds_.back();
}

void Pruner::rewind_trials() {
  Underway& u = underway_;
  std::vector<PruningTrial> again;  // the round's trials, done and still to replay
  while (!trials_.empty() && trials_.back().round == u.round.round) {
    again.insert(again.begin(), trials_.back());
    trials_.pop_back();
  }
  again.insert(again.end(), replay_.begin(), replay_.end());
  replay_ = again;
  std::vector<NodeId> kept;  // this round's, bypassed since its start
  for (NodeId id : removed())
    if (std::find(u.removed_at_start.begin(), u.removed_at_start.end(), id) ==
        u.removed_at_start.end())
      kept.push_back(id);
  if (!kept.empty()) fitter_.set_bypassed(kept, false);
  min_loss_ = u.min_loss_at_start;
  trials_evaluator_.reset();
  dry_wet_.reset();
  u.searching      = false;
  u.round.trials   = 0;
  const double now = now_seconds();
  u.seconds_before += now - u.started;
  u.started = now;
}

Pruner::Position Pruner::under_way() const {
  const Underway& u = underway_;
  if (!u.active) return {};
  return {u.round.round, u.fine_tuning, u.round.trials + int64_t(replay_.size()),
          u.fine_tuning ? u.steps_done : 0};
}

PruningEstimate Pruner::estimate(double trial_seconds, double evaluation_seconds,
                                 double step_seconds) const {
  PruningEstimate e;
  e.trial_seconds      = trial_seconds;
  e.evaluation_seconds = evaluation_seconds;
  e.step_seconds       = step_seconds;
  // A round's trials, from the console as it is now.
  const double brute_force = double(remaining_processors());
  double dry_wet           = 0;
  for (const auto& [type, values] : fitter_.parameters())
    dry_wet += expected_trials(int64_t(ranked_nodes(type).size()), options_.initial_ratio);
  const int64_t tuned = options_.steps_between > 0 ? 1 : 0;  // the loss after fine-tuning
  const Underway& u   = underway_;
  for (int64_t r = rounds_done() + 1; r <= options_.rounds; ++r) {
    const bool brute = method_of(r) == PruneMethod::kBruteForce;
    ++e.rounds;
    e.brute_force_rounds += brute ? 1 : 0;
    e.evaluations += tuned;
    e.steps += options_.steps_between;
    if (r > rounds_done() + 1 || !u.active) {
      e.trials += brute ? brute_force : dry_wet;
      e.evaluations += 1;
    } else if (u.fine_tuning) {
      e.steps -= u.steps_done;
    } else if (u.searching) {  // its search is under way: what it has left
      if (brute) e.trials += double(u.brute_force_left);
      if (!brute && dry_wet_)
        for (const auto& type : dry_wet_->to_search) {
          std::map<std::pair<double, double>, double> memo;
          e.trials += expected_trials(dry_wet_->searches.at(type), memo);
        }
    } else {  // to run again from its start; its recorded trials are replayed at little cost
      e.trials += std::max(0.0, (brute ? brute_force : dry_wet) - double(replay_.size()));
      e.evaluations += 1;
    }
  }
  return e;
}

double Pruner::measure_step_seconds(int64_t n_steps) const {
  // A copy of the fitter at this point: its own parameters, optimizer and history.
  Fitter copy(fitter_.graph(), fitter_.tracks(), fitter_.target(), fitter_.sample_rate(),
              fitter_.options(), fitter_.detached_parameters());
  copy.set_sparsity_weight(options_.sparsity_weight);
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const at::Tensor state  = generator.get_state();  // AdaHessian's steps draw from it
  double fastest          = std::numeric_limits<double>::infinity();
  try {
    for (int64_t i = 0; i < std::max<int64_t>(1, n_steps); ++i) {
      const auto start = std::chrono::steady_clock::now();
      copy.step();
      fastest = std::min(
          fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  } catch (...) {
    generator.set_state(state);
    throw;
  }
  generator.set_state(state);
  return fastest;
}

void Pruner::run(const std::function<void(const PruningProgress&)>& progress) {
  while (rounds_done() < options_.rounds) run_round(progress);
}

std::pair<Graph, Parameters> Pruner::result() const {
  const Graph& before = fitter_.graph();
  Graph graph         = before;
  std::vector<NodeId> gone;
  for (NodeId id : removed()) {
    if (!graph.contains(id)) continue;  // gone with a send's bus already
    try {
      for (NodeId node : graph.bypass(id)) gone.push_back(node);
    } catch (const GraphError& e) {  // a kept node needs what it left silent: it stays, bypassed
      if (e.code() != "grafx.graph.invalid_bypass") throw;
    }
  }
  return {graph, parameters_without(before, cloned_parameters(fitter_.parameters()), gone)};
}

void Pruner::save_state(const std::string& checkpoint_path, const std::string& state_path) const {
  const Underway& u = underway_;
  // During trials the state is the round's start (its checkpoint saved then) and its trials.
  const bool in_trials = u.active && !u.fine_tuning;
  PruneState state;
  state.course            = prune_course(options_);
  state.min_loss          = in_trials ? u.min_loss_at_start : min_loss_;
  state.fine_tuning_steps = fine_tuning_steps_;
  state.steps_done        = fitter_.steps_done();
  state.removed           = in_trials ? u.removed_at_start : removed();
  state.rounds            = rounds_;
  state.trials            = trials_;
  state.trials.insert(state.trials.end(), replay_.begin(), replay_.end());
  if (u.active) {
    PruneState::UnderWay w{u.round, u.loss_before_known, u.fine_tuning, u.steps_done};
    w.round.seconds = u.seconds_before + (now_seconds() - u.started);
    state.under_way = w;
  }
  if (!in_trials) fitter_.save_checkpoint(checkpoint_path);
  write_prune_state(state_path, state);
}

void Pruner::resume(const std::string& checkpoint_path, const std::string& state_path) {
  auto fail = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", state_path + ": " + what);
  };
  const PruneState state = read_prune_state(state_path);
  if (state.course != prune_course(options_))
    fail("made with other pruning options (" + state.course.dump() + "; now " +
         prune_course(options_).dump() + ")");
  const bool cut     = state.under_way.has_value();
  const int64_t held = int64_t(state.rounds.size()) + (cut ? 1 : 0);
  if (held > options_.rounds)
    fail("holds " + std::to_string(held) + " rounds" + (cut ? " (the last under way)" : "") +
         ", more than the " + std::to_string(options_.rounds) + " asked for");
  for (NodeId id : state.removed)
    if (!fitter_.graph().contains(id) || is_utility_type(fitter_.graph().node(id).type))
      fail("prunes node " + std::to_string(id) + ", which is not a processor of this console");
  fitter_.set_bypassed(state.removed, true);  // the checkpoint was made with them bypassed
  fitter_.load_checkpoint(checkpoint_path);
  if (fitter_.steps_done() != state.steps_done)
    fail("does not agree with " + checkpoint_path + " (another run's files?)");
  rounds_            = state.rounds;
  min_loss_          = state.min_loss;
  fine_tuning_steps_ = state.fine_tuning_steps;
  trials_.clear();
  replay_.clear();
  underway_ = Underway{};
  dry_wet_.reset();
  trials_evaluator_.reset();
  const int64_t next = rounds_done() + 1;
  for (const auto& t : state.trials)
    if (t.round < 1 || t.round > next - (cut ? 0 : 1))
      fail("records a trial of round " + std::to_string(t.round) + " after " +
           std::to_string(rounds_done()) + " rounds" + (cut ? " and one under way" : ""));
  if (!cut) {
    trials_ = state.trials;
    return;
  }
  const PruneState::UnderWay& w = *state.under_way;
  Underway& u                   = underway_;
  u.active                      = true;
  u.round                       = w.round;
  if (u.round.round != next || u.round.method != method_of(next))
    fail("holds round " + std::to_string(u.round.round) + " (" + to_string(u.round.method) +
         ") under way after " + std::to_string(rounds_done()) + " rounds");
  u.loss_before_known = w.loss_before_known;
  u.seconds_before    = w.round.seconds;
  u.started           = now_seconds();
  if (!w.fine_tuning) {  // runs again from its start, replaying the recorded trials
    u.min_loss_at_start = min_loss_;
    u.removed_at_start  = state.removed;
    for (const auto& t : state.trials) (t.round == next ? replay_ : trials_).push_back(t);
    return;
  }
  u.fine_tuning = true;  // goes on from the step reached
  u.steps_done  = w.steps_done;
  if (!u.loss_before_known || u.steps_done < 0 || u.steps_done > options_.steps_between)
    fail("holds round " + std::to_string(next) + " at fine-tuning step " +
         std::to_string(u.steps_done) + " of " + std::to_string(options_.steps_between));
  trials_ = state.trials;
}

}  // namespace grafx
