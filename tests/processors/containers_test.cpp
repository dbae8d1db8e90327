// Containers against their members called one by one: a serial chain is its members in turn, a
// parallel mix their outputs weighted by softmax or softplus weights computed here, a multiband
// container its members on a crossover's bands, summed; members may be configured types of the
// graph, and what cannot be built is refused with the member named.

#include <grafx/graph/graph_tensor.h>
#include <grafx/processors/containers.h>
#include <grafx/processors/registry.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "support/test_support.h"

#include <ATen/ATen.h>

#include <cmath>

namespace grafx {
namespace {

constexpr SampleRate kRate = 8000;

/// Random raw parameters of every spec, [n, shape...].
TensorDict random_parameters(const Processor& processor, int64_t n, uint64_t seed) {
  at::manual_seed(seed);
  TensorDict p;
  for (const auto& spec : processor.parameter_specs())
    p[spec.name] = spec.init_mean + 0.5 * at::randn(spec.shape_for(n), at::kDouble);
  return p;
}

/// The members' own parameters out of the container's.
TensorDict member_part(const TensorDict& parameters, size_t k) {
  const std::string prefix = "members." + std::to_string(k) + ".";
  TensorDict own;
  for (const auto& [name, value] : parameters)
    if (name.rfind(prefix, 0) == 0) own[name.substr(prefix.size())] = value;
  return own;
}

std::unique_ptr<Processor> make(const std::string& processor, ProcessorOptions options,
                                const NodeTypes* types = nullptr) {
  ProcessorConfig config{kRate};
  config.types = types;
  NodeType type{processor};
  type.processor = processor;
  type.options   = std::move(options);
  type.inlets = type.outlets = {"main"};
  return make_processor(type, config);
}

TEST(Containers, ASerialChainIsItsMembersInTurn) {
  const std::vector<std::string> members = {"eq", "delay", "tanh_distortion", "delay", "gain_pan"};
  auto chain                             = make("serial_chain", {{"members", members}});
  TensorDict p                           = random_parameters(*chain, 3, 1);
  at::Tensor x                           = at::randn({3, 2, 3000}, at::kDouble) * 0.4;
  ProcessorOutput out                    = chain->forward({x}, p);
  at::Tensor expected = x, radii = at::zeros({3}, at::kDouble);
  for (size_t k = 0; k < members.size(); ++k) {
    ProcessorOutput step =
        make_processor(members[k], {kRate})->forward({expected}, member_part(p, k));
    expected = step.outputs[0];
    if (step.aux_losses.count("radii")) radii = radii + step.aux_losses.at("radii");
  }
  EXPECT_TRUE(at::equal(out.outputs[0], expected));
  // The two delays' radii losses, summed under their own name.
  ASSERT_EQ(out.aux_losses.size(), 1u);
  EXPECT_TRUE(at::allclose(out.aux_losses.at("radii"), radii, 1e-14, 0));
}

TEST(Containers, AParallelMixWeightsItsMembersBySoftmaxOrSoftplus) {
  at::Tensor x = at::randn({2, 1, 2000}, at::kDouble) * 0.4;  // mono: gain_pan's output is stereo
  for (const char* activation : {"softmax", "softplus"}) {
    auto mix            = make("parallel_mix",
                               {{"members", std::vector<std::string>{"lowpass", "gain_pan", "reverb"}},
                                {"activation", std::string(activation)}});
    TensorDict p        = random_parameters(*mix, 2, 2);
    at::Tensor y        = mix->forward({x}, p).outputs[0];
    const at::Tensor& z = p.at("parallel_weights");
    at::Tensor expected = at::zeros({2, 2, 2000}, at::kDouble);
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 3; ++k) {
        double w = 0;
        if (std::string(activation) == "softmax") {
          double total = 0;
          for (int64_t j = 0; j < 3; ++j) total += std::exp(z[i][j].item<double>());
          w = std::exp(z[i][k].item<double>()) / total;
        } else {
          w = std::log1p(std::exp(z[i][k].item<double>())) / (3 * std::log(2.0));
        }
        const std::string name =
            std::vector<std::string>{"lowpass", "gain_pan", "reverb"}[size_t(k)];
        TensorDict own = member_part(p, size_t(k));
        for (auto& [key, value] : own) value = value.narrow(0, i, 1);
        at::Tensor f = make_processor(name, {kRate})->forward({x.narrow(0, i, 1)}, own).outputs[0];
        expected[i] += w * f[0].expand({2, 2000});
      }
    }
    EXPECT_TRUE(at::allclose(y, expected, 1e-12, 1e-12)) << activation;
  }
  // At raw 0, softplus weights are 1/K each (GRAFX's choice of scale).
  auto mix            = make("parallel_mix", {{"activation", std::string("softplus")}});
  TensorDict physical = mix->to_physical({{"parallel_weights", at::zeros({1, 2}, at::kDouble)}});
  EXPECT_TRUE(at::allclose(physical.at("weight"), at::full({1, 2}, 0.5, at::kDouble)));
}

