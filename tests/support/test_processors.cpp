#include "support/test_processors.h"

#include <grafx/graph/node_types.h>
#include <grafx/graph/random_graph.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>

#include <random>

namespace grafx::testing {
namespace {

/// x delayed by one sample (zero first).
at::Tensor delayed(const at::Tensor& x) {
  return at::constant_pad_nd(x.narrow(-1, 0, x.size(-1) - 1), {1, 0});
}

class TestProcessor : public Processor {
 public:
  TestProcessor(std::string name, TestKind kind) : name_(std::move(name)), kind_(kind) {}
  std::string name() const override { return name_; }
  std::vector<std::string> inlets() const override {
    return kind_ == TestKind::kDuck ? std::vector<std::string>{"main", "side"}
                                    : std::vector<std::string>{"main"};
  }
  std::vector<std::string> outlets() const override {
    return kind_ == TestKind::kSplit ? std::vector<std::string>{"low", "high"}
                                     : std::vector<std::string>{"main"};
  }
  std::vector<ParameterSpec> parameter_specs() const override {
    auto spec = [](const char* name, int64_t size, double mean, double std, const char* about) {
      return ParameterSpec::raw(name, {size}).initial(mean, std).about(about);
    };
    switch (kind_) {
      case TestKind::kLinear:
        return {spec("a", 2, 1.0, 0.3, "gain per channel"),
                spec("b", 2, 0.0, 0.3, "gain of the delayed signal per channel")};
      case TestKind::kNonlinear:
        return {spec("g", 1, 1.0, 0.3, "drive"), spec("h", 1, 1.0, 0.3, "level")};
      case TestKind::kSplit:
        return {spec("p", 1, 0.0, 1.0, "split logit")};
      case TestKind::kDuck:
        return {spec("k", 1, 0.0, 1.0, "ducking logit")};
    }
    return {};
  }
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& p) const override {
    check_arguments(inputs, p);
    const at::Tensor& x = inputs[0];
    auto column         = [&](const char* name) { return p.at(name).unsqueeze(-1); };  // [N, k, 1]
    switch (kind_) {
      case TestKind::kLinear: {
        at::Tensor a = column("a").narrow(1, 0, x.size(1)), b = column("b").narrow(1, 0, x.size(1));
        return {{a * x + b * delayed(x)}, {{"l2", p.at("a").pow(2).sum(1)}}};
      }
      case TestKind::kNonlinear:
        return {{at::tanh(column("g") * x) * column("h")}, {}};
      case TestKind::kSplit: {
        at::Tensor s   = at::sigmoid(column("p"));
        at::Tensor low = s * x + (1 - s) * delayed(x);
        return {{low, x - low}, {}};
      }
      case TestKind::kDuck:
        return {{x * (1 - at::sigmoid(column("k")) * at::tanh(inputs[1].pow(2)))}, {}};
    }
    return {};
  }
  TemporalSupport temporal_support(const TensorDict&) const override {
    // The linear and split kinds read the sample before.
    return kind_ == TestKind::kLinear || kind_ == TestKind::kSplit ? TemporalSupport::causal(1)
                                                                   : TemporalSupport::pointwise();
  }

 private:
  std::string name_;
  TestKind kind_;
};

}  // namespace

std::shared_ptr<const Processor> make_test_processor(const std::string& name, TestKind kind) {
  return std::make_shared<TestProcessor>(name, kind);
}

Processors random_graph_processors(const NodeTypes& types) {
  Processors processors;
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t) {
    const std::string& name = types.name(t);
    TestKind kind           = name == "split"  ? TestKind::kSplit
                              : name == "duck" ? TestKind::kDuck
                                               : (std::stoi(name.substr(1)) % 2 == 0 ? TestKind::kLinear
                                                                                     : TestKind::kNonlinear);
    processors[name]        = make_test_processor(name, kind);
  }
  return processors;
}

EquivalenceCase equivalence_case(uint64_t seed, int64_t length) {
  RandomGraphOptions options;
  options.n_processors = 6 + int64_t(seed % 25);
  options.n_inputs     = 1 + int64_t(seed % 3);
  options.n_outputs    = 1 + int64_t(seed % 2);
  options.multi_port   = seed % 4 != 3;
  EquivalenceCase c;
  c.graph = random_graph(seed, options);
  std::mt19937_64 flags(seed);
  for (NodeId id : c.graph.nodes()) {
    if (seed % 3 == 0 || is_utility_type(c.graph.node(id).type)) continue;
    c.graph.set_dry_wet(id, flags() % 5 < 2);
    c.graph.set_bypassed(id, flags() % 7 == 0);
  }
  c.processors               = random_graph_processors(c.graph.types());
  const at::ScalarType dtype = seed % 5 == 4 ? at::kDouble : at::kFloat;
  c.tolerance                = dtype == at::kDouble ? 1e-10 : 1e-5;
  c.parameters               = create_parameters(c.graph, c.processors, {seed, dtype});
  at::manual_seed(int64_t(seed));
  for (auto& [type, values] : c.parameters)  // wet amounts other than ½
    if (values.wet.defined()) values.wet = at::randn_like(values.wet);
  c.sources = at::randn({options.n_inputs, 2, length}, dtype) * 0.5;
  if (seed % 2 == 1) c.sources = at::randn({3, options.n_inputs, 2, length}, dtype) * 0.5;
  return c;
}

}  // namespace grafx::testing
