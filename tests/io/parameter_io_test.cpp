// safetensors files (byte layout, validation) and grafx parameter files.

#include <grafx/graph/random_graph.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/safetensors.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <set>

namespace grafx {
namespace {

std::string little_endian_u64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((v >> (8 * i)) & 0xff);
  return s;
}

TEST(Safetensors, LayoutIsTheSpecifiedOne) {
  testing::TempDir dir;
  at::Tensor a = at::tensor({1.5f, -2.0f, 3.25f});
  at::Tensor b = at::arange(6, at::kLong).view({2, 3});
  save_safetensors(dir.file("t.safetensors"), {{"b", b}, {"a", a}}, {{"k", "v"}});
  std::string bytes = testing::read_file(dir.file("t.safetensors"));
  uint64_t n        = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "data aligned to 8 bytes";
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json({3}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(header["b"]["dtype"], "I64");
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({12, 60}));
  EXPECT_EQ(header["__metadata__"]["k"], "v");
  float first;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  EXPECT_EQ(first, 1.5f);
  EXPECT_EQ(bytes.size(), 8 + n + 60);
}

TEST(Safetensors, RoundTripsEveryDtype) {
  testing::TempDir dir;
  TensorDict tensors = {
      {"f32", at::randn({2, 3})},
      {"f64", at::randn({4}, at::kDouble)},
      {"f16", at::randn({5}).to(at::kHalf)},
      {"bf16", at::randn({2, 2}).to(at::kBFloat16)},
      {"i64", at::arange(7, at::kLong)},
      {"i32", at::arange(3, at::kInt)},
      {"u8", at::arange(4, at::kByte)},
      {"bool", at::tensor({1, 0}).to(at::kBool)},
      {"empty", at::zeros({0, 3})},
      {"scalar", at::tensor(3.0)},
  };
  save_safetensors(dir.file("all.safetensors"), tensors);
  SafetensorsFile file = load_safetensors(dir.file("all.safetensors"));
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    EXPECT_EQ(file.tensors.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(at::equal(file.tensors.at(name), t)) << name;
  }
  EXPECT_GRAFX_ERROR(save_safetensors(dir.file("all.safetensors"), tensors), "grafx.io.exists",
                     "refusing");
}

TEST(Safetensors, ReadsFilesWrittenByOtherTools) {
  // Key order, spacing and padding as Python's safetensors writes them.
  testing::TempDir dir;
  std::string json =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  float values[2] = {0.25f, -4.0f};
  testing::write_file(
      dir.file("py.safetensors"),
      little_endian_u64(json.size()) + json + std::string(reinterpret_cast<char*>(values), 8));
  SafetensorsFile file = load_safetensors(dir.file("py.safetensors"));
  EXPECT_TRUE(at::equal(file.tensors.at("w"), at::tensor({0.25f, -4.0f})));
  EXPECT_EQ(file.metadata.at("format"), "pt");
}

TEST(Safetensors, MalformedFilesAreClearErrors) {
  testing::TempDir dir;
  auto write = [&](const std::string& header, const std::string& data) {
    testing::write_file(dir.file("bad.safetensors"),
                        little_endian_u64(header.size()) + header + data);
    return dir.file("bad.safetensors");
  };
  testing::write_file(dir.file("short.safetensors"), "abc");
  EXPECT_GRAFX_ERROR(load_safetensors(dir.file("short.safetensors")), "grafx.io.format",
                     "too short");
  testing::write_file(dir.file("long.safetensors"), little_endian_u64(1000) + "{}");
  EXPECT_GRAFX_ERROR(load_safetensors(dir.file("long.safetensors")), "grafx.io.format",
                     "exceeds the file");
  EXPECT_GRAFX_ERROR(load_safetensors(write("{oops", "")), "grafx.io.format",
                     "invalid JSON header");
  EXPECT_GRAFX_ERROR(load_safetensors(write("[]", "")), "grafx.io.format", "not a JSON object");
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})", "abcd")),
      "grafx.io.format", "tensor \"x\": unsupported dtype \"F99\"");
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd")),
      "grafx.io.format", "span 4 bytes, but the shape needs 8");
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcd")),
      "grafx.io.format", "outside the data");
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd")),
      "grafx.io.format", "sizes ≥ 0");
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                             "abcd")),
      "grafx.io.format", "overlaps");
  EXPECT_GRAFX_ERROR(load_safetensors(write(
                         R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcdefgh")),
                     "grafx.io.format", "does not fill the file");
  EXPECT_GRAFX_ERROR(load_safetensors(write(R"({"x":{"dtype":"F32"}})", "")), "grafx.io.format",
                     "expected an object with dtype, shape and data_offsets");
  EXPECT_GRAFX_ERROR(load_safetensors(write(R"({"__metadata__":{"a":1}})", "")), "grafx.io.format",
                     "__metadata__.a: expected a string");
  EXPECT_GRAFX_ERROR(load_safetensors(dir.file("none.safetensors")), "grafx.io.unreadable",
                     "none.safetensors");
  // Sizes whose product wraps around 2^64 (2^40 · 2^40 · 2^40 · 2^4 = 0 mod 2^64): refused
  // before the multiplication, not allocated.
  EXPECT_GRAFX_ERROR(
      load_safetensors(write(R"({"x":{"dtype":"F32","shape":[1099511627776,1099511627776,)"
                             R"(1099511627776,16],"data_offsets":[0,0]}})",
                             "")),
      "grafx.io.format", "shape is too large");
}

TEST(ParameterFile, RoundTripsAndChecksTheGraph) {
  testing::TempDir dir;
  Graph graph           = random_graph(3, RandomGraphOptions{});
  Processors processors = testing::random_graph_processors(graph.types());
  Parameters p          = create_parameters(graph, processors, {1});
  save_parameters(dir.file("p.safetensors"), graph, p);
  Parameters loaded = load_parameters(dir.file("p.safetensors"), graph);
  ASSERT_EQ(loaded.size(), p.size());
  for (const auto& [type, values] : p)
    for (const auto& [name, t] : values.named())
      EXPECT_TRUE(at::equal(loaded.at(type).at(name), t.detach())) << type << name;
  SafetensorsFile raw = load_safetensors(dir.file("p.safetensors"));
  EXPECT_EQ(raw.metadata.at("format"), "grafx.parameters");
  EXPECT_EQ(raw.metadata.at("version"), "2");
  EXPECT_TRUE(raw.tensors.count("p0.parameters.a"));

  Graph other = graph;
  other.remove(other.nodes_of_type("p0").back());
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("p.safetensors"), other), "grafx.io.mismatch",
                     "p0 parameters are for nodes [");
  save_safetensors(dir.file("plain.safetensors"), {{"p0.a", at::zeros({1})}});
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("plain.safetensors"), graph), "grafx.io.format",
                     "not a grafx parameter file");
  save_safetensors(dir.file("odd.safetensors"), {{"noname", at::zeros({1})}},
                   {{"format", "grafx.parameters"}});
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("odd.safetensors"), graph), "grafx.io.format",
                     "is not named <type>.<parameter>");
  save_safetensors(dir.file("alien.safetensors"), {{"chorus.x", at::zeros({1})}},
                   {{"format", "grafx.parameters"}});
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("alien.safetensors"), graph), "grafx.io.mismatch",
                     "type \"chorus\", which the graph does not have");

  // node_ids in any JSON spelling (Python's json.dumps puts spaces after commas).
  SafetensorsFile spaced = load_safetensors(dir.file("p.safetensors"));
  for (auto& [key, value] : spaced.metadata)
    if (key.rfind("node_ids.", 0) == 0) {
      std::string with_spaces;
      for (char c : value) with_spaces += c == ',' ? std::string(", ") : std::string(1, c);
      value = with_spaces;
    }
  save_safetensors(dir.file("spaced.safetensors"), spaced.tensors, spaced.metadata);
  EXPECT_EQ(load_parameters(dir.file("spaced.safetensors"), graph).size(), p.size());
  spaced.metadata["node_ids.p0"] = "[1, two]";
  save_safetensors(dir.file("bad_ids.safetensors"), spaced.tensors, spaced.metadata);
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("bad_ids.safetensors"), graph), "grafx.io.format",
                     "metadata \"node_ids.p0\" is \"[1, two]\"; expected a JSON list of node ids");

  // The sample rate the parameters were made for travels with them.
  EXPECT_EQ(read_parameter_file(dir.file("p.safetensors"), graph).sample_rate, 0);
  save_parameters(dir.file("fit.safetensors"), graph, p, false, 30000);
  EXPECT_EQ(read_parameter_file(dir.file("fit.safetensors"), graph).sample_rate, 30000);
  SafetensorsFile fit         = load_safetensors(dir.file("fit.safetensors"));
  fit.metadata["sample_rate"] = "30k";
  save_safetensors(dir.file("bad_rate.safetensors"), fit.tensors, fit.metadata);
  EXPECT_GRAFX_ERROR(read_parameter_file(dir.file("bad_rate.safetensors"), graph),
                     "grafx.io.format",
                     "metadata \"sample_rate\" is \"30k\"; expected a positive whole number of Hz");
}

