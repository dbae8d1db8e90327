#include <grafx/error.h>
#include <grafx/graph/node_types.h>
#include <grafx/processors/processor.h>
#include <grafx/stream/form.h>

#include <ATen/ATen.h>

#include "common/tensors.h"

#include <algorithm>
#include <sstream>

namespace grafx {

using detail::shape_text;

ParameterSpec ParameterSpec::raw(std::string name, std::vector<int64_t> shape) {
  ParameterSpec spec;
  spec.name          = std::move(name);
  spec.shape         = std::move(shape);
  spec.physical_name = spec.name;
  auto identity      = [](const at::Tensor& t) { return t; };
  spec.to_physical   = identity;
  spec.to_raw        = identity;
  return spec;
}

ParameterSpec& ParameterSpec::initial(double mean, double std) {
  init_mean = mean;
  init_std  = std;
  return *this;
}

ParameterSpec& ParameterSpec::physical(std::string name, std::string unit_name, ValueMap forward,
                                       ValueMap inverse) {
  physical_name = std::move(name);
  unit          = std::move(unit_name);
  if (!forward) return *this;  // keep the identity
  to_physical = std::move(forward);
  to_raw      = std::move(inverse);
  return *this;
}

ParameterSpec& ParameterSpec::range(double min, double max) {
  physical_min = min;
  physical_max = max;
  return *this;
}

ParameterSpec& ParameterSpec::about(std::string text) {
  description = std::move(text);
  return *this;
}

ParameterSpec& ParameterSpec::maps(std::string text) {
  raw_mapping = std::move(text);
  return *this;
}

ParameterSpec& ParameterSpec::elements(std::vector<std::string> names) {
  element_names = std::move(names);
  return *this;
}

ParameterSpec& ParameterSpec::automatable(std::string rule) {
  automation = std::move(rule);
  return *this;
}

std::string curve_name(const std::string& name) { return name + "@curve"; }

ParameterSpec curve_spec(const ParameterSpec& spec, int64_t points) {
  ParameterSpec curve = spec;
  curve.name          = curve_name(spec.name);
  curve.physical_name = curve_name(spec.physical_name);
  curve.shape.insert(curve.shape.begin(), points);
  // The point axis folded into the rows: mappings that act on the last dimensions still do.
  auto per_point = [](ValueMap map) -> ValueMap {
    if (!map) return map;
    return [map](const at::Tensor& t) { return map(t.flatten(0, 1)).reshape(t.sizes()); };
  };
  curve.to_physical = per_point(spec.to_physical);
  curve.to_raw      = per_point(spec.to_raw);
  curve.description = spec.description + "; its automation curve, one value per point";
  return curve;
}

at::Tensor over_time(const at::Tensor& parameter, const ParameterSpec& spec) {
  return parameter.dim() == int64_t(spec.shape.size()) + 2 ? parameter : parameter.unsqueeze(-1);
}

std::vector<ParameterSpec> node_parameter_specs(const Processor& processor, bool dry_wet) {
  std::vector<ParameterSpec> specs = processor.parameter_specs();
  if (dry_wet) specs.push_back(dry_wet_spec());
  return specs;
}

namespace {
constexpr char kDryWetParameter[] = "dry_wet";
}

bool is_wet_amount(const std::string& raw_name) { return raw_name == kDryWetParameter; }

at::Tensor mix_dry_wet(const at::Tensor& dry, const at::Tensor& processed,
                       const at::Tensor& raw_wet) {
  return at::lerp(dry, processed, raw_wet.sigmoid());
}

ParameterSpec dry_wet_spec() {
  return ParameterSpec::raw(kDryWetParameter, {1})
      .initial(0.0, 0.0)
      .physical(
          "wet", "ratio", [](const at::Tensor& raw) { return raw.sigmoid(); },
          [](const at::Tensor& wet) { return wet.logit(); })
      .range(0.0, 1.0)
      .about("share of the processed signal in the node's output (0 dry, 1 wet)")
      .automatable("linear in the logit of the wet share (S-shaped between points)");
}

std::vector<int64_t> ParameterSpec::shape_for(int64_t n) const {
  std::vector<int64_t> full{n};
  full.insert(full.end(), shape.begin(), shape.end());
  return full;
}

NodeType Processor::node_type() const { return NodeType{name(), inlets(), outlets()}; }

TensorDict to_physical(const std::vector<ParameterSpec>& specs, const TensorDict& parameters) {
  TensorDict physical;
  for (const auto& spec : specs) {
    auto it = parameters.find(spec.name);
    if (it == parameters.end()) continue;
    physical[spec.physical_name] = spec.to_physical ? spec.to_physical(it->second) : it->second;
  }
  return physical;
}

TensorDict Processor::to_physical(const TensorDict& parameters) const {
  return grafx::to_physical(parameter_specs(), parameters);
}

std::string ParameterSpec::raw_of(const at::Tensor& physical, at::Tensor& raw) const {
  if (!to_raw) return physical_name + " is set by its raw value only: use " + name + "=...";
  const double lo = physical.min().item<double>(), hi = physical.max().item<double>();
  auto text_of = [](double value) {
    std::ostringstream s;
    s << value;
    return s.str();
  };
  if (lo < physical_min || hi > physical_max)
    return "expected " + physical_name + " from " + text_of(physical_min) + " to " +
           text_of(physical_max) + " (" + unit + "), but got " +
           text_of(lo < physical_min ? lo : hi);
  at::Tensor values = to_raw(physical);
  if (!values.isfinite().all().item<bool>() ||
      !at::allclose(to_physical(values), physical, 1e-6, 1e-6))
    return physical_name + " cannot take these values exactly (" + description + ")";
  raw = values;
  return "";
}

void Processor::check_arguments(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                                const std::string& where) const {
  std::string prefix = (where.empty() ? name() : where) + ": ";
  auto ports         = inlets();
  if (inputs.size() != ports.size())
    throw ProcessorError("grafx.processor.inputs",
                         prefix + "expected " + std::to_string(ports.size()) +
                             " input(s), one per inlet, but got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& x = inputs[i];
    if (!x.defined() || x.dim() != 3)
      throw ProcessorError("grafx.processor.inputs",
                           prefix + "inlet \"" + ports[i] +
                               "\": expected an N×C×L tensor, but got " +
                               (x.defined() ? shape_text(x.sizes()) : std::string("none")));
    if (x.sizes() != inputs[0].sizes())
      throw ProcessorError("grafx.processor.inputs",
                           prefix + "inlet \"" + ports[i] + "\": expected shape " +
                               shape_text(inputs[0].sizes()) + " like inlet \"" + ports[0] +
                               "\", but got " + shape_text(x.sizes()));
  }
  int64_t n  = inputs.empty() ? -1 : inputs[0].size(0);
  auto specs = parameter_specs();
  for (const auto& spec : specs) {
    auto it = parameters.find(spec.name);
    if (it == parameters.end())
      throw ProcessorError("grafx.processor.parameters",
                           prefix + "missing parameter \"" + spec.name + "\"");
    std::vector<int64_t> expected{n};
    expected.insert(expected.end(), spec.shape.begin(), spec.shape.end());
    const at::Tensor& p = it->second;
    if (!spec.automation.empty() && !inputs.empty() && p.defined() &&
        p.dim() == int64_t(expected.size()) + 1)
      expected.push_back(inputs[0].size(2));  // values per sample
    if (!p.defined() || p.sizes() != at::IntArrayRef(expected))
      throw ProcessorError("grafx.processor.parameters",
                           prefix + "parameter \"" + spec.name + "\": expected shape " +
                               shape_text(expected) + ", but got " +
                               (p.defined() ? shape_text(p.sizes()) : std::string("none")));
  }
  for (const auto& [key, value] : parameters) {
    bool known = false;
    for (const auto& spec : specs) known = known || spec.name == key;
    if (!known) {
      std::string names;
      for (const auto& spec : specs) names += (names.empty() ? "" : ", ") + spec.name;
      throw ProcessorError("grafx.processor.parameters",
                           prefix + "unknown parameter \"" + key +
                               "\"; expected: " + (names.empty() ? "none" : names));
    }
  }
}

TemporalSupport TemporalSupport::causal(int64_t past_samples) {
  return {std::min(std::max<int64_t>(past_samples, 0), kUnbounded), 0};
}

TemporalSupport TemporalSupport::zero_phase(int64_t n_taps) { return {n_taps / 2, n_taps / 2}; }

TemporalSupport TemporalSupport::then(const TemporalSupport& next) const {
  return {std::min(past_samples + next.past_samples, kUnbounded),
          std::min(future_samples + next.future_samples, kUnbounded)};
}

TemporalSupport TemporalSupport::widest(const TemporalSupport& other) const {
  return {std::max(past_samples, other.past_samples),
          std::max(future_samples, other.future_samples)};
}

}  // namespace grafx

namespace grafx {

std::unique_ptr<NodeStream> Processor::make_stream(const TensorDict&, const StreamSetup&) const {
  throw ProcessorError("grafx.stream.unsupported",
                       "processor \"" + name() + "\" has no streaming form");
}

}  // namespace grafx
