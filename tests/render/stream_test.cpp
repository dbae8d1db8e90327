// The stream engine (stream/stream.h): every processor and consoles of every kind streamed
// block by block equal the offline render shifted by the declared latency, for block sizes 1,
// 7, 64, 512, 4096 and random ones; process() allocates nothing; bad blocks are contained.

#include <grafx/error.h>
#include <grafx/graph/console.h>
#include <grafx/render/make_stream.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>
#include <grafx/stream/form.h>
#include <grafx/stream/host_stream.h>
#include <grafx/stream/resampler.h>

#include "stream/stream_state.h"
#include "support/test_support.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>
#include <random>

// Every heap allocation of the test binary, counted while `g_counting` is set.
namespace {
std::atomic<int64_t> g_allocations{0};
std::atomic<bool> g_counting{false};
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace grafx {
namespace {

constexpr SampleRate kRate = 8000;

/// One node of `type` fed by one source per inlet, every outlet summed into the output.
Graph single_node(const std::string& type) {
  Graph g(registry_node_types());
  const NodeId node = g.add(type);
  for (const std::string& inlet : make_processor(type, {kRate})->inlets())
    g.connect(g.add("in"), node, "main", inlet);
  const NodeId out = g.add("out");
  for (const std::string& outlet : make_processor(type, {kRate})->outlets())
    g.connect(node, out, outlet, "main");
  return g;
}

/// Parameters spread wider than the initial ones, so that processors act.
Parameters acting_parameters(const Graph& graph, const Processors& processors, uint64_t seed) {
  Parameters parameters = create_parameters(graph, processors, {seed, at::kFloat, false});
  at::manual_seed(int64_t(seed));
  for (auto& [type, named] : parameters)
    for (const auto& [name, t] : named.named()) named[name] = t + 0.3 * at::randn_like(t);
  return parameters;
}

/// Block sizes: all `size`, or random in 1..max (size 0).
std::function<int64_t()> blocks_of(int64_t size, int64_t max) {
  auto rng = std::make_shared<std::mt19937>(7);
  return
      [=] { return size ? size : int64_t(std::uniform_int_distribution<int>(1, int(max))(*rng)); };
}

/// Renders from the song's start at kRate (where automation curves are read).
RenderOptions on_the_clock() {
  RenderOptions options;
  options.time = {kRate, 0};
  return options;
}

/// max |streamed − offline| / peak over the block sequences of the issue.
void expect_streams_as_rendered(const Graph& graph, const Processors& processors,
                                const Parameters& parameters, const at::Tensor& sources,
                                const std::string& what) {
  const at::Tensor offline =
      render(make_render_plan(to_tensor(graph)), processors, parameters, sources, on_the_clock())
          .outputs;
  Stream stream     = make_stream(graph, processors, parameters, {kRate, 4096, sources.size(1)});
  const double peak = offline.abs().max().item<double>();
  ASSERT_GT(peak, 0) << what;
  for (int64_t size : {1, 7, 64, 512, 4096, 0}) {
    const at::Tensor streamed = stream_through(stream, sources, blocks_of(size, 4096));
    ASSERT_EQ(streamed.sizes(), offline.sizes()) << what;
    const double error = (streamed - offline).abs().max().item<double>() / peak;
    EXPECT_LE(error, 1e-5) << what << ", blocks of " << (size ? std::to_string(size) : "random")
                           << " samples, latency " << stream.latency_samples();
  }
  // Its program, read back, streams the same to the bit, with the same parameters.
  Stream loaded = Stream::load(stream.save());
  EXPECT_EQ(loaded.latency_samples(), stream.latency_samples()) << what;
  ASSERT_EQ(loaded.parameters().size(), stream.parameters().size()) << what;
  for (size_t k = 0; k < loaded.parameters().size(); ++k) {
    EXPECT_EQ(loaded.parameters()[k].control.name, stream.parameters()[k].control.name);
    EXPECT_EQ(loaded.parameters()[k].control.value, stream.parameters()[k].control.value);
    EXPECT_EQ(loaded.parameters()[k].node_name, stream.parameters()[k].node_name);
  }
  EXPECT_TRUE(at::equal(stream_through(loaded, sources, blocks_of(0, 4096)),
                        stream_through(stream, sources, blocks_of(0, 4096))))
      << what;
}

TEST(StreamContract, EveryProcessorStreamsAsItRendersOffline) {
  std::set<std::string> streamed;
  for (const ProcessorDescriptor& d : processor_registry()) {
    const Graph graph           = single_node(d.name);
    const Processors processors = make_processors(graph.types(), {kRate});
    const Parameters parameters = acting_parameters(graph, processors, 3);
    at::manual_seed(4);
    const int64_t n_sources  = graph.count_per_type()[NodeTypes::kIn];
    const at::Tensor sources = at::randn({n_sources, 2, 3 * kRate / 2}) * 0.3;
    expect_streams_as_rendered(graph, processors, parameters, sources, d.name);
    streamed.insert(d.name);
  }
  EXPECT_EQ(streamed.size(), processor_registry().size());
}

TEST(StreamContract, DynamicsOfEveryOptionStreamAsTheyRenderOffline) {
  // The gain computer's knees, detectors and gain smoothers, as options configure them (the
  // registry's types above take the defaults: a quadratic knee, energy, no gain smoothing).
  for (const std::string processor : {"compressor", "noise_gate"})
    for (const std::string knee : {"hard", "quadratic", "exponential"})
      for (const std::string domain : {"linear", "log"}) {
        const std::string what = processor + ", " + knee + " knee, gain smoothed in the " + domain +
                                 " domain" + (knee == "hard" ? ", amplitude" : "");
        Graph graph(registry_node_types());
        graph.add_type({"configured",
                        {"main"},
                        {"main"},
                        processor,
                        {{"knee", knee},
                         {"detection", std::string(knee == "hard" ? "amplitude" : "energy")},
                         {"gain_smoothing", std::string("ballistics")},
                         {"gain_smoothing_domain", domain}}});
        const NodeId node = graph.add("configured");
        graph.connect(graph.add("in"), node), graph.connect(node, graph.add("out"));
        const Processors processors = make_processors(graph.types(), {kRate});
        at::manual_seed(5);
        const at::Tensor sources = at::randn({1, 2, 3 * kRate / 2}) * 0.3;
        expect_streams_as_rendered(graph, processors, acting_parameters(graph, processors, 6),
                                   sources, what);
      }
}

// Containers: zero-phase members in series hear no pre-echo of each other (each silenced outside
// the song), and parallel members and bands of different latencies are aligned before they are
// summed (a zero-phase EQ on a band hears its band silent outside the song, as offline).
TEST(StreamContract, ContainersBoundAndAlignTheirMembers) {
  for (const auto& [processor, members] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"serial_chain", {"eq", "eq", "compressor"}},
           {"parallel_mix", {"eq", "compressor", "reverb"}},
           {"multiband", {"eq", "compressor"}},
           {"multiband", {"compressor", "eq_midside", "gain_pan"}}}) {
    Graph graph(registry_node_types());
    graph.add_type({"box", {"main"}, {"main"}, processor, {{"members", members}}});
    const NodeId in = graph.add("in"), box = graph.add("box");
    graph.connect(in, box), graph.connect(box, graph.add("out"));
    const Processors processors = make_processors(graph.types(), {kRate});
    at::manual_seed(4);
    const at::Tensor sources = at::randn({1, 2, kRate}) * 0.3;
    expect_streams_as_rendered(graph, processors, acting_parameters(graph, processors, 5), sources,
                               processor);
  }
}

Graph console(const std::vector<std::string>& chain, bool pruned) {
  Graph graph = routed_console(chain);
  if (pruned) {  // some nodes bypassed: paths of different latencies meet; a send sends nothing
    for (NodeId id : graph.nodes_of_type(chain.front()))
      if (id % 2) graph.set_bypassed(id);
    graph.set_bypassed(graph.nodes_of_type("send").front());
  }
  return graph;
}

TEST(StreamContract, ConsolesStreamAsTheyRenderOffline) {
  const std::vector<std::vector<std::string>> chains = {
      {"eq", "compressor", "noise_gate", "stereo_imager", "gain_pan", "delay", "reverb"},
      {"parametric_eq_midside", "compressor_ballistics", "graphic_eq", "fir_filter",
       "state_variable_filter", "noise_gate_ballistics", "stereo_imager", "gain_pan",
       "filtered_noise_reverb"},
  };
  for (const auto& chain : chains)
    for (bool pruned : {false, true}) {
      const Graph graph           = console(chain, pruned);
      const Processors processors = make_processors(graph.types(), {kRate});
      const Parameters parameters = acting_parameters(graph, processors, 5);
      at::manual_seed(6);
      const at::Tensor sources = at::randn({4, 1, kRate}) * 0.3;  // mono tracks, stereo mix
      expect_streams_as_rendered(graph, processors, parameters, sources,
                                 chain.front() + (pruned ? " console, pruned" : " console"));
    }
}

/// A console whose curves move gains, sends, side gains, thresholds and wet amounts over the
/// song's first second.
struct AutomatedConsole {
  Graph graph = console({"eq", "compressor", "stereo_imager", "gain_pan"}, true);
  Processors processors;
  Parameters parameters;
  AutomatedConsole() {
    for (const char* type : {"gain_pan", "stereo_imager", "send"})
      for (NodeId id : graph.nodes_of_type(type)) graph.set_automated(id, "log_gain");
    for (NodeId id : graph.nodes_of_type("compressor")) graph.set_automated(id, "log_threshold");
    for (NodeId id : graph.nodes_of_type("gain_pan")) graph.set_automated(id, "dry_wet");
    graph.set_automation({20.0, 21});  // a point every 50 ms over the song's second
    processors = make_processors(graph.types(), {kRate});
    parameters = with_curves(graph, processors, acting_parameters(graph, processors, 7));
    at::manual_seed(9);
    for (auto& [type, named] : parameters)  // curves that move
      for (const auto& [name, t] : named.named())
        if (!automated_parameter(name).empty()) named[name] = t + 0.5 * at::randn_like(t);
  }
};

/// `sources` through `stream` in blocks of `block` samples, then silence for its latency: the
/// outputs with the latency removed. `before(start)` runs before each block.
at::Tensor played(Stream& stream, const at::Tensor& sources, int64_t block,
                  const std::function<void(int64_t)>& before = {}) {
  const int64_t length = sources.size(2), total = length + stream.latency_samples();
  at::Tensor input = at::zeros({sources.size(0), sources.size(1), total}, at::kFloat);
  input.narrow(2, 0, length).copy_(sources);
  at::Tensor output = at::zeros({stream.n_outputs(), stream.output_channels(), total}, at::kFloat);
  std::vector<const float*> in(size_t(sources.size(0) * sources.size(1)));
  std::vector<float*> out(size_t(output.size(0) * output.size(1)));
  for (int64_t start = 0; start < total; start += block) {
    for (size_t k = 0; k < in.size(); ++k)
      in[k] = input.data_ptr<float>() + int64_t(k) * total + start;
    for (size_t k = 0; k < out.size(); ++k)
      out[k] = output.data_ptr<float>() + int64_t(k) * total + start;
    if (before) before(start);
    stream.process(in.data(), out.data(), std::min(block, total - start));
  }
  return output.narrow(2, stream.latency_samples(), length);
}

// The latency is the zero-phase EQs' half lengths (2047 taps: 1023 samples) along the path with
// the most of them, to which the others are aligned, whatever else the console holds.
// Automation plays back sample-exactly: gains, sends, side gains, thresholds and wet amounts that
// follow curves on the song's clock, behind EQs (their latency) and bypassed nodes.
TEST(StreamContract, AutomatedConsolesStreamAsTheyRenderOffline) {
  const AutomatedConsole automated;
  const Graph& graph           = automated.graph;
  const Processors& processors = automated.processors;
  const Parameters& parameters = automated.parameters;
  at::manual_seed(10);
  const at::Tensor sources = at::randn({4, 1, kRate}) * 0.3;
  expect_streams_as_rendered(graph, processors, parameters, sources, "automated console");
  // Curves drive what is automated: a host controls only the rest.
  std::set<std::string> controls;
  for (const StreamParameter& p :
       make_stream(graph, processors, parameters, {kRate, 64, 1}).parameters())
    controls.insert(p.type + "." + p.control.name);
  for (const char* driven : {"gain_pan.gain_db[0]", "gain_pan.wet", "send.gain_db",
                             "stereo_imager.side_gain_db", "compressor.threshold_db"})
    EXPECT_FALSE(controls.count(driven)) << driven;
  EXPECT_TRUE(controls.count("compressor.ratio") && controls.count("eq.wet"));
}

// A host's transport starts the song somewhere: after locate(F), the sources from song sample F
// on play what the offline render of the song silent before F plays from F on (curves read from
// F on); locating where the song already is changes nothing.
TEST(Stream, ALocatedStreamPlaysTheSongFromThere) {
  const AutomatedConsole c;
  at::manual_seed(10);
  const int64_t start = 3001;  // in the song's second, between two points of its curves
  at::Tensor song     = at::randn({4, 1, kRate}) * 0.3;
  song.narrow(2, 0, start).zero_();
  const at::Tensor offline =
      render(make_render_plan(to_tensor(c.graph)), c.processors, c.parameters, song, on_the_clock())
          .outputs.narrow(2, start, kRate - start);
  const double peak           = offline.abs().max().item<double>();
  const at::Tensor from_start = song.narrow(2, start, kRate - start);
  Stream stream               = make_stream(c.graph, c.processors, c.parameters, {kRate, 512, 1});
  for (int64_t block : {1, 64, 512}) {
    stream.reset();
    stream.locate(start);
    stream.set_song_end(kRate);  // where the offline render's song ends (a zero-phase filter's
                                 // look-ahead past it reaches the filters after it as silence)
    EXPECT_EQ(stream.song_position(), start);
    const double error = (played(stream, from_start, block) - offline).abs().max().item<double>();
    EXPECT_LE(error, 1e-5 * peak) << "blocks of " << block;
    EXPECT_EQ(stream.song_position(), kRate + stream.latency_samples());
  }
  // Where the curves are read matters: from the song's start, or a sample off, it plays otherwise.
  for (int64_t wrong : {int64_t(0), start + 1}) {
    stream.reset();
    stream.locate(wrong);
    stream.set_song_end(wrong + kRate - start);  // the same length: only the curves move
    EXPECT_GT((played(stream, from_start, 64) - offline).abs().max().item<double>(), 1e-4 * peak)
        << "located at " << wrong;
  }
  // A host that tells the position before every block, where the song already is.
  stream.set_song_end(-1);
  stream.reset();
  const at::Tensor plain = played(stream, song, 64);
  stream.reset();
  const at::Tensor told =
      played(stream, song, 64, [&](int64_t) { stream.locate(stream.song_position()); });
  EXPECT_TRUE(at::equal(plain, told));
  stream.locate(std::numeric_limits<int64_t>::min());  // clamped: the clock runs on from there
  EXPECT_EQ(stream.song_position(), -Stream::kLatestSongSample);
}

TEST(Stream, TheLatencyIsTheEqsAlone) {
  const Graph graph           = console({"eq", "compressor", "gain_pan", "delay", "reverb"}, true);
  const Processors processors = make_processors(graph.types(), {kRate});
  Stream stream =
      make_stream(graph, processors, acting_parameters(graph, processors, 1), {kRate, 64, 1});
  std::map<NodeId, int64_t> eqs;  // most EQs on a path to each node (bypassed ones left out)
  int64_t most = 0;
  for (NodeId id : graph.topological_order()) {
    for (NodeId before : graph.predecessors(id)) eqs[id] = std::max(eqs[id], eqs[before]);
    eqs[id] += graph.type_name(id) == "eq" && !graph.node(id).bypassed;
    most = std::max(most, eqs[id]);
  }
  EXPECT_EQ(most, 2) << "a track's EQ, then its group's, where neither is bypassed";
  EXPECT_EQ(stream.latency_samples(), most * 1023);
  const Graph no_eq       = console({"compressor", "gain_pan", "reverb"}, false);
  const Processors others = make_processors(no_eq.types(), {kRate});
  EXPECT_EQ(make_stream(no_eq, others, acting_parameters(no_eq, others, 1), {kRate, 64, 1})
                .latency_samples(),
            0);
}

// Real-time discipline: after the first blocks, 10,000 blocks allocate nothing.
TEST(Stream, ProcessAllocatesNothing) {
  const Graph graph = console(
      {"eq", "compressor", "noise_gate", "stereo_imager", "gain_pan", "delay", "reverb"}, true);
  const Processors processors = make_processors(graph.types(), {kRate});
  Stream stream =
      make_stream(graph, processors, acting_parameters(graph, processors, 2), {kRate, 64, 1});
  std::vector<float> input(64, 0.1f),
      output(size_t(64 * stream.output_channels() * stream.n_outputs()));
  std::vector<const float*> in(size_t(stream.n_sources()), input.data());
  std::vector<float*> out;
  for (int64_t k = 0; k < stream.n_outputs() * stream.output_channels(); ++k)
    out.push_back(output.data() + k * 64);
  for (int i = 0; i < 10; ++i) stream.process(in.data(), out.data(), 64);
  g_allocations = 0;
  g_counting    = true;
  for (int i = 0; i < 10000; ++i) stream.process(in.data(), out.data(), 1 + i % 64);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(stream.status().blocks, 10010);
}

// Block sizes out of range do nothing; NaN or infinite input gives a silent block, counted,
// and the stream goes on as if that block had been silence.
TEST(Stream, BadBlocksAreContained) {
  const Graph graph           = console({"eq", "compressor", "reverb"}, false);
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 3);
  Stream stream               = make_stream(graph, processors, parameters, {kRate, 32, 1});
  Stream reference            = make_stream(graph, processors, parameters, {kRate, 32, 1});
  const int64_t n_out         = stream.n_outputs() * stream.output_channels();
  at::manual_seed(1);
  at::Tensor x        = at::randn({stream.n_sources(), 32 * 40}) * 0.3;
  at::Tensor silenced = x.clone();
  silenced.narrow(1, 32 * 20, 32).zero_();
  x[1][32 * 20 + 5] = NAN;
  x[2][32 * 20 + 6] = INFINITY;
  at::Tensor y = at::full({n_out, 32 * 40}, 7.0f), expected = at::zeros({n_out, 32 * 40});
  auto pointers = [](at::Tensor& t, int64_t start, auto* first) {
    std::vector<std::remove_pointer_t<decltype(first)>> p;
    for (int64_t k = 0; k < t.size(0); ++k) p.push_back(t[k].data_ptr<float>() + start);
    return p;
  };
  std::vector<float*> out = pointers(y, 0, (float**)nullptr);
  stream.process(nullptr, out.data(), 0);
  stream.process(nullptr, out.data(), 33);
  EXPECT_EQ(stream.status().refused_blocks, 2);
  EXPECT_EQ(y[0][0].item<float>(), 7.0f) << "a refused block writes nothing";
  for (int64_t start = 0; start < 32 * 40; start += 32) {
    auto in                    = pointers(x, start, (const float**)nullptr);
    auto ref                   = pointers(silenced, start, (const float**)nullptr);
    out                        = pointers(y, start, (float**)nullptr);
    std::vector<float*> expect = pointers(expected, start, (float**)nullptr);
    stream.process(in.data(), out.data(), 32);
    reference.process(ref.data(), expect.data(), 32);
  }
  EXPECT_EQ(stream.status().silenced_blocks, 1);
  EXPECT_EQ(stream.status().blocks, 40);
  EXPECT_TRUE(y.narrow(1, 32 * 20, 32).abs().max().item<float>() == 0) << "the bad block is silent";
  expected.narrow(1, 32 * 20, 32).zero_();
  EXPECT_TRUE(at::equal(y, expected)) << "before and after it, the stream plays on";
}

