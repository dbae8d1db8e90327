// grafx demo and grafx fit, run as a user would.

#include <grafx/files.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/safetensors.h>
#include <grafx/loss/mix_loss.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

/// grafx fit of `tracks` to `mix` at 16 kHz, 2 steps of 1 s crops (0.2 s warm-up), into
/// `folder`, with `options` after.
testing::CommandResult short_fit(const std::vector<std::string>& tracks, const std::string& mix,
                                 const std::string& folder,
                                 const std::vector<std::string>& options) {
  std::vector<std::string> args = {"fit", "--tracks"};
  args.insert(args.end(), tracks.begin(), tracks.end());
  args.insert(args.end(), {"--mix", mix, "--sample-rate", "16000", "--crop", "1", "--warm-up",
                           "0.2", "--steps", "2", "-o", folder});
  args.insert(args.end(), options.begin(), options.end());
  return run_grafx(args);
}

TEST(CliFit, DemoWritesEverythingAndResumes) {
  testing::TempDir dir;
  std::string out = dir.file("demo");
  auto r          = run_grafx({"demo", "-o", out, "--steps", "4", "--checkpoint-every", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "loss before fitting: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "step 4/4")) << r.out;
  EXPECT_TRUE(contains(r.out, "x lower")) << r.out;
  for (const char* file :
       {"mix.wav", "console.json", "console.svg", "parameters.safetensors", "parameters.json",
        "loss.csv", "loss.svg", "report.html", "checkpoint.safetensors"})
    EXPECT_TRUE(testing::file_exists(out + "/" + file)) << file;
  std::string report = testing::read_file(out + "/report.html");
  for (const char* part :
       {"Whole-song loss", "Loss curve", "data:image/png;base64,", "<svg", "Parameters"})
    EXPECT_TRUE(contains(report, part)) << part;
  // Every initialisation part the fit printed is in the report, with its whole-song losses and
  // whether it was undone (the demo's least-squares gains raise the loss and are undone).
  for (const std::string part : {"typical starts: ", "track gains by least squares: "}) {
    const size_t line = r.out.find(part);
    ASSERT_NE(line, std::string::npos) << part << "\n" << r.out;
    std::string printed = r.out.substr(line, r.out.find('\n', line) - line);
    EXPECT_TRUE(contains(report, "<li>" + part)) << part;
    const size_t losses = printed.find("whole-song loss ");
    if (losses == std::string::npos) continue;
    std::string shown = printed.substr(losses);
    shown.replace(shown.find(" -> "), 4, " → ");
    if (const size_t undone = shown.find("higher: undone"); undone != std::string::npos)
      shown.replace(undone, 14, "higher: <b>undone</b>");
    EXPECT_TRUE(contains(report, shown)) << shown;
  }
  std::string csv = testing::read_file(out + "/loss.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << "a header and one line per step";
  EXPECT_EQ(read_audio(out + "/mix.wav").sample_rate, 24000);
  // summary.json: the printed whole-song losses and the steps, for programs (grafx.dataset).
  auto summary = nlohmann::json::parse(testing::read_file(out + "/summary.json"));
  EXPECT_EQ(summary["format"], "grafx.fit_summary");
  EXPECT_EQ(summary["steps"], 4);
  for (const auto& [label, key] : {std::pair{"loss before fitting: ", "loss_before"},
                                   std::pair{"loss after fitting:  ", "loss_after"}}) {
    std::ostringstream printed;
    printed << label << std::fixed << std::setprecision(4) << summary[key]["loss"].get<double>();
    EXPECT_TRUE(contains(r.out, printed.str())) << printed.str() << "\n" << r.out;
  }

  r = run_grafx({"demo", "-o", out, "--steps", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]") && contains(r.err, "--resume")) << r.err;
  r = run_grafx({"demo", "-o", out, "--steps", "6", "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "resuming at step 4 of 6")) << r.out;
  EXPECT_EQ(load_safetensors(out + "/checkpoint.safetensors").tensors.at("history").size(0), 6);
  r = run_grafx({"demo", "-o", out, "--steps", "6", "--resume", "--lr", "0.5"});
  EXPECT_TRUE(contains(r.err, "[grafx.fit.checkpoint]") && contains(r.err, "made with lr"))
      << r.err;
  r = run_grafx({"demo", "-o", out, "--steps", "2", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_grafx({"demo", "-o", dir.file("nowhere/demo"), "--steps", "1"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.unwritable]")) << r.err;
}

TEST(CliFit, FitReadsResamplesAndTrims) {
  testing::TempDir dir;
  at::manual_seed(1);
  write_audio(dir.file("a.wav"), at::randn({1, 44100 * 3}) * 0.1, 44100);          // mono, 44.1 kHz
  write_audio(dir.file("b.wav"), at::randn({2, 16000 * 3}) * 0.1, 16000);          // stereo, 16 kHz
  write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 3 + 800}) * 0.1, 16000);  // a bit longer
  auto r = run_grafx({"fit",
                      "--tracks",
                      dir.file("a.wav"),
                      dir.file("b.wav"),
                      "--mix",
                      dir.file("mix.wav"),
                      "--chain",
                      "eg",
                      "--sample-rate",
                      "16000",
                      "--crop",
                      "1",
                      "--warm-up",
                      "0.2",
                      "--steps",
                      "3",
                      "-o",
                      dir.file("fit"),
                      "--progress-json",
                      dir.file("progress.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto progress = nlohmann::json::parse(testing::read_file(dir.file("progress.json")));
  // It ends as the fit's last stage ended, the renders that measure what each track's own
  // processing does, each written (the fit's fields went with its stage).
  EXPECT_EQ(progress.at("stage"), "tracks") << progress.dump();
  EXPECT_GE(progress.at("steps").get<int64_t>(), 2) << progress.dump();
  EXPECT_EQ(progress.at("step"), progress.at("steps")) << progress.dump();
  EXPECT_FALSE(progress.contains("steps_per_second")) << progress.dump();
  // A file that cannot be written is refused before any work: no fit folder.
  const auto refused =
      run_grafx({"--progress-json", dir.file("nowhere/progress.json"), "fit", "--tracks",
                 dir.file("a.wav"), "--mix", dir.file("mix.wav"), "-o", dir.file("unmade")});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(contains(refused.err, "[grafx.io.unwritable]") && contains(refused.err, "nowhere"))
      << refused.err;
  EXPECT_FALSE(testing::file_exists(dir.file("unmade")));
  const auto unnamed = run_grafx({"--progress-json", "", "info", dir.file("a.wav")});
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_TRUE(contains(unnamed.err, "[grafx.cli.arguments]") &&
              contains(unnamed.err, "expected a file name"))
      << unnamed.err;
  EXPECT_TRUE(contains(r.out, "fitting a console of 9 nodes to")) << r.out;
  EXPECT_TRUE(contains(r.err, "mix.wav is 0.05 s longer than")) << r.err;
  Audio fitted = read_audio(dir.file("fit/mix.wav"));
  EXPECT_EQ(fitted.sample_rate, 16000);
  EXPECT_NEAR(double(fitted.samples.size(1)), 16000.0 * 3, 2.0) << "cut to the shortest file";

  r = run_grafx({"fit", "--tracks", dir.file("a.wav"), dir.file("b.wav"), "--mix",
                 dir.file("mix.wav"), "--sample-rate", "16000", "--strict-rate", "-o",
                 dir.file("strict")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.sample_rate]") && contains(r.err, "44100 Hz")) << r.err;
  write_audio(dir.file("c.wav"), at::zeros({3, 16000}), 16000);
  r = run_grafx(
      {"fit", "--tracks", dir.file("c.wav"), "--mix", dir.file("mix.wav"), "-o", dir.file("c")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.channels]")) << r.err;
  r = run_grafx({"fit", "--tracks", dir.file("a.wav"), "--mix", dir.file("mix.wav"), "--resume",
                 "-o", dir.file("none")});
  EXPECT_TRUE(contains(r.err, "no such folder to resume from")) << r.err;
  r = run_grafx({"fit", "--tracks", dir.file("b.wav"), "--mix", dir.file("mix.wav"),
                 "--sample-rate", "16000", "--crop", "0.2", "-o", dir.file("short")});
  EXPECT_TRUE(contains(r.err, "[grafx.fit.data]") && contains(r.err, "largest FFT")) << r.err;
  // A few samples longer is said in samples, not "0.00 s"; an empty file is named.
  write_audio(dir.file("mix3.wav"), at::randn({2, 16000 * 3 + 3}) * 0.1, 16000);
  r = run_grafx({"fit", "--tracks", dir.file("b.wav"), "--mix", dir.file("mix3.wav"), "--chain",
                 "g", "--sample-rate", "16000", "--steps", "1", "-o", dir.file("m3")});
  EXPECT_TRUE(contains(r.err, "mix3.wav is 3 samples longer than")) << r.err;
  write_audio(dir.file("empty.wav"), at::zeros({1, 0}), 16000);
  r = run_grafx({"fit", "--tracks", dir.file("empty.wav"), "--mix", dir.file("mix.wav"), "-o",
                 dir.file("e")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.length] " + dir.file("empty.wav") + ": holds no samples"))
      << r.err;
}

TEST(CliFit, HostileOptionsFailAtOnceAndMakeNoFolder) {
  testing::TempDir dir;
  at::manual_seed(3);
  write_audio(dir.file("a.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      // The fit settings' options say their canonical name (--crop is --crop-seconds).
      {{"--lr", "nan"},
       "--lr: expected a finite learning rate above 0 and at most 10, but got \"nan\""},
      {{"--lr", "0"},
       "--lr: expected a finite learning rate above 0 and at most 10, but got \"0\""},
      {{"--lr", "inf"}, "expected a finite learning rate above 0"},
      {{"--lr", "11"}, "--lr: expected a finite learning rate above 0 and at most 10"},
      {{"--crop", "nan"}, "--crop-seconds: expected a finite crop length above 0 s"},
      {{"--crop-seconds", "-1"}, "--crop-seconds: expected a finite crop length above 0 s"},
      {{"--warm-up", "nan"}, "--skip-seconds: expected a finite warm-up of at least 0 s"},
      {{"--clip", "-1"},
       "--max-gradient-norm: expected a finite gradient-norm limit of at least 0"},
      {{"--reset-every", "-1"}, "--reset-optimizer-every"},
      {{"--seed", "-1"}, "--seed: expected a whole number of at least 0, but got \"-1\""},
      {{"--initialise-eq", "maybe"}, "--initialise-eq: expected true or false"},
      {{"--automation-start", "1"}, "--automation-start: expected a finite automation start"},
      {{"--schedule-method", "x"}, "--schedule-method: expected one of optimal, beam"},
      {{"--max-non-finite-steps", "1.5"}, "--max-non-finite-steps: expected a whole number"},
      {{"--checkpoint-every", "-5"}, "--checkpoint-every"},
      {{"--chain", "m", "--master", "none"}, "[grafx.fit.options] the graph has nothing to fit"},
      {{"--chain", ""}, "[grafx.graph.unknown_type] expected a chain of type letters"},
      {{"--warm-up", "1e300"}, "[grafx.fit.data] a crop of"},
      {{"--gradient-hook", "nothere=stop"}, "no node has the id or name \"nothere\""},
      {{"--gradient-hook", "0"}, "expected NODE=stop, NODE=scale:F or NODE=clip:M"},
      {{"--gradient-hook", "0=scale:x"}, "\"x\" is not a finite number"},
      {{"--gradient-hook", "0=scale:nan"}, "\"nan\" is not a finite number"},
      {{"--gradient-hook", "0=clip:-1"}, "expected stop, scale:F or clip:M (M > 0)"},
      {{"--optimizer", "sgd"}, "--optimizer: expected one of adamw, adahessian, but got \"sgd\""},
      {{"--device", "gpu7"}, "[grafx.fit.options] --device gpu7: expected cpu, cuda or cuda:N"},
      {{"--device", ""}, "[grafx.fit.options] --device : expected cpu, cuda or cuda:N"},
      {{"--device", "meta"}, "[grafx.fit.options] --device meta: expected cpu, cuda or cuda:N"},
      // A GPU this machine lacks: refused before anything is fitted or written.
      {{"--device", at::hasCUDA() ? "cuda:1000" : "cuda"}, "this LibTorch cannot use it"},
  };
  for (const auto& [options, message] : cases) {
    std::vector<std::string> args = {"fit",   "--tracks",          dir.file("a.wav"),
                                     "--mix", dir.file("mix.wav"), "--sample-rate",
                                     "16000", "--steps",           "2",
                                     "-o",    dir.file("out")};
    args.insert(args.end(), options.begin(), options.end());
    auto r = run_grafx(args);
    EXPECT_NE(r.exit_code, 0) << options[0];
    EXPECT_LT(r.exit_code, 128) << options[0];
    EXPECT_TRUE(contains(r.err, message)) << options[0] << ": " << r.err;
    EXPECT_FALSE(testing::file_exists(dir.file("out"))) << options[0] << ": no folder is made";
  }
  for (const char* threads : {"abc", "0", "100000", "2x"}) {
    auto r = run_grafx({"info", dir.file("a.wav")}, {{"GRAFX_THREADS", threads}});
    EXPECT_EQ(r.exit_code, 1) << threads;
    EXPECT_TRUE(contains(r.err, "[grafx.cli.threads] GRAFX_THREADS=\"" + std::string(threads) +
                                    "\": expected a whole number of threads from 1 to 1024"))
        << r.err;
  }
  EXPECT_EQ(run_grafx({"processors"}, {{"GRAFX_THREADS", ""}}).exit_code, 0) << "empty is unset";
}

TEST(CliFit, OutputsNeverReplaceInputs) {
  // The target mix.wav in the output folder: --force must not let the fit overwrite it.
  testing::TempDir dir;
  at::manual_seed(4);
  write_audio(dir.file("a.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  const std::string before = testing::read_file(dir.file("mix.wav"));
  auto r = run_grafx({"fit", "--tracks", dir.file("a.wav"), "--mix", dir.file("mix.wav"),
                      "--sample-rate", "16000", "--steps", "1", "-o", dir.file("."), "--force"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]") && contains(r.err, "mix.wav"))
      << r.err;
  EXPECT_EQ(testing::read_file(dir.file("mix.wav")), before);
  EXPECT_FALSE(testing::file_exists(dir.file("checkpoint.safetensors")));
  // Other commands, with the input reached through a link (identity, not name).
  std::filesystem::create_symlink(dir.file("a.wav"), dir.file("link.wav"));
  r = run_grafx({"process", "eq", "-i", dir.file("a.wav"), "-o", dir.file("link.wav"), "--force"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;
  ASSERT_EQ(run_grafx({"console", "--tracks", "1", "-o", dir.file("g.json")}).exit_code, 0);
  r = run_grafx({"draw", dir.file("g.json"), "-o", dir.file("g.json"), "--force"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;
  r = run_grafx({"render", dir.file("g.json"), "--sources", dir.file("a.wav"), "-o",
                 dir.file("link.wav"), "--force"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;
  r = run_grafx({"schedule", dir.file("g.json"), "--json", dir.file("g.json"), "--force"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;
  EXPECT_EQ(testing::read_file(dir.file("mix.wav")), before);
}

TEST(CliFit, SigtermSavesACheckpointAndForceNeverMixesTwoFits) {
  testing::TempDir dir;
  at::manual_seed(5);
  write_audio(dir.file("a.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  write_audio(dir.file("mix.wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  std::vector<std::string> fit = {
      "fit",           "--tracks", dir.file("a.wav"), "--mix", dir.file("mix.wav"), "--chain", "g",
      "--sample-rate", "16000",    "--crop",          "1",     "--warm-up",         "0.2",     "-o",
      dir.file("out")};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = fit;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  ASSERT_EQ(run_grafx(with({"--steps", "1"})).exit_code, 0);  // an earlier fit's outputs
  ASSERT_TRUE(testing::file_exists(dir.file("out/report.html")));
  write_text_file(dir.file("out/notes.txt"), "mine", false);
  // A forced fit, stopped by SIGTERM: the earlier outputs are gone from the start, the user's
  // own file stays, and a checkpoint is saved as for Ctrl-C.
  auto r = run_grafx(with({"--steps", "1000000", "--force"}), {{"OUT", dir.file("stdout.txt")}},
                     testing::signal_once_printed(SIGTERM, "step "));
  EXPECT_TRUE(contains(r.err, "[grafx.fit.interrupted]")) << r.exit_code << " " << r.err;
  EXPECT_TRUE(testing::file_exists(dir.file("out/checkpoint.safetensors")));
  EXPECT_FALSE(testing::file_exists(dir.file("out/report.html"))) << "no report of the first fit";
  EXPECT_FALSE(testing::file_exists(dir.file("out/mix.wav")));
  EXPECT_EQ(testing::read_file(dir.file("out/notes.txt")), "mine");
  // Resuming it with fewer steps than it holds is refused.
  r = run_grafx(with({"--steps", "1", "--resume"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.fit.checkpoint]") && contains(r.err, "more than the 1 asked"))
      << r.err;
}

// SIGTERM (as Ctrl-C) while a fit is still setting up, right after its inputs are read: one
// coded error, not the signal's default exit 143, and no folder.
TEST(CliFit, StopWhileSettingUpEndsWithACodedErrorAndWritesNothing) {
  testing::TempDir dir;
  at::manual_seed(6);
  for (const char* name : {"a", "mix"})  // a minute: set-up takes a while
    write_audio(dir.file(std::string(name) + ".wav"), at::randn({2, 16000 * 60}) * 0.1, 16000);
  auto r = run_grafx({"fit", "--tracks", dir.file("a.wav"), "--mix", dir.file("mix.wav"),
                      "--sample-rate", "16000", "--chain", "g", "--crop", "1", "--warm-up", "0.2",
                      "--steps", "1000000", "-o", dir.file("out")},
                     {{"OUT", dir.file("stdout.txt")}},
                     testing::signal_once_printed(SIGTERM, "fitting "));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "[grafx.fit.interrupted]")) << r.err;
  if (contains(r.err, "before work began"))
    EXPECT_FALSE(testing::file_exists(dir.file("out")));
  else  // a machine so slow that the fit had begun: stopped after its first step
    EXPECT_TRUE(testing::file_exists(dir.file("out/checkpoint.safetensors"))) << r.err;
}

TEST(CliFit, FitsConsolesWithSendsAndSidechains) {
  testing::TempDir dir;
  at::manual_seed(2);
  for (const char* name : {"kick", "bass", "mix"})
    write_audio(dir.file(std::string(name) + ".wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  auto fit = [&](std::vector<std::string> routing, const std::string& folder) {
    routing.insert(routing.begin(), {"--chain", "g"});
    return short_fit({dir.file("kick.wav"), dir.file("bass.wav")}, dir.file("mix.wav"),
                     dir.file(folder), routing);
  };
  auto r = fit({"--send", "reverb=r", "--sidechain", "bass=kick"}, "routed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Graph fitted = load_graph(dir.file("routed/console.json"), registry_node_types());
  EXPECT_EQ(fitted.nodes_of_type("send").size(), 2u);
  EXPECT_EQ(fitted.nodes_of_type("sidechain_compressor").size(), 1u);
  // Bad routing fails before any output folder is made.
  r = fit({"--sidechain", "bass=snare"}, "bad");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "no track is named \"snare\" (tracks: kick, bass)")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("bad")));
}

// grafx fit's console: the paper's chain with a high-pass and a parametric EQ for its FIR EQ,
// and the levels (gain/pan nodes, their wet amounts too) following curves, unless --automate
// says otherwise.
TEST(CliFit, DefaultConsoleHasHighPassesParametricEqsAMasterCompressorAndRidesItsLevels) {
  testing::TempDir dir;
  at::manual_seed(3);
  for (const char* name : {"a", "b", "mix"})
    write_audio(dir.file(std::string(name) + ".wav"), at::randn({2, 16000 * 2}) * 0.1, 16000);
  auto fit = [&](const std::vector<std::string>& options, const std::string& folder) {
    return short_fit({dir.file("a.wav"), dir.file("b.wav")}, dir.file("mix.wav"), dir.file(folder),
                     options);
  };
  auto automated = [&](const std::string& folder) {
    Graph g = load_graph(dir.file(folder + "/console.json"), registry_node_types());
    std::vector<std::string> found;
    for (NodeId id : g.nodes())
      for (const auto& name : g.node(id).automated)
        found.push_back(g.types().name(g.node(id).type) + "." + name);
    return found;
  };
  auto r = fit({}, "default");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Graph g = load_graph(dir.file("default/console.json"), registry_node_types());
  EXPECT_EQ(g.nodes_of_type("highpass").size(), 2u);
  EXPECT_EQ(g.nodes_of_type("parametric_eq").size(), 2u);
  EXPECT_TRUE(g.nodes_of_type("eq").empty());
  EXPECT_EQ(g.nodes_of_type("compressor").size(), 2u);
  EXPECT_EQ(g.nodes_of_type("reverb").size(), 2u);
  // A glue compressor on the master bus, between the master mix and the output.
  ASSERT_EQ(g.nodes_of_type("compressor_ballistics").size(), 1u);
  const NodeId glue = g.nodes_of_type("compressor_ballistics")[0];
  EXPECT_EQ(g.node(glue).name, "master.compressor_ballistics");
  EXPECT_EQ(g.type_name(g.successors(glue).at(0)), "out");
  EXPECT_TRUE(g.node(glue).dry_wet);
  const std::vector<std::string> levels = {"gain_pan.dry_wet", "gain_pan.log_gain",
                                           "gain_pan.dry_wet", "gain_pan.log_gain"};
  EXPECT_EQ(automated("default"), levels);
  const auto file = load_safetensors(dir.file("default/parameters.safetensors"));
  EXPECT_TRUE(file.tensors.count("gain_pan.curves.log_gain")) << "the curves are written";
  // Told otherwise: nothing, or what was asked.
  ASSERT_EQ(fit({"--automate", "none", "--master", "none"}, "none").exit_code, 0);
  EXPECT_TRUE(automated("none").empty());
  EXPECT_TRUE(load_graph(dir.file("none/console.json"), registry_node_types())
                  .nodes_of_type("compressor_ballistics")
                  .empty());
  r = fit({"--master", "C7"}, "bad_master");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.graph.invalid_console] --master \"C7\": chain letter '7'"))
      << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("bad_master")));
  ASSERT_EQ(fit({"--automate", "stereo_imager:log_gain"}, "imager").exit_code, 0);
  EXPECT_EQ(automated("imager"),
            (std::vector<std::string>{"stereo_imager.log_gain", "stereo_imager.log_gain"}));
  // A chain without gain/pan nodes has no levels to ride, and a graph file is fitted as it is.
  ASSERT_EQ(fit({"--chain", "ec"}, "no_levels").exit_code, 0);
  EXPECT_TRUE(automated("no_levels").empty());
  ASSERT_EQ(fit({"--graph", dir.file("none/console.json")}, "graph").exit_code, 0);
  EXPECT_TRUE(automated("graph").empty());
  r = fit({"--automate", "none,gain_pan"}, "both");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.fit.options] --automate none,gain_pan: none stands alone"))
      << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("both")));
}

TEST(CliFit, LibTorchsOutOfMemoryIsOneLine) {
  // 300,000 crops of 50 s at once (960 GB): LibTorch's allocator refuses (a c10::Error, not
  // bad_alloc).
  testing::TempDir dir;
  write_audio(dir.file("t.wav"), at::randn({2, 60 * 8000}) * 0.1, 8000);
  auto r = run_grafx({"fit", "--tracks", dir.file("t.wav"), "--mix", dir.file("t.wav"),
                      "--sample-rate", "8000", "--crop", "50", "--crops", "300000", "--steps", "1",
                      "-o", dir.file("out")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("grafx: error: [grafx.cli.out_of_memory] out of memory: you tried to "
                        "allocate ",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliLoss, ScoresAMixAsTheLibrarysLossDoes) {
  testing::TempDir dir;
  at::manual_seed(11);
  const SampleRate rate = 30000;  // the loss's own rate: no resampling between the two paths
  at::Tensor target     = at::randn({2, 3 * rate}) * 0.2;
  at::Tensor estimate   = target * 0.7 + at::randn({2, 3 * rate}) * 0.05;
  write_audio(dir.file("target.wav"), target, rate);
  write_audio(dir.file("estimate.wav"), estimate, rate);
  write_audio(dir.file("mono.wav"), estimate.narrow(0, 0, 1), rate);
  // The library's loss on the whole signals, in one piece (the command streams in chunks).
  MixLossOptions options;
  options.skip_samples = rate / 2;
  MixLossTerms expected =
      MixLoss(options).terms(read_audio(dir.file("estimate.wav")).samples.unsqueeze(0),
                             read_audio(dir.file("target.wav")).samples.unsqueeze(0));
  auto r = run_grafx(
      {"loss", dir.file("estimate.wav"), dir.file("target.wav"), "--skip", "0.5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto field = [&](const std::string& name) {
    size_t at = r.out.find("\"" + name + "\": ");
    EXPECT_NE(at, std::string::npos) << name << " in " << r.out;
    return std::stod(r.out.substr(at + name.size() + 4));
  };
  EXPECT_NEAR(field("loss"), expected.total.item<double>(), 1e-5);
  EXPECT_NEAR(field("left_right"), expected.lr.item<double>(), 1e-5);
  EXPECT_FALSE(contains(r.out, "\"lr\"")) << "lr reads as a learning rate";
  EXPECT_NEAR(field("mid"), expected.mid.item<double>(), 1e-5);
  EXPECT_NEAR(field("side"), expected.side.item<double>(), 1e-5);
  EXPECT_TRUE(contains(r.out, "\"fft_sizes\": [512, 1024, 4096]")) << r.out;
  // --breakdown: parts by band and by second that sum to the loss.
  r = run_grafx({"loss", dir.file("estimate.wav"), dir.file("target.wav"), "--skip", "0.5",
                 "--breakdown", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto scored = nlohmann::json::parse(r.out);
  for (const char* axis : {"by_band", "by_second"}) {
    double sum = 0;
    for (const auto& part : scored.at(axis)) sum += part.at("loss").get<double>();
    EXPECT_NEAR(sum, expected.total.item<double>(), 1e-5) << axis;
  }
  EXPECT_EQ(scored.at("by_second").size(), 3u) << "0.5 to 3 s: three seconds of the song";
  r = run_grafx({"loss", dir.file("estimate.wav"), dir.file("target.wav"), "--breakdown"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "by band (parts that sum to the loss")) << r.out;
  EXPECT_TRUE(contains(r.out, "  1 kHz–2 kHz")) << r.out;
  EXPECT_TRUE(contains(r.out, "by second, the 3 of 3 seconds holding the most")) << r.out;
  // Text: the total and a line per resolution; a file against itself scores 0.
  r = run_grafx({"loss", dir.file("target.wav"), dir.file("target.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "loss 0.0000 = 0.5 L/R 0.0000")) << r.out;
  EXPECT_TRUE(contains(r.out, "  FFT 4096:  L 0.000 + 0.000")) << r.out;
  // A mono estimate is its dual mono: no side, so the side term is the target's whole side.
  r = run_grafx({"loss", dir.file("mono.wav"), dir.file("target.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Bad input: one line, non-zero, below 128.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"loss", dir.file("missing.wav"), dir.file("target.wav")}, "[grafx.io.unreadable]"},
           {{"loss", dir.file("target.wav"), dir.file("target.wav"), "--skip", "100"},
            "[grafx.loss.skip]"},
           {{"loss", dir.file("target.wav"), dir.file("target.wav"), "--skip", "nan"}, "--skip"},
           {{"loss", dir.file("target.wav")}, "target"}}) {
    r = run_grafx(args);
    EXPECT_GT(r.exit_code, 0) << message;
    EXPECT_LT(r.exit_code, 128) << message;
    EXPECT_TRUE(contains(r.err, message)) << r.err;
  }
}

}  // namespace
}  // namespace grafx
