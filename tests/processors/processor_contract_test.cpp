// The contract every registered processor must keep, generated from the registry: shapes and
// dtypes, finite output on noise and silence, batch consistency (one batched call equals a loop
// over items: the invariant batched rendering depends on), determinism, argument checks, and
// gradients against central finite differences in float64. Each processor is tested with its
// default options and once with each option changed (every other choice, a flag flipped, an
// integer at the other end of its range).

#include <grafx/dsp/forward_mode.h>
#include <grafx/processors/parameter_values.h>
#include <grafx/processors/registry.h>

#include "support/test_support.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

namespace grafx {
namespace {

constexpr SampleRate kSampleRate = 8000;  // small constants (reverb, delay) keep the tests fast

struct Case {
  std::shared_ptr<Processor> processor;
  std::vector<at::Tensor> inputs;
  TensorDict parameters;
};

/// A registered processor with some options changed: a configured node type.
struct Variant {
  NodeType type;
  const ProcessorDescriptor& descriptor() const { return processor_descriptor(type.processor); }
  std::unique_ptr<Processor> make() const { return make_processor(type, {kSampleRate}); }
};

std::ostream& operator<<(std::ostream& out, const Variant& v) { return out << v.type.name; }

Case make_case(const Variant& variant, int64_t n, int64_t length, at::ScalarType dtype,
               uint64_t seed) {
  Case c;
  c.processor = variant.make();
  at::manual_seed(seed);
  for (size_t i = 0; i < c.processor->inlets().size(); ++i)
    c.inputs.push_back(at::randn({n, 2, length}, at::TensorOptions().dtype(dtype)) * 0.3);
  for (const auto& spec : c.processor->parameter_specs()) {
    std::vector<int64_t> shape{n};
    shape.insert(shape.end(), spec.shape.begin(), spec.shape.end());
    // Wider than the initial spread, so that the processors do something.
    c.parameters[spec.name] =
        spec.init_mean + (spec.init_std + 0.3) * at::randn(shape, at::TensorOptions().dtype(dtype));
  }
  return c;
}

class ProcessorContract : public ::testing::TestWithParam<Variant> {};

TEST_P(ProcessorContract, ShapesDtypesAndFiniteOutput) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    Case c              = make_case(GetParam(), 3, 1000, dtype, 1);
    ProcessorOutput out = c.processor->forward(c.inputs, c.parameters);
    ASSERT_EQ(out.outputs.size(), c.processor->outlets().size());
    for (const auto& y : out.outputs) {
      // N and L kept; channel converters change C.
      EXPECT_EQ(y.dim(), 3);
      EXPECT_EQ(y.size(0), 3);
      EXPECT_EQ(y.size(2), 1000);
      EXPECT_TRUE(y.size(1) == 1 || y.size(1) == 2) << y.sizes();
      EXPECT_EQ(y.scalar_type(), dtype);
      EXPECT_TRUE(y.isfinite().all().item<bool>());
    }
    for (const auto& [key, loss] : out.aux_losses) {
      EXPECT_EQ(loss.sizes(), at::IntArrayRef({3})) << key;
      EXPECT_TRUE(loss.isfinite().all().item<bool>()) << key;
    }
    for (auto& x : c.inputs) x.zero_();
    for (const auto& y : c.processor->forward(c.inputs, c.parameters).outputs)
      EXPECT_TRUE(y.isfinite().all().item<bool>()) << "silence";
  }
}

TEST_P(ProcessorContract, BatchedCallEqualsALoopOverItems) {
  Case c                  = make_case(GetParam(), 4, 1500, at::kDouble, 2);
  ProcessorOutput batched = c.processor->forward(c.inputs, c.parameters);
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<at::Tensor> inputs;
    for (const auto& x : c.inputs) inputs.push_back(x.narrow(0, i, 1));
    TensorDict parameters;
    for (const auto& [key, p] : c.parameters) parameters[key] = p.narrow(0, i, 1);
    ProcessorOutput single = c.processor->forward(inputs, parameters);
    for (size_t o = 0; o < single.outputs.size(); ++o)
      EXPECT_TRUE(at::allclose(single.outputs[o], batched.outputs[o].narrow(0, i, 1), 1e-9, 1e-12))
          << "outlet " << o << ", item " << i;
    for (const auto& [key, loss] : single.aux_losses)
      EXPECT_TRUE(at::allclose(loss, batched.aux_losses.at(key).narrow(0, i, 1), 1e-9, 1e-12))
          << key;
  }
}

