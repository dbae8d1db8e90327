// Fitting automation: a static part first, then curves that start where it left the parameters;
// on a mix whose hidden console fades and rides its tracks, the curves find the moves and the
// whole-song loss falls far below the static fit's, for the same number of steps.

#include <grafx/fit/fit.h>
#include <grafx/graph/console.h>
#include <grafx/render/parameters.h>

#include "fit/fit_test_support.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr int64_t kRate    = 8000;
constexpr int64_t kSeconds = 6;

/// Three tracks of noise with different rhythms.
at::Tensor tracks() {
  at::manual_seed(17);
  at::Tensor noise   = at::randn({3, 1, kSeconds * kRate});
  at::Tensor t       = at::arange(kSeconds * kRate, at::kFloat) / kRate;
  at::Tensor rhythms = at::stack({(at::sin(t * 7.0) + 1.2) / 2, (at::sin(t * 11.0 + 1) + 1.2) / 2,
                                  (at::cos(t * 4.0) + 1.2) / 2});
  return (noise * rhythms.unsqueeze(1) * 0.3).expand({3, 2, kSeconds * kRate}).contiguous();
}

Graph gain_console() {
  ConsoleOptions options;
  options.n_tracks = 3;
  options.chain    = {"gain_pan"};
  return build_console(options, registry_node_types()).graph;
}

/// The hidden moves in dB at time t (s): track 0 fades out by 18 dB from 2 to 4 s, track 1
/// rides up 8 dB from 1 to 1.5 s and back down from 3.5 to 4 s, track 2 stays at −3 dB.
double level_db(int64_t track, double t) {
  auto ramp = [](double t, double from, double to) {
    return std::min(1.0, std::max(0.0, (t - from) / (to - from)));
  };
  if (track == 0) return -18 * ramp(t, 2, 4);
  if (track == 1) return -4 + 8 * (ramp(t, 1, 1.5) - ramp(t, 3.5, 4));
  return -3;
}

/// The level of a track's left (channel 0) or right channel: its moves, panned (so that the
/// mix has a side signal to match).
double hidden_db(int64_t track, double t, int64_t channel) {
  const double pan = (channel == 0 ? 1.0 : -1.0) * (track == 0 ? 2.0 : track == 1 ? -3.0 : 1.0);
  return pan + level_db(track, t);
}

/// The mix of a console whose gains follow hidden_db, made with a curve at 20 points per second
/// (its ramps lie on points, so the curve is exact).
at::Tensor hidden_mix(const at::Tensor& x) {
  Graph g = gain_console();
  g.set_automation({20.0, kSeconds * 20 + 1});
  for (NodeId id : g.nodes_of_type("gain_pan")) g.set_automated(id, "log_gain");
  Processors processors = make_processors(g.types(), {kRate});
  Parameters p          = create_parameters(g, processors, {0, at::kFloat, false});
  at::Tensor curve      = at::zeros({3, kSeconds * 20 + 1, 2});
  for (int64_t track = 0; track < 3; ++track)
    for (int64_t i = 0; i <= kSeconds * 20; ++i)
      for (int64_t c = 0; c < 2; ++c)
        curve[track][i][c] = hidden_db(track, double(i) / 20, c) * std::log(10.0) / 20;
  p["gain_pan"][curve_name("log_gain")] = curve;
  RenderOptions options;
  options.time = {kRate, 0};
  return render(make_render_plan(to_tensor(g)), processors, p, x, options).outputs[0];
}

TEST(FitAutomation, CurvesStartFromTheStaticFitAndFindTheMoves) {
  const at::Tensor x   = tracks();
  const at::Tensor mix = hidden_mix(x);
  FitOptions options   = testing::small_options(400);
  Fitter fixed(gain_console(), x, mix, kRate, options);
  fixed.run();
  const double static_loss = fixed.evaluate().total.item<double>();

  options.automation.parameters = {{"gain_pan", {}}};
  options.automation.rate_hz    = 5;
  Fitter automated(gain_console(), x, mix, kRate, options);
  EXPECT_EQ(automated.graph().automation(), (Automation{5.0, kSeconds * 5 + 1}));
  EXPECT_FALSE(automated.curves_live());
  for (int64_t s = 0; s < 200; ++s) automated.step();
  EXPECT_FALSE(automated.curves_live());
  // The static half equals the static fit's first 200 steps.
  Fitter half(gain_console(), x, mix, kRate, options);
  Fitter fixed_half(gain_console(), x, mix, kRate, testing::small_options(400));
  for (int64_t s = 0; s < 200; ++s) fixed_half.step();
  for (int64_t s = 0; s < 200; ++s) half.step();
  EXPECT_TRUE(at::equal(half.parameters().at("gain_pan").at("log_gain"),
                        fixed_half.parameters().at("gain_pan").at("log_gain")));
  automated.step();
  ASSERT_TRUE(automated.curves_live());
  automated.run();
  const double automated_loss = automated.evaluate().total.item<double>();
  EXPECT_LT(automated_loss, static_loss / 3)
      << "static " << static_loss << ", automated " << automated_loss;

  // The curves follow the hidden moves (each channel's level in dB), away from the song's ends
  // where crops rarely reach.
  at::Tensor curve = automated.parameters().at("gain_pan").at(curve_name("log_gain")).detach();
  double worst = 0, total = 0;
  for (int64_t track = 0; track < 3; ++track)
    for (int64_t i = 5; i <= 25; ++i)
      for (int64_t c = 0; c < 2; ++c) {
        const double db = curve[track][i][c].item<double>() * 20 / std::log(10.0);
        worst           = std::max(worst, std::abs(db - hidden_db(track, double(i) / 5, c)));
        total += std::abs(db - hidden_db(track, double(i) / 5, c));
      }
  EXPECT_LT(total / 126, 0.75) << curve;  // 0.36 dB here
  EXPECT_LT(worst, 3.0) << curve;         // 1.5 dB here, at the rides' corners
}