// Wet amounts and curves are stored beside each type's parameters (version 2); files of
// version 1, which kept them among the parameters as "dry_wet" and "<name>@curve", read into
// the same places.
TEST(ParameterFile, WetAmountsAndCurvesHaveTheirOwnPlacesAndVersion1FilesMigrate) {
  testing::TempDir dir;
  Graph g(registry_node_types());
  NodeId in = g.add("in"), gain = g.add("gain_pan"), plain = g.add("gain_pan"), out = g.add("out");
  g.connect(in, gain);
  g.connect(gain, plain);
  g.connect(plain, out);
  g.set_dry_wet(gain);
  g.set_automation({10.0, 4});
  g.set_automated(gain, "log_gain");
  g.set_automated(gain, "dry_wet");
  Processors processors  = make_processors(g.types(), {30000});
  Parameters p           = create_parameters(g, processors, {3, at::kDouble, false});
  TypeParameters& values = p.at("gain_pan");
  values.wet.copy_(at::tensor({0.5, -1.5}, at::kDouble).view({2, 1}));
  values.curves.at("log_gain").normal_();
  EXPECT_EQ(values.own.size(), 1u);     // log_gain: nothing of the nodes' own among them
  EXPECT_EQ(values.curves.size(), 2u);  // log_gain's and the wet amount's
  EXPECT_EQ(values.curves.at("dry_wet").sizes(), at::IntArrayRef({2, 4, 1}));
  save_parameters(dir.file("p.safetensors"), g, p);
  SafetensorsFile file = load_safetensors(dir.file("p.safetensors"));
  std::set<std::string> keys;
  for (const auto& [key, tensor] : file.tensors) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"gain_pan.parameters.log_gain", "gain_pan.wet",
                                         "gain_pan.curves.log_gain", "gain_pan.curves.dry_wet"}));
  auto expect_same = [&](const Parameters& loaded) {
    const TypeParameters& l = loaded.at("gain_pan");
    EXPECT_TRUE(at::equal(l.own.at("log_gain"), values.own.at("log_gain")));
    EXPECT_TRUE(at::equal(l.wet, values.wet));
    ASSERT_EQ(l.curves.size(), 2u);
    EXPECT_TRUE(at::equal(l.curves.at("log_gain"), values.curves.at("log_gain")));
    EXPECT_TRUE(at::equal(l.curves.at("dry_wet"), values.curves.at("dry_wet")));
  };
  expect_same(load_parameters(dir.file("p.safetensors"), g));

  // Version 1 as grafx wrote it before, names and all.
  SafetensorsFile v1     = file;
  v1.tensors             = {{"gain_pan.log_gain", values.own.at("log_gain")},
                            {"gain_pan.dry_wet", values.wet},
                            {"gain_pan.log_gain@curve", values.curves.at("log_gain")},
                            {"gain_pan.dry_wet@curve", values.curves.at("dry_wet")}};
  v1.metadata["version"] = "1";
  save_safetensors(dir.file("v1.safetensors"), v1.tensors, v1.metadata);
  expect_same(load_parameters(dir.file("v1.safetensors"), g));
  v1.metadata.erase("version");  // the earliest files recorded none
  save_safetensors(dir.file("v0.safetensors"), v1.tensors, v1.metadata);
  expect_same(load_parameters(dir.file("v0.safetensors"), g));
  // A render takes them as they are.
  RenderOptions options;
  options.time = {30000, 0};
  EXPECT_NO_THROW(render(make_render_plan(to_tensor(g)), processors,
                         load_parameters(dir.file("v1.safetensors"), g),
                         at::zeros({1, 2, 64}, at::kDouble), options));

  // Version 1's names are not version 2's, and a later version is refused by name.
  SafetensorsFile mixed             = file;
  mixed.tensors["gain_pan.dry_wet"] = values.wet;
  save_safetensors(dir.file("mixed.safetensors"), mixed.tensors, mixed.metadata);
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("mixed.safetensors"), g), "grafx.io.format",
                     "tensor \"gain_pan.dry_wet\" is not named <type>.parameters.<name>, "
                     "<type>.wet or <type>.curves.<parameter>");
  SafetensorsFile later     = file;
  later.metadata["version"] = "3";
  save_safetensors(dir.file("later.safetensors"), later.tensors, later.metadata);
  EXPECT_GRAFX_ERROR(load_parameters(dir.file("later.safetensors"), g), "grafx.io.format",
                     "parameter file version \"3\"; this grafx reads versions 1 to 2");
}

TEST(ParameterFile, PhysicalJsonListsEveryNode) {
  Graph graph           = random_graph(3, RandomGraphOptions{});
  Processors processors = testing::random_graph_processors(graph.types());
  Parameters p          = create_parameters(graph, processors, {1});
  auto json             = nlohmann::json::parse(physical_parameters_json(graph, processors, p));
  EXPECT_EQ(json["format"], "grafx.physical_parameters");
  int64_t processors_count = 0;
  for (const auto& [type, values] : p) processors_count += values.own.begin()->second.size(0);
  EXPECT_EQ(int64_t(json["nodes"].size()), processors_count);
  const auto& first = json["nodes"][0];
  EXPECT_TRUE(first.contains("id") && first.contains("type") && first.contains("parameters"));
  EXPECT_EQ(json["units"]["p0"]["a"]["description"], "gain per channel");
}

}  // namespace
}  // namespace grafx