TEST(Containers, MembersMayBeConfiguredTypesOfTheGraphAndRenderAsNodes) {
  // A graph declaring a biased drive and a strip holding it renders as the same members would
  // as separate nodes.
  NodeTypes types;
  types.add({"biased_drive", {"main"}, {"main"}, "tanh_distortion", {{"use_bias", true}}});
  types.add({"strip",
             {"main"},
             {"main"},
             "serial_chain",
             {{"members", std::vector<std::string>{"lowpass", "biased_drive"}}}});
  types.add("lowpass");
  Graph chained(types), separate(types);
  NodeId strip = chained.add("strip");
  chained.connect(chained.add("in"), strip);
  chained.connect(strip, chained.add("out"));
  NodeId lowpass = separate.add("lowpass"), drive = separate.add("biased_drive");
  separate.connect(separate.add("in"), lowpass);
  separate.connect(lowpass, drive);
  separate.connect(drive, separate.add("out"));
  Processors processors = make_processors(types, {kRate});
  // The low-pass's frequency and q, the drive's pre-gain and bias.
  EXPECT_EQ(processors.at("strip")->parameter_specs().size(), 4u);
  Parameters p = create_parameters(chained, processors, {1, at::kDouble, false});
  for (const auto& [name, value] : p.at("strip").named())
    p.at("strip")[name] = value + 0.4 * at::randn_like(value);
  Parameters q;
  for (const auto& [name, value] : p.at("strip").named())
    q[name.rfind("members.0.", 0) == 0 ? "lowpass" : "biased_drive"][name.substr(10)] = value;
  at::Tensor sources = at::randn({1, 2, 1500}, at::kDouble);
  at::Tensor a       = render(make_render_plan(to_tensor(chained)), processors, p, sources).outputs;
  at::Tensor b = render(make_render_plan(to_tensor(separate)), processors, q, sources).outputs;
  EXPECT_TRUE(at::equal(a, b));
}

TEST(Containers, AMultibandContainerIsItsMembersOnTheCrossoversBands) {
  at::Tensor x = at::randn({3, 2, 2500}, at::kDouble) * 0.4;
  for (const std::vector<std::string>& members :
       {std::vector<std::string>{"compressor", "tanh_distortion"},
        std::vector<std::string>{"eq", "compressor_ballistics", "gain_pan"}}) {
    auto bands     = make("multiband", {{"members", members}});
    TensorDict p   = random_parameters(*bands, 3, 3);
    at::Tensor y   = bands->forward({x}, p).outputs[0];
    auto crossover = make_processor(members.size() == 2 ? "crossover" : "crossover_3band", {kRate});
    std::vector<at::Tensor> split =
        crossover->forward({x}, {{"crossover", p.at("crossover")}}).outputs;
    ASSERT_EQ(split.size(), members.size());
    // Each band mixed with its own dry band by its wet amount, σ(raw) written out here.
    at::Tensor expected = at::zeros_like(x);
    for (size_t k = 0; k < members.size(); ++k) {
      const at::Tensor processed =
          make_processor(members[k], {kRate})->forward({split[k]}, member_part(p, k)).outputs[0];
      const at::Tensor wet = 1 / (1 + (-p.at("band_dry_wet").select(1, int64_t(k))).exp());
      expected             = expected + split[k] + wet.view({-1, 1, 1}) * (processed - split[k]);
    }
    EXPECT_TRUE(at::allclose(y, expected, 1e-12, 1e-12)) << members.front();
  }
  // Neutral members pass the crossover's bands, which sum to an all-pass: the input's power.
  auto neutral = make("multiband", {{"members", std::vector<std::string>{"gain_pan", "gain_pan"}}});
  TensorDict p = random_parameters(*neutral, 3, 4);
  p.at("members.0.log_gain").zero_(), p.at("members.1.log_gain").zero_();
  at::Tensor y = neutral->forward({x}, p).outputs[0];
  EXPECT_NEAR(y.pow(2).sum().item<double>() / x.pow(2).sum().item<double>(), 1.0, 0.05);
}

