// safetensors files (byte layout, validation) and grafx parameter files.

#include <grafx/graph/random_graph.h>
#include <grafx/io/parameter_file.h>
#include <grafx/io/safetensors.h>
#include <grafx/render/parameters.h>

#include "support/test_processors.h"
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>

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
  for (const auto& [type, named] : p)
    for (const auto& [name, t] : named)
      EXPECT_TRUE(at::equal(loaded.at(type).at(name), t.detach())) << type << name;
  SafetensorsFile raw = load_safetensors(dir.file("p.safetensors"));
  EXPECT_EQ(raw.metadata.at("format"), "grafx.parameters");
  EXPECT_TRUE(raw.tensors.count("p0.a"));

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

TEST(ParameterFile, PhysicalJsonListsEveryNode) {
  Graph graph           = random_graph(3, RandomGraphOptions{});
  Processors processors = testing::random_graph_processors(graph.types());
  Parameters p          = create_parameters(graph, processors, {1});
  auto json             = nlohmann::json::parse(physical_parameters_json(graph, processors, p));
  EXPECT_EQ(json["format"], "grafx.physical_parameters");
  int64_t processors_count = 0;
  for (const auto& [type, named] : p) processors_count += named.begin()->second.size(0);
  EXPECT_EQ(int64_t(json["nodes"].size()), processors_count);
  const auto& first = json["nodes"][0];
  EXPECT_TRUE(first.contains("id") && first.contains("type") && first.contains("parameters"));
  EXPECT_EQ(json["units"]["p0"]["a"]["description"], "gain per channel");
}

}  // namespace
}  // namespace grafx