/// The index of parameter `name` of the `nth` node of `type` among the stream's parameters.
size_t parameter_index(const Stream& stream, const Graph& graph, const std::string& type,
                       size_t nth, const std::string& name) {
  const NodeId node = graph.nodes_of_type(type).at(nth);
  for (size_t i = 0; i < stream.parameters().size(); ++i)
    if (stream.parameters()[i].node == node && stream.parameters()[i].control.name == name)
      return i;
  ADD_FAILURE() << "no parameter " << name << " of " << type;
  return 0;
}

// A host's changes: gains, thresholds and wet amounts start where the parameters put them,
// and once they have glided the stream plays as the offline render of the changed parameters
// (nothing after them holds a state: the compressor's level detector does not hear its own
// threshold).
TEST(Stream, ParametersChangeByGlidingToTheirNewValues) {
  Graph graph(registry_node_types());
  const NodeId mix = graph.add("mix"), out = graph.add("out");
  graph.connect(mix, out);
  for (int track = 0; track < 2; ++track) {
    const NodeId in = graph.add("in"), compressor = graph.add("compressor"),
                 gain_pan = graph.add("gain_pan");
    graph.connect(in, compressor), graph.connect(compressor, gain_pan),
        graph.connect(gain_pan, mix);
    graph.set_dry_wet(gain_pan);
  }
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 4);
  Stream made                 = make_stream(graph, processors, parameters, {kRate, 100, 1});
  // A stream read back from its program changes as the one made.
  Stream loaded = Stream::load(made.save());
  for (Stream* streams : {&made, &loaded}) {
    Stream& stream         = *streams;
    const size_t gain      = parameter_index(stream, graph, "gain_pan", 1, "gain_db[0]");
    const size_t threshold = parameter_index(stream, graph, "compressor", 0, "threshold_db");
    const size_t wet       = parameter_index(stream, graph, "gain_pan", 0, "wet");
    const double gain_db   = stream.parameters()[gain].control.value;
    EXPECT_NEAR(gain_db,
                20 / std::log(10.0) * parameters.at("gain_pan").at("log_gain")[1][0].item<double>(),
                1e-4);
    std::set<std::string> names;
    for (const StreamParameter& p : stream.parameters()) names.insert(p.control.name);
    EXPECT_EQ(names, (std::set<std::string>{"threshold_db", "ratio", "knee_db", "smoothing_ms",
                                            "gain_db[0]", "gain_db[1]", "wet"}));

    at::manual_seed(8);
    const at::Tensor sources = at::randn({2, 1, kRate}) * 0.3;
    const int64_t change = 4000, glide = int64_t(kGlideSeconds * kRate);
    const at::Tensor before = stream_through(stream, sources, blocks_of(100, 100));
    // The same song, with the changes made at `change`.
    at::Tensor changed = at::empty_like(before);
    stream.reset();
    for (int64_t start = 0; start < kRate; start += 100) {
      if (start == change) {
        stream.set_parameter(gain, gain_db + 12);
        stream.set_parameter(threshold, -40);
        stream.set_parameter(wet, 0.25);
        stream.set_parameter(wet + 1000, 3);       // no such parameter: nothing happens
        stream.set_parameter(gain, std::nan(""));  // ignored
      }
      std::vector<const float*> in;
      for (int64_t k = 0; k < 2; ++k) in.push_back(sources[k][0].data_ptr<float>() + start);
      std::vector<float*> out;
      for (int64_t c = 0; c < changed.size(1); ++c)
        out.push_back(changed[0][c].data_ptr<float>() + start);
      stream.process(in.data(), out.data(), 100);
    }
    // The offline render of the new values.
    Parameters moved;
    for (const auto& [type, named] : parameters)
      for (const auto& [name, value] : named.named()) moved[type][name] = value.clone();
    moved["gain_pan"]["log_gain"][1][0] += 12 * std::log(10.0) / 20;
    moved["compressor"]["log_threshold"][0][0] = -40 * std::log(10.0) / 10 + 6;
    moved["gain_pan"]["dry_wet"][0][0]         = std::log(0.25 / 0.75);
    const at::Tensor after =
        render(make_render_plan(to_tensor(graph)), processors, moved, sources).outputs;
    const double peak = after.abs().max().item<double>();
    EXPECT_TRUE(at::equal(changed.narrow(2, 0, change), before.narrow(2, 0, change)));
    const int64_t settled = change + glide;
    EXPECT_LE((changed - after).narrow(2, settled, kRate - settled).abs().max().item<double>(),
              1e-5 * peak);
    EXPECT_GT((changed - before).narrow(2, settled, 100).abs().max().item<double>(), 1e-2 * peak);
  }
}