TEST_P(ProcessorContract, AMonoSignalAndItsDualMonoStereoGiveTheSameResult) {
  // The renderers spread mono to stereo wherever signals of both meet (render/render.h): this
  // is what makes that exact.
  Case c = make_case(GetParam(), 2, 1200, at::kDouble, 5);
  std::vector<at::Tensor> mono, dual_mono;
  for (const auto& x : c.inputs) {
    mono.push_back(x.narrow(1, 0, 1).contiguous());
    dual_mono.push_back(x.narrow(1, 0, 1).expand({2, 2, 1200}).contiguous());
  }
  ProcessorOutput a = c.processor->forward(mono, c.parameters);
  ProcessorOutput b = c.processor->forward(dual_mono, c.parameters);
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    std::vector<int64_t> shape{2, std::max(a.outputs[o].size(1), b.outputs[o].size(1)), 1200};
    EXPECT_TRUE(at::allclose(a.outputs[o].expand(shape), b.outputs[o].expand(shape), 1e-9, 1e-12))
        << "outlet " << o << ": mono gives " << a.outputs[o].sizes() << ", dual mono "
        << b.outputs[o].sizes();
  }
  for (const auto& [key, loss] : a.aux_losses)
    EXPECT_TRUE(at::allclose(loss, b.aux_losses.at(key), 1e-9, 1e-12)) << key;
}

TEST_P(ProcessorContract, AChunkWidenedByTheTemporalSupportEqualsTheWholeSignal) {
  // What chunked rendering (render/chunked.h) relies on: output samples [s, e) computed from
  // the inputs [s − past, e + future) alone are those of the whole signal.
  const int64_t length          = 3 * kSampleRate;  // longer than the 2 s reverb and delay
  Case c                        = make_case(GetParam(), 3, length, at::kDouble, 6);
  const TemporalSupport support = c.processor->temporal_support(c.parameters);
  ASSERT_GE(support.past_samples, 0);
  ASSERT_GE(support.future_samples, 0);
  ProcessorOutput whole = c.processor->forward(c.inputs, c.parameters);
  for (auto [start, end] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 500}, {kSampleRate, kSampleRate + 1000}, {length - 700, length}}) {
    const int64_t first = std::max<int64_t>(0, start - support.past_samples);
    const int64_t last  = std::min(length, end + support.future_samples);
    std::vector<at::Tensor> inputs;
    for (const auto& x : c.inputs) inputs.push_back(x.narrow(2, first, last - first));
    ProcessorOutput part = c.processor->forward(inputs, c.parameters);
    for (size_t o = 0; o < whole.outputs.size(); ++o) {
      at::Tensor expected = whole.outputs[o].narrow(2, start, end - start);
      at::Tensor got      = part.outputs[o].narrow(2, start - first, end - start);
      const double scale  = whole.outputs[o].abs().max().item<double>();
      EXPECT_LE((got - expected).abs().max().item<double>(), 1e-7 * scale)
          << "outlet " << o << ", samples [" << start << ", " << end << ") from [" << first << ", "
          << last << "): support " << support.past_samples << " past, " << support.future_samples
          << " future";
    }
  }
}

TEST_P(ProcessorContract, Deterministic) {
  Case c = make_case(GetParam(), 2, 800, at::kFloat, 3);
  auto a = c.processor->forward(c.inputs, c.parameters);
  auto b = GetParam().make()->forward(c.inputs, c.parameters);
  for (size_t o = 0; o < a.outputs.size(); ++o) EXPECT_TRUE(at::equal(a.outputs[o], b.outputs[o]));
}

