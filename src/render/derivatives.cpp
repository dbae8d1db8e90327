#include <grafx/dsp/forward_mode.h>
#include <grafx/error.h>
#include <grafx/render/derivatives.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <sstream>

namespace grafx {
namespace {

/// Checks that a direction fits the parameters: known types and names, same shapes and dtypes.
void check_direction(const Parameters& parameters, const Parameters& direction) {
  for (const auto& [type, tensors] : direction) {
    auto known = parameters.find(type);
    if (known == parameters.end())
      throw RenderError("grafx.render.tangents",
                        "the direction names type \"" + type + "\", which has no parameters");
    for (const auto& [name, tangent] : tensors.named()) {
      const at::Tensor* value = known->second.find(name);
      if (!value)
        throw RenderError("grafx.render.tangents", "the direction names " + type + "." + name +
                                                       ", which is not a parameter of " + type);
      if (!tangent.defined() || tangent.sizes() != value->sizes() ||
          tangent.scalar_type() != value->scalar_type()) {
        std::ostringstream s;
        s << "the direction of " << type << "." << name << " must be shaped and typed like it ("
          << value->sizes() << " " << value->scalar_type() << "), but is ";
        if (tangent.defined())
          s << tangent.sizes() << " " << tangent.scalar_type();
        else
          s << "undefined";
        throw RenderError("grafx.render.tangents", s.str());
      }
    }
  }
}

at::Tensor tangent_or_zeros(const at::Tensor& t) {
  at::Tensor tangent = dsp::tangent_of(t);
  return tangent.defined() ? tangent : at::zeros_like(t);
}

}  // namespace

TangentResult jvp(const RenderPlan& plan, const Processors& processors,
                  const Parameters& parameters, const at::Tensor& sources,
                  const Parameters& parameter_tangents, const at::Tensor& source_tangent,
                  const RenderOptions& options) {
  check_direction(parameters, parameter_tangents);
  if (source_tangent.defined() && (source_tangent.sizes() != sources.sizes() ||
                                   source_tangent.scalar_type() != sources.scalar_type()))
    throw RenderError("grafx.render.tangents",
                      "the direction of the sources must be shaped and typed like them");
  dsp::ForwardMode mode;
  Parameters duals = parameters;
  for (const auto& [type, tensors] : parameter_tangents)
    for (const auto& [name, tangent] : tensors.named())
      duals[type][name] = dsp::make_dual(parameters.at(type).at(name), tangent);
  RenderResult rendered =
      render(plan, processors, duals, dsp::make_dual(sources, source_tangent), options);
  TangentResult result;
  result.outputs = dsp::unpack_dual(rendered.outputs).first;
  result.tangent = tangent_or_zeros(rendered.outputs);
  for (const auto& [type, named] : rendered.aux_losses)
    for (const auto& [name, value] : named) {
      result.aux_tangents[type][name] = tangent_or_zeros(value);
    }
  return result;
}

CurvatureResult hvp(const std::function<at::Tensor(const Parameters&)>& loss,
                    const Parameters& parameters, const Parameters& direction) {
  check_direction(parameters, direction);
  dsp::ForwardMode mode;
  Parameters duals;
  std::vector<at::Tensor> leaves;
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& [type, tensors] : parameters)
    for (const auto& [name, value] : tensors.named()) {
      at::Tensor leaf = value.detach().requires_grad_(true);
      auto d          = direction.find(type);
      at::Tensor tangent;
      if (d != direction.end() && d->second.find(name)) tangent = d->second.at(name);
      duals[type][name] = dsp::make_dual(leaf, tangent);
      leaves.push_back(leaf);
      names.emplace_back(type, name);
    }
  at::Tensor value = loss(duals);
  if (!value.defined() || value.numel() != 1)
    throw RenderError("grafx.render.tangents", "hvp: the loss must be a scalar");
  auto gradients = torch::autograd::grad({value.reshape({})}, leaves, {}, false, false, true);
  CurvatureResult result;
  result.loss = dsp::unpack_dual(value).first.detach();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const auto& [type, name]    = names[i];
    at::Tensor g                = gradients[i].defined() ? gradients[i] : at::zeros_like(leaves[i]);
    result.gradient[type][name] = dsp::unpack_dual(g).first.detach();
    result.hessian_vector[type][name] = tangent_or_zeros(g).detach();
  }
  return result;
}

}  // namespace grafx