// No click: on a constant input, a gain set to 12 dB is reached in equal steps.
TEST(Stream, AGainChangeGlides) {
  Graph graph(registry_node_types());
  const NodeId in = graph.add("in"), node = graph.add("gain_pan"), out = graph.add("out");
  graph.connect(in, node), graph.connect(node, out);
  const Processors processors = make_processors(graph.types(), {kRate});
  Stream stream =
      make_stream(graph, processors, create_parameters(graph, processors, {0, at::kFloat, false}),
                  {kRate, 64, 1});
  ASSERT_EQ(stream.parameters().size(), 2u);
  std::vector<float> x(64, 0.5f), left(64), right(64), y;
  const float* in_pointer = x.data();
  float* out_pointers[]   = {left.data(), right.data()};
  for (int block = 0; block < 10; ++block) {
    if (block == 2) stream.set_parameter(0, 12);
    stream.process(&in_pointer, out_pointers, 64);
    y.insert(y.end(), left.begin(), left.end());
  }
  const double start = 0.5 * std::pow(10.0, stream.parameters()[0].control.value / 20);
  const double jump = 0.5 * std::pow(10.0, 12 / 20.0) - start, glide = kGlideSeconds * kRate;
  double largest = 0;
  for (size_t i = 1; i < y.size(); ++i)
    largest = std::max(largest, double(std::abs(y[i] - y[i - 1])));
  EXPECT_NEAR(largest, jump / glide, 1e-3 * jump / glide);
  EXPECT_NEAR(y.back(), 0.5 * std::pow(10.0, 12 / 20.0), 1e-6);
  EXPECT_NEAR(y[127], start, 1e-6) << "the change starts with the block after it";
}

