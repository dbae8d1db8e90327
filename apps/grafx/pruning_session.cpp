// Pruning as `grafx prune` and `grafx fit --prune` run it (pruning_session.h).

#include "pruning_session.h"

#include "arguments.h"
#include "progress_file.h"

#include <grafx/duration.h>
#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/report/prune_report.h>
#include <grafx/text.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {

void add_pruning_options(CLI::App& cmd, PruningOptions& options, const std::string& prefix) {
  cmd.add_option_function<std::string>(
         "--" + prefix + "method",
         [&options](const std::string& name) { options.method = parse_prune_method(name); },
         "hybrid, dry-wet or brute-force")
      ->default_str(to_string(options.method))
      ->check(CLI::IsMember({"hybrid", "dry-wet", "brute-force"}));
  cmd.add_option("--" + prefix + "tolerance", options.tolerance,
                 "τ: a trial is kept when the whole-song loss stays within τ of the best")
      ->capture_default_str()
      ->check(finite_number(0, true));
  cmd.add_option("--" + prefix + "rounds", options.rounds, "Pruning rounds")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd.add_option("--" + prefix + "steps-between", options.steps_between,
                 "Fine-tuning steps after each round")
      ->capture_default_str()
      ->check(whole_number(0));
}

namespace {

/// A loss as the progress lines show it.
std::string loss_text(double loss) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(4) << loss;
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// "about 49 min 17 s (12 rounds, 3 of them brute force: ~190 trials and 24 whole-song losses of
/// ~1.2 s at most (fast trials take less), 6000 fine-tuning steps of ~0.45 s)".
std::string plan_text(const PruningEstimate& e) {
  std::ostringstream s;
  s << "about " << format_duration(e.seconds()) << " (" << e.rounds
    << (e.rounds == 1 ? " round" : " rounds");
  if (e.brute_force_rounds > 0 && e.brute_force_rounds < e.rounds)
    s << ", " << e.brute_force_rounds << " of them brute force";
  s << ": ~" << std::llround(e.trials) << " trials and " << e.evaluations
    << " whole-song losses of ~" << format_duration(e.evaluation_seconds)
    << " at most (fast trials take less), " << e.steps << " fine-tuning steps of ~"
    << format_duration(e.step_seconds) << ")";
  return s.str();
}

}  // namespace

