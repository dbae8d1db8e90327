#pragma once
/// The raw values of one processor type's nodes, one row per node of the type: the processor's
/// own parameters, and beside them what the nodes add, their wet amounts and automation curves.
///
///   TypeParameters gains{{"log_gain", at::zeros({3, 1})}};   // by name: an own parameter
///   gains.wet = at::zeros({3, 1});                          // σ(0): half wet
///   gains.curves["log_gain"] = at::zeros({3, 8, 1});         // 8 points per node
///   for (const auto& [name, t] : gains.named()) ...          // log_gain, dry_wet, log_gain@curve
///   gains["log_gain@curve"].zero_();                         // the same curve, by name
///
/// Rows are in graph order (ascending node id, dead nodes included) or, per batch item,
/// [B, N_t, ...]. Each tensor also has a name, the raw name of the spec that describes it
/// (graph_parameter_specs): an own parameter its raw name, the wet amount dry_wet_spec()'s,
/// a curve curve_name(parameter). Files, optimisers, gradient hooks, messages and tests use the
/// names; only named(), find() and operator[] translate them.

#include <grafx/tensors.h>

#include <ATen/Tensor.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>

namespace grafx {

struct TypeParameters {
  /// The processor's parameters by raw name: [N_t, shape...].
  TensorDict own;
  /// The raw wet amounts, [N_t, 1] (w = σ(raw)), where a node of the type carries one
  /// (Graph::set_dry_wet); undefined otherwise. Rows of nodes without one are not read.
  at::Tensor wet;
  /// Automation curves by the raw name of the parameter they move (dry_wet_spec()'s for the
  /// wet amount): [N_t, points, shape...]. Rows of nodes that do not automate it are not read.
  TensorDict curves;

  TypeParameters() = default;
  /// Tensors by name, each put in the place its name says.
  TypeParameters(std::initializer_list<TensorDict::value_type> named);

  /// Every tensor by its name, ordered by name (handles to the same tensors).
  TensorDict named() const;
  /// The tensor of that name, or null.
  const at::Tensor* find(const std::string& name) const;
  at::Tensor* find(const std::string& name);
  /// The tensor of that name; throws std::out_of_range naming it where there is none.
  const at::Tensor& at(const std::string& name) const;
  at::Tensor& at(const std::string& name);
  /// The tensor of that name in the place the name says, made (undefined) where there is none.
  at::Tensor& operator[](const std::string& name);
  /// The values with each tensor replaced by `f(name, tensor)`, called in name order.
  TypeParameters map(
      const std::function<at::Tensor(const std::string& name, const at::Tensor&)>& f) const;
  /// The values read from tensors by name (named()'s inverse).
  static TypeParameters from_named(const TensorDict& named);

  bool empty() const { return own.empty() && !wet.defined() && curves.empty(); }
};

/// Raw parameters of a graph: processor type name -> the values of its nodes.
using Parameters = std::map<std::string, TypeParameters>;

/// `parameters` with each tensor replaced by `f(type, name, tensor)`, in type and name order.
Parameters map_parameters(
    const Parameters& parameters,
    const std::function<at::Tensor(const std::string& type, const std::string& name,
                                   const at::Tensor&)>& f);

}  // namespace grafx