TEST(Stream, ProgramsThatAreNotOneAreRefused) {
  const Graph graph           = routed_console({"eq", "compressor", "gain_pan"});
  const Processors processors = make_processors(graph.types(), {kRate});
  const std::string program =
      make_stream(graph, processors, acting_parameters(graph, processors, 5), {kRate, 64, 1})
          .save();
  EXPECT_NO_THROW(Stream::load(program));
  const std::string code = "grafx.stream.program";
  EXPECT_GRAFX_ERROR(Stream::load(""), code, "does not start as one");
  EXPECT_GRAFX_ERROR(Stream::load("RIFF" + program), code, "does not start as one");
  EXPECT_GRAFX_ERROR(Stream::load(program.substr(0, program.size() - 1)), code, "size");
  EXPECT_GRAFX_ERROR(Stream::load(program + "x"), code, "size");
  EXPECT_GRAFX_ERROR(Stream::load(program.substr(0, 30)), code, "end early");
  std::string changed = program;
  changed[changed.size() / 2] ^= 1;
  EXPECT_GRAFX_ERROR(Stream::load(changed), code, "checksum");
  std::string newer = program;
  newer[sizeof("grafx stream program\n") - 1] ^= 2;  // the version's first byte
  EXPECT_GRAFX_ERROR(Stream::load(newer), code, "another version");
  // Made again for other blocks, or refused a block it cannot have; its rate read alone.
  EXPECT_EQ(Stream::load(program).max_block(), 64);
  EXPECT_EQ(Stream::load(program, 512).max_block(), 512);
  EXPECT_GRAFX_ERROR(Stream::load(program, -1), "grafx.stream.options", "maximum block");
  EXPECT_GRAFX_ERROR(Stream::load(program, int64_t(1) << 21), "grafx.stream.options",
                     "maximum block");
  EXPECT_EQ(Stream::program_sample_rate(program), kRate);
  EXPECT_GRAFX_ERROR(Stream::program_sample_rate(""), code, "does not start as one");
}

