#include <grafx/error.h>
#include <grafx/graph/node_types.h>
#include <grafx/processors/processor.h>

#include <ATen/ATen.h>

#include "common/tensors.h"

#include <sstream>

namespace grafx {
namespace {

using detail::shape_text;


}  // namespace

NodeType Processor::node_type() const { return NodeType{name(), inlets(), outlets()}; }

TensorDict Processor::to_physical(const TensorDict& parameters) const {
  TensorDict physical;
  for (const auto& spec : parameter_specs()) {
    auto it = parameters.find(spec.name);
    if (it == parameters.end()) continue;
    physical[spec.physical_name] = spec.to_physical ? spec.to_physical(it->second) : it->second;
  }
  return physical;
}

void Processor::check_arguments(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                                const std::string& where) const {
  std::string prefix = (where.empty() ? name() : where) + ": ";
  auto ports = inlets();
  if (inputs.size() != ports.size())
    throw ProcessorError("grafx.processor.inputs",
                         prefix + "expected " + std::to_string(ports.size()) + " input(s), one per inlet, but got " +
                             std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& x = inputs[i];
    if (!x.defined() || x.dim() != 3)
      throw ProcessorError("grafx.processor.inputs",
                           prefix + "inlet \"" + ports[i] + "\": expected an N×C×L tensor, but got " +
                               (x.defined() ? shape_text(x.sizes()) : std::string("none")));
    if (x.sizes() != inputs[0].sizes())
      throw ProcessorError("grafx.processor.inputs",
                           prefix + "inlet \"" + ports[i] + "\": expected shape " +
                               shape_text(inputs[0].sizes()) + " like inlet \"" + ports[0] + "\", but got " +
                               shape_text(x.sizes()));
  }
  int64_t n = inputs.empty() ? -1 : inputs[0].size(0);
  auto specs = parameter_specs();
  for (const auto& spec : specs) {
    auto it = parameters.find(spec.name);
    if (it == parameters.end())
      throw ProcessorError("grafx.processor.parameters", prefix + "missing parameter \"" + spec.name + "\"");
    std::vector<int64_t> expected{n};
    expected.insert(expected.end(), spec.shape.begin(), spec.shape.end());
    const at::Tensor& p = it->second;
    if (!p.defined() || p.sizes() != at::IntArrayRef(expected))
      throw ProcessorError("grafx.processor.parameters",
                           prefix + "parameter \"" + spec.name + "\": expected shape " + shape_text(expected) +
                               ", but got " + (p.defined() ? shape_text(p.sizes()) : std::string("none")));
  }
  for (const auto& [key, value] : parameters) {
    bool known = false;
    for (const auto& spec : specs) known = known || spec.name == key;
    if (!known) {
      std::string names;
      for (const auto& spec : specs) names += (names.empty() ? "" : ", ") + spec.name;
      throw ProcessorError("grafx.processor.parameters",
                           prefix + "unknown parameter \"" + key + "\"; expected: " + (names.empty() ? "none" : names));
    }
  }
}

at::Tensor ConstantCache::get(const std::string& key, const at::TensorOptions& options,
                              const std::function<at::Tensor()>& make) const {
  std::string full_key = key + "@" + options.device().str() + "/" + detail::dtype_name(options.dtype().toScalarType());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tensors_.find(full_key);
  if (it != tensors_.end()) return it->second;
  at::Tensor value = make().to(options.device(), options.dtype()).contiguous();
  tensors_[full_key] = value;
  return value;
}

}  // namespace grafx