TEST_P(ProcessorContract, DeclaresWellFormedParameters) {
  auto processor = GetParam().make();
  EXPECT_EQ(processor->name(), GetParam().type.processor);
  std::set<std::string> names;
  for (const auto& spec : processor->parameter_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "parameter listed twice: " << spec.name;
    EXPECT_FALSE(spec.physical_name.empty()) << spec.name;
    EXPECT_FALSE(spec.description.empty()) << spec.name;
    EXPECT_GE(spec.init_std, 0.0) << spec.name;
    at::Tensor raw      = at::zeros([&] {
      std::vector<int64_t> s{2};
      s.insert(s.end(), spec.shape.begin(), spec.shape.end());
      return s;
    }());
    at::Tensor physical = spec.to_physical ? spec.to_physical(raw) : raw;
    EXPECT_EQ(physical.size(0), 2) << spec.name;
    EXPECT_TRUE(physical.isfinite().all().item<bool>()) << spec.name;
  }
}

TEST_P(ProcessorContract, PhysicalValuesRoundTripThroughRawValues) {
  Case c = make_case(GetParam(), 3, 100, at::kDouble, 7);
  for (const auto& spec : c.processor->parameter_specs()) {
    if (!spec.to_raw) continue;
    at::Tensor physical = spec.to_physical(c.parameters.at(spec.name));
    at::Tensor raw      = spec.to_raw(physical);
    EXPECT_EQ(raw.sizes(), c.parameters.at(spec.name).sizes()) << spec.name;
    EXPECT_TRUE(at::allclose(spec.to_physical(raw), physical, 1e-6, 1e-9)) << spec.name;
    EXPECT_GE(physical.min().item<double>(), spec.physical_min) << spec.name;
    EXPECT_LE(physical.max().item<double>(), spec.physical_max) << spec.name;
  }
}

TEST_P(ProcessorContract, ParametersSetByPhysicalNameRenderAsTheirRawValues) {
  // What `grafx process --set` and Python's processor modules do (parameter_values.h): values
  // by physical name, mapped to raw ones, render as the raw values they came from, and a
  // physical value that requires grad passes its graph on.
  Case c           = make_case(GetParam(), 3, 200, at::kDouble, 8);
  const auto specs = c.processor->parameter_specs();
  TensorDict values;
  for (const auto& spec : specs) {
    const at::Tensor& raw = c.parameters.at(spec.name);
    if (spec.to_raw && spec.physical_name != spec.name)
      values[spec.physical_name] = spec.to_physical(raw).detach().requires_grad_();
    else
      values[spec.name] = raw;
  }
  TensorDict mapped =
      raw_parameters(specs, c.processor->name(), values, 3, at::TensorOptions(at::kDouble));
  ASSERT_EQ(mapped.size(), specs.size());
  for (const auto& spec : specs)
    if (values.count(spec.physical_name) && spec.physical_name != spec.name) {
      EXPECT_TRUE(mapped.at(spec.name).requires_grad()) << spec.physical_name;
    }
  auto expected = c.processor->forward(c.inputs, c.parameters).outputs;
  auto got      = c.processor->forward(c.inputs, mapped).outputs;
  for (size_t o = 0; o < got.size(); ++o)
    EXPECT_TRUE(at::allclose(got[o], expected[o], 1e-7, 1e-9)) << "outlet " << o;
}

TEST_P(ProcessorContract, MusicalPriorSetsKnownParametersInRange) {
  const ProcessorDescriptor& d = GetParam().descriptor();
  if (!d.musical_prior) GTEST_SKIP() << "no musical prior: hidden consoles keep initial values";
  auto processor = GetParam().make();
  Random random(3);
  for (bool subgroup : {false, true}) {
    TensorDict settings = d.musical_prior({*processor, kSampleRate, subgroup, random});
    EXPECT_EQ(settings.empty(), processor->parameter_specs().empty());
    for (const auto& [name, value] : settings) {
      if (name == dry_wet_spec().physical_name) {
        EXPECT_TRUE((value >= 0).all().item<bool>() && (value <= 1).all().item<bool>()) << name;
        continue;
      }
      bool known = false;
      for (const auto& spec : processor->parameter_specs()) {
        if (spec.physical_name != name) continue;
        known = true;
        ASSERT_TRUE(spec.to_raw) << name << " cannot be set from a physical value";
        at::Tensor raw = spec.to_raw(value.unsqueeze(0));
        EXPECT_EQ(raw.sizes(), at::IntArrayRef(spec.shape_for(1))) << name;
        EXPECT_TRUE(at::allclose(spec.to_physical(raw).squeeze(0), value, 1e-6, 1e-6)) << name;
      }
      EXPECT_TRUE(known) << "the prior sets " << name << ", which " << GetParam() << " lacks";
    }
  }
}