// A long graph at a host's large blocks needs buffers for every node, whatever its data: they
// have a budget of their own (4 GiB), and beyond it the host is told to use shorter blocks; the
// data's budget no longer refuses a valid graph for them (a 20,000-node chain's export was).
TEST(Stream, BlockBuffersHaveABudgetOfTheirOwn) {
  Graph chain(registry_node_types());
  NodeId last = chain.add("in");
  for (int k = 0; k < 300; ++k) {
    const NodeId gain = chain.add("gain_pan");
    chain.connect(last, gain);
    last = gain;
  }
  chain.connect(last, chain.add("out"));
  const Processors processors = make_processors(chain.types(), {kRate});
  const std::string program =
      make_stream(chain, processors, create_parameters(chain, processors, {1, at::kFloat, false}),
                  {kRate, 512, 2})
          .save();
  EXPECT_EQ(Stream::load(program, 4096).max_block(), 4096);  // 40 MB of blocks: taken
  EXPECT_GRAFX_ERROR(Stream::load(program, int64_t(1) << 20), "grafx.stream.options",
                     "use shorter blocks");  // 6 GB of them
}

// What a program holds of numbers: finite ones (a NaN would only silence the stream's outputs,
// block after block), and ranges that may lack an end.
TEST(Stream, ProgramsWithNumbersThatAreNotFiniteAreRefused) {
  auto bytes = [](auto... values) {
    std::string data;
    (data.append(reinterpret_cast<const char*>(&values), sizeof values), ...);
    return data;
  };
  const float nan        = std::numeric_limits<float>::quiet_NaN();
  const float infinity   = std::numeric_limits<float>::infinity();
  const std::string code = "grafx.stream.program";
  for (const float bad : {nan, infinity, -infinity}) {
    const std::string one = bytes(bad), two = bytes(double(bad));
    StreamReader floats(one.data(), one.size()), doubles(two.data(), two.size());
    EXPECT_GRAFX_ERROR(floats.read<float>(), code, "not finite");
    EXPECT_GRAFX_ERROR(doubles.read<double>(), code, "not finite");
  }
  const std::string list = bytes(uint64_t(3), 1.0f, nan, 2.0f);
  StreamReader in_list(list.data(), list.size());
  EXPECT_GRAFX_ERROR(in_list.read_vector<float>(), code, "not finite");
  const std::string good = bytes(-2.5f, uint64_t(2), 1.0f, 2.0f);
  StreamReader in_good(good.data(), good.size());
  EXPECT_EQ(in_good.read<float>(), -2.5f);
  EXPECT_EQ(in_good.read_vector<float>(), std::vector<float>({1.0f, 2.0f}));
  // A control's range may lack an end (a ratio has no largest value), but not be NaN.
  const std::string bounds = bytes(-double(infinity), double(infinity), double(nan));
  StreamReader in_bounds(bounds.data(), bounds.size());
  EXPECT_EQ(in_bounds.read_bound(), -double(infinity));
  EXPECT_EQ(in_bounds.read_bound(), double(infinity));
  EXPECT_GRAFX_ERROR(in_bounds.read_bound(), code, "not a number");
}