TEST(FitAutomation, CheckpointsResumeBeforeAndAfterTheCurvesStart) {
  const at::Tensor x            = tracks();
  const at::Tensor mix          = hidden_mix(x);
  FitOptions options            = testing::small_options(40);
  options.adapt_threads         = false;
  options.automation.parameters = {{"gain_pan", {}}};
  testing::TempDir dir;
  Fitter whole(gain_console(), x, mix, kRate, options);
  whole.run();
  for (int64_t stop : {10, 30}) {  // the curves start at step 20
    Fitter first(gain_console(), x, mix, kRate, options);
    for (int64_t s = 0; s < stop; ++s) first.step();
    first.save_checkpoint(dir.file("c.safetensors"));
    Fitter resumed(gain_console(), x, mix, kRate, options);
    resumed.load_checkpoint(dir.file("c.safetensors"));
    EXPECT_EQ(resumed.curves_live(), stop > 20) << stop;
    resumed.run();
    for (const auto& [name, p] : whole.parameters().at("gain_pan").named())
      EXPECT_TRUE(at::equal(resumed.parameters().at("gain_pan").at(name), p))
          << stop << " " << name;
  }
}

TEST(FitAutomation, CurvesFromTheStartFollowTheInitialisedValues) {
  // --automation-start 0: the curves train from the first step, starting flat at the values the
  // initialisation from the data gave (which renders the automated graph on the song's clock).
  const at::Tensor x            = tracks();
  FitOptions options            = testing::small_options(3);
  options.initialisation        = {};  // every step of it
  options.automation.parameters = {{"gain_pan", {}}};
  options.automation.start      = 0;
  Fitter fitter(gain_console(), x, hidden_mix(x), kRate, options);
  EXPECT_TRUE(fitter.curves_live());
  const Parameters start = fitter.initial_parameters();
  const at::Tensor gains = start.at("gain_pan").at("log_gain");
  const at::Tensor curve = start.at("gain_pan").at(curve_name("log_gain"));
  EXPECT_TRUE(at::allclose(curve, gains.unsqueeze(1).expand_as(curve)))
      << "flat curves at the initialised gains";
  EXPECT_FALSE(at::equal(gains, at::zeros_like(gains))) << "the least-squares gains were kept";
  fitter.run();
  EXPECT_EQ(fitter.steps_done(), 3);
}

TEST(FitAutomation, RefusesWhatCannotBeAutomated) {
  const at::Tensor x = tracks();
  FitOptions options = testing::small_options(1);
  auto refused       = [&](std::map<std::string, std::set<std::string>> parameters,
                     const std::string& message, double rate = 10, double start = 0.5) {
    FitOptions o            = options;
    o.automation.parameters = parameters;
    o.automation.rate_hz    = rate;
    o.automation.start      = start;
    EXPECT_GRAFX_ERROR(Fitter(gain_console(), x, x.sum(0), kRate, o), "grafx.fit.options", message);
  };
  refused({{"compressor", {}}}, "no processor nodes of that type");
  refused({{"gain_pan", {"log_ratio"}}}, "cannot automate gain_pan.log_ratio: gain_pan automates");
  refused({{"gain_pan", {}}}, "an automation rate above 0 Hz", 0);
  refused({{"gain_pan", {}}}, "an automation rate above 0 Hz", NAN);
  refused({{"gain_pan", {}}}, "a finite automation start", 10, 1.0);
  refused({{"gain_pan", {}}}, "a finite automation start", 10, -0.1);
}

}  // namespace
}  // namespace grafx