TEST_P(ProcessorContract, RejectsBadArguments) {
  Case c        = make_case(GetParam(), 2, 500, at::kFloat, 4);
  const auto& p = *c.processor;
  EXPECT_GRAFX_ERROR(p.forward({}, c.parameters), "grafx.processor.inputs", "one per inlet");
  auto wrong = c.inputs;
  wrong[0]   = wrong[0].view({-1});
  EXPECT_GRAFX_ERROR(p.forward(wrong, c.parameters), "grafx.processor.inputs", "N×C×L");
  for (const auto& spec : p.parameter_specs()) {
    TensorDict missing = c.parameters;
    missing.erase(spec.name);
    EXPECT_GRAFX_ERROR(p.forward(c.inputs, missing), "grafx.processor.parameters",
                       "missing parameter \"" + spec.name + "\"");
    TensorDict misshapen = c.parameters;
    misshapen[spec.name] = misshapen[spec.name].narrow(0, 0, 1);
    EXPECT_GRAFX_ERROR(p.forward(c.inputs, misshapen), "grafx.processor.parameters",
                       "parameter \"" + spec.name + "\": expected shape [2");
  }
  TensorDict extra = c.parameters;
  extra["bogus"]   = at::zeros({2});
  EXPECT_GRAFX_ERROR(p.forward(c.inputs, extra), "grafx.processor.parameters",
                     "unknown parameter \"bogus\"");
}

TEST_P(ProcessorContract, GradientsMatchFiniteDifferencesInFloat64) {
  const GradientCheck& check = GetParam().descriptor().gradient_check;
  Case c                     = make_case(GetParam(), 2, 600, at::kDouble, 5);
  for (auto& [key, p] : c.parameters) p.requires_grad_(true);
  for (auto& x : c.inputs) x.requires_grad_(true);
  std::vector<at::Tensor> weights;
  auto loss_of = [&](const std::vector<at::Tensor>& inputs, const TensorDict& parameters) {
    ProcessorOutput out = c.processor->forward(inputs, parameters);
    if (weights.empty()) {
      at::manual_seed(6);
      for (const auto& y : out.outputs) weights.push_back(at::randn_like(y));
    }
    at::Tensor loss = at::zeros({}, at::kDouble);
    for (size_t o = 0; o < out.outputs.size(); ++o)
      loss = loss + (out.outputs[o] * weights[o]).sum();
    for (const auto& [key, aux] : out.aux_losses) loss = loss + aux.sum();
    return loss;
  };
  at::Tensor loss = loss_of(c.inputs, c.parameters);
  loss.backward();
  for (const auto& [key, p] : c.parameters) {
    ASSERT_TRUE(p.grad().defined()) << key << " gets no gradient";
    EXPECT_TRUE(p.grad().isfinite().all().item<bool>()) << key;
  }
  const double step = 1e-6;
  auto no_grad      = [](const TensorDict& d) {
    TensorDict out;
    for (const auto& [k, v] : d) out[k] = v.detach().clone();
    return out;
  };
  std::vector<at::Tensor> inputs;
  for (const auto& x : c.inputs) inputs.push_back(x.detach());
  for (const auto& [key, p] : c.parameters) {
    if (check.surrogate_parameters.count(key)) continue;
    at::Tensor flat_grad = p.grad().reshape(-1);
    int64_t n            = flat_grad.numel();
    for (int64_t k = 0; k < std::min<int64_t>(n, 6); ++k) {
      int64_t index   = (k * 7919) % n;  // a spread of coordinates
      TensorDict plus = no_grad(c.parameters), minus = no_grad(c.parameters);
      plus[key].view(-1)[index] += step;
      minus[key].view(-1)[index] -= step;
      double numeric =
          (loss_of(inputs, plus).item<double>() - loss_of(inputs, minus).item<double>()) /
          (2 * step);
      double analytic = flat_grad[index].item<double>();
      EXPECT_NEAR(analytic, numeric,
                  check.absolute_tolerance + check.relative_tolerance * std::abs(numeric) + 1e-6)
          << key << "[" << index << "]";
    }
  }
  // Gradient to the first input, at one coordinate.
  at::Tensor x_grad            = c.inputs[0].grad().reshape(-1);
  int64_t index                = x_grad.numel() / 3;
  std::vector<at::Tensor> plus = {inputs[0].clone()}, minus = {inputs[0].clone()};
  for (size_t i = 1; i < inputs.size(); ++i) plus.push_back(inputs[i]), minus.push_back(inputs[i]);
  plus[0].view(-1)[index] += step;
  minus[0].view(-1)[index] -= step;
  TensorDict frozen = no_grad(c.parameters);
  double numeric =
      (loss_of(plus, frozen).item<double>() - loss_of(minus, frozen).item<double>()) / (2 * step);
  EXPECT_NEAR(x_grad[index].item<double>(), numeric,
              1e-6 + check.relative_tolerance * std::abs(numeric));
}

