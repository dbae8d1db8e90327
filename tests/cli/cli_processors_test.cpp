// The grafx program's processors command, run as a user would.

#include <grafx/processors/registry.h>

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
  EXPECT_TRUE(contains(r.out, "range -inf to inf dB; initial -26.06 dB (raw 0 ± 0.01)")) << r.out;
  EXPECT_TRUE(contains(r.out, "range 1 to inf:1; initial 2:1 (raw 0 ± 0.01)")) << r.out;
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

}  // namespace
}  // namespace grafx
