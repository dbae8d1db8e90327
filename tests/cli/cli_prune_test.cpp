// grafx prune and grafx fit --prune, run as a user would: the pruned console renders as its
// mix.wav, the report and tables are written, the expected time is printed, a prune stopped by
// Ctrl-C or killed resumes as one run, and bad requests are refused.

#include <grafx/files.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

/// Two tracks and a mix of them at 8 kHz, 3 s.
void write_song(testing::TempDir& dir) {
  at::manual_seed(3);
  at::Tensor a = at::randn({1, 24000}) * 0.1, b = at::randn({1, 24000}) * 0.1;
  write_audio(dir.file("a.wav"), a, 8000);
  write_audio(dir.file("b.wav"), b, 8000);
  write_audio(dir.file("mix.wav"), at::cat({0.8 * a + 0.3 * b, 0.4 * a + 0.9 * b}), 8000);
}

std::vector<std::string> fit_args(testing::TempDir& dir, const std::string& out) {
  return {"fit",
          "--tracks",
          dir.file("a.wav"),
          dir.file("b.wav"),
          "--mix",
          dir.file("mix.wav"),
          "--chain",
          "eg",
          "--sample-rate",
          "8000",
          "--steps",
          "20",
          "--crop",
          "1",
          "--warm-up",
          "0.1",
          "-o",
          out};
}