/// A processor's outputs and auxiliary losses, flattened into one vector.
at::Tensor flat_outputs(const Case& c, const std::vector<at::Tensor>& inputs,
                        const TensorDict& parameters) {
  ProcessorOutput out = c.processor->forward(inputs, parameters);
  std::vector<at::Tensor> parts;
  for (const auto& y : out.outputs) parts.push_back(y.reshape(-1));
  for (const auto& [key, aux] : out.aux_losses) parts.push_back(aux.reshape(-1));
  return at::cat(parts);
}

/// Random tangents for a case: its inputs' and its parameters'; surrogate parameters (whose
/// derivative is an estimate) get none.
std::pair<std::vector<at::Tensor>, TensorDict> random_direction(const Case& c,
                                                                const GradientCheck& check) {
  at::manual_seed(7);
  std::vector<at::Tensor> inputs;
  TensorDict parameters;
  for (const auto& x : c.inputs) inputs.push_back(at::randn_like(x));
  for (const auto& [key, p] : c.parameters)
    parameters[key] = check.surrogate_parameters.count(key) ? at::zeros_like(p) : at::randn_like(p);
  return {inputs, parameters};
}

/// Forward mode: the outputs' tangent along a direction, with tangent rules (no autograd).
at::Tensor forward_mode_tangent(const Case& c, const std::vector<at::Tensor>& input_tangents,
                                const TensorDict& parameter_tangents) {
  dsp::ForwardMode mode;
  std::vector<at::Tensor> inputs;
  TensorDict parameters;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    inputs.push_back(dsp::make_dual(c.inputs[i], input_tangents[i]));
  for (const auto& [key, p] : c.parameters)
    parameters[key] = dsp::make_dual(p, parameter_tangents.at(key));
  at::Tensor tangent = dsp::tangent_of(flat_outputs(c, inputs, parameters));
  return tangent.defined() ? tangent.clone() : at::zeros({0}, at::kDouble);
}

