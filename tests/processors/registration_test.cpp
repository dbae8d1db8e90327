// CONTRIBUTING.md's checklist for adding a processor, proven: a processor registered from this
// file alone (no library file names it) appears in consoles by its letter, in the demo's hidden
// consoles through its musical prior, in pictures, in the listing and in the generated contract
// tests; and registration refuses what would break the registry.

#include <grafx/fit/demo.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_support.h"

#include <iostream>

#include <set>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace grafx {
namespace {

/// y = x · 10^(gain_db/20): a gain, the smallest processor worth registering.
class TestGain : public Processor {
 public:
  explicit TestGain(const ProcessorConfig&) {}
  std::string name() const override { return "test_gain"; }
  std::vector<ParameterSpec> parameter_specs() const override {
    return {ParameterSpec::raw("gain_db", {1})
                .physical("gain_db", "dB")
                .about("gain on every channel")};
  }
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override {
    check_arguments(inputs, parameters);
    at::Tensor gain = (parameters.at("gain_db") * (std::log(10.0) / 20)).exp().unsqueeze(-1);
    return {{inputs[0] * gain}, {}};
  }
  TemporalSupport temporal_support(const TensorDict&) const override {
    return TemporalSupport::pointwise();
  }
};

ProcessorDescriptor test_gain_descriptor() {
  auto d          = ProcessorDescriptor::of<TestGain>("test_gain", 't');
  d.summary       = "a test gain, registered by a test file";
  d.response      = ResponsePicture::kMagnitude;
  d.musical_prior = [](const PriorContext& c) {
    return TensorDict{{"gain_db", at::full({1}, c.subgroup ? -3.0 : -9.0, at::kDouble)}};
  };
  return d;
}

const ProcessorRegistration registration(test_gain_descriptor());

/// The same gain under another name and without a chain letter: chains name it.
class TestTrim : public TestGain {
 public:
  using TestGain::TestGain;
  std::string name() const override { return "test_trim"; }
};
const ProcessorRegistration letterless([] {
  auto d    = ProcessorDescriptor::of<TestTrim>("test_trim", 0);
  d.summary = "a test gain without a chain letter";
  return d;
}());

/// A console of two tracks through `chain` (one test gain type) renders their mix at −6 and
/// +6 dB.
void expect_a_console_of_two_tracks_renders(const std::vector<std::string>& chain) {
  ASSERT_EQ(chain.size(), 1u);
  const std::string& type = chain[0];
  ConsoleOptions options;
  options.n_tracks = 2;
  options.chain    = chain;
  Graph g          = build_console(options, registry_node_types()).graph;
  EXPECT_EQ(g.nodes_of_type(type).size(), 2u);
  Processors processors = make_processors(g.types(), {8000});
  Parameters p          = create_parameters(g, processors, {0, at::kDouble, false});
  p[type]["gain_db"]    = at::tensor({-6.0, 6.0}, at::kDouble).view({2, 1});
  at::Tensor x          = at::randn({2, 2, 100}, at::kDouble);
  at::Tensor y          = render(make_render_plan(to_tensor(g)), processors, p, x).outputs[0];
  EXPECT_TRUE(at::allclose(y, x[0] * std::pow(10.0, -6.0 / 20) + x[1] * std::pow(10.0, 6.0 / 20)))
      << type;
}

TEST(Registration, AProcessorNeedsNoLetter) {
  const NodeTypes types = registry_node_types();
  EXPECT_EQ(parse_chain("eq,test_trim,t", types),
            (std::vector<std::string>{"eq", "test_trim", "test_gain"}));
  EXPECT_EQ(parse_chain("et", types), (std::vector<std::string>{"eq", "test_gain"}));
  EXPECT_EQ(type_letter("test_trim"), 't');  // drawn by its first character
  EXPECT_NE(describe_processor(*find_processor("test_trim"), 8000, false)
                .find("test_trim                 -  a test gain without a chain letter"),
            std::string::npos);
  EXPECT_GRAFX_ERROR(parse_chain("eq,,t", types), "grafx.graph.unknown_type", "");
  EXPECT_GRAFX_ERROR(parse_chain("eq,", types), "grafx.graph.unknown_type", "comma-separated");
  EXPECT_GRAFX_ERROR(parse_chain("eq,no_such_type", types), "grafx.graph.unknown_type",
                     "no_such_type");
  expect_a_console_of_two_tracks_renders(parse_chain("test_trim", types));
}

TEST(Registration, AConsoleUsesTheProcessorByItsLetter) {
  EXPECT_EQ(chain_from_letters("et"), (std::vector<std::string>{"eq", "test_gain"}));
  EXPECT_EQ(type_letter("test_gain"), 't');
  expect_a_console_of_two_tracks_renders(chain_from_letters("t"));
}

TEST(Registration, TheDemoSetsItFromItsMusicalPrior) {
  ConsoleOptions options;
  options.n_tracks      = 2;
  options.track_groups  = {0, 0};
  options.chain         = {"test_gain"};
  Graph g               = build_console(options, registry_node_types()).graph;
  Processors processors = make_processors(g.types(), {8000});
  Parameters hidden     = musical_parameters(g, processors, 8000, 1);
  // Rows in id order: the two tracks, then the subgroup.
  EXPECT_TRUE(at::allclose(hidden.at("test_gain").at("gain_db").to(at::kDouble).flatten(),
                           at::tensor({-9.0, -9.0, -3.0}, at::kDouble)));
}

TEST(Registration, PicturesListingsAndContractTestsIncludeIt) {
  auto processor = make_processor("test_gain", {8000});
  Plot plot      = processor_response(*processor, default_parameters(*processor), 8000);
  EXPECT_TRUE(plot.options.log_x) << "its descriptor asks for a magnitude response";
  std::string listing = describe_processor(processor_descriptor("test_gain"), 8000, true);
  EXPECT_TRUE(testing::contains(listing, "test_gain")) << listing;
  EXPECT_TRUE(testing::contains(listing, "a test gain, registered by a test file")) << listing;
  EXPECT_TRUE(testing::contains(listing, "gain_db (dB)")) << listing;
  int64_t contract_tests = 0;
  const auto& unit       = *::testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s)
    for (int t = 0; t < unit.GetTestSuite(s)->total_test_count(); ++t)
      contract_tests +=
          testing::contains(unit.GetTestSuite(s)->GetTestInfo(t)->name(), "/test_gain");
  EXPECT_GE(contract_tests, 8) << "the generated contract tests cover every registered processor";
}

