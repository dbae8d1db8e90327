// grafx fit | demo: fit a mixing console to a mix, on the user's tracks or on the embedded demo.

#include "arguments.h"
#include "commands.h"
#include "console_options.h"
#include "output_folder.h"
#include "progress_file.h"
#include "pruning_session.h"
#include "stop_request.h"

#include <grafx/duration.h>
#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/fit/demo.h>
#include <grafx/fit/fit_record.h>
#include <grafx/fit/track_losses.h>
#include <grafx/graph/console.h>
#include <grafx/io/audio.h>
#include <grafx/processors/registry.h>
#include <grafx/program.h>
#include <grafx/report/fit_report.h>
#include <grafx/report/prune_report.h>

#include <ATen/ATen.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

namespace grafx::cli {
namespace {

namespace fs = std::filesystem;

struct Session {
  std::string folder;
  bool force = false, resume = false;
  int64_t checkpoint_every = 100;
  FitSummary summary;
  FitInputs inputs;  // recorded in fit.json for `grafx prune`
  bool prune = false;
  PruningOptions pruning;
  std::vector<std::string> gradient_hooks;  // NODE=ACTION, resolved once the graph is known
  CLI::Option* steps = nullptr;             // --num-steps: given, or the default
};

/// A time budget alone decides when the fit ends: without --num-steps, no step limit.
void apply_time_budget(FitOptions& options, const Session& session) {
  if (options.time_budget_seconds > 0 && session.steps->count() == 0)
    options.n_steps = std::numeric_limits<int32_t>::max();
}

/// --gradient-hook NODE=stop, NODE=scale:F or NODE=clip:M, NODE a node id or name.
std::map<NodeId, SignalHook> parse_gradient_hooks(const std::vector<std::string>& specs,
                                                  const Graph& graph) {
  std::map<NodeId, SignalHook> hooks;
  for (const auto& spec : specs) {
    auto fail = [&](const std::string& why) {
      throw FitError("grafx.fit.options", "--gradient-hook " + spec + ": " + why);
    };
    const size_t equals = spec.find('=');
    if (equals == std::string::npos) fail("expected NODE=stop, NODE=scale:F or NODE=clip:M");
    const std::string node = spec.substr(0, equals), action = spec.substr(equals + 1);
    NodeId id = -1;
    for (NodeId n : graph.nodes())
      if (graph.node(n).name == node || std::to_string(n) == node) id = n;
    if (id < 0) fail("no node has the id or name \"" + node + "\"");
    auto number = [&](const std::string& text) {
      std::optional<double> value = parse_finite(text);
      if (!value) fail("\"" + text + "\" is not a finite number");
      return *value;
    };
    if (action == "stop")
      hooks[id] = SignalHook::stop();
    else if (action.rfind("scale:", 0) == 0)
      hooks[id] = SignalHook::scale(number(action.substr(6)));
    else if (action.rfind("clip:", 0) == 0 && number(action.substr(5)) > 0)
      hooks[id] = SignalHook::clip_norm(number(action.substr(5)));
    else
      fail("expected stop, scale:F or clip:M (M > 0) after the node");
  }
  return hooks;
}

constexpr char kCheckpoint[] = "checkpoint.safetensors";

/// Every file a fit writes in its folder: the outputs and the checkpoint.
std::vector<std::string> fit_folder_files() {
  std::vector<std::string> files = fit_output_files();
  files.push_back(kCheckpoint);
  files.push_back("fit.json");
  for (const auto& name : prune_output_files()) files.push_back("pruned/" + name);
  return files;
}

/// The initial console's whole-song loss, refused when not finite: finite but huge audio
/// overflows the spectra, and a fit of it would only skip steps and write a broken report.
MixLossTerms initial_loss(const Fitter& fitter) {
  MixLossTerms terms = fitter.evaluate();
  const double total = terms.total.item<double>();
  if (!std::isfinite(total))
    throw FitError("grafx.fit.data",
                   "expected a finite loss between the initial console's mix "
                   "and the target mix, but got " +
                       std::to_string(total) + ": samples too large for the loss's spectra?");
  return terms;
}

/// Fits with a live progress line, checkpoints and Ctrl-C handling (`stop`, the command's, held
/// since its start), then writes the outputs.
void run_session(Fitter& fitter, Session& session, const StopRequest& stop) {
  const std::string checkpoint      = session.folder + "/" + kCheckpoint;
  const DataInitialisation& initial = fitter.initialisation();
  if (!session.resume) {
    std::cout << std::fixed << std::setprecision(3);
    for (const auto& step : initial.steps) {
      std::cout << step.name << ": " << step.detail;
      if (!std::isnan(step.loss_after))
        std::cout << "; whole-song loss " << step.loss_before << " -> " << step.loss_after
                  << (step.kept ? "" : ", higher: undone");
      std::cout << "\n";
    }
  }
  // The initial console's (also when resuming), evaluated before the folder was prepared.
  if (!session.summary.before.total.defined()) session.summary.before = initial_loss(fitter);
  std::cout << "loss before fitting: " << std::fixed << std::setprecision(4)
            << session.summary.before.total.item<double>() << " (spectral difference "
            << std::setprecision(1) << spectral_difference_db(session.summary.before) << " dB)\n";
  if (session.resume) {
    fitter.load_checkpoint(checkpoint);
    std::cout << "resuming at step " << fitter.steps_done() << " of " << fitter.options().n_steps
              << "\n";
  }
  const bool terminal = ::isatty(STDOUT_FILENO);
  // Ctrl-C and SIGTERM both stop after the step, with a checkpoint.
  auto start = std::chrono::steady_clock::now();
  try {
    fitter.run([&](const FitProgress& p) {
      // The last step: the steps' end, or the time budget's (the run stops after it).
      bool last =
          p.step == p.n_steps || (fitter.options().time_budget_seconds > 0 && p.eta_seconds <= 0);
      if (!p.note.empty()) std::cout << (terminal ? "\n" : "") << p.note << "\n";
      report_progress({{"stage", "fit"},
                       {"step", p.step},
                       {"steps", p.n_steps},
                       {"loss", p.record.match_loss},
                       {"steps_per_second", p.steps_per_second},
                       {"eta_seconds", p.eta_seconds}},
                      last);
      if (terminal || last || p.step % 25 == 0) {
        const bool budget = fitter.options().time_budget_seconds > 0;
        std::cout << (terminal ? "\r" : "") << "step " << p.step
                  << (budget && p.n_steps == std::numeric_limits<int32_t>::max()
                          ? std::string()
                          : "/" + std::to_string(p.n_steps))
                  << "  loss " << std::setprecision(4) << p.record.match_loss
                  << " (with regularisers " << std::setprecision(3) << p.record.loss << ")  "
                  << std::setprecision(2) << p.steps_per_second << " steps/s  lr "
                  << std::setprecision(4) << p.learning_rate << "  "
                  << (budget ? "time left " : "ETA ") << format_duration(p.eta_seconds)
                  << (p.skipped_steps ? "  skipped " + std::to_string(p.skipped_steps) : "")
                  << "   " << (terminal && !last ? "" : "\n") << std::flush;
      }
      if ((session.checkpoint_every > 0 && p.step % session.checkpoint_every == 0) ||
          stop.requested())
        fitter.save_checkpoint(checkpoint);
      if (stop.requested())
        throw FitError("grafx.fit.interrupted", "interrupted at step " + std::to_string(p.step) +
                                                    "; " + checkpoint +
                                                    " is saved: continue with --resume");
    });
  } catch (...) {
    if (terminal) std::cout << "\n";
    throw;
  }
  fitter.save_checkpoint(checkpoint);
  session.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const at::Tensor fitted = fitter.render_mix();  // once, for the loss and for mix.wav
  session.summary.after   = fitter.evaluate_parts(fitted);
  session.summary.fitted  = fitted.to(at::kCPU);
  fitter.move_to(at::kCPU);  // pictures, reports and pruning: on the CPU
  if (!std::isfinite(session.summary.after.terms.total.item<double>()))
    throw FitError("grafx.fit.diverged",
                   "the fitted console's whole-song loss is not finite, so there are no results: "
                   "fit again with a lower --lr or --clip");
  session.summary.by_track = track_losses(fitter, [&](int64_t done, int64_t total) {
    if (stop.requested()) {  // the fit's steps are all saved: what is left is made again
      if (terminal) std::cout << "\n";
      throw FitError("grafx.fit.interrupted",
                     "interrupted while measuring the tracks; " + checkpoint +
                         " holds the finished fit: its results come with --resume");
    }
    report_progress({{"stage", "tracks"}, {"step", done}, {"steps", total}}, done == total);
    std::cout << (terminal ? "\r" : "") << "what each track's processing does: render " << done
              << "/" << total << (terminal && done < total ? "" : "\n") << std::flush;
  });
  // A request from here on lets the outputs be written; pruning then stops at its first trial.
  write_fit_outputs(fitter, session.summary, session.folder, /*overwrite=*/true);
  write_fit_record(session.folder, session.inputs, fitter.options(), /*overwrite=*/true);
  keep_outputs(session.folder);  // complete, whatever becomes of its pruning
  double before = session.summary.before.total.item<double>(),
         after  = session.summary.after.terms.total.item<double>();
  std::cout << "loss after fitting:  " << std::setprecision(4) << after << " (spectral difference "
            << std::setprecision(1) << spectral_difference_db(session.summary.after.terms)
            << " dB), " << std::setprecision(1)
            << (after <= before ? before / after : after / before)
            << (after <= before ? "x lower\n" : "x higher\n") << "results: " << session.folder
            << "/report.html (and mix.wav, console.json, parameters.safetensors, "
            << "loss.csv)\n";
  if (!session.prune) return;
  const std::string pruned = session.folder + "/pruned";
  make_output_subfolder(pruned, prune_output_files());
  run_pruning(fitter, session.pruning, {pruned, session.summary.title + ", pruned"}, stop);
}

void add_fit_options(CLI::App& cmd, FitOptions& options, Session& session) {
  session.steps = add_fit_settings(cmd, options).at("num_steps");
  cmd.add_option("--gradient-hook", session.gradient_hooks,
                 "NODE=stop, NODE=scale:F or NODE=clip:M: changes the gradient flowing back out "
                 "of a node's output (NODE: its id or name; repeatable)");
  cmd.add_option_function<std::vector<std::string>>(
      "--lr-group",
      [&options](const std::vector<std::string>& specs) {
        for (const auto& spec : specs) {
          const size_t equals = spec.find('=');
          std::optional<double> lr =
              equals == std::string::npos ? std::nullopt : parse_finite(spec.substr(equals + 1));
          if (!lr || *lr < 0 || equals == 0)
            throw FitError("grafx.fit.options",
                           "--lr-group " + spec +
                               ": expected GROUP=LR, GROUP a type, TYPE.PARAMETER or a "
                               "parameter name, LR a finite number ≥ 0");
          options.learning_rates[spec.substr(0, equals)] = *lr;
        }
      },
      "GROUP=LR: a learning rate of its own for a type (eq), a type's parameter "
      "(eq.log_magnitude) or a parameter of every type (dry_wet); 0 freezes it (repeatable)");
  cmd.add_option_function<std::vector<std::string>>(
      "--stage",
      [&options](const std::vector<std::string>& specs) {
        for (const auto& spec : specs) {
          const size_t colon = spec.find(':');
          std::optional<double> until =
              colon == std::string::npos ? std::nullopt : parse_finite(spec.substr(0, colon));
          FitStage stage{until.value_or(-1), {}};
          std::stringstream groups(colon == std::string::npos ? "" : spec.substr(colon + 1));
          for (std::string group; std::getline(groups, group, ',');)
            if (!group.empty()) stage.groups.insert(group);
          if (!until || stage.groups.empty())
            throw FitError("grafx.fit.options",
                           "--stage " + spec +
                               ": expected SHARE:GROUP,GROUP,..., SHARE the part of the fit "
                               "(0 to 1) in which only these groups train");
          options.stages.push_back(stage);
        }
      },
      "SHARE:GROUPS: for this share of the fit (0–1) only these parameter groups train "
      "(types, TYPE.PARAMETER or parameter names, comma-separated), e.g. "
      "0.1:gain_pan,dry_wet; stages in order; repeatable");
  cmd.add_option_function<double>(
         "--time-budget",
         [&options](double minutes) { options.time_budget_seconds = minutes * 60; },
         "Stop after this many minutes of fitting (also with steps left; 0: no limit): "
         "--time-budget-seconds in minutes")
      ->check(finite_number(0, true))
      ->check(CLI::Validator(  // in seconds, 1e308 minutes would be infinite
          [](std::string& text) -> std::string {
            std::optional<double> minutes = parse_finite(text);
            if (!minutes || *minutes <= 1e9) return "";  // finite_number says the rest
            return "expected at most 1e9 minutes, but got \"" + text + "\"";
          },
          "at most 1e9"));
  cmd.add_option_function<std::string>(
         "--device",
         [&options](const std::string& name) {
           options.device = usable_device(name, "--device " + name, "grafx.fit.options");
         },
         "Where the fitting steps run: cpu, or a GPU (cuda, cuda:N) where LibTorch has one; "
         "the report, pictures and pruning run on the CPU")
      ->default_str("cpu");
  cmd.add_option_function<std::string>(
         "--init",
         [&options](const std::string& list) {
           // What each name of the list turns on (none: nothing).
           const std::map<std::string, bool InitialisationOptions::*> parts = {
               {"starts", &InitialisationOptions::typical_starts},
               {"gains", &InitialisationOptions::channel_gains},
               {"eq", &InitialisationOptions::spectral_eq}};
           InitialisationOptions& init = options.initialisation;
           for (const auto& part : parts) init.*part.second = false;
           if (list == "none") return;
           if (list.empty())
             throw FitError("grafx.fit.options",
                            "--init: expected a comma list of starts, gains, eq, or none");
           std::stringstream names(list);
           for (std::string name; std::getline(names, name, ',');) {
             auto part = parts.find(name);
             if (part == parts.end())
               throw FitError("grafx.fit.options", "--init " + list + ": \"" + name +
                                                       "\" is none of starts, gains, eq (or none)");
             init.*part->second = true;
           }
         },
         "Starting values from the data, a comma list of: starts (typical dynamics and "
         "high-passes), gains "
         "(least-squares track gains and pans), eq (track EQs from spectral ratios); or none")
      ->default_str("starts,gains");
  cmd.add_option_function<std::vector<std::string>>(
      "--automate",
      [&options](const std::vector<std::string>& lists) {
        if (lists == std::vector<std::string>{"none"}) return;  // not grafx fit's levels either
        for (const auto& list : lists)
          for (const std::string& item : split(list, ',')) {
            if (item == "none")
              throw FitError("grafx.fit.options",
                             "--automate " + list + ": none stands alone (nothing automated)");
            const size_t colon     = item.find(':');
            const std::string type = item.substr(0, colon);
            if (type.empty() || (colon != std::string::npos && colon + 1 == item.size()))
              throw FitError("grafx.fit.options",
                             "--automate " + list +
                                 ": expected TYPE or TYPE:PARAMETER items separated by ',' "
                                 "(e.g. gain_pan,send:log_gain,reverb:dry_wet)");
            auto& names = options.automation.parameters[type];
            if (colon != std::string::npos) names.insert(item.substr(colon + 1));
          }
      },
      "TYPE or TYPE:PARAMETER, comma-separated: after a static fit (--automation-start), these "
      "parameters follow curves over the song (a type alone: all it can automate, its wet "
      "amounts too; grafx processors TYPE says which); repeatable. grafx fit's consoles "
      "automate gain_pan unless told (none: nothing)");
  cmd.add_option("--checkpoint-every", session.checkpoint_every,
                 "Save a checkpoint every N steps (0: only at the end)")
      ->capture_default_str()
      ->check(whole_number(0));
  cmd.add_flag("--resume", session.resume, "Continue the fit saved in the output folder");
  cmd.add_flag("--prune", session.prune,
               "Then prune the fitted console (grafx prune) into the folder's pruned/");
  add_pruning_options(cmd, session.pruning, "prune-");
  add_force_flag(cmd, session.force);
}

/// The types of `graph`'s nodes that set a track's level by a gain per channel (gain_pan).
std::vector<std::string> level_types(const Graph& graph) {
  std::vector<std::string> found;
  const NodeTypes& types = graph.types();
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t) {
    const ProcessorDescriptor* d = find_processor(types[t].processor_name());
    if (d && !d->channel_gain_parameter.empty() && !graph.nodes_of_type(types.name(t)).empty())
      found.push_back(types.name(t));
  }
  return found;
}

}  // namespace