TEST_P(ProcessorContract, TangentsMatchDoubleBackwardAndFiniteDifferences) {
  const GradientCheck& check = GetParam().descriptor().gradient_check;
  Case c                     = make_case(GetParam(), 2, 600, at::kDouble, 5);
  // Every input and parameter but the surrogates (whose gradient is an estimate, not the
  // transpose of a derivative).
  auto [input_tangents, parameter_tangents] = random_direction(c, check);
  at::Tensor tangent = forward_mode_tangent(c, input_tangents, parameter_tangents);
  {  // The tangent J·v equals J·v by double backward: d/du of (Jᵀu)·v.
    std::vector<at::Tensor> leaves, directions = input_tangents;
    for (const auto& x : c.inputs) leaves.push_back(x.detach().requires_grad_(true));
    TensorDict parameters;
    for (const auto& [key, p] : c.parameters) {
      parameters[key] = p.detach().requires_grad_(true);
      leaves.push_back(parameters[key]);
      directions.push_back(parameter_tangents[key]);
    }
    std::vector<at::Tensor> inputs(leaves.begin(), leaves.begin() + int64_t(c.inputs.size()));
    at::Tensor y = flat_outputs(c, inputs, parameters);
    at::Tensor u = at::randn_like(y).requires_grad_(true);
    auto vjp     = torch::autograd::grad({y}, leaves, {u}, true, true, true);
    at::Tensor s = at::zeros({}, at::kDouble);
    for (size_t i = 0; i < vjp.size(); ++i)
      if (vjp[i].defined()) s = s + (vjp[i] * directions[i]).sum();
    at::Tensor expected = torch::autograd::grad({s}, {u}, {}, false, false, true)[0];
    if (!expected.defined()) expected = at::zeros_like(y);
    ASSERT_EQ(tangent.sizes(), expected.sizes());
    EXPECT_TRUE(at::allclose(tangent, expected, 1e-7, 1e-9))
        << "largest difference " << (tangent - expected).abs().max().item<double>();
  }
  // The tangent equals central differences of the outputs.
  const double step = 1e-6;
  auto moved        = [&](double sign) {
    std::vector<at::Tensor> inputs;
    TensorDict parameters;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      inputs.push_back(c.inputs[i] + sign * step * input_tangents[i]);
    for (const auto& [key, p] : c.parameters)
      parameters[key] = p + sign * step * parameter_tangents[key];
    return flat_outputs(c, inputs, parameters);
  };
  at::Tensor numeric = (moved(1) - moved(-1)) / (2 * step);
  at::Tensor bound   = check.absolute_tolerance + 1e-6 + check.relative_tolerance * numeric.abs() +
                     1e-6 * numeric.abs().max();
  at::Tensor error = (tangent - numeric).abs();
  EXPECT_TRUE((error <= bound).all().item<bool>())
      << "largest error " << error.max().item<double>() << " at " << error.argmax().item<int64_t>();
}

TEST_P(ProcessorContract, HessianVectorProductsMatchDoubleBackwardAndFiniteDifferences) {
  const GradientCheck& check = GetParam().descriptor().gradient_check;
  Case c                     = make_case(GetParam(), 2, 600, at::kDouble, 5);
  if (c.parameters.size() == check.surrogate_parameters.size())
    GTEST_SKIP() << "no parameters with true derivatives";
  TensorDict direction = random_direction(c, check).second;
  at::manual_seed(8);
  const at::Tensor weights = at::randn_like(flat_outputs(c, c.inputs, c.parameters));
  // loss = Σ w·f (plus its square, so that linear processors have curvature too)
  auto gradients = [&](const TensorDict& values, bool dual, bool create_graph) {
    std::optional<dsp::ForwardMode> mode;
    if (dual) mode.emplace();
    TensorDict parameters;
    std::vector<at::Tensor> leaves;
    for (const auto& [key, p] : values) {
      at::Tensor leaf = p.detach().requires_grad_(true);
      leaves.push_back(leaf);
      parameters[key] = dual ? dsp::make_dual(leaf, direction.at(key)) : leaf;
    }
    at::Tensor y    = flat_outputs(c, c.inputs, parameters);
    at::Tensor loss = (y * weights).sum() + 0.1 * (y * weights).sum().pow(2);
    auto g          = torch::autograd::grad({loss}, leaves, {}, create_graph, create_graph, true);
    std::vector<at::Tensor> result;  // the rows of the true derivatives (not the surrogates')
    size_t i = 0;
    for (const auto& [key, p] : values) {
      at::Tensor gi = g[i].defined() ? g[i] : at::zeros_like(leaves[i]);
      if (dual) gi = dsp::tangent_of(gi).defined() ? dsp::tangent_of(gi) : at::zeros_like(gi);
      if (!check.surrogate_parameters.count(key))
        result.push_back((dual ? gi.clone() : gi).reshape(-1));
      ++i;
    }
    return std::make_pair(at::cat(result), leaves);
  };
  at::Tensor hvp = gradients(c.parameters, true, false).first;  // forward over reverse
  // Reverse over reverse.
  auto [g, leaves] = gradients(c.parameters, false, true);
  std::vector<at::Tensor> v;
  for (const auto& [key, d] : direction)
    if (!check.surrogate_parameters.count(key)) v.push_back(d.reshape(-1));
  auto second = torch::autograd::grad({(g * at::cat(v)).sum()}, leaves, {}, false, false, true);
  std::vector<at::Tensor> parts;
  size_t i = 0;
  for (const auto& [key, d] : direction) {
    if (!check.surrogate_parameters.count(key))
      parts.push_back((second[i].defined() ? second[i] : at::zeros_like(leaves[i])).reshape(-1));
    ++i;
  }
  at::Tensor expected = at::cat(parts);
  EXPECT_TRUE(at::allclose(hvp, expected, 1e-7, 1e-9))
      << "largest difference " << (hvp - expected).abs().max().item<double>();
  // Central differences of the gradient.
  const double step = 1e-5;
  auto moved        = [&](double sign) {
    TensorDict values;
    for (const auto& [key, p] : c.parameters) values[key] = p + sign * step * direction.at(key);
    return gradients(values, false, false).first;
  };
  at::Tensor numeric = (moved(1) - moved(-1)) / (2 * step);
  at::Tensor error   = (hvp - numeric).abs();
  at::Tensor bound =
      1e-5 * (1 + numeric.abs().max()) + 1e3 * check.relative_tolerance * numeric.abs();
  EXPECT_TRUE((error <= bound).all().item<bool>())
      << "largest error " << error.max().item<double>() << " (scale "
      << numeric.abs().max().item<double>() << ")";
}

