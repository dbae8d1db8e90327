// grafx render, run as a user would.

#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/processors/registry.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

/// in0 -> gain_pan -> out; in1 -> stereo_imager -> out (one output), plus a second out fed by
/// in1 directly when `two_outputs`.
Graph small_graph(bool two_outputs) {
  Graph g(registry_node_types());
  NodeId a = g.add("in", "a"), b = g.add("in", "b");
  NodeId gain = g.add("gain_pan"), imager = g.add("stereo_imager"), out = g.add("out");
  g.connect(a, gain);
  g.connect(b, imager);
  g.connect(gain, out);
  g.connect(imager, out);
  if (two_outputs) g.connect(b, g.add("out"));
  return g;
}

struct Files {
  testing::TempDir dir;
  at::Tensor a = at::rand({1, 3000}) - 0.5;  // mono
  at::Tensor b = at::rand({2, 3000}) - 0.5;  // stereo
  Files() {
    write_audio(dir.file("a.wav"), a, 44100);
    write_audio(dir.file("b.wav"), b, 44100);
    save_graph(small_graph(false), dir.file("g.json"));
    save_graph(small_graph(true), dir.file("g2.json"));
  }
};

TEST(CliRender, RendersWithAParameterFile) {
  Files f;
  Graph g = small_graph(false);
  Parameters p;
  p["gain_pan"]["log_gain"]      = at::full({1, 2}, std::log(2.0));
  p["stereo_imager"]["log_gain"] = at::zeros({1, 1});
  save_parameters(f.dir.file("p.safetensors"), g, p);
  auto r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                      f.dir.file("b.wav"), "--params", f.dir.file("p.safetensors"), "--method",
                      "optimal", "-o", f.dir.file("y.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(
      r.out, "rendered 2 sources (2 ch, 44100 Hz, 0.07 s) through 5 nodes in 2 processor calls"))
      << r.out;
  Audio y             = read_audio(f.dir.file("y.wav"));
  at::Tensor expected = 2 * f.a.expand({2, 3000}) + f.b;  // mono spread to both channels
  EXPECT_LT((y.samples - expected).abs().max().item<double>(), 1e-6);
}

TEST(CliRender, NonFiniteInputsAreRefusedAndNonFiniteOutputsNamed) {
  Files f;
  Graph g      = small_graph(false);
  auto render_ = [&](const std::string& params, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "render",   f.dir.file("g.json"), "--sources", f.dir.file("a.wav"), f.dir.file("b.wav"),
        "--params", f.dir.file(params),   "-o",        f.dir.file("y.wav")};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_grafx(args);
  };
  // A parameter holding NaN: refused, naming it; nothing written.
  Parameters p;
  p["gain_pan"]["log_gain"]      = at::tensor({0.0f, NAN}).view({1, 2});
  p["stereo_imager"]["log_gain"] = at::zeros({1, 1});
  save_parameters(f.dir.file("nan.safetensors"), g, p);
  auto r = render_("nan.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err,
                       "[grafx.render.non_finite] parameter \"log_gain\" of type "
                       "\"gain_pan\" holds NaN or infinity (row 0"))
      << r.err;
  EXPECT_FALSE(testing::file_exists(f.dir.file("y.wav")));
  // A finite gain whose output overflows: the node is named.
  p["gain_pan"]["log_gain"] = at::full({1, 2}, 200.0f);
  save_parameters(f.dir.file("huge.safetensors"), g, p);
  r = render_("huge.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err,
                       "[grafx.render.non_finite] node 2 (gain_pan) put out non-finite "
                       "samples (NaN or infinity) at outlet \"main\""))
      << r.err;
  EXPECT_FALSE(testing::file_exists(f.dir.file("y.wav")));
  // Allowed on request, with a warning.
  r = render_("huge.safetensors", {"--allow-non-finite"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "warning: " + f.dir.file("y.wav") + " holds non-finite samples"))
      << r.err;
  // A source file holding NaN (float WAV): refused, naming the file and the sample.
  at::Tensor bad = f.b.clone();
  bad[1][17]     = INFINITY;
  write_audio(f.dir.file("bad.wav"), bad, 44100);
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("bad.wav"), "-o", f.dir.file("z.wav")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.io.non_finite] " + f.dir.file("bad.wav") +
                                  ": holds non-finite samples (NaN or infinity), the first at "
                                  "sample 17 of channel 1"))
      << r.err;
  EXPECT_FALSE(testing::file_exists(f.dir.file("z.wav")));
}

