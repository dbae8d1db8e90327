#include <grafx/processors/processor.h>
#include <grafx/render/parameters.h>
#include <grafx/render/type_parameters.h>

#include <stdexcept>

namespace grafx {
namespace {

/// The wet amount's name, made once: named() runs for every step of every render.
const std::string& wet_amount_name() {
  static const std::string name = dry_wet_spec().name;
  return name;
}

}  // namespace

TensorDict TypeParameters::named() const {
  TensorDict all = own;
  if (wet.defined()) all[wet_amount_name()] = wet;
  for (const auto& [parameter, curve] : curves) all[curve_name(parameter)] = curve;
  return all;
}

const at::Tensor* TypeParameters::find(const std::string& name) const {
  if (is_wet_amount(name)) return wet.defined() ? &wet : nullptr;
  const std::string parameter = automated_parameter(name);
  const TensorDict& in        = parameter.empty() ? own : curves;
  auto it                     = in.find(parameter.empty() ? name : parameter);
  return it == in.end() ? nullptr : &it->second;
}

at::Tensor* TypeParameters::find(const std::string& name) {
  return const_cast<at::Tensor*>(static_cast<const TypeParameters*>(this)->find(name));
}

const at::Tensor& TypeParameters::at(const std::string& name) const {
  const at::Tensor* tensor = find(name);
  if (!tensor) throw std::out_of_range("no parameter \"" + name + "\"");
  return *tensor;
}

at::Tensor& TypeParameters::at(const std::string& name) {
  return const_cast<at::Tensor&>(static_cast<const TypeParameters*>(this)->at(name));
}

at::Tensor& TypeParameters::operator[](const std::string& name) {
  if (is_wet_amount(name)) return wet;
  const std::string parameter = automated_parameter(name);
  return parameter.empty() ? own[name] : curves[parameter];
}

TypeParameters TypeParameters::map(
    const std::function<at::Tensor(const std::string&, const at::Tensor&)>& f) const {
  TypeParameters result;
  for (const auto& [name, tensor] : named()) result[name] = f(name, tensor);
  return result;
}

TypeParameters::TypeParameters(std::initializer_list<TensorDict::value_type> named) {
  for (const auto& [name, tensor] : named) (*this)[name] = tensor;
}

TypeParameters TypeParameters::from_named(const TensorDict& named) {
  TypeParameters result;
  for (const auto& [name, tensor] : named) result[name] = tensor;
  return result;
}

Parameters map_parameters(
    const Parameters& parameters,
    const std::function<at::Tensor(const std::string&, const std::string&, const at::Tensor&)>& f) {
  Parameters result;
  for (const auto& [type, values] : parameters)
    result[type] = values.map(
        [&](const std::string& name, const at::Tensor& tensor) { return f(type, name, tensor); });
  return result;
}

}  // namespace grafx