/// Every registered processor with its defaults, and with each option changed in turn.
std::vector<Variant> registered_variants() {
  std::vector<Variant> variants;
  for (const auto& d : processor_registry()) {
    const NodeType ports = d.make({kSampleRate})->node_type();  // options change no ports
    auto add             = [&](const std::string& suffix, ProcessorOptions options) {
      variants.push_back(
                      {NodeType{d.name + suffix, ports.inlets, ports.outlets, d.name, std::move(options)}});
    };
    add("", {});
    for (const auto& option : d.options) {
      switch (option.kind) {
        case OptionSpec::Kind::kFlag:
          add("_" + option.name, {{option.name, !std::get<bool>(option.default_value)}});
          break;
        case OptionSpec::Kind::kChoice:
          for (const auto& choice : option.choices)
            if (choice != std::get<std::string>(option.default_value))
              add("_" + option.name + "_" + choice, {{option.name, choice}});
          break;
        case OptionSpec::Kind::kNumber:
        case OptionSpec::Kind::kInteger: {
          const double value =
              std::get<double>(option.default_value) == option.min ? option.max : option.min;
          add("_" + option.name + "_" + std::to_string(int64_t(value)), {{option.name, value}});
          break;
        }
        case OptionSpec::Kind::kNames:
          break;  // containers: their own tests choose members
      }
    }
  }
  return variants;
}

INSTANTIATE_TEST_SUITE_P(Registry, ProcessorContract, ::testing::ValuesIn(registered_variants()),
                         [](const auto& info) { return info.param.type.name; });

TEST(Registry, EveryProcessorHeaderIsRegistered) {
  // Each header under include/grafx/processors declares descriptors `NAME_descriptor()`; each
  // NAME must be registered.
  std::set<std::string> registered;
  for (const auto& d : processor_registry()) registered.insert(d.name);
  const char* source = std::getenv("GRAFX_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const std::regex declaration(R"(ProcessorDescriptor (\w+)_descriptor\(\);)");
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(source) + "/include/grafx/processors")) {
    std::string stem = entry.path().stem().string();
    if (stem == "processor" || stem == "registry" || stem == "descriptor" || stem == "options" ||
        stem == "parameter_values" || stem == "node_stream" || stem == "linear_processor")
      continue;
    std::ifstream file(entry.path());
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    int declared = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), declaration), end; it != end; ++it) {
      ++declared;
      EXPECT_TRUE(registered.count((*it)[1].str()))
          << (*it)[1].str() << " (include/grafx/processors/" << stem
          << ".h) is not in the registry";
    }
    EXPECT_GT(declared, 0) << "include/grafx/processors/" << stem << ".h declares no descriptor";
  }
}

