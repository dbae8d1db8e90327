// A fit's outputs render as fitted; any graph can be fitted; one processor applies to a file.
// Run as a user would, through the grafx program.

#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>
#include <iostream>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

/// ‖a − b‖ / ‖b‖ of two audio files of one shape.
double relative_difference(const std::string& a, const std::string& b) {
  at::Tensor x = read_audio(a).samples.to(at::kDouble), y = read_audio(b).samples.to(at::kDouble);
  EXPECT_EQ(x.sizes(), y.sizes()) << a << " and " << b;
  if (x.sizes() != y.sizes()) return INFINITY;
  double difference = ((x - y).norm() / y.norm()).item<double>();
  std::cout << a << " against " << b << ": relative difference " << difference << "\n";
  return difference;
}

/// Two mono tracks and a stereo "mix" at 44.1 kHz, like the shared stems.
void write_song(const testing::TempDir& dir) {
  at::manual_seed(3);
  const int64_t n = 44100 * 3;
  at::Tensor t    = at::arange(n, at::kFloat) / 44100;
  write_audio(dir.file("a.wav"), at::randn({1, n}) * 0.1 * (t * 5).sin().abs(), 44100);
  write_audio(dir.file("b.wav"), at::randn({1, n}) * 0.1 * (t * 3).cos().abs(), 44100);
  write_audio(dir.file("mix.wav"), at::randn({2, n}) * 0.1, 44100);
}