TEST(CliRender, DefaultParametersSeveralOutputsAndPadding) {
  Files f;
  auto r = run_grafx({"render", f.dir.file("g2.json"), "--sources", f.dir.file("a.wav"),
                      f.dir.file("b.wav"), "-o", f.dir.file("y.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(testing::file_exists(f.dir.file("y.1.wav")));
  EXPECT_TRUE(testing::file_exists(f.dir.file("y.2.wav")));
  EXPECT_TRUE(at::allclose(read_audio(f.dir.file("y.2.wav")).samples, f.b));
  // Initial parameters are near-neutral (raw N(0, 0.01²)).
  at::Tensor sum = f.a.expand({2, 3000}) + f.b;
  EXPECT_LT((read_audio(f.dir.file("y.1.wav")).samples - sum).abs().max().item<double>(), 0.1);

  write_audio(f.dir.file("short.wav"), at::zeros({2, 1000}), 44100);
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("short.wav"), "-o", f.dir.file("z.wav")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.length]") && contains(r.err, "use --pad")) << r.err;
  EXPECT_FALSE(testing::file_exists(f.dir.file("z.wav")));
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("short.wav"), "--pad", "--pcm16", "-o", f.dir.file("z.wav")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_audio(f.dir.file("z.wav")).samples.size(1), 3000);
}

TEST(CliRender, Errors) {
  Files f;
  auto r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"), "-o",
                      f.dir.file("y.wav")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "has 2 `in` nodes, but 1 source files were given")) << r.err;
  write_audio(f.dir.file("c.wav"), at::zeros({1, 3000}), 48000);
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("c.wav"), "-o", f.dir.file("y.wav")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.sample_rate]") && contains(r.err, "48000 Hz differs"))
      << r.err;
  write_audio(f.dir.file("d.wav"), at::zeros({3, 3000}), 44100);
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("d.wav"), "-o", f.dir.file("y.wav")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.channels]")) << r.err;
  testing::write_file(f.dir.file("y.wav"), "precious");
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("b.wav"), "-o", f.dir.file("y.wav")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]")) << r.err;
  EXPECT_EQ(testing::read_file(f.dir.file("y.wav")), "precious");
  r = run_grafx({"render", f.dir.file("g.json"), "--sources", f.dir.file("a.wav"),
                 f.dir.file("b.wav"), "--params", f.dir.file("a.wav"), "-o", f.dir.file("w.wav")});
  EXPECT_TRUE(contains(r.err, "[grafx.io.format]")) << r.err;
  EXPECT_FALSE(testing::file_exists(f.dir.file("w.wav")));
}

// Issue 29: a graph of in -> TYPE -> out, TYPE declared as `declaration`.
std::string one_node_graph(const std::string& declaration, const std::string& type) {
  return R"({"format":"grafx.graph","version":2,"node_types":[)" + declaration +
         R"(],"nodes":[{"id":0,"type":"in"},{"id":1,"type":")" + type +
         R"("},{"id":2,"type":"out"}],"edges":[{"source":0,"dest":1},{"source":1,"dest":2}]})";
}

TEST(CliRender, InfoRefusesWhatEveryRenderRefuses) {
  // Each graph passes Graph::validate, but no render makes its processors: `info` must say
  // "invalid" with the code render gives (it said "valid").
  struct Case {
    std::string declaration, type, code;
  };
  const std::vector<Case> cases = {
      {R"({"name":"foo","inlets":["main"],"outlets":["main"]})", "foo", "grafx.processor.unknown"},
      {R"({"name":"eq","inlets":["main"],"outlets":["main","side"]})", "eq",
       "grafx.processor.ports"},
      {R"({"name":"strip","processor":"serial_chain","options":{"members":["nope"]}})", "strip",
       "grafx.processor.unknown"},
      {R"({"name":"strip","processor":"serial_chain","options":{"members":"eq"}})", "strip",
       "grafx.processor.options"},
  };
  testing::TempDir dir;
  const std::string source = testing::testdata_dir() + "/bass.flac";
  for (const auto& c : cases) {
    const std::string graph = dir.file(c.type + ".json");
    testing::write_file(graph, one_node_graph(c.declaration, c.type));
    auto info = run_grafx({"info", graph});
    EXPECT_EQ(info.exit_code, 1) << c.declaration << "\n" << info.out;
    EXPECT_FALSE(contains(info.out, "\nvalid")) << info.out;
    EXPECT_TRUE(contains(info.out, "invalid: 1 problem\n  [" + c.code + "] ")) << info.out;
    EXPECT_TRUE(contains(info.err, "[" + c.code + "] " + graph + ": the graph is not valid"))
        << info.err;
    auto render = run_grafx({"render", graph, "--sources", source, "-o", dir.file("out.wav")});
    EXPECT_EQ(render.exit_code, 1) << render.out;
    EXPECT_TRUE(contains(render.err, "[" + c.code + "] ")) << render.err;
  }
  // A graph that renders is still valid.
  const std::string good = dir.file("good.json");
  testing::write_file(good, one_node_graph("", "eq"));
  auto info = run_grafx({"info", good});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(contains(info.out, "\nvalid\n")) << info.out;
}

}  // namespace
}  // namespace grafx