TEST(CliPrune, PrunesAFitFolderAndTheResultRendersAsItsMix) {
  testing::TempDir dir;
  write_song(dir);
  auto r = run_grafx(fit_args(dir, dir.file("fit")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(testing::file_exists(dir.file("fit/fit.json")));
  const std::string out = dir.file("pruned");
  r = run_grafx({"prune", dir.file("fit"), "-o", out, "--method", "brute-force", "--rounds", "1",
                 "--steps-between", "3", "--tolerance", "0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // summary.json: the counts printed, and per type (the dataset's Table 2).
  auto summary     = nlohmann::json::parse(testing::read_file(out + "/summary.json"));
  const int before = summary["processors_before"], after = summary["processors_after"];
  EXPECT_TRUE(contains(r.out, "pruned " + std::to_string(before - after) + " of " +
                                  std::to_string(before) + " processors"))
      << r.out;
  int per_type_before = 0, per_type_after = 0;
  for (const auto& [type, counts] : summary["per_type"].items()) {
    per_type_before += counts[0].get<int>();
    per_type_after += counts[1].get<int>();
  }
  EXPECT_EQ(per_type_before, before);
  EXPECT_EQ(per_type_after, after);
  EXPECT_TRUE(contains(r.out, "round 1/1 brute-force")) << r.out;
  EXPECT_TRUE(contains(r.out, "pruned ")) << r.out;
  // The plan: brute force tries each of the 5 processors (2 per track, the master compressor)
  // once; the losses at the round's start and after its fine-tuning; 3 steps.
  EXPECT_TRUE(contains(r.out, "expected time: about ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(1 round: ~5 trials and 2 whole-song losses of ~")) << r.out;
  EXPECT_TRUE(contains(r.out, ", 3 fine-tuning steps of ~")) << r.out;
  EXPECT_TRUE(contains(r.out, "  ETA ")) << r.out;
  EXPECT_FALSE(contains(r.out, "e+") || contains(r.out, "e-0")) << "times as people read them";
  for (const char* file :
       {"mix.wav", "console.json", "console.svg", "console_before.svg", "parameters.safetensors",
        "parameters.json", "rounds.csv", "trials.csv", "pruning.svg", "report.html"})
    EXPECT_TRUE(testing::file_exists(out + "/" + file)) << file;
  std::string report = testing::read_file(out + "/report.html");
  for (const char* part : {"removed (ρ)", "Whole-song loss", "Pruned console", "<svg"})
    EXPECT_TRUE(contains(report, part)) << part;
  std::string trials = testing::read_file(out + "/trials.csv");
  EXPECT_EQ(std::count(trials.begin(), trials.end(), '\n'), 1 + 5) << "every processor once";

  // The pruned console and parameters reproduce its mix.
  r = run_grafx({"render", out + "/console.json", "--sources", dir.file("a.wav"), dir.file("b.wav"),
                 "--params", out + "/parameters.safetensors", "-o", dir.file("again.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  at::Tensor again = read_audio(dir.file("again.wav")).samples,
             mix   = read_audio(out + "/mix.wav").samples;
  ASSERT_EQ(again.sizes(), mix.sizes());
  EXPECT_LT((again - mix).abs().max().item<double>(), 1e-4 * mix.abs().max().item<double>());

  // Outputs are not replaced without --force, and never written over the fit's own files.
  r = run_grafx({"prune", dir.file("fit"), "-o", out, "--rounds", "1", "--steps-between", "1"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]")) << r.err;
  r = run_grafx({"prune", dir.file("fit"), "-o", dir.file("fit"), "--force"});
  EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;

  // fit.json records every fit setting by name (version 2); version 1 records, with a few
  // settings at the top level, still load; a bad setting is refused naming the file and it.
  const std::string record_path = dir.file("fit/fit.json");
  auto record                   = nlohmann::json::parse(testing::read_file(record_path));
  EXPECT_EQ(record["version"], 2);
  EXPECT_EQ(record["settings"]["crop_seconds"], 1.0);
  EXPECT_EQ(record["settings"]["skip_seconds"], 0.1);
  EXPECT_EQ(record["settings"]["num_steps"], 20);
  auto v1 = record;
  v1.erase("settings");
  v1["version"]      = 1;
  v1["crop_seconds"] = 1.0, v1["skip_seconds"] = 0.1, v1["lr"] = 0.05, v1["seed"] = 0;
  v1["final_lr_ratio"] = 0.1;
  write_text_file(record_path, v1.dump(2), true);
  r = run_grafx({"prune", dir.file("fit"), "-o", dir.file("pruned_v1"), "--rounds", "1",
                 "--steps-between", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  record["settings"]["crop_seconds"] = -1;
  write_text_file(record_path, record.dump(2), true);
  r = run_grafx({"prune", dir.file("fit"), "-o", dir.file("pruned_bad")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "[grafx.io.fit_folder]") &&
              contains(r.err, "fit.json: settings: crop_seconds: expected"))
      << r.err;
}

TEST(CliPrune, AnAutomatedFitPrunesAndItsCurvesRenderAsFitted) {
  testing::TempDir dir;
  write_song(dir);
  std::vector<std::string> args = fit_args(dir, dir.file("fit"));
  args.insert(args.end(), {"--automate", "gain_pan", "--automation-rate", "5", "--prune",
                           "--prune-rounds", "1", "--prune-steps-between", "2"});
  auto r = run_grafx(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The default tolerance as it is (the fit's lines before set a precision of one decimal).
  EXPECT_TRUE(contains(r.out, "(hybrid, τ 0.01, 1 rounds")) << r.out;
  for (const std::string& folder : {dir.file("fit"), dir.file("fit/pruned")}) {
    const std::string console = testing::read_file(folder + "/console.json");
    EXPECT_TRUE(contains(console, "\"automation\": {\"points\":16,\"rate_hz\":5}")) << console;
    r = run_grafx({"render", folder + "/console.json", "--sources", dir.file("a.wav"),
                   dir.file("b.wav"), "--params", folder + "/parameters.safetensors", "-o",
                   folder + "/again.wav"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    at::Tensor again = read_audio(folder + "/again.wav").samples,
               mix   = read_audio(folder + "/mix.wav").samples;
    EXPECT_LT((again - mix).abs().max().item<double>(), 1e-4 * mix.abs().max().item<double>())
        << folder;
  }
  EXPECT_TRUE(contains(testing::read_file(dir.file("fit/report.html")), "id=\"automation\""));
}

/// rounds.csv without its timing column.
std::string rounds_without_seconds(const std::string& path) {
  std::istringstream in(testing::read_file(path));
  std::string line, out;
  while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

TEST(CliPrune, ResumesWithMoreRoundsAsOneRun) {
  testing::TempDir dir;
  write_song(dir);
  ASSERT_EQ(run_grafx(fit_args(dir, dir.file("fit"))).exit_code, 0);
  std::vector<std::string> common{"--rounds", "2", "--steps-between", "3", "--tolerance", "0.02"};
  auto prune = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{"prune", dir.file("fit"), "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_grafx(args);
  };
  auto r = prune(dir.file("resume"),
                 {"--rounds", "2", "--steps-between", "3", "--tolerance", "0.02", "--resume"});
  EXPECT_TRUE(contains(r.err, "[grafx.fit.checkpoint]") && contains(r.err, "no saved pruning"))
      << r.err;
  r = prune(dir.file("resume"), {"--rounds", "1", "--steps-between", "3", "--tolerance", "0.02"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = prune(dir.file("resume"),
            {"--rounds", "2", "--steps-between", "3", "--tolerance", "0.02", "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "resuming after round 1 of 2")) << r.out;
  r = prune(dir.file("once"), common);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rounds_without_seconds(dir.file("resume/rounds.csv")),
            rounds_without_seconds(dir.file("once/rounds.csv")));
  EXPECT_EQ(testing::read_file(dir.file("resume/trials.csv")),
            testing::read_file(dir.file("once/trials.csv")));
  r = prune(dir.file("resume"), {"--rounds", "2", "--steps-between", "4", "--resume"});
  EXPECT_TRUE(contains(r.err, "[grafx.fit.checkpoint]") && contains(r.err, "other pruning options"))
      << r.err;
}

/// Runs grafx with `args` and sends it `signal` (INT, KILL, ...) as soon as a line of its output
/// contains `marker`: its output comes through a fifo, line by line, so the signal follows at
/// once.
testing::CommandResult run_grafx_until(const testing::TempDir& dir,
                                       const std::vector<std::string>& args,
                                       const std::string& marker, const std::string& signal) {
  const std::string script =
      "fifo='" + dir.file("output.fifo") +
      "'; rm -f \"$fifo\"; mkfifo \"$fifo\" || exit 90; \"$@\" > \"$fifo\" & pid=$!; sent=0; "
      "while IFS= read -r line; do printf '%s\\n' \"$line\"; "
      "if [ $sent = 0 ]; then case \"$line\" in *'" +
      marker + "'*) kill -" + signal + " $pid; sent=1;; esac; fi; done < \"$fifo\"; wait $pid";
  return run_grafx(args, {}, {"sh", "-c", script, "sh"});
}

TEST(CliPrune, AnInterruptedPruneResumesAsOneRun) {
  testing::TempDir dir;
  write_song(dir);
  ASSERT_EQ(run_grafx(fit_args(dir, dir.file("fit"))).exit_code, 0);
  // One thread: the runs add in one order and are equal to the bit.
  auto prune = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{"--threads",   "1",        "prune",    dir.file("fit"),   "-o",
                                  out,           "--rounds", "2",        "--steps-between", "40",
                                  "--tolerance", "0.02",     "--method", "brute-force"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto r = run_grafx(prune(dir.file("once"), {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct Stop {
    const char *name, *marker, *signal;
  };
  // Ctrl-C in the trials (round 1 has 4) and in the fine-tuning; a kill during the second
  // round's fine-tuning, which finds the first round's end and the second's trials saved.
  for (const Stop& stop : {Stop{"trials", "round 1/2 brute-force  trial 2:", "INT"},
                           Stop{"tuning", "round 1/2 brute-force  fine-tuning 25/40", "INT"},
                           Stop{"killed", "round 2/2 brute-force  fine-tuning 25/40", "KILL"}}) {
    const std::string out = dir.file(stop.name);
    r                     = run_grafx_until(dir, prune(out, {}), stop.marker, stop.signal);
    ASSERT_NE(r.exit_code, 0) << stop.name << ": not stopped\n" << r.out;
    if (std::string(stop.signal) == "INT") {
      EXPECT_TRUE(contains(r.err, "[grafx.fit.interrupted] pruning interrupted in round 1 of 2"))
          << r.err;
      EXPECT_TRUE(contains(r.err, "its state is saved in " + out + ": continue with --resume"))
          << r.err;
    }
    EXPECT_FALSE(testing::file_exists(out + "/report.html")) << stop.name;
    r = run_grafx(prune(out, {"--resume"}));
    ASSERT_EQ(r.exit_code, 0) << stop.name << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "resuming round ")) << stop.name << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "expected time left: about ")) << r.out;
    EXPECT_EQ(testing::read_file(out + "/trials.csv"),
              testing::read_file(dir.file("once/trials.csv")))
        << stop.name;
    EXPECT_EQ(rounds_without_seconds(out + "/rounds.csv"),
              rounds_without_seconds(dir.file("once/rounds.csv")))
        << stop.name;
    EXPECT_TRUE(testing::read_file(out + "/parameters.safetensors") ==
                testing::read_file(dir.file("once/parameters.safetensors")))
        << stop.name << ": the pruned console's parameters differ";
  }
}

TEST(CliPrune, FitWithPruneWritesThePrunedConsoleBesideTheFit) {
  testing::TempDir dir;
  write_song(dir);
  std::vector<std::string> args = fit_args(dir, dir.file("fit"));
  for (const char* a : {"--prune", "--prune-rounds", "1", "--prune-steps-between", "2",
                        "--progress-json", "PROGRESS"})
    args.push_back(a == std::string("PROGRESS") ? dir.file("progress.json") : a);
  auto r = run_grafx(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The progress file (--progress-json) ends as the pruning ended: its one round done, the
  // fit's fields gone with its stage.
  const auto progress = nlohmann::json::parse(testing::read_file(dir.file("progress.json")));
  EXPECT_EQ(progress.at("format"), "grafx.progress");
  EXPECT_EQ(progress.at("version"), 1);
  EXPECT_EQ(progress.at("stage"), "prune") << progress.dump();
  EXPECT_EQ(progress.at("round"), 1);
  EXPECT_EQ(progress.at("rounds"), 1);
  EXPECT_EQ(progress.at("step"), progress.at("steps")) << progress.dump();
  EXPECT_GE(progress.at("processors").get<int64_t>(), 0);
  EXPECT_FALSE(progress.contains("steps_per_second")) << progress.dump();
  EXPECT_TRUE(testing::file_exists(dir.file("fit/report.html")));
  EXPECT_TRUE(testing::file_exists(dir.file("fit/pruned/report.html")));
  EXPECT_TRUE(testing::file_exists(dir.file("fit/pruned/console.json")));
}

TEST(CliPrune, RefusesWhatItCannotPrune) {
  testing::TempDir dir;
  auto r = run_grafx({"prune", dir.path(), "-o", dir.file("out")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.io.fit_folder]") &&
              contains(r.err, "not the folder of a fit"))
      << r.err;
  write_text_file(dir.file("fit.json"), "{\"format\": \"grafx.fit\"}", false);
  r = run_grafx({"prune", dir.path(), "-o", dir.file("out")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.fit_folder]") && contains(r.err, "missing")) << r.err;
  for (std::vector<std::string> bad : {std::vector<std::string>{"--tolerance", "-1"},
                                       {"--tolerance", "nan"},
                                       {"--rounds", "-2"},
                                       {"--method", "greedy"}}) {
    std::vector<std::string> args{"prune", dir.path(), "-o", dir.file("out")};
    args.insert(args.end(), bad.begin(), bad.end());
    r = run_grafx(args);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1] << ": " << r.err;
  }
  EXPECT_FALSE(testing::file_exists(dir.file("out")));
}

}  // namespace
}  // namespace grafx