// The nodes' phases put their bursts of work (a long convolution's levels) on different calls.
TEST(StreamBursts, FallOnDifferentCalls) {
  // Eleven nodes with levels of 16384 and 1024 taps, as eleven delays: in calls of 64 and 512,
  // no call gets two large bursts (they fall a call apart at least), and none more small ones
  // than their share; a node without bursts keeps phase 0.
  std::vector<std::vector<StreamBurst>> bursts(11, {{16384, 0, 100.0}, {1024, 0, 10.0}});
  bursts.emplace_back();
  for (int64_t calls : {64, 512}) {
    const detail::BurstPhases spread = detail::spread_bursts(bursts, calls);
    std::vector<int64_t> large;  // where they run: (t + phase) mod 16384 = 0
    for (size_t n = 0; n < 11; ++n) large.push_back(((-spread.phases[n]) % 16384 + 16384) % 16384);
    std::sort(large.begin(), large.end());
    for (size_t n = 0; n < 11; ++n)
      EXPECT_GE(n + 1 < 11 ? large[n + 1] - large[n] : large[0] + 16384 - large[n], calls)
          << "calls of " << calls;
    EXPECT_EQ(spread.phases.back(), 0);
    const double small_share = std::ceil(11.0 * double(calls) / 1024.0);
    EXPECT_LE(spread.heaviest_call, 100.0 + 10.0 * small_share) << "calls of " << calls;
    EXPECT_NEAR(spread.mean_call, (11 * 100.0 + 11 * 16 * 10.0) * double(calls) / 16384, 1e-9);
  }
  // A level's steps at their offsets: two nodes' four steps on four calls of 64.
  const std::vector<std::vector<StreamBurst>> steps(2, {{8192, 0, 50.0}, {8192, 256, 50.0}});
  EXPECT_EQ(detail::spread_bursts(steps, 64).heaviest_call, 50.0);
  // Without bursts: phases 0, no work.
  const detail::BurstPhases none = detail::spread_bursts({{}, {}}, 512);
  EXPECT_EQ(none.phases, std::vector<int64_t>(2, 0));
  EXPECT_EQ(none.heaviest_call, 0.0);
}

// A stream made for a host's blocks (HostStream::stream_block) runs one call of its own per call
// of the host (at most); one made for smaller blocks, several.
TEST(HostStream, AHostsBlockIsOneCallOfAStreamMadeForIt) {
  const Graph graph           = routed_console({"eq", "gain_pan"});
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 8);
  const int64_t n_sources     = graph.count_per_type()[NodeTypes::kIn];
  for (int64_t host_rate : {int64_t(kRate), int64_t(44100), int64_t(22050 * 3), int64_t(5000)})
    for (int64_t host_block : {1, 256, 441}) {
      const int64_t block = HostStream::stream_block(host_block, kRate, host_rate);
      HostStream host(make_stream(graph, processors, parameters, {kRate, block, 1}), host_rate);
      std::vector<float> x(size_t(host_block), 0.1f), y(size_t(2 * host_block));
      std::vector<const float*> in(size_t(n_sources), x.data());
      std::vector<float*> out = {y.data(), y.data() + host_block};
      for (int call = 0; call < 10; ++call) host.process(in.data(), out.data(), host_block);
      // At most one each (none where a call converts to no sample of a slower stream).
      const int64_t calls = host.stream().status().blocks;
      EXPECT_TRUE(host_rate > kRate ? calls >= 1 && calls <= 10 : calls == 10)
          << calls << " calls for 10 of " << host_block << " samples at " << host_rate
          << " Hz, stream blocks of " << block;
      EXPECT_EQ(host.stream().status().refused_blocks, 0);
    }
  EXPECT_EQ(HostStream::stream_block(512, 30000, 48000), 321);  // ⌈512·5/8⌉ + 1
  EXPECT_EQ(HostStream::stream_block(512, 48000, 48000), 512);
  HostStream small(make_stream(graph, processors, parameters, {kRate, 64, 1}), 44100);
  std::vector<float> x(1024, 0.1f), y(2048);
  std::vector<const float*> in(size_t(n_sources), x.data());
  std::vector<float*> out = {y.data(), y.data() + 1024};
  small.process(in.data(), out.data(), 1024);
  EXPECT_GT(small.stream().status().blocks, 1);
}

