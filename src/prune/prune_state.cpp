// The pruning state's format (grafx/prune/prune_state.h): its fields and versions.

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/prune/prune_state.h>

#include <cmath>

namespace grafx {
namespace {

nlohmann::json round_json(const PruningRound& r) {
  return {{"round", r.round},
          {"method", to_string(r.method)},
          {"loss_before", r.loss_before},
          {"loss_pruned", r.loss_pruned},
          {"loss_tuned", r.loss_tuned},
          {"removed", r.removed},
          {"remaining", r.remaining},
          {"trials", r.trials},
          {"fast_trials", r.fast_trials},
          {"seconds", r.seconds}};
}

PruningRound round_from_json(const nlohmann::json& r) {
  return {r.at("round").get<int64_t>(),      parse_prune_method(r.at("method")),
          r.at("loss_before").get<double>(), r.at("loss_pruned").get<double>(),
          r.at("loss_tuned").get<double>(),  r.at("removed").get<int64_t>(),
          r.at("remaining").get<int64_t>(),  r.at("trials").get<int64_t>(),
          r.at("fast_trials").get<bool>(),   r.at("seconds").get<double>()};
}

}  // namespace

nlohmann::json prune_course(const PruningOptions& o) {
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

void write_prune_state(const std::string& path, const PruneState& state) {
  nlohmann::json j;
  j["format"]  = "grafx.prune_state";
  j["version"] = kPruneStateVersion;
  j["course"]  = state.course;
  // JSON has no infinity: before any round, the best loss is unknown (null).
  j["min_loss"] =
      std::isfinite(state.min_loss) ? nlohmann::json(state.min_loss) : nlohmann::json(nullptr);
  j["fine_tuning_steps"] = state.fine_tuning_steps;
  j["steps_done"]        = state.steps_done;
  j["removed"]           = state.removed;
  j["rounds"]            = nlohmann::json::array();
  for (const auto& r : state.rounds) j["rounds"].push_back(round_json(r));
  j["trials"] = nlohmann::json::array();
  for (const auto& t : state.trials)
    j["trials"].push_back(
        {{"round", t.round}, {"nodes", t.nodes}, {"loss", t.loss}, {"kept", t.kept}});
  if (const auto& u = state.under_way) {
    nlohmann::json& w = j["under_way"];
    w                 = round_json(u->round);
    w["phase"]        = u->fine_tuning ? "fine-tuning" : "trials";
    if (!u->loss_before_known) w["loss_before"] = nullptr;
    w.erase("loss_tuned");  // not known before the round's end
    w.erase("remaining");
    if (u->fine_tuning)
      w["steps_done"] = u->steps_done;
    else  // the trials are counted from the record, and the rest follows from them
      for (const char* later : {"loss_pruned", "removed", "trials"}) w.erase(later);
  }
  write_text_file(path, j.dump(1) + "\n", /*overwrite=*/true);
}

PruneState read_prune_state(const std::string& path) {
  auto fail = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", path + ": " + what);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  PruneState state;
  try {
    if (j.at("format") != "grafx.prune_state") fail("not a grafx pruning state");
    const int64_t version = j.at("version").get<int64_t>();
    if (version < 1 || version > kPruneStateVersion)
      fail("a pruning state of version " + std::to_string(version) +
           ", which this grafx does not read (it reads versions 1 to " +
           std::to_string(kPruneStateVersion) +
           "): prune again with --force, or use the grafx that saved it");
    state.course            = j.at("course");
    state.min_loss          = j.at("min_loss").is_null() ? std::numeric_limits<double>::infinity()
                                                         : j.at("min_loss").get<double>();
    state.fine_tuning_steps = j.at("fine_tuning_steps").get<int64_t>();
    state.steps_done        = j.at("steps_done").get<int64_t>();
    state.removed           = j.at("removed").get<std::vector<NodeId>>();
    for (const auto& r : j.at("rounds")) state.rounds.push_back(round_from_json(r));
    if (j.contains("trials"))
      for (const auto& t : j.at("trials"))
        state.trials.push_back({t.at("round").get<int64_t>(),
                                t.at("nodes").get<std::vector<NodeId>>(),
                                t.at("loss").get<double>(), t.at("kept").get<bool>()});
    if (!j.contains("under_way")) return state;  // version 1 has none
    const nlohmann::json& w = j.at("under_way");
    PruneState::UnderWay u;
    u.round.round       = w.at("round").get<int64_t>();
    u.round.method      = parse_prune_method(w.at("method"));
    u.loss_before_known = !w.at("loss_before").is_null();
    if (u.loss_before_known) u.round.loss_before = w.at("loss_before").get<double>();
    u.round.fast_trials     = w.at("fast_trials").get<bool>();
    u.round.seconds         = w.at("seconds").get<double>();
    const std::string phase = w.at("phase").get<std::string>();
    if (phase == "fine-tuning") {
      u.fine_tuning       = true;
      u.steps_done        = w.at("steps_done").get<int64_t>();
      u.round.loss_pruned = w.at("loss_pruned").get<double>();
      u.round.removed     = w.at("removed").get<int64_t>();
      u.round.trials      = w.at("trials").get<int64_t>();
    } else if (phase != "trials") {
      fail("holds a round under way in an unknown phase \"" + phase + "\"");
    }
    state.under_way = u;
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("missing or wrong field: ") + e.what());
  }
  return state;
}

}  // namespace grafx
