// The grafx program's processors command, run as a user would.

#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>

#include <cmath>

#include "support/test_support.h"

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

TEST(CliProcessors, ListsEveryProcessorWithPortsAndParameters) {
  auto r = run_grafx({"processors"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& d : processor_registry()) {
    EXPECT_TRUE(contains(r.out, d.name + " ")) << d.name;
    for (const auto& spec : d.make({44100})->parameter_specs())
      EXPECT_TRUE(contains(r.out, spec.name) && contains(r.out, spec.physical_name)) << spec.name;
  }
  EXPECT_TRUE(contains(r.out, "ports: main -> main"));
  r = run_grafx({"processors", "compressor", "--sample-rate", "30000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Ranges read as the docs' tables read them.
  EXPECT_TRUE(contains(r.out, "range any; initial -26.06 dB (raw 0 ± 0.01)")) << r.out;
  EXPECT_TRUE(contains(r.out, "range ≥ 1:1; initial 2:1 (raw 0 ± 0.01)")) << r.out;
  EXPECT_TRUE(contains(r.out, "initial 0.04809 ms (raw 0 ± 0.01)")) << r.out;  // −1/ln ½ at 30 kHz
  EXPECT_TRUE(contains(r.out, "any node may also carry wet (ratio, 0 to 1)")) << r.out;
  EXPECT_FALSE(contains(r.out, "reverb"));
}

TEST(CliProcessors, ResponsePicturesWithParameters) {
  testing::TempDir dir;
  std::string svg = dir.file("eq.svg");
  auto r = run_grafx({"processors", "eq", "--response", svg, "--param", "log_magnitude=1,0,-1",
                      "--sample-rate", "8000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "picture: " + svg + " (eq at 8000 Hz)")) << r.out;
  std::string picture = testing::read_file(svg);
  EXPECT_NE(picture.find("<svg"), std::string::npos);
  EXPECT_TRUE(contains(picture, "frequency (Hz)"));
  // The formats `grafx draw` writes (but .dot, which pictures graphs only), by their signatures.
  for (const auto& [format, signature] :
       std::vector<std::pair<std::string, std::string>>{{".png", "\x89PNG"}, {".pdf", "%PDF"}}) {
    r = run_grafx({"processors", "eq", "--response", dir.file("eq" + format)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string bytes = testing::read_file(dir.file("eq" + format));
    EXPECT_EQ(bytes.rfind(signature, 0), 0u) << format;
    EXPECT_GT(bytes.size(), 5000u) << format << ": a plot, not an empty page";
  }
  for (const char* name :
       {"compressor_ballistics", "noise_gate", "reverb", "delay", "stereo_imager"}) {
    r = run_grafx({"processors", name, "--response", dir.file(std::string(name) + ".svg"),
                   "--sample-rate", "4000"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
}

TEST(CliProcessors, ErrorsAreOneLineAndNonZeroAndLoseNothing) {
  testing::TempDir dir;
  std::string svg = dir.file("gate.svg");
  ASSERT_EQ(
      run_grafx({"processors", "noise_gate", "--response", svg, "--sample-rate", "4000"}).exit_code,
      0);
  std::string before = testing::read_file(svg);
  auto r = run_grafx({"processors", "noise_gate", "--response", svg, "--param", "log_ratio=2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]")) << r.err;
  EXPECT_TRUE(contains(r.err, "--force")) << "the refusal says how to replace it: " << r.err;
  EXPECT_EQ(testing::read_file(svg), before) << "an existing picture is never overwritten";
  r = run_grafx({"processors", "noise_gate", "--response", svg, "--param", "log_ratio=2", "--force",
                 "--sample-rate", "4000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(testing::read_file(svg), before);

  r = run_grafx({"processors", "flanger"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(
      contains(r.err, "[grafx.processor.unknown] no processor implements node type \"flanger\""))
      << r.err;
  r = run_grafx({"processors", "eq", "--response", dir.file("x.svg"), "--param", "gain=2"});
  EXPECT_EQ(r.err,
            "grafx: error: [grafx.processor.parameters] --param \"gain=2\": eq has no parameter "
            "\"gain\"; it has: gain_db (dB) (or their raw names: log_magnitude)\n");
  r = run_grafx(
      {"processors", "eq", "--response", dir.file("x.svg"), "--param", "log_magnitude=1,x"});
  EXPECT_TRUE(contains(r.err, "\"x\" is not a finite number")) << r.err;
  r = run_grafx({"processors", "eq", "--response", dir.file("x.gif")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.plot] --response: expected an .svg, .png or .pdf file"))
      << r.err;
  r = run_grafx({"processors", "reverb", "--sample-rate", "50"});
  EXPECT_TRUE(contains(r.err, "[grafx.processor.config]")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("x.svg")));
  EXPECT_NE(run_grafx({"processors", "--response", dir.file("y.svg")}).exit_code, 0)
      << "a picture needs a name";
}

TEST(CliProcessors, UpdateDocsRewritesOnlyTheGeneratedTables) {
  testing::TempDir dir;
  const std::string begin =
      "<!-- parameters of stereo_imager at 30000 Hz: generated by grafx processors "
      "--update-docs -->\n";
  const std::string end  = "<!-- end of generated parameters -->\n";
  const std::string page = dir.file("page.md"), other = dir.file("other.md");
  testing::write_file(page,
                      "# Stereo\n\nText | kept.\n" + begin + "| stale |\n" + end + "After.\n");
  testing::write_file(other, "no tables\n");
  auto r = run_grafx({"processors", "--update-docs", page, other});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, page + ": updated\n" + other + ": up to date\n");
  EXPECT_EQ(testing::read_file(page), "# Stereo\n\nText | kept.\n" + begin +
                                          parameter_table({"stereo_imager"}, 30000) + "\n" + end +
                                          "After.\n");
  r = run_grafx({"processors", "--update-docs", page});
  EXPECT_EQ(r.out, page + ": up to date\n");
  // A malformed page is refused before any file is written.
  const std::string broken = dir.file("broken.md");
  testing::write_file(page, begin + "| stale |\n" + end);
  testing::write_file(broken, "intro\n" + begin + "| no end |\n");
  r = run_grafx({"processors", "--update-docs", page, broken});
  EXPECT_EQ(r.err, "grafx: error: [grafx.io.format] " + broken +
                       ":2: a generated table without its \"<!-- end of generated parameters "
                       "-->\"\n");
  EXPECT_EQ(testing::read_file(page), begin + "| stale |\n" + end);
}

TEST(CliProcessors, ProcessAutomatesParametersWithValuesAtTimes) {
  testing::TempDir dir;
  write_audio(dir.file("ones.wav"), at::full({1, 24000}, 0.5), 8000);
  // Left from 0 to −20 dB and right from −6 to 0 dB over 2 s, held after.
  auto r = run_grafx({"process", "gain_pan", "-i", dir.file("ones.wav"), "-o", dir.file("y.wav"),
                      "--set", "gain_db=0:-6@0,-20:0@2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  at::Tensor y = read_audio(dir.file("y.wav")).samples.to(at::kDouble);
  for (int64_t n : {0, 4000, 11999, 16000, 20000}) {
    const double t = std::min(double(n) / 8000 / 2, 1.0);  // share of the ramp
    EXPECT_NEAR(y[0][n].item<double>(), 0.5 * std::pow(10.0, -20 * t / 20), 1e-6) << n;
    EXPECT_NEAR(y[1][n].item<double>(), 0.5 * std::pow(10.0, (-6 + 6 * t) / 20), 1e-6) << n;
  }
  // The wet amount fades too (between 0 and 1: its raw value is their logit).
  r = run_grafx({"process", "delay", "-i", dir.file("ones.wav"), "-o", dir.file("d.wav"), "--set",
                 "wet=0.001@0,0.999@1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_grafx({"processors", "gain_pan"});
  EXPECT_TRUE(contains(r.out, "automatable, linear in dB")) << r.out;
  r = run_grafx({"processors", "compressor"});
  EXPECT_TRUE(contains(r.out, "not automatable")) << r.out;  // its ratio, times and knee
  r = run_grafx({"process", "compressor", "-i", dir.file("ones.wav"), "-o", dir.file("c.wav"),
                 "--set", "threshold_db=-10@0,-30@1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"ratio=2@0,4@1", "compressor cannot automate ratio"},
      {"gain_db=0@1,-20@0.5", "the times must rise from point to point, but 0.5 s follows 1 s"},
      {"gain_db=0@nan", "\"nan\" is not a time of 0 seconds or later"},
      {"gain_db=0@-1", "\"-1\" is not a time of 0 seconds or later"},
      {"gain_db=@0", "expected a value before @"},
      {"gain_db=0@0,", "expected VALUE@SECONDS items"},
      {"gain_db=nan@0", "\"nan\" is not a finite number"},
  };
  for (const auto& [setting, message] : refused) {
    const std::string type = setting.rfind("ratio", 0) == 0 ? "compressor" : "gain_pan";
    r                      = run_grafx(
                             {"process", type, "-i", dir.file("ones.wav"), "-o", dir.file("x.wav"), "--set", setting});
    EXPECT_EQ(r.exit_code, 1) << setting;
    EXPECT_TRUE(contains(r.err, message)) << setting << ": " << r.err;
    EXPECT_FALSE(testing::file_exists(dir.file("x.wav"))) << setting;
  }
}

TEST(CliProcessors, RenderPlaysAGraphFilesAutomation) {
  testing::TempDir dir;
  write_audio(dir.file("ones.wav"), at::full({2, 16000}, 0.5), 8000);
  Graph g(registry_node_types());
  NodeId in = g.add("in"), gain = g.add("gain_pan"), out = g.add("out");
  g.connect(in, gain);
  g.connect(gain, out);
  g.set_automation({10.0, 11});
  g.set_automated(gain, "log_gain");
  save_graph(g, dir.file("g.json"));
  auto r = run_grafx(
      {"render", dir.file("g.json"), "--sources", dir.file("ones.wav"), "-o", dir.file("y.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_grafx({"info", dir.file("g.json")});
  EXPECT_TRUE(contains(r.out,
                       "automation: 1 parameter on curves of 11 points at 10 per second "
                       "(1 s)\nvalid"))
      << r.out;
  g.set_automated(gain, "log_ratio");
  save_graph(g, dir.file("bad.json"));
  r = run_grafx(
      {"render", dir.file("bad.json"), "--sources", dir.file("ones.wav"), "-o", dir.file("z.wav")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.render.automation]")) << r.err;
  EXPECT_FALSE(testing::file_exists(dir.file("z.wav")));
  r = run_grafx({"info", dir.file("bad.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out,
                       "[grafx.render.automation] a node of type \"gain_pan\" automates "
                       "\"log_ratio\""))
      << r.out;
}

}  // namespace
}  // namespace grafx