// A host at another rate: the stream's inputs converted down, its outputs back up, equal the
// conversion back of the offline render of the converted sources, by their latency.
TEST(HostStream, RunsAtAHostsRateAsTheRenderOfTheConvertedSources) {
  const Graph graph           = routed_console({"eq", "compressor", "gain_pan"});
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 7);
  const int64_t n_sources     = graph.count_per_type()[NodeTypes::kIn];
  for (int64_t host_rate : {int64_t(kRate), int64_t(44100), int64_t(22050 * 3)}) {
    HostStream host(make_stream(graph, processors, parameters, {kRate, 512, 1}), host_rate);
    EXPECT_EQ(host.converts(), host_rate != kRate);
    // A quarter second of noise, then silence for the latency to play out.
    const int64_t length = host_rate * 3 / 4, sound = host_rate / 4;
    at::manual_seed(11);
    at::Tensor sources = at::zeros({n_sources, 1, length}, at::kFloat);
    sources.narrow(2, 0, sound).copy_(at::randn({n_sources, 1, sound}) * 0.3);
    at::Tensor played = at::empty({1, host.stream().output_channels(), length}, at::kFloat);
    std::mt19937 random(5);
    std::vector<const float*> in(static_cast<size_t>(n_sources));
    std::vector<float*> out(static_cast<size_t>(played.size(1)));
    for (int64_t start = 0; start < length;) {  // calls of 0 to 3000 samples
      const int64_t n = std::min<int64_t>(std::uniform_int_distribution<int64_t>(0, 3000)(random),
                                          length - start);
      for (int64_t k = 0; k < n_sources; ++k)
        in[size_t(k)] = sources[k][0].data_ptr<float>() + start;
      for (int64_t c = 0; c < played.size(1); ++c)
        out[size_t(c)] = played[0][c].data_ptr<float>() + start;
      host.process(in.data(), out.data(), n);
      start += n;
    }
    // The reference: converted in double, rendered offline at the stream's rate, converted back.
    at::Tensor expected;
    int64_t shift = host.latency_samples();
    if (!host.converts()) {
      expected =
          render(make_render_plan(to_tensor(graph)), processors, parameters, sources).outputs;
    } else {
      const dsp::ResamplerFilter filter(host_rate, kRate);
      auto convert = [&](const at::Tensor& x, int64_t from, int64_t to) {
        const at::Tensor d          = x.to(at::kDouble).contiguous();
        const std::vector<double> y = dsp::StreamResampler::convert(
            filter, from, to,
            std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel()));
        return at::tensor(y, at::kDouble).to(at::kFloat);
      };
      std::vector<at::Tensor> down;
      for (int64_t k = 0; k < n_sources; ++k)
        down.push_back(convert(sources[k][0], host_rate, kRate));
      const at::Tensor rendered = render(make_render_plan(to_tensor(graph)), processors, parameters,
                                         at::stack(down).unsqueeze(1))
                                      .outputs;
      std::vector<at::Tensor> back;
      for (int64_t c = 0; c < rendered.size(1); ++c)
        back.push_back(convert(rendered[0][c], kRate, host_rate));
      expected = at::stack(back).unsqueeze(0);
      shift -= (int64_t(filter.taps.size()) - 1) / (filter.common_rate / host_rate);  // in `back`
    }
    ASSERT_GE(shift, 0);
    const int64_t compared = std::min(length - shift, expected.size(2));
    ASSERT_GT(compared, sound) << host_rate;
    const double peak  = expected.abs().max().item<double>();
    const double error = (played.narrow(2, shift, compared) - expected.narrow(2, 0, compared))
                             .abs()
                             .max()
                             .item<double>();
    EXPECT_LE(error, 1e-5 * peak) << host_rate << " Hz, latency " << host.latency_samples();
    EXPECT_GT(peak, 1e-2);
  }
  EXPECT_GRAFX_ERROR(HostStream(make_stream(graph, processors, parameters, {kRate, 512, 1}), 0),
                     "grafx.stream.options", "host rate");
  EXPECT_GRAFX_ERROR(
      HostStream(make_stream(graph, processors, parameters, {kRate, 512, 1}), 9999991),
      "grafx.stream.options", "cannot run at 9999991 Hz");
}

// A host's transport at its rate: after locate(F), the sources from host sample F on play what
// the song silent before F plays from F on, where F converts to a whole stream sample (a multiple
// of M host samples: the conversions then start alike); where the song already is, nothing moves.
TEST(HostStream, ALocatedHostStreamPlaysTheSongFromThere) {
  const AutomatedConsole c;
  for (int64_t host_rate : {int64_t(kRate), int64_t(16000), int64_t(44100)}) {
    const int64_t period = host_rate / std::gcd(host_rate, int64_t(kRate));  // M
    const int64_t start = (host_rate * 3 / 8) / period * period, length = host_rate;
    at::manual_seed(12);
    at::Tensor song = at::randn({4, 1, length}) * 0.3;
    song.narrow(2, 0, start).zero_();
    // Both through a HostStream in calls of 300 samples; `located` told where the song is.
    const auto play = [&](const at::Tensor& sources, int64_t located) {
      HostStream host(make_stream(c.graph, c.processors, c.parameters, {kRate, 256, 1}), host_rate);
      if (located >= 0) host.locate(located);
      const int64_t total = sources.size(2);
      at::Tensor x = sources.contiguous(), y = at::zeros({2, total}, at::kFloat);
      std::vector<const float*> in(4);
      std::vector<float*> out(2);
      for (int64_t at = 0; at < total; at += 300) {
        for (int64_t k = 0; k < 4; ++k) in[size_t(k)] = x[k][0].data_ptr<float>() + at;
        for (int64_t k = 0; k < 2; ++k) out[size_t(k)] = y[k].data_ptr<float>() + at;
        if (located == -2) host.locate(at);  // where it is
        host.process(in.data(), out.data(), std::min<int64_t>(300, total - at));
      }
      return y;
    };
    const at::Tensor whole = play(song, -1), rest = song.narrow(2, start, length - start);
    const at::Tensor expected = whole.narrow(1, start, length - start);
    const double peak         = expected.abs().max().item<double>();
    EXPECT_GT(peak, 1e-2);
    EXPECT_LE((play(rest, start) - expected).abs().max().item<double>(), 1e-5 * peak) << host_rate;
    EXPECT_GT((play(rest, 0) - expected).abs().max().item<double>(), 1e-4 * peak) << host_rate;
    EXPECT_TRUE(at::equal(play(song, -2), whole)) << host_rate;
  }
}