TEST(Containers, StartAndDrawTheirMembersAsLoneNodes) {
  // A fit's typical start of a multiband compressor: each band's compressor as a lone one's
  // (10 ms smoothing, not the specs' 0.05 ms), its crossover where the specs put it.
  auto bands                   = make("multiband", {});
  const ProcessorDescriptor* d = find_processor("multiband");
  ASSERT_TRUE(d && d->fit_start && d->musical_prior);
  Random random(1);
  TensorDict start = d->fit_start({*bands, kRate, false, random});
  for (const char* name : {"members.0.smoothing_ms", "members.1.smoothing_ms"})
    EXPECT_DOUBLE_EQ(start.at(name).item<double>(), 10.0) << name;
  // Its wet amount nearly whole, so that the dry input does not undo the bands' compression.
  EXPECT_DOUBLE_EQ(start.at("wet").item<double>(), 0.99);
  for (const auto& [name, value] : start)
    EXPECT_TRUE(name == "wet" || name.rfind("members.", 0) == 0) << name;
  // Its musical settings: the crossover's split (200 Hz–2 kHz) and each member's.
  EXPECT_FALSE(start.count("band_wet"));  // the bands' wet amounts start at half, as nodes'
  TensorDict musical = d->musical_prior({*bands, kRate, false, random});
  ASSERT_TRUE(musical.count("crossover_hz"));
  const double hz = musical.at("crossover_hz").item<double>();
  EXPECT_TRUE(hz >= 200 && hz <= 2000) << hz;
  EXPECT_TRUE(musical.count("members.1.threshold_db"));
  EXPECT_TRUE(at::equal(musical.at("band_wet"), at::ones({2}, at::kDouble)));  // bands whole
}

TEST(Containers, RefuseMembersTheyCannotHold) {
  NodeTypes types;
  types.add({"loop",
             {"main"},
             {"main"},
             "serial_chain",
             {{"members", std::vector<std::string>{"eq", "loop"}}}});
  EXPECT_GRAFX_ERROR(make_processors(types, {kRate}), "grafx.processor.options",
                     "node type \"loop\": member 1 \"loop\": a container cannot contain itself "
                     "(loop -> loop)");
  NodeTypes pair;
  pair.add({"a", {"main"}, {"main"}, "serial_chain", {{"members", std::vector<std::string>{"b"}}}});
  pair.add({"b",
            {"main"},
            {"main"},
            "parallel_mix",
            {{"members", std::vector<std::string>{"eq", "a"}}}});
  EXPECT_GRAFX_ERROR(make_processors(pair, {kRate}), "grafx.processor.options",
                     "a container cannot contain itself (a -> b -> a)");
  EXPECT_GRAFX_ERROR(
      make("serial_chain", {{"members", std::vector<std::string>{"eq", "crossover"}}}),
      "grafx.processor.options", "member 1 \"crossover\": a member needs one inlet and one outlet");
  EXPECT_GRAFX_ERROR(make("parallel_mix", {{"members", std::vector<std::string>{"flanger"}}}),
                     "grafx.processor.unknown", "member 0 \"flanger\": no processor implements");
  EXPECT_GRAFX_ERROR(make("parallel_mix", {{"members", std::vector<std::string>{}}}),
                     "grafx.processor.options", "option \"members\": expected at least one");
  for (size_t n : {size_t(1), size_t(4)})
    EXPECT_GRAFX_ERROR(make("multiband", {{"members", std::vector<std::string>(n, "compressor")}}),
                       "grafx.processor.options",
                       "a multiband container takes 2 or 3 members (one per band)");
  EXPECT_GRAFX_ERROR(make("serial_chain", {{"activation", std::string("softmax")}}),
                     "grafx.processor.options", "unknown option \"activation\"; options: members");
}

}  // namespace
}  // namespace grafx