TEST(Registration, NoFileOutsideTheProcessorsTestsAProcessorsName) {
  // Everything about a type is in its own files: elsewhere, a registered name in a condition
  // (if, ==, !=, ?:, case, count, find) is knowledge that belongs in a descriptor.
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const std::regex condition(R"re(\bif\s*\(|==|!=|\?|\bcase\b|\.count\(|\.find\(|rfind\()re");
  std::string found;
  for (const char* folder : {"src", "apps", "include"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(source) + "/" + folder)) {
      std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.find("/processors/") != std::string::npos) continue;
      std::ifstream file(path);
      int number = 0;
      for (std::string line; std::getline(file, line);) {
        ++number;
        std::string code = line.substr(0, line.find("//"));  // comments may name anything
        if (!std::regex_search(code, condition)) continue;
        for (const auto& d : processor_registry())
          if (code.find("\"" + d.name + "\"") != std::string::npos)
            found += path + ":" + std::to_string(number) + ": " + line + "\n";
      }
    }
  }
  EXPECT_TRUE(found.empty()) << found;
}

TEST(Registration, TheDocsParameterTablesAreTheSpecs) {
  // Each registered processor's parameters are tabled in docs/processors from its specs alone.
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const std::regex marker(R"(<!-- parameters of (.*) at \d+ Hz: generated by)");
  std::set<std::string> tabled;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(source) + "/docs/processors")) {
    const std::string path = entry.path().string(), text = testing::read_file(path);
    EXPECT_EQ(with_current_parameter_tables(text, path), text)
        << path << " differs from the specs: run grafx processors --update-docs "
        << "docs/processors/*.md";
    for (std::sregex_iterator m(text.begin(), text.end(), marker), end; m != end; ++m) {
      std::stringstream types((*m)[1].str());
      for (std::string type; std::getline(types, type, ',');)
        tabled.insert(type.substr(type.find_first_not_of(' ')));
    }
  }
  for (const auto& d : processor_registry())
    if (d.name.rfind("test_", 0) != 0 && !d.make({44100})->parameter_specs().empty()) {
      EXPECT_TRUE(tabled.count(d.name)) << d.name << " has no generated parameter table";
    }

  // A table tells what the specs say: the compressor's threshold starts at
  // (0 − 6)·10/ln 10 = −26.06 dB (raw N(0, 0.01²)), |-bars in a text are escaped.
  const std::string table = parameter_table({"compressor", "noise_gate"}, 30000);
  EXPECT_TRUE(testing::contains(table, "| types | raw name | shape | physical | range | initial |"))
      << table;
  EXPECT_TRUE(testing::contains(table, "| all | `log_knee` | [1] | `knee_db` (dB) |")) << table;
  EXPECT_TRUE(testing::contains(table,
                                "| `compressor` | `log_threshold` | [1] | `threshold_db` "
                                "(dB) | any | -26.06 dB (raw 0 ± 0.01) | linear in dB |"))
      << table;
  EXPECT_TRUE(testing::contains(parameter_table({"pole_zero"}, 30000), "\\|p\\| = tanh\\|raw\\|"));
  EXPECT_GRAFX_ERROR(parameter_table({"flanger"}, 30000), "grafx.processor.unknown", "flanger");
  EXPECT_GRAFX_ERROR(with_current_parameter_tables(
                         "x\n<!-- parameters of eq at 3e4 Hz: generated by grafx processors "
                         "--update-docs -->\n<!-- end of generated parameters -->\n",
                         "page.md"),
                     "grafx.io.format",
                     "page.md:2: expected a whole number of Hz, but got \"3e4\"");
  EXPECT_GRAFX_ERROR(with_current_parameter_tables(
                         "<!-- parameters of  at 30000 Hz: generated by grafx processors "
                         "--update-docs -->\n<!-- end of generated parameters -->\n",
                         "page.md"),
                     "grafx.io.format", "page.md:1: expected the processor types to table");
  EXPECT_GRAFX_ERROR(parameter_table({"eq"}, 0), "grafx.processor.config", "");
  EXPECT_GRAFX_ERROR(parameter_table({"eq"}, 9999999), "grafx.processor.config", "");
}