TEST(Registry, NodeTypesAndProcessorsFollowTheRegistry) {
  NodeTypes types = registry_node_types();
  EXPECT_EQ(types.size(), 3 + int64_t(processor_registry().size()));
  Processors processors = make_processors(types, {kSampleRate});
  EXPECT_EQ(processors.size(), processor_registry().size());
  EXPECT_GRAFX_ERROR(make_processor("flanger", {}), "grafx.processor.unknown",
                     "no processor implements node type \"flanger\"");
  NodeTypes unknown;
  unknown.add("flanger");
  EXPECT_GRAFX_ERROR(make_processors(unknown, {}), "grafx.processor.unknown", "flanger");
  NodeTypes wrong_ports;
  wrong_ports.add({processor_registry()[0].name, {"main", "sidechain"}, {"main"}});
  EXPECT_GRAFX_ERROR(make_processors(wrong_ports, {}), "grafx.processor.ports",
                     "has ports (main, sidechain -> main) but its processor has (main -> main)");
}

TEST(ParameterValues, MapsValuesByNameAndRefusesWhatCannotBeSet) {
  auto compressor  = make_processor("compressor", {kSampleRate});
  const auto specs = compressor->parameter_specs();
  const at::TensorOptions f64(at::kDouble);
  auto set = [&](TensorDict values) {
    return raw_parameters(specs, "compressor", values, 2, f64, "--set");
  };
  const char* code = "grafx.processor.parameters";
  EXPECT_GRAFX_ERROR(set({{"treshold_db", at::scalar_tensor(-30.0)}}), code,
                     "--set: compressor has no parameter \"treshold_db\"; it has: threshold_db "
                     "(dB), ratio (:1)");
  EXPECT_GRAFX_ERROR(
      set({{"threshold_db", at::scalar_tensor(-30.0)}, {"log_threshold", at::zeros({2, 1})}}), code,
      "--set: compressor: got both log_threshold and threshold_db");
  EXPECT_GRAFX_ERROR(set({{"ratio", at::scalar_tensor(0.5)}}), code,
                     "--set: compressor: expected ratio from 1 to inf (:1), but got 0.5");
  EXPECT_GRAFX_ERROR(set({{"ratio", at::full({2, 1}, NAN)}}), code,
                     "expected finite values of ratio, but got nan");
  EXPECT_GRAFX_ERROR(set({{"log_ratio", at::full({1}, -INFINITY)}}), code,
                     "expected finite values of log_ratio, but got -inf");
  EXPECT_GRAFX_ERROR(set({{"threshold_db", at::zeros({3})}}), code,
                     "expected threshold_db of shape [2, 1] (2 nodes) or one that broadcasts to "
                     "it (a number fills it), but got [3]");
  // One number fills every node; a raw tensor of the right shape is used as it is; unset
  // parameters take their initial values; gradients reach a threshold in dB (raw = dB·ln10/10
  // + 6, so d(Σ raw)/d(dB) = 2·ln10/10 over two nodes).
  at::Tensor threshold = at::scalar_tensor(-30.0, f64).requires_grad_();
  at::Tensor log_ratio = at::full({2, 1}, 1.5, f64);
  TensorDict raw       = raw_parameters(specs, "compressor",
                                        {{"threshold_db", threshold}, {"log_ratio", log_ratio}}, 2, f64);
  EXPECT_TRUE(raw.at("log_ratio").is_same(log_ratio));
  EXPECT_TRUE(
      at::allclose(raw.at("log_threshold"), at::full({2, 1}, -3.0 * std::log(10.0) + 6, f64)));
  for (const auto& spec : specs)
    if (spec.name != "log_threshold" && spec.name != "log_ratio") {
      EXPECT_TRUE(at::equal(raw.at(spec.name), at::full({2, 1}, spec.init_mean, f64))) << spec.name;
    }
  raw.at("log_threshold").sum().backward();
  EXPECT_NEAR(threshold.grad().item<double>(), 2 * std::log(10.0) / 10, 1e-12);
}

}  // namespace
}  // namespace grafx
