#pragma once
/// Parameters set by name, as people give them: `grafx process TYPE --set threshold_db=-30`,
/// `grafx processors TYPE --response --param ...` and Python's processor modules
/// (`grafx.processors.Compressor()(x, threshold_db=-30)`). Each value is named by its spec's raw
/// name (raw values, as `Processor::forward` takes them) or its physical name (values in its
/// unit, checked against the spec's range and mapped by its `to_raw`); it broadcasts to the
/// parameter's shape `[N, shape...]`, so one number fills a per-channel parameter and a per-node
/// value serves every row of a batch. Parameters not named keep their initial raw value
/// (`init_mean`). This is the one place that maps such values: the CLI parses text into tensors
/// and the Python bindings convert Python numbers; neither maps anything itself.
///
///   auto compressor = make_processor("compressor", {44100});
///   TensorDict raw  = raw_parameters(compressor->parameter_specs(), compressor->name(),
///                                    {{"threshold_db", at::scalar_tensor(-30.0)}}, 4,
///                                    at::TensorOptions(at::kFloat));
///   // raw["log_threshold"]: [4, 1] (−30 dB); log_ratio, ...: [4, 1] at their initial values
///
/// Physical values are mapped in float64 and only then converted to the requested dtype; a value
/// that requires grad keeps its autograd graph through `to_raw` (ATen operations), so a loss on
/// the output trains a threshold given in dB. Every refusal is a ProcessorError
/// [grafx.processor.parameters] whose message starts with `where` (if any) and the processor's
/// name and names the parameter, the value and what is accepted.

#include <grafx/processors/processor.h>

#include <ATen/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <string>
#include <vector>

namespace grafx {

/// A parameter as people name it: by its spec's raw name or by its physical name.
struct NamedParameter {
  const ParameterSpec* spec = nullptr;
  bool physical             = false;  ///< named by the physical name: values in its unit
};

/// The spec `name` names in `specs`: a raw name first, else a physical name. Throws
/// ProcessorError [grafx.processor.parameters] "WHERE: PROCESSOR has no parameter "NAME"; it has:
/// gain_db (dB), wet (ratio) (or their raw names: log_gain, dry_wet)".
NamedParameter find_parameter(const std::vector<ParameterSpec>& specs, const std::string& name,
                              const std::string& processor, const std::string& where = "");

/// The shape values given under `named` have for `n` nodes before broadcasting: the raw shape
/// [n, shape...], or for a physical name the shape its `to_physical` gives (the same, except
/// for maps that are not elementwise).
std::vector<int64_t> value_shape(const NamedParameter& named, int64_t n);

/// Raw values [n, shape...] with `options`' dtype and device of `values` given under `named`.
/// `values` broadcast to value_shape(named, n) and must be real and finite; physical ones must
/// lie in the spec's range and map back to themselves (ParameterSpec::raw_of). A raw tensor of
/// exactly that shape, dtype and device is returned as it is. Differentiable in `values`;
/// refuses a physical tensor that requires grad where `to_raw` would not carry it.
at::Tensor raw_values(const NamedParameter& named, const at::Tensor& values, int64_t n,
                      const at::TensorOptions& options, const std::string& processor,
                      const std::string& where = "");

/// The initial raw values of `spec` for `n` nodes: init_mean everywhere (`grafx process`'s
/// values for parameters it is not given; no random spread).
at::Tensor initial_values(const ParameterSpec& spec, int64_t n, const at::TensorOptions& options);

/// Raw values of every spec for `n` nodes from {raw or physical name: values} (raw_values each);
/// specs not named take initial_values. Throws for an unknown name (find_parameter), a parameter
/// given by both its raw and its physical name, and anything raw_values refuses.
TensorDict raw_parameters(const std::vector<ParameterSpec>& specs, const std::string& processor,
                          const TensorDict& values, int64_t n, const at::TensorOptions& options,
                          const std::string& where = "");

}  // namespace grafx
