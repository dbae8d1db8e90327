// grafx schedule, run as a user would.

#include "support/test_support.h"

#include <nlohmann/json.hpp>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

TEST(CliSchedule, MethodsPlansAndJson) {
  testing::TempDir dir;
  std::string console = dir.file("console.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "8", "--groups", "3", "-o", console}).exit_code, 0);
  auto r = run_grafx({"schedule", console, "--method", "optimal"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      contains(r.out, "method: optimal (proven optimal)\nprocessor calls: 16 (90 nodes, 0 dead)\n"))
      << r.out;
  EXPECT_TRUE(contains(
      r.out,
      "types: in, eq, compressor, noise_gate, stereo_imager, gain_pan, delay, reverb, mix, eq"));
  EXPECT_TRUE(contains(r.out, "time: "));

  r = run_grafx({"schedule", console, "--method", "one-by-one"});
  EXPECT_TRUE(contains(r.out, "processor calls: 81")) << r.out;
  r = run_grafx(
      {"schedule", console, "--method", "fixed", "--fixed", "e,c,n,s,g,d,r,m,e,c,n,s,g,d,r,m"});
  EXPECT_TRUE(contains(r.out, "processor calls: 16")) << r.out + r.err;
  r = run_grafx({"schedule", console, "--method", "fixed"});
  EXPECT_TRUE(contains(r.out, "processor calls: 16")) << "the console order is the default";
  r = run_grafx({"schedule", console, "--method", "beam", "--width", "4", "--depth", "2", "--plan",
                 "--json", dir.file("plan.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      contains(r.out, "Render #17\n  - Node type: out\n  - Source read: slice with (88, 89)"))
      << r.out;
  auto plan = nlohmann::json::parse(testing::read_file(dir.file("plan.json")));
  EXPECT_EQ(plan["format"], "grafx.plan");
  EXPECT_EQ(plan["n_calls"], 16);
}

TEST(CliSchedule, AdjointPlans) {
  testing::TempDir dir;
  std::string console = dir.file("console.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "2", "--groups", "1", "--chain", "eg", "-o", console})
                .exit_code,
            0);
  auto r = run_grafx({"schedule", console, "--method", "optimal", "--adjoint", "--frozen", "e",
                      "--recompute", "g", "--json", dir.file("adjoint.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The 8 forward steps reversed: out, mix, the group's g and e, mix, the tracks' g and e, in.
  EXPECT_TRUE(contains(r.out, "AdjointPlan: 8 of 8 steps in reverse\n")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "Adjoint #5 (of Render #2)\n  - Node type: gain_pan\n"
                       "  - Cotangent read: slice with (4, 6)\n"
                       "  - Vector-Jacobian product: gain_pan on 2 rows, forward pass "
                       "recomputed from its saved inputs\n"
                       "  - Parameter gradient write: slice with (0, 2)\n"))
      << r.out;
  // The frozen EQs pass cotangents on but write no gradient.
  EXPECT_TRUE(contains(r.out,
                       "  - Node type: eq\n  - Cotangent read: slice with (2, 4)\n"
                       "  - Vector-Jacobian product: eq on 2 rows, from the saved forward "
                       "pass\n  - Aggregation transpose: none\n"))
      << r.out;
  auto adjoint = nlohmann::json::parse(testing::read_file(dir.file("adjoint.json")));
  EXPECT_EQ(adjoint["format"], "grafx.adjoint_plan");
  EXPECT_EQ(adjoint["steps"].size(), 8u);
  // Without source gradients, the first EQs' (frozen) and the sources' steps have nothing to do.
  r = run_grafx({"schedule", console, "--adjoint", "--frozen", "e", "--fixed-sources"});
  EXPECT_TRUE(contains(r.out, "AdjointPlan: 6 of 8 steps in reverse (2 need no gradient)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "Skipped (no gradient needed through them): Render #1 Render #0"))
      << r.out;
  // Bad uses: the options need --adjoint; types the graph lacks.
  r = run_grafx({"schedule", console, "--frozen", "e"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments] --frozen requires --adjoint")) << r.err;
  r = run_grafx({"schedule", console, "--adjoint", "--frozen", "r"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "frozen types: type \"reverb\" has no node in the graph")) << r.err;
  r = run_grafx({"schedule", console, "--adjoint", "--recompute", "nonsense"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "grafx.graph.unknown_type")) << r.err;
}

TEST(CliSchedule, Errors) {
  testing::TempDir dir;
  std::string console = dir.file("console.json");
  ASSERT_EQ(run_grafx({"console", "-o", console}).exit_code, 0);
  auto r = run_grafx({"schedule", console, "--method", "fastest"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(
      contains(r.err, "[grafx.schedule.unknown_method] unknown schedule method \"fastest\""))
      << r.err;
  r = run_grafx({"schedule", console, "--method", "fixed", "--fixed", "ecnsgdr"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.schedule.fixed_exhausted]")) << r.err;
  r = run_grafx({"schedule", console, "--fixed", "e"});
  EXPECT_TRUE(contains(r.err, "--fixed needs --method fixed")) << r.err;
  r = run_grafx({"schedule", console, "--method", "fixed", "--fixed", "eq,flanger"});
  EXPECT_TRUE(contains(r.err, "unknown node type \"flanger\"")) << r.err;
  testing::write_file(dir.file("plan.json"), "keep me");
  r = run_grafx({"schedule", console, "--json", dir.file("plan.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "[grafx.io.exists]")) << r.err;
  EXPECT_EQ(testing::read_file(dir.file("plan.json")), "keep me");
}

// grafx bench: times and memory of a graph's render, as text and as one JSON object.
TEST(CliBench, TimesAndMemoryOfAGraph) {
  testing::TempDir dir;
  std::string console = dir.file("console.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "3", "--groups", "2", "-o", console}).exit_code, 0);
  auto r = run_grafx({"bench", console, "--seconds", "0.2", "--repeats", "2", "--json", "--threads",
                      "1", "--method", "one-by-one"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto result = nlohmann::json::parse(r.out);
  EXPECT_EQ(result["nodes"], 3 + 3 * 7 + 2 + 2 * 7 + 1 + 1);  // ins, strips, mixes, master, out
  EXPECT_EQ(result["calls"], 3 * 7 + 2 + 2 * 7 + 1);          // one-by-one: a call per node
  EXPECT_EQ(result["method"], "one-by-one");
  EXPECT_EQ(result["threads"], 1);
  EXPECT_EQ(result["repeats"], 2);
  for (const char* key : {"forward_ms", "backward_ms", "forward_backward_ms", "peak_memory_mib"})
    EXPECT_GT(result[key].get<double>(), 0) << key;
  // The backward is part of the forward+backward it is timed in.
  EXPECT_LT(result["backward_ms"].get<double>(), result["forward_backward_ms"].get<double>());

  r = run_grafx({"bench", console, "--seconds", "0.2", "--repeats", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "processor calls (optimal, proven optimal)")) << r.out;
  EXPECT_TRUE(contains(r.out, "forward+backward")) << r.out;

  for (auto bad : std::vector<std::vector<std::string>>{
           {"--seconds", "nan"}, {"--method", "fastest"}, {"--repeats", "0"}}) {
    std::vector<std::string> arguments{"bench", console};
    arguments.insert(arguments.end(), bad.begin(), bad.end());
    r = run_grafx(arguments);
    EXPECT_EQ(r.exit_code, 2) << bad[0];
    EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments] " + bad[0])) << r.err;
  }
  r = run_grafx({"bench", dir.file("missing.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "[grafx.io.unreadable]")) << r.err;
}

// grafx bench --stream: real-time factors per block size, of the stream and in a host at
// another rate.
TEST(CliBench, StreamsPerBlockSizeAndInAHostAtAnotherRate) {
  testing::TempDir dir;
  const std::string console = dir.file("console.json");
  ASSERT_EQ(run_grafx({"console", "--tracks", "2", "--groups", "1", "-o", console}).exit_code, 0);
  auto r =
      run_grafx({"bench", console, "--stream", "--seconds", "0.2", "--repeats", "1",
                 "--sample-rate", "16000", "--host-rate", "44100", "--blocks", "64,512", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto result = nlohmann::json::parse(r.out);
  ASSERT_EQ(result["blocks"].size(), 2u);
  EXPECT_EQ(result["blocks"][1]["block"], 512);
  EXPECT_EQ(result["host"]["rate"], 44100);
  ASSERT_EQ(result["host"]["blocks"].size(), 2u);
  for (const auto& row : result["host"]["blocks"]) EXPECT_GT(row["real_time_factor"], 0);
  // More than the stream's own latency (2046 samples at 16 kHz), counted at 44.1 kHz.
  EXPECT_GT(result["host"]["latency_samples"].get<int64_t>(), 2046 * 44100 / 16000);
  r = run_grafx(
      {"bench", console, "--stream", "--seconds", "0.2", "--repeats", "1", "--host-rate", "48000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "in a 48000 Hz host (converted to 30000 Hz and back)")) << r.out;
  for (auto bad : std::vector<std::vector<std::string>>{{"--host-rate", "48000"},
                                                        {"--stream", "--host-rate", "0"},
                                                        {"--stream", "--blocks", "0"}}) {
    std::vector<std::string> arguments{"bench", console};
    arguments.insert(arguments.end(), bad.begin(), bad.end());
    r = run_grafx(arguments);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "[grafx.cli.arguments]")) << r.err;
  }
}

}  // namespace
}  // namespace grafx