void add_fit_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> tracks;
    std::string mix, groups, chain = chain_letters(default_fit_chain()), graph, types;
    RoutingArgs routing{{}, {}, chain_letters(default_fit_master_chain())};
    SampleRate sample_rate = 30000;
    bool strict_rate       = false;
    FitOptions options;
    Session session;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("fit", "Fit a mixing console (or any graph) to a mix of the given tracks");
  cmd->add_option("--tracks", args->tracks, "The dry tracks (mono or stereo audio files)")
      ->required();
  cmd->add_option("--mix", args->mix, "The finished stereo mix")->required();
  CLI::Option* groups = cmd->add_option(
      "--groups", args->groups,
      "Subgroups: a count (tracks split evenly) or a subgroup per track, e.g. 0,0,1");
  auto [chain, types] = add_chain_options(*cmd, args->chain, args->types);
  add_routing_options(*cmd, args->routing);
  cmd->add_option("--graph", args->graph,
                  "Fit this graph file instead of a console: any processors and wiring, one `in` "
                  "node per track "
                  "(in id order), dry/wet where the file says")
      ->excludes(groups)
      ->excludes(chain)
      ->excludes(types)
      ->excludes("--send")
      ->excludes("--sidechain")
      ->excludes("--master");
  cmd->add_option("--sample-rate", args->sample_rate, "Sample rate of the fit (Hz)")
      ->capture_default_str()
      ->check(CLI::Range(8000, 192000));
  cmd->add_flag("--strict-rate", args->strict_rate,
                "Refuse audio at another sample rate instead of resampling it");
  cmd->add_option("-o,--output", args->session.folder, "Output folder")->required();
  add_fit_options(*cmd, args->options, args->session);
  cmd->callback([args, cmd] {
    StopRequest stop;  // loading and set-up take seconds: Ctrl-C then also ends with a coded error
    apply_time_budget(args->options, args->session);
    std::vector<std::string> names;
    for (const auto& path : args->tracks) names.push_back(fs::path(path).stem().string());
    // Bad options, graph files, consoles and audio fail before the output folder is made.
    Graph graph;
    if (!args->graph.empty()) {
      graph = load_graph_file(args->graph);
      graph.check();
    } else {
      ConsoleOptions console;
      console.n_tracks      = int64_t(names.size());
      console.track_groups  = parse_groups(args->groups, console.n_tracks);
      const NodeTypes types = console_types(args->types);
      console.chain         = parse_chain(args->chain, types);
      console.track_names   = names;
      console.dry_wet       = true;
      parse_routing(args->routing, types, console);
      graph = build_console(console, types).graph;
      // Level rides are part of a mix: a console's levels follow curves after the static fit,
      // unless --automate says otherwise (docs/benchmarks.md, "Hidden producers").
      if (cmd->get_option("--automate")->count() == 0)
        for (const std::string& type : level_types(graph))
          args->options.automation.parameters[type];
    }
    FitInputs inputs{args->tracks, args->mix, names, args->sample_rate, args->strict_rate};
    auto [tracks, mix, notes] = load_fit_audio(inputs);
    stop_if_requested(stop);
    print_notes(notes);
    inputs.hashes        = content_hashes(inputs);  // as read, for `grafx prune` to compare
    const int64_t length = mix.size(1);
    std::cout << "fitting " << (args->graph.empty() ? "a console" : args->graph) << " of "
              << counted(graph.n_nodes(), "node") << " to " << args->mix << " ("
              << counted(tracks.size(0), "track") << ", " << std::fixed << std::setprecision(2)
              << double(length) / double(args->sample_rate) << " s at " << args->sample_rate
              << " Hz)\n";
    args->options.adapt_threads       = !threads_chosen();
    args->options.node_gradient_hooks = parse_gradient_hooks(args->session.gradient_hooks, graph);
    Fitter fitter(graph, tracks, mix, args->sample_rate, args->options);
    std::vector<std::string> files = args->tracks;
    files.push_back(args->mix);
    if (!args->graph.empty()) files.push_back(args->graph);
    if (!args->types.empty()) files.push_back(args->types);
    for (const auto& name : fit_folder_files())
      check_not_an_input(args->session.folder + "/" + name, files);
    args->session.summary.before = initial_loss(fitter);
    stop_if_requested(stop);
    prepare_output_folder(args->session.folder, fit_folder_files(), args->session.resume,
                          args->session.force, "fit");  // only once everything has been checked
    args->session.summary.title       = "grafx fit: " + fs::path(args->mix).filename().string();
    args->session.summary.track_names = names;
    args->session.summary.target_file = args->mix;  // the page plays it beside the fitted mix
    args->session.summary.track_files = args->tracks;
    args->session.inputs              = inputs;
    run_session(fitter, args->session, stop);
  });
}