// A host's bypass of a plugin with latency, done in the stream: the outputs glide to the
// sources' sum delayed by the latency (mono sources in both channels) and back to what the
// stream plays, which ran on meanwhile.
TEST(HostStream, BypassedItPlaysTheSourcesSumDelayedAndComesBack) {
  const Graph graph           = routed_console({"eq", "compressor", "gain_pan"});
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 7);
  const int64_t n_sources     = graph.count_per_type()[NodeTypes::kIn];
  for (int64_t host_rate : {int64_t(kRate), int64_t(16000)}) {
    const int64_t length = host_rate, glide = glide_samples(host_rate);
    const int64_t bypass = host_rate / 4, back = host_rate / 2;  // where it is set, and unset
    at::manual_seed(14);
    const at::Tensor sources = (at::randn({n_sources, 1, length}) * 0.3).contiguous();
    const auto play          = [&](bool switched) {
      HostStream host(make_stream(graph, processors, parameters, {kRate, 256, 1}), host_rate);
      at::Tensor y = at::zeros({2, length}, at::kFloat);
      std::vector<const float*> in(static_cast<size_t>(n_sources));
      std::vector<float*> out(2);
      for (int64_t at = 0; at < length;) {
        const int64_t next = at < bypass ? bypass : at < back ? back : length;
        const int64_t n    = std::min<int64_t>(300, next - at);
        for (int64_t k = 0; k < n_sources; ++k)
          in[size_t(k)] = sources[k][0].data_ptr<float>() + at;
        for (int64_t c = 0; c < 2; ++c) out[size_t(c)] = y[c].data_ptr<float>() + at;
        if (switched && (at == bypass || at == back)) host.set_bypassed(at == bypass);
        host.process(in.data(), out.data(), n);
        at += n;
      }
      return std::make_pair(y, host.latency_samples());
    };
    const auto [processed, latency] = play(false);
    const at::Tensor switched       = play(true).first;
    const at::Tensor sum = at::constant_pad_nd(sources.sum(0), {latency, 0}).narrow(1, 0, length);
    const at::Tensor dry = sum.expand({2, length});
    const auto part      = [](const at::Tensor& x, int64_t from, int64_t to) {
      return x.narrow(1, from, to - from);
    };
    EXPECT_TRUE(at::equal(part(switched, 0, bypass), part(processed, 0, bypass))) << host_rate;
    EXPECT_LE((part(switched, bypass + glide, back) - part(dry, bypass + glide, back))
                  .abs()
                  .max()
                  .item<double>(),
              1e-6)
        << host_rate;
    EXPECT_TRUE(
        at::equal(part(switched, back + glide, length), part(processed, back + glide, length)))
        << host_rate;
    // The glides: linear, one step a sample (to float roundings of the steps' sum).
    const at::Tensor share = 1 - at::arange(1, glide + 1, at::kFloat) / float(glide);
    const at::Tensor leaving =
        part(dry, bypass, bypass + glide) + share * part(processed - dry, bypass, bypass + glide);
    EXPECT_LE((part(switched, bypass, bypass + glide) - leaving).abs().max().item<double>(), 1e-5);
    const at::Tensor coming =
        part(dry, back, back + glide) + (1 - share) * part(processed - dry, back, back + glide);
    EXPECT_LE((part(switched, back, back + glide) - coming).abs().max().item<double>(), 1e-5);
    EXPECT_GT((part(processed, bypass, back) - part(dry, bypass, back)).abs().max().item<double>(),
              1e-2);  // the console does change the sum
  }
  // Bypassed, a source that is not finite is contained as the stream contains it: silence.
  HostStream host(make_stream(graph, processors, parameters, {kRate, 256, 1}), kRate);
  host.set_bypassed(true);
  std::vector<float> x(4096, 0.1f), y(2 * 4096, 0.0f);
  x[100] = std::nanf(""), x[200] = INFINITY;
  std::vector<const float*> in(static_cast<size_t>(n_sources), x.data());
  std::vector<float*> out = {y.data(), y.data() + 4096};
  host.process(in.data(), out.data(), 4096);
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }));
}

TEST(Stream, RefusesWhatItCannotStream) {
  const Graph graph           = console({"eq", "gain_pan"}, false);
  const Processors processors = make_processors(graph.types(), {kRate});
  const Parameters parameters = acting_parameters(graph, processors, 3);
  EXPECT_GRAFX_ERROR(make_stream(graph, processors, parameters, {kRate, 0, 1}),
                     "grafx.stream.options", "maximum block of 1 to 1048576 samples, but got 0");
  EXPECT_GRAFX_ERROR(make_stream(graph, processors, parameters, {kRate, 64, 9}),
                     "grafx.stream.options", "sources of 1 to 8 channels, but got 9");
  // A waveshaper that removes the mean of the whole signal first cannot stream: the node is
  // named.
  Graph centred(registry_node_types());
  centred.add_type({"centred", {"main"}, {"main"}, "tanh_distortion", {{"remove_dc", true}}});
  const NodeId in = centred.add("in"), drive = centred.add("centred", "bass.drive");
  centred.connect(in, drive), centred.connect(drive, centred.add("out"));
  const Processors more = make_processors(centred.types(), {kRate});
  EXPECT_GRAFX_ERROR(
      make_stream(centred, more, acting_parameters(centred, more, 3), {kRate, 64, 1}),
      "grafx.stream.unsupported", "bass.drive");
  // A waveshaper that removes the mean of the whole signal first cannot stream.
  ProcessorConfig remove_dc{kRate};
  remove_dc.options["remove_dc"] = true;
  const auto shaper              = make_processor("tanh_distortion", remove_dc);
  TensorDict raw;
  for (const ParameterSpec& spec : shaper->parameter_specs())
    raw[spec.name] = at::zeros(spec.shape_for(1));
  EXPECT_GRAFX_ERROR(shaper->make_stream(raw, {kRate, 64, {2}}), "grafx.stream.unsupported",
                     "remove_dc subtracts the mean of the whole signal");
  // An EQ whose gains move over the song streams by its impulse responses, which cannot move.
  Graph moving = console({"parametric_eq", "gain_pan"}, false);
  moving.set_automated(moving.nodes_of_type("parametric_eq").front(), "log_gain");
  moving.set_automation({10.0, 11});
  const Processors eqs = make_processors(moving.types(), {kRate});
  EXPECT_GRAFX_ERROR(
      make_stream(moving, eqs, with_curves(moving, eqs, acting_parameters(moving, eqs, 2)),
                  {kRate, 64, 1}),
      "grafx.stream.unsupported", "automates log_gain, which its streaming form cannot follow");
  Parameters missing = parameters;
  missing.erase("eq");
  EXPECT_THROW(make_stream(graph, processors, missing, {kRate, 64, 1}), RenderError);
}

}  // namespace
}  // namespace grafx
