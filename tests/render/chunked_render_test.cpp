// Chunked rendering (render/chunked.h): the graph's temporal support from its processors', and
// songs rendered in chunks equal to songs rendered whole, for consoles of every kind of
// processor, batched sources, both dtypes and chunk sizes down to a few samples.

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/eq.h>
#include <grafx/render/chunked.h>
#include <grafx/render/parameters.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

namespace grafx {
namespace {

using testing::relative_error;

constexpr SampleRate kRate = 4000;

struct Song {
  Graph graph;
  RenderPlan plan;
  Processors processors;
  Parameters parameters;
  at::Tensor sources;
};

Song console_setup(const std::vector<std::string>& chain, at::ScalarType dtype,
                   int64_t length = 5 * kRate) {
  Song s;
  s.graph      = routed_console(chain);
  s.plan       = make_render_plan(to_tensor(s.graph), ScheduleMethod::kOptimal);
  s.processors = make_processors(s.graph.types(), {kRate});
  s.parameters = create_parameters(s.graph, s.processors, {5, dtype, false});
  at::manual_seed(6);
  for (auto& [type, tensors] : s.parameters)  // wider than the initial spread: processors act
    for (const auto& [name, t] : tensors.named()) tensors[name] = t + 0.3 * at::randn_like(t);
  s.sources = at::randn({4, 1, length}, at::TensorOptions().dtype(dtype)) * 0.3;
  return s;
}

const std::vector<std::string> kChains[] = {
    {"eq", "compressor", "noise_gate", "gain_pan", "delay"},
    {"parametric_eq_midside", "compressor_ballistics", "graphic_eq", "fir_filter",
     "state_variable_filter", "tanh_distortion", "stereo_imager", "gain_pan"},
};

TEST(ChunkedRender, ConsolesInChunksEqualTheWholeRender) {
  for (const auto& chain : kChains)
    for (auto dtype : {at::kDouble, at::kFloat}) {
      SCOPED_TRACE(chain.front() + (dtype == at::kDouble ? ", float64" : ", float32"));
      Song s           = console_setup(chain, dtype);
      at::Tensor whole = render(s.plan, s.processors, s.parameters, s.sources).outputs;
      ChunkOptions options;
      options.chunk_samples = 3001;  // not a divisor of the length: a shorter last chunk
      at::Tensor chunked = render_in_chunks(s.plan, s.processors, s.parameters, s.sources, options);
      ASSERT_EQ(chunked.sizes(), whole.sizes());
      EXPECT_GT(whole.abs().max().item<double>(), 0.01);
      EXPECT_LT(relative_error(chunked, whole), dtype == at::kDouble ? 1e-8 : 2e-5);
    }
}

TEST(ChunkedRender, ChunksAreHandedOverInOrderAndCoverTheSong) {
  Song s = console_setup(kChains[0], at::kDouble, 1000);
  ChunkOptions options;
  options.chunk_samples = 300;
  std::vector<std::pair<int64_t, int64_t>> seen;
  render_chunks(
      s.plan, s.processors, s.parameters, s.sources,
      [&](int64_t start, const at::Tensor& y) {
        seen.push_back({start, y.size(-1)});
      },
      options);
  std::vector<std::pair<int64_t, int64_t>> expected{{0, 300}, {300, 300}, {600, 300}, {900, 100}};
  EXPECT_EQ(seen, expected);
  options.chunk_samples = 1;  // the smallest chunks still equal the whole
  at::Tensor tiny =
      render_in_chunks(s.plan, s.processors, s.parameters, s.sources.narrow(-1, 0, 40), options);
  at::Tensor whole =
      render(s.plan, s.processors, s.parameters, s.sources.narrow(-1, 0, 40)).outputs;
  EXPECT_LT(relative_error(tiny, whole), 1e-9);
}

TEST(ChunkedRender, BatchedSourcesAndPerItemParametersInChunks) {
  Song s           = console_setup(kChains[0], at::kDouble, 3 * kRate);
  at::Tensor batch = at::stack({s.sources, 0.5 * s.sources.flip(-1)});  // B×K×C×L
  for (auto& [type, tensors] : s.parameters)  // B×N×...: one set per item
    for (const auto& [name, t] : tensors.named())
      tensors[name] = at::stack({t, t + 0.2 * at::randn_like(t)});
  at::Tensor whole = render(s.plan, s.processors, s.parameters, batch).outputs;
  ChunkOptions options;
  options.chunk_samples = 2000;
  at::Tensor chunked    = render_in_chunks(s.plan, s.processors, s.parameters, batch, options);
  ASSERT_EQ(chunked.sizes(), whole.sizes());
  EXPECT_LT(relative_error(chunked, whole), 1e-8);
}

TEST(ChunkedRender, TheGraphsSupportIsTheWidestSumAlongAPath) {
  // in → eq → delay → out, and in → out directly: the path through both counts.
  Graph g(registry_node_types());
  NodeId in = g.add("in"), eq = g.add("eq"), delay = g.add("delay"), mix = g.add("mix"),
         out = g.add("out");
  g.connect(in, eq);
  g.connect(eq, delay);
  g.connect(delay, mix);
  g.connect(in, mix);
  g.connect(mix, out);
  RenderPlan plan         = make_render_plan(to_tensor(g), ScheduleMethod::kOptimal);
  Processors processors   = make_processors(g.types(), {kRate});
  Parameters parameters   = create_parameters(g, processors, {1, at::kFloat, false});
  TemporalSupport support = temporal_support(plan, processors, parameters);
  auto* multitap          = dynamic_cast<const MultitapDelay*>(processors.at("delay").get());
  ASSERT_NE(multitap, nullptr);
  const int64_t eq_half = Equalizer::kBins - 1, delay_length = 20 * multitap->segment_length();
  EXPECT_EQ(support.past_samples, eq_half + delay_length - 1);
  EXPECT_EQ(support.future_samples, eq_half);
}

TEST(ChunkedRender, RefusesChunksWithoutSamples) {
  Song s = console_setup(kChains[0], at::kFloat, 500);
  ChunkOptions options;
  options.chunk_samples = 0;
  EXPECT_GRAFX_ERROR(render_in_chunks(s.plan, s.processors, s.parameters, s.sources, options),
                     "grafx.render.chunk_size", "at least one sample");
}

}  // namespace
}  // namespace grafx
