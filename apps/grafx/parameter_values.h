#pragma once
// Parameters and options of one processor from NAME=VALUE text (`grafx process`, `grafx
// processors`).

#include <grafx/processors/registry.h>

#include <ATen/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace grafx::cli {

/// Fills a parameter's values `[1, shape...]` from text: one list of comma-separated finite
/// numbers spread along the last dimension (one number fills it; as many as it has are taken
/// as they are; fewer are interpolated linearly; more are refused), or one such list per row of
/// the leading dimensions, separated by ';'. Throws through `fail` with the reason.
void fill_values(at::Tensor& values, const std::string& text,
                 const std::function<void(const std::string&)>& fail);
/// A parameter moving through values at times (`--set NAME=V@T,V@T,...`): the times in
/// seconds (ascending) and the raw values at them, [K, 1, shape...] (float64).
struct Breakpoints {
  std::vector<double> seconds;
  at::Tensor raw;
};
/// Raw parameters [1, shape...] (float64) of one node of `processor` from "NAME=VALUES"
/// assignments (see fill_values), mapped by the library (grafx/processors/parameter_values.h):
/// NAME is a physical name (values in its unit, checked against its range), a raw name (raw
/// values) or, where `wet` is given, "wet" (the node's dry/wet amount, whose raw value goes to
/// *wet, left as it is when unset). Unset parameters keep their initial values; a name given
/// twice takes its last value; a parameter given by both names is refused. Where `curves` is
/// given, "NAME=V@T,V@T,..." (each V values as above with ':' between elements, each T seconds,
/// ascending) automates an automatable parameter: its breakpoints go to (*curves)[raw name].
/// `option` names the command-line option in errors.
TensorDict parameters_from_assignments(const Processor& processor,
                                       const std::vector<std::string>& assignments, at::Tensor* wet,
                                       const std::string& option,
                                       std::map<std::string, Breakpoints>* curves = nullptr);
/// Processor options from "NAME=VALUE" assignments (`option` names the command-line option in
/// errors): true/false for flags, a number, a choice's name, or comma-separated type names for a
/// container's members. Checked when the processor is made (make_configured).
ProcessorOptions parse_options(const ProcessorDescriptor& descriptor,
                               const std::vector<std::string>& assignments,
                               const std::string& option);
/// The processor `descriptor` makes with these options; errors name `option`.
std::unique_ptr<Processor> make_configured(const ProcessorDescriptor& descriptor,
                                           ProcessorConfig config, const std::string& option);

}  // namespace grafx::cli