void add_demo_command(CLI::App& app) {
  struct Args {
    DemoOptions demo;
    FitOptions options;
    Session session;
  };
  auto args                      = std::make_shared<Args>();
  args->options.n_steps          = 600;
  args->options.crop_seconds     = 2.5;
  args->options.skip_seconds     = 0.5;
  args->session.folder           = "demo-output";
  args->session.checkpoint_every = 50;
  CLI::App* cmd                  = app.add_subcommand(
                       "demo", "Fit a console to a synthesised song mixed by a hidden console (no files needed)");
  cmd->add_option("-o,--output", args->session.folder, "Output folder")->capture_default_str();
  cmd->add_option("--song-seed", args->demo.seed, "Seed of the song and the hidden console")
      ->capture_default_str()
      ->check(whole_number(0));
  add_fit_options(*cmd, args->options, args->session);
  cmd->callback([args] {
    StopRequest stop;  // synthesis and set-up take seconds: Ctrl-C then ends with a coded error
    apply_time_budget(args->options, args->session);
    // Refused before minutes of synthesis and set-up, not after.
    check_output_folder(args->session.folder, fit_folder_files(), args->session.resume,
                        args->session.force, "fit");
    std::cout << "synthesising a song (drums, bass, chords, lead; " << args->demo.seconds
              << " s at " << args->demo.sample_rate
              << " Hz) and mixing it through a hidden console\n";
    DemoSong song = make_demo_song(args->demo);
    stop_if_requested(stop);
    args->options.node_gradient_hooks =
        parse_gradient_hooks(args->session.gradient_hooks, song.console);
    args->options.adapt_threads = !threads_chosen();
    // Made (options checked, initial console from the data) before anything is written.
    Fitter fitter(song.console, song.tracks, song.mix, song.sample_rate, args->options);
    args->session.summary.before = initial_loss(fitter);
    stop_if_requested(stop);
    prepare_output_folder(args->session.folder, fit_folder_files(), args->session.resume,
                          args->session.force, "fit");
    // The tracks as files, so that `grafx render` can reproduce the fitted mix from them.
    const std::string tracks = args->session.folder + "/tracks";
    make_output_subfolder(tracks, {});  // in the demo's folder, whose files are all its own
    for (size_t k = 0; k < song.track_names.size(); ++k)
      write_audio(tracks + "/" + song.track_names[k] + ".wav",
                  song.tracks[int64_t(k)].narrow(0, 0, 1), song.sample_rate,
                  args->session.force || args->session.resume);
    // The hidden console's mix too, so that `grafx prune` finds the song again (fit.json).
    write_audio(tracks + "/target_mix.wav", song.mix, song.sample_rate,
                args->session.force || args->session.resume);
    FitInputs& inputs = args->session.inputs;
    for (const auto& name : song.track_names) inputs.tracks.push_back(tracks + "/" + name + ".wav");
    inputs.mix         = tracks + "/target_mix.wav";
    inputs.track_names = song.track_names;
    inputs.sample_rate = song.sample_rate;
    inputs.hashes      = content_hashes(inputs);
    std::cout << "fitting a fresh console of " << song.console.n_nodes() << " nodes to that mix\n";
    args->session.summary.title       = "grafx demo: a synthesised song mixed by a hidden console";
    args->session.summary.track_names = song.track_names;
    // The page plays the hidden console's mix and the tracks, and sets each fitted setting
    // beside the hidden one.
    args->session.summary.target_file     = inputs.mix;
    args->session.summary.target_label    = "target: the hidden console's mix";
    args->session.summary.track_files     = inputs.tracks;
    args->session.summary.reference       = song.hidden;
    args->session.summary.reference_label = "hidden console";
    run_session(fitter, args->session, stop);
  });
}

}  // namespace grafx::cli
