#include <grafx/error.h>
#include <grafx/processors/parameter_values.h>
#include <grafx/text.h>

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>

#include "common/tensors.h"

#include <map>
#include <sstream>

namespace grafx {
namespace {

using detail::dtype_name;
using detail::shape_text;

[[noreturn]] void refuse(const std::string& processor, const std::string& where,
                         const std::string& why) {
  throw ProcessorError("grafx.processor.parameters",
                       (where.empty() ? "" : where + ": ") + processor + ": " + why);
}

std::string number_text(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

/// The name the values were given under, as messages show it.
const std::string& given_name(const NamedParameter& named) {
  return named.physical ? named.spec->physical_name : named.spec->name;
}

}  // namespace

NamedParameter find_parameter(const std::vector<ParameterSpec>& specs, const std::string& name,
                              const std::string& processor, const std::string& where) {
  for (const auto& spec : specs)
    if (spec.name == name) return {&spec, false};
  for (const auto& spec : specs)
    if (spec.physical_name == name) return {&spec, true};
  std::vector<std::string> physical, raw;
  for (const auto& spec : specs) {
    physical.push_back(spec.physical_name + (spec.unit.empty() ? "" : " (" + spec.unit + ")"));
    if (spec.name != spec.physical_name) raw.push_back(spec.name);
  }
  throw ProcessorError(
      "grafx.processor.parameters",
      (where.empty() ? "" : where + ": ") + processor + " has no parameter \"" + name +
          "\"; it has: " + (physical.empty() ? std::string("none") : join(physical)) +
          (raw.empty() ? std::string() : " (or their raw names: " + join(raw) + ")"));
}

std::vector<int64_t> value_shape(const NamedParameter& named, int64_t n) {
  const ParameterSpec& spec = *named.spec;
  if (!named.physical || !spec.to_physical) return spec.shape_for(n);
  return spec.to_physical(at::full(spec.shape_for(n), spec.init_mean, at::kDouble)).sizes().vec();
}

at::Tensor initial_values(const ParameterSpec& spec, int64_t n, const at::TensorOptions& options) {
  return at::full(spec.shape_for(n), spec.init_mean, options);
}

at::Tensor raw_values(const NamedParameter& named, const at::Tensor& values, int64_t n,
                      const at::TensorOptions& options, const std::string& processor,
                      const std::string& where) {
  const ParameterSpec& spec = *named.spec;
  const std::string& name   = given_name(named);
  auto fail                 = [&](const std::string& why) { refuse(processor, where, why); };
  if (!values.defined()) fail("expected values of " + name + ", but got none");
  if (values.is_complex() ||
      !(values.is_floating_point() || at::isIntegralType(values.scalar_type(), true)))
    fail("expected real values of " + name + ", but got " + dtype_name(values.scalar_type()));
  if (named.physical && !spec.to_raw) {  // before anything is read from the values
    at::Tensor unset;
    fail(spec.raw_of(values, unset));
  }
  const std::vector<int64_t> shape = value_shape(named, n);
  if (!at::is_expandable_to(values.sizes(), shape))
    fail("expected " + name + " of shape " + shape_text(shape) + " (" + std::to_string(n) +
         (n == 1 ? " node" : " nodes") +
         ") or one that broadcasts to it (a number fills it), but got " +
         shape_text(values.sizes()));
  if (values.numel() > 0) {
    at::Tensor finite = values.isfinite();
    if (!finite.all().item<bool>())
      fail("expected finite values of " + name + ", but got " +
           number_text(values.detach().masked_select(finite.logical_not())[0].item<double>()));
  }
  if (!named.physical) {
    if (values.sizes() == at::IntArrayRef(shape) && values.dtype() == options.dtype() &&
        values.device() == options.device())
      return values;  // raw values as forward takes them: the very tensor
    at::Tensor raw = values.to(options);
    return values.sizes() == at::IntArrayRef(shape) ? raw : raw.expand(shape).contiguous();
  }
  at::Tensor physical = values.to(at::kDouble).expand(shape).contiguous();
  if (physical.numel() == 0) return at::empty(spec.shape_for(n), options);
  at::Tensor raw;
  const std::string why = spec.raw_of(physical, raw);
  if (!why.empty()) fail(why);
  if (physical.requires_grad() && !raw.requires_grad())
    fail(name + " cannot carry gradients to its raw value " + spec.name +
         ": give it a tensor without requires_grad, or give " + spec.name + " instead");
  return raw.to(options);
}

TensorDict raw_parameters(const std::vector<ParameterSpec>& specs, const std::string& processor,
                          const TensorDict& values, int64_t n, const at::TensorOptions& options,
                          const std::string& where) {
  std::map<std::string, std::string> given;  // raw name -> the name it was given under
  TensorDict raw;
  for (const auto& [name, value] : values) {
    const NamedParameter named = find_parameter(specs, name, processor, where);
    auto [other, fresh]        = given.emplace(named.spec->name, name);
    if (!fresh)
      refuse(processor, where,
             "got both " + other->second + " and " + name + ", which set the same parameter (" +
                 named.spec->physical_name + ", raw " + named.spec->name + "); give one of them");
    raw[named.spec->name] = raw_values(named, value, n, options, processor, where);
  }
  for (const auto& spec : specs)
    if (!raw.count(spec.name)) raw[spec.name] = initial_values(spec, n, options);
  return raw;
}

}  // namespace grafx