TEST(Registration, GrafxNamesAreGrafxsExportedProcessors) {
  // GRAFX v0.6.0's processors/__init__.py exports, all 36: the
  // gain-staging and dry/wet wrappers are features of every node and of the fit here.
  const std::set<std::string> exported = {"DryWet",
                                          "GainStagingRegularization",
                                          "ParallelMix",
                                          "SerialChain",
                                          "MultitapDelay",
                                          "ApproxCompressor",
                                          "ApproxNoiseGate",
                                          "Compressor",
                                          "NoiseGate",
                                          "ZeroPhaseFIREqualizer",
                                          "GraphicEqualizer",
                                          "NewZeroPhaseFIREqualizer",
                                          "ParametricEqualizer",
                                          "AllPassFilter",
                                          "BandPassFilter",
                                          "BandRejectFilter",
                                          "BiquadFilter",
                                          "FIRFilter",
                                          "HighPassFilter",
                                          "HighShelf",
                                          "LowPassFilter",
                                          "LowShelf",
                                          "PeakingFilter",
                                          "PoleZeroFilter",
                                          "StateVariableFilter",
                                          "ChebyshevDistortion",
                                          "PiecewiseTanhDistortion",
                                          "PowerDistortion",
                                          "TanhDistortion",
                                          "FilteredNoiseShapingReverb",
                                          "STFTMaskedNoiseReverb",
                                          "MidSideToStereo",
                                          "MonoToStereo",
                                          "SideGainImager",
                                          "StereoGain",
                                          "StereoToMidSide"};
  std::set<std::string> covered;
  for (const auto& d : processor_registry()) {
    // One or more names, ", " between them.
    for (size_t start = 0; start < d.grafx_name.size();) {
      size_t end       = std::min(d.grafx_name.find(", ", start), d.grafx_name.size());
      std::string name = d.grafx_name.substr(start, end - start);
      EXPECT_TRUE(exported.count(name)) << d.name << ": " << name;
      covered.insert(name);
      start = end + 2;
    }
  }
  for (const auto& [name, where] : grafx_classes_without_a_type()) {
    EXPECT_TRUE(exported.count(name)) << name;
    EXPECT_TRUE(covered.insert(name).second) << name << " is also a type";
  }
  ASSERT_EQ(exported.size(), 36u);
  EXPECT_EQ(covered, exported);
  EXPECT_TRUE(testing::contains(describe_processor(*find_processor("compressor"), 44100, false),
                                "; GRAFX: Compressor"));
  EXPECT_TRUE(testing::contains(describe_processor(*find_processor("crossover"), 44100, false),
                                "; not in GRAFX"));
}

