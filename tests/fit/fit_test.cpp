// The fitting loop on small consoles of the stereo processors: the loss falls and the hidden
// settings are found, checkpoints resume exactly, non-finite steps are skipped and reported,
// and bad data is refused.

#include <grafx/fit/checkpoint.h>
#include <grafx/fit/demo.h>
#include <grafx/fit/fit.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/fit/multitrack.h>
#include <grafx/graph/console.h>
#include <grafx/io/safetensors.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/render/parameters.h>
#include <grafx/report/fit_report.h>

#include "fit/fit_test_support.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>

#include <cmath>
#include <functional>
#include <iostream>
#include <set>

namespace grafx {
namespace {

constexpr int64_t kRate = 8000;

/// Three tracks of noise bursts in different rhythms (independent, so gains are identifiable).
at::Tensor tracks(int64_t seconds) {
  at::manual_seed(7);
  at::Tensor noise     = at::randn({3, 1, seconds * kRate});
  at::Tensor t         = at::arange(seconds * kRate, at::kFloat) / kRate;
  at::Tensor envelopes = at::stack(
      {(at::sin(t * 6.0) + 1) / 2, (at::sin(t * 9.5 + 1) + 1) / 2, (at::cos(t * 3.3) + 1) / 2});
  return (noise * envelopes.unsqueeze(1) * 0.3).expand({3, 2, seconds * kRate}).contiguous();
}

Graph gain_console() {
  ConsoleOptions options;
  options.n_tracks = 3;
  options.chain    = {"gain_pan"};
  return build_console(options, registry_node_types()).graph;
}

using testing::small_options;

/// Samples [start, start + n) of signals (…×L), silent before the song where start < 0.
at::Tensor crop_of(const at::Tensor& signals, int64_t start, int64_t n) {
  if (start >= 0) return signals.narrow(-1, start, n);
  return at::constant_pad_nd(signals.narrow(-1, 0, n + start), {-start, 0});
}

/// The hidden mix: each track's left and right gains set by hand.
at::Tensor hidden_mix(const Graph& console, const at::Tensor& x, const at::Tensor& log_gains) {
  Processors processors = make_processors(console.types(), {kRate});
  RenderPlan plan       = make_render_plan(to_tensor(console));
  return render(plan, processors, {{"gain_pan", {{"log_gain", log_gains}}}}, x).outputs[0];
}

TEST(Fit, FindsHiddenGainsAndTheLossFalls) {
  Graph console     = gain_console();
  at::Tensor x      = tracks(3);
  at::Tensor hidden = at::tensor({0.5f, -0.4f, -0.8f, 0.2f, 0.3f, 0.6f}).view({3, 2});
  at::Tensor mix    = hidden_mix(console, x, hidden);
  Fitter fitter(console, x, mix, kRate, small_options(150));
  double before = fitter.evaluate().total.item<double>();
  std::vector<FitProgress> seen;
  fitter.run([&](const FitProgress& p) { seen.push_back(p); });
  double after = fitter.evaluate().total.item<double>();
  EXPECT_LT(after, before / 20) << "before " << before << ", after " << after;
  EXPECT_TRUE(
      at::allclose(fitter.parameters().at("gain_pan").at("log_gain").detach(), hidden, 0, 0.05))
      << fitter.parameters().at("gain_pan").at("log_gain") << hidden;
  ASSERT_EQ(seen.size(), 150u);
  EXPECT_EQ(seen.back().step, 150);
  EXPECT_GT(seen.back().steps_per_second, 0);
  EXPECT_EQ(seen.back().eta_seconds, 0);
  EXPECT_GT(seen.front().eta_seconds, 0);
  EXPECT_EQ(fitter.history().size(), 150u);
  EXPECT_GT(fitter.history().front().gradient_norm, 0);
  EXPECT_LT(fitter.history().back().match_loss, fitter.history().front().match_loss);
}

TEST(Fit, CurvaturePreconditioningHasTheSameLossAndGradientAndFits) {
  Graph console      = gain_console();
  at::Tensor x       = tracks(3);
  at::Tensor hidden  = at::tensor({0.5f, -0.4f, -0.8f, 0.2f, 0.3f, 0.6f}).view({3, 2});
  at::Tensor mix     = hidden_mix(console, x, hidden);
  FitOptions options = small_options(60);
  Fitter plain(console, x, mix, kRate, options);
  options.hessian_preconditioning = true;
  Fitter curved(console, x, mix, kRate, options);
  // The first step: same crop, same parameters, so the same loss and gradient (computed
  // forward over reverse in one, by plain backward in the other).
  FitRecord a = plain.step(), b = curved.step();
  EXPECT_NEAR(a.loss, b.loss, 1e-6 * a.loss);
  EXPECT_NEAR(a.gradient_norm, b.gradient_norm, 1e-5 * a.gradient_norm);
  double before = curved.evaluate().total.item<double>();
  curved.run();
  double after = curved.evaluate().total.item<double>();
  // It fits, if slower than AdamW at the same learning rate (docs/fitting.md, "Curvature").
  EXPECT_LT(after, 0.75 * before) << "before " << before << ", after " << after;
  for (const auto& r : curved.history()) EXPECT_FALSE(r.skipped);
}

TEST(Fit, FitsConsolesOfFiltersAndEqualizers) {
  // A console chained by letters: parametric EQ, graphic EQ, low-pass, gain/pan; the target
  // mixed by the same console with musical settings.
  ConsoleOptions options;
  options.n_tracks      = 3;
  options.chain         = chain_from_letters("qGlg");
  Graph console         = build_console(options, registry_node_types()).graph;
  Processors processors = make_processors(console.types(), {kRate});
  at::Tensor x          = tracks(3);
  Parameters hidden     = musical_parameters(console, processors, kRate, 3);
  at::Tensor mix = render(make_render_plan(to_tensor(console)), processors, hidden, x).outputs[0];
  Fitter fitter(console, x, mix, kRate, small_options(80));
  double before = fitter.evaluate().total.item<double>();
  fitter.run();
  double after = fitter.evaluate().total.item<double>();
  EXPECT_LT(after, before / 3) << "before " << before << ", after " << after;
  for (const auto& [type, values] : fitter.parameters())
    for (const auto& [name, value] : values.named())
      EXPECT_TRUE(value.isfinite().all().item<bool>()) << type << "." << name;
}

TEST(Fit, RecoversAHiddenSidechain) {
  // A hidden console ducks the bass by the drums. The same console with a sidechain compressor,
  // fitted from fresh settings, must reach a clearly lower loss than one without it.
  Multitrack song = synthesize_multitrack(kRate, 6.0, 3);
  at::Tensor x    = song.tracks.expand({song.tracks.size(0), 2, song.tracks.size(2)}).contiguous();
  auto console    = [&](bool sidechain) {
    ConsoleOptions options;
    options.n_tracks    = x.size(0);
    options.track_names = song.names;
    options.chain       = {"gain_pan"};
    if (sidechain) options.sidechains = {{1, 0, "sidechain_compressor"}};  // bass keyed by drums
    return build_console(options, registry_node_types()).graph;
  };
  ASSERT_EQ(song.names[0], "drums");
  ASSERT_EQ(song.names[1], "bass");
  Graph hidden_console  = console(true);
  Processors processors = make_processors(hidden_console.types(), {kRate});
  Parameters hidden     = musical_parameters(hidden_console, processors, kRate, 5);
  auto set_physical     = [&](const std::string& name, double value) {
    for (const auto& spec : processors.at("sidechain_compressor")->parameter_specs())
      if (spec.physical_name == name)
        hidden["sidechain_compressor"][spec.name] =
            spec.to_raw(at::full({1, 1}, value, at::kDouble)).to(at::kFloat);
  };
  set_physical("threshold_db", -40);  // deep ducking: about 10 dB on every kick
  set_physical("ratio", 10);
  at::Tensor mix =
      render(make_render_plan(to_tensor(hidden_console)), processors, hidden, x).outputs[0];
  FitOptions options   = small_options(400);
  options.crop_seconds = 2.0;
  options.skip_seconds = 0.25;
  std::map<bool, double> loss;
  for (bool sidechain : {true, false}) {
    Fitter fitter(console(sidechain), x, mix, kRate, options);
    fitter.run();
    loss[sidechain] = fitter.evaluate().total.item<double>();
  }
  std::cout << "loss with the sidechain " << loss[true] << ", without " << loss[false] << "\n";
  EXPECT_LT(loss[true], 0.5 * loss[false]);
}

TEST(Fit, CheckpointsResumeExactly) {
  testing::TempDir dir;
  Graph console  = gain_console();
  at::Tensor x   = tracks(2);
  at::Tensor mix = hidden_mix(console, x, at::full({3, 2}, 0.3f));
  Fitter straight(console, x, mix, kRate, small_options(20));
  straight.run();
  Fitter first(console, x, mix, kRate, small_options(10));
  first.run();
  first.save_checkpoint(dir.file("c.safetensors"));
  Fitter resumed(console, x, mix, kRate, small_options(20));
  resumed.load_checkpoint(dir.file("c.safetensors"));
  EXPECT_EQ(resumed.steps_done(), 10);
  resumed.run();
  EXPECT_TRUE(at::equal(resumed.parameters().at("gain_pan").at("log_gain"),
                        straight.parameters().at("gain_pan").at("log_gain")));
  EXPECT_EQ(resumed.history().back().loss, straight.history().back().loss);
  // The whole history survives, gradient norms included (loss.csv is the same either way).
  ASSERT_EQ(resumed.history().size(), straight.history().size());
  for (size_t i = 0; i < straight.history().size(); ++i) {
    EXPECT_EQ(resumed.history()[i].gradient_norm, straight.history()[i].gradient_norm) << i;
    EXPECT_GT(resumed.history()[i].gradient_norm, 0) << i;
  }
  // The checkpoint records every setting as fit.json does (fit_settings.h); 20 steps where it
  // was made with 10 still resume.
  EXPECT_EQ(
      nlohmann::json::parse(load_safetensors(dir.file("c.safetensors")).metadata.at("settings")),
      fit_settings_json(first.options()));
  Fitter fewer(console, x, mix, kRate, small_options(5));  // fewer steps than it holds
  EXPECT_GRAFX_ERROR(fewer.load_checkpoint(dir.file("c.safetensors")), "grafx.fit.checkpoint",
                     "holds 10 steps, more than the 5 asked for; ask for at least 10");

  FitOptions other_rate   = small_options(20);
  other_rate.optimizer.lr = 0.01;
  Fitter mismatched(console, x, mix, kRate, other_rate);
  EXPECT_GRAFX_ERROR(mismatched.load_checkpoint(dir.file("c.safetensors")), "grafx.fit.checkpoint",
                     "made with lr 0.05, but this fit uses 0.01");
  Fitter other_sample_rate(console, x, mix, kRate * 2, small_options(20));
  EXPECT_GRAFX_ERROR(other_sample_rate.load_checkpoint(dir.file("c.safetensors")),
                     "grafx.fit.checkpoint", "made with sample_rate 8000, but this fit uses 16000");
  Fitter other_data(console, x * 0.5, mix, kRate, small_options(20));
  EXPECT_GRAFX_ERROR(other_data.load_checkpoint(dir.file("c.safetensors")), "grafx.fit.checkpoint",
                     "made for other data");
  ConsoleOptions bigger;
  bigger.n_tracks = 3;
  bigger.chain    = {"gain_pan", "stereo_imager"};
  Fitter other_graph(build_console(bigger, registry_node_types()).graph, x, mix, kRate,
                     small_options(20));
  EXPECT_GRAFX_ERROR(other_graph.load_checkpoint(dir.file("c.safetensors")), "grafx.fit.checkpoint",
                     "made for another graph");
}

// A fit moved to a device (here the CPU again, the one a test machine surely has) keeps its
// optimizer's moments and step count: it continues as if it had not moved. Without them the
// next steps differ.
TEST(Fit, AMovedFitTakesTheStepsItWouldHaveTaken) {
  Graph console  = gain_console();
  at::Tensor x   = tracks(2);
  at::Tensor mix = hidden_mix(console, x, at::full({3, 2}, 0.3f));
  Fitter straight(console, x, mix, kRate, small_options(20)),
      moved(console, x, mix, kRate, small_options(20));
  for (int i = 0; i < 20; ++i) straight.step();
  for (int i = 0; i < 10; ++i) moved.step();
  moved.move_to(at::kCPU);
  EXPECT_EQ(moved.optimizer().n_steps(), 10);
  for (int i = 0; i < 10; ++i) moved.step();
  EXPECT_TRUE(at::equal(moved.parameters().at("gain_pan").at("log_gain"),
                        straight.parameters().at("gain_pan").at("log_gain")));
  EXPECT_EQ(moved.history().back().loss, straight.history().back().loss);
  // Its whole-song evaluation comes back on the CPU, as a report reads it.
  EXPECT_TRUE(moved.evaluate().total.device().is_cpu());
}

// Checkpoints of version 2 kept the settings that change the steps under keys of their own (at
// their defaults left out): they resume under version 3, and a changed setting is named as the
// table names it.
TEST(Fit, CheckpointsOfVersion2StillResume) {
  testing::TempDir dir;
  Graph console                 = gain_console();
  at::Tensor x                  = tracks(2);
  at::Tensor mix                = hidden_mix(console, x, at::full({3, 2}, 0.3f));
  FitOptions options            = small_options(6);
  options.max_gradient_norm     = 5;
  options.reset_optimizer_every = 3;
  options.lr_schedule           = {2, 0.5};
  Fitter first(console, x, mix, kRate, options);
  first.run();
  first.save_checkpoint(dir.file("c.safetensors"));
  SafetensorsFile file = load_safetensors(dir.file("c.safetensors"));
  EXPECT_EQ(file.metadata.at("version"), "3");
  // The same checkpoint as version 2 wrote it.
  auto metadata = file.metadata;
  metadata.erase("settings");
  metadata["version"]     = "2";
  metadata["seed"]        = "0";
  metadata["lr"]          = "0.05";
  metadata["clip"]        = "5";
  metadata["reset_every"] = "3";
  metadata["lr_schedule"] = "2 warm-up steps, final 0.5";
  save_safetensors(dir.file("v2.safetensors"), file.tensors, metadata, true);
  options.n_steps = 8;
  Fitter resumed(console, x, mix, kRate, options);
  resumed.load_checkpoint(dir.file("v2.safetensors"));
  EXPECT_EQ(resumed.steps_done(), 6);

  FitOptions clipped_less        = options;
  clipped_less.max_gradient_norm = 1;
  Fitter changed(console, x, mix, kRate, clipped_less);
  EXPECT_GRAFX_ERROR(changed.load_checkpoint(dir.file("v2.safetensors")), "grafx.fit.checkpoint",
                     "made with max_gradient_norm 5, but this fit uses 1");
  // Before schedules, version 2 wrote none: constant.
  metadata.erase("lr_schedule");
  save_safetensors(dir.file("v2.safetensors"), file.tensors, metadata, true);
  Fitter scheduled(console, x, mix, kRate, options);
  EXPECT_GRAFX_ERROR(scheduled.load_checkpoint(dir.file("v2.safetensors")), "grafx.fit.checkpoint",
                     "made with warmup_steps 0, but this fit uses 2");
  // Version 3 compares the table's settings: one version 2 never recorded is compared too.
  FitOptions decayed             = options;
  decayed.optimizer.weight_decay = 0.5;
  Fitter other_decay(console, x, mix, kRate, decayed);
  EXPECT_GRAFX_ERROR(other_decay.load_checkpoint(dir.file("c.safetensors")), "grafx.fit.checkpoint",
                     "made with weight_decay");
  // A newer version, and settings that are not JSON, are refused by name.
  metadata            = file.metadata;
  metadata["version"] = "4";
  save_safetensors(dir.file("v4.safetensors"), file.tensors, metadata, true);
  EXPECT_GRAFX_ERROR(resumed.load_checkpoint(dir.file("v4.safetensors")), "grafx.fit.checkpoint",
                     "a checkpoint of version 4, from a newer grafx");
  metadata["version"]  = "3";
  metadata["settings"] = "{not json";
  save_safetensors(dir.file("v4.safetensors"), file.tensors, metadata, true);
  EXPECT_GRAFX_ERROR(resumed.load_checkpoint(dir.file("v4.safetensors")), "grafx.fit.checkpoint",
                     "its recorded settings are unreadable");
}

// The format alone (fit/checkpoint.h): what write_checkpoint writes reads back as written, and
// version 1's history of five columns (no gradient norms) reads with norms unknown (NaN).
TEST(Fit, CheckpointFormatReadsBackAndMigratesVersion1) {
  testing::TempDir dir;
  Checkpoint written;
  written.parameters["gain_pan.log_gain"] = at::arange(6, at::kFloat).view({3, 2});
  written.optimizer["step"]               = at::full({1}, 4, at::kLong);
  written.history     = {{1, 0.5, 0.4, 0.1, false, 2.0}, {2, std::nan(""), 0, 0, true, 0.0}};
  written.curves_live = true;
  written.identity    = {{"graph", "g1"}, {"sample_rate", "16000"}};
  written.settings    = {{"lr", 0.05}};
  write_checkpoint(dir.file("c.safetensors"), written);
  const Checkpoint read = read_checkpoint(dir.file("c.safetensors"));
  EXPECT_TRUE(at::equal(read.parameters.at("gain_pan.log_gain"),
                        written.parameters.at("gain_pan.log_gain")));
  EXPECT_TRUE(at::equal(read.optimizer.at("step"), written.optimizer.at("step")));
  ASSERT_EQ(read.history.size(), 2u);
  EXPECT_EQ(read.history[0].gradient_norm, 2.0);
  EXPECT_EQ(read.history[0].match_loss, 0.4);
  EXPECT_TRUE(read.history[1].skipped && std::isnan(read.history[1].loss));
  EXPECT_EQ(read.curves_live, std::optional<bool>(true));
  EXPECT_EQ(read.identity, written.identity);  // format, version and settings are the format's
  EXPECT_EQ(read.settings, written.settings);

  SafetensorsFile file    = load_safetensors(dir.file("c.safetensors"));
  file.tensors["history"] = file.tensors["history"].narrow(1, 0, 5).contiguous();
  file.metadata.erase("settings");
  file.metadata["version"] = "1";
  file.metadata["lr"]      = "0.05";
  save_safetensors(dir.file("v1.safetensors"), file.tensors, file.metadata, true);
  const Checkpoint old = read_checkpoint(dir.file("v1.safetensors"));
  ASSERT_EQ(old.history.size(), 2u);
  EXPECT_TRUE(std::isnan(old.history[0].gradient_norm));
  EXPECT_EQ(old.history[0].loss, 0.5);
  EXPECT_EQ(old.settings.at("lr"), 0.05);
  EXPECT_EQ(old.identity, written.identity);  // the settings' keys moved into the settings
  file.tensors.erase("history");
  save_safetensors(dir.file("v1.safetensors"), file.tensors, file.metadata, true);
  EXPECT_GRAFX_ERROR(read_checkpoint(dir.file("v1.safetensors")), "grafx.fit.checkpoint",
                     "lacks the loss history");
}

TEST(Fit, NonFiniteStepsAreSkippedThenStop) {
  Graph console                = gain_console();
  at::Tensor x                 = tracks(2);
  FitOptions options           = small_options(10);
  options.max_non_finite_steps = 3;
  Parameters overflowing       = {{"gain_pan", {{"log_gain", at::full({3, 2}, 200.0f)}}}};
  Fitter fitter(console, x, x.sum(0), kRate, options, overflowing);
  EXPECT_GRAFX_ERROR(fitter.run(), "grafx.fit.diverged", "not finite for 3 steps in a row");
  ASSERT_EQ(fitter.history().size(), 3u);
  EXPECT_TRUE(fitter.history().back().skipped);
  EXPECT_TRUE(std::isnan(fitter.history().back().loss));
  EXPECT_EQ(fitter.optimizer().n_steps(), 0) << "no update was made";
  // Its outputs are refused rather than written with non-finite audio.
  testing::TempDir dir;
  EXPECT_GRAFX_ERROR(write_fit_outputs(fitter, FitSummary{}, dir.path(), false),
                     "grafx.fit.diverged", "renders non-finite samples");
  EXPECT_FALSE(testing::file_exists(dir.file("mix.wav")));
}

TEST(Fit, TakesOneStepAtATime) {
  // Two callers stepping one fitter (two threads, or a progress callback that steps) get a coded
  // error, not autograd's; the step that was running completes.
  Graph console = gain_console();
  at::Tensor x  = tracks(2);
  Fitter fitter(console, x, x.sum(0), kRate, small_options(3));
  EXPECT_GRAFX_ERROR(fitter.run([&](const FitProgress&) { fitter.step(); }), "grafx.fit.busy",
                     "one step at a time");
  EXPECT_EQ(fitter.steps_done(), 1);
  fitter.run();
  EXPECT_EQ(fitter.steps_done(), 3);
}

int64_t occurrences(const std::string& text, const std::string& part) {
  int64_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(Fit, ReportSetsEachSettingBesideTheReference) {
  ConsoleOptions options;
  options.n_tracks    = 3;
  options.chain       = {"eq", "gain_pan"};
  options.dry_wet     = true;
  options.track_names = {"kick", "bass", "keys"};
  Graph console       = build_console(options, registry_node_types()).graph;
  at::Tensor x        = tracks(2);
  Fitter fitter(console, x, x.sum(0), kRate, small_options(2));
  fitter.run();
  // The reference: the fitted settings with every gain 6.02 dB lower and every EQ 6.02 dB
  // higher, so the errors are known: +6.0 dB on both channels, an RMS of 6.0 dB for the EQs.
  FitSummary summary;
  summary.title       = "report test";
  summary.track_names = options.track_names;
  testing::TempDir dir;  // the players link the files relative to the folder
  summary.target_file     = dir.file("song.wav");
  summary.track_files     = {dir.file("kick.wav"), dir.file("bass.wav"), dir.file("keys.wav")};
  summary.reference       = cloned_parameters(fitter.parameters());
  summary.reference_label = "truth";
  summary.after           = fitter.evaluate_parts(fitter.render_mix());
  summary.before          = summary.after.terms;
  at::Tensor& gains       = summary.reference.at("gain_pan").at("log_gain");
  gains.sub_(std::log(2.0));
  summary.reference.at("eq").at("log_magnitude").add_(std::log(2.0));
  write_fit_outputs(fitter, summary, dir.path(), false);
  const std::string html = testing::read_file(dir.file("report.html"));
  EXPECT_EQ(occurrences(html, "<table class=\"settings\">"), 3) << "one table per track";
  EXPECT_EQ(occurrences(html, "<th>truth</th>"), 3);
  EXPECT_EQ(occurrences(html, ">+6.0 / +6.0<"), 3) << "gain_pan's error on each track";
  EXPECT_EQ(occurrences(html, ">RMS 6.0<"), 3) << "the EQs' error";
  EXPECT_EQ(occurrences(html, ">gain_db<"), 6) << "eq and gain_pan on each track";
  EXPECT_EQ(occurrences(html, ">wet<"), 6);
  EXPECT_FALSE(testing::contains(html, "[1024 values")) << "no vector dumped as text";
  // An EQ curve per track, fitted and reference, each picture with ids of its own.
  EXPECT_EQ(occurrences(html, ">fitted</text>"), 3);
  EXPECT_EQ(occurrences(html, ">truth</text>"), 3);
  EXPECT_EQ(occurrences(html, "stroke-dasharray"), 6) << "the reference dashed, and its legend";
  for (const char* part :
       {"src=\"mix.wav\"", "src=\"song.wav\"", "src=\"kick.wav\"", "src=\"keys.wav\"", ">time (s)<",
        ">frequency (Hz)<", ">fitted − target (dB)<", "class=\"colour-bar\"", "class=\"legend\"",
        "<a href=\"parameters.json\">"})
    EXPECT_TRUE(testing::contains(html, part)) << part;
  EXPECT_EQ(occurrences(html, "<audio "), 5) << "the target, the fitted mix and three tracks";
  EXPECT_EQ(occurrences(html, "class=\"colour-bar\""), 3);
  for (const char* id :
       {"node3-area", "node5-area", "node7-area", "loss-area", "spectrogram-target"})
    EXPECT_EQ(occurrences(html, std::string("id=\"") + id), 1) << id;

  // A reference of another graph is refused before anything is written.
  summary.reference.erase("eq");
  testing::TempDir other;
  EXPECT_GRAFX_ERROR(write_fit_outputs(fitter, summary, other.path(), false),
                     "grafx.render.parameters", "missing parameters for type \"eq\"");
  EXPECT_FALSE(testing::file_exists(other.file("mix.wav")));
}

TEST(Fit, OptimizerResetsAndGradientClipping) {
  Graph console                 = gain_console();
  at::Tensor x                  = tracks(2);
  FitOptions options            = small_options(7);
  options.reset_optimizer_every = 5;
  Fitter fitter(console, x, x.sum(0), kRate, options);
  fitter.run();
  EXPECT_EQ(fitter.optimizer().n_steps(), 2);

  at::Tensor a = at::zeros({2}).requires_grad_(true), b = at::zeros({1}).requires_grad_(true);
  Parameters p = {{"t", {{"a", a}, {"b", b}}}};
  (a * at::tensor({3.0f, 0.0f})).sum().backward();
  (b * 4.0f).sum().backward();
  EXPECT_NEAR(clip_gradient_norm(p, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-6);
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-6);
  EXPECT_NEAR(clip_gradient_norm(p, 0.0), 1.0, 1e-6) << "0: measure only";
}

TEST(Fit, LearningRateScheduleWarmsUpThenDecaysByCosine) {
  LearningRateSchedule schedule{/*warmup_steps=*/10, /*final_ratio=*/0.2};
  EXPECT_DOUBLE_EQ(schedule.factor(0, 0.0), 0.1);  // warm-up from lr/10
  EXPECT_DOUBLE_EQ(schedule.factor(5, 0.0), 0.1 + 0.9 * 0.5);
  EXPECT_DOUBLE_EQ(schedule.factor(10, 0.0), 1.0);
  EXPECT_NEAR(schedule.factor(50, 0.5), 0.2 + 0.8 * 0.5, 1e-15);  // half way down the cosine
  EXPECT_NEAR(schedule.factor(99, 1.0), 0.2, 1e-15);
  EXPECT_DOUBLE_EQ(LearningRateSchedule().factor(7, 0.3), 1.0) << "the default is constant";
  // The fitter steps with lr × factor: seen in its progress.
  Graph console       = gain_console();
  at::Tensor x        = tracks(2);
  at::Tensor mix      = hidden_mix(console, x, at::zeros({3, 2}));
  FitOptions options  = small_options(20);
  options.lr_schedule = {4, 0.5};
  Fitter fitter(console, x, mix, kRate, options);
  std::vector<double> rates;
  fitter.run([&](const FitProgress& p) { rates.push_back(p.learning_rate); });
  ASSERT_EQ(rates.size(), 20u);
  for (int64_t s = 0; s < 20; ++s)
    EXPECT_NEAR(rates[size_t(s)], 0.05 * options.lr_schedule.factor(s, double(s) / 20), 1e-12) << s;
}

TEST(Fit, SeveralCropsPerStepAreOneBatchWhoseLossIsTheirMean) {
  Graph console          = gain_console();
  at::Tensor x           = tracks(4);
  at::Tensor mix         = hidden_mix(console, x, at::full({3, 2}, 0.3f));
  FitOptions options     = small_options(1);
  options.crops_per_step = 3;
  Fitter batched(console, x, mix, kRate, options);
  Fitter single(console, x, mix, kRate, small_options(1));
  EXPECT_EQ(batched.crop_start(0, 0), single.crop_start(0, 0)) << "crop 0 as with one crop";
  std::set<int64_t> starts;
  for (int64_t step = 0; step < 4; ++step)
    for (int64_t b = 0; b < 3; ++b) starts.insert(batched.crop_start(step, b));
  EXPECT_GE(starts.size(), 6u) << "crops differ";
  // The loss of each crop rendered on its own (from silence before the song where it starts
  // there), averaged.
  const int64_t crop          = int64_t(1.0 * kRate);
  MixLossOptions loss_options = batched.options().loss;
  double expected             = 0;
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t start = batched.crop_start(0, b);
    at::Tensor out      = render(make_render_plan(to_tensor(console)), batched.processors(),
                                 batched.detached_parameters(), crop_of(x, start, crop))
                         .outputs[0];
    expected += MixLoss(loss_options)(out.unsqueeze(0), crop_of(mix, start, crop).unsqueeze(0))
                    .item<double>() /
                3;
  }
  FitRecord record = batched.step();
  EXPECT_NEAR(record.match_loss, expected, 1e-6 * expected);
  options.crops_per_step = 0;
  EXPECT_GRAFX_ERROR(Fitter(console, x, mix, kRate, options), "grafx.fit.options",
                     "a whole number of crops per step of at least 1");
}

TEST(Fit, CropsCompareEverySecondOfTheSongAsOften) {
  // The whole-song loss weighs every second alike, so the crops' compared parts (after the
  // warm-up) should cover the song evenly on average, its first and last seconds too: counted
  // here over 20,000 crops of 1 s (0.1 s warm-up) on a 6-s song, per tenth of a second.
  Graph console  = gain_console();
  at::Tensor x   = tracks(6);
  at::Tensor mix = hidden_mix(console, x, at::zeros({3, 2}));
  Fitter fitter(console, x, mix, kRate, small_options(1));
  const int64_t length = x.size(2), crop = kRate, skip = kRate / 10, bin = kRate / 10;
  const int64_t grid = MixLoss().frame_alignment();
  std::vector<double> visits(size_t(length / bin), 0.0);
  const int64_t n_crops = 20000;
  int64_t off_grid = 0, before_the_song = 0;
  for (int64_t step = 0; step < n_crops; ++step) {
    const int64_t start = fitter.crop_start(step, 0);
    ASSERT_GE(start + skip, 0) << "the compared part starts within the song";
    ASSERT_LE(start + crop, length) << "and ends within it";
    before_the_song += start < 0;
    if ((start + skip) % grid != 0) {
      ++off_grid;
      EXPECT_EQ(start + crop, length) << "only a crop that ends with the song is off the grid";
    }
    for (int64_t sample = start + skip; sample < start + crop; ++sample)
      visits[size_t(sample / bin)] += 1.0 / double(bin);
  }
  // A uniform centre moved inside: on average every bin is compared (crop − skip)/L of the time.
  const double even   = double(n_crops) * double(crop - skip) / double(length);
  double first_second = 0, last_second = 0, middle = 0;
  for (size_t b = 0; b < visits.size(); ++b) {
    EXPECT_GT(visits[b], 0.4 * even) << "bin " << b;
    EXPECT_LT(visits[b], 1.6 * even) << "bin " << b;
    (b < 10 ? first_second : b >= visits.size() - 10 ? last_second : middle) += visits[b];
  }
  EXPECT_NEAR(first_second / 10, even, 0.1 * even) << "the first second as often as the rest";
  EXPECT_NEAR(last_second / 10, even, 0.1 * even) << "the last second too";
  EXPECT_NEAR(middle / double(visits.size() - 20), even, 0.05 * even);
  EXPECT_GT(before_the_song, n_crops / 20) << "crops at the start warm up before the song";
  EXPECT_GT(off_grid, n_crops / 20) << "crops that end with the song";
  EXPECT_LT(off_grid, n_crops / 5);
}

TEST(Fit, ACropAtTheSongsStartIsTheSongsOwnStart) {
  // A crop warms up on the silence before the song: its render and loss equal those of the
  // whole song's render (from its first sample, as a whole-song render starts) over the crop.
  Graph console = gain_console();
  at::Tensor x  = tracks(3);
  ConsoleOptions options;
  options.n_tracks = 3;
  options.chain    = {"compressor", "gain_pan"};  // memory: an envelope that warms up
  Graph dynamic    = build_console(options, registry_node_types()).graph;
  at::Tensor mix   = hidden_mix(console, x, at::full({3, 2}, 0.2f));
  Fitter fitter(dynamic, x, mix, kRate, small_options(1000));
  int64_t step = 0;
  while (fitter.crop_start(step, 0) >= 0) ASSERT_LT(++step, 1000);
  const int64_t start = fitter.crop_start(step, 0), crop = kRate, skip = kRate / 10;
  ASSERT_EQ(start, -skip) << "the compared part starts with the song";
  const Parameters parameters = fitter.detached_parameters();
  const RenderPlan plan       = make_render_plan(to_tensor(dynamic));
  const at::Tensor whole      = render(plan, fitter.processors(), parameters, x).outputs[0];
  const at::Tensor cropped =
      render(plan, fitter.processors(), parameters, crop_of(x, start, crop)).outputs[0];
  EXPECT_LE((cropped.narrow(-1, skip, crop - skip) - whole.narrow(-1, 0, crop - skip))
                .abs()
                .max()
                .item<double>(),
            1e-6 * whole.abs().max().item<double>());
  // The step's loss at that crop: the song's own start against the mix's.
  for (int64_t s = 0; s < step; ++s) fitter.step();
  const Parameters now  = fitter.detached_parameters();
  const at::Tensor out  = render(plan, fitter.processors(), now, x).outputs[0];
  const double expected = MixLoss(fitter.options().loss)(crop_of(out, start, crop).unsqueeze(0),
                                                         crop_of(mix, start, crop).unsqueeze(0))
                              .item<double>();
  EXPECT_NEAR(fitter.step().match_loss, expected, 1e-5 * expected);
}

TEST(Fit, ATimeBudgetStopsTheFitOnTime) {
  Graph console               = gain_console();
  at::Tensor x                = tracks(3);
  at::Tensor mix              = hidden_mix(console, x, at::zeros({3, 2}));
  FitOptions options          = small_options(1000000);
  options.time_budget_seconds = 1.0;
  Fitter fitter(console, x, mix, kRate, options);
  using clock    = std::chrono::steady_clock;
  auto start     = clock::now();
  double slowest = 0;
  auto last      = start;
  fitter.run([&](const FitProgress&) {
    auto now = clock::now();
    slowest  = std::max(slowest, std::chrono::duration<double>(now - last).count());
    last     = now;
  });
  const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
  EXPECT_GT(fitter.steps_done(), 0);
  EXPECT_LT(fitter.steps_done(), 1000000);
  EXPECT_GE(elapsed, 1.0);
  EXPECT_LE(elapsed, 1.0 + slowest + 0.5) << "at most one step past the budget";
  options.time_budget_seconds = -1;
  EXPECT_GRAFX_ERROR(Fitter(console, x, mix, kRate, options), "grafx.fit.options",
                     "a finite time budget of at least 0 s");
}

TEST(Fit, StepsProbeFewerThreadsAndTheCountComesBack) {
  Graph console    = gain_console();
  at::Tensor x     = tracks(3);
  at::Tensor mix   = hidden_mix(console, x, at::zeros({3, 2}));
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  std::vector<int> used;
  for (bool adapt : {true, false}) {
    FitOptions options    = small_options(20);
    options.adapt_threads = adapt;
    Fitter fitter(console, x, mix, kRate, options);
    used.clear();
    fitter.run([&](const FitProgress& p) {
      used.push_back(p.threads);
      EXPECT_EQ(at::get_num_threads(), p.threads);
    });
    EXPECT_EQ(at::get_num_threads(), 2) << "run restores the caller's count";
    ASSERT_EQ(used.size(), 20u);
    // The 16th step (index 15) is the first probe of one thread; the rest run on two unless the
    // probe was faster by the margin (then the tuner stays on one until a probe of two wins).
    EXPECT_EQ(used[15], adapt ? 1 : 2);
    EXPECT_EQ(used[0], 2);
    if (!adapt) {
      EXPECT_EQ(std::count(used.begin(), used.end(), 2), 20);
    }
  }
  at::set_num_threads(before);
}

TEST(Fit, RefusesSettingsThatCannotWork) {
  Graph console = gain_console();
  at::Tensor x  = tracks(2);
  auto refused  = [&](std::function<void(FitOptions&)> change, const std::string& text) {
    FitOptions options = small_options(2);
    change(options);
    EXPECT_GRAFX_ERROR(Fitter(console, x, x.sum(0), kRate, options), "grafx.fit.options", text);
  };
  refused([](FitOptions& o) { o.optimizer.lr = NAN; }, "a finite learning rate above 0");
  refused([](FitOptions& o) { o.optimizer.lr = 0; }, "a finite learning rate above 0");
  // Issue 29: 1e100 overflowed float32 inside LibTorch, 1e308 made NaN parameters.
  refused([](FitOptions& o) { o.optimizer.lr = 1e100; },
          "expected a finite learning rate above 0 and at most 10, but got 1e+100");
  refused([](FitOptions& o) { o.optimizer.lr = 1e308; }, "and at most 10, but got 1e+308");
  refused([](FitOptions& o) { o.learning_rates["eq"] = 11; },
          "expected a finite learning rate of at least 0 for \"eq\" and at most 10, but got 11");
  refused([](FitOptions& o) { o.crop_seconds = INFINITY; }, "a finite crop length");
  refused([](FitOptions& o) { o.skip_seconds = -1; }, "a finite warm-up of at least 0 s");
  refused([](FitOptions& o) { o.max_gradient_norm = NAN; }, "gradient-norm limit");
  refused([](FitOptions& o) { o.reset_optimizer_every = -2; }, "optimizer reset interval");
  // A huge crop is the whole song, not an overflowing sample count.
  FitOptions whole   = small_options(1);
  whole.crop_seconds = 1e300;
  EXPECT_NEAR(Fitter(console, x, x.sum(0), kRate, whole).options().crop_seconds, 2.0, 1e-9);
  ConsoleOptions mixes;  // nothing to fit
  mixes.n_tracks = 2;
  mixes.chain    = {"mix"};
  EXPECT_GRAFX_ERROR(Fitter(build_console(mixes, registry_node_types()).graph, x.narrow(0, 0, 2),
                            x.sum(0), kRate, small_options(2)),
                     "grafx.fit.options", "the graph has nothing to fit");
}

TEST(Fit, RefusesDataThatDoesNotFit) {
  Graph console = gain_console();
  at::Tensor x  = tracks(2);
  EXPECT_GRAFX_ERROR(Fitter(console, x.narrow(0, 0, 2), x.sum(0), kRate, small_options(1)),
                     "grafx.fit.data", "expected 3 tracks (one per `in` node), but got 2");
  EXPECT_GRAFX_ERROR(Fitter(console, x, x.sum(0).narrow(1, 0, 100), kRate, small_options(1)),
                     "grafx.fit.data", "expected a mix of shape C×L");
  EXPECT_GRAFX_ERROR(
      Fitter(console, x.narrow(2, 0, 3000), x.sum(0).narrow(1, 0, 3000), kRate, small_options(1)),
      "grafx.fit.data", "shorter than the loss's largest FFT (4096)");
  at::Tensor bad = x.clone();
  bad[0][0][5]   = NAN;
  EXPECT_GRAFX_ERROR(Fitter(console, bad, x.sum(0), kRate, small_options(1)), "grafx.fit.data",
                     "non-finite");
}

TEST(Fit, GainStagingRegularisesTheTypesWhoseDescriptorsAskForIt) {
  ConsoleOptions options;
  options.n_tracks = 3;
  options.chain    = {"eq", "gain_pan"};
  Graph console    = build_console(options, registry_node_types()).graph;
  ASSERT_TRUE(processor_descriptor("eq").gain_staging);
  ASSERT_FALSE(processor_descriptor("gain_pan").gain_staging);
  at::Tensor x = tracks(2);
  // Every EQ a flat gain of 3 (its FIR is 3·δ) and every gain/pan a gain of 2: only the EQs'
  // |log energy out − log energy in| = 2·ln 3 counts, weighted 1e-3 (the paper's).
  Parameters initial = {{"eq", {{"log_magnitude", at::full({3, 1024}, std::log(3.0f))}}},
                        {"gain_pan", {{"log_gain", at::full({3, 2}, std::log(2.0f))}}}};
  Fitter fitter(console, x, x.sum(0), kRate, small_options(1), initial);
  FitRecord record = fitter.step();
  EXPECT_NEAR(record.regularization, 1e-3 * 3 * 2 * std::log(3.0), 1e-6);
}

}  // namespace
}  // namespace grafx