TEST(CliRoundTrip, AFitsOutputsRenderAsFitted) {
  testing::TempDir dir;
  write_song(dir);
  auto r = run_grafx({"fit", "--tracks", dir.file("a.wav"), dir.file("b.wav"), "--mix",
                      dir.file("mix.wav"), "--sample-rate", "16000", "--crop", "1", "--warm-up",
                      "0.2", "--steps", "3", "-o", dir.file("fit")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Graph console = load_graph(dir.file("fit/console.json"), registry_node_types());
  EXPECT_TRUE(console.node(console.nodes_of_type("reverb").front()).dry_wet)
      << "dry/wet is in the file";
  // The fit ran at 16 kHz on the 44.1 kHz files; rendering them with its parameters, and no
  // other option, reproduces its mix.
  r = run_grafx({"render", dir.file("fit/console.json"), "--sources", dir.file("a.wav"),
                 dir.file("b.wav"), "--params", dir.file("fit/parameters.safetensors"), "-o",
                 dir.file("x.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "rendering at 16000 Hz")) << r.out;
  EXPECT_EQ(read_audio(dir.file("x.wav")).sample_rate, 16000);
  EXPECT_LT(relative_difference(dir.file("x.wav"), dir.file("fit/mix.wav")), 1e-4);
}

TEST(CliRoundTrip, TheDemosOutputsRenderAsFitted) {
  testing::TempDir dir;
  std::string out = dir.file("demo");
  auto r          = run_grafx({"demo", "-o", out, "--steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> args = {"render", out + "/console.json", "--sources"};
  for (const char* track : {"drums", "bass", "chords", "lead"})
    args.push_back(out + "/tracks/" + track + ".wav");
  for (const char* more : {"--params", "PARAMS", "-o", "OUT"}) args.push_back(more);
  args[args.size() - 3] = out + "/parameters.safetensors";
  args.back()           = dir.file("x.wav");
  r                     = run_grafx(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(relative_difference(dir.file("x.wav"), out + "/mix.wav"), 1e-4);
}

TEST(CliRoundTrip, FitsAnyGraphFile) {
  testing::TempDir dir;
  write_song(dir);
  // Track a through a dry/wet EQ, track b through a bypassed reverb, both into a gain/pan.
  Graph g(registry_node_types());
  NodeId a = g.add("in", "a"), b = g.add("in", "b");
  NodeId eq = g.add("eq"), reverb = g.add("reverb"), mix = g.add("mix"), gain = g.add("gain_pan");
  NodeId out = g.add("out");
  g.set_dry_wet(eq);
  g.set_bypassed(reverb);
  g.connect(a, eq);
  g.connect(b, reverb);
  g.connect(eq, mix);
  g.connect(reverb, mix);
  g.connect(mix, gain);
  g.connect(gain, out);
  save_graph(g, dir.file("g.json"));
  auto r = run_grafx({"fit", "--graph", dir.file("g.json"), "--tracks", dir.file("a.wav"),
                      dir.file("b.wav"), "--mix", dir.file("mix.wav"), "--sample-rate", "16000",
                      "--crop", "1", "--warm-up", "0.2", "--steps", "3", "-o", dir.file("fit")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "fitting " + dir.file("g.json") + " of 7 nodes")) << r.out;
  EXPECT_EQ(load_graph(dir.file("fit/console.json"), registry_node_types()), g);
  std::string physical = testing::read_file(dir.file("fit/parameters.json"));
  EXPECT_TRUE(contains(physical, "\"wet\"")) << "the EQ's fitted wet amount";
  EXPECT_TRUE(contains(physical, "\"bypassed\": true")) << physical;
  r = run_grafx({"render", dir.file("fit/console.json"), "--sources", dir.file("a.wav"),
                 dir.file("b.wav"), "--params", dir.file("fit/parameters.safetensors"), "-o",
                 dir.file("x.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(relative_difference(dir.file("x.wav"), dir.file("fit/mix.wav")), 1e-4);

  r = run_grafx({"fit", "--graph", dir.file("g.json"), "--tracks", dir.file("a.wav"), "--mix",
                 dir.file("mix.wav"), "-o", dir.file("one")});
  EXPECT_TRUE(contains(r.err, "[grafx.fit.data] expected 2 tracks (one per `in` node), but got 1"))
      << r.err;
  r = run_grafx({"fit", "--graph", dir.file("g.json"), "--chain", "eg", "--tracks",
                 dir.file("a.wav"), dir.file("b.wav"), "--mix", dir.file("mix.wav"), "-o",
                 dir.file("both")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128);
  EXPECT_TRUE(contains(r.err, "excludes --graph")) << r.err;
}

/// Runs grafx and expects a failure (exit code 1 to 127) whose message contains `message`.
void fails(const std::vector<std::string>& args, const std::string& message) {
  auto result = run_grafx(args);
  EXPECT_NE(result.exit_code, 0) << message;
  EXPECT_LT(result.exit_code, 128);
  EXPECT_TRUE(contains(result.err, message)) << result.err;
}

TEST(CliProcess, LowpassIsTheCookbookBiquadAppliedByAPlainLoop) {
  testing::TempDir dir;
  at::manual_seed(5);
  const int64_t rate = 44100, length = 22050;
  at::Tensor x = at::randn({2, length}) * 0.1;
  write_audio(dir.file("in.wav"), x, rate);
  auto r = run_grafx({"process", "lowpass", "-i", dir.file("in.wav"), "-o", dir.file("out.wav"),
                      "--set", "cutoff_hz=1000", "--set", "q=0.7071"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  at::Tensor y = read_audio(dir.file("out.wav")).samples.to(at::kDouble);
  // RBJ cookbook low-pass, direct form I, sample by sample.
  double w0 = 2 * M_PI * 1000.0 / double(rate), c = std::cos(w0),
         alpha = std::sin(w0) / (2 * 0.7071);
  double b0 = (1 - c) / 2, b1 = 1 - c, b2 = (1 - c) / 2, a0 = 1 + alpha, a1 = -2 * c,
         a2     = 1 - alpha;
  at::Tensor xs = read_audio(dir.file("in.wav")).samples.to(at::kDouble);
  auto input    = xs.accessor<double, 2>();
  double worst = 0, peak = 0;
  for (int64_t ch = 0; ch < 2; ++ch) {
    double x1 = 0, x2 = 0, y1 = 0, y2 = 0;
    for (int64_t n = 0; n < length; ++n) {
      double out = (b0 * input[ch][n] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2) / a0;
      x2 = x1, x1 = input[ch][n], y2 = y1, y1 = out;
      worst = std::max(worst, std::abs(out - y[ch][n].item<double>()));
      peak  = std::max(peak, std::abs(out));
    }
  }
  // grafx processes files in float32: coefficients rounded to 24 bits move a pole this close to
  // z = 1 by ~1e-7, which changes the output by a few 1e-6 of its peak.
  EXPECT_LT(worst, 2e-5 * peak) << "float32 processing against the double-precision loop";
  // A cutoff above Nyquist is refused, naming the parameter and its range.
  r = run_grafx({"process", "lowpass", "-i", dir.file("in.wav"), "-o", dir.file("bad.wav"), "--set",
                 "cutoff_hz=30000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "cutoff_hz")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("bad.wav")));
}

TEST(CliProcess, AppliesOneProcessorInPhysicalUnits) {
  testing::TempDir dir;
  at::manual_seed(4);
  at::Tensor x = at::randn({2, 8000}) * 0.1;
  write_audio(dir.file("in.wav"), x, 8000);
  write_audio(dir.file("mono.wav"), x.narrow(0, 0, 1), 8000);
  auto r = run_grafx({"process", "gain_pan", "-i", dir.file("in.wav"), "-o", dir.file("out.wav"),
                      "--set", "gain_db=-6,-12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Audio out = read_audio(dir.file("out.wav"));
  EXPECT_EQ(out.sample_rate, 8000);
  at::Tensor gains =
      at::tensor({std::pow(10.0, -6.0 / 20), std::pow(10.0, -12.0 / 20)}).to(at::kFloat);
  EXPECT_TRUE(at::allclose(out.samples, x * gains.view({2, 1}), 1e-5, 1e-7));
  // Half wet: the mean of the processed and the dry signal. A mono file spread to stereo.
  r = run_grafx({"process", "stereo_imager", "-i", dir.file("mono.wav"), "--stereo", "-o",
                 dir.file("wide.wav"), "--set", "side_gain_db=6", "--set", "wet=0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(at::allclose(read_audio(dir.file("wide.wav")).samples,
                           x.narrow(0, 0, 1).expand({2, 8000}), 1e-5, 1e-7))
      << "a mono signal has no side to widen";
  // Unset parameters keep their defaults: a flat EQ is the identity.
  r = run_grafx({"process", "eq", "-i", dir.file("in.wav"), "-o", dir.file("flat.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(at::allclose(read_audio(dir.file("flat.wav")).samples, x, 1e-5, 1e-6));

  const std::string in = dir.file("in.wav"), bad = dir.file("bad.wav");
  fails({"process", "gain_pan", "-i", in, "-o", dir.file("out.wav")}, "[grafx.io.exists]");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "volume=3"},
        "gain_pan has no parameter \"volume\"; it has: gain_db (dB), wet (ratio)");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "gain_db=nan"},
        "\"nan\" is not a finite number");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "gain_db"}, "expected NAME=VALUE");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "gain_db=1,2,3"},
        "expected at most 2 values per row, but got 3");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "gain_db=1e30"},
        "[grafx.processor.non_finite] gain_pan: outlet \"main\" holds non-finite samples");
  fails({"process", "compressor", "-i", in, "-o", bad, "--set", "ratio=0.5"},
        "expected ratio from 1 to inf (:1), but got 0.5");
  fails({"process", "gain_pan", "-i", in, "-o", bad, "--set", "wet=2"},
        "expected wet from 0 to 1 (ratio), but got 2");
  write_audio(dir.file("three.wav"), at::zeros({3, 8000}), 8000);
  fails({"process", "gain_pan", "-i", dir.file("three.wav"), "-o", bad},
        "expected a mono or stereo (N×1×L or N×2×L) input, but got 3 channels");
  fails({"process", "flanger", "-i", in, "-o", bad}, "[grafx.processor.unknown]");
  fails({"process", "eq", "-i", dir.file("missing.wav"), "-o", bad}, "[grafx.io.");
  write_audio(dir.file("empty.wav"), at::zeros({1, 0}), 8000);
  fails({"process", "eq", "-i", dir.file("empty.wav"), "-o", bad},
        "[grafx.io.length] " + dir.file("empty.wav") + ": holds no samples");
  EXPECT_FALSE(testing::file_exists(bad)) << "nothing is written on an error";

  r = run_grafx({"processors", "compressor"});
  EXPECT_TRUE(contains(r.out, "threshold_db (dB)") && contains(r.out, "range ≥ 1:1")) << r.out;
}

TEST(CliProcess, OptionsConfigureTheProcessor) {
  testing::TempDir dir;
  at::manual_seed(5);
  at::Tensor x = at::randn({2, 4000}) * 0.3;
  write_audio(dir.file("in.wav"), x, 8000);
  // A tanh without pre-gain is tanh itself; with a bias, tanh(x + b) − tanh(b).
  auto r = run_grafx({"process", "tanh_distortion", "-i", dir.file("in.wav"), "-o",
                      dir.file("plain.wav"), "--option", "pre_post_gain=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(at::allclose(read_audio(dir.file("plain.wav")).samples, x.tanh(), 1e-5, 1e-6));
  r = run_grafx({"process", "tanh_distortion", "-i", dir.file("in.wav"), "-o",
                 dir.file("biased.wav"), "--option", "use_bias=true", "--option",
                 "pre_post_gain=false", "--set", "bias=0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(at::allclose(read_audio(dir.file("biased.wav")).samples,
                           (x + 0.5).tanh() - std::tanh(0.5), 1e-5, 1e-6));
  // A container from the command line: members by name, their parameters by prefix.
  r = run_grafx({"process", "serial_chain", "-i", dir.file("in.wav"), "-o", dir.file("chain.wav"),
                 "--option", "members=gain_pan,gain_pan", "--set", "members.0.gain_db=-6", "--set",
                 "members.1.gain_db=-3,0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  at::Tensor gains =
      at::tensor({std::pow(10.0, -9.0 / 20), std::pow(10.0, -6.0 / 20)}).to(at::kFloat);
  EXPECT_TRUE(
      at::allclose(read_audio(dir.file("chain.wav")).samples, x * gains.view({2, 1}), 1e-5, 1e-7));
  // The listing shows a processor's options and their choices.
  r = run_grafx({"processors", "compressor"});
  EXPECT_TRUE(contains(r.out,
                       "option knee = \"quadratic\": shape of the gain curve around the "
                       "threshold; one of hard, quadratic, exponential"))
      << r.out;
  r = run_grafx({"processors"});
  EXPECT_TRUE(contains(r.out, "  options: knee \"quadratic\", detection \"energy\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "DryWet: the node flag dry_wet")) << r.out;

  const std::string bad = dir.file("bad.wav");
  const std::string in  = dir.file("in.wav");
  fails({"process", "compressor", "-i", in, "-o", bad, "--option", "knee=soft"},
        "[grafx.processor.options] --option: compressor: option \"knee\": expected one of hard, "
        "quadratic, exponential, but got \"soft\"");
  fails({"process", "compressor", "-i", in, "-o", bad, "--option", "kneee=hard"},
        "--option \"kneee=hard\": compressor has no option \"kneee\"; its options: knee, "
        "detection, level_smoothing, gain_smoothing, gain_smoothing_domain");
  fails({"process", "power_distortion", "-i", in, "-o", bad, "--option", "max_order=nan"},
        "option \"max_order\": expected an integer in [2, 20], but got");
  fails({"process", "power_distortion", "-i", in, "-o", bad, "--option", "max_order=1e400"},
        "option \"max_order\": expected an integer in [2, 20]");
  fails({"process", "tanh_distortion", "-i", in, "-o", bad, "--option", "use_bias=yes"},
        "--option \"use_bias=yes\": expected true or false");
  fails({"process", "serial_chain", "-i", in, "-o", bad, "--option", "members=eq,,gain_pan"},
        "member 1 \"\": no processor implements node type \"\"");
  fails({"process", "eq", "-i", in, "-o", bad, "--option", "x"}, "expected NAME=VALUE");
  EXPECT_FALSE(testing::file_exists(bad)) << "nothing is written on an error";
}

}  // namespace
}  // namespace grafx