void run_pruning(Fitter& fitter, const PruningOptions& options, const PruningSession& session,
                 const StopRequest& stop) {
  Pruner pruner(fitter, options);
  const std::string checkpoint = session.folder + "/" + kPruneCheckpoint,
                    state      = session.folder + "/" + kPruneState;
  PruneSummary summary;
  summary.title             = session.title;
  auto evaluation_start     = std::chrono::steady_clock::now();
  summary.unpruned          = fitter.evaluate();  // the full console's, before resuming too
  const double loss_seconds = seconds_since(evaluation_start);  // a trial's cost at most
  if (session.resume) {
    pruner.resume(checkpoint, state);
    const Pruner::Position at = pruner.under_way();
    if (at.round == 0 && pruner.rounds_done() == 0)
      std::cout << "resuming at the start of round 1 of " << options.rounds;
    else if (at.round == 0)
      std::cout << "resuming after round " << pruner.rounds_done() << " of " << options.rounds;
    else if (at.fine_tuning)
      std::cout << "resuming round " << at.round << " of " << options.rounds
                << " at fine-tuning step " << at.steps << " of " << options.steps_between;
    else
      std::cout << "resuming round " << at.round << " of " << options.rounds << " from its start ("
                << at.trials << " recorded trials replayed)";
    std::cout << " (" << pruner.remaining_processors() << " processors left)\n";
  }
  std::cout << "pruning " << pruner.initial_processors() << " processors ("
            << to_string(options.method) << ", τ " << significant_digits(options.tolerance, 3)
            << ", " << options.rounds << " rounds of " << options.steps_between
            << " fine-tuning steps); whole-song loss "
            << loss_text(summary.unpruned.total.item<double>()) << std::endl;
  // The expected time, from the whole-song loss just measured (a trial costs at most that) and
  // a fine-tuning step timed on a copy of the fitter (the run's result does not change).
  const bool tuning_left    = options.steps_between > 0 && pruner.rounds_done() < options.rounds;
  const double step_seconds = tuning_left ? pruner.measure_step_seconds() : 0;
  std::cout << "expected time" << (session.resume ? " left" : "") << ": "
            << plan_text(pruner.estimate(loss_seconds, loss_seconds, step_seconds)) << std::endl;

  const bool terminal = ::isatty(STDOUT_FILENO);
  auto start          = std::chrono::steady_clock::now();
  // The state at the first round's start: a round cut short runs again from it.
  if (session.keep_state && !session.resume) pruner.save_state(checkpoint, state);
  // Rates as measured so far: the time from a trial to the next one of its round (replayed
  // ones aside), from a fine-tuning step to the next.
  double trial_time = 0, step_time = 0;
  int64_t n_trials = 0, n_steps = 0;
  auto last_report = std::chrono::steady_clock::now(), last_save = last_report;
  int64_t previous_round = 0, previous_step = -1;  // the last report's (-1: a trial)
  try {
    auto progress = [&](const PruningProgress& p) {
      const double since    = seconds_since(last_report);
      last_report           = std::chrono::steady_clock::now();
      const bool same_round = previous_round == p.round;
      if (p.last_trial && !p.replayed && same_round && previous_step == -1) {
        trial_time += since;
        ++n_trials;
      } else if (p.record && same_round && previous_step >= 1 && p.step == previous_step + 1) {
        step_time += since;
        ++n_steps;
      }
      previous_round = p.round;
      previous_step  = p.record ? p.step : -1;
      const double eta =
          pruner
              .estimate(n_trials ? trial_time / double(n_trials) : loss_seconds, loss_seconds,
                        n_steps ? step_time / double(n_steps) : step_seconds)
              .seconds();
      std::ostringstream line;
      line << "round " << p.round << "/" << p.n_rounds << " " << to_string(p.method) << "  ";
      if (p.record)
        line << "fine-tuning " << p.step << "/" << p.n_steps << "  loss "
             << loss_text(p.record->match_loss);
      else if (p.last_trial)
        line << "trial " << p.trial << ": " << p.last_trial->nodes.size() << " node(s), loss "
             << loss_text(p.last_trial->loss) << (p.last_trial->kept ? " kept" : " restored")
             << (p.replayed ? " (recorded)" : "");
      line << "  best " << loss_text(p.min_loss) << "  processors " << p.remaining << "  elapsed "
           << format_duration(seconds_since(start)) << "  ETA " << format_duration(eta);
      const bool milestone = !p.record || p.step == p.n_steps || p.step % 25 == 0;
      report_progress(
          {{"stage", "prune"},
           {"round", p.round},
           {"rounds", p.n_rounds},
           {"method", to_string(p.method)},
           {"processors", p.remaining},
           {"best_loss", p.min_loss},
           {"eta_seconds", eta},
           // while it fine-tunes; null during trials
           {"step", p.record ? nlohmann::json(p.step) : nlohmann::json()},
           {"steps", p.record ? nlohmann::json(p.n_steps) : nlohmann::json()},
           {"loss", p.record ? nlohmann::json(p.record->match_loss) : nlohmann::json()}},
          !p.record || p.step == p.n_steps);
      if (terminal || milestone)
        std::cout << (terminal ? "\r" : "") << line.str() << "   " << (terminal ? "" : "\n")
                  << std::flush;
      // Saved after every trial (the record alone: a round cut short runs again from its
      // start, replaying its trials) and every 100 fine-tuning steps or minute (the
      // checkpoint too), so that even a killed run loses little.
      if (session.keep_state) {
        const bool tuning_save =
            p.record && p.step < p.n_steps && (p.step % 100 == 0 || seconds_since(last_save) >= 60);
        if ((p.last_trial && !p.replayed) || tuning_save || stop.requested()) {
          pruner.save_state(checkpoint, state);
          last_save = std::chrono::steady_clock::now();
        }
      }
      if (stop.requested()) {
        const std::string where = "pruning interrupted in round " + std::to_string(p.round) +
                                  " of " + std::to_string(p.n_rounds) +
                                  (p.record ? " at fine-tuning step " + std::to_string(p.step) +
                                                  " of " + std::to_string(p.n_steps)
                                            : " after trial " + std::to_string(p.trial));
        throw FitError("grafx.fit.interrupted",
                       session.keep_state
                           ? where + "; its state is saved in " + session.folder +
                                 ": continue with --resume (the same command)"
                           : where +
                                 "; grafx fit --prune saves no pruning state (the fit "
                                 "itself is saved): prune it again with grafx prune "
                                 "FITDIR -o " +
                                 session.folder + " --force");
      }
    };
    while (pruner.rounds_done() < options.rounds) {
      pruner.run_round(progress);
      if (session.keep_state) {
        pruner.save_state(checkpoint, state);
        last_save = std::chrono::steady_clock::now();
      }
    }
  } catch (...) {
    if (terminal) std::cout << "\n";
    throw;
  }
  // A request from here on lets the outputs be written.
  if (terminal) std::cout << "\n";
  summary.seconds = seconds_since(start);
  summary.pruned  = fitter.evaluate();
  write_prune_outputs(pruner, fitter, summary, session.folder, /*overwrite=*/true);
  std::cout << "pruned " << pruner.initial_processors() - pruner.remaining_processors() << " of "
            << pruner.initial_processors() << " processors in " << format_duration(summary.seconds)
            << "; whole-song loss " << loss_text(summary.unpruned.total.item<double>()) << " -> "
            << loss_text(summary.pruned.total.item<double>()) << "\nresults: " << session.folder
            << "/report.html (and console.json, parameters.safetensors, mix.wav)\n";
}

}  // namespace grafx::cli