TEST(Registration, ProcessorsAreMadeForSampleRatesThatExist) {
  EXPECT_GRAFX_ERROR(
      make_processor("compressor", {0}), "grafx.processor.config",
      "processor \"compressor\": expected a sample rate of 1 to 1536000 Hz, but got 0");
  EXPECT_GRAFX_ERROR(make_processor(NodeType{"glue", {"main"}, {"main"}, "compressor"}, {-44100}),
                     "grafx.processor.config", "node type \"glue\"");
  EXPECT_GRAFX_ERROR(make_processor("eq", {kMaxSampleRate + 1}), "grafx.processor.config",
                     "but got 1536001 Hz");
  EXPECT_NO_THROW(make_processor("gain_pan", {kMaxSampleRate}));
}

TEST(Registration, RefusesWhatWouldBreakTheRegistry) {
  auto variant = [](std::string name, char letter) {
    ProcessorDescriptor d = test_gain_descriptor();
    d.name                = std::move(name);
    d.letter              = letter;
    return d;
  };
  EXPECT_GRAFX_ERROR(register_processor(variant("test_gain", 'O')), "grafx.processor.registry",
                     "the name is taken");
  EXPECT_GRAFX_ERROR(register_processor(variant("other", 'e')), "grafx.processor.registry",
                     "letter 'e' is taken by \"eq\"");
  EXPECT_GRAFX_ERROR(register_processor(variant("other", 'm')), "grafx.processor.registry",
                     "letter 'm' is the mix type's");
  EXPECT_GRAFX_ERROR(register_processor(variant("other", '7')), "grafx.processor.registry",
                     "expected a letter a-z or A-Z (or none)");
  EXPECT_GRAFX_ERROR(register_processor(variant("other", 'O')), "grafx.processor.registry",
                     "its processor calls itself \"test_gain\"");
  ProcessorDescriptor no_make = variant("other", 'O');
  no_make.make                = nullptr;
  EXPECT_GRAFX_ERROR(register_processor(no_make), "grafx.processor.registry",
                     "expected a make function");
  EXPECT_EQ(find_processor("other"), nullptr);
  // A physical value with a mapping under its raw name: `--set gain_db=...` would be ambiguous.
  struct Ambiguous : public TestGain {
    using TestGain::TestGain;
    std::string name() const override { return "ambiguous"; }
    std::vector<ParameterSpec> parameter_specs() const override {
      return {ParameterSpec::raw("gain_db", {1})
                  .physical("gain_db", "dB", [](const at::Tensor& raw) { return 2 * raw; })
                  .about("a gain")};
    }
  };
  EXPECT_GRAFX_ERROR(register_processor(ProcessorDescriptor::of<Ambiguous>("ambiguous", 'O')),
                     "grafx.processor.registry", "needs a name other than its raw one");
}

}  // namespace
}  // namespace grafx
